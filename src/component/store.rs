//! The host's `mapping-store` import as the core's [`MappingStore`], for this call's tenant.

use super::crm::plugin::mapping_store as wit_store;
use crate::mapping::{CreatedRecord, Mapping, MappingKind, MappingStore, StoreError};

/// The host's `mapping-store` import for this call's tenant.
pub(super) struct HostMappingStore;

fn to_wit_kind(kind: MappingKind) -> wit_store::MappingKind {
    match kind {
        MappingKind::User => wit_store::MappingKind::User,
        MappingKind::Owner => wit_store::MappingKind::Owner,
    }
}

impl MappingStore for HostMappingStore {
    fn list(&mut self, kind: MappingKind) -> Result<Vec<Mapping>, StoreError> {
        wit_store::list_mappings(to_wit_kind(kind))
            .map_err(StoreError)?
            .into_iter()
            .map(|m| {
                let fields = serde_json::from_slice(m.fields.as_bytes()).map_err(|e| {
                    StoreError(format!("a stored mapping is not a JSON object: {e}"))
                })?;
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

    fn put(&mut self, mappings: &[Mapping]) -> Result<(), StoreError> {
        let mappings: Vec<wit_store::Mapping> = mappings
            .iter()
            .map(|m| wit_store::Mapping {
                kind: to_wit_kind(m.kind),
                crm_id: m.crm_id.clone(),
                fields: serde_json::Value::Object(m.fields.clone()).to_string(),
                deleted: m.deleted,
            })
            .collect();
        wit_store::put_mappings(&mappings).map_err(StoreError)
    }

    fn record_created(&mut self, record: &CreatedRecord) -> Result<(), StoreError> {
        wit_store::record_created(record.crm, &record.object_type, &record.record_id)
            .map_err(StoreError)
    }
}
