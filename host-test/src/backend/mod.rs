//! Where the hooks send a request once it is admitted: the real broker over HTTPS
//! ([`NetworkBackend`]), the built-in sandbox CRM, or a scripted stub. [`serve`] runs any of
//! them as a real loopback HTTP(S) server, so the network backend is tested end to end.

mod connector;
mod network;
pub mod serve;
pub mod tls;

pub use network::{NetworkBackend, NetworkOptions};

use bytes::Bytes;
use std::future::Future;
use std::pin::Pin;
use wasmtime_wasi_http::Error as HttpError;

/// A boxed future, as backends return them.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Answers admitted requests. The request already carries the tenant's credential header and
/// a fully read body.
pub trait Backend: Send + Sync {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<Result<http::Response<Bytes>, HttpError>>;
}
