//! The `wasi:http` hooks: the only road from a component to the network.
//!
//! For each call the host builds [`BrokerHooks`] for the calling tenant alone. They admit a
//! request only if it goes to that tenant's broker and is not a DELETE, add the tenant's
//! `X-Proxy-Credential` (which the guest may neither set nor see), clamp the time it may take,
//! record it in the audit trail, and hand it to the backend.

use crate::audit::{AuditEvent, AuditLog, millis};
use crate::backend::Backend;
use http::{HeaderName, HeaderValue};
use http_body_util::{BodyExt, Full, Limited};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;
use wasmtime_wasi_http::{
    DEFAULT_FORBIDDEN_HEADERS, Error as HttpError, ForbiddenHeaderFilter, RequestOptions, WasiBody,
    WasiHttpHooks,
};

/// The header that carries the tenant's signed broker credential.
pub const CREDENTIAL_HEADER: HeaderName = HeaderName::from_static("x-proxy-credential");

/// Response headers that may carry a correlation id, in order of preference.
const CORRELATION_HEADERS: &[&str] = &[
    "x-hubspot-correlation-id",
    "x-correlation-id",
    "x-request-id",
];

/// A tenant's broker credential. Its `Debug` never shows the value.
#[derive(Clone)]
pub struct Credential(Arc<str>);

impl Credential {
    pub fn new(value: impl Into<Arc<str>>) -> Self {
        Credential(value.into())
    }

    fn header_value(&self) -> Result<HeaderValue, HttpError> {
        let mut value = HeaderValue::from_str(&self.0).map_err(|_| {
            HttpError::InternalError(Some(
                "the tenant credential is not a valid header value".into(),
            ))
        })?;
        value.set_sensitive(true);
        Ok(value)
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credential(<redacted>)")
    }
}

/// The one origin (scheme, host, port) a tenant's calls may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerOrigin {
    scheme: String,
    host: String,
    port: u16,
}

impl BrokerOrigin {
    pub fn from_url(url: &Url) -> Option<Self> {
        Some(BrokerOrigin {
            scheme: url.scheme().to_string(),
            host: url.host_str()?.to_ascii_lowercase(),
            port: url.port_or_known_default()?,
        })
    }

    fn matches(&self, uri: &http::Uri) -> bool {
        let scheme = uri.scheme_str().unwrap_or_default();
        let default_port = match scheme {
            "https" => 443,
            "http" => 80,
            _ => return false,
        };
        scheme == self.scheme
            && uri
                .host()
                .is_some_and(|h| h.eq_ignore_ascii_case(&self.host))
            && uri.port_u16().unwrap_or(default_port) == self.port
            && uri.authority().is_some_and(|a| !a.as_str().contains('@'))
    }
}

/// Why the host refused to send a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denial {
    /// The product never deletes; the component cannot express DELETE, and this catches any
    /// component that tries anyway.
    Delete,
    /// Anything other than the tenant's own broker.
    OtherOrigin(String),
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Denial::Delete => f.write_str("denied: DELETE is never sent"),
            Denial::OtherOrigin(a) => write!(f, "denied: {a} is not this tenant's broker"),
        }
    }
}

/// Decides whether a request may leave: pure, so it is tested on its own.
pub fn admit(method: &http::Method, uri: &http::Uri, origin: &BrokerOrigin) -> Result<(), Denial> {
    if method == http::Method::DELETE {
        return Err(Denial::Delete);
    }
    if !origin.matches(uri) {
        let authority = uri.authority().map(|a| a.as_str()).unwrap_or("(none)");
        return Err(Denial::OtherOrigin(format!(
            "{}://{authority}",
            uri.scheme_str().unwrap_or("?")
        )));
    }
    Ok(())
}

/// The per-call hooks for one tenant.
pub struct BrokerHooks {
    pub tenant: Arc<str>,
    pub origin: BrokerOrigin,
    pub credential: Credential,
    pub backend: Arc<dyn Backend>,
    pub audit: AuditLog,
    /// Ceiling on any one request, whatever the guest asks for.
    pub max_timeout: Duration,
    /// Largest request body the guest may send.
    pub max_request_bytes: usize,
    /// Set once a write (any method but GET) is handed to the backend, so a call cancelled
    /// afterwards is known to have an unknown outcome.
    pub writes_sent: Arc<std::sync::atomic::AtomicBool>,
}

impl BrokerHooks {
    /// The guest's requested timeout, clamped to the host's ceiling.
    fn timeout(&self, options: Option<RequestOptions>) -> Duration {
        options
            .and_then(|o| o.first_byte_timeout)
            .unwrap_or(self.max_timeout)
            .min(self.max_timeout)
    }
}

