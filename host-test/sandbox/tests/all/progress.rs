//! Long work shows progress: an MCP client that sends a `progressToken` with a `to_file`
//! export of 25,000 HubSpot contacts hears `notifications/progress` (records so far, of the
//! total), growing and at most a few a second, before the answer with the file's resource link.
//! (A client that sends no token hears nothing: the Python SDK's check in CI.)

use crate::fixtures::{ALL_SCOPES, plugin, runtime, temp_dir};
use crate::mcp::{answer, call};
use crm_host::mcp::{McpServer, Principal};
use crm_host::{AuditLog, Host};
use crm_sandbox::SandboxCrm;
use rmcp::model::{NumberOrString, ProgressNotificationParam, ProgressToken, RequestMetaObject};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Every progress notification heard, with when.
#[derive(Clone, Default)]
struct Watcher(Arc<Mutex<Vec<(Instant, ProgressNotificationParam)>>>);

impl ClientHandler for Watcher {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0.lock().unwrap().push((Instant::now(), params));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_with_a_progress_token_reports_growing_progress_then_links_the_file() {
    let dir = temp_dir("progress");
    let sandbox = SandboxCrm::new();
    sandbox
        .seed_hubspot_contacts("acme", 25_000, "Progress Import Co")
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
    let watcher = Watcher::default();
    let heard = watcher.0.clone();
    let client = watcher.serve(client_end).await.unwrap();

    let export = json!({"object_type": "contacts", "to_file": true, "properties": ["email"],
        "filter_groups": [{"filters": [{"property": "company", "operator": "EQ",
                                        "value": "Progress Import Co"}]}]});
    let mut request = call("crma_search_records", export);
    request.meta = Some(RequestMetaObject::with_progress_token(ProgressToken(
        NumberOrString::String("export-1".into()),
    )));
    let result = client.call_tool(request).await.unwrap();
    let answered = Instant::now();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(answer(&result)["record_count"], 25_000);
    assert!(
        result
            .content
            .iter()
            .any(|c| c.as_resource_link().is_some()),
        "the answer links the file: {result:?}"
    );

    let heard = heard.lock().unwrap().clone();
    assert!(heard.len() >= 10, "{} notifications", heard.len());
    // rmcp's client puts a token of its own on every request it sends: each notification
    // carries that one.
    let token = &heard[0].1.progress_token;
    assert!(heard.iter().all(|(_, p)| &p.progress_token == token));
    let progress: Vec<f64> = heard.iter().map(|(_, p)| p.progress).collect();
    assert!(progress.windows(2).all(|w| w[0] < w[1]), "{progress:?}");
    assert_eq!(*progress.last().unwrap(), 25_000.0);
    assert!(heard.iter().all(|(_, p)| p.total == Some(25_000.0)));
    assert!(
        heard.iter().all(|(at, _)| *at <= answered),
        "all before the answer"
    );
    // A few a second at most: 125 pages in about 31 s are reported about 4 times a second.
    let span = heard.last().unwrap().0 - heard[0].0;
    assert!(
        (heard.len() as f64) <= span.as_secs_f64() * 4.5 + 2.0,
        "{} notifications in {span:?}",
        heard.len()
    );

    std::fs::remove_dir_all(&dir).unwrap();
}
