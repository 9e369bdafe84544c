//! One host of a fleet: what other hosts on the same PostgreSQL store announce, applied here.
//!
//! A disconnect made on any host reaches this one as a [`StoreEvent`] within milliseconds: the
//! CRM's credential is dropped at once (so the next call is refused with nothing sent and a
//! running sync writes nothing), exactly as if the operator had asked this host. When this
//! host's listener (re)connects it may have missed events, so it reads every tenant's
//! disconnects again. A component swapped for a tenant through any host is loaded here and
//! swapped in the same way (calls in flight finish on the old one; listening MCP clients are
//! told the tool list changed).

use super::{Host, Opened};
use crate::credential::Credential;
use crate::egress::Crm;
use crate::tenant_db::PgStore;
use crate::tenant_db::postgres::StoreEvent;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;

/// How often a host turns the fleet's orphaned `pending` changes into `unknown`.
const SWEEP_EVERY_SECONDS: u64 = 5;

impl Host {
    /// Stops serving a tenant (gone from the registry): new calls are refused as for an unknown
    /// tenant, even one that was out of service; calls running finish. Its store is kept.
    pub fn remove_tenant(&self, tenant_id: &str) -> bool {
        self.back_in_service(tenant_id);
        self.tenants
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(tenant_id)
            .is_some()
    }

    /// The component a tenant runs now.
    pub fn plugin_of(&self, tenant_id: &str) -> Option<Arc<crate::PluginVersion>> {
        self.tenant(tenant_id)
            .ok()
            .map(|entry| entry.plugin.clone())
    }

    /// Applies the fleet's events to this host's tenants until the host is dropped, and keeps
    /// their journals settled ([`Host::keep_journals`]). Call once, from the runtime that serves
    /// the host.
    pub fn follow_store(self: &Arc<Self>, store: &Arc<PgStore>) -> tokio::task::JoinHandle<()> {
        self.keep_journals(store);
        let mut events = store.events();
        let host = Arc::downgrade(self);
        let store = store.clone();
        tokio::spawn(async move {
            // Components swapped before this host started.
            if let Some(started) = host.upgrade() {
                let store = store.clone();
                let _ = tokio::task::spawn_blocking(move || started.adopt_components(&store)).await;
            }
            loop {
                let event = match events.recv().await {
                    Ok(event) => event,
                    // Fell behind: whatever was missed, the state is read again.
                    Err(RecvError::Lagged(_)) => StoreEvent::Resync,
                    Err(RecvError::Closed) => return,
                };
                let Some(host) = host.upgrade() else { return };
                let store = store.clone();
                // Reading the store blocks; keep it off the async workers.
                let _ = tokio::task::spawn_blocking(move || host.apply(&event, &store)).await;
            }
        })
    }

    /// Keeps every journal truthful while the host runs: each second, records the write
    /// outcomes the store did not take when they were settled (it was away); every few
    /// seconds, turns the fleet's changes whose calls are over yet still `pending` into
    /// `unknown` (their host died mid-write). Started by [`Host::follow_store`]; ends with the
    /// host.
    fn keep_journals(self: &Arc<Self>, store: &Arc<PgStore>) -> tokio::task::JoinHandle<()> {
        let host = Arc::downgrade(self);
        let store = store.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            for round in 0u64.. {
                tick.tick().await;
                let Some(host) = host.upgrade() else { return };
                // Only an open store can have outcomes waiting: they were settled through it.
                let waiting: Vec<_> = host
                    .entries()
                    .into_iter()
                    .filter_map(|entry| entry.state.opened())
                    .filter(|opened| opened.mappings.has_remembered())
                    .collect();
                let sweep = round % SWEEP_EVERY_SECONDS == 0;
                if waiting.is_empty() && !sweep {
                    continue;
                }
                let store = store.clone();
                let _ = tokio::task::spawn_blocking(move || {
                    for opened in waiting {
                        opened.mappings.settle_remembered();
                    }
                    if sweep {
                        use crate::tenant_db::rows::Rows;
                        match store.expire_leases(None, crate::tenant_db::now_ms()) {
                            Ok(0) | Err(_) => {}
                            Ok(n) => tracing::warn!(
                                "change journal: {n} change(s) left pending by a call that \
                                 ended without settling them (its host died?) are now unknown"
                            ),
                        }
                    }
                })
                .await;
            }
        })
    }

    /// Swaps in, for each tenant here, the component the store says it runs (when it differs).
    pub fn adopt_components(&self, store: &PgStore) {
        // One query for every tenant, not a round trip each.
        let Ok(swapped) = store.tenant_components() else {
            return;
        };
        for entry in self.entries() {
            if let Some(sha256) = swapped.get(&*entry.tenant_id) {
                self.adopt_component(store, &entry.tenant_id, sha256);
            }
        }
    }

    /// Loads the kept component `sha256` and swaps it in for `tenant`, unless it runs already.
    fn adopt_component(&self, store: &PgStore, tenant: &str, sha256: &str) {
        let Ok(entry) = self.tenant(tenant) else {
            return;
        };
        if entry.plugin.sha256() == sha256 {
            return;
        }
        match store.component(sha256) {
            Ok(Some(wasm)) => {
                if let Err(e) = self.swap(tenant, &wasm) {
                    tracing::warn!("tenant {tenant}: the swapped component {sha256}: {e}");
                }
            }
            Ok(None) => tracing::warn!("tenant {tenant}: component {sha256} is not in the store"),
            Err(e) => tracing::warn!("tenant {tenant}: reading component {sha256}: {e}"),
        }
    }

    /// One event, applied to the tenants this host serves (others are not ours to know).
    fn apply(&self, event: &StoreEvent, store: &PgStore) {
        match event {
            StoreEvent::Swap { tenant, sha256 } => self.adopt_component(store, tenant, sha256),
            // The tenants themselves are the server's to reload (`crm-host serve`).
            StoreEvent::Registry { .. } => {}
            StoreEvent::Connection {
                tenant,
                crm,
                connected,
            } => {
                if let (Ok(entry), Some(integration)) =
                    (self.tenant(tenant), Crm::from_integration(crm))
                {
                    // A tenant whose store is not open yet reads the change when it opens.
                    let credential = &entry.state.credential;
                    entry.state.if_open(|opened| {
                        set_connected(opened, credential, integration, *connected);
                    });
                }
            }
            StoreEvent::Resync => {
                self.adopt_components(store);
                for entry in self.entries() {
                    // A store that does not answer now keeps the state as it was; the next
                    // (re)connection of the listener reads it again. One not open yet reads
                    // it when it opens.
                    let credential = &entry.state.credential;
                    entry.state.if_open(|opened| {
                        if let Ok(disconnected) = opened.mappings.disconnected() {
                            for integration in [Crm::Hubspot, Crm::Salesforce] {
                                let off =
                                    disconnected.iter().any(|c| c == integration.integration());
                                set_connected(opened, credential, integration, !off);
                            }
                        }
                    });
                }
            }
        }
    }
}

/// Moves one CRM's connection to `connected`, doing nothing when it is there already (so a
/// running sync is cut only by a real disconnect).
fn set_connected(opened: &Opened, credential: &Credential, integration: Crm, connected: bool) {
    if opened.connections.is_connected(integration) == connected {
        return;
    }
    if connected {
        opened.connections.connect(integration, credential.clone());
    } else {
        opened.connections.disconnect(integration);
    }
}
