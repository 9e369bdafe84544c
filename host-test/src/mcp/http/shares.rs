//! The share of the server any one caller may hold (issue 35): requests in flight per
//! principal, and failed authentications per source address.
//!
//! The connection cap is the server's, not a caller's: before these limits one token could put
//! a slow request on every connection the server would accept and lock every other tenant
//! out. So each principal may have at most a share of the connections busy at once (a request
//! holds its share from its admission until its response ends), and a source address that keeps
//! presenting bad credentials is answered 429 without its token being checked, which bounds
//! both token guessing and the work (signature checks, key fetches) it costs the server.

use super::sessions::Owner;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A principal already has as many requests in flight as it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "too many requests in flight for this token: at most {max} at once; wait for an answer \
     before sending more"
)]
pub struct TooManyInFlight {
    pub max: usize,
}

/// Requests in flight, per principal.
pub struct InFlightLimiter {
    max: usize,
    counts: Mutex<HashMap<Owner, usize>>,
}

impl InFlightLimiter {
    /// At most `max` requests in flight per principal (at least one).
    pub fn new(max: usize) -> Arc<Self> {
        Arc::new(InFlightLimiter {
            max: max.max(1),
            counts: Mutex::default(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Owner, usize>> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Admits one more request of `owner`, held until the permit is dropped; refused when the
    /// owner is at its cap.
    pub fn enter(self: &Arc<Self>, owner: &Owner) -> Result<InFlightPermit, TooManyInFlight> {
        let mut counts = self.lock();
        let count = counts.entry(owner.clone()).or_insert(0);
        if *count >= self.max {
            return Err(TooManyInFlight { max: self.max });
        }
        *count += 1;
        Ok(InFlightPermit {
            limiter: self.clone(),
            owner: owner.clone(),
        })
    }

    /// Requests of `owner` in flight now.
    pub fn in_flight(&self, owner: &Owner) -> usize {
        self.lock().get(owner).copied().unwrap_or(0)
    }

    /// Principals with a request in flight (the map holds no one else).
    pub fn tracked(&self) -> usize {
        self.lock().len()
    }
}

/// One request's place in its principal's share; given back when dropped (the response
/// ended, or the request was refused).
pub struct InFlightPermit {
    limiter: Arc<InFlightLimiter>,
    owner: Owner,
}

impl Drop for InFlightPermit {
    fn drop(&mut self) {
        let mut counts = self.limiter.lock();
        if let Some(count) = counts.get_mut(&self.owner) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(&self.owner);
            }
        }
    }
}

/// Failed authentications one source may make before it is answered 429 for the rest of the
/// window. `max_failures` 0 turns the limit off.
#[derive(Debug, Clone, Copy)]
pub struct AuthFailureLimit {
    pub max_failures: u32,
    pub window: Duration,
}

impl Default for AuthFailureLimit {
    /// 30 a minute: a real client fails once when its token expires and then refreshes it;
    /// a misconfigured one or a guesser is stopped within a second, and a few dozen clients
    /// behind one NAT whose tokens expire together still pass.
    fn default() -> Self {
        AuthFailureLimit {
            max_failures: 30,
            window: Duration::from_secs(60),
        }
    }
}

/// Where a request came from, as the failure limit counts it: an IPv4 address, or an IPv6
/// /64 (one subscriber's whole prefix, which a single host can draw addresses from freely).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    V4(u32),
    V6Prefix(u64),
}

impl From<IpAddr> for Source {
    fn from(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => Source::V4(v4.into()),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Source::V4(v4.into()),
                None => Source::V6Prefix((u128::from(v6) >> 64) as u64),
            },
        }
    }
}

/// A source is answered 429 until this long from now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("too many failed authentications from this address: try again in {} s", retry_after_seconds(*.0))]
pub struct SourceBlocked(pub Duration);

/// Whole seconds for `Retry-After`, rounded up and never 0.
pub fn retry_after_seconds(wait: Duration) -> u64 {
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    seconds.max(1)
}

struct Window {
    started: Instant,
    failures: u32,
}

/// Sources tracked at most; past it, new sources are not counted until old windows expire
/// (a flood from many addresses cannot grow the map without bound).
const MAX_SOURCES: usize = 100_000;

/// Failed authentications per source, in fixed windows that start at a source's first
/// failure.
pub struct AuthFailures {
    limit: AuthFailureLimit,
    sources: Mutex<HashMap<Source, Window>>,
}

