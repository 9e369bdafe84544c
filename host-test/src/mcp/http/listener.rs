//! Accepting connections so that no client can stop the server for the others.
//!
//! - An accept error (out of file descriptors, say) is logged and retried after a back-off
//!   that doubles to a second; it never ends the serve loop.
//! - At most `max_connections` are open. At the cap, the oldest connection that has not yet
//!   sent a whole request is closed to make room (a silent or slow-header client), else the
//!   keep-alive connection idle the longest (as nginx reuses idle keep-alive connections when
//!   it runs out): a client that sent one request and then sat on its connection would
//!   otherwise hold a slot for the whole idle timeout. When every open connection has a
//!   request in flight, the new one is closed at once; what bounds those is each principal's
//!   share of requests in flight ([`super::shares`]) and the body deadline ([`super::body`]).
//! - A connection must deliver its first request's headers within `header_read_timeout`, and
//!   with no request in flight it may sit for at most `idle_timeout` before the next one.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// How many connections, and how long each may wait.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max_connections: 1024,
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
        }
    }
}

struct Slot {
    /// Set once a whole request has arrived: from then on the client is a real one.
    served: bool,
    close: CancellationToken,
    in_flight: Arc<AtomicUsize>,
    last_done: Arc<Mutex<Option<Instant>>>,
}

