//! Opens the connections the pooled client keeps: TCP with a connect timeout, then TLS with
//! the backend's one client configuration (webpki's roots plus any trusted extras), ALPN h2 or
//! http/1.1. It counts every connection it opens, so tests and the bench can see reuse.
//!
//! Its errors keep apart "could not connect" (refused, timed out, DNS, TLS refused): in each
//! case nothing was sent, and the component may say so.

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use wasmtime_wasi_http::Error as HttpError;

use super::BoxFuture;

/// Why a connection could not be opened. Nothing was sent in any of these cases.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectError {
    #[error("the URI names no host")]
    NoHost,
    #[error("scheme {0:?} is not http or https")]
    Scheme(String),
    #[error("looking up the host: {0}")]
    Dns(io::Error),
    #[error("the host has no address")]
    NoAddress,
    #[error("connecting: {0}")]
    Connect(io::Error),
    #[error("connecting timed out")]
    Timeout,
    #[error("the host is not a valid TLS server name")]
    ServerName,
    #[error("TLS: {0}")]
    Tls(io::Error),
}

impl ConnectError {
    /// The `wasi:http` error the guest sees; the component sorts these into "nothing sent".
    pub(crate) fn to_http_error(&self) -> HttpError {
        match self {
            ConnectError::NoHost | ConnectError::Scheme(_) => HttpError::HttpRequestUriInvalid,
            ConnectError::Dns(_) | ConnectError::ServerName => HttpError::DnsError {
                rcode: Some(self.to_string()),
                info_code: None,
            },
            ConnectError::NoAddress => HttpError::DestinationNotFound,
            ConnectError::Connect(_) => HttpError::ConnectionRefused,
            ConnectError::Timeout => HttpError::ConnectionTimeout,
            ConnectError::Tls(err) => tls_error(err),
        }
    }
}

/// Sorts a TLS handshake failure: the server's certificate refused, an alert from the server,
/// or any other protocol failure.
fn tls_error(err: &io::Error) -> HttpError {
    match err
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>())
    {
        Some(rustls::Error::InvalidCertificate(_)) => HttpError::TlsCertificateError,
        Some(rustls::Error::AlertReceived(alert)) => HttpError::TlsAlertReceived {
            alert_id: Some(u8::from(*alert)),
            alert_message: Some(format!("{alert:?}")),
        },
        _ => HttpError::TlsProtocolError,
    }
}

/// The connector handed to hyper-util's pooled client. Cloning shares the TLS configuration
/// and the counter.
#[derive(Clone)]
pub(crate) struct Connector {
    tls: TlsConnector,
    connect_timeout: Duration,
    opened: Arc<AtomicU64>,
}

impl Connector {
    pub(crate) fn new(config: Arc<rustls::ClientConfig>, connect_timeout: Duration) -> Self {
        Connector {
            tls: TlsConnector::from(config),
            connect_timeout,
            opened: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Connections opened so far (TCP connects that succeeded).
    pub(crate) fn opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }

    async fn connect(self, uri: http::Uri) -> Result<Conn, ConnectError> {
        let host = uri.host().ok_or(ConnectError::NoHost)?;
        // An IPv6 literal comes bracketed in a URI; sockets and TLS want it bare.
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let tls = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            other => return Err(ConnectError::Scheme(other.unwrap_or("").to_string())),
        };
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let timeout = self.connect_timeout;
        let tcp = tokio::time::timeout(timeout, tcp_connect(&host, port))
            .await
            .map_err(|_| ConnectError::Timeout)??;
        self.opened.fetch_add(1, Ordering::Relaxed);
        let _ = tcp.set_nodelay(true);
        if !tls {
            return Ok(Conn {
                io: TokioIo::new(Stream::Plain(tcp)),
                h2: false,
            });
        }
        let name = ServerName::try_from(host).map_err(|_| ConnectError::ServerName)?;
        let stream = tokio::time::timeout(timeout, self.tls.connect(name, tcp))
            .await
            .map_err(|_| ConnectError::Timeout)?
            .map_err(ConnectError::Tls)?;
        let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
        Ok(Conn {
            io: TokioIo::new(Stream::Tls(Box::new(stream))),
            h2,
        })
    }
}

/// Resolves and connects, trying each address in turn; the last failure is the one reported.
async fn tcp_connect(host: &str, port: u16) -> Result<TcpStream, ConnectError> {
    let addrs = tokio::net::lookup_host((host, port))
        .await
        .map_err(ConnectError::Dns)?;
    let mut last = ConnectError::NoAddress;
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(err) => last = ConnectError::Connect(err),
        }
    }
    Err(last)
}

impl tower_service::Service<http::Uri> for Connector {
    type Response = Conn;
    type Error = ConnectError;
    type Future = BoxFuture<Result<Conn, ConnectError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        Box::pin(self.clone().connect(uri))
    }
}

/// A plain or TLS TCP stream.
enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }
}

/// One open connection as hyper sees it, with whether ALPN chose HTTP/2.
pub(crate) struct Conn {
    io: TokioIo<Stream>,
    h2: bool,
}

impl Connection for Conn {
    fn connected(&self) -> Connected {
        let connected = Connected::new();
        if self.h2 {
            connected.negotiated_h2()
        } else {
            connected
        }
    }
}

impl Read for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl Write for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}
