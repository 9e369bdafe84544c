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

/// Most mappings one store call carries either way (a page read or a batch staged): what keeps
/// the component's memory flat however many mappings a tenant has.
pub const MAX_BATCH: usize = 500;

/// The host's store for the calling tenant.
///
/// Large changes go through the call's one open change: [`begin`](Self::begin), stage what the
/// CRM holds with [`observe`](Self::observe), compare it in key order with the stored mappings
/// ([`observed_page`](Self::observed_page) beside [`list_page`](Self::list_page)), stage the
/// writes with [`write`](Self::write), then [`commit`](Self::commit): all or nothing, and
/// nothing visible before the commit. Every call carries at most [`MAX_BATCH`] mappings.
pub trait MappingStore {
    /// Up to `limit` stored mappings of one kind, deleted ones included, in key order after the
    /// key `after` (from the first when `None`).
    fn list_page(
        &mut self,
        kind: MappingKind,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Mapping>, StoreError>;
    /// Begins the call's change; one begun before and not committed is dropped, unapplied.
    fn begin(&mut self) -> Result<(), StoreError>;
    /// Stages mappings as observed in the CRM; a key observed again replaces the earlier one.
    fn observe(&mut self, mappings: &[Mapping]) -> Result<(), StoreError>;
    /// Up to `limit` observed mappings of one kind, in key order after the key `after`.
    fn observed_page(
        &mut self,
        kind: MappingKind,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Mapping>, StoreError>;
    /// Stages writes, each inserting or replacing by key at the commit. Nothing is ever removed.
    fn write(&mut self, mappings: &[Mapping]) -> Result<(), StoreError>;
    /// Applies the change's writes, all or none, and ends the change.
    fn commit(&mut self) -> Result<(), StoreError>;
    /// Keeps a created record's id (and nothing of its contents).
    fn record_created(&mut self, record: &CreatedRecord) -> Result<(), StoreError>;
}

/// An in-memory store, for tests.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct MemoryStore {
    pub(crate) mappings: std::collections::BTreeMap<(MappingKind, String), Mapping>,
    pub(crate) created: Vec<CreatedRecord>,
    /// Changes committed.
    pub(crate) puts: usize,
    /// The most mappings one call carried either way (a page asked for, a batch staged).
    pub(crate) largest_batch: usize,
    /// The open change: what it observed, and its staged writes.
    change: Option<MemoryChange>,
}

/// An open change of a [`MemoryStore`].
#[cfg(test)]
#[derive(Debug, Default)]
struct MemoryChange {
    observed: std::collections::BTreeMap<(MappingKind, String), Mapping>,
    writes: Vec<Mapping>,
}

#[cfg(test)]
impl MemoryStore {
    fn change(&mut self) -> Result<&mut MemoryChange, StoreError> {
        self.change
            .as_mut()
            .ok_or_else(|| StoreError("no change was begun".into()))
    }
}

/// Up to `limit` mappings of `kind` from a map keyed like the stores, after `after`.
#[cfg(test)]
fn page_of(
    map: &std::collections::BTreeMap<(MappingKind, String), Mapping>,
    kind: MappingKind,
    after: Option<&str>,
    limit: usize,
) -> Vec<Mapping> {
    use std::ops::Bound;
    let start = match after {
        Some(after) => Bound::Excluded((kind, after.to_string())),
        None => Bound::Included((kind, String::new())),
    };
    map.range((start, Bound::Unbounded))
        .take_while(|((k, _), _)| *k == kind)
        .take(limit)
        .map(|(_, m)| m.clone())
        .collect()
}

#[cfg(test)]
impl MappingStore for MemoryStore {
    fn list_page(
        &mut self,
        kind: MappingKind,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Mapping>, StoreError> {
        self.largest_batch = self.largest_batch.max(limit);
        Ok(page_of(&self.mappings, kind, after, limit))
    }
    fn begin(&mut self) -> Result<(), StoreError> {
        self.change = Some(MemoryChange::default());
        Ok(())
    }
    fn observe(&mut self, mappings: &[Mapping]) -> Result<(), StoreError> {
        self.largest_batch = self.largest_batch.max(mappings.len());
        let change = self.change()?;
        for m in mappings {
            change
                .observed
                .insert((m.kind, m.crm_id.clone()), m.clone());
        }
        Ok(())
    }
    fn observed_page(
        &mut self,
        kind: MappingKind,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Mapping>, StoreError> {
        self.largest_batch = self.largest_batch.max(limit);
        Ok(page_of(&self.change()?.observed, kind, after, limit))
    }
    fn write(&mut self, mappings: &[Mapping]) -> Result<(), StoreError> {
        self.largest_batch = self.largest_batch.max(mappings.len());
        self.change()?.writes.extend_from_slice(mappings);
        Ok(())
    }
    fn commit(&mut self) -> Result<(), StoreError> {
        let change = self
            .change
            .take()
            .ok_or_else(|| StoreError("no change was begun".into()))?;
        self.puts += 1;
        for m in change.writes {
            self.mappings.insert((m.kind, m.crm_id.clone()), m);
        }
        Ok(())
    }
    fn record_created(&mut self, record: &CreatedRecord) -> Result<(), StoreError> {
        self.created.push(record.clone());
        Ok(())
    }
}
