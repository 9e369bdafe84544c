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

/// The methods a write may use: a write is never a `GET`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMethod {
    /// Creates and merges.
    Post,
    /// Updates of existing records.
    Patch,
    /// HubSpot v4 association creates.
    Put,
}

impl From<WriteMethod> for Method {
    fn from(method: WriteMethod) -> Self {
        match method {
            WriteMethod::Post => Method::Post,
            WriteMethod::Patch => Method::Patch,
            WriteMethod::Put => Method::Put,
        }
    }
}

/// One outgoing request, fully built and validated; the transport only carries it.
///
/// Its fields are private and its constructors say what it does ([`Request::read`],
/// [`Request::search`], [`Request::write`]), so the method and the effect cannot disagree: a
/// `PATCH` is always a write, and only a write reaches the preview, the journal and the gate.
///
/// ```
/// use crm_plugin::{error::Crm, http::{Effect, Method, Request, WriteMethod}};
/// let url: url::Url = "https://broker.example/crm-b/sobjects/Account/001".parse().unwrap();
/// let update = Request::write(Crm::Salesforce, WriteMethod::Patch, url, None);
/// assert_eq!((update.method(), update.effect()), (Method::Patch, Effect::Write));
/// ```
///
/// A `PATCH` tagged as a read cannot be written down:
///
/// ```compile_fail
/// use crm_plugin::{error::Crm, http::{Effect, Method, Request}};
/// let url: url::Url = "https://broker.example/crm-b/sobjects/Account/001".parse().unwrap();
/// let sneaky = Request { crm: Crm::Salesforce, method: Method::Patch, url, effect: Effect::Read, body: None };
/// ```
///
/// and a write takes no `GET` (nor any method but a [`WriteMethod`]):
///
/// ```compile_fail
/// use crm_plugin::{error::Crm, http::{Method, Request}};
/// let url: url::Url = "https://broker.example/crm-b/sobjects/Account/001".parse().unwrap();
/// let odd = Request::write(Crm::Salesforce, Method::Get, url, None);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    crm: Crm,
    method: Method,
    url: Url,
    effect: Effect,
    body: Option<Vec<u8>>,
}

impl Request {
    /// A read: `GET`, no body, safe to retry.
    pub fn read(crm: Crm, url: Url) -> Self {
        Request {
            crm,
            method: Method::Get,
            url,
            effect: Effect::Read,
            body: None,
        }
    }

    /// A search that carries its query in a JSON body: `POST`, yet a read.
    pub fn search(crm: Crm, url: Url, body: &serde_json::Value) -> Self {
        Request {
            crm,
            method: Method::Post,
            url,
            effect: Effect::Read,
            body: Some(body.to_string().into_bytes()),
        }
    }

    /// A write, with its JSON body when it has one: sent at most once.
    pub fn write(
        crm: Crm,
        method: WriteMethod,
        url: Url,
        body: Option<&serde_json::Value>,
    ) -> Self {
        Request {
            crm,
            method: method.into(),
            url,
            effect: Effect::Write,
            body: body.map(|body| body.to_string().into_bytes()),
        }
    }

    /// The CRM it goes to, so a failure of the answer itself can still name its source.
    pub fn crm(&self) -> Crm {
        self.crm
    }

    /// The HTTP method, which the constructor chose.
    pub fn method(&self) -> Method {
        self.method
    }

    /// The full broker URL, query string included.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// Whether the request may be retried; not always implied by the method (a search POSTs).
    pub fn effect(&self) -> Effect {
        self.effect
    }

    /// The JSON body, when the call has one.
    pub fn body(&self) -> Option<&[u8]> {
        self.body.as_deref()
    }

    /// Replaces a write's body (the governance gate adds the provenance marker); what the
    /// request is stays as it was.
    pub fn replace_body(&mut self, body: &serde_json::Value) {
        self.body = Some(body.to_string().into_bytes());
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

/// Why the host kept a request from leaving (WIT `egress.refusal`). The host says so through
/// its own interface rather than an answer in a CRM's shape, so the component knows for certain
/// that nothing reached the CRM, whatever the request was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostRefusal {
    /// The account's request allowance is spent for now; room again after this long.
    Paced(Duration),
    /// The host cannot pace or journal the request now (its shared store does not answer).
    HostUnavailable(String),
    /// The workspace's operator disconnected the CRM.
    Disconnected(String),
    /// Outside what the tool may reach.
    Denied(String),
}

impl std::fmt::Display for HostRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostRefusal::Paced(wait) => write!(
                f,
                "the host is holding this account's requests to stay within the CRM's limit \
                 (room again in {} s)",
                wait.as_secs().max(1)
            ),
            HostRefusal::HostUnavailable(why)
            | HostRefusal::Disconnected(why)
            | HostRefusal::Denied(why) => f.write_str(why),
        }
    }
}

/// Why a request got no response. Each case says whether the request may have reached the CRM,
/// which decides whether a write can be reported as not done or only as outcome unknown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// The request never left: connection refused, DNS failure, or the host denied it.
    #[error("the request was not sent: {0}")]
    NotSent(String),
    /// The host kept the request in, and said why.
    #[error("the host did not send the request: {0}")]
    Refused(HostRefusal),
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
        !matches!(
            self,
            TransportError::NotSent(_) | TransportError::Refused(_)
        )
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
    /// Tells the host how far a long call has come (`done` of `total`); nothing by default.
    fn report_progress(&mut self, _done: u64, _total: Option<u64>) {}
}

#[cfg(test)]
mod request_tests {
    use super::*;

    fn url() -> Url {
        Url::parse("https://broker.example/crm-a/crm/v3/objects/contacts").unwrap()
    }

    #[test]
    fn each_constructor_fixes_method_and_effect_together() {
        let read = Request::read(Crm::Hubspot, url());
        assert_eq!((read.method(), read.effect()), (Method::Get, Effect::Read));
        assert_eq!(read.body(), None);
        let search = Request::search(Crm::Hubspot, url(), &serde_json::json!({"limit": 1}));
        assert_eq!(
            (search.method(), search.effect()),
            (Method::Post, Effect::Read)
        );
        for (method, wire) in [
            (WriteMethod::Post, Method::Post),
            (WriteMethod::Patch, Method::Patch),
            (WriteMethod::Put, Method::Put),
        ] {
            let write = Request::write(Crm::Hubspot, method, url(), None);
            assert_eq!((write.method(), write.effect()), (wire, Effect::Write));
        }
    }

    #[test]
    fn replacing_a_body_keeps_what_the_request_is() {
        let mut write = Request::write(
            Crm::Hubspot,
            WriteMethod::Post,
            url(),
            Some(&serde_json::json!({"properties": {}})),
        );
        write.replace_body(&serde_json::json!({"properties": {"marker": "x"}}));
        assert_eq!(
            (write.method(), write.effect()),
            (Method::Post, Effect::Write)
        );
        assert_eq!(write.body(), Some(&br#"{"properties":{"marker":"x"}}"#[..]));
    }
}
