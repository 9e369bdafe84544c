//! The real network path: the host's network backend (the one a real broker uses) against
//! HTTPS servers on loopback, started here on 127.0.0.1:0 with certificates made for the test.
//! Real sockets, real TLS, real credentials on the wire; nothing beyond loopback.

use crate::fixtures::*;
use crm_host::backend::serve::Server;
use crm_host::backend::tls::SelfSigned;
use crm_host::backend::{Backend, BoxFuture, NetworkBackend, NetworkOptions};
use crm_host::{AuditLog, CallRequest, Host, TenantSpec};
use crm_sandbox::SandboxCrm;
use crm_sandbox::stub::{Recorded, Reply, StubBackend};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use url::Url;
use wasmtime_wasi_http::Error as HttpError;

/// A sandbox Salesforce account and HubSpot deals search, as the demo runs them.
const ACME_ACCOUNT: &str = "0015gA000000001ABA";

fn loopback_cert() -> SelfSigned {
    SelfSigned::generate(&["127.0.0.1"]).unwrap()
}

/// Serves `backend` over HTTPS on a free loopback port, with a certificate made for it.
async fn https_server(backend: Arc<dyn Backend>) -> (Server, SelfSigned) {
    let cert = loopback_cert();
    let server = serve_with(backend, &cert).await;
    (server, cert)
}

async fn serve_with(backend: Arc<dyn Backend>, cert: &SelfSigned) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    Server::start(listener, backend, Some(cert.server_config().unwrap())).unwrap()
}

/// Options trusting `cert`, with short timeouts so failure tests end quickly.
fn options_trusting(cert: &SelfSigned) -> NetworkOptions {
    let mut options = NetworkOptions::new(1 << 20, Duration::from_secs(10));
    options.extra_roots = vec![cert.cert_der()];
    options
}

fn network(options: NetworkOptions) -> Arc<NetworkBackend> {
    Arc::new(NetworkBackend::new(options).unwrap())
}

fn get(url: &str, credential: &str) -> http::Request<bytes::Bytes> {
    http::Request::get(url)
        .header("x-proxy-credential", credential)
        .body(bytes::Bytes::new())
        .unwrap()
}

/// A host whose tenants all go through `backend`.
fn host_over(backend: Arc<dyn Backend>, tenants: Vec<TenantSpec>) -> Host {
    let host = Host::new(runtime(), backend, AuditLog::discard());
    for spec in tenants {
        host.add_tenant(spec, plugin()).unwrap();
    }
    host
}

/// The sandbox tenant, pointed at a loopback server instead of the in-process sandbox.
fn sandbox_tenant_at(tenant: &str, url: &str) -> TenantSpec {
    let mut spec = SandboxCrm::tenant_spec(tenant);
    spec.proxy_base = Url::parse(url).unwrap();
    spec
}

fn as_tenant(tenant: &str, tool: &str, input: Value) -> CallRequest {
    CallRequest {
        tenant_id: tenant.into(),
        user_id: "demo-user".into(),
        granted_scopes: ALL_SCOPES.iter().map(|s| s.to_string()).collect(),
        instance_url: Some(SandboxCrm::instance_url(tenant)),
        tool: tool.into(),
        input: input.to_string(),
    }
}

