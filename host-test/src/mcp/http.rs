//! `crm-host serve`: one Streamable HTTP MCP endpoint (`/mcp`) for many tenants.
//!
//! Every request is checked before MCP sees it: the `Origin` (browsers' DNS-rebinding guard),
//! then the bearer token, whose hash picks the [`Principal`]. A missing or unknown token is a
//! 401 that points to the RFC 9728 protected-resource metadata. The token itself is removed
//! from the request, so nothing downstream (and never the broker) sees it.

use super::admin::Admin;
use super::tenants::TokenTable;
use super::{McpServer, Principal};
use crate::host::Host;
use ::http::{Request, Response, StatusCode, header};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;

/// The MCP endpoint's path.
pub const MCP_PATH: &str = "/mcp";
/// Where the protected-resource metadata is served (RFC 9728, section 3).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// What the server checks each request against.
pub struct Gate {
    /// Who each bearer token acts for.
    pub tokens: TokenTable,
    /// Origins browsers may call from; requests without an Origin (non-browser clients) pass.
    pub allowed_origins: Vec<String>,
    /// The server's own base URL, for the metadata and the 401 challenge.
    pub base_url: String,
}

type Body = BoxBody<Bytes, Infallible>;

/// Why a request does not reach MCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// A browser Origin that was not allowed (DNS rebinding, a foreign page).
    ForeignOrigin,
    /// No `Authorization` header.
    NoToken,
    /// A token that is neither listed in the tenants file nor signed by a listed provider.
    BadToken,
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_string())).boxed());
    *response.status_mut() = status;
    response
}

impl Gate {
    /// The 401 a client without a valid token gets: RFC 6750's challenge with RFC 9728's
    /// pointer to the metadata.
    fn unauthorized(&self, bad_token: bool) -> Response<Body> {
        let mut response = plain(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
        let error = if bad_token {
            r#", error="invalid_token""#
        } else {
            ""
        };
        let challenge = format!(
            r#"Bearer resource_metadata="{}{METADATA_PATH}"{error}"#,
            self.base_url
        );
        if let Ok(value) = challenge.parse() {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }

    /// RFC 9728 protected-resource metadata: this resource, and that tokens go in the header.
    fn metadata(&self) -> Response<Body> {
        let body = serde_json::json!({
            "resource": format!("{}{MCP_PATH}", self.base_url),
            "bearer_methods_supported": ["header"],
            "resource_name": "crm-plugin MCP server",
        });
        let mut response = plain(StatusCode::OK, &body.to_string());
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("application/json"),
        );
        response
    }

    /// The principal of a request, or why it is refused.
    fn admit<B>(&self, request: &Request<B>) -> Result<Principal, Refusal> {
        if let Some(origin) = request.headers().get(header::ORIGIN) {
            let allowed = origin
                .to_str()
                .is_ok_and(|o| self.allowed_origins.iter().any(|a| a == o));
            if !allowed {
                return Err(Refusal::ForeignOrigin);
            }
        }
        let Some(value) = request.headers().get(header::AUTHORIZATION) else {
            return Err(Refusal::NoToken);
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        token
            .and_then(|t| self.tokens.principal(t))
            .ok_or(Refusal::BadToken)
    }

    /// The answer to a refused request.
    fn refuse(&self, refusal: Refusal) -> Response<Body> {
        match refusal {
            Refusal::ForeignOrigin => {
                plain(StatusCode::FORBIDDEN, "this Origin may not call the server")
            }
            Refusal::NoToken => self.unauthorized(false),
            Refusal::BadToken => self.unauthorized(true),
        }
    }
}

/// Serves until the listener fails. Each connection is served on its own task.
pub async fn serve(host: Arc<Host>, gate: Gate, listener: TcpListener) -> std::io::Result<()> {
    serve_with_admin(host, gate, None, listener).await
}

/// As [`serve`], with the operator's routes under `/admin/` when `admin` is given.
pub async fn serve_with_admin(
    host: Arc<Host>,
    gate: Gate,
    admin: Option<Admin>,
    listener: TcpListener,
) -> std::io::Result<()> {
    let local = listener.local_addr()?;
    let mcp = StreamableHttpService::new(
        {
            let host = host.clone();
            move || Ok(McpServer::per_request(host.clone()))
        },
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_allowed_hosts(allowed_hosts(local)),
    );
    let gate = Arc::new(gate);
    let admin = admin.map(Arc::new);
    loop {
        let (stream, _) = listener.accept().await?;
        let (mcp, gate, admin, host) = (mcp.clone(), gate.clone(), admin.clone(), host.clone());
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
                let (mcp, gate, admin, host) =
                    (mcp.clone(), gate.clone(), admin.clone(), host.clone());
                async move {
                    let response = match request.uri().path() {
                        METADATA_PATH => gate.metadata(),
                        path if path.starts_with("/admin/") => match &admin {
                            Some(admin) => {
                                let (status, body) = admin.handle(&host, &request);
                                let mut response = plain(status, &body.to_string());
                                response.headers_mut().insert(
                                    header::CONTENT_TYPE,
                                    header::HeaderValue::from_static("application/json"),
                                );
                                response
                            }
                            None => plain(StatusCode::NOT_FOUND, "not found"),
                        },
                        MCP_PATH => match gate.admit(&request) {
                            Ok(principal) => {
                                request.headers_mut().remove(header::AUTHORIZATION);
                                request.extensions_mut().insert(principal);
                                mcp.handle(request).await
                            }
                            Err(refusal) => gate.refuse(refusal),
                        },
                        _ => plain(StatusCode::NOT_FOUND, "not found"),
                    };
                    Ok::<_, Infallible>(response)
                }
            });
            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// The Host headers rmcp accepts: the listening address, and localhost names on loopback.
fn allowed_hosts(local: SocketAddr) -> Vec<String> {
    let port = local.port();
    let mut hosts = vec![local.to_string(), local.ip().to_string()];
    if local.ip().is_loopback() {
        for name in ["localhost", "127.0.0.1", "[::1]", "::1"] {
            hosts.push(name.to_string());
            hosts.push(format!("{name}:{port}"));
        }
    }
    hosts
}
