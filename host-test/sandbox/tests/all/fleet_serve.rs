//! Two `crm-sandbox serve` processes on one PostgreSQL registry (issue 23): tenants, tokens and
//! components come from the database, and a change made through either host (or the command
//! line) reaches both without a restart. Both reach one CRM, the sandbox served as an HTTPS
//! broker by a third process; each host has its own disk and memory.
//!
//! Needs `CRM_TEST_POSTGRES`; without it the test prints one line and does nothing.

use crate::fixtures::{relabelled_plugin, temp_dir};
use crate::fleet::fresh_database;
use crate::mcp::answer;
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
        .env("XDG_CACHE_HOME", crate::fixtures::cache_home())
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

/// The sandbox CRM as an HTTPS broker: its URL, certificate and each tenant's credential.
pub(crate) struct Broker {
    _child: Serving,
    pub(crate) url: String,
    pub(crate) cert: PathBuf,
    pub(crate) credentials: Value,
}

impl Broker {
    /// `crm-sandbox sandbox` on a free loopback port, its certificate written in `dir`.
    pub(crate) fn start(dir: &Path) -> Self {
        let cert = dir.join("broker.pem");
        let mut child = std::process::Command::new(BINARY)
            .env("XDG_CACHE_HOME", crate::fixtures::cache_home())
            .args(["sandbox", "--listen", "127.0.0.1:0", "--cert-out"])
            .arg(&cert)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let said: Value = serde_json::from_str(&line).unwrap();
        Broker {
            url: said["listening"].as_str().unwrap().to_string(),
            credentials: said["credentials"].clone(),
            cert,
            _child: Serving {
                child,
                url: String::new(),
            },
        }
    }

    /// A tenants file: each tenant on this broker, the tokens given, acme's writes confirmed.
    fn tenants_file(&self, tenants: &[&str], tokens: &[(&str, &str, &str)]) -> String {
        let mut text = String::new();
        for tenant in tenants {
            text += &format!(
                "[[tenants]]\nid = \"{tenant}\"\nproxy_base = \"{}\"\n\
                 credential_env = \"{}_CREDENTIAL\"\ninstance_url = \"{}\"\n",
                self.url,
                tenant.to_uppercase(),
                crm_sandbox::SandboxCrm::instance_url(tenant)
            );
            if *tenant == "acme" {
                text += "[tenants.policy]\nconfirm_writes = true\n";
            }
        }
        for (token, tenant, user) in tokens {
            text += &format!(
                "[[tokens]]\nsha256 = \"{}\"\ntenant = \"{tenant}\"\nuser = \"{user}\"\n",
                token_hash(token)
            );
        }
        text + &format!("[admin]\nsha256 = \"{}\"\n", token_hash("operator-token"))
    }
}

impl Serving {
    fn start(store: &str, dir: &Path, name: &str, broker: &Broker) -> Self {
        let mut child = std::process::Command::new(BINARY)
            .env("XDG_CACHE_HOME", crate::fixtures::cache_home())
            .env(
                "ACME_CREDENTIAL",
                broker.credentials["acme"].as_str().unwrap(),
            )
            .env(
                "GLOBEX_CREDENTIAL",
                broker.credentials["globex"].as_str().unwrap(),
            )
            .arg("--store")
            .arg(store)
            .arg("--data-dir")
            .arg(dir.join(name))
            .arg("--ca-cert")
            .arg(&broker.cert)
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
        self.admin_with(path, None)
    }

