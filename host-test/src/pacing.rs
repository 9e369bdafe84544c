//! Pacing what the host sends to each CRM account, so the account's limits hold however many
//! calls, clients and hosts share it.
//!
//! HubSpot limits an account to a number of requests in any 10 seconds (a rolling window:
//! `TEN_SECONDLY_ROLLING`) and its search endpoints to about five a second; Salesforce limits
//! the requests an org runs at once. The host holds each request until its account has room:
//! a sliding window of recent sends per lane (never more than the limit in any window, unlike a
//! token bucket, which allows twice the burst), a lease per Salesforce request, and a pause when
//! the CRM answers `Retry-After`. Where the room is kept is a [`PaceStore`]: this process's
//! memory for one host, the fleet's database for many (so two hosts never send more than one
//! would, and a `Retry-After` seen by one pauses all).

use crate::backend::BoxFuture;
use crate::egress::Crm;
use crate::tenant_db::StoreError;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// At most `requests` in any `per`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub requests: u32,
    pub per: Duration,
}

/// Each account's limits, and how long a request may wait for room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacingLimits {
    /// Every HubSpot request. HubSpot gives a public app 110 requests per 10 s per account;
    /// 100 leaves room for the account's other apps' retries.
    pub hubspot: Window,
    /// HubSpot's search endpoints (counted in `hubspot` too).
    pub hubspot_search: Window,
    /// Salesforce requests running at once per org.
    pub salesforce_concurrent: u32,
    /// Longest a request waits for room; past it the component is told to retry later.
    pub max_wait: Duration,
}

impl Default for PacingLimits {
    fn default() -> Self {
        PacingLimits {
            hubspot: Window {
                requests: 100,
                per: Duration::from_secs(10),
            },
            hubspot_search: Window {
                requests: 5,
                per: Duration::from_secs(1),
            },
            salesforce_concurrent: 25,
            max_wait: Duration::from_secs(20),
        }
    }
}

/// A Salesforce lease's id, as its store issued it.
pub type LeaseId = i64;

/// Where the room is kept: every call is one atomic step.
pub trait PaceStore: Send + Sync {
    /// Takes a send in `key`'s window if it has room and `key` is not paused: `None`, or how
    /// long until there may be room.
    fn try_send(
        &self,
        key: &str,
        window: Window,
    ) -> BoxFuture<Result<Option<Duration>, StoreError>>;
    /// Takes one of `limit` leases on `key`, each good for `ttl` unless released (a host that
    /// dies frees its leases when they expire): the lease, or how long to wait.
    fn try_lease(
        &self,
        key: &str,
        limit: u32,
        ttl: Duration,
    ) -> BoxFuture<Result<Result<LeaseId, Duration>, StoreError>>;
    fn release(&self, key: &str, lease: LeaseId);
    /// Holds every send on `key` for `pause`.
    fn pause(&self, key: &str, pause: Duration) -> BoxFuture<Result<(), StoreError>>;
}

/// Why a request was not let out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Paced {
    /// No room within the longest wait: try again after this long.
    #[error("the account's request limit is reached; retry in {} s", .0.as_secs().max(1))]
    Busy(Duration),
    /// The store that keeps the room does not answer.
    #[error("{0}")]
    Store(StoreError),
}

/// What a request is to the pacer: HubSpot's searches have a lane of their own, and a write
/// needs the fleet's store (where its journal lives too), so it never goes on a local guess.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Traffic {
    Read,
    Search,
    Write,
}

impl Traffic {
    /// A `GET` reads; a `POST` to a `/search` path is a HubSpot search (a read); any other
    /// method writes.
    pub fn of(method: &http::Method, path: &str) -> Self {
        if method == http::Method::GET {
            Traffic::Read
        } else if method == http::Method::POST && path.ends_with("/search") {
            Traffic::Search
        } else {
            Traffic::Write
        }
    }
}

/// Lets a request out when its account has room.
#[derive(Clone)]
pub struct Pacer {
    store: Arc<dyn PaceStore>,
    limits: PacingLimits,
    /// Where reads are paced while `store` does not answer, and the share of each limit they
    /// get there; none when `store` is this process's memory already.
    fallback: Option<(Arc<LocalPaces>, u32)>,
    /// Whether the last look at `store` failed, so the fall-back is logged once, not per request.
    degraded: Arc<std::sync::atomic::AtomicBool>,
}

/// A request let out; a Salesforce lease is given back when it is dropped.
pub struct Permit {
    lease: Option<(Arc<dyn PaceStore>, String, LeaseId)>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some((store, key, lease)) = self.lease.take() {
            store.release(&key, lease);
        }
    }
}

/// Sends are spaced against windows this much longer than the CRM's, so that the network's
/// jitter cannot carry two windows' sends into one window as the CRM measures it.
const JITTER_MARGIN: Duration = Duration::from_millis(100);

