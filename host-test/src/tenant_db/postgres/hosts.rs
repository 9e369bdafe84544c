//! What each host of the fleet last said of itself: the registry version it applied and the
//! tenants it cannot serve, refreshed every few seconds, so that `crm-host tenants status` shows
//! the whole fleet and a host can count the live hosts sharing the store.
//!
//! Times are the database's clock, as the pace's are: hosts whose clocks disagree still agree
//! on who is live.

use super::{PgStore, db_error};
use crate::tenant_db::StoreError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The database's clock in milliseconds.
const NOW_MS: &str = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

/// A host not heard from for this long is forgotten (it stopped without saying so).
const FORGET_AFTER: Duration = Duration::from_secs(24 * 3600);

/// A listed tenant one host cannot serve, and what the operator must fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutOfService {
    pub tenant: String,
    pub reason: String,
}

/// What one host reports of itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostReport {
    /// The host's name in the fleet (its machine's name and listening port).
    pub host_id: String,
    /// The tenants registry version it applied last (0: it serves a `--tenants` file).
    pub registry_version: i64,
    pub out_of_service: Vec<OutOfService>,
}

/// A host as the fleet last heard from it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostSeen {
    #[serde(flatten)]
    pub report: HostReport,
    /// When it last reported, in milliseconds since the epoch (the database's clock).
    pub seen_ms: i64,
    /// How long ago that was, in seconds.
    pub seen_seconds_ago: f64,
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl PgStore {
    /// Records what this host says of itself now (at start, after every registry version it
    /// applies, and every few seconds as a heartbeat); forgets hosts silent for a day.
    pub fn report_host(&self, report: &HostReport) -> Result<(), StoreError> {
        let broken = serde_json::to_string(&report.out_of_service)
            .map_err(|e| StoreError::Invalid(e.to_string()))?;
        let (host, version) = (report.host_id.clone(), report.registry_version);
        let forget = millis(FORGET_AFTER);
        self.with(move |c| async move {
            c.execute(
                &format!(
                    "INSERT INTO fleet_hosts (host_id, version, broken, seen_ms)
                     VALUES ($1, $2, $3::text::jsonb, {NOW_MS})
                     ON CONFLICT (host_id) DO UPDATE SET version = excluded.version,
                         broken = excluded.broken, seen_ms = excluded.seen_ms"
                ),
                &[&host, &version, &broken],
            )
            .await
            .map_err(db_error)?;
            c.execute(
                &format!("DELETE FROM fleet_hosts WHERE seen_ms < {NOW_MS} - $1::bigint"),
                &[&forget],
            )
            .await
            .map_err(db_error)?;
            Ok(())
        })
    }

    /// Forgets this host (it is stopping), so it no longer counts as live.
    pub fn forget_host(&self, host_id: &str) -> Result<(), StoreError> {
        let host = host_id.to_owned();
        self.with(move |c| async move {
            c.execute("DELETE FROM fleet_hosts WHERE host_id = $1", &[&host])
                .await
                .map_err(db_error)?;
            Ok(())
        })
    }

    /// Every host that reported in the last day, most recently heard first.
    pub fn fleet_hosts(&self) -> Result<Vec<HostSeen>, StoreError> {
        self.with(|c| async move {
            let rows = c
                .query(
                    &format!(
                        "SELECT host_id, version, broken::text, seen_ms, {NOW_MS} - seen_ms
                         FROM fleet_hosts ORDER BY seen_ms DESC, host_id"
                    ),
                    &[],
                )
                .await
                .map_err(db_error)?;
            rows.into_iter()
                .map(|row| {
                    let broken: String = row.get(2);
                    let out_of_service = serde_json::from_str(&broken).map_err(|e| {
                        StoreError::Invalid(format!("fleet_hosts.broken of a host: {e}"))
                    })?;
                    let ago: i64 = row.get(4);
                    Ok(HostSeen {
                        report: HostReport {
                            host_id: row.get(0),
                            registry_version: row.get(1),
                            out_of_service,
                        },
                        seen_ms: row.get(3),
                        seen_seconds_ago: ago.max(0) as f64 / 1000.0,
                    })
                })
                .collect()
        })
    }

    /// How many hosts share this store now, the calling one included once it has reported:
    /// those that reported within `within` (hosts report every 3 seconds, so give a few times
    /// that).
    pub fn live_hosts(&self, within: Duration) -> Result<usize, StoreError> {
        let within = millis(within);
        self.with(move |c| async move {
            let row = c
                .query_one(
                    &format!(
                        "SELECT count(*) FROM fleet_hosts WHERE seen_ms >= {NOW_MS} - $1::bigint"
                    ),
                    &[&within],
                )
                .await
                .map_err(db_error)?;
            let live: i64 = row.get(0);
            Ok(usize::try_from(live).unwrap_or(0))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Migrate, PgStore};
    use super::*;

    #[test]
    fn hosts_report_their_state_and_only_recent_ones_count_as_live() {
        let Ok(url) = std::env::var("CRM_TEST_POSTGRES") else {
            eprintln!("CRM_TEST_POSTGRES is not set: the fleet's host reports are not tested");
            return;
        };
        let store = PgStore::open(&url, Migrate::Apply).unwrap();
        let id = |name: &str| {
            format!(
                "{name}-{}",
                crate::tenant_db::journal::random_hex(6).unwrap()
            )
        };
        let (a, b) = (id("host-a"), id("host-b"));
        let report = |host: &str, version, broken: &[(&str, &str)]| HostReport {
            host_id: host.into(),
            registry_version: version,
            out_of_service: broken
                .iter()
                .map(|(tenant, reason)| OutOfService {
                    tenant: (*tenant).into(),
                    reason: (*reason).into(),
                })
                .collect(),
        };
        let before = store.live_hosts(Duration::from_secs(60)).unwrap();
        store.report_host(&report(&a, 2, &[])).unwrap();
        store
            .report_host(&report(&b, 1, &[("globex", "GLOBEX_CRED is not set")]))
            .unwrap();
        // Reported again: one row per host, the latest state.
        store
            .report_host(&report(&b, 2, &[("globex", "GLOBEX_CRED is not set")]))
            .unwrap();
        assert_eq!(
            store.live_hosts(Duration::from_secs(60)).unwrap(),
            before + 2
        );
        let seen = store.fleet_hosts().unwrap();
        let b_seen = seen.iter().find(|h| h.report.host_id == b).unwrap();
        assert_eq!(
            b_seen.report,
            report(&b, 2, &[("globex", "GLOBEX_CRED is not set")])
        );
        assert!(b_seen.seen_seconds_ago < 60.0, "{b_seen:?}");
        // A host silent for longer than the window is not live.
        store
            .with({
                let a = a.clone();
                move |c| async move {
                    c.execute(
                        "UPDATE fleet_hosts SET seen_ms = seen_ms - 120000 WHERE host_id = $1",
                        &[&a],
                    )
                    .await
                    .map_err(db_error)?;
                    Ok(())
                }
            })
            .unwrap();
        assert_eq!(
            store.live_hosts(Duration::from_secs(60)).unwrap(),
            before + 1
        );
        // A host that stops says so.
        store.forget_host(&b).unwrap();
        assert_eq!(store.live_hosts(Duration::from_secs(60)).unwrap(), before);
        store.forget_host(&a).unwrap();
    }
}
