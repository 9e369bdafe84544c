//! How many SQLite stores this process keeps open at once. Each open store holds about
//! [`FILES_PER_STORE`] file descriptors (the database, its WAL and its shared-memory index, a
//! spill file while a sync stages many rows) and its page cache, so a host listing more tenants
//! than its open-files limit allows keeps only the most recently used ones open: past the
//! limit, the least recently used *idle* store is closed, and opened again by its next query.
//!
//! An idle store is one no query holds (its lock is free) and no change has staged rows in (a
//! change's staging lives in the connection's temporary tables, which a close would drop). A
//! store in memory is never counted or closed: closing it would lose it.

use super::schema;
use crate::tenant_db::StoreError;
use hashlink::LinkedHashMap;
use rusqlite::Connection;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

/// Descriptors one open store may hold: its database, `-wal` and `-shm` files, and a temporary
/// file while a large staging spills.
pub const FILES_PER_STORE: usize = 4;

/// The fewest stores kept open whatever the limit: below it, tenants would close each other's
/// stores at every call.
const FEWEST: usize = 8;

/// One store's connection, while it is open, and what keeps it open.
pub(super) struct Slot {
    conn: Option<Connection>,
    /// Changes that have staged rows in this connection's temporary tables.
    staging: HashSet<i64>,
    /// Whether this process has made (or migrated) the store's tables already.
    migrated: bool,
    /// When a query last took the connection.
    last_used: Instant,
    /// Whether this connection has its staging tables (made at the first change's use).
    staging_tables: bool,
    /// Whether the connection's caches were emptied since a query last took it.
    trimmed: bool,
}

impl Slot {
    /// Whether closing the connection now would lose nothing.
    fn idle(&self) -> bool {
        self.staging.is_empty()
    }
}

/// Where a store lives, and its connection.
pub(super) struct Store {
    budget: Arc<OpenStores>,
    id: u64,
    path: Option<PathBuf>,
    slot: Arc<Mutex<Slot>>,
}

/// Open file stores, least recently used first, and how many may be: the process's (one
/// open-files limit), or a test's own.
pub(super) struct OpenStores {
    limit: AtomicUsize,
    order: Mutex<LinkedHashMap<u64, Weak<Mutex<Slot>>>>,
}

static OPEN: LazyLock<Arc<OpenStores>> = LazyLock::new(|| OpenStores::new(default_limit()));

impl OpenStores {
    /// A budget of `limit` open stores (at least [`FEWEST`]).
    pub(super) fn new(limit: usize) -> Arc<Self> {
        Arc::new(OpenStores {
            limit: AtomicUsize::new(limit.max(FEWEST)),
            order: Mutex::default(),
        })
    }

    /// The process's budget, which every tenant's store counts against.
    pub(super) fn process() -> Arc<Self> {
        OPEN.clone()
    }

    /// How many of its stores are open now.
    fn len(&self) -> usize {
        self.order.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A quarter of the open-files limit's stores by default (the rest is the connections', the
/// broker's and the result files'): `serve` sets its own from its budget.
fn default_limit() -> usize {
    let files = crate::mcp::http::listener::open_files_limit().unwrap_or(1024) as usize;
    (files / 4 / FILES_PER_STORE).max(FEWEST)
}

/// Keeps at most `stores` SQLite stores open at once in this process (at least [`FEWEST`]).
/// Stores open beyond it are closed as they fall idle.
pub fn set_limit(stores: usize) {
    OPEN.limit.store(stores.max(FEWEST), Ordering::Relaxed);
}

/// How many SQLite stores this process keeps open at most.
pub fn limit() -> usize {
    OPEN.limit.load(Ordering::Relaxed)
}

/// How many SQLite file stores are open now.
pub fn open_now() -> usize {
    OPEN.len()
}

/// Closes every SQLite store of this process no query has used for `idle` (and no change is
/// staging in); returns how many. A tenant called again opens its store again.
pub fn close_idle(idle: Duration) -> usize {
    let closed = OPEN.close_idle(idle);
    let count = closed.len();
    // Dropped here, after every lock: a close may checkpoint the WAL.
    drop(closed);
    count
}

/// Empties the caches of every open SQLite store no query has used for `idle` (its prepared
/// statements and page cache: about half an open store's memory, 60 of 120 KB); returns how
/// many. The store stays open: its next query prepares what it needs again, in microseconds.
pub fn trim_idle(idle: Duration) -> usize {
    OPEN.trim_idle(idle)
}

/// A held connection: the store's lock, open.
pub(super) struct Open<'a>(MutexGuard<'a, Slot>);

impl std::ops::Deref for Open<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.0
            .conn
            .as_ref()
            .expect("an Open holds an open connection")
    }
}

impl std::ops::DerefMut for Open<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        self.0
            .conn
            .as_mut()
            .expect("an Open holds an open connection")
    }
}

impl Open<'_> {
    /// The connection, with its staging tables made if they were not.
    pub(super) fn with_staging(mut self) -> Result<Self, StoreError> {
        if !self.0.staging_tables {
            schema::create_staging(&self)?;
            self.0.staging_tables = true;
        }
        Ok(self)
    }

    /// Notes that `change` has staged rows here: the store stays open until it ends.
    pub(super) fn staging(&mut self, change: i64) {
        self.0.staging.insert(change);
    }

    /// Notes that `change` has no staged rows left.
    pub(super) fn staged_none(&mut self, change: i64) {
        self.0.staging.remove(&change);
    }
}

