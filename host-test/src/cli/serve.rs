//! `crm-host serve`: its limits as flags, and starting the Streamable HTTP server for every
//! tenant of a tenants file, or of the fleet's registry.

use super::registry::Tenants;
use super::registry::follow::{self, read_registry};
use super::registry::rows::Change;
use super::{
    BuiltInCrm, CodeNeeded, NO_BUILT_IN_CRM, Options, audit_log, load_component, network_backend,
    stop_signal,
};
use crate::Host;
use crate::backend::Backend;
use crate::mcp::admin::{Admin, Credentials, OperatorToken};
use crate::mcp::http::limits::{DEFAULT_IN_FLIGHT_PER_PRINCIPAL, DEFAULT_TASKS_PER_PRINCIPAL};
use crate::mcp::http::{self as mcp_http, Gate, MCP_PATH};
use crate::mcp::tenants::{SharedTokens, TenantEntry, TenantsFile, TokenTable};
use crate::metrics::Metrics;
use clap::Args;
use serde_json::json;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use url::Url;

/// What `crm-host serve` bounds, so that no client can stop it for the others. Each flag can
/// also be set by its environment variable.
#[derive(Debug, Clone, Args)]
pub(super) struct ServeLimits {
    /// Most connections open at once (lowered to fit the open-files limit).
    #[arg(long, env = "CRM_HOST_MAX_CONNECTIONS", default_value_t = 1024)]
    max_connections: usize,
    /// Seconds a new connection has to send its first request's headers.
    #[arg(long, env = "CRM_HOST_HEADER_TIMEOUT_SECONDS", default_value_t = 10)]
    header_timeout_seconds: u64,
    /// Seconds a connection may sit with no request in flight.
    #[arg(long, env = "CRM_HOST_IDLE_TIMEOUT_SECONDS", default_value_t = 60)]
    idle_timeout_seconds: u64,
    /// Seconds an MCP session may sit unused before it is closed.
    #[arg(long, env = "CRM_HOST_SESSION_IDLE_SECONDS", default_value_t = 600)]
    session_idle_seconds: u64,
    /// Sessions one principal (tenant, user, token issuer) may hold; past it, its least
    /// recently used session is closed.
    #[arg(
        long,
        env = "CRM_HOST_MAX_SESSIONS_PER_PRINCIPAL",
        default_value_t = 32
    )]
    max_sessions_per_principal: usize,
    /// Requests a second one principal may send, sustained.
    #[arg(long, env = "CRM_HOST_RATE_PER_SECOND", default_value_t = 20.0)]
    rate_per_second: f64,
    /// Requests one principal may send in a burst.
    #[arg(long, env = "CRM_HOST_RATE_BURST", default_value_t = 100.0)]
    rate_burst: f64,
    /// Seconds a request body has to arrive, plus one for every --body-min-bytes-per-second
    /// bytes received; a slower body is cut off with 408.
    #[arg(long, env = "CRM_HOST_BODY_TIMEOUT_SECONDS", default_value_t = 10)]
    body_timeout_seconds: u64,
    /// The slowest rate, in bytes a second, at which a request body may keep arriving.
    #[arg(
        long,
        env = "CRM_HOST_BODY_MIN_BYTES_PER_SECOND",
        default_value_t = 500
    )]
    body_min_bytes_per_second: u64,
    /// Requests one principal may have in flight at once (a streamed answer counts until it
    /// ends); never more than a quarter of --max-connections. Past it, 429.
    #[arg(
        long,
        env = "CRM_HOST_MAX_REQUESTS_PER_PRINCIPAL",
        default_value_t = DEFAULT_IN_FLIGHT_PER_PRINCIPAL
    )]
    max_requests_per_principal: usize,
    /// Exports one principal may run as tasks at once; past it the call is refused with a
    /// message to wait.
    #[arg(
        long,
        env = "CRM_HOST_MAX_TASKS_PER_PRINCIPAL",
        default_value_t = DEFAULT_TASKS_PER_PRINCIPAL
    )]
    max_tasks_per_principal: usize,
    /// Failed authentications (a bearer token presented and refused) one address may make in
    /// --auth-failure-window-seconds; past it every request from there that needs a token is
    /// answered 429 until the window ends, without its token being checked. 0 turns it off.
    #[arg(long, env = "CRM_HOST_AUTH_FAILURES_PER_SOURCE", default_value_t = 30)]
    auth_failures_per_source: u32,
    /// The window of --auth-failures-per-source, in seconds.
    #[arg(
        long,
        env = "CRM_HOST_AUTH_FAILURE_WINDOW_SECONDS",
        default_value_t = 60
    )]
    auth_failure_window_seconds: u64,
    /// Tenants' SQLite stores kept open at once (lowered to fit the open-files limit, at least
    /// 8); past it, the least recently used idle store is closed until its tenant's next call.
    #[arg(long, env = "CRM_HOST_MAX_OPEN_STORES", default_value_t = 1000)]
    max_open_stores: usize,
    /// Seconds a tenant's SQLite store may sit unused before it is closed (opened again by
    /// the tenant's next call).
    #[arg(long, env = "CRM_HOST_STORE_IDLE_SECONDS", default_value_t = 300)]
    store_idle_seconds: u64,
}

