//! The `wasi:http` hooks: the only road from a component to the network.
//!
//! For each call the host builds [`BrokerHooks`] for the calling tenant and tool alone. They
//! admit a request only if it goes to that tenant's broker and the component's egress policy
//! admits it for that tool (which never includes DELETE, in any spelling), refuse it
//! themselves when that CRM is disconnected or its account has no room (saying why through
//! [`crate::refusal`], never in a CRM's shape), add the tenant's `X-Proxy-Credential` (which the
//! guest may neither set nor see), clamp the time it may take, record it in the audit trail,
//! and hand it to the backend.

use crate::audit::{AuditEvent, AuditLog, millis};
use crate::backend::Backend;
use crate::connections::Connections;
use crate::credential::CREDENTIAL_HEADER;
use crate::egress::{Admitted, Policy, Refusal, Roots};
use crate::pacing::{Pacer, Traffic};
use crate::refusal::{HostRefusal, RefusalSlot};
use http_body_util::{BodyExt, Full, Limited};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;
use wasmtime_wasi_http::{
    DEFAULT_FORBIDDEN_HEADERS, Error as HttpError, ForbiddenHeaderFilter, RequestOptions, WasiBody,
    WasiHttpHooks,
};

/// Response headers that may carry a correlation id, in order of preference.
const CORRELATION_HEADERS: &[&str] = &[
    "x-hubspot-correlation-id",
    "x-correlation-id",
    "x-request-id",
];

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
    /// Anything other than the tenant's own broker.
    OtherOrigin(String),
    /// Not admitted by the component's egress policy (DELETE in any spelling among them).
    Egress(Refusal),
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Denial::OtherOrigin(a) => write!(f, "denied: {a} is not this tenant's broker"),
            Denial::Egress(refusal) => write!(f, "denied: {refusal}"),
        }
    }
}

/// Decides whether a request may leave: pure, so it is tested on its own. The tenant's broker
/// origin first, then the component's egress policy for the calling tool.
pub fn admit(
    request: &EgressRequest<'_>,
    origin: &BrokerOrigin,
    scope: &EgressScope,
) -> Result<Admitted, Denial> {
    if !origin.matches(request.uri) {
        let authority = request
            .uri
            .authority()
            .map(|a| a.as_str())
            .unwrap_or("(none)");
        return Err(Denial::OtherOrigin(format!(
            "{}://{authority}",
            request.uri.scheme_str().unwrap_or("?")
        )));
    }
    scope
        .policy
        .admit(
            &scope.tool,
            &scope.roots,
            request.method,
            request.uri,
            request.headers,
        )
        .map_err(Denial::Egress)
}

/// The parts of a request the decision reads.
pub struct EgressRequest<'a> {
    pub method: &'a http::Method,
    pub uri: &'a http::Uri,
    pub headers: &'a http::HeaderMap,
}

/// What a call may reach: its component's policy, the calling tool, and the tenant's
/// integration roots.
#[derive(Clone)]
pub struct EgressScope {
    pub policy: Arc<Policy>,
    /// The tool being called; empty while listing tools (which sends nothing).
    pub tool: Arc<str>,
    pub roots: Arc<Roots>,
}

