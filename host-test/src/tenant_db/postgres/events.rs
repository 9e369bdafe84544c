//! What one host tells the others through the database: `NOTIFY` on one channel, in the same
//! transaction as the change it announces (so no host hears of a change that was rolled back),
//! and one `LISTEN` connection per host that forwards each event to the host's subscribers.
//!
//! A notification sent while a host's listener was down is lost, so every (re)connection of the
//! listener is announced as [`StoreEvent::Resync`]: subscribers then read the state again.

use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::broadcast;
use tokio_postgres::AsyncMessage;
use tokio_util::sync::CancellationToken;

/// The one channel every host listens on.
pub const CHANNEL: &str = "crm_host_events";

/// An event one host announced to the fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum StoreEvent {
    /// An operator disconnected (or connected again) one CRM of a tenant.
    Connection {
        tenant: String,
        /// `crm-a` or `crm-b`.
        crm: String,
        connected: bool,
    },
    /// Rows of the tenants registry changed (`crm-host tenants import`, `tenants revoke`):
    /// tenants, tokens, identity providers, the operator. A host reads the rows changed since
    /// the version it applied.
    Registry {
        version: i64,
        /// What changed (`token:<sha256>`, `tenant:<id>`, `jwt`, `admin`), when the list is
        /// short enough for a notification; none when it is not.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        changed: Option<Vec<String>>,
    },
    /// A tenant's component was swapped (`crm-host tenants swap`).
    Swap { tenant: String, sha256: String },
    /// This host's listener (re)connected: events may have been missed, read the state again.
    Resync,
}

/// Keeps one `LISTEN` connection open until `stop`, reconnecting with a growing pause (up to
/// two seconds) when the database goes away; `alive` says whether it is listening now.
pub(super) async fn listen(
    config: tokio_postgres::Config,
    tls: tokio_postgres_rustls::MakeRustlsConnect,
    events: broadcast::Sender<StoreEvent>,
    alive: Arc<AtomicBool>,
    stop: CancellationToken,
) {
    let mut pause = Duration::from_millis(100);
    while !stop.is_cancelled() {
        if let Ok((client, mut connection)) = config.connect(tls.clone()).await {
            let forward = events.clone();
            let driver = tokio::spawn(async move {
                while let Some(Ok(message)) =
                    std::future::poll_fn(|cx| connection.poll_message(cx)).await
                {
                    if let AsyncMessage::Notification(note) = message
                        && let Ok(event) = serde_json::from_str::<StoreEvent>(note.payload())
                    {
                        let _ = forward.send(event);
                    }
                }
            });
            if client
                .batch_execute(&format!("LISTEN {CHANNEL}"))
                .await
                .is_ok()
            {
                alive.store(true, Ordering::SeqCst);
                pause = Duration::from_millis(100);
                let _ = events.send(StoreEvent::Resync);
            }
            tokio::select! {
                _ = driver => {}
                () = stop.cancelled() => {}
            }
            alive.store(false, Ordering::SeqCst);
            drop(client);
        }
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = stop.cancelled() => {}
        }
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}
