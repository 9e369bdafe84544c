//! CRM A (HubSpot): object types, ids and properties, scopes, errors, and tools.

pub(crate) mod activity;
pub mod aggregate;
pub mod associations;
pub(crate) mod client;
pub mod errors;
pub(crate) mod governed;
pub(crate) mod metadata;
mod people;
pub(crate) use people::owner_names;
pub(crate) mod properties;
pub mod rate_limits;
pub(crate) mod scopes;
pub mod search;
pub(crate) mod sync;
pub mod tools;
pub mod types;
pub(crate) mod wire;

use crate::tool::{Entry, entry};

/// The CRM A scopes the spec lists as required ("CRM A scopes"), for hosts and tests.
pub const REQUIRED_SCOPES: &[&str] = scopes::REQUIRED;

/// The CRM A tools, in `list-tools` order.
pub const TOOLS: &[Entry] = &[
    entry::<tools::SearchRecords>(),
    entry::<aggregate::AggregateRecords>(),
    entry::<tools::GetRecord>(),
    entry::<tools::CreateRecord>(),
    entry::<tools::UpdateRecord>(),
    entry::<tools::MergeCompanies>(),
    entry::<associations::GetAssociations>(),
    entry::<associations::CreateAssociation>(),
    entry::<activity::LogActivity>(),
    entry::<tools::ListOwners>(),
    entry::<tools::ListUsers>(),
    entry::<metadata::ListRoles>(),
    entry::<metadata::GetPipelineStages>(),
    entry::<metadata::GetProperties>(),
    entry::<metadata::GetAccountDetails>(),
    entry::<sync::SyncUsers>(),
    entry::<metadata::GenerateRecordUrl>(),
];
