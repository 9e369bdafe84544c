//! The real broker over HTTPS: one pooled keep-alive client per backend, shared by every call
//! and every tenant of the host.
//!
//! Connections are pooled per origin (scheme, host, port) by hyper-util's client: HTTP/1.1, or
//! HTTP/2 where the broker offers it by ALPN. The TLS configuration is built once, here. The
//! pool never holds a credential: the hooks put the tenant's `X-Proxy-Credential` on each
//! request, so tenants of one broker share connections without sharing identities. Requests in
//! flight to one origin are bounded, idle connections time out, and a response body larger than
//! the limit, cut short, or stalled is an error, never a truncated success.

use super::connector::{ConnectError, Connector};
use super::tls::{TlsSetupError, client_config};
use super::{Backend, BoxFuture};
use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls::pki_types::CertificateDer;
use std::collections::HashMap;
use std::error::Error as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;
use wasmtime_wasi_http::Error as HttpError;

/// How the network backend connects, waits and pools.
#[derive(Debug, Clone)]
pub struct NetworkOptions {
    /// Largest response body read; a larger one is refused.
    pub max_response_bytes: usize,
    /// Time to open a connection: TCP connect, then the TLS handshake, each.
    pub connect_timeout: Duration,
    /// Time from sending a request to its response's head.
    pub first_byte_timeout: Duration,
    /// Longest pause between two pieces of a response body.
    pub between_bytes_timeout: Duration,
    /// Requests in flight to one origin, and so HTTP/1.1 connections open to it; also the most
    /// idle connections kept per origin.
    pub max_connections_per_origin: usize,
    /// An idle connection is closed after this long.
    pub idle_timeout: Duration,
    /// Offer HTTP/2 by ALPN (the broker picks).
    pub http2: bool,
    /// Certificates trusted besides webpki's roots, e.g. a loopback sandbox's.
    pub extra_roots: Vec<CertificateDer<'static>>,
}

impl NetworkOptions {
    /// Defaults with one timeout for connecting, the first byte and each pause in a body.
    pub fn new(max_response_bytes: usize, timeout: Duration) -> Self {
        NetworkOptions {
            max_response_bytes,
            connect_timeout: timeout,
            first_byte_timeout: timeout,
            between_bytes_timeout: timeout,
            max_connections_per_origin: 32,
            idle_timeout: Duration::from_secs(90),
            http2: true,
            extra_roots: Vec::new(),
        }
    }
}

