//! Sending one logical request: bounded retries for reads, exactly one attempt for writes.
//!
//! Reads (GET, and POST searches) are retried on 5xx, 429 and transport failures with
//! exponential backoff, honouring `Retry-After` up to the configured cap. A write is sent once:
//! if it may have reached the CRM and no clear answer came back, the result is
//! `outcome-unknown`, because re-sending a create could duplicate the record.

use crate::config::Limits;
use crate::error::{Crm, CrmProblem, ToolError};
use crate::http::{Effect, HostRefusal, Request, Response, RetryHint, Transport, TransportError};
use std::time::Duration;

/// Reads a CRM's answer for when to try again; each CRM's client passes its own.
pub type HintReader = fn(&Response) -> Option<RetryHint>;

/// The final response and what it said about retrying, read once, for the error mapper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The last response received, of any status.
    pub response: Response,
    /// The CRM's retry advice from that response; `None` on success or when it gave none.
    pub hint: Option<RetryHint>,
}

/// Sends `request`, retrying reads as the limits allow. Returns the final response whatever
/// its status (the CRM-specific mapper turns error statuses into tool errors); only transport
/// failures and unknown write outcomes become errors here.
pub fn execute(
    transport: &mut dyn Transport,
    limits: &Limits,
    request: &Request,
    read_hint: HintReader,
) -> Result<Answer, ToolError> {
    let attempts = match request.effect() {
        Effect::Read => limits.read_attempts.max(1),
        Effect::Write => 1,
    };
    for attempt in 1..=attempts {
        let last = attempt == attempts;
        match transport.send(request) {
            Ok(response) => {
                if request.effect() == Effect::Write && is_gateway_failure(response.status) {
                    return Err(write_unknown(
                        request,
                        &format!("the CRM answered {}", response.status),
                    ));
                }
                let hint = (!response.is_success())
                    .then(|| read_hint(&response))
                    .flatten();
                if last || !is_transient(response.status) {
                    return Ok(Answer { response, hint });
                }
                match wait_before_retry(hint, attempt, limits) {
                    Some(wait) => transport.sleep(wait),
                    // The CRM asks for a longer pause than we may wait: report it now.
                    None => return Ok(Answer { response, hint }),
                }
            }
            // The host's own refusal: nothing left, and waiting here would not help (the
            // host already held the request as long as it may).
            Err(TransportError::Refused(refusal)) => return Err(refused(request, refusal)),
            Err(err) => {
                if request.effect() == Effect::Write {
                    return Err(if err.may_have_reached_crm() {
                        write_unknown(request, &err.to_string())
                    } else {
                        ToolError::Unavailable(format!(
                            "{err}; nothing was written, so the same request can be made again"
                        ))
                    });
                }
                if last || matches!(err, TransportError::ResponseTooLarge { .. }) {
                    return Err(transport_failure(request.crm(), &err, attempt));
                }
                transport.sleep(backoff(attempt, limits));
            }
        }
    }
    unreachable!("the loop returns on its last attempt")
}

/// Statuses worth another try for a read.
fn is_transient(status: u16) -> bool {
    status == 429 || (500..600).contains(&status)
}

/// Statuses after which a write may or may not have been applied.
fn is_gateway_failure(status: u16) -> bool {
    (500..600).contains(&status)
}

fn backoff(attempt: u32, limits: &Limits) -> Duration {
    let factor = 1u32 << (attempt - 1).min(16);
    limits
        .retry_base
        .saturating_mul(factor)
        .min(limits.max_retry_wait)
}

/// How long to wait before the next attempt, or `None` when the CRM asks for a longer pause
/// than we may wait (a `Retry-After` over the cap, or a spent daily allowance).
fn wait_before_retry(hint: Option<RetryHint>, attempt: u32, limits: &Limits) -> Option<Duration> {
    let wait = match hint {
        Some(RetryHint::After(wait)) => wait,
        Some(RetryHint::NotSoon) => return None,
        None => backoff(attempt, limits),
    };
    (wait <= limits.max_retry_wait).then_some(wait)
}

