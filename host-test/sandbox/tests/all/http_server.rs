//! `crm-host serve` as an attacker and as a deployer meet it (issue 20): sessions bound to the
//! principal that opened them, identity providers bound to their tenants, a server that idle
//! connections cannot stop, sessions that free what they hold, a public URL behind a proxy,
//! the load balancer's and the operator's routes, one answer per JSON-RPC id, private files.

use crate::fixtures::*;
use crate::mcp::{answer, call, http_client, tool_error};
use bytes::Bytes;
use crm_host::mcp::http::{Gate, ServeOptions, serve_with};
use crm_host::mcp::tenants::token_hash;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const LIST_TOOLS: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

/// One keep-alive HTTP/1.1 connection, as a plain client speaks it.
pub(crate) struct Conn {
    authority: String,
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
}

/// What came back: status, headers, and the body read for at most a few seconds (an SSE stream
/// that stays open is cut there).
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: ::http::HeaderMap,
    pub(crate) body: String,
}

impl Answer {
    fn session(&self) -> String {
        self.headers["mcp-session-id"].to_str().unwrap().to_string()
    }
}

impl Conn {
    pub(crate) async fn open(url: &str) -> Conn {
        let uri: ::http::Uri = url.parse().unwrap();
        let authority = uri.authority().unwrap().to_string();
        let tcp = tokio::net::TcpStream::connect(&authority).await.unwrap();
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .unwrap();
        tokio::spawn(connection);
        Conn { authority, sender }
    }

    pub(crate) async fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Answer {
        let mut request = ::http::Request::builder()
            .method(method)
            .uri(path)
            .header("host", &self.authority)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let request = request
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap();
        self.sender.ready().await.unwrap();
        let response = self.sender.send_request(request).await.unwrap();
        let (parts, mut body) = response.into_parts();
        let mut text = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        while let Ok(Some(Ok(frame))) = tokio::time::timeout_at(deadline, body.frame()).await {
            if let Ok(data) = frame.into_data() {
                text.extend_from_slice(&data);
            }
        }
        Answer {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body: String::from_utf8_lossy(&text).into_owned(),
        }
    }

