//! Reading a request body against a deadline (issue 35).
//!
//! A request holds its connection and its principal's share while its body arrives, so a body
//! sent a byte a second would hold them for a day. As Apache's mod_reqtimeout does
//! (`body=20,minrate=500`), a body must begin to arrive and finish within `timeout`, extended by
//! one second for every `min_bytes_per_second` bytes received: any real link, however slow,
//! sends faster than that, and a trickle is cut off with 408. The deadline covers reading the
//! request only; the answer (an SSE stream, a long call) is never timed by it.

use super::{Body, plain};
use ::http::{Response, StatusCode, header};
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use std::time::Duration;
use tokio::time::Instant;

/// How fast a request body must arrive.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimits {
    /// Time for a body of nothing; every `min_bytes_per_second` bytes received add a second.
    pub timeout: Duration,
    /// The slowest average rate tolerated once the first `timeout` is spent.
    pub min_bytes_per_second: u64,
}

impl Default for BodyLimits {
    /// 10 s (the header timeout's, as an MCP body is a few kilobytes sent with its headers)
    /// and mod_reqtimeout's 500 bytes a second (4 kbit/s, below any mobile link).
    fn default() -> Self {
        BodyLimits {
            timeout: Duration::from_secs(10),
            min_bytes_per_second: 500,
        }
    }
}

impl BodyLimits {
    /// When a body begun at `started` must be complete, having `received` bytes so far.
    pub fn deadline(&self, started: Instant, received: usize) -> Instant {
        let rate = self.min_bytes_per_second.max(1) as f64;
        let earned = Duration::from_secs_f64((received as f64 / rate).min(86_400.0));
        started + self.timeout + earned
    }
}

/// Why a body was not read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("the request body is over {max} bytes")]
    TooLarge { max: usize },
    #[error(
        "the request body came too slowly ({received} bytes in {} s): a body must arrive \
         within {} s, and then at {rate} bytes a second or faster",
        waited.as_secs(), timeout.as_secs()
    )]
    TooSlow {
        received: usize,
        waited: Duration,
        timeout: Duration,
        rate: u64,
    },
    #[error("the request body was broken off: {0}")]
    Broken(String),
}

impl BodyError {
    /// The answer: 413, 408 or 400, and the connection closed (the rest of the body is not
    /// read, so the connection cannot carry another request).
    pub fn response(&self) -> Response<Body> {
        let status = match self {
            BodyError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            BodyError::TooSlow { .. } => StatusCode::REQUEST_TIMEOUT,
            BodyError::Broken(_) => StatusCode::BAD_REQUEST,
        };
        let mut response = plain(status, &self.to_string());
        response.headers_mut().insert(
            header::CONNECTION,
            header::HeaderValue::from_static("close"),
        );
        response
    }
}

/// Reads `body` whole: at most `max` bytes, before the deadline of `limits`.
pub async fn read<B>(mut body: B, max: usize, limits: BodyLimits) -> Result<Bytes, BodyError>
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    // A declared length over the cap is refused before anything is read.
    if body.size_hint().lower() > max as u64 {
        return Err(BodyError::TooLarge { max });
    }
    let started = Instant::now();
    let mut collected = BytesMut::new();
    loop {
        let deadline = limits.deadline(started, collected.len());
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) => {
                return Err(BodyError::TooSlow {
                    received: collected.len(),
                    waited: started.elapsed(),
                    timeout: limits.timeout,
                    rate: limits.min_bytes_per_second,
                });
            }
            Ok(None) => return Ok(collected.freeze()),
            Ok(Some(Err(e))) => return Err(BodyError::Broken(e.to_string())),
            Ok(Some(Ok(frame))) => frame,
        };
        if let Ok(data) = frame.into_data() {
            if collected.len() + data.len() > max {
                return Err(BodyError::TooLarge { max });
            }
            collected.extend_from_slice(&data);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::body::Frame;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use tokio::sync::mpsc;

    /// A body whose chunks arrive when the test sends them.
    struct Trickle(mpsc::Receiver<Bytes>);

    impl hyper::body::Body for Trickle {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            self.0.poll_recv(cx).map(|c| c.map(|c| Ok(Frame::data(c))))
        }
    }

    fn limits(timeout_ms: u64, rate: u64) -> BodyLimits {
        BodyLimits {
            timeout: Duration::from_millis(timeout_ms),
            min_bytes_per_second: rate,
        }
    }

    #[test]
    fn every_rate_of_bytes_received_earns_a_second() {
        let limits = BodyLimits::default();
        let t0 = Instant::now();
        assert_eq!(limits.deadline(t0, 0), t0 + Duration::from_secs(10));
        assert_eq!(limits.deadline(t0, 1_000), t0 + Duration::from_secs(12));
        let whole = limits.deadline(t0, 4 << 20);
        assert!(whole > t0 + Duration::from_secs(8_000), "4 MiB at 500 B/s");
    }

    #[tokio::test]
    async fn a_body_that_arrives_in_time_is_read_whole() {
        let (tx, rx) = mpsc::channel(4);
        let sending = tokio::spawn(async move {
            for part in ["{\"a\":", "1}"] {
                tx.send(Bytes::from(part)).await.unwrap();
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        let body = read(Trickle(rx), 1024, limits(500, 500)).await.unwrap();
        assert_eq!(&body[..], b"{\"a\":1}");
        sending.await.unwrap();
    }

    #[tokio::test]
    async fn a_trickle_is_cut_off_at_the_deadline() {
        let (tx, rx) = mpsc::channel(4);
        let trickling = tokio::spawn(async move {
            // A byte every 50 ms: 20 bytes a second, under the 1,000 asked.
            while tx.send(Bytes::from_static(b"x")).await.is_ok() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
        let started = std::time::Instant::now();
        let err = read(Trickle(rx), 100_000, limits(300, 1_000))
            .await
            .unwrap_err();
        let waited = started.elapsed();
        assert!(matches!(err, BodyError::TooSlow { .. }), "{err}");
        assert!(
            waited >= Duration::from_millis(300) && waited < Duration::from_secs(2),
            "{waited:?}"
        );
        assert_eq!(err.response().status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(err.response().headers()[header::CONNECTION], "close");
        trickling.abort();
    }

    #[tokio::test]
    async fn a_body_that_never_starts_is_cut_off_too() {
        let (_tx, rx) = mpsc::channel(1);
        let err = read(Trickle(rx), 10, limits(100, 500)).await.unwrap_err();
        assert!(
            err.to_string().contains("0 bytes"),
            "the message says what came: {err}"
        );
    }

    #[tokio::test]
    async fn a_body_over_the_cap_is_refused() {
        let (tx, rx) = mpsc::channel(4);
        tx.send(Bytes::from(vec![b'x'; 8])).await.unwrap();
        tx.send(Bytes::from(vec![b'x'; 8])).await.unwrap();
        drop(tx);
        let err = read(Trickle(rx), 10, limits(500, 500)).await.unwrap_err();
        assert!(matches!(err, BodyError::TooLarge { max: 10 }));
        assert_eq!(err.response().status(), StatusCode::PAYLOAD_TOO_LARGE);
        let declared = http_body_util::Full::new(Bytes::from(vec![b'x'; 11]));
        let err = read(declared, 10, limits(500, 500)).await.unwrap_err();
        assert!(matches!(err, BodyError::TooLarge { .. }), "by its length");
    }
}