/// What the user is told when the host kept the request in: what to do, and that nothing was
/// sent (so a write may simply be made again).
fn refused(request: &Request, refusal: HostRefusal) -> ToolError {
    let what = format!(
        "{} {} was not sent",
        request.method().as_str(),
        request.url().path()
    );
    match refusal {
        HostRefusal::Paced(wait) => ToolError::RateLimited(Some(
            u32::try_from(wait.as_secs().max(1)).unwrap_or(u32::MAX),
        )),
        HostRefusal::HostUnavailable(why) => ToolError::Unavailable(format!(
            "{what}: {why}. Nothing was sent, so the same request can be made again shortly"
        )),
        HostRefusal::Disconnected(why) => ToolError::NotConnected(format!("{what}: {why}")),
        HostRefusal::Denied(why) => ToolError::Forbidden(format!(
            "{what}: the host does not let this tool make this request ({why})"
        )),
    }
}

fn write_unknown(request: &Request, what: &str) -> ToolError {
    ToolError::OutcomeUnknown(format!(
        "{} {} was sent but {what}; it was not retried. Check in the CRM whether the change \
         happened before making it again",
        request.method().as_str(),
        request.url().path()
    ))
}

fn transport_failure(crm: Crm, err: &TransportError, attempts: u32) -> ToolError {
    match err {
        TransportError::ResponseTooLarge { limit } => CrmProblem::new(
            crm,
            "RESPONSE_TOO_LARGE",
            "The answer was too large to read: ask for fewer records or fields.",
        )
        .with_message(format!("the answer was over the {limit}-byte limit"))
        .into(),
        _ => ToolError::Unavailable(format!(
            "{err} (after {attempts} attempt{}); try again later",
            if attempts == 1 { "" } else { "s" }
        )),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::http::WriteMethod;
    use std::collections::VecDeque;
    use url::Url;

    /// A transport that answers from a script and records what was sent and slept.
    #[derive(Default)]
    pub(crate) struct ScriptedTransport {
        pub script: VecDeque<Result<Response, TransportError>>,
        pub sent: Vec<Request>,
        pub slept: Vec<Duration>,
    }

    impl ScriptedTransport {
        pub(crate) fn new(
            script: impl IntoIterator<Item = Result<Response, TransportError>>,
        ) -> Self {
            ScriptedTransport {
                script: script.into_iter().collect(),
                ..Default::default()
            }
        }
    }

    impl Transport for ScriptedTransport {
        fn send(&mut self, request: &Request) -> Result<Response, TransportError> {
            self.sent.push(request.clone());
            self.script
                .pop_front()
                .expect("the script ran out: unexpected request")
        }
        fn sleep(&mut self, duration: Duration) {
            self.slept.push(duration);
        }
        fn now_unix_millis(&mut self) -> u64 {
            NOW_UNIX_MILLIS
        }
    }

    /// The scripted clock: 2026-11-21T09:30:00Z.
    pub(crate) const NOW_UNIX_MILLIS: u64 = 1_795_253_400_000;

    pub(crate) fn response(status: u16, body: &str) -> Result<Response, TransportError> {
        Ok(Response {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.as_bytes().to_vec(),
        })
    }

    fn read() -> Request {
        Request::read(
            Crm::Salesforce,
            Url::parse("https://broker.example.com/r").unwrap(),
        )
    }

    fn write() -> Request {
        Request::write(
            Crm::Hubspot,
            WriteMethod::Post,
            Url::parse("https://broker.example.com/w").unwrap(),
            Some(&serde_json::json!({"Name": "x"})),
        )
    }

    #[test]
    fn reads_retry_transient_failures_with_growing_backoff() {
        let mut t = ScriptedTransport::new([
            response(503, ""),
            Err(TransportError::Timeout(Duration::from_secs(1))),
            response(200, "{}"),
        ]);
        let got = execute(&mut t, &Limits::default(), &read(), plain).unwrap();
        assert_eq!(got.response.status, 200);
        assert_eq!(t.sent.len(), 3);
        assert_eq!(
            t.slept,
            vec![Duration::from_millis(250), Duration::from_millis(500)]
        );
    }

    /// The reader a CRM with only `Retry-After` passes.
    fn plain(response: &Response) -> Option<RetryHint> {
        response.retry_after().map(RetryHint::After)
    }

    #[test]
    fn reads_give_up_after_the_configured_attempts() {
        let mut t =
            ScriptedTransport::new([response(502, ""), response(502, ""), response(502, "")]);
        let got = execute(&mut t, &Limits::default(), &read(), plain).unwrap();
        assert_eq!(
            got.response.status, 502,
            "the last answer is handed to the CRM mapper"
        );
        let mut t = ScriptedTransport::new(
            (0..3).map(|_| Err(TransportError::Interrupted("reset".into()))),
        );
        let err = execute(&mut t, &Limits::default(), &read(), plain).unwrap_err();
        assert!(
            matches!(&err, ToolError::Unavailable(m) if m.contains("3 attempts")),
            "{err:?}"
        );
    }

    #[test]
    fn retry_after_is_honoured_and_capped() {
        let mut limited = Response {
            status: 429,
            headers: vec![("Retry-After".into(), "2".into())],
            body: vec![],
        };
        let mut t = ScriptedTransport::new([Ok(limited.clone()), response(200, "{}")]);
        execute(&mut t, &Limits::default(), &read(), plain).unwrap();
        assert_eq!(t.slept, vec![Duration::from_secs(2)]);

        limited.headers[0].1 = "3600".into();
        let mut t = ScriptedTransport::new([Ok(limited)]);
        let got = execute(&mut t, &Limits::default(), &read(), plain).unwrap();
        assert_eq!(
            (got.response.status, t.sent.len()),
            (429, 1),
            "no hour-long wait inside a call"
        );
    }

    #[test]
    fn writes_are_never_resent() {
        for outcome in [
            Err(TransportError::Timeout(Duration::from_secs(30))),
            Err(TransportError::Interrupted("reset".into())),
            response(503, ""),
            response(500, ""),
        ] {
            let mut t = ScriptedTransport::new([outcome]);
            let err = execute(&mut t, &Limits::default(), &write(), plain).unwrap_err();
            assert!(matches!(err, ToolError::OutcomeUnknown(_)), "{err:?}");
            assert_eq!(t.sent.len(), 1);
            assert!(t.slept.is_empty());
        }
    }

    #[test]
    fn a_write_that_never_left_is_reported_as_safe_to_redo() {
        let mut t =
            ScriptedTransport::new([Err(TransportError::NotSent("connection refused".into()))]);
        let err = execute(&mut t, &Limits::default(), &write(), plain).unwrap_err();
        assert!(
            matches!(&err, ToolError::Unavailable(m) if m.contains("nothing was written")),
            "{err:?}"
        );
    }

    /// Every refusal the host can make, to a read and to a write: what the model is told. None
    /// is retried, none reads as "sent", and each says that nothing was sent.
    #[test]
    fn the_hosts_refusals_are_told_as_not_sent_for_reads_and_writes_alike() {
        let table: [(HostRefusal, &str); 4] = [
            (HostRefusal::Paced(Duration::from_secs(7)), "rate-limited"),
            (
                HostRefusal::HostUnavailable("the fleet's store does not answer".into()),
                "unavailable",
            ),
            (
                HostRefusal::Disconnected("HubSpot was disconnected for this workspace".into()),
                "not-connected",
            ),
            (
                HostRefusal::Denied("not this tenant's broker".into()),
                "forbidden",
            ),
        ];
        for (refusal, kind) in table {
            for request in [read(), write()] {
                let mut t = ScriptedTransport::new([Err(TransportError::Refused(refusal.clone()))]);
                let err = execute(&mut t, &Limits::default(), &request, plain).unwrap_err();
                assert_eq!(err.kind(), kind, "{refusal:?} {request:?}");
                assert_eq!(
                    (t.sent.len(), t.slept.len()),
                    (1, 0),
                    "tried once, never waited"
                );
                match &err {
                    ToolError::RateLimited(seconds) => assert_eq!(*seconds, Some(7)),
                    other => assert!(
                        other.to_string().contains("was not sent"),
                        "{refusal:?}: {other}"
                    ),
                }
            }
        }
    }

    #[test]
    fn oversize_responses_are_not_retried() {
        let mut t = ScriptedTransport::new([Err(TransportError::ResponseTooLarge { limit: 1024 })]);
        let err = execute(&mut t, &Limits::default(), &read(), plain).unwrap_err();
        assert!(
            matches!(&err, ToolError::CrmError(m) if m.to_string().contains("RESPONSE_TOO_LARGE"))
        );
        assert_eq!(t.sent.len(), 1);
    }
}