    /// POSTs to an operator's route, with a file as the body when given; the status.
    fn admin_with(&self, path: &str, body: Option<&Path>) -> u16 {
        let base = self.url.trim_end_matches("/mcp");
        let mut curl = std::process::Command::new("curl");
        curl.args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST"])
            .arg("-H")
            .arg("Authorization: Bearer operator-token");
        if let Some(file) = body {
            curl.arg("--data-binary")
                .arg(format!("@{}", file.display()));
        }
        let response = curl.arg(format!("{base}{path}")).output().unwrap();
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

async fn tool(
    client: &RunningService<RoleClient, Listener>,
    name: &str,
    arguments: Value,
) -> rmcp::model::CallToolResult {
    let params: CallToolRequestParams =
        serde_json::from_value(json!({"name": name, "arguments": arguments})).unwrap();
    client.call_tool(params).await.unwrap()
}

fn deal_update(amount: &str, extra: Value) -> Value {
    let mut input = json!({"object_type": "deals", "record_id": "357300",
                           "properties": {"amount": amount}});
    input
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    input
}

async fn preview_token(client: &RunningService<RoleClient, Listener>, amount: &str) -> Value {
    let previewed = tool(
        client,
        "crma_update_record",
        deal_update(amount, json!({"preview": true})),
    )
    .await;
    answer(&previewed)["preview"]["confirmation_token"].clone()
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
    let broker = Broker::start(&dir);
    let alice = ("acme-token", "acme", "alice");
    let bob = ("globex-token", "globex", "bob");
    let carol = ("acme-carol-token", "acme", "carol");
    // First only acme (its writes confirmed with a token), with alice's and carol's tokens.
    let acme_only = broker.tenants_file(&["acme"], &[alice, carol]);
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

    let a = Serving::start(&store, &dir, "host-a", &broker);
    let b = Serving::start(&store, &dir, "host-b", &broker);
    // One user, alternating between the hosts.
    let on_a = client(&a.url, "acme-token").await;
    let on_b = client(&b.url, "acme-token").await;
    for session in [&on_a, &on_b, &on_a] {
        assert_eq!(read_account(session).await.is_error, Some(false));
    }
    assert!(!admitted(&b.url, "globex-token").await);

    // A write previewed on host A is applied on host B with A's token; a token raced on both
    // hosts writes once.
    let token = preview_token(&on_a, "250000").await;
    let applied = tool(
        &on_b,
        "crma_update_record",
        deal_update("250000", json!({"confirmation_token": token})),
    )
    .await;
    assert_eq!(applied.is_error, Some(false), "{applied:?}");
    let token = preview_token(&on_a, "260000").await;
    let (first, second) = tokio::join!(
        tool(
            &on_a,
            "crma_update_record",
            deal_update("260000", json!({"confirmation_token": token.clone()})),
        ),
        tool(
            &on_b,
            "crma_update_record",
            deal_update("260000", json!({"confirmation_token": token})),
        )
    );
    let oks = [&first, &second]
        .iter()
        .filter(|r| r.is_error == Some(false))
        .count();
    assert_eq!(oks, 1, "{first:?}\n{second:?}");

    // A result file written through host A is read through host B.
    let export = tool(
        &on_a,
        "crma_search_records",
        json!({"object_type": "contacts", "to_file": true, "properties": ["email"]}),
    )
    .await;
    let written = answer(&export);
    let uri = written["file_path"].as_str().unwrap().to_string();
    assert!(uri.starts_with("crm-results://files/"), "{written}");
    let read = tool(
        &on_b,
        "crm_read_result_file",
        json!({"file": uri, "offset": 0, "limit": 1000}),
    )
    .await;
    let page = answer(&read);
    assert_eq!(
        page["records"].as_array().unwrap().len() as u64,
        written["record_count"].as_u64().unwrap(),
        "{page}"
    );
    // It is alice's: carol, of the same tenant, finds it on neither host (issue 35).
    for host in [&a.url, &b.url] {
        let carol = client(host, "acme-carol-token").await;
        let read = tool(
            &carol,
            "crm_read_result_file",
            json!({"file": uri, "offset": 0, "limit": 10}),
        )
        .await;
        assert_eq!(read.is_error, Some(true), "{read:?}");
        let listed = carol.peer().list_all_resources().await.unwrap();
        assert!(listed.iter().all(|r| r.uri != uri), "{listed:?}");
    }

    // A tenant added to the registry is served by both hosts, without a restart; then the
    // acme token is revoked and neither host lets it in.
    let both = broker.tenants_file(&["acme", "globex"], &[alice, bob]);
    command(
        &store,
        &dir,
        &[
            "tenants",
            "import",
            tenants_file(&dir, "two.toml", &both).to_str().unwrap(),
        ],
    );
    let took = within_a_second("globex on host B", async || {
        admitted(&b.url, "globex-token").await
    })
    .await;
    eprintln!("host B served the new tenant after {took:?}");
    let globex_only = broker.tenants_file(&["acme", "globex"], &[bob]);
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
            tenants_file(&dir, "four.toml", &both).to_str().unwrap(),
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

    // A component swapped through host A's admin route is served and announced by host B;
    // one swapped from the command line reaches both the same way. Calls go on.
    let heard = on_b.service().0.clone();
    let v2 = dir.join("v2.wasm");
    std::fs::write(&v2, relabelled_plugin("fleet-v2")).unwrap();
    assert_eq!(
        a.admin_with("/admin/tenants/acme/component", Some(&v2)),
        200
    );
    let announced = async |count: usize| {
        let began = Instant::now();
        while heard.load(Ordering::SeqCst) < count {
            // Loading the new component takes a moment on each host.
            assert!(
                began.elapsed() < Duration::from_secs(60),
                "host B announced swap {count}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    announced(1).await;
    assert_eq!(read_account(&on_b).await.is_error, Some(false));
    let v3 = dir.join("v3.wasm");
    std::fs::write(&v3, relabelled_plugin("fleet-v3")).unwrap();
    let swapped = command(
        &store,
        &dir,
        &["tenants", "swap", "acme", v3.to_str().unwrap()],
    );
    assert_eq!(swapped["tenant"], "acme");
    announced(2).await;
    assert_eq!(read_account(&on_a).await.is_error, Some(false));
    assert_eq!(read_account(&on_b).await.is_error, Some(false));
    let _ = std::fs::remove_dir_all(&dir);
}
