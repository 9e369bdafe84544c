//! A proxy in front of the CRM that a test controls, for chaos tests: it counts every request
//! (method, path, when it arrived, what became of it) and **holds** the requests a rule picks
//! until the test releases them (sends them on) or drops them.
//!
//! It listens on loopback over plain HTTP (the host and the component accept an `http://`
//! broker on loopback), so a host reaches it as its `proxy_base`; it forwards to the real
//! upstream, e.g. the sandbox broker over HTTPS trusting that broker's certificate
//! ([`HoldingProxy::to_https`]). A held request is delivered by a task of its own, not by the
//! client's connection: when the client is gone (a host killed with `kill -9` while its create
//! is held), a released request still reaches the upstream, which is the point: the CRM applies
//! a create whose host died. Its answer goes back to the client only if the client still waits.
//!
//! ```ignore
//! let proxy = HoldingProxy::to_https(&broker.url, &broker.cert).await?;
//! proxy.hold(RequestHead::is_create);           // proxy.url() is the hosts' proxy_base
//! let create = proxy.wait_held(1).await.remove(0); // the create is now held: kill the host
//! proxy.release(create.id);
//! assert!(proxy.settled(create.id).await.fate.delivered());
//! ```

use bytes::Bytes;
use crm_host::backend::serve::Server;
use crm_host::backend::tls::{TlsSetupError, read_certificates};
use crm_host::backend::{Backend, BoxFuture, NetworkBackend, NetworkOptions};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, watch};
use wasmtime_wasi_http::Error as HttpError;

/// A request's number at the proxy, in order of arrival from 0.
pub type RequestId = u64;

/// What a hold rule sees of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    pub method: http::Method,
    /// The path alone, without the query.
    pub path: String,
}

impl RequestHead {
    /// A record create in either CRM: `POST …/crm/v3/objects/{type}` (HubSpot, activities
    /// included) or `POST …/sobjects/{Object}` (Salesforce); not searches, merges or links.
    pub fn is_create(&self) -> bool {
        let mut segments = self.path.trim_end_matches('/').rsplit('/');
        let (_object, parent) = (segments.next(), segments.next());
        self.method == http::Method::POST && matches!(parent, Some("objects" | "sobjects"))
    }
}

/// What became of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// Held at the proxy: the upstream has not seen it.
    Held,
    /// On its way to the upstream (passed, or released).
    Sending,
    /// The upstream answered with this status.
    Delivered { status: u16 },
    /// Sending it failed (the error); the upstream may or may not have seen it.
    Failed(String),
    /// Dropped at the proxy: the upstream never saw it; the client got a 502.
    Dropped,
}

impl Fate {
    /// The upstream answered it.
    pub fn delivered(&self) -> bool {
        matches!(self, Fate::Delivered { .. })
    }

    /// Nothing more will happen to it.
    pub fn settled(&self) -> bool {
        matches!(
            self,
            Fate::Delivered { .. } | Fate::Failed(_) | Fate::Dropped
        )
    }
}

/// One request as the proxy saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub id: RequestId,
    pub head: RequestHead,
    pub arrived: Instant,
    /// Whether the hold rule picked it.
    pub held: bool,
    pub fate: Fate,
    /// The client's connection closed before its answer was handed back.
    pub client_gone: bool,
}

/// Why the proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("the upstream URL {0:?} is not an http(s) origin")]
    Upstream(String),
    #[error(transparent)]
    Tls(#[from] TlsSetupError),
    #[error("listening on loopback: {0}")]
    Listen(#[from] std::io::Error),
}

/// What the test decided for a held request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    Release,
    Drop,
}

type Rule = dyn Fn(&RequestHead) -> bool + Send + Sync;

/// The requests seen and the decisions pending: the proxy's whole state, behind one lock.
#[derive(Default)]
struct Ledger {
    seen: Vec<Seen>,
    rule: Option<Arc<Rule>>,
    waiting: HashMap<RequestId, oneshot::Sender<Decision>>,
}

impl Ledger {
    /// Records an arrival; when the rule holds it, where the test's decision will come (made
    /// under the same lock, so a request seen held can always be released).
    fn arrive(
        &mut self,
        head: RequestHead,
        now: Instant,
    ) -> (RequestId, Option<oneshot::Receiver<Decision>>) {
        let id = self.seen.len() as RequestId;
        let held = self.rule.as_ref().is_some_and(|rule| rule(&head));
        let fate = if held { Fate::Held } else { Fate::Sending };
        self.seen.push(Seen {
            id,
            head,
            arrived: now,
            held,
            fate,
            client_gone: false,
        });
        let decision = held.then(|| {
            let (sender, receiver) = oneshot::channel();
            self.waiting.insert(id, sender);
            receiver
        });
        (id, decision)
    }