impl ServeLimits {
    /// How long a tenant's store may sit unused before it is closed.
    pub(super) fn store_idle(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.store_idle_seconds.max(1))
    }

    /// The server's limits, with the open-files limit raised to its hard limit and shared
    /// between connections and the tenants' stores (whose cap is set for the process here).
    pub(super) fn limits(&self) -> mcp_http::ServerLimits {
        use mcp_http::listener::{fitting_cap, fitting_stores, raise_open_files_limit};
        use std::time::Duration;
        let open_files = raise_open_files_limit();
        let max_connections = fitting_cap(self.max_connections, open_files);
        let stores = fitting_stores(self.max_open_stores, open_files, max_connections);
        crate::tenant_db::open_stores::set_limit(stores);
        tracing::info!(
            open_files = open_files.unwrap_or_default(),
            max_connections,
            max_open_stores = crate::tenant_db::open_stores::limit(),
            "descriptors shared"
        );
        mcp_http::ServerLimits {
            connections: mcp_http::ConnectionLimits {
                max_connections,
                header_read_timeout: Duration::from_secs(self.header_timeout_seconds.max(1)),
                idle_timeout: Duration::from_secs(self.idle_timeout_seconds.max(1)),
            },
            sessions: mcp_http::SessionLimits {
                max_per_principal: self.max_sessions_per_principal.max(1),
                idle: Duration::from_secs(self.session_idle_seconds.max(1)),
            },
            rate: mcp_http::RateLimit {
                per_second: self.rate_per_second.max(0.01),
                burst: self.rate_burst.max(1.0),
            },
            body: mcp_http::BodyLimits {
                timeout: Duration::from_secs(self.body_timeout_seconds.max(1)),
                min_bytes_per_second: self.body_min_bytes_per_second.max(1),
            },
            max_in_flight_per_principal: self.max_requests_per_principal.max(1),
            max_tasks_per_principal: self.max_tasks_per_principal.max(1),
            auth_failures: mcp_http::AuthFailureLimit {
                max_failures: self.auth_failures_per_source,
                window: Duration::from_secs(self.auth_failure_window_seconds.max(1)),
            },
            ..mcp_http::ServerLimits::default()
        }
    }
}

/// The tenants a server starts with: a tenants file's, or the fleet registry's rows.
enum Listing {
    File(TenantsFile),
    Rows(Change),
}

impl Listing {
    /// How many tenants are listed, and how many of them are on a broker.
    fn count(&self) -> (usize, usize) {
        let count = |tenants: &mut dyn Iterator<Item = &TenantEntry>| {
            tenants.fold((0, 0), |(all, broker), t| {
                (all + 1, broker + usize::from(t.proxy_base.is_some()))
            })
        };
        match self {
            Listing::File(file) => count(&mut file.tenants.iter().map(|t| &**t)),
            Listing::Rows(change) => count(&mut change.listed()),
        }
    }
}

