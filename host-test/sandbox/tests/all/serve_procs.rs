//! `crm-sandbox` processes for the fleet tests: the sandbox served as an HTTPS broker, `serve`
//! hosts on one PostgreSQL registry, the command line, and MCP clients of those hosts.

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

pub(crate) const BINARY: &str = env!("CARGO_BIN_EXE_crm-sandbox");

/// `crm-sandbox --store URL args…`, its JSON answer.
pub(crate) fn command(store: &str, dir: &Path, args: &[&str]) -> Value {
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
pub(crate) struct Serving {
    child: std::process::Child,
    pub(crate) url: String,
}

/// The sandbox CRM as an HTTPS broker: its URL, certificate and each tenant's credential.
pub(crate) struct Broker {
    _child: Serving,
    pub(crate) url: String,
    pub(crate) cert: PathBuf,
    pub(crate) credentials: Value,
}

impl Broker {
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

    /// The tenant's broker credential.
    pub(crate) fn credential(&self, tenant: &str) -> &str {
        self.credentials[tenant].as_str().unwrap()
    }

    /// A tenants file: each tenant on this broker, its credential in `<TENANT>_CREDENTIAL`,
    /// the tokens given, acme's writes confirmed, `operator-token` the operator's.
    pub(crate) fn tenants_file(&self, tenants: &[&str], tokens: &[(&str, &str, &str)]) -> String {
        let vars: Vec<String> = tenants
            .iter()
            .map(|t| format!("{}_CREDENTIAL", t.to_uppercase()))
            .collect();
        let tenants: Vec<(&str, &str)> = tenants
            .iter()
            .zip(&vars)
            .map(|(t, v)| (*t, v.as_str()))
            .collect();
        self.tenants_file_with(&tenants, tokens, Some("operator-token"))
    }

    /// A tenants file: each `(tenant, credential variable)` on this broker, the tokens given,
    /// acme's writes confirmed, and the operator's token when given.
    pub(crate) fn tenants_file_with(
        &self,
        tenants: &[(&str, &str)],
        tokens: &[(&str, &str, &str)],
        operator: Option<&str>,
    ) -> String {
        let mut text = String::new();
        for (tenant, variable) in tenants {
            text += &format!(
                "[[tenants]]\nid = \"{tenant}\"\nproxy_base = \"{}\"\n\
                 credential_env = \"{variable}\"\ninstance_url = \"{}\"\n",
                self.url,
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
        match operator {
            Some(token) => text + &format!("[admin]\nsha256 = \"{}\"\n", token_hash(token)),
            None => text,
        }
    }
}

impl Serving {
    /// A host with every sandbox tenant's credential in `<TENANT>_CREDENTIAL`.
    pub(crate) fn start(store: &str, dir: &Path, name: &str, broker: &Broker) -> Self {
        let env = [
            ("ACME_CREDENTIAL", broker.credential("acme")),
            ("GLOBEX_CREDENTIAL", broker.credential("globex")),
        ];
        Serving::start_with(store, dir, name, broker, &env)
    }

    /// A host with exactly the variables `env` set (besides the test's own environment).
    pub(crate) fn start_with(
        store: &str,
        dir: &Path,
        name: &str,
        broker: &Broker,
        env: &[(&str, &str)],
    ) -> Self {
        let mut command = std::process::Command::new(BINARY);
        command
            .env("XDG_CACHE_HOME", crate::fixtures::cache_home())
            .envs(env.iter().copied())
            .arg("--store")
            .arg(store)
            .arg("--data-dir")
            .arg(dir.join(name))
            .arg("--ca-cert")
            .arg(&broker.cert)
            .args(["serve", "--listen", "127.0.0.1:0"]);
        Serving::spawn(command)
    }

    /// Runs `command` (a `serve`), its stdout read for where it listens.
    pub(crate) fn spawn(mut command: std::process::Command) -> Self {
        let mut child = command
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

    pub(crate) fn admin(&self, path: &str) -> u16 {
        self.admin_with(path, None)
    }

    /// POSTs to an operator's route, with a file as the body when given; the status.
    pub(crate) fn admin_with(&self, path: &str, body: Option<&Path>) -> u16 {
        let mut curl = std::process::Command::new("curl");
        curl.args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST"])
            .arg("-H")
            .arg("Authorization: Bearer operator-token");
        if let Some(file) = body {
            curl.arg("--data-binary")
                .arg(format!("@{}", file.display()));
        }
        let response = curl.arg(format!("{}{path}", self.base())).output().unwrap();
        String::from_utf8_lossy(&response.stdout).parse().unwrap()
    }

    /// GETs a route, with a bearer token when given: the status and the body.
    pub(crate) async fn get(&self, path: &str, token: Option<&str>) -> (u16, String) {
        let mut curl = std::process::Command::new("curl");
        curl.args(["-s", "-w", "\n%{http_code}"]);
        if let Some(token) = token {
            curl.arg("-H").arg(format!("Authorization: Bearer {token}"));
        }
        curl.arg(format!("{}{path}", self.base()));
        let response = tokio::task::spawn_blocking(move || curl.output()).await;
        let text = String::from_utf8_lossy(&response.unwrap().unwrap().stdout).into_owned();
        let (body, status) = text.rsplit_once('\n').unwrap();
        (status.parse().unwrap(), body.to_string())
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The origin, without `/mcp`.
    fn base(&self) -> &str {
        self.url.trim_end_matches("/mcp")
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
pub(crate) struct Listener(pub(crate) Arc<AtomicUsize>);

impl ClientHandler for Listener {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

pub(crate) async fn client(url: &str, token: &str) -> RunningService<RoleClient, Listener> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token);
    Listener::default()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

/// Whether `token` is let in at `url` (a bare initialize request).
pub(crate) async fn admitted(url: &str, token: &str) -> bool {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .is_ok()
}

pub(crate) async fn read_account(
    client: &RunningService<RoleClient, Listener>,
) -> rmcp::model::CallToolResult {
    let params: CallToolRequestParams = serde_json::from_value(json!({
        "name": "crmb_get_record",
        "arguments": {"object": "Account", "record_id": "0015gA000000001ABA", "fields": ["Name"]},
    }))
    .unwrap();
    client.call_tool(params).await.unwrap()
}

pub(crate) async fn tool(
    client: &RunningService<RoleClient, Listener>,
    name: &str,
    arguments: Value,
) -> rmcp::model::CallToolResult {
    let params: CallToolRequestParams =
        serde_json::from_value(json!({"name": name, "arguments": arguments})).unwrap();
    client.call_tool(params).await.unwrap()
}

/// Polls `done` every 10 ms until it holds, failing past a second; how long it took.
pub(crate) async fn within_a_second(what: &str, mut done: impl AsyncFnMut() -> bool) -> Duration {
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

/// Writes a tenants file into `dir`; its path.
pub(crate) fn tenants_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}
