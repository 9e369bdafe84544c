//! The server's limits in one place, and the per-principal request rate limit (a token bucket
//! per tenant, user and authority: one busy client slows only itself).

use super::body::BodyLimits;
use super::listener::ConnectionLimits;
use super::sessions::{Owner, SessionLimits};
use super::shares::AuthFailureLimit;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Everything `crm-host serve` bounds.
#[derive(Debug, Clone, Copy)]
pub struct ServerLimits {
    pub connections: ConnectionLimits,
    pub sessions: SessionLimits,
    pub rate: RateLimit,
    /// Largest request body read (rmcp's own default, kept).
    pub max_body_bytes: usize,
    /// How fast a request body must arrive (a trickle is cut off with 408).
    pub body: BodyLimits,
    /// Requests one principal may have in flight, from admission to the end of the answer;
    /// the server applies at most a quarter of the connections
    /// ([`ServerLimits::in_flight_per_principal`]).
    pub max_in_flight_per_principal: usize,
    /// Tasks (background exports) one tenant's user may have running at once.
    pub max_tasks_per_principal: usize,
    /// Failed authentications one source address may make before it is answered 429.
    pub auth_failures: AuthFailureLimit,
}

/// Requests in flight one principal may have, unless the connection cap makes it smaller: 32
/// sessions (the per-principal cap), each with its listening stream, and as many calls again.
pub const DEFAULT_IN_FLIGHT_PER_PRINCIPAL: usize = 64;

/// Exports one principal may run as tasks at once: each runs up to 30 minutes and shares its
/// tenant's CRM rate limits, so more at once would not finish sooner.
pub const DEFAULT_TASKS_PER_PRINCIPAL: usize = 4;

impl ServerLimits {
    /// The in-flight cap applied to each principal: what was asked, but never more than a
    /// quarter of the connections (at least one), so that no one principal's slow requests
    /// can hold every connection the server accepts.
    pub fn in_flight_per_principal(&self) -> usize {
        let share = (self.connections.max_connections / 4).max(1);
        self.max_in_flight_per_principal.clamp(1, share)
    }
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            connections: ConnectionLimits::default(),
            sessions: SessionLimits::default(),
            rate: RateLimit::default(),
            max_body_bytes:
                rmcp::transport::streamable_http_server::StreamableHttpServerConfig::default()
                    .max_request_body_bytes,
            body: BodyLimits::default(),
            max_in_flight_per_principal: DEFAULT_IN_FLIGHT_PER_PRINCIPAL,
            max_tasks_per_principal: DEFAULT_TASKS_PER_PRINCIPAL,
            auth_failures: AuthFailureLimit::default(),
        }
    }
}

/// Requests a principal may make: a sustained rate and a burst.
#[derive(Debug, Clone, Copy)]
pub struct RateLimit {
    pub per_second: f64,
    pub burst: f64,
}

impl Default for RateLimit {
    fn default() -> Self {
        RateLimit {
            per_second: 20.0,
            burst: 100.0,
        }
    }
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// One token bucket per principal.
pub struct RateLimiter {
    limit: RateLimit,
    buckets: Mutex<HashMap<Owner, Bucket>>,
}

impl RateLimiter {
    pub fn new(limit: RateLimit) -> Self {
        RateLimiter {
            limit,
            buckets: Mutex::default(),
        }
    }

    /// Takes one request from `owner`'s bucket at `now`; when it is empty, how long until it
    /// holds one again.
    pub fn take(&self, owner: &Owner, now: Instant) -> Result<(), Duration> {
        let RateLimit { per_second, burst } = self.limit;
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let bucket = buckets.entry(owner.clone()).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        let refill = now.saturating_duration_since(bucket.at).as_secs_f64() * per_second;
        bucket.tokens = (bucket.tokens + refill).min(burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            let wait = (1.0 - bucket.tokens) / per_second.max(f64::MIN_POSITIVE);
            Err(Duration::from_secs_f64(wait.min(3600.0)))
        }
    }

    /// Forgets buckets that have refilled (their owners are quiet), so the map stays as small
    /// as the set of active principals.
    pub fn prune(&self, now: Instant) {
        let RateLimit { per_second, burst } = self.limit;
        let full_after =
            Duration::from_secs_f64((burst / per_second.max(f64::MIN_POSITIVE)).min(3600.0));
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        buckets.retain(|_, b| now.saturating_duration_since(b.at) < full_after);
    }

    /// Principals with a bucket.
    pub fn tracked(&self) -> usize {
        self.buckets.lock().unwrap_or_else(|e| e.into_inner()).len()
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
            authority: Authority::Process,
        })
    }

    #[test]
    fn a_burst_passes_then_the_rate_holds_and_others_are_unaffected() {
        let limiter = RateLimiter::new(RateLimit {
            per_second: 10.0,
            burst: 3.0,
        });
        let t0 = Instant::now();
        let a = owner("a");
        for _ in 0..3 {
            assert!(limiter.take(&a, t0).is_ok());
        }
        let wait = limiter.take(&a, t0).unwrap_err();
        assert!(
            wait <= Duration::from_millis(100) && wait > Duration::ZERO,
            "{wait:?}"
        );
        assert!(limiter.take(&owner("b"), t0).is_ok(), "another principal");
        assert!(limiter.take(&a, t0 + Duration::from_millis(100)).is_ok());
        assert!(limiter.take(&a, t0 + Duration::from_millis(100)).is_err());
        limiter.prune(t0 + Duration::from_secs(5));
        assert_eq!(limiter.tracked(), 0, "refilled buckets are forgotten");
    }

    #[test]
    fn a_principal_never_gets_more_than_a_quarter_of_the_connections() {
        let mut limits = ServerLimits::default();
        assert_eq!(limits.in_flight_per_principal(), 64, "1,024 connections");
        limits.connections.max_connections = 40;
        assert_eq!(limits.in_flight_per_principal(), 10);
        limits.connections.max_connections = 2;
        assert_eq!(limits.in_flight_per_principal(), 1);
        limits.connections.max_connections = 1024;
        limits.max_in_flight_per_principal = 0;
        assert_eq!(limits.in_flight_per_principal(), 1);
    }
}
