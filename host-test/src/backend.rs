//! Where the hooks send a request once it is admitted: the real broker over HTTPS, the
//! built-in sandbox CRM, or a scripted stub.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
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

/// The real broker, over HTTPS with the system's webpki roots (wasmtime-wasi-http's client).
pub struct NetworkBackend {
    /// Largest response body read from the network.
    pub max_response_bytes: usize,
    pub timeout: Duration,
}

impl Backend for NetworkBackend {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<Result<http::Response<Bytes>, HttpError>> {
        let limit = self.max_response_bytes;
        let options = wasmtime_wasi_http::RequestOptions {
            connect_timeout: Some(self.timeout),
            first_byte_timeout: Some(self.timeout),
            between_bytes_timeout: Some(self.timeout),
        };
        Box::pin(async move {
            let request = request.map(|body| Full::new(body).map_err(|never| match never {}));
            let (response, io) =
                wasmtime_wasi_http::default_send_request(request, Some(options)).await?;
            let io = tokio::spawn(io);
            let (parts, body) = response.into_parts();
            let body = Limited::new(body, limit)
                .collect()
                .await
                .map_err(|_| HttpError::HttpResponseBodySize(Some(limit as u64)))?
                .to_bytes();
            io.abort();
            Ok(http::Response::from_parts(parts, body))
        })
    }
}
