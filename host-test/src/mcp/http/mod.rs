//! `crm-host serve`: one Streamable HTTP MCP endpoint (`/mcp`) for many tenants, and the
//! routes a load balancer and an operator use beside it.
//!
//! Every MCP request is checked before MCP sees it ([`gate`]): `Origin`, then the bearer
//! token, whose hash or signature picks the [`Principal`]; then the principal's request rate
//! ([`limits`]), its share of requests in flight ([`shares`]), its body's deadline ([`body`])
//! and, when it names one, that the session is its own ([`sessions`]). The token is removed
//! from the request, so nothing downstream (and never the broker) sees it. Connections are
//! bounded and timed ([`listener`]), and a source address that keeps failing to authenticate
//! is answered 429 before its credentials are looked at ([`shares`]), so no client, with a
//! token or without, stops the server for others.
//!
//! | route | who | what |
//! |---|---|---|
//! | `/mcp` | bearer tokens | MCP (both protocol eras) |
//! | `/.well-known/oauth-protected-resource[/mcp]` | anyone | RFC 9728 metadata |
//! | `/healthz` | anyone | the process is alive |
//! | `/readyz` | anyone | component compiled, every open store answering (the fleet database always); tenants out of service named |
//! | `/metrics` | the operator's token | Prometheus text |
//! | `/admin/…` | the operator's token | disconnect, connect, swap a tenant's component |

pub mod body;
pub mod gate;
pub mod limits;
pub mod listener;
/// `/readyz` and `/metrics`.
mod ops;
pub mod sessions;
pub mod shares;

pub use body::BodyLimits;
pub use gate::Gate;
pub use limits::{RateLimit, ServerLimits};
pub use listener::ConnectionLimits;
pub use sessions::SessionLimits;
pub use shares::AuthFailureLimit;

use super::McpServer;
use super::admin::Admin;
use super::task_cap::TaskCap;
use crate::host::Host;
use crate::metrics::{Metrics, Refused};
use ::http::{Method, Request, Response, StatusCode, header};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use limits::RateLimiter;
use listener::{Connection, RequestMarker, Slots};
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use sessions::{DuplicateId, Held, Owner, SessionTable, UnknownSession};
use shares::{AuthFailures, InFlightLimiter, Source};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The MCP endpoint's path.
pub const MCP_PATH: &str = "/mcp";
/// Where the protected-resource metadata is served (RFC 9728, section 3).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
/// Liveness, for a load balancer.
pub const HEALTH_PATH: &str = "/healthz";
/// Readiness, for a load balancer.
pub const READY_PATH: &str = "/readyz";
/// The operator's metrics.
pub const METRICS_PATH: &str = "/metrics";

/// The header naming a 2025-era session.
const SESSION_HEADER: &str = "mcp-session-id";

pub(crate) type Body = BoxBody<Bytes, Infallible>;

pub(crate) fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_string())).boxed());
    *response.status_mut() = status;
    response
}

