//! What a tenant keeps outside the process (its store, the disconnects kept in it, its results
//! directory), opened when a call or an operator first needs it rather than when the tenant is
//! listed. A host can then list far more tenants than it could hold stores open for, start in
//! time that does not grow with them, and spend nothing on the idle ones.
//!
//! [`Host::add_tenant`](super::Host::add_tenant) opens at once, so a store that cannot be
//! opened fails the registration as it always did; [`Host::list_tenant`](super::Host::list_tenant)
//! leaves it to the first call. A failed open takes the tenant out of service with why until
//! it is tried again, [`RETRY_AFTER`] later at the earliest: a broken disk is not hit by every
//! request.

use super::CallError;
use crate::connections::Connections;
use crate::credential::Credential;
use crate::egress::Crm;
use crate::tenant_db::{DbLocation, TenantDb};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a tenant whose store failed to open is refused before it is tried again.
pub(super) const RETRY_AFTER: Duration = Duration::from_secs(3);

/// A tenant's store, connections and results directory, open.
pub(super) struct Opened {
    /// Where the tenant's user/owner mappings, created-record ids and journal are kept.
    pub(super) mappings: Arc<TenantDb>,
    /// The credential per CRM, while connected; shared across swaps.
    pub(super) connections: Arc<Connections>,
    /// The tenant's results directory, made and resolved.
    pub(super) results_dir: Option<PathBuf>,
}

/// Where a tenant's outside state is, and whether it is open.
pub(super) struct TenantState {
    tenant_id: Arc<str>,
    /// The credential the tenant was registered with: what its connections start from, and
    /// what a reconnect announced by another host of the fleet restores.
    pub(super) credential: Credential,
    results_dir: Option<PathBuf>,
    location: DbLocation,
    opening: Mutex<Opening>,
}

enum Opening {
    /// Not opened yet (or closed).
    Closed,
    Open(Arc<Opened>),
    /// The last try failed, at `at`, for `why`.
    Failed {
        at: Instant,
        why: String,
    },
}

impl TenantState {
    pub(super) fn new(
        tenant_id: Arc<str>,
        credential: Credential,
        results_dir: Option<PathBuf>,
        location: DbLocation,
    ) -> Self {
        TenantState {
            tenant_id,
            credential,
            results_dir,
            location,
            opening: Mutex::new(Opening::Closed),
        }
    }

    /// The tenant's state, opened now when it was not (one opener at a time: others wait for
    /// its result). A failure is the tenant's out-of-service reason until the retry.
    pub(super) fn open(&self) -> Result<Arc<Opened>, CallError> {
        let mut opening = self.opening.lock().unwrap_or_else(|e| e.into_inner());
        match &*opening {
            Opening::Open(opened) => return Ok(opened.clone()),
            Opening::Failed { at, why } if at.elapsed() < RETRY_AFTER => {
                return Err(self.out_of_service(why));
            }
            _ => {}
        }
        match self.try_open() {
            Ok(opened) => {
                let opened = Arc::new(opened);
                *opening = Opening::Open(opened.clone());
                Ok(opened)
            }
            Err(why) => {
                tracing::warn!(tenant = %self.tenant_id, "{why}");
                let refused = self.out_of_service(&why);
                *opening = Opening::Failed {
                    at: Instant::now(),
                    why,
                };
                Err(refused)
            }
        }
    }

    /// Opens the tenant's state now, for a registration that must fail when it cannot be
    /// opened: the reason is returned, not kept.
    pub(super) fn open_now(&self) -> Result<(), String> {
        let opened = Arc::new(self.try_open()?);
        *self.opening.lock().unwrap_or_else(|e| e.into_inner()) = Opening::Open(opened);
        Ok(())
    }

    /// The tenant's state if it is open; never opens it.
    pub(super) fn opened(&self) -> Option<Arc<Opened>> {
        match &*self.opening.lock().unwrap_or_else(|e| e.into_inner()) {
            Opening::Open(opened) => Some(opened.clone()),
            _ => None,
        }
    }

    /// Runs `change` on the tenant's connections if they are open, holding off any open in
    /// progress until it is done: an open reads the disconnects after `change`'s was kept,
    /// or `change` lands on what it read. Closed, the next open reads the store.
    pub(super) fn if_open(&self, change: impl FnOnce(&Opened)) {
        if let Opening::Open(opened) = &*self.opening.lock().unwrap_or_else(|e| e.into_inner()) {
            change(opened);
        }
    }

    /// The fleet's database the tenant's store is in, if it is one: readiness pings it
    /// whether or not the tenant has been opened.
    pub(super) fn shared_store(&self) -> Option<&Arc<crate::tenant_db::PgStore>> {
        match &self.location {
            DbLocation::Postgres(store) => Some(store),
            _ => None,
        }
    }

    /// Why the tenant's state could not be opened, while that stands.
    pub(super) fn failure(&self) -> Option<String> {
        match &*self.opening.lock().unwrap_or_else(|e| e.into_inner()) {
            Opening::Failed { why, .. } => Some(why.clone()),
            _ => None,
        }
    }

    fn out_of_service(&self, why: &str) -> CallError {
        CallError::OutOfService {
            tenant: self.tenant_id.to_string(),
            why: format!("{why}; tried again at its next call"),
        }
    }

    /// Makes the results directory, opens the store and reads the disconnects kept in it.
    fn try_open(&self) -> Result<Opened, String> {
        let results_dir = match &self.results_dir {
            Some(dir) => {
                let bad = |e: std::io::Error| format!("results directory {}: {e}", dir.display());
                crate::private_fs::create_dir_all(dir).map_err(bad)?;
                Some(dir.canonicalize().map_err(bad)?)
            }
            None => None,
        };
        let mappings = TenantDb::open(&self.tenant_id, &self.location)
            .map_err(|e| format!("mapping store: {e}"))?;
        let disconnected: Vec<Crm> = mappings
            .disconnected()
            .map_err(|e| format!("mapping store: {e}"))?
            .iter()
            .filter_map(|crm| Crm::from_integration(crm))
            .collect();
        Ok(Opened {
            mappings: Arc::new(mappings),
            connections: Arc::new(Connections::new(self.credential.clone(), &disconnected)),
            results_dir,
        })
    }
}
