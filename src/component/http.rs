//! `wasi:http/outgoing-handler` as the core's [`Transport`], and the WASI clocks behind its
//! sleeps and timestamps.

use super::wasi::clocks::{monotonic_clock, wall_clock};
use super::wasi::http::outgoing_handler;
use super::wasi::http::types::{
    ErrorCode, Fields, IncomingBody, Method as WasiMethod, OutgoingBody, OutgoingRequest,
    RequestOptions, Scheme,
};
use super::wasi::io::poll;
use super::wasi::io::streams::StreamError;
use crate::http::{HostRefusal, Method, Request, Response, Transport, TransportError};
use std::time::Duration;

/// `wasi:http` as the core's transport.
pub(super) struct WasiHttp {
    pub(super) max_response_bytes: usize,
    pub(super) timeout: Duration,
}

/// Largest write `blocking-write-and-flush` accepts.
const WRITE_CHUNK: usize = 4096;
/// Most bytes asked of the response body in one read. The host answers with what it holds, up
/// to this, so a page that arrived in one piece is read in one call and kept as it came.
const READ_CHUNK: u64 = 1 << 20;
/// How long a failed body write waits for the answer that may explain it (a refusal).
const ANSWER_GRACE_NANOS: u64 = 1_000_000_000;

impl Transport for WasiHttp {
    fn send(&mut self, request: &Request) -> Result<Response, TransportError> {
        let outgoing = build_request(request)?;
        let body = outgoing
            .body()
            .map_err(|()| TransportError::NotSent("the request body was already taken".into()))?;
        let future = outgoing_handler::handle(outgoing, Some(self.options()))
            .map_err(|code| TransportError::NotSent(format!("{code:?}")))?;
        let answer = future.subscribe();
        let got = match write_body(body, request.body()) {
            Ok(()) => {
                answer.block();
                future.get()
            }
            Err(unwritten) => {
                // A host or server that answers before reading the whole body (a refusal:
                // the CRM is disconnected, the request is not allowed) closes the body
                // stream. Its answer, when one comes at once, says what happened; only
                // without one is the failed write the error.
                let grace = monotonic_clock::subscribe_duration(ANSWER_GRACE_NANOS);
                poll::poll(&[&answer, &grace]);
                match future.get() {
                    Some(Ok(answered)) => Some(Ok(answered)),
                    _ => return Err(unwritten),
                }
            }
        };
        let response = match got {
            Some(Ok(Ok(response))) => response,
            Some(Ok(Err(code))) => return Err(from_error_code(code, self.timeout)),
            Some(Err(())) | None => {
                return Err(TransportError::Interrupted("the response was lost".into()));
            }
        };
        let status = response.status();
        let headers = response
            .headers()
            .entries()
            .into_iter()
            .map(|(name, value)| {
                (
                    name.to_ascii_lowercase(),
                    String::from_utf8_lossy(&value).into_owned(),
                )
            })
            .collect();
        let body = response.consume().map_err(|()| {
            TransportError::Interrupted("the response body was unavailable".into())
        })?;
        let body = read_body(body, self.max_response_bytes, self.timeout)?;
        Ok(Response {
            status,
            headers,
            body,
        })
    }

    fn sleep(&mut self, duration: Duration) {
        let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        monotonic_clock::subscribe_duration(nanos).block();
    }

    fn now_unix_millis(&mut self) -> u64 {
        let now = wall_clock::now();
        now.seconds * 1000 + u64::from(now.nanoseconds / 1_000_000)
    }

    fn report_progress(&mut self, done: u64, total: Option<u64>) {
        super::crm::plugin::progress::report(done, total);
    }
}

impl WasiHttp {
    fn options(&self) -> RequestOptions {
        let options = RequestOptions::new();
        let nanos = Some(u64::try_from(self.timeout.as_nanos()).unwrap_or(u64::MAX));
        // The host may refuse or clamp these; it enforces its own ceiling either way.
        let _ = options.set_connect_timeout(nanos);
        let _ = options.set_first_byte_timeout(nanos);
        let _ = options.set_between_bytes_timeout(nanos);
        options
    }
}

