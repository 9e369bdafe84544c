//! The fleet's pace ([`PaceStore`]) in the database: one row per lane, changed by one
//! statement per send (the row's lock orders racing hosts), timed by the database's clock so
//! hosts whose clocks disagree still agree on the window.

use super::{PgStore, db_error};
use crate::backend::BoxFuture;
use crate::pacing::{LeaseId, PaceStore, Window};
use crate::tenant_db::StoreError;
use std::time::Duration;

/// The database's clock in milliseconds.
const NOW_MS: &str = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl PaceStore for PgStore {
    fn try_send(
        &self,
        key: &str,
        window: Window,
    ) -> BoxFuture<Result<Option<Duration>, StoreError>> {
        let key = key.to_owned();
        let (limit, per) = (
            i32::try_from(window.requests).unwrap_or(i32::MAX),
            millis(window.per),
        );
        self.spawn_with(move |c| async move {
            // Keeps the last `limit` send times; takes a send when the oldest of them has left
            // the window (or there are fewer) and the lane is not paused.
            let take = c
                .prepare_cached(&format!(
                    "INSERT INTO pace_lanes AS l (key, sends) SELECT $1, ARRAY[{NOW_MS}]
                     ON CONFLICT (key) DO UPDATE
                     SET sends = (l.sends || excluded.sends[1])
                                 [greatest(1, cardinality(l.sends) + 2 - $2::int):]
                     WHERE l.paused_until_ms <= excluded.sends[1]
                       AND (cardinality(l.sends) < $2::int
                            OR l.sends[cardinality(l.sends) + 1 - $2::int]
                               <= excluded.sends[1] - $3::bigint)
                     RETURNING 1"
                ))
                .await
                .map_err(db_error)?;
            if c.query_opt(&take, &[&key, &limit, &per])
                .await
                .map_err(db_error)?
                .is_some()
            {
                return Ok(None);
            }
            let wait = c
                .query_one(
                    &format!(
                        "SELECT greatest(paused_until_ms - n.ms,
                             CASE WHEN cardinality(sends) >= $2::int
                                  THEN sends[cardinality(sends) + 1 - $2::int] + $3::bigint - n.ms
                                  ELSE 0 END,
                             1)
                         FROM pace_lanes, (SELECT {NOW_MS} AS ms) n WHERE key = $1"
                    ),
                    &[&key, &limit, &per],
                )
                .await
                .map_err(db_error)?;
            let wait: i64 = wait.get(0);
            Ok(Some(Duration::from_millis(wait.max(1) as u64)))
        })
    }

    fn try_lease(
        &self,
        key: &str,
        limit: u32,
        ttl: Duration,
    ) -> BoxFuture<Result<Result<LeaseId, Duration>, StoreError>> {
        let key = key.to_owned();
        let ttl = millis(ttl);
        self.spawn_with(move |mut c| async move {
            let tx = c.transaction().await.map_err(db_error)?;
            tx.execute(
                "INSERT INTO pace_lanes (key) VALUES ($1) ON CONFLICT DO NOTHING",
                &[&key],
            )
            .await
            .map_err(db_error)?;
            let row = tx
                .query_one(
                    &format!(
                        "SELECT leases, paused_until_ms, {NOW_MS}
                         FROM pace_lanes WHERE key = $1 FOR UPDATE"
                    ),
                    &[&key],
                )
                .await
                .map_err(db_error)?;
            let (leases, paused_until, now): (Vec<i64>, i64, i64) =
                (row.get(0), row.get(1), row.get(2));
            if paused_until > now {
                return Ok(Err(Duration::from_millis((paused_until - now) as u64)));
            }
            // A lease is its expiry in milliseconds times 1000 plus a tie-breaker.
            let mut live: Vec<i64> = leases.into_iter().filter(|l| l / 1000 > now).collect();
            if live.len() >= limit as usize {
                return Ok(Err(Duration::from_millis(20)));
            }
            let base = (now + ttl) * 1000;
            let lease = (0..1000)
                .map(|k| base + k)
                .find(|id| !live.contains(id))
                .unwrap_or(base);
            live.push(lease);
            tx.execute(
                "UPDATE pace_lanes SET leases = $2 WHERE key = $1",
                &[&key, &live],
            )
            .await
            .map_err(db_error)?;
            tx.commit().await.map_err(db_error)?;
            Ok(Ok(lease))
        })
    }

    fn release(&self, key: &str, lease: LeaseId) {
        let key = key.to_owned();
        // Not awaited: a lease not given back expires.
        drop(self.spawn_with(move |c| async move {
            c.execute(
                "UPDATE pace_lanes SET leases = array_remove(leases, $2) WHERE key = $1",
                &[&key, &lease],
            )
            .await
            .map_err(db_error)?;
            Ok(())
        }));
    }

    fn pause(&self, key: &str, pause: Duration) -> BoxFuture<Result<(), StoreError>> {
        let key = key.to_owned();
        let pause = millis(pause);
        self.spawn_with(move |c| async move {
            c.execute(
                &format!(
                    "INSERT INTO pace_lanes AS l (key, paused_until_ms)
                     VALUES ($1, {NOW_MS} + $2::bigint)
                     ON CONFLICT (key) DO UPDATE
                     SET paused_until_ms = greatest(l.paused_until_ms, excluded.paused_until_ms)"
                ),
                &[&key, &pause],
            )
            .await
            .map_err(db_error)?;
            Ok(())
        })
    }
}