    fn get(&mut self, id: RequestId) -> Option<&mut Seen> {
        self.seen.get_mut(usize::try_from(id).ok()?)
    }
}

/// The shared state and the upstream; the [`Backend`] the loopback server runs.
struct Holding {
    ledger: Mutex<Ledger>,
    /// Bumped on every change, for the waits.
    changes: watch::Sender<u64>,
    upstream_base: String,
    upstream: Arc<dyn Backend>,
}

impl Holding {
    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn update(&self, id: RequestId, change: impl FnOnce(&mut Seen)) {
        if let Some(seen) = self.ledger().get(id) {
            change(seen);
        }
        self.changes.send_modify(|n| *n += 1);
    }

    async fn wait_for<T>(&self, mut found: impl FnMut(&[Seen]) -> Option<T>) -> T {
        let mut changes = self.changes.subscribe();
        loop {
            if let Some(value) = found(&self.ledger().seen) {
                return value;
            }
            // The sender lives as long as `self`.
            let _ = changes.changed().await;
        }
    }

    fn decide(&self, id: RequestId, decision: Decision) -> bool {
        let sender = self.ledger().waiting.remove(&id);
        sender.is_some_and(|sender| sender.send(decision).is_ok())
    }

    /// The request as the upstream gets it: its URL on the upstream, hop-by-hop headers gone.
    fn upstream_request(
        &self,
        mut request: http::Request<Bytes>,
    ) -> Result<http::Request<Bytes>, HttpError> {
        let path = request
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_string();
        *request.uri_mut() = format!("{}{path}", self.upstream_base)
            .parse()
            .map_err(|_| HttpError::HttpRequestUriInvalid)?;
        strip_hop_by_hop(request.headers_mut());
        request.headers_mut().remove(http::header::HOST);
        Ok(request)
    }

    /// Sends a request on once it may go (at once, or when released), whatever became of its
    /// client in the meantime; the answer to `reply` if anyone still waits for it.
    async fn deliver(
        self: Arc<Self>,
        id: RequestId,
        request: http::Request<Bytes>,
        decision: Option<oneshot::Receiver<Decision>>,
        reply: oneshot::Sender<Result<http::Response<Bytes>, HttpError>>,
    ) {
        if let Some(decision) = decision {
            // No decision (the proxy gone) is a drop too.
            if decision.await.unwrap_or(Decision::Drop) == Decision::Drop {
                self.update(id, |seen| seen.fate = Fate::Dropped);
                let _ = reply.send(Err(HttpError::InternalError(Some(
                    "dropped by the holding proxy".into(),
                ))));
                return;
            }
            self.update(id, |seen| seen.fate = Fate::Sending);
        }
        let answer = match self.upstream_request(request) {
            Ok(request) => self.upstream.send(request).await,
            Err(err) => Err(err),
        };
        let fate = match &answer {
            Ok(response) => Fate::Delivered {
                status: response.status().as_u16(),
            },
            Err(err) => Fate::Failed(err.to_string()),
        };
        self.update(id, |seen| seen.fate = fate);
        let _ = reply.send(answer.map(|mut response| {
            strip_hop_by_hop(response.headers_mut());
            response
        }));
    }
}

/// Headers that describe one connection, not the message (RFC 9110 §7.6.1), and the length the
/// server works out again from the whole body it sends.
fn strip_hop_by_hop(headers: &mut http::HeaderMap) {
    for name in [
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
    ] {
        headers.remove(name);
    }
}

/// Marks a request's client as gone when the server drops its wait (the connection closed).
struct ClientWait {
    holding: Arc<Holding>,
    id: RequestId,
    answered: bool,
}

impl Drop for ClientWait {
    fn drop(&mut self) {
        if !self.answered {
            self.holding.update(self.id, |seen| seen.client_gone = true);
        }
    }
}

/// The proxy's side of the loopback server: records, then hands the request to its own task.
struct ProxyBackend(Arc<Holding>);

impl Backend for ProxyBackend {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<Result<http::Response<Bytes>, HttpError>> {
        let holding = self.0.clone();
        let head = RequestHead {
            method: request.method().clone(),
            path: request.uri().path().to_string(),
        };
        let (id, decision) = holding.ledger().arrive(head, Instant::now());
        holding.changes.send_modify(|n| *n += 1);
        let (reply, answer) = oneshot::channel();
        tokio::spawn(holding.clone().deliver(id, request, decision, reply));
        let wait = ClientWait {
            holding,
            id,
            answered: false,
        };
        Box::pin(async move {
            // The whole guard moves in (the block would otherwise capture just the flag).
            let mut wait = wait;
            let answer = answer.await;
            wait.answered = true;
            answer.unwrap_or_else(|_| {
                Err(HttpError::InternalError(Some(
                    "the holding proxy stopped".into(),
                )))
            })
        })
    }
}

