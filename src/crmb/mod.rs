//! CRM B (Salesforce): ids and names, record URLs, record mapping, errors and tools.

pub mod errors;
pub mod ids;
pub mod record_url;
pub mod records;
pub mod soql;
pub mod tools;
