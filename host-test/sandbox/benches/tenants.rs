//! `cargo bench -p crm-sandbox --bench plugin -- tenants`: what many tenants cost one `serve`
//! host (issue 43). For each count (`TENANTS_COUNTS`, default 100,10000,100000) of broker
//! tenants with one token each, on SQLite under a fresh data directory: the time from spawn to
//! the `listening` line from a TOML tenants file and from the same as JSON, resident memory and
//! open descriptors then, and again after one call to each of `TENANTS_ACTIVE` (default 1,000)
//! tenants picked at random (seeded), with the calls' p50/p99 (the first call of a tenant opens
//! its store), and 8 s after the calls (idle stores' caches emptied). With `CRM_TEST_POSTGRES` (a
//! server the bench may create databases on), the same on the fleet's registry, with two hosts
//! and a token revoked, by `tenants revoke` and by `tenants import` of the file without it: how
//! long until the second host refuses it. The
//! component is compiled into the cache first, so every start is "after the component is
//! compiled".

use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ServiceExt, model::CallToolResult};
use serde_json::{Value, json};
use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BINARY: &str = env!("CARGO_BIN_EXE_crm-sandbox");

pub fn figures() {
    let counts: Vec<usize> = std::env::var("TENANTS_COUNTS")
        .unwrap_or_else(|_| "100,10000,100000".into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let active: usize = std::env::var("TENANTS_ACTIVE")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let dir = std::env::temp_dir().join(format!("crm-bench-tenants-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cache = dir.join("cache");
    let compiled = Command::new(BINARY)
        .env("XDG_CACHE_HOME", &cache)
        .arg("precompile")
        .output()
        .unwrap();
    assert!(compiled.status.success(), "precompile failed");
    let broker = Broker::start(&dir, &cache);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    println!(
        "tenants per host (SQLite, one token each; {active} tenants called once each; the \
         tenants file as TOML, then as JSON):"
    );
    for &count in &counts {
        let run = dir.join(format!("n{count}"));
        std::fs::create_dir_all(&run).unwrap();
        let toml = run.join("tenants.toml");
        std::fs::write(&toml, tenants_file(count, &broker.url)).unwrap();
        let json = run.join("tenants.json");
        std::fs::write(&json, tenants_json(count, &broker.url)).unwrap();
        // The same tenants as TOML: how long until it listens, and what it holds then.
        let (mut host, _, toml_listen) = serve_file(&run.join("toml"), &toml, &cache, &broker);
        let toml_at_listen = Process::of(&host);
        let _ = host.kill();
        let _ = host.wait();
        let (mut host, url, listen) = serve_file(&run.join("data"), &json, &cache, &broker);
        let at_listen = Process::of(&host);
        let calls = runtime.block_on(call_each(&url, count, active));
        let after = Process::of(&host);
        // Idle stores have their caches emptied 2 s after their last query (checked every
        // second), and what they free is handed back at most every 5 s: what the host holds
        // once the calls have stopped.
        std::thread::sleep(Duration::from_millis(8_000));
        let settled = Process::of(&host);
        let _ = host.kill();
        let _ = host.wait();
        let (p50, p99) = percentiles(calls);
        println!(
            "  {count:>7} tenants: listening after {:>8.1} ms from TOML ({:>6.1} MB), {:>8.1} ms \
             from JSON; at listen {:>6.1} MB, {:>5} fds; after the calls {:>6.1} MB (peak \
             {:>6.1} MB), {:>5} fds; 8 s later {:>6.1} MB; a call p50 {:>6.2} ms, p99 {:>6.2} ms",
            toml_listen.as_secs_f64() * 1e3,
            toml_at_listen.rss_kib as f64 / 1024.0,
            listen.as_secs_f64() * 1e3,
            at_listen.rss_kib as f64 / 1024.0,
            at_listen.fds,
            after.rss_kib as f64 / 1024.0,
            after.hwm_kib as f64 / 1024.0,
            after.fds,
            settled.rss_kib as f64 / 1024.0,
            p50.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3,
        );
        let _ = std::fs::remove_dir_all(&run);
    }
    if let Ok(server) = std::env::var("CRM_TEST_POSTGRES") {
        println!("tenants per host (PostgreSQL registry, two hosts; {active} calls to host A):");
        for count in &counts {
            let url = runtime.block_on(fresh_database(&server, *count));
            on_postgres(&url, *count, active, &dir, &cache, &broker, &runtime);
        }
    } else {
        println!("tenants on PostgreSQL: skipped, CRM_TEST_POSTGRES is not set");
    }
    drop(broker);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `serve` host of the tenants file `tenants` on SQLite under `data`; the process, its URL,
/// and how long it took to listen.
fn serve_file(
    data: &Path,
    tenants: &Path,
    cache: &Path,
    broker: &Broker,
) -> (Child, String, Duration) {
    serve(data, cache, broker, |host| {
        host.arg("serve").arg("--tenants").arg(tenants);
    })
}

/// `crm-sandbox --data-dir data … serve --listen 127.0.0.1:0`, its arguments completed by
/// `args`: the process, its URL, and how long it took to listen.
fn serve(
    data: &Path,
    cache: &Path,
    broker: &Broker,
    args: impl FnOnce(&mut Command),
) -> (Child, String, Duration) {
    let started = Instant::now();
    let mut host = Command::new(BINARY);
    host.env("XDG_CACHE_HOME", cache)
        .env("BENCH_CREDENTIAL", &broker.credential)
        .arg("--data-dir")
        .arg(data)
        .arg("--ca-cert")
        .arg(&broker.cert);
    args(&mut host);
    let mut host = host
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let url = listening(&mut host);
    (host, url, started.elapsed())
}

/// A new database on `server` for one count's run; its URL.
async fn fresh_database(server: &str, count: usize) -> String {
    let database = format!("bench_tenants_{}_{count}", std::process::id());
    let (admin, connection) = tokio_postgres::connect(server, tokio_postgres::NoTls)
        .await
        .expect("CRM_TEST_POSTGRES answers");
    tokio::spawn(connection);
    admin
        .batch_execute(&format!("CREATE DATABASE {database}"))
        .await
        .unwrap();
    let mut url = url::Url::parse(server).unwrap();
    url.set_path(&format!("/{database}"));
    url.to_string()
}

/// `crm-sandbox --store URL` with `args`; panics unless it succeeds.
fn command(url: &str, dir: &Path, cache: &Path, args: &[&str]) {
    let out = Command::new(BINARY)
        .env("XDG_CACHE_HOME", cache)
        .arg("--store")
        .arg(url)
        .arg("--data-dir")
        .arg(dir.join("cli"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A `serve` host on the registry at `url`; the process and its URL, and how long it took to
/// listen.
fn serve_on(url: &str, dir: &Path, cache: &Path, broker: &Broker) -> (Child, String, Duration) {
    serve(dir, cache, broker, |host| {
        host.arg("--store").arg(url).arg("serve");
    })
}

/// Whether `token` is let in at `url` (a bare initialize).
async fn admitted(url: &str, token: &str) -> bool {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string())
        .auth_header(token.to_string());
    match ().serve(StreamableHttpClientTransport::from_config(config)).await {
        Ok(client) => {
            let _ = client.cancel().await;
            true
        }
        Err(_) => false,
    }
}

#[allow(clippy::too_many_arguments)]
fn on_postgres(
    url: &str,
    count: usize,
    active: usize,
    dir: &Path,
    cache: &Path,
    broker: &Broker,
    runtime: &tokio::runtime::Runtime,
) {
    let run = dir.join(format!("pg{count}"));
    std::fs::create_dir_all(&run).unwrap();
    let file = run.join("tenants.toml");
    std::fs::write(&file, tenants_file(count, &broker.url)).unwrap();
    let file_arg = file.to_str().unwrap();
    let started = Instant::now();
    command(url, &run, cache, &["tenants", "import", file_arg]);
    let import = started.elapsed();
    let (mut a, a_url, a_listen) = serve_on(url, &run.join("a"), cache, broker);
    let (mut b, b_url, b_listen) = serve_on(url, &run.join("b"), cache, broker);
    let at_listen = Process::of(&a);
    let calls = runtime.block_on(call_each(&a_url, count, active));
    let after = Process::of(&a);
    // Revoked by `tenants revoke` (one row), then another by importing the file without its
    // line (the import writes the one row that differs); each time host B is polled until it
    // refuses the token.
    let refused_after = |token: &str, started: Instant| {
        runtime.block_on(async {
            while admitted(&b_url, token).await {
                assert!(
                    started.elapsed() < Duration::from_secs(120),
                    "never refused"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            started.elapsed()
        })
    };
    let hash = |token: &str| crm_host::mcp::tenants::token_hash(token);
    assert!(runtime.block_on(admitted(&b_url, "token-0")));
    let started = Instant::now();
    command(url, &run, cache, &["tenants", "revoke", &hash("token-0")]);
    let revoke_command = started.elapsed();
    let refused = refused_after("token-0", started);
    let without = tenants_file(count, &broker.url)
        .replacen(
            &format!(
                "[[tokens]]\nsha256 = \"{}\"\ntenant = \"t000000\"\nuser = \"u\"\n",
                hash("token-0")
            ),
            "",
            1,
        )
        .replacen(
            &format!(
                "[[tokens]]\nsha256 = \"{}\"\ntenant = \"t000001\"\nuser = \"u\"\n",
                hash("token-1")
            ),
            "",
            1,
        );
    assert!(runtime.block_on(admitted(&b_url, "token-1")));
    std::fs::write(&file, without).unwrap();
    let started = Instant::now();
    command(url, &run, cache, &["tenants", "import", file_arg]);
    let imported = started.elapsed();
    let refused_by_import = refused_after("token-1", started);
    for host in [&mut a, &mut b] {
        let _ = host.kill();
        let _ = host.wait();
    }
    let (p50, p99) = percentiles(calls);
    println!(
        "  {count:>7} tenants: import {:>7.1} ms; host A listening after {:>7.1} ms, B {:>7.1} ms; \
         at listen {:>6.1} MB, {:>4} fds; after the calls {:>6.1} MB, {:>5} fds; a call p50 \
         {:>6.2} ms, p99 {:>6.2} ms; a token revoked (`tenants revoke`) refused on B {:>7.1} ms \
         after the command began (the command {:>6.1} ms); revoked by an import, refused on B \
         {:>7.1} ms after it began (the import {:>7.1} ms)",
        import.as_secs_f64() * 1e3,
        a_listen.as_secs_f64() * 1e3,
        b_listen.as_secs_f64() * 1e3,
        at_listen.rss_kib as f64 / 1024.0,
        at_listen.fds,
        after.rss_kib as f64 / 1024.0,
        after.fds,
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        refused.as_secs_f64() * 1e3,
        revoke_command.as_secs_f64() * 1e3,
        refused_by_import.as_secs_f64() * 1e3,
        imported.as_secs_f64() * 1e3,
    );
    let _ = std::fs::remove_dir_all(&run);
}

/// `count` broker tenants sharing one credential variable, and a token each (`token-{i}`).
fn tenants_file(count: usize, broker: &str) -> String {
    let mut text = String::with_capacity(count * 300);
    for i in 0..count {
        text += &format!(
            "[[tenants]]\nid = \"t{i:06}\"\nproxy_base = \"{broker}\"\n\
             credential_env = \"BENCH_CREDENTIAL\"\ninstance_url = \"{}\"\n",
            crm_sandbox::SandboxCrm::instance_url("acme")
        );
    }
    for i in 0..count {
        text += &format!(
            "[[tokens]]\nsha256 = \"{}\"\ntenant = \"t{i:06}\"\nuser = \"u\"\n",
            crm_host::mcp::tenants::token_hash(&format!("token-{i}"))
        );
    }
    text
}

/// [`tenants_file`]'s tenants and tokens as a JSON tenants file.
fn tenants_json(count: usize, broker: &str) -> String {
    let instance_url = crm_sandbox::SandboxCrm::instance_url("acme");
    let tenants: Vec<Value> = (0..count)
        .map(|i| {
            json!({"id": format!("t{i:06}"), "proxy_base": broker,
                   "credential_env": "BENCH_CREDENTIAL", "instance_url": instance_url})
        })
        .collect();
    let tokens: Vec<Value> = (0..count)
        .map(|i| {
            json!({"sha256": crm_host::mcp::tenants::token_hash(&format!("token-{i}")),
                   "tenant": format!("t{i:06}"), "user": "u"})
        })
        .collect();
    serde_json::to_string_pretty(&json!({"tenants": tenants, "tokens": tokens})).unwrap()
}

/// One call (a Salesforce record read) to each of `active` tenants of `count`, picked by a
/// seeded xorshift: each call's time, its client's handshake included.
async fn call_each(url: &str, count: usize, active: usize) -> Vec<Duration> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut times = Vec::with_capacity(active);
    for _ in 0..active {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let tenant = (state % count as u64) as usize;
        let started = Instant::now();
        let config = StreamableHttpClientTransportConfig::with_uri(url.to_string())
            .auth_header(format!("token-{tenant}"));
        let client = ().serve(StreamableHttpClientTransport::from_config(config)).await;
        let client = client.expect("the token is let in");
        let params: CallToolRequestParams = serde_json::from_value(json!({
            "name": "crmb_get_record",
            "arguments": {"object": "Account", "record_id": "0015gA000000001ABA",
                          "fields": ["Name"]},
        }))
        .unwrap();
        let answer: CallToolResult = client.call_tool(params).await.unwrap();
        assert_ne!(answer.is_error, Some(true), "t{tenant:06}: {answer:?}");
        times.push(started.elapsed());
        let _ = client.cancel().await;
    }
    times
}

fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    (at(0.5), at(0.99))
}

/// What the kernel says of a process: resident memory now and at its peak, open descriptors.
struct Process {
    rss_kib: u64,
    hwm_kib: u64,
    fds: usize,
}

impl Process {
    fn of(child: &Child) -> Self {
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or(0)
        };
        Process {
            rss_kib: field("VmRSS:"),
            hwm_kib: field("VmHWM:"),
            fds: std::fs::read_dir(format!("/proc/{}/fd", child.id()))
                .map(|d| d.count())
                .unwrap_or(0),
        }
    }
}

/// The URL a `serve` prints on its first stdout line.
fn listening(child: &mut Child) -> String {
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let said: Value =
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("serve's first line: {line:?}"));
    said["listening"].as_str().unwrap().to_string()
}

/// The sandbox CRM served as an HTTPS broker: its URL, certificate and acme's credential.
struct Broker {
    child: Child,
    url: String,
    cert: std::path::PathBuf,
    credential: String,
}

impl Broker {
    fn start(dir: &Path, cache: &Path) -> Self {
        let cert = dir.join("broker.pem");
        let mut child = Command::new(BINARY)
            .env("XDG_CACHE_HOME", cache)
            .args(["sandbox", "--listen", "127.0.0.1:0", "--cert-out"])
            .arg(&cert)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let said: Value = serde_json::from_str(&line).unwrap();
        Broker {
            child,
            url: said["listening"].as_str().unwrap().to_string(),
            cert,
            credential: said["credentials"]["acme"].as_str().unwrap().to_string(),
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