fn sample_calls() -> Vec<(&'static str, Value)> {
    vec![
        (
            "crmb_get_record",
            json!({"object": "Account", "record_id": ACME_ACCOUNT, "fields": ["Name", "Industry"]}),
        ),
        (
            "crmb_run_soql_query",
            json!({"query": "SELECT Id, Name FROM Account ORDER BY Name", "max_records": 5}),
        ),
        (
            "crma_search_records",
            json!({"object_type": "deals", "properties": ["dealname", "amount"], "limit": 3}),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_over_loopback_https_answers_as_the_in_process_sandbox() {
    let (server, cert) = https_server(Arc::new(SandboxCrm::new())).await;
    let over_tls = host_over(
        network(options_trusting(&cert)),
        vec![sandbox_tenant_at("acme", &server.url())],
    );
    let in_process = host_over(
        Arc::new(SandboxCrm::new()),
        vec![SandboxCrm::tenant_spec("acme")],
    );
    for (tool, input) in sample_calls() {
        let remote = ok(over_tls.call(as_tenant("acme", tool, input.clone())).await);
        let local = ok(in_process.call(as_tenant("acme", tool, input)).await);
        assert_eq!(remote, local, "{tool}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_certificate_fails_and_nothing_is_answered() {
    let stub = record_stub(Duration::ZERO);
    let (server, _cert) = https_server(Arc::new(stub.clone())).await;
    // Trusts another certificate, and the public roots: not the server's.
    let backend = network(options_trusting(&loopback_cert()));
    let url = format!("{}/sdk/x", server.url());
    let err = backend.send(get(&url, "cred")).await.unwrap_err();
    assert!(matches!(err, HttpError::TlsCertificateError), "{err:?}");

    let host = host_over(
        backend.clone(),
        vec![sf_tenant("t1", &server.url(), "cred-one", &[])],
    );
    let (_kind, message) = tool_error(host.call(get_account("t1")).await);
    assert!(message.contains("TlsCertificateError"), "{message}");
    assert!(stub.requests().is_empty(), "the server answered nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_for_another_name_fails() {
    let stub = record_stub(Duration::ZERO);
    let other = SelfSigned::generate(&["broker.example.com"]).unwrap();
    let server = serve_with(Arc::new(stub.clone()), &other).await;
    // The certificate is trusted, but it is not for 127.0.0.1.
    let backend = network(options_trusting(&other));
    let err = backend
        .send(get(&format!("{}/sdk/x", server.url()), "cred"))
        .await
        .unwrap_err();
    assert!(matches!(err, HttpError::TlsCertificateError), "{err:?}");
    assert!(stub.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_credential_travels_on_the_wire_and_the_guest_never_sees_it() {
    // The server even echoes the credential back in a response header.
    let stub = StubBackend::with_handler(|r: &Recorded| {
        let echoed = r
            .header("x-proxy-credential")
            .unwrap_or_default()
            .to_string();
        Reply::json(
            200,
            json!({"attributes": {"type": "Account"}, "Id": ACCOUNT_ID, "Name": "Acme"}),
        )
        .with_header("x-proxy-credential", &echoed)
    });
    let (server, cert) = https_server(Arc::new(stub.clone())).await;
    let host = host_over(
        network(options_trusting(&cert)),
        vec![sf_tenant("t1", &server.url(), "wire-credential-t1", &[])],
    );
    let out = host.call(get_account("t1")).await.unwrap();
    let seen = stub.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].header("x-proxy-credential"),
        Some("wire-credential-t1")
    );
    assert!(!out.contains("wire-credential"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_slower_than_the_timeout_is_a_timeout() {
    let slow = Reply::Delay(
        Duration::from_secs(30),
        Box::new(Reply::json(200, json!({}))),
    );
    let stub = StubBackend::with_handler(move |_: &Recorded| slow.clone());
    let (server, cert) = https_server(Arc::new(stub.clone())).await;
    let mut options = options_trusting(&cert);
    options.first_byte_timeout = Duration::from_millis(200);
    // The wait for a response's head is bounded by connecting plus the first byte: a loopback
    // connect needs far less than a second, so the 200 ms is what trips (10 s each way before).
    options.connect_timeout = Duration::from_secs(1);
    let backend = network(options);
    let err = backend
        .send(get(&format!("{}/sdk/x", server.url()), "cred"))
        .await
        .unwrap_err();
    assert!(matches!(err, HttpError::ConnectionReadTimeout), "{err:?}");
    // The request did reach the server: a timeout is "outcome unknown", not "nothing sent".
    assert_eq!(stub.requests().len(), 1);

    let host = host_over(
        backend,
        vec![sf_tenant(
            "t1",
            &server.url(),
            "cred",
            &[("CRM_READ_ATTEMPTS", "1")],
        )],
    );
    let (kind, message) = tool_error(host.call(get_account("t1")).await);
    assert_eq!(kind, "unavailable", "{message}");
}

/// A one-shot HTTPS/1.1 server that reads a request head, writes `response` as it is, and
/// closes: for responses a well-behaved server would never send.
async fn raw_https_server(response: Vec<u8>, cert: &SelfSigned) -> String {
    let mut config = (*cert.server_config().unwrap()).clone();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let response = response.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = tls.write_all(&response).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_closes_mid_body_is_an_error_not_a_short_answer() {
    let cert = loopback_cert();
    let cut = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{\"Id\": \"001".to_vec();
    let url = raw_https_server(cut, &cert).await;
    let backend = network(options_trusting(&cert));
    let err = backend
        .send(get(&format!("{url}/sdk/x"), "cred"))
        .await
        .unwrap_err();
    assert!(matches!(err, HttpError::HttpResponseIncomplete), "{err:?}");

    let host = host_over(
        backend,
        vec![sf_tenant("t1", &url, "cred", &[("CRM_READ_ATTEMPTS", "1")])],
    );
    let (kind, message) = tool_error(host.call(get_account("t1")).await);
    assert_eq!(kind, "unavailable", "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_body_is_refused_at_the_limit() {
    let big = json!({"Id": ACCOUNT_ID, "Description": "x".repeat(64 << 10)});
    let stub = StubBackend::with_handler(move |_: &Recorded| Reply::json(200, big.clone()));
    let (server, cert) = https_server(Arc::new(stub)).await;
    let mut options = options_trusting(&cert);
    options.max_response_bytes = 16 << 10;
    let backend = network(options.clone());
    let err = backend
        .send(get(&format!("{}/sdk/x", server.url()), "cred"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, HttpError::HttpResponseBodySize(Some(limit)) if limit == 16 << 10),
        "{err:?}"
    );

    // The same when the size is not declared up front (a chunked body).
    let mut chunked =
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
            .to_vec();
    for _ in 0..8 {
        chunked.extend_from_slice(format!("1000\r\n{}\r\n", "x".repeat(0x1000)).as_bytes());
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let url = raw_https_server(chunked, &cert).await;
    let err = network(options)
        .send(get(&format!("{url}/sdk/x"), "cred"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, HttpError::HttpResponseBodySize(Some(_))),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_calls_reuse_the_pooled_connections() {
    for http2 in [false, true] {
        let (server, cert) = https_server(Arc::new(SandboxCrm::new())).await;
        let mut options = options_trusting(&cert);
        options.http2 = http2;
        options.max_connections_per_origin = 2;
        let backend = network(options);
        let host = host_over(
            backend.clone(),
            vec![sandbox_tenant_at("acme", &server.url())],
        );
        let (tool, input) = sample_calls().remove(0);
        for _ in 0..40 {
            ok(host.call(as_tenant("acme", tool, input.clone())).await);
        }
        let accepted = server.connections_accepted();
        assert!(
            (1..=2).contains(&accepted),
            "http2={http2}: {accepted} connections"
        );
        assert_eq!(backend.connections_opened(), accepted);
    }
}

/// Records each request's credential, then lets the sandbox answer.
struct CredentialLog {
    sandbox: SandboxCrm,
    seen: Mutex<Vec<String>>,
}

impl Backend for CredentialLog {
    fn send(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> BoxFuture<Result<http::Response<bytes::Bytes>, HttpError>> {
        let credential = request
            .headers()
            .get("x-proxy-credential")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        self.seen.lock().unwrap().push(credential);
        self.sandbox.send(request)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_of_one_broker_share_the_pool_but_never_a_credential() {
    let log = Arc::new(CredentialLog {
        sandbox: SandboxCrm::new(),
        seen: Mutex::default(),
    });
    let (server, cert) = https_server(log.clone()).await;
    let mut options = options_trusting(&cert);
    options.max_connections_per_origin = 2;
    let over_tls = host_over(
        network(options),
        vec![
            sandbox_tenant_at("acme", &server.url()),
            sandbox_tenant_at("globex", &server.url()),
        ],
    );
    let in_process = host_over(
        Arc::new(SandboxCrm::new()),
        vec![
            SandboxCrm::tenant_spec("acme"),
            SandboxCrm::tenant_spec("globex"),
        ],
    );
    let query = json!({"query": "SELECT Id, Name FROM Account ORDER BY Name", "max_records": 3});
    for _ in 0..5 {
        for tenant in ["acme", "globex"] {
            let call = || as_tenant(tenant, "crmb_run_soql_query", query.clone());
            let before = log.seen.lock().unwrap().len();
            let remote = ok(over_tls.call(call()).await);
            assert_eq!(remote, ok(in_process.call(call()).await), "{tenant}");
            // Every request this call made carried this tenant's credential, and no other.
            let seen = log.seen.lock().unwrap()[before..].to_vec();
            assert!(!seen.is_empty());
            assert!(
                seen.iter().all(|c| *c == SandboxCrm::credential(tenant)),
                "{tenant}: {} requests, some with another credential",
                seen.len()
            );
        }
    }
    assert!(server.connections_accepted() <= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_is_used_where_the_broker_offers_it() {
    let (server, cert) = https_server(Arc::new(record_stub(Duration::ZERO))).await;
    for (http2, version) in [
        (true, http::Version::HTTP_2),
        (false, http::Version::HTTP_11),
    ] {
        let mut options = options_trusting(&cert);
        options.http2 = http2;
        let response = network(options)
            .send(get(&format!("{}/sdk/x/001", server.url()), "cred"))
            .await
            .unwrap();
        assert_eq!(response.version(), version, "http2={http2}");
    }
}

/// Kills the `crm-host sandbox` child when the test ends, however it ends.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn crm_host_reaches_crm_host_sandbox_over_https() {
    use std::io::BufRead;
    let bin = env!("CARGO_BIN_EXE_crm-sandbox");
    let dir = temp_dir("cli-sandbox");
    std::fs::create_dir_all(&dir).unwrap();
    let cert_path = dir.join("sandbox.pem");
    let mut sandbox = Child(
        std::process::Command::new(bin)
            .env("XDG_CACHE_HOME", crate::fixtures::cache_home())
            .args(["sandbox", "--listen", "127.0.0.1:0", "--cert-out"])
            .arg(&cert_path)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    std::io::BufReader::new(sandbox.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let started: Value = serde_json::from_str(&line).unwrap();
    let url = started["listening"].as_str().unwrap();
    assert!(url.starts_with("https://127.0.0.1:"), "{line}");
    assert_eq!(started["cert"].as_str(), cert_path.to_str());

    let out = std::process::Command::new(bin)
        .env("XDG_CACHE_HOME", crate::fixtures::cache_home())
        .args(["--proxy-base", url, "--ca-cert"])
        .arg(&cert_path)
        .arg("--data-dir")
        .arg(dir.join("data"))
        .args([
            "call",
            "crmb_get_record",
            &json!({"object": "Account", "record_id": ACME_ACCOUNT, "fields": ["Name"]})
                .to_string(),
        ])
        .env(
            "CRM_PROXY_CREDENTIAL",
            started["credentials"]["acme"].as_str().unwrap(),
        )
        .output()
        .unwrap();
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(out.status.success(), "{answer}");
    assert_eq!(answer["record"]["Name"], "Acme Energy", "{answer}");
}
