//! How many tasks one principal may have running at once (issue 35).
//!
//! A task is an export of up to 30 minutes that outlives its request, so neither the request
//! rate nor the in-flight share bounds them: before this cap one token started 60 in 10
//! seconds, each holding a worker, a CRM rate budget and a half-written file. Past the cap the
//! call is answered at once with a tool error that says how many are running and to wait,
//! which the model can read and act on; other principals are unaffected. Running tasks are
//! counted where they are started, from the tasks themselves, so a task that ends (done,
//! failed or cancelled) frees its place without any bookkeeping of its own.

use super::{Principal, convert, tasks};
use crate::host::{CallRequest, Host};
use crate::tasks::{Outcome, Task};
use crate::tenant_db::ResultOwner;
use rmcp::model::CallToolResponse;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The principal already runs as many tasks as it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "{running} exports are already running for you, the most one user may run at once: wait \
     for one to finish (tasks/get shows how far each has come) or cancel one (tasks/cancel), \
     then ask again"
)]
pub struct TasksFull {
    pub running: usize,
}

/// A tenant and the owner of its tasks.
type TaskOwner = (String, ResultOwner);

/// Running tasks per tenant and owner, shared by every session of a server.
pub struct TaskCap {
    max: usize,
    running: Mutex<HashMap<TaskOwner, Vec<Arc<Task>>>>,
}

impl TaskCap {
    /// At most `max` running tasks per principal (at least one).
    pub fn new(max: usize) -> Self {
        TaskCap {
            max: max.max(1),
            running: Mutex::default(),
        }
    }

    /// Calls `open` (which starts a task and hands back the task it started) unless `owner`
    /// of `tenant` already runs `max`; the check and the start happen under one lock, so two
    /// requests at once cannot both take the last place.
    fn admit<T>(
        &self,
        tenant: &str,
        owner: ResultOwner,
        open: impl FnOnce() -> (T, Option<Arc<Task>>),
    ) -> Result<T, TasksFull> {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        running.retain(|_, tasks| {
            tasks.retain(|t| t.snapshot().outcome == Outcome::Working);
            !tasks.is_empty()
        });
        let key = (tenant.to_string(), owner);
        let count = running.get(&key).map_or(0, Vec::len);
        if count >= self.max {
            return Err(TasksFull { running: count });
        }
        let (started, task) = open();
        if let Some(task) = task {
            running.entry(key).or_default().push(task);
        }
        Ok(started)
    }

    /// Starts `call` as a task of `principal`'s, or answers why not.
    pub(crate) fn start(
        &self,
        host: &Arc<Host>,
        principal: &Principal,
        call: CallRequest,
    ) -> CallToolResponse {
        let owner = principal.owner();
        let admitted = self.admit(&principal.tenant_id, owner.clone(), || {
            let created = tasks::start(host.clone(), principal, call);
            let task = host
                .tasks()
                .find(&created.task.task_id, &principal.tenant_id, &owner);
            (created, task)
        });
        match admitted {
            Ok(created) => created.into(),
            Err(full) => {
                tracing::debug!(
                    tenant = %principal.tenant_id,
                    running = full.running,
                    "a task was refused: its principal is at the cap"
                );
                convert::tool_error("rate-limited", &full.to_string()).into()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::TaskBoard;

    #[test]
    fn past_the_cap_a_principal_waits_for_one_of_its_tasks_to_end() {
        let cap = TaskCap::new(2);
        let board = TaskBoard::default();
        let ana = ResultOwner::of("ana");
        let open = |tenant: &str, owner: &ResultOwner| {
            let (_, task) = board.open(tenant, owner.clone());
            (task.clone(), Some(task))
        };
        let first = cap
            .admit("acme", ana.clone(), || open("acme", &ana))
            .unwrap();
        cap.admit("acme", ana.clone(), || open("acme", &ana))
            .unwrap();
        let Err(full) = cap.admit("acme", ana.clone(), || open("acme", &ana)) else {
            panic!("a third task was admitted")
        };
        assert_eq!(full, TasksFull { running: 2 });
        assert!(
            full.to_string()
                .starts_with("2 exports are already running")
        );
        assert!(full.to_string().contains("wait"), "{full}");

        let bo = ResultOwner::of("bo");
        assert!(
            cap.admit("acme", bo.clone(), || open("acme", &bo)).is_ok(),
            "another user of the tenant"
        );
        assert!(
            cap.admit("globex", ana.clone(), || open("globex", &ana))
                .is_ok(),
            "the same name in another tenant"
        );

        first.finish(Outcome::Completed(serde_json::json!({})));
        assert!(
            cap.admit("acme", ana.clone(), || open("acme", &ana))
                .is_ok(),
            "an ended task frees its place"
        );
        assert!(
            cap.admit("acme", ana.clone(), || open("acme", &ana))
                .is_err()
        );
    }

    #[test]
    fn principals_without_running_tasks_are_forgotten() {
        let cap = TaskCap::new(1);
        let board = TaskBoard::default();
        let ana = ResultOwner::of("ana");
        let task = cap
            .admit("acme", ana.clone(), || {
                let (_, task) = board.open("acme", ana.clone());
                (task.clone(), Some(task))
            })
            .unwrap();
        task.finish(Outcome::Cancelled);
        let bo = ResultOwner::of("bo");
        cap.admit("acme", bo, || ((), None)).unwrap();
        let running = cap.running.lock().unwrap();
        assert!(
            running.values().all(|tasks| !tasks.is_empty()),
            "no empty entries are kept"
        );
        assert!(!running.contains_key(&("acme".to_string(), ana)));
    }
}