/// A lease outlives a request only if its host died: twice the longest request.
const LEASE_TTL: Duration = Duration::from_secs(240);

fn key(account: &str, lane: &str) -> String {
    format!("{account}/{lane}")
}

impl PacingLimits {
    /// One host's share when `hosts` share the account and cannot agree through a store:
    /// each limit divided among them (at least one request each).
    pub fn share(self, hosts: u32) -> Self {
        let hosts = hosts.max(1);
        let part = |n: u32| (n / hosts).max(1);
        PacingLimits {
            hubspot: Window {
                requests: part(self.hubspot.requests),
                ..self.hubspot
            },
            hubspot_search: Window {
                requests: part(self.hubspot_search.requests),
                ..self.hubspot_search
            },
            salesforce_concurrent: part(self.salesforce_concurrent),
            max_wait: self.max_wait,
        }
    }
}

impl Pacer {
    pub fn new(store: Arc<dyn PaceStore>, limits: PacingLimits) -> Self {
        Pacer {
            store,
            limits,
            fallback: None,
            degraded: Arc::default(),
        }
    }

    /// This process's memory: one host's pace.
    pub fn local(limits: PacingLimits) -> Self {
        Pacer::new(Arc::new(LocalPaces::default()), limits)
    }

    /// While the store does not answer, reads go on paced in this process to a `1/hosts` share
    /// of each limit (so `hosts` hosts doing the same stay within the account's limit); writes
    /// are refused, as nothing can be journalled either.
    pub fn with_local_fallback(mut self, hosts: u32) -> Self {
        self.fallback = Some((Arc::new(LocalPaces::default()), hosts.max(1)));
        self
    }

    pub fn limits(&self) -> PacingLimits {
        self.limits
    }

