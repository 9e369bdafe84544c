//! CRM B (Salesforce): ids and names, record URLs, record mapping, errors and tools.

pub mod client;
pub mod describe;
pub mod errors;
pub mod fields;
pub mod ids;
pub mod query;
pub mod record_url;
pub mod records;
pub mod soql;
pub mod tools;
