//! The network backend's figures, against loopback servers this bench starts itself (plain
//! HTTP, then HTTPS with a certificate made here), answering Salesforce-shaped JSON:
//!
//! - connections opened for 2,000 calls (the server's count and the backend's), which pooling
//!   should keep at most the pool size;
//! - the raw floor: p50/p99 of a keep-alive GET on one hyper connection, for a record and for
//!   a 200-record query page;
//! - `crmb_get_record` and a 200-record `crmb_run_soql_query` through the whole host with the
//!   audit trail written to a file, and the latency added over the raw floor (host p50 − raw p50).

use bytes::Bytes;
use crm_host::backend::serve::Server;
use crm_host::backend::tls::{SelfSigned, client_config};
use crm_host::backend::{Backend, BoxFuture, NetworkBackend, NetworkOptions};
use crm_host::{AuditLog, CallRequest, Host, HostLimits, Runtime, TenantSpec};
use crm_sandbox::stub::{Recorded, Reply};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

const CALLS: usize = 2000;
const WARM_UP: usize = 100;
const POOL: usize = 8;
const CREDENTIAL: &str = "bench-credential";
const RECORD_PATH: &str = "/sdk/proxy/salesforce/services/data/v65.0/sobjects/Account/001000000000001AAA?fields=Name,Industry";
const QUERY_PATH: &str = "/sdk/proxy/salesforce/services/data/v65.0/query?q=SELECT+Id,Name,StageName,Amount,CloseDate,Account.Name+FROM+Opportunity";

/// Salesforce-shaped answers: a 200-record query page for queries, an account otherwise.
struct Salesforce;

impl Backend for Salesforce {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<Result<http::Response<Bytes>, wasmtime_wasi_http::Error>> {
        let (parts, body) = request.into_parts();
        let recorded = Recorded {
            method: parts.method,
            uri: parts.uri,
            headers: parts.headers,
            body,
        };
        let reply = if recorded.uri.path().contains("/query") {
            crm_sandbox::stub::query_pages(200, 2000)(&recorded)
        } else {
            let id = recorded.uri.path().rsplit('/').next().unwrap_or_default();
            Reply::json(
                200,
                json!({"attributes": {"type": "Account", "url": "/x"}, "Id": id, "Name": "Acme", "Industry": "Energy"}),
            )
        };
        let Reply::Respond {
            status,
            headers,
            body,
        } = reply
        else {
            unreachable!("only responses")
        };
        let mut response = http::Response::builder().status(status);
        for (name, value) in headers {
            response = response.header(name, value);
        }
        Box::pin(async move { Ok(response.body(body).expect("a valid response")) })
    }
}

/// Prints the network figures over plain HTTP and over HTTPS. Measured from `block_on`: from
/// a worker task the raw floor drops to about 9 µs but the host's call rises to about 240 µs
/// (the component's fiber and the pooled client's connection task then share the two workers),
/// so this is the fairer of the two for the comparison.
pub async fn figures(wasm: &[u8]) {
    for tls in [false, true] {
        one_scheme(wasm, tls).await;
    }
}

