//! [`Rows`] in PostgreSQL: one database for a fleet of hosts, so a preview made on one host is
//! applied on another, a token is used once whichever hosts race for it, and a disconnect made on
//! one reaches every other within a second (`NOTIFY`, in [`events`]).
//!
//! The component's host calls are synchronous, so each query runs on a small runtime of the
//! store's own (async client, pool, prepared statements per connection) and the calling thread
//! waits for it, off the host's async workers (`block_in_place`) where it can. Every wait is
//! bounded: a database that does not answer is `unavailable` with nothing changed, never a hung
//! call. Connections are checked out of a pool per query and reconnect by themselves.

mod events;
mod files;
mod pacing;
mod registry;
pub mod schema;

pub use events::StoreEvent;

use super::journal::{JournalRow, Kind, Status};
use super::rows::{ChangeFilter, Confirmation, Rows, Staged, StatusMove};
use super::{CreatedRow, StoreError, StoredMapping};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// Longest a query (pool wait included) may take before the call is told to try again.
const QUERY_TIMEOUT: Duration = Duration::from_secs(10);
/// Staging rows older than this are a killed host's unfinished sync: dropped at start.
const STALE_STAGING_MS: i64 = 24 * 3600 * 1000;
/// Connections one host keeps to the database at most.
const POOL_SIZE: usize = 16;

/// Whether opening the store applies the schema's migrations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Migrate {
    /// Apply what is missing (every host at start; `crm-host store migrate`).
    Apply,
    /// Change nothing (`crm-host store check`); calls are refused until the schema matches.
    Check,
}

/// The fleet's database, shared by every tenant of this host.
pub struct PgStore {
    pool: Pool,
    /// The URL without its password, for messages.
    shown: String,
    events: broadcast::Sender<StoreEvent>,
    listening: Arc<AtomicBool>,
    stop: CancellationToken,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("url", &self.shown).finish()
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The runtime every store's queries run on: its own threads, never dropped (a runtime cannot
/// be dropped from async code, which is where the last store handle usually goes).
fn store_runtime() -> Result<&'static tokio::runtime::Runtime, StoreError> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("crm-store")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| StoreError::Unavailable(format!("the store's runtime: {e}")))
}

/// Runs `work` on the store's runtime and waits for it, at most [`QUERY_TIMEOUT`].
fn run<T: Send + 'static>(
    work: impl Future<Output = Result<T, StoreError>> + Send + 'static,
) -> Result<T, StoreError> {
    run_within(QUERY_TIMEOUT, work)
}

/// As [`run`], at most `limit`.
fn run_within<T: Send + 'static>(
    limit: Duration,
    work: impl Future<Output = Result<T, StoreError>> + Send + 'static,
) -> Result<T, StoreError> {
    let runtime = store_runtime()?;
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime.spawn(async move {
        let answer = tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
            Err(StoreError::Unavailable(format!(
                "the database did not answer within {} s; nothing was changed: try again \
                     shortly",
                limit.as_secs()
            )))
        });
        let _ = tx.send(answer);
    });
    let wait = move || {
        rx.recv().unwrap_or_else(|_| {
            Err(StoreError::Unavailable(
                "the store's runtime stopped".into(),
            ))
        })
    };
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(wait)
        }
        _ => wait(),
    }
}

/// The database's words, typed: the call can be tried again once it answers.
fn db_error(error: tokio_postgres::Error) -> StoreError {
    let detail = match (error.as_db_error(), std::error::Error::source(&error)) {
        (Some(db), _) => db.message().to_string(),
        (None, Some(cause)) => format!("{error}: {cause}"),
        (None, None) => error.to_string(),
    };
    StoreError::Unavailable(format!("PostgreSQL: {detail}"))
}

fn pool_error(error: deadpool_postgres::PoolError) -> StoreError {
    match error {
        deadpool_postgres::PoolError::Backend(e) => db_error(e),
        other => StoreError::Unavailable(format!("PostgreSQL: {other}")),
    }
}

