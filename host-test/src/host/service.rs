//! Tenants this host cannot serve, and whether it is ready.
//!
//! A tenant whose registry entry cannot be built on this host (its credential variable is not
//! set here, its results directory cannot be made) is *taken out of service* here rather than
//! kept on the entry it had: the new entry may be a tighter policy or a revoked credential, and
//! serving the old one would quietly undo the operator's change. Its calls are refused with the
//! reason, nothing sent, until an entry that builds is added again.

use super::{CallError, Host};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// What `/readyz` reports: how many tenants are served, and those out of service with why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readiness {
    pub tenants: usize,
    /// Tenants whose store and results directory are open (they have been called).
    pub loaded: usize,
    /// SQLite stores open now, and how many may be (the rest closed until their next call).
    pub open_stores: usize,
    pub open_stores_limit: usize,
    pub out_of_service: BTreeMap<String, String>,
}

impl Readiness {
    /// Whether some listed tenant is not served here.
    pub fn is_degraded(&self) -> bool {
        !self.out_of_service.is_empty()
    }
}

impl Host {
    /// Takes `tenant_id` out of service on this host: its entry is dropped (calls running
    /// finish on it) and every new call is refused with `why`, nothing sent, until
    /// [`Host::add_tenant`] registers it again. `why` says what the operator must fix.
    pub fn take_out_of_service(&self, tenant_id: &str, why: impl Into<String>) {
        // Marked first, so no lookup in between finds the tenant unknown.
        self.out_of_service
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(tenant_id.to_owned(), why.into());
        self.tenants
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(tenant_id);
    }

    /// Every tenant out of service here, with why.
    pub fn out_of_service(&self) -> BTreeMap<String, String> {
        self.out_of_service
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Forgets that `tenant_id` was out of service (it was added again, or is no longer
    /// listed).
    pub(super) fn back_in_service(&self, tenant_id: &str) {
        self.out_of_service
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(tenant_id);
    }

    /// Why a tenant this host does not serve has no entry: out of service, or unknown.
    pub(super) fn missing(&self, tenant_id: &str) -> CallError {
        match self
            .out_of_service
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(tenant_id)
        {
            Some(why) => CallError::OutOfService {
                tenant: tenant_id.to_owned(),
                why: why.clone(),
            },
            None => CallError::UnknownTenant(tenant_id.into()),
        }
    }

    /// How many tenants are listed here, and how many of them have their store open: a walk of
    /// the table, no store touched.
    pub fn tenant_counts(&self) -> (usize, usize) {
        let tenants = self.entries();
        let loaded = tenants
            .iter()
            .filter(|entry| entry.state.opened().is_some())
            .count();
        (tenants.len(), loaded)
    }

    /// Whether the host can serve: at least one tenant with its component loaded, and every
    /// open store answering a query (each shared store once; a tenant's store not open yet is
    /// not opened for a probe, so a probe costs the same with ten tenants or a hundred
    /// thousand idle ones). A tenant out of service, or whose store failed to open, leaves the
    /// host ready (the others are served) but degraded, and named.
    pub fn readiness(&self) -> Result<Readiness, String> {
        let tenants = self.entries();
        let mut out_of_service = self.out_of_service();
        let mut failed = 0;
        for entry in &tenants {
            if let Some(why) = entry.state.failure() {
                out_of_service.insert(entry.tenant_id.to_string(), why);
                failed += 1;
            }
        }
        if tenants.len() == failed {
            let named: Vec<String> = out_of_service
                .iter()
                .map(|(tenant, why)| format!("tenant {tenant} is out of service: {why}"))
                .collect();
            return Err(match named.is_empty() {
                true => "no tenant is loaded".into(),
                false => format!("no tenant is in service here; {}", named.join("; ")),
            });
        }
        let mut versions = HashSet::new();
        // Each store once, by identity: the fleet's database is shared by all its tenants.
        let mut stores = HashSet::new();
        let mut loaded = 0;
        for entry in &tenants {
            // A load balancer sends calls elsewhere while this host compiles (a call here would
            // wait for it) or when its component cannot be compiled at all.
            if versions.insert(Arc::as_ptr(&entry.plugin))
                && let Some(why) = entry.plugin.code_unavailable()
            {
                return Err(why);
            }
            // The fleet's database answers for every tenant in it, opened or not.
            if let Some(shared) = entry.state.shared_store()
                && stores.insert(Arc::as_ptr(shared) as *const () as usize)
            {
                use crate::tenant_db::rows::Rows;
                shared
                    .ping()
                    .map_err(|e| format!("a tenant's store does not answer: {e}"))?;
            }
            let Some(opened) = entry.state.opened() else {
                continue;
            };
            loaded += 1;
            if stores.insert(opened.mappings.store_identity())
                && let Some(Err(e)) = opened.mappings.ping_if_open()
            {
                return Err(format!("a tenant's store does not answer: {e}"));
            }
        }
        Ok(Readiness {
            tenants: tenants.len() - failed,
            loaded,
            open_stores: crate::tenant_db::open_stores::open_now(),
            open_stores_limit: crate::tenant_db::open_stores::limit(),
            out_of_service,
        })
    }
}
