//! What HubSpot's answers say about when to try again: `Retry-After`, and the
//! `X-HubSpot-RateLimit-*` headers (a spent rolling window frees up within
//! `-Interval-Milliseconds`; a spent daily allowance does not free up today). Read once per
//! answer by the retry layer, which hands the hint on to the error mapper.

use crate::http::{Response, RetryHint};
use std::time::Duration;

/// HubSpot's retry hint for an answer, if it gives one.
pub fn hint(response: &Response) -> Option<RetryHint> {
    if let Some(wait) = response.retry_after() {
        return Some(RetryHint::After(wait));
    }
    let number = |name: &str| {
        response
            .header(name)
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    if number("x-hubspot-ratelimit-daily-remaining") == Some(0) {
        return Some(RetryHint::NotSoon);
    }
    if number("x-hubspot-ratelimit-remaining") == Some(0)
        || number("x-hubspot-ratelimit-secondly-remaining") == Some(0)
    {
        let interval = number("x-hubspot-ratelimit-interval-milliseconds").unwrap_or(1000);
        return Some(RetryHint::After(Duration::from_millis(interval)));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Limits;
    use crate::error::Crm;
    use crate::http::{Request, TransportError};
    use crate::retry::execute;
    use crate::retry::tests::{ScriptedTransport, response};
    use url::Url;

    fn read() -> Request {
        Request::read(
            Crm::Hubspot,
            Url::parse("https://broker.example.com/r").unwrap(),
        )
    }

    fn with_headers(status: u16, headers: &[(&str, &str)]) -> Result<Response, TransportError> {
        let mut r = response(status, "{}")?;
        r.headers
            .extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        Ok(r)
    }

    /// HubSpot's rate-limit headers (usage details guide: `X-HubSpot-RateLimit-Remaining`,
    /// `-Interval-Milliseconds`, `-Daily-Remaining`).
    #[test]
    fn hubspot_rate_limit_headers_set_the_wait() {
        let spent = [
            ("x-hubspot-ratelimit-max", "190"),
            ("x-hubspot-ratelimit-remaining", "0"),
            ("x-hubspot-ratelimit-interval-milliseconds", "2000"),
        ];
        let mut t = ScriptedTransport::new([with_headers(429, &spent), response(200, "{}")]);
        let limits = Limits {
            max_retry_wait: Duration::from_secs(5),
            ..Limits::default()
        };
        let answer = execute(&mut t, &limits, &read(), hint).unwrap();
        assert_eq!(answer.response.status, 200);
        assert_eq!(t.slept, vec![Duration::from_millis(2000)]);

        // A spent daily allowance is reported at once: waiting seconds would not help.
        let daily = [("x-hubspot-ratelimit-daily-remaining", "0")];
        let mut t = ScriptedTransport::new([with_headers(429, &daily)]);
        let answer = execute(&mut t, &limits, &read(), hint).unwrap();
        assert_eq!(answer.response.status, 429);
        assert_eq!(
            answer.hint,
            Some(RetryHint::NotSoon),
            "handed on, not read again"
        );
        assert_eq!(t.sent.len(), 1);
        assert!(t.slept.is_empty());

        // A window longer than we may wait is reported, not slept through.
        let long = [
            ("x-hubspot-ratelimit-remaining", "0"),
            ("x-hubspot-ratelimit-interval-milliseconds", "60000"),
        ];
        let mut t = ScriptedTransport::new([with_headers(429, &long)]);
        let answer = execute(&mut t, &limits, &read(), hint).unwrap();
        assert_eq!(answer.response.status, 429);
        assert_eq!(answer.hint, Some(RetryHint::After(Duration::from_secs(60))));
        assert!(t.slept.is_empty());
    }
}