impl Store {
    /// A store at `path` (a file, counted against the limit) or in memory (`None`), opened now
    /// with its tables made, so a store that cannot be opened is known at once.
    pub(super) fn open(path: Option<PathBuf>, budget: Arc<OpenStores>) -> Result<Self, StoreError> {
        let store = Store {
            budget,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            path,
            slot: Arc::new(Mutex::new(Slot {
                conn: None,
                staging: HashSet::new(),
                migrated: false,
                last_used: Instant::now(),
                staging_tables: false,
                trimmed: false,
            })),
        };
        drop(store.conn()?);
        Ok(store)
    }

    /// The store's connection, opened again when it was closed to save descriptors.
    pub(super) fn conn(&self) -> Result<Open<'_>, StoreError> {
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        slot.last_used = Instant::now();
        slot.trimmed = false;
        if slot.conn.is_some() {
            if self.path.is_some() {
                self.budget.touch(self.id);
            }
            return Ok(Open(slot));
        }
        let conn = match &self.path {
            Some(path) => connect(path)?,
            None => Connection::open_in_memory()?,
        };
        schema::prepare(&conn, !slot.migrated)?;
        slot.migrated = true;
        slot.staging_tables = false;
        slot.conn = Some(conn);
        if self.path.is_some() {
            // Closed outside every lock: a close may checkpoint the WAL.
            let closed = self.budget.admit(self.id, Arc::downgrade(&self.slot));
            drop(closed);
        }
        Ok(Open(slot))
    }

    /// Whether the connection is open now.
    pub(super) fn is_open(&self) -> bool {
        self.slot
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .conn
            .is_some()
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if self.path.is_some() {
            self.budget
                .order
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&self.id);
        }
    }
}

/// Opens the file at `path`, creating it (and its folder) private to this user when missing.
fn connect(path: &std::path::Path) -> Result<Connection, StoreError> {
    let unavailable = |what: &std::path::Path, e: &dyn std::fmt::Display| {
        StoreError::Unavailable(format!("{}: {e}", what.display()))
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::private_fs::create_dir_all(dir).map_err(|e| unavailable(dir, &e))?;
    }
    crate::private_fs::touch(path).map_err(|e| unavailable(path, &e))?;
    Connection::open(path).map_err(|e| unavailable(path, &e))
}

impl OpenStores {
    /// Takes the connections of the stores idle for `idle` out of the order; they close when
    /// the caller drops them.
    fn close_idle(&self, idle: Duration) -> Vec<Connection> {
        let mut order = self.order.lock().unwrap_or_else(|e| e.into_inner());
        let mut closed = Vec::new();
        order.retain(|_, weak| {
            let Some(slot) = weak.upgrade() else {
                return false;
            };
            // Never waits: a store whose lock is held is in use.
            match slot.try_lock() {
                Ok(mut held) if held.idle() && held.last_used.elapsed() >= idle => {
                    closed.extend(held.conn.take());
                    false
                }
                _ => true,
            }
        });
        closed
    }

    /// See [`trim_idle`]. The stores are listed under the order's lock and trimmed after it,
    /// each only if its own lock is free (a store in use is not idle).
    fn trim_idle(&self, idle: Duration) -> usize {
        let slots: Vec<Arc<Mutex<Slot>>> = self
            .order
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        let mut trimmed = 0;
        for slot in slots {
            let Ok(mut held) = slot.try_lock() else {
                continue;
            };
            if held.trimmed || !held.idle() || held.last_used.elapsed() < idle {
                continue;
            }
            if let Some(conn) = &held.conn {
                conn.flush_prepared_statement_cache();
                // Best effort: a store that cannot shrink now keeps its cache until it closes.
                let _ = conn.execute_batch("PRAGMA shrink_memory");
                held.trimmed = true;
                trimmed += 1;
            }
        }
        trimmed
    }

    /// Moves store `id` to the most recently used end.
    fn touch(&self, id: u64) {
        self.order
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .to_back(&id);
    }

    /// Counts store `id` as open (its own lock is held by the caller), then closes the least
    /// recently used idle stores past the limit. Returns their connections, to be dropped after
    /// every lock is released.
    fn admit(&self, id: u64, slot: Weak<Mutex<Slot>>) -> Vec<Connection> {
        let mut order = self.order.lock().unwrap_or_else(|e| e.into_inner());
        order.insert(id, slot);
        let limit = self.limit.load(Ordering::Relaxed);
        let mut closed = Vec::new();
        let mut busy = Vec::new();
        while order.len() > limit {
            let Some((other, weak)) = order.pop_front() else {
                break;
            };
            if other == id {
                // Every older store is in use: this one stays, the most recently used.
                order.insert(other, weak);
                break;
            }
            let Some(slot) = weak.upgrade() else {
                continue;
            };
            // Never waits: a store whose lock is held is in use (and may be waiting for this
            // list), so it stays open.
            match slot.try_lock() {
                Ok(mut held) if held.idle() => closed.extend(held.conn.take()),
                _ => busy.push((other, weak)),
            }
        }
        // Stores in use stay open, as the least recently used: tried first next time.
        for (other, weak) in busy.into_iter().rev() {
            order.insert(other, weak);
            order.to_front(&other);
        }
        closed
    }
}

#[cfg(test)]
mod tests;