/// The real broker, through a pool of keep-alive connections.
pub struct NetworkBackend {
    client: Client<Connector, Full<Bytes>>,
    connector: Connector,
    options: NetworkOptions,
    /// Bounds requests in flight per origin (`scheme://authority`).
    gates: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl NetworkBackend {
    /// Builds the TLS configuration and the pool; no connection is opened yet.
    pub fn new(options: NetworkOptions) -> Result<Self, TlsSetupError> {
        let config = client_config(&options.extra_roots, options.http2)?;
        let connector = Connector::new(config, options.connect_timeout);
        let per_origin = options.max_connections_per_origin.max(1);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(options.idle_timeout)
            .pool_max_idle_per_host(per_origin)
            .pool_timer(TokioTimer::new())
            .timer(TokioTimer::new())
            .build(connector.clone());
        Ok(NetworkBackend {
            client,
            connector,
            options,
            gates: Mutex::new(HashMap::new()),
        })
    }

    /// Connections this backend has opened, over its lifetime.
    pub fn connections_opened(&self) -> u64 {
        self.connector.opened()
    }

    fn gate(&self, uri: &http::Uri) -> Arc<Semaphore> {
        let origin = format!(
            "{}://{}",
            uri.scheme_str().unwrap_or_default(),
            uri.authority().map_or("", |a| a.as_str())
        )
        .to_ascii_lowercase();
        let mut gates = self.gates.lock().unwrap_or_else(|e| e.into_inner());
        gates
            .entry(origin)
            .or_insert_with(|| {
                Arc::new(Semaphore::new(
                    self.options.max_connections_per_origin.max(1),
                ))
            })
            .clone()
    }
}

impl Backend for NetworkBackend {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<Result<http::Response<Bytes>, HttpError>> {
        let gate = self.gate(request.uri());
        let client = self.client.clone();
        let options = self.options.clone();
        Box::pin(async move {
            // Waiting for a free slot is waiting to connect: nothing has been sent.
            let _permit = tokio::time::timeout(options.connect_timeout, gate.acquire_owned())
                .await
                .map_err(|_| HttpError::ConnectionTimeout)?
                .map_err(|_| HttpError::InternalError(Some("connection gate closed".into())))?;
            let request = request.map(Full::new);
            // The connector bounds connecting on its own; this bounds the wait for the head.
            let head = options.connect_timeout + options.first_byte_timeout;
            let response = tokio::time::timeout(head, client.request(request))
                .await
                .map_err(|_| HttpError::ConnectionReadTimeout)?
                .map_err(|err| client_error(&err))?;
            let (parts, body) = response.into_parts();
            let limit = options.max_response_bytes;
            if declared_length(&parts.headers).is_some_and(|n| n > limit as u64) {
                return Err(HttpError::HttpResponseBodySize(Some(limit as u64)));
            }
            let body = read_body(body, limit, options.between_bytes_timeout).await?;
            Ok(http::Response::from_parts(parts, body))
        })
    }
}

fn declared_length(headers: &http::HeaderMap) -> Option<u64> {
    headers
        .get(http::header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// Reads a whole body, refusing it past `limit` bytes, cut short, or stalled for longer than
/// `between_bytes`.
async fn read_body(
    mut body: Incoming,
    limit: usize,
    between_bytes: Duration,
) -> Result<Bytes, HttpError> {
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut total = 0usize;
    loop {
        let frame = match tokio::time::timeout(between_bytes, body.frame()).await {
            Err(_) => return Err(HttpError::ConnectionReadTimeout),
            Ok(None) => break,
            Ok(Some(Err(err))) => return Err(body_error(&err)),
            Ok(Some(Ok(frame))) => frame,
        };
        if let Ok(data) = frame.into_data() {
            total += data.len();
            if total > limit {
                return Err(HttpError::HttpResponseBodySize(Some(limit as u64)));
            }
            chunks.push(data);
        }
    }
    Ok(match chunks.len() {
        0 => Bytes::new(),
        1 => chunks.pop().expect("one chunk"),
        _ => {
            let mut all = BytesMut::with_capacity(total);
            chunks.iter().for_each(|c| all.extend_from_slice(c));
            all.freeze()
        }
    })
}

/// A body that failed part-way was cut short: its request was sent, its outcome is unknown.
fn body_error(err: &hyper::Error) -> HttpError {
    if err.is_timeout() {
        HttpError::HttpResponseTimeout
    } else {
        HttpError::HttpResponseIncomplete
    }
}

/// Sorts a client failure: a connect error keeps its own meaning (nothing was sent); a failure
/// after the request left is a protocol failure or an incomplete response.
fn client_error(err: &hyper_util::client::legacy::Error) -> HttpError {
    let mut source = err.source();
    while let Some(cause) = source {
        if let Some(connect) = cause.downcast_ref::<ConnectError>() {
            return connect.to_http_error();
        }
        if let Some(hyper) = cause.downcast_ref::<hyper::Error>() {
            return if hyper.is_timeout() {
                HttpError::HttpResponseTimeout
            } else if hyper.is_incomplete_message() || hyper.is_canceled() || hyper.is_closed() {
                HttpError::HttpResponseIncomplete
            } else {
                HttpError::HttpProtocolError
            };
        }
        source = cause.source();
    }
    if err.is_connect() {
        HttpError::ConnectionRefused
    } else {
        HttpError::HttpProtocolError
    }
}
