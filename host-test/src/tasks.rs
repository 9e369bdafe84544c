//! Calls running in the background, as tasks a client polls (MCP's tasks extension): a long
//! export outlives the request that started it and the per-call time limit, shows how far it
//! has come, and can be cancelled. Each task belongs to the tenant and user who started it
//! ([`ResultOwner`], the notion that owns result files and sessions too); no one else can see
//! or cancel it. A finished task is kept for [`KEPT_FOR`], then forgotten.

use crate::tenant_db::ResultOwner;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_util::sync::CancellationToken;

/// How long a finished task's result stays readable.
pub const KEPT_FOR: Duration = Duration::from_secs(3600);

/// How a task ended, or that it has not.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Still running.
    Working,
    /// Done: the tool's result as the client reads it (which may be a tool error).
    Completed(serde_json::Value),
    /// Broken off by the host: why.
    Failed(String),
    /// Stopped at the owner's request; nothing half-done was kept.
    Cancelled,
}

/// A task as last seen.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub outcome: Outcome,
    /// Records so far, of `total` when known.
    pub done: u64,
    pub total: Option<u64>,
    pub created_ms: u64,
    pub updated_ms: u64,
}

/// One task: whose it is, how to stop it, and where it stands.
pub struct Task {
    tenant: String,
    owner: ResultOwner,
    cancel: CancellationToken,
    state: Mutex<Snapshot>,
}

impl Task {
    /// Cancelled when the owner cancels the task.
    pub fn cancellation(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Asks the task to stop; it ends `Cancelled` once the call has been dropped.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Records progress (only while working).
    pub fn progress(&self, done: u64, total: Option<u64>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.outcome == Outcome::Working {
            state.done = done;
            state.total = total;
            state.updated_ms = now_ms();
        }
    }

    /// Records how the task ended, as the call ended: a cancel that came after the call was
    /// done changes nothing (its file is published and its answer stands).
    pub fn finish(&self, outcome: Outcome) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.outcome = outcome;
        state.updated_ms = now_ms();
    }

    pub fn snapshot(&self) -> Snapshot {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Every task of one host.
#[derive(Default)]
pub struct TaskBoard {
    tasks: Mutex<HashMap<String, Arc<Task>>>,
}

impl TaskBoard {
    /// A new working task of `tenant`'s `user`, and its id.
    pub fn open(&self, tenant: &str, owner: ResultOwner) -> (String, Arc<Task>) {
        let id = format!(
            "task_{}",
            crate::tenant_db::journal::random_hex(12).unwrap_or_else(|_| now_ms().to_string())
        );
        let now = now_ms();
        let task = Arc::new(Task {
            tenant: tenant.into(),
            owner,
            cancel: CancellationToken::new(),
            state: Mutex::new(Snapshot {
                outcome: Outcome::Working,
                done: 0,
                total: None,
                created_ms: now,
                updated_ms: now,
            }),
        });
        let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        forget_old(&mut tasks, now);
        tasks.insert(id.clone(), task.clone());
        (id, task)
    }

    /// The task `id` when it is `tenant`'s `owner`'s; anyone else's is as good as absent.
    pub fn find(&self, id: &str, tenant: &str, owner: &ResultOwner) -> Option<Arc<Task>> {
        let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        forget_old(&mut tasks, now_ms());
        tasks
            .get(id)
            .filter(|t| t.tenant == tenant && &t.owner == owner)
            .cloned()
    }
}

/// Drops tasks that finished more than [`KEPT_FOR`] ago.
fn forget_old(tasks: &mut HashMap<String, Arc<Task>>, now: u64) {
    let kept = KEPT_FOR.as_millis() as u64;
    tasks.retain(|_, task| {
        let state = task.snapshot();
        state.outcome == Outcome::Working || now.saturating_sub(state.updated_ms) < kept
    });
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_is_its_owners_only_and_ends_as_its_call_ended() {
        let board = TaskBoard::default();
        let ana = ResultOwner::of("ana");
        let (id, task) = board.open("acme", ana.clone());
        assert!(board.find(&id, "acme", &ana).is_some());
        assert!(
            board.find(&id, "acme", &ResultOwner::of("bo")).is_none(),
            "another user"
        );
        assert!(board.find(&id, "globex", &ana).is_none(), "another tenant");
        let ana_of_an_idp = ResultOwner::vouched_by("https://idp.example", "ana");
        assert!(
            board.find(&id, "acme", &ana_of_an_idp).is_none(),
            "a provider's subject of the same name"
        );
        task.progress(200, Some(1000));
        assert_eq!(
            (task.snapshot().done, task.snapshot().total),
            (200, Some(1000))
        );
        task.cancel();
        assert!(task.cancellation().is_cancelled());
        task.finish(Outcome::Cancelled);
        assert_eq!(task.snapshot().outcome, Outcome::Cancelled);
        task.progress(300, Some(1000));
        assert_eq!(task.snapshot().done, 200, "no progress after the end");
        // A cancel that came after the call finished leaves its answer standing.
        let (_, late) = board.open("acme", ana);
        late.cancel();
        late.finish(Outcome::Completed(serde_json::json!({"ok": true})));
        assert!(matches!(late.snapshot().outcome, Outcome::Completed(_)));
    }
}