impl WasiHttpHooks for BrokerHooks {
    fn forbidden_header_filter(&mut self) -> ForbiddenHeaderFilter {
        // The guest may not set the credential header (nor the usual hop-by-hop headers).
        Arc::new(|name| *name == CREDENTIAL_HEADER || DEFAULT_FORBIDDEN_HEADERS.contains(name))
    }

    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _response_done: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> Box<
        dyn Future<
                Output = Result<
                    (
                        http::Response<WasiBody>,
                        Box<dyn Future<Output = Result<(), HttpError>> + Send>,
                    ),
                    HttpError,
                >,
            > + Send,
    > {
        let started = Instant::now();
        let admitted = admit(request.method(), request.uri(), &self.origin);
        let timeout = self.timeout(options);
        let tenant = self.tenant.clone();
        let credential = self.credential.clone();
        let backend = self.backend.clone();
        let writes_sent = self.writes_sent.clone();
        let audit = self.audit.clone();
        let max_request_bytes = self.max_request_bytes;
        Box::new(async move {
            let method = request.method().to_string();
            let path = request.uri().path().to_string();
            let log = |status: Option<u16>, outcome: String, correlation_id: Option<String>| {
                audit.record(AuditEvent::Request {
                    tenant: tenant.to_string(),
                    method: method.clone(),
                    path: path.clone(),
                    status,
                    outcome,
                    correlation_id,
                    duration_ms: millis(started.elapsed()),
                })
            };
            if let Err(denial) = admitted {
                log(None, denial.to_string(), None);
                return Err(HttpError::HttpRequestDenied);
            }
            let exchange = async {
                let (mut parts, body) = request.into_parts();
                let body = Limited::new(body, max_request_bytes)
                    .collect()
                    .await
                    .map_err(|_| HttpError::HttpRequestBodySize(None))?
                    .to_bytes();
                parts.headers.remove(&CREDENTIAL_HEADER);
                parts
                    .headers
                    .insert(CREDENTIAL_HEADER, credential.header_value()?);
                if parts.method != http::Method::GET {
                    writes_sent.store(true, std::sync::atomic::Ordering::SeqCst);
                }
                backend.send(http::Request::from_parts(parts, body)).await
            };
            let response = match tokio::time::timeout(timeout, exchange).await {
                Ok(Ok(response)) => response,
                Ok(Err(err)) => {
                    log(None, format!("failed: {err:?}"), None);
                    return Err(err);
                }
                Err(_) => {
                    log(None, format!("timed out after {timeout:?}"), None);
                    return Err(HttpError::HttpResponseTimeout);
                }
            };
            let (mut parts, body) = response.into_parts();
            // Nothing that looks like the credential flows back into the guest.
            parts.headers.remove(&CREDENTIAL_HEADER);
            let correlation_id = CORRELATION_HEADERS
                .iter()
                .find_map(|h| parts.headers.get(*h))
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            log(Some(parts.status.as_u16()), "ok".into(), correlation_id);
            let body: WasiBody = Full::new(body)
                .map_err(|never| match never {})
                .boxed_unsync();
            let done: Box<dyn Future<Output = Result<(), HttpError>> + Send> =
                Box::new(async { Ok(()) });
            Ok((http::Response::from_parts(parts, body), done))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> BrokerOrigin {
        BrokerOrigin::from_url(&Url::parse("https://broker.example.com").unwrap()).unwrap()
    }

    fn uri(text: &str) -> http::Uri {
        text.parse().unwrap()
    }

    #[test]
    fn only_the_tenants_broker_is_admitted() {
        let get = http::Method::GET;
        assert!(
            admit(
                &get,
                &uri("https://broker.example.com/sdk/proxy/x"),
                &origin()
            )
            .is_ok()
        );
        assert!(admit(&get, &uri("https://BROKER.example.com:443/sdk"), &origin()).is_ok());
        for other in [
            "https://evil.example.com/sdk",
            "http://broker.example.com/sdk",
            "https://broker.example.com:8443/sdk",
            "https://broker.example.com.evil.com/sdk",
            "https://user@broker.example.com/sdk",
        ] {
            assert!(
                matches!(
                    admit(&get, &uri(other), &origin()),
                    Err(Denial::OtherOrigin(_))
                ),
                "{other}"
            );
        }
    }

    #[test]
    fn delete_is_refused_even_to_the_broker() {
        assert_eq!(
            admit(
                &http::Method::DELETE,
                &uri("https://broker.example.com/sdk"),
                &origin()
            ),
            Err(Denial::Delete)
        );
    }

    #[test]
    fn credentials_do_not_print() {
        let c = Credential::new("secret-token");
        assert!(!format!("{c:?}").contains("secret"));
    }
}
