//! Serves any [`Backend`] as a real HTTP server on a TCP listener, with TLS when given a server
//! configuration: HTTP/1.1 keep-alive, and HTTP/2 when the client picks it by ALPN.
//!
//! `crm-host sandbox` runs the sandbox CRM this way, and the tests and the bench run the network
//! backend against it: real sockets, real TLS, real credentials on the wire. The server counts
//! the connections it accepts, so connection reuse is seen from the server's side.

use super::Backend;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

/// Largest request body the server reads.
const MAX_REQUEST_BYTES: usize = 16 << 20;

/// A running server. Dropping it stops accepting connections.
pub struct Server {
    addr: SocketAddr,
    tls: bool,
    accepted: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl Server {
    /// Starts serving `backend` on `listener`, over TLS when `tls` is given. Must be called
    /// inside a tokio runtime.
    pub fn start(
        listener: TcpListener,
        backend: Arc<dyn Backend>,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> std::io::Result<Server> {
        let addr = listener.local_addr()?;
        let accepted = Arc::new(AtomicU64::new(0));
        let counter = accepted.clone();
        let secure = tls.is_some();
        let acceptor = tls.map(TlsAcceptor::from);
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                counter.fetch_add(1, Ordering::Relaxed);
                let _ = tcp.set_nodelay(true);
                let backend = backend.clone();
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    match acceptor {
                        // A failed handshake (an untrusting client, say) just ends the connection.
                        Some(acceptor) => {
                            if let Ok(stream) = acceptor.accept(tcp).await {
                                serve_connection(TokioIo::new(stream), backend).await;
                            }
                        }
                        None => serve_connection(TokioIo::new(tcp), backend).await,
                    }
                });
            }
        });
        Ok(Server {
            addr,
            tls: secure,
            accepted,
            task,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL: `https://127.0.0.1:PORT` (or `http://` without TLS).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// Connections accepted so far.
    pub fn connections_accepted(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }

    /// Serves until the process ends.
    pub async fn run(mut self) {
        let _ = (&mut self.task).await;
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve_connection<I>(io: TokioIo<I>, backend: Arc<dyn Backend>)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request: http::Request<Incoming>| {
        let backend = backend.clone();
        async move { Ok::<_, std::convert::Infallible>(answer(&*backend, request).await) }
    });
    let _ = auto::Builder::new(TokioExecutor::new())
        .serve_connection(io, service)
        .await;
}

/// The backend's answer to one request; a failure is a 502 with the error in JSON.
async fn answer(
    backend: &dyn Backend,
    request: http::Request<Incoming>,
) -> http::Response<Full<Bytes>> {
    let (parts, body) = request.into_parts();
    let body = match Limited::new(body, MAX_REQUEST_BYTES).collect().await {
        Ok(body) => body.to_bytes(),
        Err(err) => return failure(413, &err.to_string()),
    };
    match backend.send(http::Request::from_parts(parts, body)).await {
        Ok(response) => response.map(Full::new),
        Err(err) => failure(502, &err.to_string()),
    }
}

fn failure(status: u16, message: &str) -> http::Response<Full<Bytes>> {
    let body = serde_json::json!({"error": message}).to_string();
    let mut response = http::Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = http::StatusCode::from_u16(status).unwrap_or_default();
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}