/// The per-call hooks for one tenant.
pub struct BrokerHooks {
    pub tenant: Arc<str>,
    pub origin: BrokerOrigin,
    /// The policy, tool and roots requests are checked against.
    pub scope: EgressScope,
    /// The tenant's connections: the credential for each CRM, while it is connected.
    pub connections: Arc<Connections>,
    pub backend: Arc<dyn Backend>,
    pub audit: AuditLog,
    /// Ceiling on any one request, whatever the guest asks for.
    pub max_timeout: Duration,
    /// Largest request body the guest may send.
    pub max_request_bytes: usize,
    /// Set once a write (any method but GET) is handed to the backend, so a call cancelled
    /// afterwards is known to have an unknown outcome.
    pub writes_sent: Arc<std::sync::atomic::AtomicBool>,
    /// Holds each request until its account has room (this host's, or the fleet's); none
    /// leaves pacing to the component and the CRM's own `429`s.
    pub pacer: Option<Pacer>,
    /// Why the latest request the hooks kept in was kept in, for the component to ask.
    pub refusals: RefusalSlot,
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
        let admitted = admit(
            &EgressRequest {
                method: request.method(),
                uri: request.uri(),
                headers: request.headers(),
            },
            &self.origin,
            &self.scope,
        );
        let timeout = self.timeout(options);
        let tenant = self.tenant.clone();
        let connections = self.connections.clone();
        let backend = self.backend.clone();
        let writes_sent = self.writes_sent.clone();
        let audit = self.audit.clone();
        let max_request_bytes = self.max_request_bytes;
        let pacer = self.pacer.clone();
        let refusals = self.refusals.clone();
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
            let Admitted {
                integration,
                body_allowed,
            } = match admitted {
                Ok(admitted) => admitted,
                Err(denial) => {
                    log(None, denial.to_string(), None);
                    return Err(refusals.refuse(HostRefusal::Denied(denial.to_string())));
                }
            };
            let Some(credential) = connections.credential(integration) else {
                let refusal = Denial::Egress(Refusal::Disconnected(integration));
                log(None, refusal.to_string(), None);
                return Err(refusals.refuse(HostRefusal::Disconnected(integration)));
            };
            // Waiting for the account's room is not the request's time: it comes first.
            let traffic = Traffic::of(request.method(), &path);
            let _permit = match &pacer {
                None => None,
                Some(pacer) => match pacer.acquire(&tenant, integration, traffic).await {
                    Ok(permit) => Some(permit),
                    Err(paced) => {
                        log(None, format!("held back: {paced}; nothing was sent"), None);
                        return Err(refusals.refuse(paced.into()));
                    }
                },
            };
            let exchange = async {
                let (mut parts, body) = request.into_parts();
                let body = Limited::new(body, max_request_bytes)
                    .collect()
                    .await
                    .map_err(|_| HttpError::HttpRequestBodySize(None))?
                    .to_bytes();
                if !body_allowed && !body.is_empty() {
                    return Err(refusals.refuse(HostRefusal::Denied(
                        "a body on a request that takes none".into(),
                    )));
                }
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
            if let (Some(pacer), Some(wait)) = (&pacer, retry_after(&parts)) {
                // Every host sharing the pacer holds this account's requests as long.
                pacer.pause(&tenant, integration, wait).await;
            }
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

/// A `429`'s `Retry-After` in seconds, when the CRM gave one.
fn retry_after(parts: &http::response::Parts) -> Option<Duration> {
    if parts.status != http::StatusCode::TOO_MANY_REQUESTS {
        return None;
    }
    let seconds: u64 = parts
        .headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(seconds.min(3600)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> BrokerOrigin {
        BrokerOrigin::from_url(&Url::parse("https://broker.example.com").unwrap()).unwrap()
    }

    fn scope() -> EgressScope {
        let policy = Policy::parse(
            "version = 1\nheaders = []\n[[endpoint]]\ncrm = \"crm-b\"\nmethod = \"GET\"\n\
             path = \"/x\"\ntools = [\"t\"]",
        )
        .unwrap();
        EgressScope {
            policy: Arc::new(policy),
            tool: "t".into(),
            roots: Arc::new(Roots::new(
                &Url::parse("https://broker.example.com").unwrap(),
                [],
            )),
        }
    }

    fn check(method: http::Method, uri: &str) -> Result<Admitted, Denial> {
        let uri: http::Uri = uri.parse().unwrap();
        let headers = http::HeaderMap::new();
        let request = EgressRequest {
            method: &method,
            uri: &uri,
            headers: &headers,
        };
        admit(&request, &origin(), &scope())
    }

    #[test]
    fn only_the_tenants_broker_is_admitted() {
        let get = || http::Method::GET;
        assert!(check(get(), "https://broker.example.com/sdk/proxy/salesforce/x").is_ok());
        assert!(
            check(
                get(),
                "https://BROKER.example.com:443/sdk/proxy/salesforce/x"
            )
            .is_ok()
        );
        for other in [
            "https://evil.example.com/sdk/proxy/salesforce/x",
            "http://broker.example.com/sdk/proxy/salesforce/x",
            "https://broker.example.com:8443/sdk/proxy/salesforce/x",
            "https://broker.example.com.evil.com/sdk/proxy/salesforce/x",
            "https://user@broker.example.com/sdk/proxy/salesforce/x",
        ] {
            assert!(
                matches!(check(get(), other), Err(Denial::OtherOrigin(_))),
                "{other}"
            );
        }
        assert!(matches!(
            check(get(), "https://broker.example.com/sdk/proxy/salesforce/y"),
            Err(Denial::Egress(Refusal::NotInPolicy { .. }))
        ));
    }

    #[test]
    fn delete_is_refused_even_to_the_broker() {
        assert_eq!(
            check(
                http::Method::DELETE,
                "https://broker.example.com/sdk/proxy/salesforce/x"
            ),
            Err(Denial::Egress(Refusal::Delete))
        );
    }
}