pub(crate) fn json_response(status: StatusCode, body: &serde_json::Value) -> Response<Body> {
    let mut response = plain(status, &body.to_string());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

/// How `crm-host serve` runs besides its host: who may call, the operator's access, limits,
/// metrics, and the token that stops it.
pub struct ServeOptions {
    pub gate: Gate,
    pub admin: Option<Admin>,
    pub limits: ServerLimits,
    pub metrics: Arc<Metrics>,
    /// Cancel to stop accepting and end every session.
    pub stop: CancellationToken,
}

impl ServeOptions {
    pub fn new(gate: Gate) -> Self {
        ServeOptions {
            gate,
            admin: None,
            limits: ServerLimits::default(),
            metrics: Arc::default(),
            stop: CancellationToken::new(),
        }
    }
}

/// Serves until stopped. Each connection is served on its own task.
pub async fn serve(host: Arc<Host>, gate: Gate, listener: TcpListener) -> std::io::Result<()> {
    serve_with(host, ServeOptions::new(gate), listener).await
}

/// As [`serve`], with the operator's routes under `/admin/` when `admin` is given.
pub async fn serve_with_admin(
    host: Arc<Host>,
    gate: Gate,
    admin: Option<Admin>,
    listener: TcpListener,
) -> std::io::Result<()> {
    let mut options = ServeOptions::new(gate);
    options.admin = admin;
    serve_with(host, options, listener).await
}

/// What every request handler shares.
struct State {
    host: Arc<Host>,
    gate: Gate,
    admin: Option<Admin>,
    limits: ServerLimits,
    metrics: Arc<Metrics>,
    mcp: StreamableHttpService<McpServer, LocalSessionManager>,
    manager: Arc<LocalSessionManager>,
    sessions: Arc<SessionTable>,
    rate: RateLimiter,
    in_flight: Arc<InFlightLimiter>,
    auth_failures: AuthFailures,
}

impl State {
    /// The operator's access, while the registry names an operator.
    fn operator(&self) -> Option<&Admin> {
        self.admin.as_ref().filter(|admin| admin.enabled())
    }
}

/// Serves with every option; returns when `options.stop` is cancelled.
pub async fn serve_with(
    host: Arc<Host>,
    options: ServeOptions,
    listener: TcpListener,
) -> std::io::Result<()> {
    let local = listener.local_addr()?;
    let limits = options.limits;
    let share = limits.in_flight_per_principal();
    if share < limits.max_in_flight_per_principal {
        tracing::info!(
            "each principal may have {share} requests in flight: a quarter of the {} connections",
            limits.connections.max_connections
        );
    }
    // Sessions expire through the table below, which also closes them in the manager; rmcp's
    // own idle timer would leave an expired session's entry behind.
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = None;
    let manager = Arc::new(manager);
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(options.stop.child_token())
        .with_allowed_hosts(options.gate.allowed_hosts(local))
        .with_max_request_body_bytes(limits.max_body_bytes);
    // One cap on running tasks for every session of the server.
    let task_cap = Arc::new(TaskCap::new(limits.max_tasks_per_principal));
    let mcp = StreamableHttpService::new(
        {
            let host = host.clone();
            move || Ok(McpServer::per_request(host.clone()).with_task_cap(task_cap.clone()))
        },
        manager.clone(),
        config,
    );
    let state = Arc::new(State {
        host,
        gate: options.gate,
        admin: options.admin,
        limits,
        metrics: options.metrics,
        mcp,
        manager,
        sessions: Arc::new(SessionTable::new(limits.sessions)),
        rate: RateLimiter::new(limits.rate),
        in_flight: InFlightLimiter::new(limits.in_flight_per_principal()),
        auth_failures: AuthFailures::new(limits.auth_failures),
    });
    tokio::spawn(reap(state.clone(), options.stop.clone()));
    let slots = Arc::new(Slots::default());
    let refused_metrics = state.metrics.clone();
    listener::accept_loop(
        listener,
        limits.connections,
        slots,
        options.stop,
        move || refused_metrics.refused(Refused::TooManyConnections),
        move |stream, peer, connection| serve_connection(state.clone(), stream, peer, connection),
    )
    .await;
    Ok(())
}

/// Closes idle sessions and forgets quiet rate buckets and ended failure windows, until
/// stopped.
async fn reap(state: Arc<State>, stop: CancellationToken) {
    let every =
        (state.limits.sessions.idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
        let now = Instant::now();
        for id in state.sessions.take_expired(now) {
            let _ = state.manager.close_session(&id.into()).await;
        }
        state.rate.prune(now);
        state.auth_failures.prune(now);
        state.metrics.sessions.set(state.sessions.len() as i64);
    }
}

/// One connection, until it ends, times out or is closed to make room.
async fn serve_connection(
    state: Arc<State>,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    connection: Connection,
) {
    let _ = stream.set_nodelay(true);
    state.metrics.connections.inc();
    let limits = state.limits.connections;
    let metrics = state.metrics.clone();
    let marker = connection.marker();
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let (state, marker) = (state.clone(), marker.clone());
        async move { Ok::<_, Infallible>(route(state, request, marker, peer).await) }
    });
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let served = builder.serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        _ = served => {}
        () = connection.close.cancelled() => {}
        () = connection.timed_out(limits) => {}
    }
    metrics.connections.dec();
}

/// Whether `path` is a route that takes credentials (and so counts failed ones).
fn takes_credentials(path: &str) -> bool {
    path == MCP_PATH || path == METRICS_PATH || path.starts_with("/admin/")
}

