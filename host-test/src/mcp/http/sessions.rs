//! MCP sessions (the 2025 era's `Mcp-Session-Id`) bound to the principal that opened them.
//!
//! rmcp's session manager knows ids, not people: any request naming an id reaches that
//! session. This table sits in front of it. A request naming a session that another principal
//! opened is answered exactly as an unknown session is (404), so an id guessed or leaked across
//! tenants reveals nothing, not even that it exists. Sessions idle longer than the limit, and a
//! principal's oldest session past its cap, are closed through the manager, which frees the
//! session's worker and every task it started. One JSON-RPC id is in flight at most once per
//! session, so a second request with the same id cannot take the first one's answer.

use super::Body;
use crate::mcp::Principal;
use crate::tenant_db::ResultOwner;
use hyper::body::{Frame, SizeHint};
use std::collections::{HashMap, HashSet};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Who owns a session: the tenant and the user in the namespace of whoever vouched for them
/// ([`Principal::owner`]), the same notion that owns tasks and result files.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Owner {
    tenant: String,
    user: ResultOwner,
}

impl From<&Principal> for Owner {
    fn from(p: &Principal) -> Self {
        Owner {
            tenant: p.tenant_id.clone(),
            user: p.owner(),
        }
    }
}

/// How many sessions a principal may hold, and how long one may sit unused.
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits {
    pub max_per_principal: usize,
    /// A session with no request and no open stream for this long is closed.
    pub idle: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_per_principal: 32,
            idle: Duration::from_secs(600),
        }
    }
}

struct Entry {
    owner: Owner,
    last_active: Instant,
    /// Responses (SSE streams) of this session still open.
    open_streams: usize,
    /// JSON-RPC request ids in flight.
    in_flight: HashSet<String>,
}

/// The session a request may use was not found for this principal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownSession;

/// A JSON-RPC id already in flight in this session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DuplicateId;

/// Every open session and its owner.
pub struct SessionTable {
    limits: SessionLimits,
    sessions: Mutex<HashMap<String, Entry>>,
}

