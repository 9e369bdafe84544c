//! The host's `mapping-store` import as the core's [`MappingStore`], for this call's tenant.

use super::crm::plugin::mapping_store as wit_store;
use crate::mapping::{CreatedRecord, Mapping, MappingKind, MappingStore, StoreError};

/// The host's `mapping-store` import for this call's tenant, and the call's open change (the
/// host's `mapping-change` resource; dropping it uncommitted leaves the store as it was).
#[derive(Default)]
pub(super) struct HostMappingStore {
    change: Option<wit_store::MappingChange>,
}

impl HostMappingStore {
    fn change(&self) -> Result<&wit_store::MappingChange, StoreError> {
        self.change
            .as_ref()
            .ok_or_else(|| StoreError("no change was begun".into()))
    }
}

fn to_wit_kind(kind: MappingKind) -> wit_store::MappingKind {
    match kind {
        MappingKind::User => wit_store::MappingKind::User,
        MappingKind::Owner => wit_store::MappingKind::Owner,
    }
}

/// A page limit as the WIT's `u32`; the core never asks for more than a batch.
fn to_limit(limit: usize) -> u32 {
    u32::try_from(limit).unwrap_or(u32::MAX)
}

/// The host's typed store error as the core's, its advice kept in the words.
pub(super) fn from_wit_error(error: wit_store::StoreError) -> StoreError {
    StoreError(match error {
        wit_store::StoreError::Unavailable(m) => {
            format!(
                "the workspace's store is unavailable ({m}); nothing was changed: try again shortly"
            )
        }
        wit_store::StoreError::Invalid(m)
        | wit_store::StoreError::NotFound(m)
        | wit_store::StoreError::Disconnected(m) => m,
    })
}

fn from_wit(mappings: Vec<wit_store::Mapping>) -> Result<Vec<Mapping>, StoreError> {
    mappings
        .into_iter()
        .map(|m| {
            let fields = serde_json::from_slice(m.fields.as_bytes())
                .map_err(|e| StoreError(format!("a stored mapping is not a JSON object: {e}")))?;
            Ok(Mapping {
                kind: match m.kind {
                    wit_store::MappingKind::User => MappingKind::User,
                    wit_store::MappingKind::Owner => MappingKind::Owner,
                },
                crm_id: m.crm_id,
                fields,
                deleted: m.deleted,
            })
        })
        .collect()
}

fn to_wit(mappings: &[Mapping]) -> Vec<wit_store::Mapping> {
    mappings
        .iter()
        .map(|m| wit_store::Mapping {
            kind: to_wit_kind(m.kind),
            crm_id: m.crm_id.clone(),
            fields: serde_json::to_string(&m.fields)
                .unwrap_or_else(|_| unreachable!("a JSON map always serialises")),
            deleted: m.deleted,
        })
        .collect()
}

impl MappingStore for HostMappingStore {
    fn list_page(
        &mut self,
        kind: MappingKind,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Mapping>, StoreError> {
        from_wit(
            wit_store::list_mappings(to_wit_kind(kind), after, to_limit(limit))
                .map_err(from_wit_error)?,
        )
    }

    fn begin(&mut self) -> Result<(), StoreError> {
        // The earlier change, if any, is dropped first: the host discards what it staged.
        self.change = None;
        self.change = Some(wit_store::begin_change().map_err(from_wit_error)?);
        Ok(())
    }

    fn observe(&mut self, mappings: &[Mapping]) -> Result<(), StoreError> {
        self.change()?
            .observe(&to_wit(mappings))
            .map_err(from_wit_error)
    }

    fn observed_page(
        &mut self,
        kind: MappingKind,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Mapping>, StoreError> {
        from_wit(
            self.change()?
                .observed(to_wit_kind(kind), after, to_limit(limit))
                .map_err(from_wit_error)?,
        )
    }

    fn write(&mut self, mappings: &[Mapping]) -> Result<(), StoreError> {
        self.change()?
            .write(&to_wit(mappings))
            .map_err(from_wit_error)
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        let change = self
            .change
            .take()
            .ok_or_else(|| StoreError("no change was begun".into()))?;
        change.commit().map_err(from_wit_error)
    }

    fn record_created(&mut self, record: &CreatedRecord) -> Result<(), StoreError> {
        wit_store::record_created(record.crm, &record.object_type, &record.record_id)
            .map_err(from_wit_error)
    }
}