/// TLS for the database connection: the webpki roots, plus the PEM certificates in
/// `CRM_HOST_STORE_CA` (a private CA). Whether TLS is used follows the URL's `sslmode`
/// (`prefer` when absent, `require` to insist).
fn tls() -> Result<tokio_postgres_rustls::MakeRustlsConnect, StoreError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Ok(path) = std::env::var("CRM_HOST_STORE_CA") {
        for cert in crate::backend::tls::read_certificates(std::path::Path::new(&path))
            .map_err(|e| StoreError::Invalid(format!("CRM_HOST_STORE_CA {path}: {e}")))?
        {
            roots
                .add(cert)
                .map_err(|e| StoreError::Invalid(format!("CRM_HOST_STORE_CA {path}: {e}")))?;
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| StoreError::Invalid(format!("TLS: {e}")))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// The URL with any password replaced, for logs and errors.
fn shown(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        Ok(parsed) => parsed.to_string(),
        Err(_) => "(an unparsable URL)".into(),
    }
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://user@host:port/db?sslmode=...`), applies
    /// or checks the schema, drops staging a killed host left, and starts listening for the
    /// fleet's events.
    pub fn open(url: &str, migrate: Migrate) -> Result<Arc<PgStore>, StoreError> {
        let config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| StoreError::Invalid(format!("store URL {}: {e}", shown(url))))?;
        let tls = tls()?;
        let manager = Manager::from_config(
            config.clone(),
            tls.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(QUERY_TIMEOUT))
            .create_timeout(Some(Duration::from_secs(5)))
            .build()
            .map_err(|e| StoreError::Invalid(format!("store pool: {e}")))?;
        let ready = pool.clone();
        run(async move {
            let mut client = ready.get().await.map_err(pool_error)?;
            match migrate {
                Migrate::Apply => {
                    schema::migrate(&mut client).await.map_err(db_error)?;
                    // A database a newer host migrated is not this host's to use.
                    schema::state(&client).await.map_err(db_error)?.check()?;
                }
                Migrate::Check => {
                    schema::state(&client).await.map_err(db_error)?.check()?;
                }
            }
            let now = super::now_ms();
            let stale = now - STALE_STAGING_MS;
            client
                .execute(
                    "DELETE FROM mapping_stage WHERE staged_at_ms < $1",
                    &[&stale],
                )
                .await
                .map_err(db_error)?;
            if migrate == Migrate::Apply {
                client
                    .execute("DELETE FROM result_files WHERE expires_ms <= $1", &[&now])
                    .await
                    .map_err(db_error)?;
            }
            Ok(())
        })?;
        let store = Arc::new(PgStore {
            pool,
            shown: shown(url),
            events: broadcast::channel(256).0,
            listening: Arc::default(),
            stop: CancellationToken::new(),
        });
        store_runtime()?.spawn(events::listen(
            config,
            tls,
            store.events.clone(),
            store.listening.clone(),
            store.stop.clone(),
        ));
        Ok(store)
    }

    /// The schema's state, changing nothing.
    pub fn schema_state(&self) -> Result<schema::SchemaState, StoreError> {
        let pool = self.pool.clone();
        run(async move {
            let client = pool.get().await.map_err(pool_error)?;
            schema::state(&client).await.map_err(db_error)
        })
    }

    /// Every event the fleet announces from now on.
    pub fn events(&self) -> broadcast::Receiver<StoreEvent> {
        self.events.subscribe()
    }

    /// Whether this host is hearing the fleet's events now.
    pub fn listening(&self) -> bool {
        self.listening.load(Ordering::SeqCst)
    }

    /// The URL, password hidden.
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// Runs one query function on a pooled connection, for async callers: nothing blocks.
    fn spawn_with<T, F, Fut>(&self, work: F) -> crate::backend::BoxFuture<Result<T, StoreError>>
    where
        T: Send + 'static,
        F: FnOnce(deadpool_postgres::Object) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, StoreError>> + Send,
    {
        let pool = self.pool.clone();
        let (tx, rx) = tokio::sync::oneshot::channel();
        match store_runtime() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let work = async move { work(pool.get().await.map_err(pool_error)?).await };
                    let answer = tokio::time::timeout(QUERY_TIMEOUT, work)
                        .await
                        .unwrap_or_else(|_| {
                            Err(StoreError::Unavailable(
                                "the database did not answer in time".into(),
                            ))
                        });
                    let _ = tx.send(answer);
                });
            }
            Err(e) => {
                let _ = tx.send(Err(e));
            }
        }
        Box::pin(async move {
            rx.await.unwrap_or_else(|_| {
                Err(StoreError::Unavailable(
                    "the store's runtime stopped".into(),
                ))
            })
        })
    }

    /// Runs one query function on a pooled connection.
    fn with<T, F, Fut>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(deadpool_postgres::Object) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, StoreError>> + Send,
    {
        self.with_within(QUERY_TIMEOUT, work)
    }

    /// As [`PgStore::with`], for work allowed `limit` (a large result file).
    fn with_within<T, F, Fut>(&self, limit: Duration, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(deadpool_postgres::Object) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, StoreError>> + Send,
    {
        let pool = self.pool.clone();
        run_within(limit, async move {
            work(pool.get().await.map_err(pool_error)?).await
        })
    }
}