    /// Waits until one more request to `integration` may go for `account` (a tenant).
    pub async fn acquire(
        &self,
        account: &str,
        integration: Crm,
        traffic: Traffic,
    ) -> Result<Permit, Paced> {
        let started = Instant::now();
        loop {
            let step =
                match take_room(&self.store, self.limits, account, integration, traffic).await {
                    Ok(step) => {
                        if self.degraded.swap(false, Ordering::Relaxed) {
                            tracing::info!("pacing: the fleet's store answers again");
                        }
                        step
                    }
                    Err(err) => match (&self.fallback, traffic) {
                        (Some((local, hosts)), Traffic::Read | Traffic::Search) => {
                            if !self.degraded.swap(true, Ordering::Relaxed) {
                                tracing::warn!(
                                    "pacing: the fleet's store does not answer ({err}); reads go \
                                 on at a 1/{hosts} share of each account's limit, writes are \
                                 refused"
                                );
                            }
                            let local: Arc<dyn PaceStore> = local.clone();
                            take_room(
                                &local,
                                self.limits.share(*hosts),
                                account,
                                integration,
                                traffic,
                            )
                            .await
                            .map_err(Paced::Store)?
                        }
                        _ => return Err(Paced::Store(err)),
                    },
                };
            let wait = match step {
                Ok(permit) => return Ok(permit),
                Err(wait) => wait.max(Duration::from_millis(1)),
            };
            if started.elapsed() + wait > self.limits.max_wait {
                return Err(Paced::Busy(wait));
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// The CRM answered `Retry-After`: hold the account's requests to it that long, on every
    /// host that shares this pacer's store.
    pub async fn pause(&self, account: &str, integration: Crm, pause: Duration) {
        let lane = match integration {
            Crm::Hubspot => "hubspot",
            Crm::Salesforce => "salesforce",
        };
        // Best effort: the CRM itself still refuses what comes too early.
        let _ = self.store.pause(&key(account, lane), pause).await;
        if let Some((local, _)) = &self.fallback {
            let _ = local.pause(&key(account, lane), pause).await;
        }
    }
}

/// One attempt at room in `store`: a permit, or how long until there may be room.
async fn take_room(
    store: &Arc<dyn PaceStore>,
    mut limits: PacingLimits,
    account: &str,
    integration: Crm,
    traffic: Traffic,
) -> Result<Result<Permit, Duration>, StoreError> {
    limits.hubspot.per += JITTER_MARGIN;
    limits.hubspot_search.per += JITTER_MARGIN;
    match integration {
        Crm::Hubspot => {
            if traffic == Traffic::Search {
                let search = key(account, "hubspot-search");
                if let Some(wait) = store.try_send(&search, limits.hubspot_search).await? {
                    return Ok(Err(wait));
                }
            }
            let all = key(account, "hubspot");
            Ok(match store.try_send(&all, limits.hubspot).await? {
                None => Ok(Permit { lease: None }),
                Some(wait) => Err(wait),
            })
        }
        Crm::Salesforce => {
            let all = key(account, "salesforce");
            let got = store
                .try_lease(&all, limits.salesforce_concurrent, LEASE_TTL)
                .await?;
            Ok(got.map(|lease| Permit {
                lease: Some((store.clone(), all, lease)),
            }))
        }
    }
}

/// One lane's recent sends and pause, as one host keeps them.
#[derive(Debug, Default)]
struct Lane {
    sends: VecDeque<Instant>,
    leases: HashMap<LeaseId, Instant>,
    paused_until: Option<Instant>,
    next_lease: LeaseId,
}

impl Lane {
    /// The sliding window: room when fewer than `requests` sends fall in the last `per`.
    fn try_send(&mut self, now: Instant, window: Window) -> Option<Duration> {
        if let Some(until) = self.paused_until.filter(|u| *u > now) {
            return Some(until - now);
        }
        while self
            .sends
            .front()
            .is_some_and(|t| now.duration_since(*t) >= window.per)
        {
            self.sends.pop_front();
        }
        if self.sends.len() < window.requests as usize {
            self.sends.push_back(now);
            None
        } else {
            let oldest = self.sends[self.sends.len() - window.requests as usize];
            Some(window.per - now.duration_since(oldest))
        }
    }

    fn try_lease(&mut self, now: Instant, limit: u32, ttl: Duration) -> Result<LeaseId, Duration> {
        if let Some(until) = self.paused_until.filter(|u| *u > now) {
            return Err(until - now);
        }
        self.leases.retain(|_, expires| *expires > now);
        if self.leases.len() < limit as usize {
            self.next_lease += 1;
            self.leases.insert(self.next_lease, now + ttl);
            Ok(self.next_lease)
        } else {
            // Leases end when their requests do; look again shortly.
            Err(Duration::from_millis(20))
        }
    }
}

/// One host's pace, in memory.
#[derive(Debug, Default)]
pub struct LocalPaces {
    lanes: Mutex<HashMap<String, Lane>>,
}

impl LocalPaces {
    fn with<T>(&self, key: &str, f: impl FnOnce(&mut Lane) -> T) -> T {
        let mut lanes = self.lanes.lock().unwrap_or_else(|e| e.into_inner());
        f(lanes.entry(key.to_owned()).or_default())
    }
}

impl PaceStore for LocalPaces {
    fn try_send(
        &self,
        key: &str,
        window: Window,
    ) -> BoxFuture<Result<Option<Duration>, StoreError>> {
        let wait = self.with(key, |lane| lane.try_send(Instant::now(), window));
        Box::pin(async move { Ok(wait) })
    }

    fn try_lease(
        &self,
        key: &str,
        limit: u32,
        ttl: Duration,
    ) -> BoxFuture<Result<Result<LeaseId, Duration>, StoreError>> {
        let got = self.with(key, |lane| lane.try_lease(Instant::now(), limit, ttl));
        Box::pin(async move { Ok(got) })
    }

    fn release(&self, key: &str, lease: LeaseId) {
        self.with(key, |lane| lane.leases.remove(&lease));
    }

    fn pause(&self, key: &str, pause: Duration) -> BoxFuture<Result<(), StoreError>> {
        let until = Instant::now() + pause;
        self.with(key, |lane| {
            lane.paused_until = Some(lane.paused_until.map_or(until, |u| u.max(until)));
        });
        Box::pin(async { Ok(()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEN: Window = Window {
        requests: 3,
        per: Duration::from_secs(10),
    };

    #[test]
    fn the_window_slides_never_letting_more_than_the_limit_into_any_span() {
        let mut lane = Lane::default();
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        assert_eq!(lane.try_send(at(0), TEN), None);
        assert_eq!(lane.try_send(at(1), TEN), None);
        assert_eq!(lane.try_send(at(2), TEN), None);
        // Full: room again when the first send leaves the window, 10 s after it.
        assert_eq!(lane.try_send(at(3), TEN), Some(Duration::from_secs(7)));
        assert_eq!(lane.try_send(at(10), TEN), None);
        assert_eq!(lane.try_send(at(10), TEN), Some(Duration::from_secs(1)));
        // A token bucket of 3 would let 3 more through at once here; the window does not.
        assert_eq!(lane.try_send(at(11), TEN), None);
        assert_eq!(lane.try_send(at(11), TEN), Some(Duration::from_secs(1)));
    }

    #[test]
    fn a_pause_holds_the_lane_and_leases_are_bounded_and_given_back() {
        let mut lane = Lane::default();
        let t0 = Instant::now();
        lane.paused_until = Some(t0 + Duration::from_secs(2));
        assert_eq!(lane.try_send(t0, TEN), Some(Duration::from_secs(2)));
        let later = t0 + Duration::from_secs(3);
        let ttl = Duration::from_secs(60);
        let a = lane.try_lease(later, 2, ttl).unwrap();
        let _b = lane.try_lease(later, 2, ttl).unwrap();
        assert!(lane.try_lease(later, 2, ttl).is_err());
        lane.leases.remove(&a);
        assert!(lane.try_lease(later, 2, ttl).is_ok());
        // A dead host's leases expire.
        assert!(lane.try_lease(later + ttl, 2, ttl).is_ok());
    }

    #[tokio::test]
    async fn a_request_waits_for_room_and_gives_up_past_the_longest_wait() {
        let limits = PacingLimits {
            hubspot: Window {
                requests: 2,
                per: Duration::from_millis(200),
            },
            max_wait: Duration::from_millis(500),
            ..PacingLimits::default()
        };
        let pacer = Pacer::local(limits);
        let started = Instant::now();
        for _ in 0..3 {
            pacer
                .acquire("t", Crm::Hubspot, Traffic::Read)
                .await
                .unwrap();
        }
        assert!(
            started.elapsed() >= Duration::from_millis(200),
            "the third waited"
        );
        pacer.pause("t", Crm::Hubspot, Duration::from_secs(5)).await;
        assert!(matches!(
            pacer.acquire("t", Crm::Hubspot, Traffic::Read).await,
            Err(Paced::Busy(_))
        ));
        // Another account is not held.
        pacer
            .acquire("u", Crm::Hubspot, Traffic::Read)
            .await
            .unwrap();
    }

    /// A store that never answers, as the fleet's database during an outage.
    struct Away;

    impl PaceStore for Away {
        fn try_send(&self, _: &str, _: Window) -> BoxFuture<Result<Option<Duration>, StoreError>> {
            Box::pin(async { Err(StoreError::Unavailable("connection refused".into())) })
        }
        fn try_lease(
            &self,
            _: &str,
            _: u32,
            _: Duration,
        ) -> BoxFuture<Result<Result<LeaseId, Duration>, StoreError>> {
            Box::pin(async { Err(StoreError::Unavailable("connection refused".into())) })
        }
        fn release(&self, _: &str, _: LeaseId) {}
        fn pause(&self, _: &str, _: Duration) -> BoxFuture<Result<(), StoreError>> {
            Box::pin(async { Err(StoreError::Unavailable("connection refused".into())) })
        }
    }

    #[tokio::test]
    async fn with_the_store_away_reads_go_on_at_a_local_share_and_writes_are_refused() {
        let limits = PacingLimits {
            hubspot: Window {
                requests: 8,
                per: Duration::from_secs(60),
            },
            salesforce_concurrent: 6,
            max_wait: Duration::from_millis(50),
            ..PacingLimits::default()
        };
        let strict = Pacer::new(Arc::new(Away), limits);
        assert!(matches!(
            strict.acquire("t", Crm::Hubspot, Traffic::Read).await,
            Err(Paced::Store(_))
        ));
        let pacer = Pacer::new(Arc::new(Away), limits).with_local_fallback(4);
        // A quarter of 8 in the window: two reads, then the third is told to wait.
        for _ in 0..2 {
            pacer
                .acquire("t", Crm::Hubspot, Traffic::Read)
                .await
                .unwrap();
        }
        assert!(matches!(
            pacer.acquire("t", Crm::Hubspot, Traffic::Search).await,
            Err(Paced::Busy(_))
        ));
        // Salesforce: a quarter of 6 leases held at once is one.
        let held = pacer
            .acquire("t", Crm::Salesforce, Traffic::Read)
            .await
            .unwrap();
        assert!(matches!(
            pacer.acquire("t", Crm::Salesforce, Traffic::Read).await,
            Err(Paced::Busy(_))
        ));
        drop(held);
        pacer
            .acquire("t", Crm::Salesforce, Traffic::Read)
            .await
            .unwrap();
        // A write is never let out on a local guess.
        for crm in [Crm::Hubspot, Crm::Salesforce] {
            assert!(matches!(
                pacer.acquire("u", crm, Traffic::Write).await,
                Err(Paced::Store(_))
            ));
        }
    }

    #[test]
    fn a_request_is_a_read_a_search_or_a_write_by_its_method() {
        use http::Method;
        assert_eq!(
            Traffic::of(&Method::GET, "/crm/v3/objects/deals"),
            Traffic::Read
        );
        assert_eq!(
            Traffic::of(&Method::POST, "/crm/v3/objects/deals/search"),
            Traffic::Search
        );
        assert_eq!(
            Traffic::of(&Method::POST, "/crm/v3/objects/deals"),
            Traffic::Write
        );
        assert_eq!(Traffic::of(&Method::PATCH, "/x/search"), Traffic::Write);
    }
}