impl Slot {
    /// When its last answer ended, for a served connection with nothing in flight.
    fn idle_since(&self) -> Option<Instant> {
        if !self.served || self.in_flight.load(Ordering::SeqCst) > 0 {
            return None;
        }
        *self.last_done.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The open connections, oldest first.
#[derive(Default)]
pub struct Slots {
    inner: Mutex<SlotsInner>,
}

#[derive(Default)]
struct SlotsInner {
    next: u64,
    open: BTreeMap<u64, Slot>,
}

impl Slots {
    fn lock(&self) -> std::sync::MutexGuard<'_, SlotsInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Open connections.
    pub fn len(&self) -> usize {
        self.lock().open.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A slot for a new connection, making room at the cap by closing the oldest connection
    /// that never finished a request, else the one idle between requests the longest; `None`
    /// when every open connection has a request in flight.
    pub fn admit(self: &Arc<Self>, max: usize) -> Option<Connection> {
        let mut inner = self.lock();
        if inner.open.len() >= max.max(1) {
            let silent = inner.open.iter().find(|(_, slot)| !slot.served);
            let idle = || {
                inner
                    .open
                    .iter()
                    .filter_map(|(id, slot)| slot.idle_since().map(|since| (since, *id)))
                    .min()
                    .map(|(_, id)| id)
            };
            let victim = silent.map(|(id, _)| *id).or_else(idle)?;
            if let Some(slot) = inner.open.remove(&victim) {
                slot.close.cancel();
            }
        }
        let id = inner.next;
        inner.next += 1;
        let close = CancellationToken::new();
        let in_flight = Arc::new(AtomicUsize::new(0));
        let last_done = Arc::new(Mutex::new(None));
        inner.open.insert(
            id,
            Slot {
                served: false,
                close: close.clone(),
                in_flight: in_flight.clone(),
                last_done: last_done.clone(),
            },
        );
        Some(Connection {
            slots: self.clone(),
            id,
            close,
            in_flight,
            last_done,
        })
    }
}

/// One connection's slot: closed when dropped.
pub struct Connection {
    slots: Arc<Slots>,
    id: u64,
    /// Cancelled to close the connection (evicted, or timed out).
    pub close: CancellationToken,
    in_flight: Arc<AtomicUsize>,
    /// When the last response ended; `None` before the first request.
    last_done: Arc<Mutex<Option<Instant>>>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.slots.lock().open.remove(&self.id);
    }
}

impl Connection {
    /// Marks a request arriving; the returned mark is held until its response ends.
    pub fn request(&self) -> InFlight {
        self.marker().request()
    }

    /// A handle the request handler keeps (it cannot borrow the connection).
    pub fn marker(&self) -> RequestMarker {
        RequestMarker {
            slots: self.slots.clone(),
            id: self.id,
            in_flight: self.in_flight.clone(),
            last_done: self.last_done.clone(),
        }
    }

    /// Resolves when the connection has waited too long: for its first request's headers, or
    /// idle between requests. Never while a request is in flight.
    pub async fn timed_out(&self, limits: ConnectionLimits) {
        let opened = Instant::now();
        let tick = (limits.header_read_timeout.min(limits.idle_timeout) / 4)
            .max(Duration::from_millis(50));
        loop {
            tokio::time::sleep(tick).await;
            if self.in_flight.load(Ordering::SeqCst) > 0 {
                continue;
            }
            let last_done = *self.last_done.lock().unwrap_or_else(|e| e.into_inner());
            let waited_too_long = match last_done {
                None => opened.elapsed() >= limits.header_read_timeout,
                Some(done) => done.elapsed() >= limits.idle_timeout,
            };
            if waited_too_long {
                return;
            }
        }
    }
}

/// What a request handler uses to mark its request in flight.
#[derive(Clone)]
pub struct RequestMarker {
    slots: Arc<Slots>,
    id: u64,
    in_flight: Arc<AtomicUsize>,
    last_done: Arc<Mutex<Option<Instant>>>,
}

impl RequestMarker {
    /// Marks a request arriving (the client is a real one from now on); the returned mark is
    /// held until its response ends.
    pub fn request(&self) -> InFlight {
        if let Some(slot) = self.slots.lock().open.get_mut(&self.id) {
            slot.served = true;
        }
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight {
            in_flight: self.in_flight.clone(),
            last_done: self.last_done.clone(),
        }
    }
}

/// A request in flight on a connection; its end starts the idle clock.
pub struct InFlight {
    in_flight: Arc<AtomicUsize>,
    last_done: Arc<Mutex<Option<Instant>>>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        *self.last_done.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Accepts connections until `stop` is cancelled, handing each admitted one to `serve` with
/// its peer's address. Accept errors are logged and retried with back-off; they never end the
/// loop.
pub async fn accept_loop<F, Fut>(
    listener: TcpListener,
    limits: ConnectionLimits,
    slots: Arc<Slots>,
    stop: CancellationToken,
    on_refused: impl Fn(),
    serve: F,
) where
    F: Fn(TcpStream, SocketAddr, Connection) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let mut backoff = Duration::ZERO;
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => {
                backoff = Duration::ZERO;
                accepted
            }
            Err(err) => {
                backoff = (backoff * 2).clamp(Duration::from_millis(10), Duration::from_secs(1));
                tracing::warn!("accepting a connection: {err}; retrying in {backoff:?}");
                tokio::time::sleep(backoff).await;
                continue;
            }
        };
        match slots.admit(limits.max_connections) {
            Some(connection) => {
                tokio::spawn(serve(stream, peer, connection));
            }
            None => {
                on_refused();
                drop(stream);
            }
        }
    }
}

/// Raises this process's open-files limit to its hard limit (a server's stores and
/// connections need descriptors; the soft limit is often a fraction of what is allowed), and
/// returns the limit now in force.
pub fn raise_open_files_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes one rlimit into the struct we own; setrlimit reads it.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0
                && limit.rlim_cur < limit.rlim_max
            {
                let raised = libc::rlimit {
                    rlim_cur: limit.rlim_max,
                    rlim_max: limit.rlim_max,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
                    tracing::warn!("the open-files limit stays at {}", limit.rlim_cur);
                }
            }
        }
    }
    open_files_limit()
}

/// The open-files limit of this process, if the platform tells it.
pub fn open_files_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes one rlimit into the struct we own.
        let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
        ok.then_some(limit.rlim_cur)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Descriptors neither connections nor stores may take: the broker's pooled connections, the
/// fleet database's pool, result files being written, the log and the compiled-code cache.
const OTHER_FILES: u64 = 64;

/// How many SQLite stores may be open at once: what is asked, but never more than the
/// descriptors left once `connections` are open and [`OTHER_FILES`] kept aside.
pub fn fitting_stores(asked: usize, open_files: Option<u64>, connections: usize) -> usize {
    let per_store = crate::tenant_db::open_stores::FILES_PER_STORE as u64;
    match open_files {
        Some(limit) => {
            let left = limit.saturating_sub(connections as u64 + OTHER_FILES);
            asked.min((left / per_store) as usize)
        }
        None => asked,
    }
}