/// Columns of a mapping row, as arrays for `unnest`, the last of each key kept (as a sequence
/// of single upserts would).
struct Columns {
    kinds: Vec<String>,
    ids: Vec<String>,
    fields: Vec<String>,
    deleted: Vec<bool>,
}

fn columns(mappings: &[StoredMapping]) -> Columns {
    let mut last: HashMap<(&str, &str), usize> = HashMap::with_capacity(mappings.len());
    for (i, m) in mappings.iter().enumerate() {
        last.insert((&m.kind, &m.crm_id), i);
    }
    let mut kept: Vec<usize> = last.into_values().collect();
    kept.sort_unstable();
    let pick = |f: fn(&StoredMapping) -> String| kept.iter().map(|&i| f(&mappings[i])).collect();
    Columns {
        kinds: pick(|m| m.kind.clone()),
        ids: pick(|m| m.crm_id.clone()),
        fields: pick(|m| m.fields.clone()),
        deleted: kept.iter().map(|&i| mappings[i].deleted).collect(),
    }
}

/// How an insert replaces the stored mapping with its key: `deleted_at_ms` keeps the time of
/// the first soft delete, and clears when the mapping is restored.
const UPSERT: &str = "ON CONFLICT (tenant, kind, crm_id) DO UPDATE SET
    fields = excluded.fields,
    deleted = excluded.deleted,
    deleted_at_ms = CASE
        WHEN NOT excluded.deleted THEN NULL
        WHEN m.deleted THEN m.deleted_at_ms
        ELSE excluded.updated_at_ms END,
    updated_at_ms = excluded.updated_at_ms";

const INSERTED: &str = "INSERT INTO mappings AS m
    (tenant, kind, crm_id, fields, deleted, deleted_at_ms, created_at_ms, updated_at_ms)";

const COLUMNS: &str = "id, at_ms, user_id, tool, call_id, status, crm, kind, object, record_id, \
                       old_values, new_values, reverts";

fn mapping(row: &tokio_postgres::Row) -> StoredMapping {
    StoredMapping {
        kind: row.get(0),
        crm_id: row.get(1),
        fields: row.get(2),
        deleted: row.get(3),
    }
}

fn journal_row(r: &tokio_postgres::Row) -> JournalRow {
    JournalRow {
        id: r.get(0),
        at_ms: r.get(1),
        user_id: r.get(2),
        tool: r.get(3),
        call_id: r.get(4),
        status: Status::from_name(r.get(5)),
        crm: r.get(6),
        kind: Kind::from_name(r.get(7)),
        object: r.get(8),
        record_id: r.get(9),
        old_values: r.get(10),
        new_values: r.get(11),
        reverts: r.get(12),
    }
}

fn area(area: Staged) -> &'static str {
    match area {
        Staged::Observed => "o",
        Staged::Writes => "w",
    }
}

