//! The MCP server driven by a real MCP client (rmcp's): over stdio through the `crm-host mcp`
//! binary, and in process over a pipe, where a swap can happen mid-session.

use crate::fixtures::*;
use crm_host::mcp::{McpServer, Principal};
use rmcp::model::{CallToolRequestParams, ErrorCode, ReadResourceRequestParams, ResourceContents};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// `crm-host mcp` on the sandbox, with its own data and results directories.
pub(crate) fn stdio_command(
    dir: &std::path::Path,
    settings: &[(&str, &str)],
) -> tokio::process::Command {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_crm-sandbox")).configure(|c| {
        c.env("XDG_CACHE_HOME", crate::fixtures::cache_home())
            .arg("mcp")
            .arg("--data-dir")
            .arg(dir.join("data"))
            .arg("--results-dir")
            .arg(dir.join("results"));
        for (k, v) in settings {
            c.env(k, v);
        }
    })
}

pub(crate) fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("crm-mcp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

pub(crate) fn call(tool: &'static str, input: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(tool).with_arguments(input.as_object().cloned().unwrap())
}

/// A tool's answer as JSON, in whichever form the server gives it: `structuredContent`
/// (`--answers structured`), or else the text block (the default form), which holds the same
/// JSON.
pub(crate) fn answer(result: &rmcp::model::CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    if let Some(structured) = &result.structured_content {
        return structured.clone();
    }
    let text = &result.content[0].as_text().expect("a text block").text;
    serde_json::from_str(text).expect("the text is the answer as JSON")
}

/// A tool error as a client shows it: no `structuredContent` (a client would check it against
/// the success schema), and `{"error": {"kind", "message"}}` as the text.
pub(crate) fn tool_error(result: &rmcp::model::CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert!(result.structured_content.is_none(), "{result:?}");
    let text = result.content[0]
        .as_text()
        .expect("a text block")
        .text
        .clone();
    serde_json::from_str(&text).expect("the text is the error as JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_over_stdio_lists_reads_creates_and_sees_errors() {
    let dir = temp_dir("stdio");
    // A threshold of one record sends every query with more to a file, to read back; answers
    // structured, so tools list the output schemas checked here.
    let settings = [
        ("CRM_FILE_THRESHOLD_RECORDS", "1"),
        ("CRM_HOST_ANSWERS", "structured"),
    ];
    let transport = TokioChildProcess::new(stdio_command(&dir, &settings)).unwrap();
    let client = ().serve(transport).await.unwrap();

    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(
        tools.len(),
        30,
        "29 component tools and crm_read_result_file"
    );
    for tool in &tools {
        let annotations = tool.annotations.as_ref().unwrap();
        assert!(annotations.read_only_hint.is_some(), "{}", tool.name);
        assert!(tool.title.is_some(), "{}", tool.name);
        let schema = tool.output_schema.as_ref().unwrap();
        assert_eq!(schema["type"], "object", "{}", tool.name);
    }
    let update = tools
        .iter()
        .find(|t| t.name == "crma_update_record")
        .unwrap();
    assert_eq!(
        update.annotations.as_ref().unwrap().destructive_hint,
        Some(true)
    );
    let create = tools
        .iter()
        .find(|t| t.name == "crmb_create_record")
        .unwrap();
    assert_eq!(
        create.annotations.as_ref().unwrap().destructive_hint,
        Some(false)
    );

    let read = client
        .call_tool(call(
            "crmb_get_record",
            json!({"object": "Account", "record_id": "0015gA000000001ABA", "fields": ["Name"]}),
        ))
        .await
        .unwrap();
    assert_eq!(read.is_error, Some(false));
    let out = answer(&read);
    assert_eq!(out["record"]["Name"], "Acme Energy");
    let text = read.content[0].as_text().unwrap().text.clone();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), out);

    let created = client
        .call_tool(call(
            "crma_create_record",
            json!({"object_type": "deals", "properties": {"dealname": "From MCP"}}),
        ))
        .await
        .unwrap();
    assert_eq!(created.is_error, Some(false));
    assert!(answer(&created)["id"].is_string());

    let failed = client
        .call_tool(call(
            "crmb_get_record",
            json!({"object": "Account", "record_id": "not-an-id"}),
        ))
        .await
        .unwrap();
    assert_eq!(failed.is_error, Some(true));
    let error = &tool_error(&failed)["error"];
    assert_eq!(error["kind"], "invalid-input");
    assert!(error["message"].as_str().unwrap().contains("not-an-id"));

    let unknown = client
        .call_tool(call("crmb_delete_record", json!({})))
        .await
        .unwrap_err();
    let rmcp::ServiceError::McpError(unknown) = unknown else {
        panic!("{unknown:?}")
    };
    assert_eq!(unknown.code, ErrorCode::INVALID_PARAMS);

    // A large result: a file, linked, readable as a resource and page by page.
    let query = client
        .call_tool(call(
            "crmb_run_soql_query",
            json!({"query": "SELECT Id, Name FROM Account"}),
        ))
        .await
        .unwrap();
    let out = answer(&query);
    let count = out["record_count"].as_u64().unwrap();
    assert!(count > 1, "{out}");
    let link = query
        .content
        .iter()
        .find_map(|c| c.as_resource_link())
        .expect("a resource link")
        .clone();
    assert_eq!(link.mime_type.as_deref(), Some("application/x-ndjson"));
    let resource = client
        .read_resource(ReadResourceRequestParams::new(link.uri.clone()))
        .await
        .unwrap();
    let ResourceContents::TextResourceContents { text, .. } = &resource.contents[0] else {
        panic!("text contents")
    };
    assert_eq!(text.lines().count() as u64, count);
    let page = answer(
        &client
            .call_tool(call(
                "crm_read_result_file",
                json!({"file": link.uri, "offset": 1, "limit": 1}),
            ))
            .await
            .unwrap(),
    );
    assert_eq!(page["records"].as_array().unwrap().len(), 1);
    assert_eq!(
        page["records"][0],
        serde_json::from_str::<Value>(text.lines().nth(1).unwrap()).unwrap()
    );
    // Names only: no path reaches outside the tenant's directory.
    for bad in [
        "crm-results://files/../data",
        "crm-results://files/.hidden",
        "file:///etc/passwd",
    ] {
        assert!(
            client
                .read_resource(ReadResourceRequestParams::new(bad))
                .await
                .is_err(),
            "{bad}"
        );
    }

    client.cancel().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_stdout_line_of_the_stdio_server_is_a_json_rpc_message() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let dir = temp_dir("stdout");
    let mut child = stdio_command(&dir, &[])
        .arg("--audit")
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "crmb_get_record", "arguments": {"object": "Account", "record_id": "0015gA000000001ABA"}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "crma_list_owners", "arguments": {}}}),
    ];
    for message in &messages {
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut answered = Vec::new();
    while answered.len() < 4 {
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .expect("an answer per request");
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a non-JSON line {line:?}: {e}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        if let Some(id) = message.get("id") {
            answered.push(id.as_u64().unwrap());
        }
    }
    answered.sort();
    assert_eq!(answered, [1, 2, 3, 4]);
    // Stdin EOF ends the server cleanly, with nothing more on stdout.
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status}");
    while let Some(line) = lines.next_line().await.unwrap() {
        let message: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(message["jsonrpc"], "2.0");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Counts `notifications/tools/list_changed`.
#[derive(Clone, Default)]
struct Listener(Arc<AtomicUsize>);

impl ClientHandler for Listener {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A principal of `tenant` acting as `user`, with every scope the spec asks for.
fn principal(tenant: &str, user: &str, instance_url: Option<String>) -> Principal {
    Principal {
        tenant_id: tenant.into(),
        user_id: user.into(),
        granted_scopes: ALL_SCOPES.iter().map(|s| s.to_string()).collect(),
        instance_url,
        authority: crm_host::mcp::Authority::Process,
    }
}

/// An MCP server for `principal` in process, serving on one end of a pipe; returns the other.
fn serve_in_process(host: Arc<crm_host::Host>, principal: Principal) -> tokio::io::DuplexStream {
    let (server_end, client_end) = tokio::io::duplex(1 << 20);
    let server = McpServer::for_principal(host, principal);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    client_end
}

/// The acme sandbox tenant's MCP server in process, and a client on the other end of a pipe.
async fn in_process(host: Arc<crm_host::Host>) -> RunningService<RoleClient, Listener> {
    let acme = principal(
        "acme",
        "demo-user",
        Some(crm_sandbox::SandboxCrm::instance_url("acme")),
    );
    Listener::default()
        .serve(serve_in_process(host, acme))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swap_during_a_session_loses_no_call_and_tells_the_client() {
    let (host, _) = acme_sandbox();
    let host = Arc::new(host);
    let client = Arc::new(in_process(host.clone()).await);
    let notified = client.service().0.clone();

    let calls: Vec<_> = (0..16)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move {
                client
                    .call_tool(call(
                        "crmb_generate_record_url",
                        json!({"object": "Account", "record_id": "0015gA000000001ABA"}),
                    ))
                    .await
            })
        })
        .collect();
    host.swap("acme", &relabelled_plugin("v2")).unwrap();
    for call in calls {
        let result = call.await.unwrap().unwrap();
        assert_eq!(result.is_error, Some(false), "{result:?}");
    }
    tokio::time::timeout(Duration::from_secs(10), async {
        while notified.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("notifications/tools/list_changed after the swap");
    assert_eq!(client.list_all_tools().await.unwrap().len(), 30);
}

/// Both sandbox tenants behind one Streamable HTTP server, each with its own token and
/// results directory; returns the endpoint URL.
async fn http_server(dir: &std::path::Path) -> String {
    use crm_host::mcp::admin::{Admin, CredentialSource};
    use crm_host::mcp::http::{Gate, serve_with_admin};
    let host = sandbox_tenants(dir, &[("CRM_FILE_THRESHOLD_RECORDS", "1")]);
    let hash = crm_host::mcp::tenants::token_hash;
    let tokens = sandbox_tokens(&two_tenants_file(""));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let gate = Gate {
        tokens: tokens.into(),
        allowed_origins: vec!["https://assistant.example".into()],
        public_url: url::Url::parse(&format!("{base}/mcp")).unwrap(),
    };
    let admin = Admin {
        operator: hash("operator-token").into(),
        credentials: ["acme", "globex"]
            .into_iter()
            .map(|t| {
                let credential = crm_sandbox::SandboxCrm::tenant_spec(t).credential;
                (t.to_string(), CredentialSource::Fixed(credential))
            })
            .collect(),
        fleet: None,
    };
    tokio::spawn(serve_with_admin(host, gate, Some(admin), listener));
    format!("{base}/mcp")
}

pub(crate) async fn http_client(url: &str, token: &str) -> RunningService<RoleClient, ()> {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

/// A tenant's session: its own account reads, the other tenant's is not found, and its
/// query result file is readable; returns that file's URI.
async fn tenant_session(url: &str, token: &str, own: &str, other: &str, query: &str) -> String {
    let client = http_client(url, token).await;
    assert_eq!(client.list_all_tools().await.unwrap().len(), 30);
    let read = |id: &str| {
        call(
            "crmb_get_record",
            json!({"object": "Account", "record_id": id, "fields": ["Name"]}),
        )
    };
    let mine = client.call_tool(read(own)).await.unwrap();
    assert_eq!(mine.is_error, Some(false), "{mine:?}");
    let theirs = client.call_tool(read(other)).await.unwrap();
    assert_eq!(theirs.is_error, Some(true));
    assert_eq!(tool_error(&theirs)["error"]["kind"], "not-found");
    let query = client
        .call_tool(call("crmb_run_soql_query", json!({"query": query})))
        .await
        .unwrap();
    let link = query
        .content
        .iter()
        .find_map(|c| c.as_resource_link())
        .expect("a result file")
        .uri
        .clone();
    client
        .read_resource(ReadResourceRequestParams::new(link.clone()))
        .await
        .unwrap();
    client.cancel().await.unwrap();
    link
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_each_token_sees_only_its_own_tenant() {
    let dir = temp_dir("http");
    let url = http_server(&dir).await;
    let (acme_file, globex_file) = tokio::join!(
        tenant_session(
            &url,
            "acme-token",
            "0015gA000000001ABA",
            "0017kB200000001ABA",
            "SELECT Id, Name FROM Account"
        ),
        tenant_session(
            &url,
            "globex-token",
            "0017kB200000001ABA",
            "0015gA000000001ABA",
            "SELECT Name, Id FROM Account"
        ),
    );
    // Each result file lives in its own tenant's directory only...
    let name = |uri: &str| uri.rsplit('/').next().unwrap().to_string();
    let find = crate::http_server::find_file;
    assert!(find(&dir.join("acme"), &name(&acme_file)).is_some());
    assert!(find(&dir.join("globex"), &name(&acme_file)).is_none());
    // ...and the other tenant's token cannot read it, as a resource or page by page.
    assert_ne!(name(&acme_file), name(&globex_file));
    let globex = http_client(&url, "globex-token").await;
    assert!(
        globex
            .read_resource(ReadResourceRequestParams::new(acme_file.clone()))
            .await
            .is_err()
    );
    let paged = globex
        .call_tool(call("crm_read_result_file", json!({"file": acme_file})))
        .await
        .unwrap();
    assert_eq!(paged.is_error, Some(true));
    globex.cancel().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_no_token_a_wrong_token_or_a_foreign_origin_is_refused() {
    let dir = temp_dir("http-refusals");
    let url = http_server(&dir).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let post = |headers: Vec<(&'static str, String)>| {
        let url = url.clone();
        let body = initialize.to_string();
        async move {
            let mut request = ::http::Request::post(&url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream");
            for (k, v) in headers {
                request = request.header(k, v);
            }
            send(request.body(body).unwrap()).await
        }
    };
    let (status, headers) = post(vec![]).await;
    assert_eq!(status, 401);
    let challenge = headers.get("www-authenticate").unwrap().to_str().unwrap();
    assert!(
        challenge.starts_with("Bearer resource_metadata=")
            && challenge.contains("/.well-known/oauth-protected-resource"),
        "{challenge}"
    );
    let (status, headers) = post(vec![("authorization", "Bearer not-a-token".into())]).await;
    assert_eq!(status, 401);
    assert!(
        headers["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("invalid_token")
    );
    let token = ("authorization", "Bearer acme-token".to_string());
    let (status, _) = post(vec![
        token.clone(),
        ("origin", "https://evil.example".into()),
    ])
    .await;
    assert_eq!(status, 403);
    let (status, _) = post(vec![
        token.clone(),
        ("origin", "https://assistant.example".into()),
    ])
    .await;
    assert_eq!(status, 200);
    let metadata = url.replace("/mcp", "/.well-known/oauth-protected-resource");
    let (status, _) = send(::http::Request::get(&metadata).body(String::new()).unwrap()).await;
    assert_eq!(status, 200);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_an_operator_disconnects_a_crm_and_the_model_cannot() {
    let dir = temp_dir("http-admin");
    let url = http_server(&dir).await;
    let route = |action: &str| {
        url.replace(
            "/mcp",
            &format!("/admin/tenants/acme/connections/crm-b/{action}"),
        )
    };
    let post = |path: String, token: &str| {
        send(
            ::http::Request::post(path)
                .header("authorization", format!("Bearer {token}"))
                .body(String::new())
                .unwrap(),
        )
    };
    let read = || {
        call(
            "crmb_get_record",
            json!({"object": "Account", "record_id": "0015gA000000001ABA", "fields": ["Name"]}),
        )
    };
    // A model's token is no operator's: the admin routes refuse it.
    assert_eq!(post(route("disconnect"), "acme-token").await.0, 401);
    let client = http_client(&url, "acme-token").await;
    let tools = client.list_all_tools().await.unwrap();
    // No tool changes a connection: the only one that names it only reads it.
    assert!(
        tools
            .iter()
            .filter(|t| t.name.contains("connect"))
            .all(|t| t.name == "crm_connection_status"
                && t.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true))
    );
    assert_eq!(post(route("disconnect"), "operator-token").await.0, 200);
    let refused = client.call_tool(read()).await.unwrap();
    assert_eq!(refused.is_error, Some(true));
    assert_eq!(tool_error(&refused)["error"]["kind"], "not-connected");
    // HubSpot for the same tenant, and the other tenant, go on.
    let hubspot = client
        .call_tool(call("crma_get_account_details", json!({})))
        .await
        .unwrap();
    assert_eq!(hubspot.is_error, Some(false), "{hubspot:?}");
    let globex = http_client(&url, "globex-token").await;
    let theirs = globex
        .call_tool(call(
            "crmb_get_record",
            json!({"object": "Account", "record_id": "0017kB200000001ABA", "fields": ["Name"]}),
        ))
        .await
        .unwrap();
    assert_eq!(theirs.is_error, Some(false), "{theirs:?}");
    assert_eq!(post(route("connect"), "operator-token").await.0, 200);
    let back = client.call_tool(read()).await.unwrap();
    assert_eq!(back.is_error, Some(false), "{back:?}");
    client.cancel().await.unwrap();
    globex.cancel().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// One plain HTTP/1.1 exchange on loopback: the status and headers.
async fn send(request: ::http::Request<String>) -> (u16, ::http::HeaderMap) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let uri = request.uri().clone();
    let authority = uri.authority().unwrap().to_string();
    let mut stream = tokio::net::TcpStream::connect(&authority).await.unwrap();
    let mut head = format!(
        "{} {} HTTP/1.1\r\nhost: {authority}\r\nconnection: close\r\ncontent-length: {}\r\n",
        request.method(),
        uri.path(),
        request.body().len()
    );
    for (name, value) in request.headers() {
        head.push_str(&format!("{name}: {}\r\n", value.to_str().unwrap()));
    }
    head.push_str("\r\n");
    head.push_str(request.body());
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await;
    let text = String::from_utf8_lossy(&answer);
    let mut lines = text.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let mut headers = ::http::HeaderMap::new();
    for line in lines.take_while(|l| !l.is_empty()) {
        if let Some((k, v)) = line.split_once(": ") {
            headers.insert(
                ::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
    }
    (status, headers)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stateless_2026_era_discovers_calls_and_hears_of_swaps() {
    use rmcp::model::{ProtocolVersion, SubscriptionFilter};
    use rmcp::{ClientLifecycleMode, ClientServiceExt};
    let (host, _) = acme_sandbox();
    let host = Arc::new(host);
    let client_end = serve_in_process(host.clone(), principal("acme", "demo-user", None));
    let client = ()
        .serve_with_lifecycle(
            client_end,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap();
    assert_eq!(
        client.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2026_07_28
    );
    assert_eq!(client.list_all_tools().await.unwrap().len(), 30);
    let owners = client
        .call_tool(call("crma_list_owners", json!({})))
        .await
        .unwrap();
    assert_eq!(owners.is_error, Some(false));
    let mut subscription = client
        .peer()
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .unwrap();
    host.swap("acme", &relabelled_plugin("v3")).unwrap();
    let heard = tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("a notification after the swap")
        .unwrap();
    assert!(
        format!("{heard:?}").contains("ToolListChanged"),
        "{heard:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_the_2026_era_discovers_and_calls_with_the_token_picking_the_tenant() {
    use rmcp::model::ProtocolVersion;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::{ClientLifecycleMode, ClientServiceExt};
    let dir = temp_dir("http-2026");
    let url = http_server(&dir).await;
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header("globex-token");
    let client = ()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(config),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap();
    discovered_session_reads(client, "0017kB200000001ABA", "Globex Shipping").await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_stops_and_a_write_already_sent_is_audited_as_unknown() {
    use crm_host::audit::AuditEvent;
    use crm_sandbox::stub::{Reply, StubBackend};
    // The broker takes ten seconds to answer a create; the client gives up first.
    let stub = StubBackend::with_handler(|_| {
        Reply::Delay(
            Duration::from_secs(10),
            Box::new(Reply::json(
                201,
                json!({"id": "00T000000000001EAA", "success": true, "errors": []}),
            )),
        )
    });
    let f = fixture(stub);
    let client_end = serve_in_process(
        f.host.clone(),
        principal("t1", "u1", Some("https://acme.my.salesforce.com".into())),
    );
    let client = Arc::new(().serve(client_end).await.unwrap());
    let started = std::time::Instant::now();
    let pending = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .call_tool(call(
                    "crmb_create_record",
                    json!({"object": "Task", "fields": {"Subject": "Call back"}}),
                ))
                .await
        })
    };
    while f.stub.requests().is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Dropping the request sends notifications/cancelled.
    pending.abort();
    let outcome = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let outcome = f.audit.events().into_iter().find_map(|e| match e {
                AuditEvent::ToolCall { tool, outcome, .. } if tool == "crmb_create_record" => {
                    Some(outcome)
                }
                _ => None,
            });
            if let Some(outcome) = outcome {
                return outcome;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the cancelled call is audited at once");
    assert_eq!(outcome, "outcome-unknown");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "it did not wait for the broker"
    );
    assert_eq!(
        f.stub.requests().len(),
        1,
        "the write went out once, never retried"
    );
    // The session goes on.
    let next = client
        .call_tool(call(
            "crmb_generate_record_url",
            json!({"object": "Account", "record_id": "001000000000001AAA"}),
        ))
        .await
        .unwrap();
    assert_eq!(next.is_error, Some(false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trap_inside_the_component_is_an_internal_error_and_the_server_goes_on() {
    let f = fixture(record_stub(Duration::ZERO));
    f.host.swap_version("t1", probe(&runtime())).unwrap();
    let client_end = serve_in_process(f.host.clone(), principal("t1", "u1", None));
    let client = ().serve(client_end).await.unwrap();
    let trapped = client.call_tool(call("trap", json!({}))).await.unwrap_err();
    let rmcp::ServiceError::McpError(trapped) = trapped else {
        panic!("{trapped:?}")
    };
    assert_eq!(trapped.code, ErrorCode::INTERNAL_ERROR);
    assert!(trapped.message.contains("wasm trap"), "{}", trapped.message);
    let next = client.call_tool(call("config", json!({}))).await.unwrap();
    assert_eq!(next.is_error, Some(false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_the_2026_era_discovers_and_calls() {
    use rmcp::model::ProtocolVersion;
    use rmcp::{ClientLifecycleMode, ClientServiceExt};
    let dir = temp_dir("stdio-2026");
    let client = ()
        .serve_with_lifecycle(
            TokioChildProcess::new(stdio_command(&dir, &[])).unwrap(),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap();
    discovered_session_reads(client, "0015gA000000001ABA", "Acme Energy").await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A session opened with `server/discover` (2026-07-28) lists the tools and reads an account.
async fn discovered_session_reads(
    client: RunningService<RoleClient, ()>,
    account: &str,
    name: &str,
) {
    use rmcp::model::ProtocolVersion;
    assert_eq!(
        client.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2026_07_28
    );
    assert_eq!(client.list_all_tools().await.unwrap().len(), 30);
    let read = client
        .call_tool(call(
            "crmb_get_record",
            json!({"object": "Account", "record_id": account, "fields": ["Name"]}),
        ))
        .await
        .unwrap();
    assert_eq!(answer(&read)["record"]["Name"], name);
    client.cancel().await.unwrap();
}

#[cfg(unix)]
#[test]
fn an_operators_stop_signal_ends_the_stdio_server_cleanly_with_every_audit_line_written() {
    use std::io::{BufRead, Write};
    let dir = temp_dir("stdio-stop");
    std::fs::create_dir_all(&dir).unwrap();
    let audit = dir.join("audit.jsonl");
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_crm-sandbox"))
        .env("XDG_CACHE_HOME", crate::fixtures::cache_home())
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--audit")
        .arg(&audit)
        .arg("mcp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(server.stdout.take().unwrap());
    let mut exchange = |message: Value, answer: bool| {
        writeln!(stdin, "{message}").unwrap();
        let mut line = String::new();
        if answer {
            stdout.read_line(&mut line).unwrap();
        }
        line
    };
    exchange(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        true,
    );
    exchange(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        false,
    );
    let answer = exchange(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "crmb_generate_record_url", "arguments": {"object": "Account", "record_id": "0015gA000000001ABA"}}}),
        true,
    );
    assert!(answer.contains("lightning"), "{answer}");
    // SIGTERM while the client still holds stdin open: the server stops as asked, exits 0
    // (not killed by the signal), and its audit trail is complete.
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = server.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let written = std::fs::read_to_string(&audit).unwrap();
    assert!(
        written.contains("\"tool\":\"crmb_generate_record_url\""),
        "{written}"
    );
    drop(stdin);
    let _ = std::fs::remove_dir_all(&dir);
}