/// The connection cap that fits the open-files limit: what is asked, but never so many that
/// connections leave no descriptors for the stores, result files and the broker's pool.
pub fn fitting_cap(asked: usize, open_files: Option<u64>) -> usize {
    const RESERVED: u64 = 128;
    match open_files {
        Some(limit) => asked.min(limit.saturating_sub(RESERVED).max(16) as usize),
        None => asked,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_cap_the_oldest_silent_connection_makes_room() {
        let slots = Arc::new(Slots::default());
        let first = slots.admit(2).unwrap();
        let second = slots.admit(2).unwrap();
        let _mark = first.request();
        let third = slots.admit(2).expect("the silent second one makes room");
        assert!(second.close.is_cancelled());
        assert!(!first.close.is_cancelled(), "a serving connection stays");
        drop(second);
        let _busy = third.request();
        assert!(slots.admit(2).is_none(), "every open connection is serving");
        assert_eq!(slots.len(), 2);
        drop(first);
        assert!(slots.admit(2).is_some());
    }

    #[test]
    fn at_the_cap_an_idle_keep_alive_connection_makes_room_the_longest_idle_first() {
        let slots = Arc::new(Slots::default());
        let (a, b, c) = (
            slots.admit(3).unwrap(),
            slots.admit(3).unwrap(),
            slots.admit(3).unwrap(),
        );
        let _busy = a.request();
        drop(b.request());
        std::thread::sleep(Duration::from_millis(2));
        drop(c.request());
        // b and c each answered one request and sit idle; b has sat longer.
        let d = slots.admit(3).expect("an idle connection makes room");
        assert!(b.close.is_cancelled() && !c.close.is_cancelled());
        assert!(
            !a.close.is_cancelled(),
            "a request in flight keeps its connection"
        );
        drop(b);
        let _d_busy = d.request();
        let _c_busy = c.request();
        assert!(
            slots.admit(3).is_none(),
            "every connection has a request in flight"
        );
    }

    #[test]
    fn the_cap_leaves_room_for_the_servers_own_files() {
        assert_eq!(fitting_cap(1024, Some(20_000)), 1024);
        assert_eq!(fitting_cap(1024, Some(512)), 384);
        assert_eq!(fitting_cap(1024, Some(64)), 16);
        assert_eq!(fitting_cap(10, None), 10);
    }

    #[test]
    fn stores_get_what_connections_and_the_rest_leave() {
        // 1024 files: 384 connections, 64 aside, 576 left for 144 stores of 4 files.
        assert_eq!(fitting_stores(1000, Some(1024), 384), 144);
        assert_eq!(fitting_stores(100, Some(1024), 384), 100);
        // Under `ulimit -n 256`: 128 connections, 64 aside, 16 stores.
        assert_eq!(fitting_stores(1000, Some(256), 128), 16);
        assert_eq!(fitting_stores(1000, Some(100), 128), 0);
        assert_eq!(fitting_stores(1000, None, 128), 1000);
    }

    #[tokio::test]
    async fn a_connection_times_out_without_a_request_but_never_during_one() {
        let limits = ConnectionLimits {
            max_connections: 4,
            header_read_timeout: Duration::from_millis(60),
            idle_timeout: Duration::from_millis(60),
        };
        let slots = Arc::new(Slots::default());
        let silent = slots.admit(4).unwrap();
        tokio::time::timeout(Duration::from_secs(2), silent.timed_out(limits))
            .await
            .expect("a connection that never sends a request times out");
        let busy = slots.admit(4).unwrap();
        let mark = busy.request();
        let waited = tokio::time::timeout(Duration::from_millis(300), busy.timed_out(limits)).await;
        assert!(waited.is_err(), "a request in flight keeps it open");
        drop(mark);
        tokio::time::timeout(Duration::from_secs(2), busy.timed_out(limits))
            .await
            .expect("idle after its request, it times out");
    }
}
