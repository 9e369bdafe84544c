//! Requests and responses as plain data, and the transport seam between the core and WASI.

use crate::error::Crm;
use std::time::Duration;
use url::Url;

/// The HTTP methods this plugin can send.
///
/// There is deliberately no `Delete`: the product never deletes CRM data, so a delete request
/// cannot even be written down. The host refuses one as well.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET`: reads.
    Get,
    /// `POST`: creates, merges, and searches that carry their query in the body.
    Post,
    /// `PATCH`: updates of existing records.
    Patch,
    /// `PUT`: HubSpot v4 association creates.
    Put,
}

impl Method {
    /// The method as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Patch => "PATCH",
            Method::Put => "PUT",
        }
    }
}

/// Whether re-sending a request can change CRM data.
///
/// Reads may be retried after transient failures; writes are sent at most once, because a
/// second create after a lost response would duplicate the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Reads only (GET, and POST searches): safe to retry.
    Read,
    /// Creates or changes data: never re-sent once it may have reached the CRM.
    Write,
}

/// One outgoing request, fully built and validated; the transport only carries it.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The CRM it goes to, so a failure of the answer itself can still name its source.
    pub crm: Crm,
    /// The HTTP method.
    pub method: Method,
    /// The full broker URL, query string included.
    pub url: Url,
    /// Whether the request may be retried; not always implied by the method (a search POSTs).
    pub effect: Effect,
    /// JSON body, when the call has one.
    pub body: Option<Vec<u8>>,
}

impl Request {
    /// A read with no body.
    pub fn get(crm: Crm, url: Url) -> Self {
        Request {
            crm,
            method: Method::Get,
            url,
            effect: Effect::Read,
            body: None,
        }
    }

    /// A request carrying a JSON body.
    pub fn json(
        crm: Crm,
        method: Method,
        url: Url,
        effect: Effect,
        body: &serde_json::Value,
    ) -> Self {
        Request {
            crm,
            method,
            url,
            effect,
            body: Some(body.to_string().into_bytes()),
        }
    }
}

/// A response as read from the transport (the body already bounded in size).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status code.
    pub status: u16,
    /// Header names are lower-case.
    pub headers: Vec<(String, String)>,
    /// The raw body, no longer than the transport's size limit.
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of a header, by lower-case name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// True for a 2xx status.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// `Retry-After` in seconds (the HTTP-date form is not used by either CRM).
    pub fn retry_after(&self) -> Option<Duration> {
        self.header("retry-after")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs)
    }
}

/// When a CRM says the next attempt may come, as its client reads it from the CRM's own
/// headers; the retry layer acts on it without knowing which CRM spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryHint {
    /// Try again after this long.
    After(Duration),
    /// No retry helps soon (a spent daily allowance).
    NotSoon,
}

/// Why a request got no response. Each case says whether the request may have reached the CRM,
/// which decides whether a write can be reported as not done or only as outcome unknown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// The request never left: connection refused, DNS failure, or the host denied it.
    #[error("the request was not sent: {0}")]
    NotSent(String),
    /// No answer in time; the CRM may have received and acted on the request.
    #[error("no response within {0:?}")]
    Timeout(Duration),
    /// The connection broke after the request was sent.
    #[error("the connection failed after the request was sent: {0}")]
    Interrupted(String),
    /// The response body was larger than the configured limit and was not read.
    #[error("the response was larger than the {limit}-byte limit")]
    ResponseTooLarge {
        /// The configured limit, in bytes.
        limit: usize,
    },
}

impl TransportError {
    /// True when the CRM may have seen the request.
    pub fn may_have_reached_crm(&self) -> bool {
        !matches!(self, TransportError::NotSent(_))
    }
}

/// Carries requests to the broker. The component implements it over `wasi:http`; tests use
/// scripted fakes.
pub trait Transport {
    /// Sends the request once and reads the whole response, bounded in size; never retries.
    fn send(&mut self, request: &Request) -> Result<Response, TransportError>;
    /// Waits before a retry (a monotonic-clock sleep in the component).
    fn sleep(&mut self, duration: Duration);
    /// Wall-clock time in milliseconds since the Unix epoch, for default timestamps such as an
    /// activity's `hs_timestamp`.
    fn now_unix_millis(&mut self) -> u64;
}