impl SessionTable {
    pub fn new(limits: SessionLimits) -> Self {
        SessionTable {
            limits,
            sessions: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Open sessions.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A request by `owner` naming session `id`: admitted, with a lease that keeps the session
    /// active until the response ends (and holds `rpc_id` in flight), or refused as unknown.
    pub fn enter(
        self: &Arc<Self>,
        id: &str,
        owner: &Owner,
        rpc_id: Option<String>,
    ) -> Result<Result<Lease, DuplicateId>, UnknownSession> {
        let mut sessions = self.lock();
        let entry = sessions
            .get_mut(id)
            .filter(|e| e.owner == *owner)
            .ok_or(UnknownSession)?;
        if let Some(rpc_id) = &rpc_id
            && !entry.in_flight.insert(rpc_id.clone())
        {
            return Ok(Err(DuplicateId));
        }
        entry.open_streams += 1;
        entry.last_active = Instant::now();
        Ok(Ok(Lease {
            table: self.clone(),
            id: id.to_string(),
            rpc_id,
        }))
    }

    /// Records a new session of `owner`; returns the ids of the owner's sessions to close
    /// because the cap is passed (least recently active first).
    pub fn bind(&self, id: String, owner: Owner) -> Vec<String> {
        let mut sessions = self.lock();
        let mut own: Vec<(Instant, String)> = sessions
            .iter()
            .filter(|(_, e)| e.owner == owner)
            .map(|(id, e)| (e.last_active, id.clone()))
            .collect();
        own.sort();
        let excess = (own.len() + 1).saturating_sub(self.limits.max_per_principal);
        let evicted: Vec<String> = own.into_iter().take(excess).map(|(_, id)| id).collect();
        for id in &evicted {
            sessions.remove(id);
        }
        sessions.insert(
            id,
            Entry {
                owner,
                last_active: Instant::now(),
                open_streams: 0,
                in_flight: HashSet::new(),
            },
        );
        evicted
    }

    /// Forgets a session (closed by its owner).
    pub fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Removes and returns the sessions idle past the limit at `now`.
    pub fn take_expired(&self, now: Instant) -> Vec<String> {
        let mut sessions = self.lock();
        let expired: Vec<String> = sessions
            .iter()
            .filter(|(_, e)| {
                e.open_streams == 0 && now.duration_since(e.last_active) >= self.limits.idle
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            sessions.remove(id);
        }
        expired
    }

    fn release(&self, id: &str, rpc_id: Option<&str>) {
        if let Some(entry) = self.lock().get_mut(id) {
            entry.open_streams = entry.open_streams.saturating_sub(1);
            entry.last_active = Instant::now();
            if let Some(rpc_id) = rpc_id {
                entry.in_flight.remove(rpc_id);
            }
        }
    }
}

/// One request's hold on its session, released when its response ends or is dropped.
pub struct Lease {
    table: Arc<SessionTable>,
    id: String,
    rpc_id: Option<String>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.table.release(&self.id, self.rpc_id.as_deref());
    }
}

/// A response body that holds something (a session lease, a connection's in-flight mark)
/// until the body is finished or dropped.
pub struct Held<T> {
    body: Body,
    _held: T,
}

impl<T> Held<T> {
    pub fn new(body: Body, held: T) -> Self {
        Held { body, _held: held }
    }
}

impl<T: Unpin> hyper::body::Body for Held<T> {
    type Data = bytes::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::Authority;

    fn owner(tenant: &str, authority: Authority) -> Owner {
        Owner::from(&Principal {
            tenant_id: tenant.into(),
            user_id: "u".into(),
            granted_scopes: Vec::new(),
            instance_url: None,
            authority,
        })
    }

    #[test]
    fn only_the_owner_enters_a_session_and_a_stranger_sees_an_unknown_one() {
        let table = Arc::new(SessionTable::new(SessionLimits::default()));
        let a = owner("a", Authority::Token("1".into()));
        table.bind("s1".into(), a.clone());
        assert!(table.enter("s1", &a, None).unwrap().is_ok());
        let b = owner("b", Authority::Token("2".into()));
        assert_eq!(table.enter("s1", &b, None).err(), Some(UnknownSession));
        // Same tenant and user name, vouched for by an identity provider: a stranger too.
        let a_elsewhere = owner("a", Authority::Provider("https://idp".into()));
        assert_eq!(
            table.enter("s1", &a_elsewhere, None).err(),
            Some(UnknownSession)
        );
        // The same user with another of the operator's tokens is the same person.
        let a_again = owner("a", Authority::Token("3".into()));
        assert!(table.enter("s1", &a_again, None).unwrap().is_ok());
        assert_eq!(table.enter("nope", &a, None).err(), Some(UnknownSession));
    }

    #[test]
    fn one_rpc_id_is_in_flight_once_per_session() {
        let table = Arc::new(SessionTable::new(SessionLimits::default()));
        let a = owner("a", Authority::Process);
        table.bind("s1".into(), a.clone());
        let first = table.enter("s1", &a, Some("7".into())).unwrap().unwrap();
        assert!(matches!(
            table.enter("s1", &a, Some("7".into())),
            Ok(Err(DuplicateId))
        ));
        drop(first);
        assert!(table.enter("s1", &a, Some("7".into())).unwrap().is_ok());
    }

    #[test]
    fn past_the_cap_the_least_recently_active_session_is_closed() {
        let limits = SessionLimits {
            max_per_principal: 2,
            idle: Duration::from_secs(600),
        };
        let table = Arc::new(SessionTable::new(limits));
        let a = owner("a", Authority::Process);
        assert!(table.bind("s1".into(), a.clone()).is_empty());
        std::thread::sleep(Duration::from_millis(2));
        assert!(table.bind("s2".into(), a.clone()).is_empty());
        std::thread::sleep(Duration::from_millis(2));
        drop(table.enter("s1", &a, None).unwrap());
        assert_eq!(table.bind("s3".into(), a.clone()), ["s2"]);
        let b = owner("b", Authority::Process);
        assert!(
            table.bind("t1".into(), b).is_empty(),
            "caps are per principal"
        );
        assert_eq!(table.len(), 3);
    }

    #[test]
    fn idle_sessions_expire_but_not_while_a_stream_is_open() {
        let limits = SessionLimits {
            max_per_principal: 8,
            idle: Duration::from_millis(10),
        };
        let table = Arc::new(SessionTable::new(limits));
        let a = owner("a", Authority::Process);
        table.bind("idle".into(), a.clone());
        table.bind("streaming".into(), a.clone());
        let stream = table.enter("streaming", &a, None).unwrap().unwrap();
        let later = Instant::now() + Duration::from_millis(50);
        assert_eq!(table.take_expired(later), ["idle"]);
        drop(stream);
        assert!(table.take_expired(Instant::now()).is_empty(), "just active");
        assert_eq!(
            table.take_expired(Instant::now() + Duration::from_millis(50)),
            ["streaming"]
        );
        assert!(table.is_empty());
    }
}
