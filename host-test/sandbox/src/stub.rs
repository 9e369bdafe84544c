//! A scripted stand-in for the broker, for tests: records every request it receives and
//! answers with scripted responses, delays and faults.

use bytes::Bytes;
use crm_host::backend::{Backend, BoxFuture};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wasmtime_wasi_http::Error as HttpError;

/// A request as the stub received it, after the host's hooks.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: http::Method,
    pub uri: http::Uri,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn body_json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("the request body is JSON")
    }
}

/// What the stub does with one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Answer with a status, headers and body.
    Respond {
        status: u16,
        headers: Vec<(String, String)>,
        body: Bytes,
    },
    /// Wait, then reply.
    Delay(Duration, Box<Reply>),
    /// Fail at the transport level.
    Fault(Fault),
}

/// Transport failures the stub can simulate.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    ConnectionRefused,
    ConnectionReset,
}

impl Reply {
    pub fn json(status: u16, body: serde_json::Value) -> Reply {
        Reply::Respond {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string().into(),
        }
    }

    pub fn with_header(self, name: &str, value: &str) -> Reply {
        match self {
            Reply::Respond {
                status,
                mut headers,
                body,
            } => {
                headers.push((name.into(), value.into()));
                Reply::Respond {
                    status,
                    headers,
                    body,
                }
            }
            other => other,
        }
    }
}

type Handler = dyn Fn(&Recorded) -> Reply + Send + Sync;

/// The stub: replies from a queue first, then from a handler; records everything.
#[derive(Clone)]
pub struct StubBackend {
    inner: Arc<StubInner>,
}

struct StubInner {
    queue: Mutex<VecDeque<Reply>>,
    handler: Option<Box<Handler>>,
    recorded: Mutex<Vec<Recorded>>,
}

impl StubBackend {
    /// Replies in order; a request beyond the script gets a 500.
    pub fn scripted(replies: impl IntoIterator<Item = Reply>) -> Self {
        Self::build(replies.into_iter().collect(), None)
    }

    /// Replies by a function of the request.
    pub fn with_handler(handler: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Self {
        Self::build(VecDeque::new(), Some(Box::new(handler)))
    }

    fn build(queue: VecDeque<Reply>, handler: Option<Box<Handler>>) -> Self {
        StubBackend {
            inner: Arc::new(StubInner {
                queue: Mutex::new(queue),
                handler,
                recorded: Mutex::default(),
            }),
        }
    }

    /// What this stub would answer to `request` (for composing stubs).
    pub fn reply_to(&self, request: &Recorded) -> Reply {
        match &self.inner.handler {
            Some(handler) => handler(request),
            None => Reply::json(500, serde_json::json!({"stub": "no handler"})),
        }
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.inner.recorded.lock().unwrap().clone()
    }
}

impl Backend for StubBackend {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<Result<http::Response<Bytes>, HttpError>> {
        let (parts, body) = request.into_parts();
        let recorded = Recorded {
            method: parts.method,
            uri: parts.uri,
            headers: parts.headers,
            body,
        };
        let reply = self
            .inner
            .queue
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| match &self.inner.handler {
                Some(handler) => handler(&recorded),
                None => Reply::json(500, serde_json::json!({"stub": "no scripted reply left"})),
            });
        self.inner.recorded.lock().unwrap().push(recorded);
        Box::pin(play(reply))
    }
}

async fn play(mut reply: Reply) -> Result<http::Response<Bytes>, HttpError> {
    loop {
        match reply {
            Reply::Delay(wait, next) => {
                tokio::time::sleep(wait).await;
                reply = *next;
            }
            Reply::Fault(Fault::ConnectionRefused) => return Err(HttpError::ConnectionRefused),
            Reply::Fault(Fault::ConnectionReset) => return Err(HttpError::ConnectionTerminated),
            Reply::Respond {
                status,
                headers,
                body,
            } => {
                let mut response = http::Response::builder().status(status);
                for (name, value) in headers {
                    response = response.header(name, value);
                }
                return response
                    .body(body)
                    .map_err(|e| HttpError::InternalError(Some(e.to_string())));
            }
        }
    }
}

/// A stub org answering one SOQL query over `total` generated Opportunity rows, `page_size`
/// per page, with Salesforce's paging (`nextRecordsUrl` `/query/{locator}-{offset}`). Used by
/// the paging tests and the memory benchmark.
pub fn query_pages(
    total: u64,
    page_size: u64,
) -> impl Fn(&Recorded) -> Reply + Send + Sync + 'static {
    const LOCATOR: &str = "01gRO0000016PIAYA2";
    move |request: &Recorded| {
        let path = request.uri.path();
        let version = path
            .split('/')
            .find(|s| s.starts_with('v') && s.ends_with(".0"))
            .unwrap_or("v65.0")
            .to_string();
        let offset: u64 = match path.rsplit_once(&format!("/query/{LOCATOR}-")) {
            Some((_, offset)) => offset.parse().unwrap_or(0),
            None => 0,
        };
        let end = (offset + page_size).min(total);
        let records: Vec<serde_json::Value> = (offset..end)
            .map(|n| {
                let id = format!("006{n:012}");
                serde_json::json!({
                    "attributes": {"type": "Opportunity", "url": format!("/services/data/{version}/sobjects/Opportunity/{id}")},
                    "Id": id, "Name": format!("Deal {n}"), "StageName": "Prospecting", "Amount": n * 10,
                    "CloseDate": "2026-11-30",
                    "Account": {"attributes": {"type": "Account", "url": "/x"}, "Name": "Acme Energy"}
                })
            })
            .collect();
        let mut page =
            serde_json::json!({"totalSize": total, "done": end >= total, "records": records});
        if end < total {
            page["nextRecordsUrl"] =
                format!("/services/data/{version}/query/{LOCATOR}-{end}").into();
        }
        Reply::json(200, page)
    }
}