/// `crm-host serve`'s own arguments.
pub(super) struct ServeCommand {
    pub(super) listen: std::net::SocketAddr,
    /// The tenants file; without it, the PostgreSQL store's registry.
    pub(super) tenants_path: Option<std::path::PathBuf>,
    pub(super) allowed_origins: Vec<String>,
    pub(super) public_url: Option<Url>,
    pub(super) limits: mcp_http::ServerLimits,
    /// How long a tenant's store may sit unused before it is closed.
    pub(super) store_idle: std::time::Duration,
}

/// `crm-host serve`: one Streamable HTTP server for every tenant in the tenants file.
pub(super) async fn serve_http(
    options: &Options,
    stores: &super::store::Store,
    serve: ServeCommand,
    built_in: Option<Arc<dyn BuiltInCrm>>,
) -> Result<ExitCode, String> {
    let ServeCommand {
        listen,
        tenants_path,
        allowed_origins,
        public_url,
        limits,
        store_idle,
    } = serve;
    if public_url.is_none() && !listen.ip().is_loopback() {
        return Err(format!(
            "--listen {listen} is reachable from other machines: give --public-url, the URL \
             clients use (e.g. https://crm.example.com/mcp)"
        ));
    }
    let reading = std::time::Instant::now();
    let listing = match (&tenants_path, stores.postgres()) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("--tenants {}: {e}", path.display()))?;
            Listing::File(
                TenantsFile::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?,
            )
        }
        (None, Some(fleet)) => Listing::Rows(read_registry(fleet)?),
        (None, None) => {
            return Err("give --tenants FILE (or a PostgreSQL --store whose \
                                    registry names the tenants)"
                .into());
        }
    };
    let (tenant_count, on_broker) = listing.count();
    let read = reading.elapsed();
    let (runtime, plugin) = load_component(options, CodeNeeded::ByFirstCall)?;
    let component = reading.elapsed() - read;
    let backend: Arc<dyn Backend> = match on_broker {
        0 => built_in.as_deref().ok_or(NO_BUILT_IN_CRM)?.backend(),
        n if n == tenant_count => Arc::new(network_backend(options, &runtime)?),
        _ => return Err("serve either sandbox tenants or broker tenants, not both".into()),
    };
    let metrics = Arc::new(Metrics::default());
    let audit = audit_log(options)?.observed_by(metrics.clone());
    let jwks_backend: Arc<dyn Backend> = Arc::new(network_backend(options, &runtime)?);
    let mut host = Host::new(runtime, backend, audit.clone()).with_answer_form(options.answers);
    if let Some(pacer) = stores.pacer(&options.pace) {
        host = host.with_pacer(pacer);
    }
    let host = Arc::new(host);
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| format!("--listen {listen}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let tenants = Arc::new(Tenants {
        options: options.clone(),
        store: stores.clone(),
        built_in: built_in.clone(),
        host: host.clone(),
        plugin,
        jwks_backend,
        on_broker: on_broker > 0,
        tokens: SharedTokens::default(),
        credentials: Credentials::default(),
        operator: OperatorToken::default(),
        metrics: metrics.clone(),
        host_id: host_id(local),
        applied: Mutex::default(),
        reported: AtomicBool::new(true),
        follows: AtomicBool::new(false),
    });
    // A tenant that cannot be built here is out of service, named in /readyz, /metrics and
    // the fleet's reports; the host serves the others.
    let applying = std::time::Instant::now();
    match listing {
        Listing::File(file) => drop(tenants.apply(0, Arc::new(file))),
        Listing::Rows(change) => {
            tenants
                .tokens
                .replace(TokenTable::new(&tenants.options.scopes));
            tenants.apply_change(change);
        }
    }
    follow::release_freed_memory();
    tracing::info!(
        tenants = tenant_count,
        read_ms = read.as_millis() as u64,
        component_ms = component.as_millis() as u64,
        apply_ms = applying.elapsed().as_millis() as u64,
        "tenants listed"
    );
    let stop = tokio_util::sync::CancellationToken::new();
    if let Some(fleet) = stores.postgres() {
        host.follow_store(fleet);
        // A file given with --tenants is this host's alone; the registry is the fleet's.
        if tenants_path.is_none() {
            tenants.clone().follow(fleet.clone());
        }
        tenants.report(fleet);
    }
    tenants.clone().heartbeat(stop.clone());
    close_idle_stores(store_idle, stop.clone());
    let local_url = format!("http://{local}{MCP_PATH}");
    let public_url = match public_url {
        Some(url) => url,
        None => Url::parse(&local_url).map_err(|e| e.to_string())?,
    };
    // The one line on stdout: where the server is (port 0 picks a free one).
    println!(
        "{}",
        json!({"listening": local_url, "public_url": public_url.as_str()})
    );
    let gate = Gate {
        tokens: tenants.tokens.clone(),
        allowed_origins,
        public_url,
    };
    // The operator's token follows the registry: rotated by an import, off without [admin].
    let admin = Admin {
        operator: tenants.operator.clone(),
        credentials: tenants.credentials.clone(),
        fleet: stores.postgres().cloned(),
    };
    let serve_options = mcp_http::ServeOptions {
        gate,
        admin: Some(admin),
        limits,
        metrics,
        stop: stop.clone(),
    };
    // Until the operator stops the server; every audit line recorded so far is written before
    // the process exits.
    let served = tokio::select! {
        served = mcp_http::serve_with(host, serve_options, listener) => {
            served.map_err(|e| format!("serving: {e}"))
        }
        () = stop_signal() => {
            stop.cancel();
            Ok(())
        }
    };
    stop.cancel();
    // A host that stops no longer counts as live in the fleet.
    if let Some(fleet) = stores.postgres()
        && let Err(e) = fleet.forget_host(&tenants.host_id)
    {
        tracing::warn!("removing this host from the fleet's reports: {e}");
    }
    let flushed = audit
        .flush()
        .map_err(|e| format!("writing the audit trail: {e}"));
    served.and(flushed)?;
    Ok(ExitCode::SUCCESS)
}

