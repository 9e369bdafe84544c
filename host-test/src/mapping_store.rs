//! `mapping-store`: the calling tenant's mappings and created ids, and a sync's staged change,
//! bound to the call's tenant and user (the component names neither).

use crate::bindings::crm::plugin::mapping_store;
use crate::connections::Connections;
use crate::egress::Crm;
use crate::tenant_db::{MappingChange, StoreError, StoredMapping, TenantDb};
use std::sync::Arc;
use wasmtime::component::{HasData, Resource, ResourceTable};

use mapping_store::StoreError as WitStoreError;

/// The store's error as the WIT's `store-error`, case for case.
impl From<StoreError> for WitStoreError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Unavailable(m) => WitStoreError::Unavailable(m),
            StoreError::Invalid(m) => WitStoreError::Invalid(m),
            StoreError::NotFound(m) => WitStoreError::NotFound(m),
            StoreError::Disconnected(m) => WitStoreError::Disconnected(m),
        }
    }
}

/// `mapping-store` as one call sees it: its tenant's store, user and connections (the
/// component passes no tenant).
pub(crate) struct MappingStoreView<'a> {
    pub(crate) db: &'a Arc<TenantDb>,
    pub(crate) user_id: &'a str,
    pub(crate) connections: &'a Connections,
    /// CRM A's generation when the call began: a sync cut by a disconnect writes nothing.
    pub(crate) crm_a_generation: u64,
    pub(crate) table: &'a mut ResourceTable,
}

/// The `mapping-store` capability, for the linker: its host data is a [`MappingStoreView`].
pub(crate) struct MappingStore;

impl HasData for MappingStore {
    type Data<'a> = MappingStoreView<'a>;
}

impl mapping_store::Host for MappingStoreView<'_> {
    fn list_mappings(
        &mut self,
        kind: mapping_store::MappingKind,
        after: Option<String>,
        limit: u32,
    ) -> Result<Vec<mapping_store::Mapping>, WitStoreError> {
        let rows = self
            .db
            .list_page(kind_name(kind), after.as_deref(), limit as usize)?;
        Ok(to_wit(rows))
    }

    fn begin_change(&mut self) -> Result<Resource<MappingChange>, WitStoreError> {
        self.table
            .push(MappingChange::begin(self.db))
            .map_err(|e| WitStoreError::Invalid(e.to_string()))
    }

    fn record_created(
        &mut self,
        crm: String,
        object_type: String,
        record_id: String,
    ) -> Result<(), WitStoreError> {
        Ok(self
            .db
            .record_created(self.user_id, &crm, &object_type, &record_id)?)
    }
}

/// A sync's change: staged in bounded batches, applied at commit in one transaction. The
/// commit is refused when HubSpot was disconnected since the call began, so a sync cut by an
/// operator's disconnect writes nothing.
impl mapping_store::HostMappingChange for MappingStoreView<'_> {
    fn observe(
        &mut self,
        change: Resource<MappingChange>,
        mappings: Vec<mapping_store::Mapping>,
    ) -> Result<(), WitStoreError> {
        let rows = from_wit(mappings);
        Ok(self.change(&change)?.observe(&rows)?)
    }

    fn observed(
        &mut self,
        change: Resource<MappingChange>,
        kind: mapping_store::MappingKind,
        after: Option<String>,
        limit: u32,
    ) -> Result<Vec<mapping_store::Mapping>, WitStoreError> {
        let rows =
            self.change(&change)?
                .observed(kind_name(kind), after.as_deref(), limit as usize)?;
        Ok(to_wit(rows))
    }

    fn write(
        &mut self,
        change: Resource<MappingChange>,
        mappings: Vec<mapping_store::Mapping>,
    ) -> Result<(), WitStoreError> {
        let rows = from_wit(mappings);
        Ok(self.change(&change)?.write(&rows)?)
    }

    fn commit(&mut self, change: Resource<MappingChange>) -> Result<(), WitStoreError> {
        if !self
            .connections
            .unchanged_since(Crm::Hubspot, self.crm_a_generation)
        {
            return Err(WitStoreError::Disconnected(
                "HubSpot was disconnected during the call; no mapping was written. Reconnect \
                 HubSpot in the workspace's integration settings, then sync again."
                    .into(),
            ));
        }
        // The store checks again in the commit's transaction: a disconnect made on another
        // host (or by `crm-host connection` in another process) stops it too.
        Ok(self
            .change(&change)?
            .commit_unless_disconnected(Some(Crm::Hubspot.integration()))?)
    }

    fn drop(&mut self, change: Resource<MappingChange>) -> wasmtime::Result<()> {
        // Dropping an uncommitted change discards what it staged.
        self.table.delete(change)?;
        Ok(())
    }
}

impl MappingStoreView<'_> {
    fn change(
        &mut self,
        change: &Resource<MappingChange>,
    ) -> Result<&mut MappingChange, WitStoreError> {
        self.table
            .get_mut(change)
            .map_err(|e| WitStoreError::Invalid(e.to_string()))
    }
}

fn kind_name(kind: mapping_store::MappingKind) -> &'static str {
    match kind {
        mapping_store::MappingKind::User => "user",
        mapping_store::MappingKind::Owner => "owner",
    }
}

fn from_wit(mappings: Vec<mapping_store::Mapping>) -> Vec<StoredMapping> {
    mappings
        .into_iter()
        .map(|m| StoredMapping {
            kind: kind_name(m.kind).into(),
            crm_id: m.crm_id,
            fields: m.fields,
            deleted: m.deleted,
        })
        .collect()
}

/// Rows as the WIT's mappings; the store only ever holds the two kinds.
fn to_wit(rows: Vec<StoredMapping>) -> Vec<mapping_store::Mapping> {
    rows.into_iter()
        .map(|m| mapping_store::Mapping {
            kind: match m.kind.as_str() {
                "user" => mapping_store::MappingKind::User,
                _ => mapping_store::MappingKind::Owner,
            },
            crm_id: m.crm_id,
            fields: m.fields,
            deleted: m.deleted,
        })
        .collect()
}