/// A running proxy; dropping it stops listening and drops what it holds.
pub struct HoldingProxy {
    holding: Arc<Holding>,
    server: Server,
}

impl HoldingProxy {
    /// Listens on `127.0.0.1` (a free port) and sends requests on to `upstream_base`
    /// (`scheme://host:port`) through `upstream`. Must be called inside a tokio runtime.
    pub async fn start(
        upstream_base: &str,
        upstream: Arc<dyn Backend>,
    ) -> Result<HoldingProxy, ProxyError> {
        let base = url::Url::parse(upstream_base)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https") && url.has_host())
            .ok_or_else(|| ProxyError::Upstream(upstream_base.into()))?;
        let holding = Arc::new(Holding {
            ledger: Mutex::default(),
            changes: watch::Sender::new(0),
            upstream_base: base.as_str().trim_end_matches('/').to_string(),
            upstream,
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let server = Server::start(listener, Arc::new(ProxyBackend(holding.clone())), None)?;
        Ok(HoldingProxy { holding, server })
    }

    /// A proxy in front of an HTTPS upstream whose certificate (PEM) is `cert`, such as
    /// `crm-sandbox sandbox --listen … --cert-out <cert>`.
    pub async fn to_https(upstream_base: &str, cert: &Path) -> Result<HoldingProxy, ProxyError> {
        let mut options = NetworkOptions::new(64 << 20, Duration::from_secs(30));
        options.extra_roots = read_certificates(cert)?;
        let network = NetworkBackend::new(options)?;
        Self::start(upstream_base, Arc::new(network)).await
    }

    /// `http://127.0.0.1:PORT`: the `proxy_base` to give the hosts.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// Holds every later request `rule` picks (requests already passed are not affected).
    pub fn hold(&self, rule: impl Fn(&RequestHead) -> bool + Send + Sync + 'static) {
        self.holding.ledger().rule = Some(Arc::new(rule));
    }

    /// Holds nothing more; requests held so far stay held until released or dropped.
    pub fn hold_nothing(&self) {
        self.holding.ledger().rule = None;
    }

    /// Every request so far, in order of arrival.
    pub fn requests(&self) -> Vec<Seen> {
        self.holding.ledger().seen.clone()
    }

    /// How many requests with this method and path arrived (held or not).
    pub fn count(&self, method: &http::Method, path: &str) -> usize {
        let ledger = self.holding.ledger();
        let same = |s: &&Seen| s.head.method == method && s.head.path == path;
        ledger.seen.iter().filter(same).count()
    }

    /// The requests held now.
    pub fn held(&self) -> Vec<Seen> {
        let ledger = self.holding.ledger();
        let held = ledger.seen.iter().filter(|s| s.fate == Fate::Held);
        held.cloned().collect()
    }

    /// Waits until at least `n` requests are held now, and returns them (with when each
    /// arrived). Wrap it in a timeout.
    pub async fn wait_held(&self, n: usize) -> Vec<Seen> {
        self.holding
            .wait_for(|seen| {
                let held: Vec<Seen> = seen
                    .iter()
                    .filter(|s| s.fate == Fate::Held)
                    .cloned()
                    .collect();
                (held.len() >= n).then_some(held)
            })
            .await
    }

    /// Waits until `id` is delivered, failed or dropped, and returns its record.
    pub async fn settled(&self, id: RequestId) -> Seen {
        self.wait_until(id, |seen| seen.fate.settled()).await
    }

    /// Waits until `id`'s record satisfies `done`, and returns it (e.g. its client gone).
    pub async fn wait_until(&self, id: RequestId, done: impl Fn(&Seen) -> bool) -> Seen {
        self.holding
            .wait_for(|seen| {
                let record = seen.get(usize::try_from(id).ok()?)?;
                done(record).then(|| record.clone())
            })
            .await
    }

    /// Sends a held request on to the upstream; false when `id` is not held.
    pub fn release(&self, id: RequestId) -> bool {
        self.holding.decide(id, Decision::Release)
    }

    /// Drops a held request: the upstream never sees it, its client (if any) gets a 502.
    pub fn drop_held(&self, id: RequestId) -> bool {
        self.holding.decide(id, Decision::Drop)
    }

    /// Releases every request held now; how many.
    pub fn release_all(&self) -> usize {
        let held: Vec<RequestId> = self.held().iter().map(|s| s.id).collect();
        held.into_iter().filter(|id| self.release(*id)).count()
    }
}

impl Drop for HoldingProxy {
    /// Drops what is still held, so no delivery task waits for ever.
    fn drop(&mut self) {
        let waiting = std::mem::take(&mut self.holding.ledger().waiting);
        for sender in waiting.into_values() {
            let _ = sender.send(Decision::Drop);
        }
    }
}

#[cfg(test)]
mod tests;