impl AuthFailures {
    pub fn new(limit: AuthFailureLimit) -> Self {
        AuthFailures {
            limit,
            sources: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Source, Window>> {
        self.sources.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `source` may try to authenticate at `now`; checked before its credentials.
    pub fn check(&self, source: Source, now: Instant) -> Result<(), SourceBlocked> {
        if self.limit.max_failures == 0 {
            return Ok(());
        }
        match self.lock().get(&source) {
            Some(w) if w.failures >= self.limit.max_failures => {
                let ends = w.started + self.limit.window;
                match ends.checked_duration_since(now) {
                    Some(wait) if !wait.is_zero() => Err(SourceBlocked(wait)),
                    _ => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }

    /// Counts a failed authentication by `source` at `now`; true when this one reached the
    /// limit (the moment worth a log line).
    pub fn record(&self, source: Source, now: Instant) -> bool {
        if self.limit.max_failures == 0 {
            return false;
        }
        let mut sources = self.lock();
        if sources.len() >= MAX_SOURCES && !sources.contains_key(&source) {
            let window = self.limit.window;
            sources.retain(|_, w| now.saturating_duration_since(w.started) < window);
            if sources.len() >= MAX_SOURCES {
                return false;
            }
        }
        let window = sources.entry(source).or_insert(Window {
            started: now,
            failures: 0,
        });
        if now.saturating_duration_since(window.started) >= self.limit.window {
            *window = Window {
                started: now,
                failures: 0,
            };
        }
        window.failures += 1;
        window.failures == self.limit.max_failures
    }

    /// Forgets windows that have ended.
    pub fn prune(&self, now: Instant) {
        let window = self.limit.window;
        self.lock()
            .retain(|_, w| now.saturating_duration_since(w.started) < window);
    }

    /// Sources with a window open.
    pub fn tracked(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::{Authority, Principal};

    fn owner(tenant: &str) -> Owner {
        Owner::from(&Principal {
            tenant_id: tenant.into(),
            user_id: "u".into(),
            granted_scopes: vec![],
            instance_url: None,
            authority: Authority::Token(tenant.into()),
        })
    }

    #[test]
    fn a_principal_holds_at_most_its_share_and_others_are_unaffected() {
        let limiter = InFlightLimiter::new(2);
        let (a, b) = (owner("a"), owner("b"));
        let first = limiter.enter(&a).unwrap();
        let _second = limiter.enter(&a).unwrap();
        assert_eq!(limiter.enter(&a).err(), Some(TooManyInFlight { max: 2 }));
        let _other = limiter
            .enter(&b)
            .expect("another principal has its own share");
        drop(first);
        assert_eq!(limiter.in_flight(&a), 1);
        let _third = limiter.enter(&a).expect("an ended request frees its place");
        assert_eq!(limiter.in_flight(&a), 2);
    }

    #[test]
    fn a_principal_with_nothing_in_flight_is_forgotten() {
        let limiter = InFlightLimiter::new(4);
        let permits: Vec<_> = (0..3)
            .map(|_| limiter.enter(&owner("a")).unwrap())
            .collect();
        assert_eq!(limiter.tracked(), 1);
        drop(permits);
        assert_eq!(limiter.tracked(), 0);
        assert_eq!(InFlightLimiter::new(0).max, 1, "never zero");
    }

    #[test]
    fn after_the_limit_a_source_is_blocked_until_its_window_ends() {
        let failures = AuthFailures::new(AuthFailureLimit {
            max_failures: 3,
            window: Duration::from_secs(60),
        });
        let t0 = Instant::now();
        let source = Source::from(IpAddr::from([192, 0, 2, 7]));
        assert!(!failures.record(source, t0));
        assert!(!failures.record(source, t0 + Duration::from_secs(1)));
        assert!(failures.check(source, t0 + Duration::from_secs(1)).is_ok());
        assert!(
            failures.record(source, t0 + Duration::from_secs(2)),
            "the third"
        );
        let blocked = failures
            .check(source, t0 + Duration::from_secs(2))
            .unwrap_err();
        assert_eq!(blocked, SourceBlocked(Duration::from_secs(58)));
        assert!(blocked.to_string().contains("58 s"), "{blocked}");
        let other = Source::from(IpAddr::from([192, 0, 2, 8]));
        assert!(failures.check(other, t0).is_ok(), "another address");
        assert!(
            failures.check(source, t0 + Duration::from_secs(60)).is_ok(),
            "the window ended"
        );
        assert!(
            !failures.record(source, t0 + Duration::from_secs(61)),
            "a new window"
        );
        assert!(failures.check(source, t0 + Duration::from_secs(61)).is_ok());
        failures.prune(t0 + Duration::from_secs(200));
        assert_eq!(failures.tracked(), 0);
    }

    #[test]
    fn zero_failures_turns_the_limit_off() {
        let failures = AuthFailures::new(AuthFailureLimit {
            max_failures: 0,
            window: Duration::from_secs(60),
        });
        let source = Source::from(IpAddr::from([192, 0, 2, 7]));
        let t0 = Instant::now();
        for _ in 0..1000 {
            failures.record(source, t0);
        }
        assert!(failures.check(source, t0).is_ok());
        assert_eq!(failures.tracked(), 0);
    }

    #[test]
    fn an_ipv6_prefix_is_one_source_and_a_mapped_ipv4_is_its_address() {
        let a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(Source::from(a), Source::from(b), "the same /64");
        assert_ne!(Source::from(a), Source::from(c));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(
            Source::from(mapped),
            Source::from(IpAddr::from([192, 0, 2, 7]))
        );
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        assert_eq!(retry_after_seconds(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_seconds(Duration::from_secs(58)), 58);
        assert_eq!(retry_after_seconds(Duration::from_millis(58_100)), 59);
        assert_eq!(retry_after_seconds(Duration::ZERO), 1);
    }
}
