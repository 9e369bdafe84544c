//! Long work shows progress: an MCP client that sends a `progressToken` with a `to_file`
//! export of 5,000 HubSpot contacts (25 pages) hears `notifications/progress` (records so far, of the
//! total), growing and at most a few a second, before the answer with the file's resource link.
//! (A client that sends no token hears nothing: the Python SDK's check in CI.)

use crate::fixtures::{ALL_SCOPES, plugin, runtime, temp_dir};
use crm_host::mcp::{McpServer, Principal};
use crm_host::{AuditLog, Host};
use crm_sandbox::SandboxCrm;
use rmcp::ServiceExt;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The server's next message, as JSON; `None` when it has closed the connection.
async fn next_message<R: tokio::io::AsyncBufRead + Unpin>(
    lines: &mut tokio::io::Lines<R>,
) -> Option<Value> {
    let line = lines.next_line().await.unwrap()?;
    Some(serde_json::from_str(&line).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_with_a_progress_token_reports_growing_progress_then_links_the_file() {
    let dir = temp_dir("progress");
    let sandbox = SandboxCrm::new();
    sandbox
        .seed_hubspot_contacts("acme", 5_000, "Progress Import Co")
        .unwrap();
    let host = Arc::new(Host::new(
        runtime(),
        Arc::new(sandbox),
        AuditLog::in_memory(),
    ));
    let mut spec = SandboxCrm::tenant_spec("acme");
    spec.results_dir = Some(dir.clone());
    host.add_tenant(spec, plugin()).unwrap();
    let principal = Principal {
        tenant_id: "acme".into(),
        user_id: "demo-user".into(),
        granted_scopes: ALL_SCOPES.iter().map(|s| s.to_string()).collect(),
        instance_url: None,
        authority: crm_host::mcp::Authority::Process,
    };
    let (server_end, client_end) = tokio::io::duplex(1 << 20);
    let server = McpServer::for_principal(host, principal);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    // A bare JSON-RPC client, reading the server's messages in the order they are sent: rmcp's
    // client hands each notification to a task of its own, so its handler may run after the
    // answer has come, and the order could not be seen through it.
    let (reader, mut writer) = tokio::io::split(client_end);
    let mut lines = BufReader::new(reader).lines();
    let mut send = async |message: Value| {
        writer
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "progress-test", "version": "1"}}}),
    )
    .await;
    let initialized = next_message(&mut lines).await.unwrap();
    assert_eq!(initialized["id"], 0, "{initialized}");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let export = json!({"object_type": "contacts", "to_file": true, "properties": ["email"],
        "filter_groups": [{"filters": [{"property": "company", "operator": "EQ",
                                        "value": "Progress Import Co"}]}]});
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "crma_search_records", "arguments": export,
        "_meta": {"progressToken": "export-1"}}}),
    )
    .await;

    let mut heard: Vec<(Instant, Value)> = Vec::new();
    let result = loop {
        let message = next_message(&mut lines).await.expect("the answer comes");
        if message["method"] == "notifications/progress" {
            heard.push((Instant::now(), message["params"].clone()));
        } else if message["id"] == 1 {
            break message["result"].clone();
        }
    };
    assert_ne!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    let answer: Value = serde_json::from_str(text).unwrap();
    assert_eq!(answer["record_count"], 5_000);
    assert!(
        result["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "resource_link"),
        "the answer links the file: {result}"
    );
    // Nothing more after the answer.
    let after = tokio::time::timeout(Duration::from_millis(500), next_message(&mut lines)).await;
    assert!(
        !matches!(&after, Ok(Some(m)) if m["method"] == "notifications/progress"),
        "progress after the answer: {after:?}"
    );

    assert!(heard.len() >= 10, "{} notifications", heard.len());
    assert!(heard.iter().all(|(_, p)| p["progressToken"] == "export-1"));
    let progress: Vec<f64> = heard
        .iter()
        .map(|(_, p)| p["progress"].as_f64().unwrap())
        .collect();
    assert!(progress.windows(2).all(|w| w[0] < w[1]), "{progress:?}");
    assert_eq!(*progress.last().unwrap(), 5_000.0);
    assert!(heard.iter().all(|(_, p)| p["total"] == 5_000.0));
    // A few a second at most: 25 pages in about 5 s (searches paced under 5 a second) are
    // reported about 4 times a second.
    let span = heard.last().unwrap().0 - heard[0].0;
    assert!(
        (heard.len() as f64) <= span.as_secs_f64() * 4.5 + 2.0,
        "{} notifications in {span:?}",
        heard.len()
    );

    std::fs::remove_dir_all(&dir).unwrap();
}
