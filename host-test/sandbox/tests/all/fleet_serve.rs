//! Two `crm-sandbox serve` processes on one PostgreSQL registry (issue 23): tenants, tokens and
//! components come from the database, and a change made through either host (or the command
//! line) reaches both without a restart. Each process has its own sandbox CRM, disk and memory.
//!
//! Needs `CRM_TEST_POSTGRES`; without it the test prints one line and does nothing.

use crate::fixtures::{relabelled_plugin, temp_dir, two_tenants_file};
use crate::fleet::fresh_database;
use crm_host::mcp::tenants::token_hash;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const BINARY: &str = env!("CARGO_BIN_EXE_crm-sandbox");

/// `crm-sandbox --store URL args…`, its JSON answer.
fn command(store: &str, dir: &Path, args: &[&str]) -> Value {
    let out = std::process::Command::new(BINARY)
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .arg("--store")
        .arg(store)
        .arg("--data-dir")
        .arg(dir.join("cli"))
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{args:?}: {text}");
    serde_json::from_str(&text).unwrap()
}

/// A `serve` process on the registry, killed when dropped.
struct Serving {
    child: std::process::Child,
    url: String,
}

impl Serving {
    fn start(store: &str, dir: &Path, name: &str) -> Self {
        let mut child = std::process::Command::new(BINARY)
            .env("XDG_CACHE_HOME", dir.join("cache"))
            .arg("--store")
            .arg(store)
            .arg("--data-dir")
            .arg(dir.join(name))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .unwrap();
        let said: Value = serde_json::from_str(&line)
            .unwrap_or_else(|_| panic!("the server's first line: {line:?}"));
        Serving {
            url: said["listening"].as_str().unwrap().to_string(),
            child,
        }
    }

    fn admin(&self, path: &str) -> u16 {
        let base = self.url.trim_end_matches("/mcp");
        let response = std::process::Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST"])
            .arg("-H")
            .arg("Authorization: Bearer operator-token")
            .arg(format!("{base}{path}"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&response.stdout).parse().unwrap()
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Counts `notifications/tools/list_changed`.
#[derive(Clone, Default)]
struct Listener(Arc<AtomicUsize>);

impl ClientHandler for Listener {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

async fn client(url: &str, token: &str) -> RunningService<RoleClient, Listener> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token);
    Listener::default()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

/// Whether `token` is let in at `url` (a bare initialize request).
async fn admitted(url: &str, token: &str) -> bool {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .is_ok()
}

async fn read_account(
    client: &RunningService<RoleClient, Listener>,
) -> rmcp::model::CallToolResult {
    let params: CallToolRequestParams = serde_json::from_value(json!({
        "name": "crmb_get_record",
        "arguments": {"object": "Account", "record_id": "0015gA000000001ABA", "fields": ["Name"]},
    }))
    .unwrap();
    client.call_tool(params).await.unwrap()
}

async fn within_a_second(what: &str, mut done: impl AsyncFnMut() -> bool) -> Duration {
    let began = Instant::now();
    while !done().await {
        assert!(
            began.elapsed() < Duration::from_secs(1),
            "{what}: not within a second"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    began.elapsed()
}

fn tenants_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_serve_processes_share_the_registry_its_changes_and_the_disconnects() {
    let Some(store) = fresh_database("serve").await else {
        return;
    };
    let dir = temp_dir("fleet-serve");
    std::fs::create_dir_all(&dir).unwrap();
    let admin = format!("[admin]\nsha256 = \"{}\"\n", token_hash("operator-token"));
    // First only acme, with alice's token.
    let acme_only = format!(
        "[[tenants]]\nid = \"acme\"\n[[tokens]]\nsha256 = \"{}\"\ntenant = \"acme\"\n\
         user = \"alice\"\n{admin}",
        token_hash("acme-token")
    );
    let imported = command(
        &store,
        &dir,
        &[
            "tenants",
            "import",
            tenants_file(&dir, "one.toml", &acme_only).to_str().unwrap(),
        ],
    );
    assert_eq!(imported["registry_version"], 1);

    let a = Serving::start(&store, &dir, "host-a");
    let b = Serving::start(&store, &dir, "host-b");
    // One user, alternating between the hosts.
    let on_a = client(&a.url, "acme-token").await;
    let on_b = client(&b.url, "acme-token").await;
    for session in [&on_a, &on_b, &on_a] {
        assert_eq!(read_account(session).await.is_error, Some(false));
    }
    assert!(!admitted(&b.url, "globex-token").await);

    // A tenant added to the registry is served by both hosts, without a restart; then the
    // acme token is revoked and neither host lets it in.
    command(
        &store,
        &dir,
        &[
            "tenants",
            "import",
            tenants_file(&dir, "two.toml", &two_tenants_file(&admin))
                .to_str()
                .unwrap(),
        ],
    );
    let took = within_a_second("globex on host B", async || {
        admitted(&b.url, "globex-token").await
    })
    .await;
    eprintln!("host B served the new tenant after {took:?}");
    let globex_only = format!(
        "[[tenants]]\nid = \"acme\"\n[[tenants]]\nid = \"globex\"\n[[tokens]]\n\
         sha256 = \"{}\"\ntenant = \"globex\"\nuser = \"bob\"\n{admin}",
        token_hash("globex-token")
    );
    command(
        &store,
        &dir,
        &[
            "tenants",
            "import",
            tenants_file(&dir, "three.toml", &globex_only)
                .to_str()
                .unwrap(),
        ],
    );
    for host in [&a, &b] {
        within_a_second("the revoked token refused", async || {
            !admitted(&host.url, "acme-token").await
        })
        .await;
    }
    command(
        &store,
        &dir,
        &[
            "tenants",
            "import",
            tenants_file(&dir, "four.toml", &two_tenants_file(&admin))
                .to_str()
                .unwrap(),
        ],
    );
    within_a_second("the token back", async || {
        admitted(&a.url, "acme-token").await
    })
    .await;

    // The operator disconnects Salesforce through host A: host B refuses the next call.
    let on_b = client(&b.url, "acme-token").await;
    assert_eq!(
        a.admin("/admin/tenants/acme/connections/crm-b/disconnect"),
        200
    );
    within_a_second("host B refuses", async || {
        read_account(&on_b).await.is_error == Some(true)
    })
    .await;
    let refused = read_account(&on_b).await;
    let text = serde_json::to_string(&refused).unwrap();
    assert!(text.contains("not-connected"), "{text}");
    assert_eq!(
        a.admin("/admin/tenants/acme/connections/crm-b/connect"),
        200
    );
    within_a_second("host B reconnected", async || {
        read_account(&on_b).await.is_error == Some(false)
    })
    .await;

    // A component swapped through the command line reaches both hosts; a client listening on
    // host B is told the tool list changed, and its calls go on.
    let heard = on_b.service().0.clone();
    let v2 = dir.join("v2.wasm");
    std::fs::write(&v2, relabelled_plugin("fleet-v2")).unwrap();
    let swapped = command(
        &store,
        &dir,
        &["tenants", "swap", "acme", v2.to_str().unwrap()],
    );
    assert_eq!(swapped["tenant"], "acme");
    let began = Instant::now();
    while heard.load(Ordering::SeqCst) == 0 {
        // Loading the new component takes a moment on each host.
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "host B announced the swap"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(read_account(&on_b).await.is_error, Some(false));
    let _ = std::fs::remove_dir_all(&dir);
}