    /// A 2025-era session opened with `token`: initialize, then initialized.
    pub(crate) async fn open_session(&mut self, token: &str) -> String {
        let auth = format!("Bearer {token}");
        let opened = self
            .send("POST", "/mcp", &[("authorization", &auth)], INITIALIZE)
            .await;
        assert_eq!(opened.status, 200, "{}", opened.body);
        let session = opened.session();
        let headers = [
            ("authorization", auth.as_str()),
            ("mcp-session-id", session.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        let ready = self.send("POST", "/mcp", &headers, INITIALIZED).await;
        assert_eq!(ready.status, 202, "{}", ready.body);
        session
    }
}

impl Conn {
    /// Opens a session with `token` and closes it (DELETE).
    async fn open_and_close_session(&mut self, token: &str) {
        let session = self.open_session(token).await;
        let auth = format!("Bearer {token}");
        let closed = self
            .send("DELETE", "/mcp", &session_headers(&auth, &session), "")
            .await;
        assert_eq!(closed.status, 204);
    }
}

pub(crate) fn session_headers<'a>(auth: &'a str, session: &'a str) -> [(&'a str, &'a str); 3] {
    [
        ("authorization", auth),
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-11-25"),
    ]
}

/// The two sandbox tenants with a token each (plus `extra` in the tenants file), in process.
pub(crate) async fn sandbox_server(dir: &Path, extra: &str) -> String {
    let host = sandbox_tenants(dir, &[]);
    let file = two_tenants_file(extra);
    serve_in_process(host, &file).await
}

/// Serves `host` over HTTP on loopback with the tenants file `file`; returns the MCP URL.
pub(crate) async fn serve_in_process(host: Arc<crm_host::Host>, file: &str) -> String {
    let tokens = sandbox_tokens(file);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let gate = Gate {
        tokens: tokens.into(),
        allowed_origins: Vec::new(),
        public_url: url::Url::parse(&url).unwrap(),
    };
    tokio::spawn(serve_with(host, ServeOptions::new(gate), listener));
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_principals_session_is_unknown_to_it_for_post_resume_and_delete() {
    let dir = temp_dir("http-sessions");
    let url = sandbox_server(&dir, "").await;
    let mut acme = Conn::open(&url).await;
    let session = acme.open_session("acme-token").await;

    let mut globex = Conn::open(&url).await;
    let unknown = globex
        .send(
            "POST",
            "/mcp",
            &session_headers("Bearer globex-token", "no-such-session"),
            LIST_TOOLS,
        )
        .await;
    assert_eq!(unknown.status, 404);
    let stranger = session_headers("Bearer globex-token", &session);
    let posted = globex.send("POST", "/mcp", &stranger, LIST_TOOLS).await;
    assert_eq!(
        (posted.status, posted.body.as_str()),
        (unknown.status, unknown.body.as_str()),
        "another tenant's session answers exactly as an unknown one"
    );
    let mut resume = stranger.to_vec();
    resume.push(("last-event-id", "0"));
    let resumed = globex.send("GET", "/mcp", &resume, "").await;
    assert_eq!(
        (resumed.status, resumed.body.as_str()),
        (404, unknown.body.as_str())
    );
    let standalone = globex.send("GET", "/mcp", &stranger, "").await;
    assert_eq!(standalone.status, 404, "no attaching to its stream");
    let deleted = globex.send("DELETE", "/mcp", &stranger, "").await;
    assert_eq!(deleted.status, 404, "no closing it either");

    // The owner's session is untouched, and only the owner closes it.
    let own = session_headers("Bearer acme-token", &session);
    let listed = acme.send("POST", "/mcp", &own, LIST_TOOLS).await;
    assert_eq!(listed.status, 200);
    assert!(listed.body.contains("crmb_get_record"), "{}", listed.body);
    assert_eq!(acme.send("DELETE", "/mcp", &own, "").await.status, 204);
    assert_eq!(
        acme.send("POST", "/mcp", &own, LIST_TOOLS).await.status,
        404
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lower_case_scheme_works_and_a_missing_resource_names_its_uri() {
    let dir = temp_dir("http-scheme");
    let url = sandbox_server(&dir, "").await;
    let mut conn = Conn::open(&url).await;
    let opened = conn
        .send(
            "POST",
            "/mcp",
            &[("authorization", "bearer acme-token")],
            INITIALIZE,
        )
        .await;
    assert_eq!(
        opened.status, 200,
        "RFC 7235: the scheme is case-insensitive"
    );

    let client = http_client(&url, "acme-token").await;
    let missing = "crm-results://files/nothing-here.jsonl";
    let err = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(missing))
        .await
        .unwrap_err();
    let rmcp::ServiceError::McpError(err) = err else {
        panic!("{err:?}")
    };
    assert_eq!(err.code, rmcp::model::ErrorCode::RESOURCE_NOT_FOUND);
    assert_eq!(err.data.unwrap()["uri"], missing);
    let failed = client
        .call_tool(call(
            "crmb_get_record",
            json!({"object": "Account", "record_id": "nope"}),
        ))
        .await
        .unwrap();
    assert_eq!(tool_error(&failed)["error"]["kind"], "invalid-input");
    client.cancel().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A test identity provider's Ed25519 key pair (made with openssl for these tests only).
pub(crate) const IDP_PRIVATE_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIOgpVW/WlUZCAUTqQ5QXQ3jIseGwFUbeH+I0rGt16JRz\n-----END PRIVATE KEY-----\n";
pub(crate) const IDP_PUBLIC_KEY: &str = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAa/jEcEttH55w7bzsx1y6KqNCA6WUbPq3elcUxVtBNVA=\n-----END PUBLIC KEY-----\n";

pub(crate) fn signed_by(
    key: &jsonwebtoken::EncodingKey,
    kid: Option<&str>,
    claims: Value,
) -> String {
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
    header.kid = kid.map(str::to_string);
    jsonwebtoken::encode(&header, &claims, key).unwrap()
}

pub(crate) fn claims(tenant: &str) -> Value {
    json!({"iss": "https://idp.acme.example", "aud": "crm-mcp", "exp": 4_102_444_800u64, "tenant": tenant, "sub": "carol"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_cannot_mint_a_tenant_it_is_not_bound_to() {
    let dir = temp_dir("http-jwt");
    let provider = format!(
        "[[jwt]]\nissuer = \"https://idp.acme.example\"\naudience = \"crm-mcp\"\n\
         algorithm = \"EdDSA\"\ntenants = [\"acme\"]\npublic_key_pem = '''{IDP_PUBLIC_KEY}'''\n"
    );
    let url = sandbox_server(&dir, &provider).await;
    let key = jsonwebtoken::EncodingKey::from_ed_pem(IDP_PRIVATE_KEY.as_bytes()).unwrap();
    let mut conn = Conn::open(&url).await;
    let for_acme = format!("Bearer {}", signed_by(&key, None, claims("acme")));
    let own = conn
        .send("POST", "/mcp", &[("authorization", &for_acme)], INITIALIZE)
        .await;
    assert_eq!(own.status, 200);
    // The same provider's valid signature, naming globex (a tenant the server does run).
    let for_globex = format!("Bearer {}", signed_by(&key, None, claims("globex")));
    let minted = conn
        .send(
            "POST",
            "/mcp",
            &[("authorization", &for_globex)],
            INITIALIZE,
        )
        .await;
    assert_eq!(minted.status, 401);
    assert!(
        minted.headers["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("invalid_token")
    );
    let early = {
        let mut c = claims("acme");
        c["nbf"] = json!(4_000_000_000u64);
        format!("Bearer {}", signed_by(&key, None, c))
    };
    let not_yet = conn
        .send("POST", "/mcp", &[("authorization", &early)], INITIALIZE)
        .await;
    assert_eq!(not_yet.status, 401, "nbf in the future");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Base64url without padding, for a JWK's `x`.
fn b64url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A fresh Ed25519 key: its signing key, and its JWK with `kid`.
fn ed25519_jwk(kid: &str) -> (jsonwebtoken::EncodingKey, Value) {
    use ring::signature::KeyPair;
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
    let pair = ring::signature::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    let jwk = json!({"kty": "OKP", "crv": "Ed25519", "kid": kid, "x": b64url(pair.public_key().as_ref())});
    (jsonwebtoken::EncodingKey::from_ed_der(pkcs8.as_ref()), jwk)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_providers_rotated_keys_are_fetched_from_its_jwks_over_https_at_most_once_a_window() {
    use crm_host::backend::serve::Server;
    use crm_host::backend::tls::SelfSigned;
    use crm_host::backend::{NetworkBackend, NetworkOptions};
    use crm_host::mcp::jwt::{Jwks, JwtAlgorithm, KeySource, Provider, ProviderSettings};
    use crm_sandbox::stub::{Reply, StubBackend};
    use std::sync::Mutex;

    let (old_key, old_jwk) = ed25519_jwk("2026-11");
    let (new_key, new_jwk) = ed25519_jwk("2026-12");
    let published = Arc::new(Mutex::new(vec![old_jwk]));
    let document = published.clone();
    let idp = StubBackend::with_handler(move |_| {
        Reply::json(200, json!({"keys": *document.lock().unwrap()}))
    });
    let cert = SelfSigned::generate(&["127.0.0.1"]).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = Server::start(
        listener,
        Arc::new(idp.clone()),
        Some(cert.server_config().unwrap()),
    )
    .unwrap();
    let mut options = NetworkOptions::new(1 << 20, Duration::from_secs(5));
    options.extra_roots = vec![cert.cert_der()];
    let backend = Arc::new(NetworkBackend::new(options).unwrap());
    let window = Duration::from_millis(400);
    let jwks_url = url::Url::parse(&format!("{}/.well-known/jwks.json", server.url())).unwrap();
    let provider = Provider::new(ProviderSettings {
        issuer: "https://idp.acme.example".into(),
        audience: "crm-mcp".into(),
        algorithm: JwtAlgorithm::EdDSA,
        keys: KeySource::Jwks(
            Jwks::new(jwks_url, backend)
                .unwrap()
                .with_refresh_interval(window),
        ),
        tenant_claim: "tenant".into(),
        user_claim: "sub".into(),
        tenants: vec!["acme".into()],
        leeway: Duration::from_secs(60),
    });
    let fetches = || idp.requests().len();

    let old_token = signed_by(&old_key, Some("2026-11"), claims("acme"));
    assert!(provider.verify(&old_token).await.is_some());
    assert_eq!(fetches(), 1);
    assert!(provider.verify(&old_token).await.is_some(), "cached");
    assert_eq!(fetches(), 1);

    // The provider rotates. Right away, a token with the new key id is refused, and however
    // many unknown key ids arrive, the JWKS is not fetched again inside the window.
    published.lock().unwrap().push(new_jwk);
    let new_token = signed_by(&new_key, Some("2026-12"), claims("acme"));
    let first = provider.verify(&new_token).await;
    let fetched_then = fetches();
    assert!(fetched_then <= 2, "{fetched_then}");
    for n in 0..20 {
        let made_up = signed_by(&new_key, Some(&format!("kid-{n}")), claims("acme"));
        assert!(provider.verify(&made_up).await.is_none());
    }
    assert_eq!(fetches(), fetched_then, "no fetch per made-up key id");
    if first.is_none() {
        tokio::time::sleep(window + Duration::from_millis(50)).await;
        assert!(
            provider.verify(&new_token).await.is_some(),
            "fetched after the window"
        );
    }
    assert!(provider.verify(&new_token).await.is_some());
    assert!(fetches() <= 3);
    // A key from the JWKS still cannot mint another tenant.
    let minted = signed_by(&new_key, Some("2026-12"), claims("globex"));
    assert!(provider.verify(&minted).await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_json_rpc_id_is_answered_once_per_session() {
    let stub = record_stub(Duration::from_millis(1500));
    let fixture = fixture(stub);
    let file = format!(
        "[[tenants]]\nid = \"t1\"\nproxy_base = \"https://broker-one.example.com\"\n\
         [[tokens]]\nsha256 = \"{}\"\ntenant = \"t1\"\nuser = \"alice\"\n",
        token_hash("t1-token")
    );
    let url = serve_in_process(fixture.host.clone(), &file).await;
    let mut first = Conn::open(&url).await;
    let session = first.open_session("t1-token").await;
    let read = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "crmb_get_record", "arguments": {"object": "Account", "record_id": ACCOUNT_ID}}}).to_string();
    let slow = {
        let (session, read) = (session.clone(), read.clone());
        tokio::spawn(async move {
            let headers = session_headers("Bearer t1-token", &session);
            first.send("POST", "/mcp", &headers, &read).await
        })
    };
    tokio::time::sleep(Duration::from_millis(400)).await;
    let mut second = Conn::open(&url).await;
    let again = second
        .send(
            "POST",
            "/mcp",
            &session_headers("Bearer t1-token", &session),
            &read,
        )
        .await;
    assert_eq!(again.status, 400, "{}", again.body);
    let error: Value = serde_json::from_str(&again.body).unwrap();
    assert_eq!(error["id"], 7);
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("in flight")
    );
    let answered = slow.await.unwrap();
    assert_eq!(answered.status, 200);
    assert!(
        answered.body.contains("Acme Energy"),
        "the first request keeps its answer: {}",
        answered.body
    );
}

/// Raises this process's open-files soft limit to at least `wanted` (up to the hard limit).
fn raise_open_files_limit(wanted: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write one rlimit we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < wanted {
            limit.rlim_cur = wanted.min(limit.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// A `crm-host serve` process on the sandbox, stopped when dropped.
struct ServeProcess {
    child: std::process::Child,
    /// Where it says it listens.
    url: String,
    dir: PathBuf,
}

impl ServeProcess {
    /// Starts the server with `args` after the tenants file; `open_files` lowers its
    /// open-files limit first (as a small container's would be).
    fn start(name: &str, args: &[&str], open_files: Option<u32>, env: &[(&str, &str)]) -> Self {
        let dir = temp_dir(name);
        std::fs::create_dir_all(&dir).unwrap();
        let tenants = dir.join("tenants.toml");
        let admin = format!("[admin]\nsha256 = \"{}\"\n", token_hash("operator-token"));
        std::fs::write(&tenants, two_tenants_file(&admin)).unwrap();
        let binary = env!("CARGO_BIN_EXE_crm-sandbox");
        let mut command = match open_files {
            Some(n) => {
                let mut c = std::process::Command::new("sh");
                c.arg("-c")
                    .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                    .arg(binary);
                c
            }
            None => std::process::Command::new(binary),
        };
        command
            .env("XDG_CACHE_HOME", crate::fixtures::cache_home())
            .arg("serve")
            .arg("--tenants")
            .arg(&tenants)
            .arg("--data-dir")
            .arg(dir.join("data"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().unwrap();
        let url = listening_url(&mut child);
        ServeProcess { child, url, dir }
    }

    /// The same port on loopback (the server may listen on every address).
    fn loopback_url(&self) -> String {
        let port = self
            .url
            .rsplit(':')
            .next()
            .unwrap()
            .trim_end_matches("/mcp");
        format!("http://127.0.0.1:{port}")
    }

    fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Resident memory, KiB.
    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_idle_connections_neither_stop_the_server_nor_keep_others_out() {
    // This test process holds the 2,000 client sockets: make room for them.
    raise_open_files_limit(2_500);
    let mut server = ServeProcess::start(
        "serve-idle",
        &["--listen", "127.0.0.1:0", "--header-timeout-seconds", "30"],
        Some(512),
        &[],
    );
    let authority = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let started = Instant::now();
    let mut idle = Vec::new();
    while idle.len() < 2000 && started.elapsed() < Duration::from_secs(60) {
        let connect = tokio::net::TcpStream::connect(&authority);
        if let Ok(Ok(stream)) = tokio::time::timeout(Duration::from_millis(500), connect).await {
            idle.push(stream);
        }
    }
    assert_eq!(idle.len(), 2000, "every connection was accepted or queued");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(server.running(), "the server is still up");
    let client = tokio::time::timeout(
        Duration::from_secs(20),
        http_client(&server.url, "acme-token"),
    )
    .await
    .expect("a real client gets in while the idle ones hold their sockets");
    let read = client
        .call_tool(call(
            "crmb_get_record",
            json!({"object": "Account", "record_id": "0015gA000000001ABA", "fields": ["Name"]}),
        ))
        .await
        .unwrap();
    assert_eq!(answer(&read)["record"]["Name"], "Acme Energy");
    client.cancel().await.unwrap();
    drop(idle);
    assert!(server.running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_thousand_sessions_opened_and_closed_leave_memory_flat() {
    let server = ServeProcess::start(
        "serve-sessions",
        &[
            "--listen",
            "127.0.0.1:0",
            "--rate-per-second",
            "100000",
            "--rate-burst",
            "100000",
        ],
        None,
        &[],
    );
    let mut conn = Conn::open(&server.url).await;
    for _ in 0..500 {
        conn.open_and_close_session("acme-token").await;
    }
    let warm = server.rss_kib();
    for _ in 0..5000 {
        conn.open_and_close_session("acme-token").await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = server.rss_kib();
    println!("RSS after 500 sessions: {warm} KiB; after 5,000 more opened and closed: {after} KiB");
    assert!(
        after < warm + 8 * 1024,
        "memory grew by {} KiB over 5,000 sessions",
        after.saturating_sub(warm)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_proxy_the_public_url_is_the_host_the_metadata_and_the_challenge() {
    let refused_dir = temp_dir("serve-public-refused");
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_crm-sandbox"))
        .args([
            "serve",
            "--listen",
            "0.0.0.0:0",
            "--tenants",
            "/nonexistent.toml",
        ])
        .arg("--data-dir")
        .arg(refused_dir.join("data"))
        .output()
        .unwrap();
    assert!(!refused.status.success());
    // Said on stderr, in one line; stdout is left to the listening line.
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("--public-url") && said.lines().count() == 1,
        "{said}"
    );
    assert!(refused.stdout.is_empty());
    let _ = std::fs::remove_dir_all(&refused_dir);

    let server = ServeProcess::start(
        "serve-public",
        &[
            "--listen",
            "0.0.0.0:0",
            "--public-url",
            "https://crm.example.com/mcp",
        ],
        None,
        &[("CRM_FILE_THRESHOLD_RECORDS", "1")],
    );
    let local = server.loopback_url();
    let mut conn = Conn::open(&local).await;
    conn.authority = "crm.example.com".into();
    let opened = conn
        .send(
            "POST",
            "/mcp",
            &[("authorization", "Bearer acme-token")],
            INITIALIZE,
        )
        .await;
    assert_eq!(
        opened.status, 200,
        "the public Host is served: {}",
        opened.body
    );
    let challenge = conn.send("POST", "/mcp", &[], INITIALIZE).await;
    assert_eq!(challenge.status, 401);
    assert_eq!(
        challenge.headers["www-authenticate"].to_str().unwrap(),
        "Bearer resource_metadata=\"https://crm.example.com/.well-known/oauth-protected-resource/mcp\""
    );
    let metadata = conn
        .send("GET", "/.well-known/oauth-protected-resource/mcp", &[], "")
        .await;
    let metadata: Value = serde_json::from_str(&metadata.body).unwrap();
    assert_eq!(metadata["resource"], "https://crm.example.com/mcp");
    let mut foreign = Conn::open(&local).await;
    foreign.authority = "evil.example".into();
    let rebound = foreign
        .send(
            "POST",
            "/mcp",
            &[("authorization", "Bearer acme-token")],
            INITIALIZE,
        )
        .await;
    assert_eq!(rebound.status, 403, "another Host is refused");

    // The load balancer's routes need no token; the operator's metrics need theirs.
    let mut plain = Conn::open(&local).await;
    assert_eq!(plain.send("GET", "/healthz", &[], "").await.status, 200);
    // 503 until the component's code is there (taken from the cache on the compile thread).
    let mut ready = plain.send("GET", "/readyz", &[], "").await;
    let began = std::time::Instant::now();
    while ready.status == 503 && began.elapsed() < std::time::Duration::from_secs(60) {
        assert!(
            ready.body.contains("still being compiled"),
            "{}",
            ready.body
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        ready = plain.send("GET", "/readyz", &[], "").await;
    }
    assert_eq!(ready.status, 200);
    let ready: Value = serde_json::from_str(&ready.body).unwrap();
    assert_eq!(ready["tenants"], 2);
    assert_eq!(ready["status"], "ok", "no tenant out of service: {ready}");
    assert_eq!(plain.send("GET", "/metrics", &[], "").await.status, 401);
    let as_tenant = [("authorization", "Bearer acme-token")];
    assert_eq!(
        plain.send("GET", "/metrics", &as_tenant, "").await.status,
        401
    );

    // A call, a result file named by its URI (not the server's path), files only we read.
    let client = {
        use rmcp::ServiceExt;
        use rmcp::transport::StreamableHttpClientTransport;
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
        let mut headers = std::collections::HashMap::new();
        headers.insert(::http::header::HOST, "crm.example.com".parse().unwrap());
        let config = StreamableHttpClientTransportConfig::with_uri(format!("{local}/mcp"))
            .auth_header("acme-token")
            .custom_headers(headers);
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .unwrap()
    };
    let query = client
        .call_tool(call(
            "crmb_run_soql_query",
            json!({"query": "SELECT Id, Name FROM Account"}),
        ))
        .await
        .unwrap();
    let file_path = answer(&query)["file_path"].as_str().unwrap().to_string();
    assert!(file_path.starts_with("crm-results://files/"), "{file_path}");
    client.cancel().await.unwrap();
    let operator = [("authorization", "Bearer operator-token")];
    let metrics = plain.send("GET", "/metrics", &operator, "").await;
    assert_eq!(metrics.status, 200);
    assert!(
        metrics
            .body
            .contains("crm_host_tool_calls_total{tool=\"crmb_run_soql_query\",outcome=\"ok\"} 1"),
        "{}",
        metrics.body
    );
    assert!(
        metrics
            .body
            .contains("crm_host_http_refused_total{reason=\"unauthenticated\"}")
    );
    assert!(
        metrics
            .body
            .contains("crm_host_tool_call_duration_seconds_bucket")
    );

    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let tenant_dir = server.dir.join("data/acme");
    assert_eq!(mode(&tenant_dir), 0o700);
    assert_eq!(mode(&tenant_dir.join("mappings.sqlite")), 0o600);
    let name = file_path.trim_start_matches("crm-results://files/");
    assert_eq!(mode(&tenant_dir.join("results")), 0o700);
    // Each user's results in a folder of their own, private too.
    let file = find_file(&tenant_dir.join("results"), name).expect("the result file");
    assert_eq!(mode(file.parent().unwrap()), 0o700);
    assert_eq!(mode(&file), 0o600);
}

/// The file called `name` anywhere under `dir`.
pub(crate) fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_file(&path, name) {
                return Some(found);
            }
        } else if path.file_name().is_some_and(|n| n == name) {
            return Some(path);
        }
    }
    None
}

/// The URL a `serve` process says it listens on, in its first line of output (within three
/// minutes: a debug build may compile the component first).
pub(crate) fn listening_url(child: &mut std::process::Child) -> String {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(Duration::from_secs(180)).unwrap();
    let said: Value =
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("the server's first line: {line:?}"));
    said["listening"].as_str().unwrap().to_string()
}