fn build_request(request: &Request) -> Result<OutgoingRequest, TransportError> {
    let not_sent = |what: &str| TransportError::NotSent(what.to_string());
    let headers = Fields::new();
    headers
        .append("accept", b"application/json")
        .map_err(|_| not_sent("header accept"))?;
    if request.body().is_some() {
        headers
            .append("content-type", b"application/json")
            .map_err(|_| not_sent("header content-type"))?;
    }
    let outgoing = OutgoingRequest::new(headers);
    // Exhaustive over the core's methods, which have no DELETE.
    let method = match request.method() {
        Method::Get => WasiMethod::Get,
        Method::Post => WasiMethod::Post,
        Method::Patch => WasiMethod::Patch,
        Method::Put => WasiMethod::Put,
    };
    let url = request.url();
    let scheme = match url.scheme() {
        "https" => Scheme::Https,
        "http" => Scheme::Http,
        other => return Err(not_sent(&format!("unsupported scheme {other}"))),
    };
    let authority = match url.port() {
        Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_string(),
    };
    let path = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_string(),
    };
    outgoing
        .set_method(&method)
        .map_err(|()| not_sent("method"))?;
    outgoing
        .set_scheme(Some(&scheme))
        .map_err(|()| not_sent("scheme"))?;
    outgoing
        .set_authority(Some(&authority))
        .map_err(|()| not_sent("authority"))?;
    outgoing
        .set_path_with_query(Some(&path))
        .map_err(|()| not_sent("path"))?;
    Ok(outgoing)
}

fn write_body(body: OutgoingBody, bytes: Option<&[u8]>) -> Result<(), TransportError> {
    let interrupted = |what: String| TransportError::Interrupted(what);
    {
        let stream = body
            .write()
            .map_err(|()| interrupted("the request body stream was unavailable".into()))?;
        for chunk in bytes.unwrap_or_default().chunks(WRITE_CHUNK) {
            stream
                .blocking_write_and_flush(chunk)
                .map_err(|e| interrupted(format!("writing the request body: {e:?}")))?;
        }
    }
    OutgoingBody::finish(body, None).map_err(|code| interrupted(format!("{code:?}")))
}

fn read_body(
    body: IncomingBody,
    limit: usize,
    timeout: Duration,
) -> Result<Vec<u8>, TransportError> {
    let mut bytes = Vec::new();
    {
        let stream = body.stream().map_err(|()| {
            TransportError::Interrupted("the response body stream was unavailable".into())
        })?;
        loop {
            match stream.blocking_read(READ_CHUNK) {
                Ok(chunk) => {
                    if bytes.len() + chunk.len() > limit {
                        return Err(TransportError::ResponseTooLarge { limit });
                    }
                    if bytes.is_empty() {
                        bytes = chunk;
                    } else {
                        bytes.extend_from_slice(&chunk);
                    }
                }
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(err)) => {
                    let code = super::wasi::http::types::http_error_code(&err);
                    return Err(match code {
                        Some(code) => from_error_code(code, timeout),
                        None => TransportError::Interrupted(err.to_debug_string()),
                    });
                }
            }
        }
    }
    drop(IncomingBody::finish(body));
    Ok(bytes)
}

/// Sorts `wasi:http` error codes by whether the request may have reached the CRM.
fn from_error_code(code: ErrorCode, timeout: Duration) -> TransportError {
    match code {
        // The host kept it in; it says why through `egress`.
        ErrorCode::HttpRequestDenied => match super::crm::plugin::egress::take_refusal() {
            Some(refusal) => TransportError::Refused(host_refusal(refusal)),
            None => TransportError::NotSent(format!("{code:?}")),
        },
        ErrorCode::DnsTimeout
        | ErrorCode::DnsError(_)
        | ErrorCode::DestinationNotFound
        | ErrorCode::DestinationUnavailable
        | ErrorCode::DestinationIpProhibited
        | ErrorCode::DestinationIpUnroutable
        | ErrorCode::ConnectionRefused
        | ErrorCode::ConnectionTimeout
        | ErrorCode::TlsProtocolError
        | ErrorCode::TlsCertificateError
        | ErrorCode::TlsAlertReceived(_)
        | ErrorCode::HttpRequestMethodInvalid
        | ErrorCode::HttpRequestUriInvalid
        | ErrorCode::HttpRequestUriTooLong => TransportError::NotSent(format!("{code:?}")),
        ErrorCode::ConnectionReadTimeout | ErrorCode::HttpResponseTimeout => {
            TransportError::Timeout(timeout)
        }
        ErrorCode::HttpResponseBodySize(size) => TransportError::ResponseTooLarge {
            limit: size.map_or(usize::MAX, |s| s as usize),
        },
        other => TransportError::Interrupted(format!("{other:?}")),
    }
}

/// The host's refusal in the core's terms.
fn host_refusal(refusal: super::crm::plugin::egress::Refusal) -> HostRefusal {
    use super::crm::plugin::egress::Refusal;
    match refusal {
        Refusal::Paced(seconds) => HostRefusal::Paced(Duration::from_secs(seconds.into())),
        Refusal::HostUnavailable(why) => HostRefusal::HostUnavailable(why),
        Refusal::Disconnected(why) => HostRefusal::Disconnected(why),
        Refusal::Denied(why) => HostRefusal::Denied(why),
    }
}