/// This host's name in the fleet's reports: its machine's name and the port it listens on (so
/// a host restarted in place takes its own row again).
fn host_id(local: std::net::SocketAddr) -> String {
    let machine = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "host".into());
    format!("{machine}:{}", local.port())
}

/// How long a tenant's SQLite store sits unused before its caches are emptied (it stays open):
/// a conversation's calls come seconds apart, and an idle open store then costs half as much.
const TRIM_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// How many stores trimmed or closed are worth handing their memory back for, and how often
/// at most.
const RELEASE_AFTER_STORES: usize = 32;
const RELEASE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Every second, empties the caches of the tenants' stores unused for [`TRIM_AFTER`]; every
/// `idle`/4 (at most a minute), closes those unused for `idle`, so a host's descriptors and
/// memory follow the tenants active now, not those active since the start.
fn close_idle_stores(idle: std::time::Duration, stop: tokio_util::sync::CancellationToken) {
    use crate::tenant_db::open_stores;
    use std::time::{Duration, Instant};
    let every = (idle / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_close = Instant::now();
        let (mut freed, mut last_release) = (0, Instant::now());
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            let close = last_close.elapsed() >= every;
            if close {
                last_close = Instant::now();
            }
            let (trimmed, closed) = tokio::task::spawn_blocking(move || {
                let closed = if close {
                    open_stores::close_idle(idle)
                } else {
                    0
                };
                (open_stores::trim_idle(TRIM_AFTER), closed)
            })
            .await
            .unwrap_or_default();
            freed += trimmed + closed;
            // What many stores gave back is handed to the system, not kept by the allocator
            // for the life of the process; at most every few seconds (a pass takes
            // milliseconds, and locks each of the allocator's arenas in turn).
            if freed >= RELEASE_AFTER_STORES && last_release.elapsed() >= RELEASE_EVERY {
                freed = 0;
                last_release = Instant::now();
                let _ = tokio::task::spawn_blocking(follow::release_freed_memory).await;
            }
            if closed > 0 || trimmed > 0 {
                tracing::debug!("closed {closed} store(s) unused for {idle:?}, trimmed {trimmed}");
            }
        }
    });
}