impl Rows for PgStore {
    fn list_page(
        &self,
        tenant: &str,
        kind: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredMapping>, StoreError> {
        let (tenant, kind, after) = (tenant.to_owned(), kind.to_owned(), after.map(str::to_owned));
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(
                    "SELECT kind, crm_id, fields, deleted FROM mappings
                     WHERE tenant = $1 AND kind = $2 AND ($3::text IS NULL OR crm_id > $3)
                     ORDER BY crm_id LIMIT $4",
                )
                .await
                .map_err(db_error)?;
            let rows = c
                .query(&sql, &[&tenant, &kind, &after, &(limit as i64)])
                .await
                .map_err(db_error)?;
            Ok(rows.iter().map(mapping).collect())
        })
    }

    fn get(
        &self,
        tenant: &str,
        kind: &str,
        crm_id: &str,
    ) -> Result<Option<StoredMapping>, StoreError> {
        let (tenant, kind, crm_id) = (tenant.to_owned(), kind.to_owned(), crm_id.to_owned());
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(
                    "SELECT kind, crm_id, fields, deleted FROM mappings
                     WHERE tenant = $1 AND kind = $2 AND crm_id = $3",
                )
                .await
                .map_err(db_error)?;
            let row = c
                .query_opt(&sql, &[&tenant, &kind, &crm_id])
                .await
                .map_err(db_error)?;
            Ok(row.as_ref().map(mapping))
        })
    }

    fn put(&self, tenant: &str, mappings: &[StoredMapping], now: i64) -> Result<(), StoreError> {
        let tenant = tenant.to_owned();
        let cols = columns(mappings);
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(&format!(
                    "{INSERTED} SELECT $1, k, i, f, d, CASE WHEN d THEN $6::bigint END, $6, $6
                     FROM unnest($2::text[], $3::text[], $4::text[], $5::bool[]) AS t(k, i, f, d)
                     {UPSERT}"
                ))
                .await
                .map_err(db_error)?;
            c.execute(
                &sql,
                &[
                    &tenant,
                    &cols.kinds,
                    &cols.ids,
                    &cols.fields,
                    &cols.deleted,
                    &now,
                ],
            )
            .await
            .map_err(db_error)?;
            Ok(())
        })
    }

    fn record_created(&self, row: &CreatedRow) -> Result<(), StoreError> {
        let row = row.clone();
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(
                    "INSERT INTO created_records
                         (tenant, user_id, crm, object_type, record_id, created_at_ms)
                     VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .await
                .map_err(db_error)?;
            c.execute(
                &sql,
                &[
                    &row.tenant,
                    &row.user_id,
                    &row.crm,
                    &row.object_type,
                    &row.record_id,
                    &row.created_at_ms,
                ],
            )
            .await
            .map_err(db_error)?;
            Ok(())
        })
    }

    fn created_records(&self, tenant: &str) -> Result<Vec<CreatedRow>, StoreError> {
        let tenant = tenant.to_owned();
        self.with(move |c| async move {
            let rows = c
                .query(
                    "SELECT tenant, user_id, crm, object_type, record_id, created_at_ms
                     FROM created_records WHERE tenant = $1 ORDER BY seq",
                    &[&tenant],
                )
                .await
                .map_err(db_error)?;
            Ok(rows
                .iter()
                .map(|r| CreatedRow {
                    tenant: r.get(0),
                    user_id: r.get(1),
                    crm: r.get(2),
                    object_type: r.get(3),
                    record_id: r.get(4),
                    created_at_ms: r.get(5),
                })
                .collect())
        })
    }

    fn disconnected(&self, tenant: &str) -> Result<Vec<String>, StoreError> {
        let tenant = tenant.to_owned();
        self.with(move |c| async move {
            let sql = c
                .prepare_cached("SELECT crm FROM disconnected WHERE tenant = $1 ORDER BY crm")
                .await
                .map_err(db_error)?;
            let rows = c.query(&sql, &[&tenant]).await.map_err(db_error)?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    /// The change and its announcement commit together: other hosts hear of it only if it
    /// holds.
    fn set_disconnected(
        &self,
        tenant: &str,
        crm: &str,
        disconnected: bool,
        now: i64,
    ) -> Result<(), StoreError> {
        let (tenant, crm) = (tenant.to_owned(), crm.to_owned());
        let event = serde_json::to_string(&StoreEvent::Connection {
            tenant: tenant.clone(),
            crm: crm.clone(),
            connected: !disconnected,
        })
        .map_err(|e| StoreError::Invalid(e.to_string()))?;
        self.with(move |mut c| async move {
            let tx = c.transaction().await.map_err(db_error)?;
            if disconnected {
                tx.execute(
                    "INSERT INTO disconnected (tenant, crm, disconnected_at_ms)
                     VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                    &[&tenant, &crm, &now],
                )
                .await
            } else {
                tx.execute(
                    "DELETE FROM disconnected WHERE tenant = $1 AND crm = $2",
                    &[&tenant, &crm],
                )
                .await
            }
            .map_err(db_error)?;
            tx.execute("SELECT pg_notify($1, $2)", &[&events::CHANNEL, &event])
                .await
                .map_err(db_error)?;
            tx.commit().await.map_err(db_error)
        })
    }

    fn stage(
        &self,
        tenant: &str,
        change: i64,
        staged: Staged,
        mappings: &[StoredMapping],
    ) -> Result<(), StoreError> {
        let tenant = tenant.to_owned();
        let cols = columns(mappings);
        let now = super::now_ms();
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(
                    "INSERT INTO mapping_stage
                         (tenant, change, area, kind, crm_id, fields, deleted, staged_at_ms)
                     SELECT $1, $2, $3, k, i, f, d, $8
                     FROM unnest($4::text[], $5::text[], $6::text[], $7::bool[]) AS t(k, i, f, d)
                     ON CONFLICT (tenant, change, area, kind, crm_id) DO UPDATE SET
                         fields = excluded.fields, deleted = excluded.deleted",
                )
                .await
                .map_err(db_error)?;
            c.execute(
                &sql,
                &[
                    &tenant,
                    &change,
                    &area(staged),
                    &cols.kinds,
                    &cols.ids,
                    &cols.fields,
                    &cols.deleted,
                    &now,
                ],
            )
            .await
            .map_err(db_error)?;
            Ok(())
        })
    }

    fn observed(
        &self,
        tenant: &str,
        change: i64,
        kind: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredMapping>, StoreError> {
        let (tenant, kind, after) = (tenant.to_owned(), kind.to_owned(), after.map(str::to_owned));
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(
                    "SELECT kind, crm_id, fields, deleted FROM mapping_stage
                     WHERE tenant = $1 AND change = $2 AND area = 'o' AND kind = $3
                       AND ($4::text IS NULL OR crm_id > $4)
                     ORDER BY crm_id LIMIT $5",
                )
                .await
                .map_err(db_error)?;
            let rows = c
                .query(&sql, &[&tenant, &change, &kind, &after, &(limit as i64)])
                .await
                .map_err(db_error)?;
            Ok(rows.iter().map(mapping).collect())
        })
    }

    fn commit_change(
        &self,
        tenant: &str,
        change: i64,
        now: i64,
        unless_disconnected: Option<&str>,
    ) -> Result<bool, StoreError> {
        let tenant = tenant.to_owned();
        let guard = unless_disconnected.map(str::to_owned);
        self.with(move |mut c| async move {
            let tx = c.transaction().await.map_err(db_error)?;
            if let Some(crm) = guard {
                // FOR SHARE waits for a disconnect being committed, then sees it.
                let off = tx
                    .query_opt(
                        "SELECT 1 FROM disconnected WHERE tenant = $1 AND crm = $2 FOR SHARE",
                        &[&tenant, &crm],
                    )
                    .await
                    .map_err(db_error)?;
                if off.is_some() {
                    return Ok(false);
                }
            }
            tx.execute(
                &format!(
                    "{INSERTED} SELECT tenant, kind, crm_id, fields, deleted,
                         CASE WHEN deleted THEN $3::bigint END, $3, $3
                     FROM mapping_stage WHERE tenant = $1 AND change = $2 AND area = 'w'
                     {UPSERT}"
                ),
                &[&tenant, &change, &now],
            )
            .await
            .map_err(db_error)?;
            tx.execute(
                "DELETE FROM mapping_stage WHERE tenant = $1 AND change = $2",
                &[&tenant, &change],
            )
            .await
            .map_err(db_error)?;
            tx.commit().await.map_err(db_error)?;
            Ok(true)
        })
    }

    fn discard_change(&self, tenant: &str, change: i64) -> Result<(), StoreError> {
        let tenant = tenant.to_owned();
        self.with(move |c| async move {
            c.execute(
                "DELETE FROM mapping_stage WHERE tenant = $1 AND change = $2",
                &[&tenant, &change],
            )
            .await
            .map_err(db_error)?;
            Ok(())
        })
    }

    fn insert_change(&self, tenant: &str, row: &JournalRow) -> Result<(), StoreError> {
        let (tenant, row) = (tenant.to_owned(), row.clone());
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(
                    "INSERT INTO changes (id, tenant, at_ms, user_id, tool, call_id, status, crm,
                         kind, object, record_id, old_values, new_values, reverts)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
                )
                .await
                .map_err(db_error)?;
            c.execute(
                &sql,
                &[
                    &row.id,
                    &tenant,
                    &row.at_ms,
                    &row.user_id,
                    &row.tool,
                    &row.call_id,
                    &row.status.name(),
                    &row.crm,
                    &row.kind.name(),
                    &row.object,
                    &row.record_id,
                    &row.old_values,
                    &row.new_values,
                    &row.reverts,
                ],
            )
            .await
            .map_err(db_error)?;
            Ok(())
        })
    }

    fn move_status(&self, tenant: &str, step: &StatusMove<'_>) -> Result<bool, StoreError> {
        let tenant = tenant.to_owned();
        let (id, record_id, call_id) = (
            step.id.to_owned(),
            step.record_id.map(str::to_owned),
            step.call_id.map(str::to_owned),
        );
        let (status, from) = (step.status.name(), step.from.name());
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(
                    "UPDATE changes SET status = $1, record_id = coalesce(record_id, $2)
                     WHERE tenant = $3 AND id = $4 AND ($5::text IS NULL OR call_id = $5)
                       AND status = $6",
                )
                .await
                .map_err(db_error)?;
            let changed = c
                .execute(&sql, &[&status, &record_id, &tenant, &id, &call_id, &from])
                .await
                .map_err(db_error)?;
            Ok(changed == 1)
        })
    }

    fn list_changes(
        &self,
        tenant: &str,
        filter: &ChangeFilter<'_>,
        limit: u32,
    ) -> Result<Vec<JournalRow>, StoreError> {
        let tenant = tenant.to_owned();
        let user = filter.user_id.map(str::to_owned);
        let record = filter.record_id.map(str::to_owned);
        let object = filter.object.map(str::to_owned);
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM changes WHERE tenant = $1
                       AND ($2::text IS NULL OR user_id = $2)
                       AND ($3::text IS NULL OR record_id = $3)
                       AND ($4::text IS NULL OR lower(object) = lower($4))
                     ORDER BY seq DESC LIMIT $5"
                ))
                .await
                .map_err(db_error)?;
            let rows = c
                .query(&sql, &[&tenant, &user, &record, &object, &i64::from(limit)])
                .await
                .map_err(db_error)?;
            Ok(rows.iter().map(journal_row).collect())
        })
    }

    fn change(&self, tenant: &str, id: &str) -> Result<Option<JournalRow>, StoreError> {
        let (tenant, id) = (tenant.to_owned(), id.to_owned());
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM changes WHERE tenant = $1 AND id = $2"
                ))
                .await
                .map_err(db_error)?;
            let row = c.query_opt(&sql, &[&tenant, &id]).await.map_err(db_error)?;
            Ok(row.as_ref().map(journal_row))
        })
    }

    /// One key per tenant; the first host to make one wins and every other reads it.
    fn signing_key(&self, tenant: &str, candidate: &[u8]) -> Result<Vec<u8>, StoreError> {
        let (tenant, candidate) = (tenant.to_owned(), candidate.to_vec());
        self.with(move |c| async move {
            let row = c
                .query_one(
                    "WITH made AS (
                         INSERT INTO host_keys (tenant, name, value)
                         VALUES ($1, 'confirmations', $2)
                         ON CONFLICT DO NOTHING RETURNING value)
                     SELECT value FROM made
                     UNION ALL
                     SELECT value FROM host_keys WHERE tenant = $1 AND name = 'confirmations'
                     LIMIT 1",
                    &[&tenant, &candidate],
                )
                .await
                .map_err(db_error)?;
            Ok(row.get(0))
        })
    }

    fn insert_confirmation(&self, tenant: &str, row: &Confirmation) -> Result<(), StoreError> {
        let (tenant, row) = (tenant.to_owned(), row.clone());
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(
                    "INSERT INTO confirmations
                         (tenant, id, user_id, tool, input_sha256, values_read, expires_ms)
                     VALUES ($1, $2, $3, $4, $5, $6, $7)",
                )
                .await
                .map_err(db_error)?;
            c.execute(
                &sql,
                &[
                    &tenant,
                    &row.id,
                    &row.user_id,
                    &row.tool,
                    &row.input_sha256,
                    &row.values_read,
                    &row.expires_ms,
                ],
            )
            .await
            .map_err(db_error)?;
            Ok(())
        })
    }

    fn confirmation(&self, tenant: &str, id: &str) -> Result<Option<Confirmation>, StoreError> {
        let (tenant, id) = (tenant.to_owned(), id.to_owned());
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(
                    "SELECT id, user_id, tool, input_sha256, values_read, expires_ms,
                            used_at_ms IS NOT NULL
                     FROM confirmations WHERE tenant = $1 AND id = $2",
                )
                .await
                .map_err(db_error)?;
            let row = c.query_opt(&sql, &[&tenant, &id]).await.map_err(db_error)?;
            Ok(row.map(|r| Confirmation {
                id: r.get(0),
                user_id: r.get(1),
                tool: r.get(2),
                input_sha256: r.get(3),
                values_read: r.get(4),
                expires_ms: r.get(5),
                used: r.get(6),
            }))
        })
    }

    /// Under READ COMMITTED a racing update waits for the first to commit, then finds the
    /// token used: exactly one host claims it.
    fn claim_confirmation(&self, tenant: &str, id: &str, now: i64) -> Result<bool, StoreError> {
        let (tenant, id) = (tenant.to_owned(), id.to_owned());
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(
                    "UPDATE confirmations SET used_at_ms = $3
                     WHERE tenant = $1 AND id = $2 AND used_at_ms IS NULL",
                )
                .await
                .map_err(db_error)?;
            let claimed = c
                .execute(&sql, &[&tenant, &id, &now])
                .await
                .map_err(db_error)?;
            Ok(claimed == 1)
        })
    }

    fn staged_rows(&self, tenant: &str) -> Result<i64, StoreError> {
        let tenant = tenant.to_owned();
        self.with(move |c| async move {
            let row = c
                .query_one(
                    "SELECT count(*) FROM mapping_stage WHERE tenant = $1",
                    &[&tenant],
                )
                .await
                .map_err(db_error)?;
            Ok(row.get(0))
        })
    }

    fn keep_file(
        &self,
        tenant: &str,
        name: &str,
        path: &std::path::Path,
        expires_ms: i64,
    ) -> Result<bool, StoreError> {
        self.keep(tenant, name, path, expires_ms).map(|()| true)
    }

    fn fetch_file(
        &self,
        tenant: &str,
        name: &str,
        to: &std::path::Path,
    ) -> Result<bool, StoreError> {
        self.fetch(tenant, name, to)
    }

    fn file_names(&self, tenant: &str) -> Result<Vec<String>, StoreError> {
        self.names(tenant)
    }

    fn ping(&self) -> Result<(), StoreError> {
        self.with(|c| async move {
            c.simple_query("SELECT 1").await.map_err(db_error)?;
            Ok(())
        })
    }
}
