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
/// What each host of the fleet last reported of itself.
mod hosts;
mod pacing;
mod registry;
/// The `Rows` interface over the pool: one prepared statement (or transaction) a method.
mod rows;
pub mod schema;

pub use events::StoreEvent;
pub use hosts::{HostReport, HostSeen, OutOfService};
pub use registry::{RegistryRead, RegistryRow, RowKind, Written};

use super::StoreError;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
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
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    spawn_timed(limit, work, move |answer| {
        let _ = tx.send(answer);
    });
    let wait = move || rx.recv().unwrap_or_else(|_| Err(stopped()));
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(wait)
        }
        _ => wait(),
    }
}

/// Runs `work` on the store's runtime, at most `limit`, and hands its answer to `deliver`
/// (the one road to the database, for blocking and async callers alike).
fn spawn_timed<T: Send + 'static>(
    limit: Duration,
    work: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    deliver: impl FnOnce(Result<T, StoreError>) + Send + 'static,
) {
    match store_runtime() {
        Ok(runtime) => {
            runtime.spawn(async move {
                let answer = tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
                    Err(StoreError::Unavailable(format!(
                        "the database did not answer within {} s; nothing was changed: try \
                         again shortly",
                        limit.as_secs()
                    )))
                });
                deliver(answer);
            });
        }
        Err(e) => deliver(Err(e)),
    }
}

/// The answer when the store's runtime is gone.
fn stopped() -> StoreError {
    StoreError::Unavailable("the store's runtime stopped".into())
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

/// TLS for the database connection: the webpki roots, plus the PEM certificates in `ca` (a
/// private CA). Whether TLS is used follows the URL's `sslmode` (`prefer` when absent,
/// `require` to insist); a certificate that does not verify is never accepted.
fn tls(
    ca: Option<&std::path::Path>,
) -> Result<tokio_postgres_rustls::MakeRustlsConnect, StoreError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = ca {
        let bad = |e: String| StoreError::Invalid(format!("store CA {}: {e}", path.display()));
        for cert in crate::backend::tls::read_certificates(path).map_err(|e| bad(e.to_string()))? {
            roots.add(cert).map_err(|e| bad(e.to_string()))?;
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
        let ca = std::env::var_os("CRM_HOST_STORE_CA").map(std::path::PathBuf::from);
        PgStore::open_with_ca(url, migrate, ca.as_deref())
    }

    /// As [`PgStore::open`], trusting the PEM certificates in `ca` besides the public roots
    /// (`open` takes them from `CRM_HOST_STORE_CA`).
    pub fn open_with_ca(
        url: &str,
        migrate: Migrate,
        ca: Option<&std::path::Path>,
    ) -> Result<Arc<PgStore>, StoreError> {
        let config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| StoreError::Invalid(format!("store URL {}: {e}", shown(url))))?;
        let tls = tls(ca)?;
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
        let work = async move { work(pool.get().await.map_err(pool_error)?).await };
        spawn_timed(QUERY_TIMEOUT, work, move |answer| {
            let _ = tx.send(answer);
        });
        Box::pin(async move { rx.await.unwrap_or_else(|_| Err(stopped())) })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_to_the_database_is_used_and_its_certificate_verified() {
        let (Ok(server), Ok(ca)) = (
            std::env::var("CRM_TEST_POSTGRES"),
            std::env::var("CRM_TEST_POSTGRES_CA"),
        ) else {
            eprintln!(
                "CRM_TEST_POSTGRES or CRM_TEST_POSTGRES_CA is not set: TLS to the database is \
                 not tested (CI sets both)"
            );
            return;
        };
        let url = format!("{server}?sslmode=require");
        let ca = std::path::Path::new(&ca);
        let store = PgStore::open_with_ca(&url, Migrate::Apply, Some(ca)).unwrap();
        let encrypted = store
            .with(|c| async move {
                let row = c
                    .query_one(
                        "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                        &[],
                    )
                    .await
                    .map_err(db_error)?;
                Ok(row.get::<_, bool>(0))
            })
            .unwrap();
        assert!(encrypted, "the connection is TLS");
        // A server whose certificate no trusted root vouches for is refused.
        let untrusted = PgStore::open_with_ca(&url, Migrate::Apply, None).unwrap_err();
        assert!(
            matches!(&untrusted, StoreError::Unavailable(m) if m.contains("PostgreSQL")),
            "{untrusted}"
        );
    }
}