/// Answers one request; the response body holds the connection's in-flight mark. On a route
/// that takes credentials, a source past its failed-authentication limit is answered 429
/// before its credentials are read, and a presented credential answered 401 counts against it.
async fn route(
    state: Arc<State>,
    request: Request<Incoming>,
    marker: RequestMarker,
    peer: SocketAddr,
) -> Response<Body> {
    let in_flight = marker.request();
    let path = request.uri().path();
    let source = Source::from(peer.ip());
    let guarded = takes_credentials(path);
    if guarded && let Err(blocked) = state.auth_failures.check(source, Instant::now()) {
        state.metrics.refused(Refused::AuthFailures);
        let mut response = plain(StatusCode::TOO_MANY_REQUESTS, &blocked.to_string());
        retry_after(&mut response, blocked.0);
        close_after(&mut response);
        return response.map(|body| Held::new(body, in_flight).boxed());
    }
    let presented = request.headers().contains_key(header::AUTHORIZATION);
    let response = match path {
        MCP_PATH => mcp(&state, request).await,
        HEALTH_PATH => plain(StatusCode::OK, "ok"),
        READY_PATH => ops::ready(&state.host),
        METRICS_PATH => {
            state.metrics.sessions.set(state.sessions.len() as i64);
            tenant_gauges(&state);
            ops::metrics(state.operator(), &state.metrics, &request)
        }
        path if state.gate.is_metadata_path(path) => state.gate.metadata(),
        path if path.starts_with("/admin/") && path.ends_with("/component") => {
            component_upload(&state, request).await
        }
        path if path.starts_with("/admin/") => match state.operator() {
            Some(admin) => {
                let (status, body) = admin.handle(&state.host, &request);
                json_response(status, &body)
            }
            None => plain(StatusCode::NOT_FOUND, "not found"),
        },
        _ => plain(StatusCode::NOT_FOUND, "not found"),
    };
    if guarded
        && presented
        && response.status() == StatusCode::UNAUTHORIZED
        && state.auth_failures.record(source, Instant::now())
    {
        tracing::warn!(
            source = %peer.ip(),
            "{} failed authentications from one address: it is answered 429 for {} s",
            state.limits.auth_failures.max_failures,
            state.limits.auth_failures.window.as_secs()
        );
    }
    response.map(|body| Held::new(body, in_flight).boxed())
}

