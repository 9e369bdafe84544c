//! CRM A (HubSpot): object types, ids and properties, scopes, errors, and tools.

pub mod activity;
pub mod associations;
pub mod client;
pub mod errors;
pub mod metadata;
pub mod properties;
pub mod rate_limits;
pub mod scopes;
pub mod search;
pub mod sync;
pub mod tools;
pub mod types;