async fn one_scheme(wasm: &[u8], tls: bool) {
    let cert = SelfSigned::generate(&["127.0.0.1"]).expect("a certificate");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server_tls = tls.then(|| cert.server_config().unwrap());
    let server = Server::start(listener, Arc::new(Salesforce), server_tls).unwrap();
    let scheme = if tls { "HTTPS" } else { "HTTP" };

    // The raw floor: one keep-alive HTTP/1.1 connection, no host, no component.
    let mut raw = RawClient::connect(&server, tls.then(|| cert.cert_der())).await;
    let raw_record = raw.time(RECORD_PATH).await;
    let raw_query = raw.time(QUERY_PATH).await;
    drop(raw);

    // The whole host, through the pooled network backend, audit written to a file. HTTP/1.1
    // like the raw client, so the difference is the host's own.
    let mut options = NetworkOptions::new(64 << 20, Duration::from_secs(30));
    options.extra_roots = vec![cert.cert_der()];
    options.max_connections_per_origin = POOL;
    options.http2 = false;
    let backend = Arc::new(NetworkBackend::new(options).unwrap());
    let audit_path = std::env::temp_dir().join(format!(
        "crm-bench-network-audit-{}-{scheme}.jsonl",
        std::process::id()
    ));
    let audit = AuditLog::to_file(&audit_path).unwrap();
    let runtime = Arc::new(Runtime::new(HostLimits::default()).unwrap());
    let plugin = runtime.load(wasm).unwrap();
    let host = Host::new(runtime, backend.clone(), audit);
    host.add_tenant(
        TenantSpec {
            tenant_id: "bench".into(),
            proxy_base: server.url().parse().unwrap(),
            credential: crm_host::credential::Credential::new(CREDENTIAL),
            settings: vec![("CRM_B_API_VERSION".into(), "65.0".into())],
            results_dir: None,
            mappings: crm_host::tenant_db::DbLocation::Memory,
        },
        plugin,
    )
    .unwrap();
    let before = server.connections_accepted();
    let record = time_calls(
        &host,
        "crmb_get_record",
        json!({"object": "Account", "record_id": "001000000000001AAA", "fields": ["Name", "Industry"]}),
    )
    .await;
    println!(
        "network ({scheme}, pool {POOL}): {} connections accepted by the server for {} crmb_get_record calls ({} opened by the backend)",
        server.connections_accepted() - before,
        CALLS + WARM_UP,
        backend.connections_opened()
    );
    let query = time_calls(
        &host,
        "crmb_run_soql_query",
        json!({"query": "SELECT Id, Name, StageName, Amount, CloseDate, Account.Name FROM Opportunity", "max_records": 200}),
    )
    .await;
    for (label, raw, host) in [
        ("crmb_get_record", raw_record, record),
        ("crmb_run_soql_query (200 records)", raw_query, query),
    ] {
        println!(
            "network ({scheme}): {label}: raw keep-alive GET p50 {:?} p99 {:?}; host with audit p50 {:?} p99 {:?}; added p50 {:?}",
            raw.0,
            raw.1,
            host.0,
            host.1,
            host.0.saturating_sub(raw.0)
        );
    }
    println!(
        "network ({scheme}): {} connections accepted in all, after {} calls",
        server.connections_accepted(),
        2 * (CALLS + WARM_UP)
    );
    let _ = std::fs::remove_file(&audit_path);
}

/// p50 and p99 of `CALLS` calls of one tool through the host, after a warm-up.
async fn time_calls(host: &Host, tool: &str, input: serde_json::Value) -> (Duration, Duration) {
    let request = CallRequest {
        tenant_id: "bench".into(),
        user_id: "bench-user".into(),
        granted_scopes: vec![],
        instance_url: Some("https://acme.my.salesforce.com".into()),
        tool: tool.into(),
        input: input.to_string(),
    };
    let mut samples = Vec::with_capacity(CALLS);
    for i in 0..WARM_UP + CALLS {
        let started = Instant::now();
        let out = host.call(request.clone()).await;
        if let Err(err) = &out {
            panic!("{tool}: {err}");
        }
        if i >= WARM_UP {
            samples.push(started.elapsed());
        }
    }
    p50_p99(samples)
}

fn p50_p99(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let at = |p: usize| samples[(samples.len() * p / 100).min(samples.len() - 1)];
    (at(50), at(99))
}

/// A bare hyper HTTP/1.1 client on one keep-alive connection.
struct RawClient {
    sender: hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    authority: String,
}

impl RawClient {
    async fn connect(
        server: &Server,
        trust: Option<rustls::pki_types::CertificateDer<'static>>,
    ) -> Self {
        let tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        let authority = server.addr().to_string();
        let sender = match trust {
            None => handshake(tcp).await,
            Some(cert) => {
                let config = client_config(&[cert], false).unwrap();
                let name = rustls::pki_types::ServerName::from(server.addr().ip());
                let stream = tokio_rustls::TlsConnector::from(config)
                    .connect(name, tcp)
                    .await
                    .unwrap();
                handshake(stream).await
            }
        };
        RawClient { sender, authority }
    }

    async fn get(&mut self, path: &str) -> Bytes {
        self.sender.ready().await.unwrap();
        let request = http::Request::get(path)
            .header(http::header::HOST, &self.authority)
            .header("accept", "application/json")
            .header("x-proxy-credential", CREDENTIAL)
            .body(Empty::new())
            .unwrap();
        let response = self.sender.send_request(request).await.unwrap();
        response.into_body().collect().await.unwrap().to_bytes()
    }

    async fn time(&mut self, path: &str) -> (Duration, Duration) {
        let mut samples = Vec::with_capacity(CALLS);
        for i in 0..WARM_UP + CALLS {
            let started = Instant::now();
            let body = self.get(path).await;
            assert!(!body.is_empty());
            if i >= WARM_UP {
                samples.push(started.elapsed());
            }
        }
        p50_p99(samples)
    }
}

async fn handshake<S>(stream: S) -> hyper::client::conn::http1::SendRequest<Empty<Bytes>>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    sender
}
