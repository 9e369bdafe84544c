//! A `to_file` export as a task (MCP's `io.modelcontextprotocol/tasks` extension), for a client
//! that declared the extension: `tools/call` answers at once with the task; the export runs in
//! the background under the task time limit (not the per-call one), `tasks/get` shows how many
//! records are written and, when done, the answer with the file's resource link; `tasks/cancel`
//! stops it, and the half-written file is discarded. A task is its owner's (tenant and user)
//! only.

use super::{Principal, convert};
use crate::host::{CallError, CallOptions, CallRequest, Host};
use crate::tasks::{Outcome, Snapshot};
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CancelTaskParams, CreateTaskResult, DetailedTask, GetTaskParams, GetTaskResult, Task,
    TaskPayload, TaskStatus,
};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// How long an export run as a task may take: well past a call's limit.
pub const TASK_TIME_LIMIT: Duration = Duration::from_secs(30 * 60);
/// How often a client is asked to look in.
const POLL_INTERVAL_MS: u64 = 1_000;

/// Whether this call runs as a task: a `to_file` export, for a client that declared tasks.
pub(crate) fn runs_as_task(tool: &str, input: &Value, client_has_tasks: bool) -> bool {
    client_has_tasks && tool == "crma_search_records" && input["to_file"] == Value::Bool(true)
}

/// Starts `call` as a task of `principal`'s and answers with it.
pub(crate) fn start(host: Arc<Host>, principal: &Principal, call: CallRequest) -> CreateTaskResult {
    let (id, task) = host.tasks().open(&principal.tenant_id, principal.owner());
    let cancelled = task.cancellation();
    let reporting = task.clone();
    let options = CallOptions {
        progress: Some(Arc::new(move |done, total| reporting.progress(done, total))),
        time_limit: Some(TASK_TIME_LIMIT),
        owner: Some(principal.owner()),
    };
    let running = task.clone();
    tokio::spawn(async move {
        let outcome = match host
            .call_with(call, cancelled.cancelled_owned(), options)
            .await
        {
            Ok(output) => Outcome::Completed(json_of(convert::success(
                &output,
                convert::FilePaths::Resources,
                host.answer_form(),
            ))),
            Err(CallError::Cancelled { .. }) => Outcome::Cancelled,
            Err(err @ CallError::Tool(_)) => match convert::failure(err) {
                Ok(result) => Outcome::Completed(json_of(result)),
                Err(e) => Outcome::Failed(e.message.to_string()),
            },
            Err(other) => Outcome::Failed(other.to_string()),
        };
        running.finish(outcome);
    });
    CreateTaskResult::new(described(&id, &task.snapshot()))
}

fn json_of(result: rmcp::model::CallToolResult) -> Value {
    serde_json::to_value(result).unwrap_or(Value::Null)
}

/// `tasks/get`: where the task stands, and its answer once done.
pub(crate) fn get(
    host: &Host,
    principal: &Principal,
    request: GetTaskParams,
) -> Result<GetTaskResult, McpError> {
    let task = owned(host, principal, &request.task_id)?;
    let snapshot = task.snapshot();
    let payload = match &snapshot.outcome {
        Outcome::Working => TaskPayload::Working,
        Outcome::Completed(result) => {
            // Masked by the policy in force now, not the one the answer was made under: a
            // field masked since is not shown from a kept answer either.
            let policy = host
                .policy(&principal.tenant_id)
                .map_err(|e| McpError::internal_error(e.to_string(), None))?;
            let mut result = result.clone();
            policy.mask_call_result(&mut result);
            TaskPayload::Completed {
                result: result.as_object().cloned().unwrap_or_default(),
            }
        }
        Outcome::Failed(why) => TaskPayload::Failed {
            error: serde_json::json!({"code": -32603, "message": why})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        },
        Outcome::Cancelled => TaskPayload::Cancelled,
    };
    Ok(GetTaskResult::new(DetailedTask::new(
        described(&request.task_id, &snapshot),
        payload,
    )))
}

/// `tasks/cancel`: stops the task; the export's unpublished file goes with it.
pub(crate) fn cancel(
    host: &Host,
    principal: &Principal,
    request: CancelTaskParams,
) -> Result<(), McpError> {
    owned(host, principal, &request.task_id)?.cancel();
    Ok(())
}

fn owned(
    host: &Host,
    principal: &Principal,
    id: &str,
) -> Result<Arc<crate::tasks::Task>, McpError> {
    host.tasks()
        .find(id, &principal.tenant_id, &principal.owner())
        .ok_or_else(|| McpError::invalid_params(format!("there is no task {id:?}"), None))
}

/// The task as the protocol shows it, with how far it has come in words.
fn described(id: &str, snapshot: &Snapshot) -> Task {
    let status = match snapshot.outcome {
        Outcome::Working => TaskStatus::Working,
        Outcome::Completed(_) => TaskStatus::Completed,
        Outcome::Failed(_) => TaskStatus::Failed,
        Outcome::Cancelled => TaskStatus::Cancelled,
    };
    let so_far = match snapshot.total {
        Some(total) => format!("{} of {total} records written", snapshot.done),
        None => format!("{} records written", snapshot.done),
    };
    Task::new(
        id,
        status,
        crm_plugin::time::iso_utc(snapshot.created_ms),
        crm_plugin::time::iso_utc(snapshot.updated_ms),
    )
    .with_status_message(so_far)
    .with_ttl_ms(crate::tasks::KEPT_FOR.as_millis() as u64)
    .with_poll_interval_ms(POLL_INTERVAL_MS)
}
