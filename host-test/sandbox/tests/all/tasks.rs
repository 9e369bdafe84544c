//! A `to_file` export as a task (MCP's tasks extension): with a 6-second call limit (the host's
//! usual one is 120 s) and a sandbox slowed to 800 ms a search, the export (ten pages) runs past
//! the limit as a task, `tasks/get` shows the records written and then the answer with the file's
//! resource link, while the same export as a plain call stops at the limit; `tasks/cancel`
//! stops one midway and leaves no file; another user cannot see the task.

use crate::fixtures::{ALL_SCOPES, temp_dir};
use crate::mcp::call;
use bytes::Bytes;
use crm_host::backend::BoxFuture;
use crm_host::mcp::{McpServer, Principal};
use crm_host::{AuditLog, Backend, Host, HostLimits, Runtime};
use crm_sandbox::SandboxCrm;
use rmcp::model::{
    CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig, GetTaskParams,
    Implementation, TaskStatus,
};
use rmcp::service::RunningService;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime_wasi_http::Error as HttpError;

/// The sandbox, answering each search late.
#[derive(Clone)]
struct SlowSandbox(SandboxCrm, Duration);

impl Backend for SlowSandbox {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<Result<http::Response<Bytes>, HttpError>> {
        let (sandbox, delay) = (self.0.clone(), self.1);
        Box::pin(async move {
            if request.uri().path().ends_with("/search") {
                tokio::time::sleep(delay).await;
            }
            sandbox.send(request).await
        })
    }
}

/// A client that declares the tasks extension.
#[derive(Clone)]
pub(crate) struct Poller;

impl ClientHandler for Poller {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_tasks().build(),
            Implementation::new("poller", "1"),
        )
    }
}

fn principal(user: &str) -> Principal {
    Principal {
        tenant_id: "acme".into(),
        user_id: user.into(),
        granted_scopes: ALL_SCOPES.iter().map(|s| s.to_string()).collect(),
        instance_url: None,
        authority: crm_host::mcp::Authority::Process,
    }
}

async fn client<C: ClientHandler>(
    host: Arc<Host>,
    user: &str,
    handler: C,
) -> RunningService<RoleClient, C> {
    let (server_end, client_end) = tokio::io::duplex(1 << 20);
    let server = McpServer::for_principal(host, principal(user));
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    handler.serve(client_end).await.unwrap()
}

/// acme with 2,000 seeded contacts (ten pages) behind a line `delay` slow a search, a call
/// limit of `call_timeout`, and results in `dir`.
fn slow_acme(dir: &Path, call_timeout: Duration, delay: Duration) -> Arc<Host> {
    let limits = HostLimits {
        call_timeout,
        ..HostLimits::default()
    };
    let runtime = Arc::new(Runtime::new(limits).unwrap());
    let sandbox = SandboxCrm::new();
    sandbox
        .seed_hubspot_contacts("acme", 2_000, "Task Import Co")
        .unwrap();
    let host = Arc::new(Host::new(
        runtime.clone(),
        Arc::new(SlowSandbox(sandbox, delay)),
        AuditLog::in_memory(),
    ));
    let mut spec = SandboxCrm::tenant_spec("acme");
    spec.results_dir = Some(dir.to_path_buf());
    host.add_tenant(spec, crate::fixtures::load(&runtime))
        .unwrap();
    host
}

fn export() -> Value {
    json!({"object_type": "contacts", "to_file": true, "properties": ["email"],
        "filter_groups": [{"filters": [{"property": "company", "operator": "EQ",
                                        "value": "Task Import Co"}]}]})
}

/// The files under `dir`, in every user's folder (an empty folder is not a file).
fn files_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().path())
                .flat_map(|p| if p.is_dir() { files_in(&p) } else { vec![p] })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_outlives_the_call_limit_as_a_task_and_shows_its_progress() {
    let dir = temp_dir("task-export");
    // The default call limit is 120 s; a host given 6 s shows the same in a fraction of the
    // time: ten searches 800 ms late each take the export past the limit.
    assert_eq!(HostLimits::default().call_timeout, Duration::from_secs(120));
    let limit = Duration::from_secs(6);
    let host = slow_acme(&dir, limit, Duration::from_millis(800));

    // As a plain call it stops at the call limit (run alongside the task).
    let plain_host = host.clone();
    let plain = tokio::spawn(async move {
        let plain = client(plain_host, "demo-user", ()).await;
        plain
            .call_tool(call("crma_search_records", export()))
            .await
            .is_err()
    });

    let session = client(host.clone(), "demo-user", Poller).await;
    let started = session
        .peer()
        .call_tool_once(call("crma_search_records", export()))
        .await
        .unwrap();
    let CallToolResponse::Task(created) = started else {
        panic!("expected a task, got {started:?}")
    };
    let id = created.task.task_id.clone();
    assert_eq!(created.task.status, TaskStatus::Working);

    // Another user of the same tenant cannot see it.
    let stranger = client(host.clone(), "someone-else", Poller).await;
    assert!(
        stranger
            .peer()
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .is_err()
    );

    let begun = Instant::now();
    let mut messages = Vec::new();
    let done = loop {
        let got = session
            .peer()
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .unwrap();
        messages.extend(got.task.task.status_message.clone());
        if got.task.task.status.is_terminal() {
            break got;
        }
        assert!(begun.elapsed() < Duration::from_secs(300), "{messages:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(begun.elapsed() > limit, "it ran past the call limit");
    assert!(
        plain.await.unwrap(),
        "the plain call stopped at the call limit"
    );
    assert_eq!(done.task.task.status, TaskStatus::Completed, "{messages:?}");
    assert!(
        messages
            .iter()
            .any(|m| m.ends_with("of 2000 records written") && !m.starts_with("0 ")),
        "progress shown while working: {messages:?}"
    );
    let result = serde_json::to_value(&done).unwrap();
    // The task's result is the tool's answer, in the server's form: here the text alone.
    let text = result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let answer: Value = serde_json::from_str(text).unwrap_or_else(|_| panic!("{result}"));
    assert_eq!(answer["record_count"], 2_000, "{result}");
    assert!(
        result["result"]["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "resource_link"),
        "{result}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_export_task_stops_and_leaves_no_file() {
    let dir = temp_dir("task-cancel");
    let host = slow_acme(&dir, Duration::from_secs(3), Duration::from_millis(300));
    let session = client(host.clone(), "demo-user", Poller).await;
    let started = session
        .peer()
        .call_tool_once(call("crma_search_records", export()))
        .await
        .unwrap();
    let CallToolResponse::Task(created) = started else {
        panic!("{started:?}")
    };
    let id = created.task.task_id;
    // Midway: some records written, not all.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    session
        .peer()
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .unwrap();
    let begun = Instant::now();
    let ended = loop {
        let got = session
            .peer()
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .unwrap();
        if got.task.task.status.is_terminal() {
            break got;
        }
        assert!(begun.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(ended.task.task.status, TaskStatus::Cancelled);
    // Give the dropped call a moment to clean up, then nothing is left, partial or whole.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(files_in(&dir).is_empty(), "{:?}", files_in(&dir));
    let _ = std::fs::remove_dir_all(&dir);
}
