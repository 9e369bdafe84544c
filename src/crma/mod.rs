//! CRM A (HubSpot): object types, ids and properties, scopes, errors, and tools.

pub mod client;
pub mod errors;
pub mod scopes;
pub mod search;
pub mod tools;
pub mod types;
