//! CRM B (Salesforce): ids and names, record URLs, record mapping, errors and tools.

pub mod client;
pub mod compound;
pub mod describe;
pub mod errors;
pub(crate) mod fields;
pub(crate) mod governed;
pub mod ids;
pub(crate) mod outputs;
pub mod query;
pub mod record_url;
pub mod records;
pub mod soql;
pub(crate) mod tools;

use crate::tool::{Entry, entry};

/// The CRM B tools, in `list-tools` order.
pub const TOOLS: &[Entry] = &[
    entry::<tools::RunSoqlQuery>(),
    entry::<tools::GetObjectFields>(),
    entry::<tools::GetRecord>(),
    entry::<tools::CreateRecord>(),
    entry::<tools::UpdateRecord>(),
    entry::<tools::GenerateRecordUrl>(),
];
