//! The local mapping store the host keeps for the calling tenant (the WIT import
//! `mapping-store`): user and owner mappings keyed by the CRM's id, and the ids of records the
//! plugin created. The component never names a tenant: the host binds each call's store to its
//! tenant, so one tenant cannot reach another's mappings.

use serde_json::{Map, Value};

/// What a mapping maps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MappingKind {
    /// A CRM user (keyed by `user_id`).
    User,
    /// A CRM owner (keyed by `owner_id`).
    Owner,
}

/// One local mapping record. `(kind, crm_id)` is the key: writing it again replaces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// Whether `crm_id` is a user id or an owner id.
    pub kind: MappingKind,
    /// The CRM's user id or owner id.
    pub crm_id: String,
    /// The mapped fields (email, names, linked user/owner, roles, teams).
    pub fields: Map<String, Value>,
    /// Soft-deleted: the CRM archived or removed it; kept, marked deleted.
    pub deleted: bool,
}

/// A record id the CRM returned from a create. The host adds tenant, user and time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedRecord {
    /// `hubspot` or `salesforce`.
    pub crm: &'static str,
    /// The object type as the CRM names it (`contacts`, `Account`).
    pub object_type: String,
    /// The new record's id, as the CRM returned it.
    pub record_id: String,
}

/// The store failed; the message comes from the host.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the local mapping store failed: {0}")]
pub struct StoreError(pub String);

/// The host's store for the calling tenant.
pub trait MappingStore {
    /// Every mapping of one kind, deleted ones included.
    fn list(&mut self, kind: MappingKind) -> Result<Vec<Mapping>, StoreError>;
    /// Inserts or replaces by key, all or none. Nothing is ever removed.
    fn put(&mut self, mappings: &[Mapping]) -> Result<(), StoreError>;
    /// Keeps a created record's id (and nothing of its contents).
    fn record_created(&mut self, record: &CreatedRecord) -> Result<(), StoreError>;
}

/// An in-memory store, for tests.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct MemoryStore {
    pub(crate) mappings: std::collections::BTreeMap<(MappingKind, String), Mapping>,
    pub(crate) created: Vec<CreatedRecord>,
    pub(crate) puts: usize,
}

#[cfg(test)]
impl MappingStore for MemoryStore {
    fn list(&mut self, kind: MappingKind) -> Result<Vec<Mapping>, StoreError> {
        Ok(self
            .mappings
            .values()
            .filter(|m| m.kind == kind)
            .cloned()
            .collect())
    }
    fn put(&mut self, mappings: &[Mapping]) -> Result<(), StoreError> {
        self.puts += 1;
        for m in mappings {
            self.mappings.insert((m.kind, m.crm_id.clone()), m.clone());
        }
        Ok(())
    }
    fn record_created(&mut self, record: &CreatedRecord) -> Result<(), StoreError> {
        self.created.push(record.clone());
        Ok(())
    }
}
