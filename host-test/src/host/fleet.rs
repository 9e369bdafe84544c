//! One host of a fleet: what other hosts on the same PostgreSQL store announce, applied here.
//!
//! A disconnect made on any host reaches this one as a [`StoreEvent`] within milliseconds: the
//! CRM's credential is dropped at once (so the next call is refused with nothing sent and a
//! running sync writes nothing), exactly as if the operator had asked this host. When this
//! host's listener (re)connects it may have missed events, so it reads every tenant's
//! disconnects again.

use super::{Host, TenantEntry};
use crate::egress::Crm;
use crate::tenant_db::PgStore;
use crate::tenant_db::postgres::StoreEvent;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;

impl Host {
    /// Applies the fleet's events to this host's tenants until the host is dropped. Call once,
    /// from the runtime that serves the host.
    pub fn follow_store(self: &Arc<Self>, store: &PgStore) -> tokio::task::JoinHandle<()> {
        let mut events = store.events();
        let host = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let event = match events.recv().await {
                    Ok(event) => event,
                    // Fell behind: whatever was missed, the state is read again.
                    Err(RecvError::Lagged(_)) => StoreEvent::Resync,
                    Err(RecvError::Closed) => return,
                };
                let Some(host) = host.upgrade() else { return };
                // Reading the store blocks; keep it off the async workers.
                let _ = tokio::task::spawn_blocking(move || host.apply(&event)).await;
            }
        })
    }

    /// One event, applied to the tenants this host serves (others are not ours to know).
    fn apply(&self, event: &StoreEvent) {
        match event {
            StoreEvent::Connection {
                tenant,
                crm,
                connected,
            } => {
                if let (Ok(entry), Some(integration)) =
                    (self.tenant(tenant), Crm::from_integration(crm))
                {
                    set_connected(&entry, integration, *connected);
                }
            }
            StoreEvent::Resync => {
                let entries: Vec<Arc<TenantEntry>> = self
                    .tenants
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .values()
                    .cloned()
                    .collect();
                for entry in entries {
                    // A store that does not answer now keeps the state as it was; the next
                    // (re)connection of the listener reads it again.
                    if let Ok(disconnected) = entry.mappings.disconnected() {
                        for integration in [Crm::Hubspot, Crm::Salesforce] {
                            let off = disconnected.iter().any(|c| c == integration.integration());
                            set_connected(&entry, integration, !off);
                        }
                    }
                }
            }
        }
    }
}

/// Moves one CRM's connection to `connected`, doing nothing when it is there already (so a
/// running sync is cut only by a real disconnect).
fn set_connected(entry: &TenantEntry, integration: Crm, connected: bool) {
    if entry.connections.is_connected(integration) == connected {
        return;
    }
    if connected {
        entry
            .connections
            .connect(integration, entry.credential.clone());
    } else {
        entry.connections.disconnect(integration);
    }
}