/// Adds `Retry-After` in whole seconds, rounded up.
fn retry_after(response: &mut Response<Body>, wait: Duration) {
    let seconds = shares::retry_after_seconds(wait);
    if let Ok(value) = seconds.to_string().parse() {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
}

/// Asks hyper to close the connection after this answer, freeing its slot (a refused request's
/// body is never read, so the connection could not carry another one anyway).
fn close_after(response: &mut Response<Body>) {
    response.headers_mut().insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
}

/// Largest component an operator may upload.
const MAX_COMPONENT_BYTES: usize = 64 << 20;

/// `POST /admin/tenants/{tenant}/component` with the component's bytes: the operator swaps the
/// tenant's component (on every host of a fleet). The token is checked before the body is read.
async fn component_upload(state: &State, request: Request<Incoming>) -> Response<Body> {
    let Some(admin) = state.operator() else {
        return plain(StatusCode::NOT_FOUND, "not found");
    };
    if !admin.is_operator(&request) || request.method() != Method::POST {
        let (status, body) = admin.handle(&state.host, &request);
        return json_response(status, &body);
    }
    let path = request.uri().path().to_owned();
    let parts: Vec<&str> = path.split('/').collect();
    let ["", "admin", "tenants", tenant, "component"] = parts.as_slice() else {
        return plain(StatusCode::NOT_FOUND, "no such admin route");
    };
    let tenant = tenant.to_string();
    let wasm = match body::read(request.into_body(), MAX_COMPONENT_BYTES, state.limits.body).await {
        Ok(body) => body,
        Err(err) => return err.response(),
    };
    let (host, admin) = (state.host.clone(), admin.clone());
    // Compiling takes a while: off the async workers.
    let answer =
        tokio::task::spawn_blocking(move || admin.swap_component(&host, &tenant, &wasm)).await;
    match answer {
        Ok((status, body)) => json_response(status, &body),
        Err(_) => plain(StatusCode::INTERNAL_SERVER_ERROR, "the swap failed"),
    }
}

/// The JSON-RPC id of a request message, as text, if the body is one.
fn request_id(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Peek {
        id: Option<serde_json::Value>,
        method: Option<String>,
    }
    let peek: Peek = serde_json::from_slice(body).ok()?;
    peek.method?;
    peek.id.map(|id| id.to_string())
}

/// `/mcp`: admitted, rate-limited, held to the principal's share, its body read against the
/// deadline, session-checked, then rmcp's.
async fn mcp(state: &State, request: Request<Incoming>) -> Response<Body> {
    let principal = match state.gate.admit(&request).await {
        Ok(principal) => principal,
        Err(refusal) => {
            state.metrics.refused(refusal.metric());
            return state.gate.refuse(refusal);
        }
    };
    let owner = Owner::from(&principal);
    if let Err(wait) = state.rate.take(&owner, Instant::now()) {
        state.metrics.refused(Refused::RateLimited);
        let mut response = plain(
            StatusCode::TOO_MANY_REQUESTS,
            "too many requests: slow down",
        );
        let seconds = wait.as_secs() + 1;
        if let Ok(value) = seconds.to_string().parse() {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        return response;
    }
    // Held from here until the answer ends: the body's arrival and a streamed answer included.
    let permit = match state.in_flight.enter(&owner) {
        Ok(permit) => permit,
        Err(busy) => {
            state.metrics.refused(Refused::TooManyInFlight);
            let mut response = plain(StatusCode::TOO_MANY_REQUESTS, &busy.to_string());
            retry_after(&mut response, Duration::from_secs(1));
            close_after(&mut response);
            return response;
        }
    };
    let (mut parts, body) = request.into_parts();
    parts.headers.remove(header::AUTHORIZATION);
    let body = match body::read(body, state.limits.max_body_bytes, state.limits.body).await {
        Ok(body) => body,
        Err(err) => {
            if let body::BodyError::TooSlow { received, .. } = &err {
                state.metrics.refused(Refused::SlowBody);
                tracing::debug!(
                    tenant = %principal.tenant_id,
                    received,
                    "a request body came too slowly; answered 408"
                );
            }
            return err.response();
        }
    };
    let session = parts
        .headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let rpc_id = (parts.method == Method::POST)
        .then(|| request_id(&body))
        .flatten();
    let lease = match &session {
        None => None,
        Some(id) => match state.sessions.enter(id, &owner, rpc_id.clone()) {
            // Exactly rmcp's answer to an unknown session: another principal's session does
            // not exist for this one.
            Err(UnknownSession) => {
                state.metrics.refused(Refused::UnknownSession);
                return plain(StatusCode::NOT_FOUND, "Not Found: Session not found");
            }
            Ok(Err(DuplicateId)) => return duplicate_id(rpc_id.as_deref().unwrap_or("null")),
            Ok(Ok(lease)) => Some(lease),
        },
    };
    let closing = parts.method == Method::DELETE;
    parts.extensions.insert(principal);
    let response = state
        .mcp
        .handle(Request::from_parts(parts, Full::new(body)))
        .await;
    match &session {
        None => {
            let opened = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok());
            if let Some(id) = opened {
                for evicted in state.sessions.bind(id.to_string(), owner) {
                    let _ = state.manager.close_session(&evicted.into()).await;
                }
            }
        }
        Some(id) if closing && response.status().is_success() => {
            state.sessions.remove(id);
            state.metrics.sessions.set(state.sessions.len() as i64);
            // 204 rather than rmcp's 202: the session is gone now, not later, and the Python
            // SDK takes only 200 or 204 as a successful close.
            return plain(StatusCode::NO_CONTENT, "");
        }
        Some(_) => {}
    }
    state.metrics.sessions.set(state.sessions.len() as i64);
    response.map(|body| Held::new(body, (lease, permit)).boxed())
}

/// The answer to a request reusing an id still in flight in its session: a JSON-RPC error for
/// that id, so the first request keeps its answer.
fn duplicate_id(id: &str) -> Response<Body> {
    let id: serde_json::Value = serde_json::from_str(id).unwrap_or(serde_json::Value::Null);
    json_response(
        StatusCode::BAD_REQUEST,
        &serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": -32600,
                "message": format!("request id {id} is already in flight in this session; send each request with a new id"),
            }
        }),
    )
}

/// The tenants and stores gauges, read when `/metrics` is scraped (a walk of the tenant
/// table, no store touched).
fn tenant_gauges(state: &State) {
    use crate::tenant_db::open_stores;
    let (listed, loaded) = state.host.tenant_counts();
    state.metrics.tenants_listed.set(listed as i64);
    state.metrics.tenants_loaded.set(loaded as i64);
    state
        .metrics
        .open_stores
        .set(open_stores::open_now() as i64);
    state
        .metrics
        .open_stores_limit
        .set(open_stores::limit() as i64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_id_is_read_from_requests_only() {
        assert_eq!(
            request_id(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}"#).as_deref(),
            Some("7")
        );
        assert_eq!(
            request_id(br#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#).as_deref(),
            Some("\"a\"")
        );
        assert_eq!(
            request_id(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None
        );
        assert_eq!(
            request_id(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#),
            None,
            "a response"
        );
        assert_eq!(request_id(b"not json"), None);
    }
}
