//! `crm_list_changes` and `crm_revert_change`: what the assistant changed, and putting an
//! update back. A create, a merge or a link is never undone, as each undo would be a delete.

use super::WriteGate;
use super::crm::CrmDirectory;
use super::current;
use crate::error::ToolError;
use crate::journal::{Change, ChangeFilter, ChangeKind, ChangeStatus};
use crate::tool::{CrmEffect, Session, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::marker::PhantomData;

/// Input of `crm_list_changes`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListChangesInput {
    /// Only changes made for this workspace user.
    #[serde(default)]
    user_id: Option<String>,
    /// Only changes to this record (its HubSpot or Salesforce id).
    #[serde(default)]
    record_id: Option<String>,
    /// Only changes to this object type, e.g. "deals" or "Account".
    #[serde(default)]
    object: Option<String>,
    /// Most changes to list, newest first; 1 to 100, default 20.
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    limit: Option<u32>,
}

/// What `crm_list_changes` answers.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ChangesOutput {
    /// The changes, newest first.
    changes: Vec<ChangeView>,
}

/// One journalled change.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ChangeView {
    /// Pass it to crm_revert_change to put an update back.
    change_id: String,
    /// When it was made (milliseconds since the Unix epoch).
    at_ms: u64,
    /// The workspace user the assistant acted for.
    user_id: String,
    /// The tool that made it.
    tool: String,
    /// "hubspot" or "salesforce".
    crm: String,
    /// "create", "update", "merge" or "association".
    action: String,
    /// The object type written.
    object: String,
    /// The record changed or created.
    #[serde(skip_serializing_if = "Option::is_none")]
    record_id: Option<String>,
    /// "applied", "failed" (nothing changed), "unknown" (check the record) or "pending".
    status: ChangeStatus,
    /// For an update: the values it overwrote.
    old_values: Map<String, Value>,
    /// The values it wrote.
    new_values: Map<String, Value>,
    /// The change this one reverted.
    #[serde(skip_serializing_if = "Option::is_none")]
    reverts: Option<String>,
    /// Whether crm_revert_change can put it back (only applied updates).
    revertible: bool,
    /// The audit trail's id of the call, for the workspace admin.
    call_id: String,
}

impl From<Change> for ChangeView {
    fn from(change: Change) -> Self {
        let revertible =
            change.entry.kind == ChangeKind::Update && change.status == ChangeStatus::Applied;
        ChangeView {
            change_id: change.id,
            at_ms: change.at_ms,
            user_id: change.user_id,
            tool: change.entry.tool,
            crm: change.entry.crm.id().into(),
            action: change.entry.kind.name().into(),
            object: change.entry.object,
            record_id: change.entry.record_id,
            status: change.status,
            old_values: change.entry.old_values,
            new_values: change.entry.new_values,
            reverts: change.entry.reverts,
            revertible,
            call_id: change.call_id,
        }
    }
}

/// `crm_list_changes`.
pub(crate) struct ListChanges;

impl Tool for ListChanges {
    const NAME: &'static str = "crm_list_changes";
    const DESCRIPTION: &'static str = "List what the assistant changed in HubSpot and \
        Salesforce for this workspace, newest first, from the host's change journal: who it \
        acted for, which tool, which record, the values an update overwrote and wrote, and \
        whether it can be reverted. Filter by user_id, record_id or object. Reads no CRM.";
    const TITLE: &'static str = "List the assistant's CRM changes";
    const EFFECT: CrmEffect = CrmEffect::Offline;
    type Input = ListChangesInput;
    type Output = ChangesOutput;

    fn run(input: ListChangesInput, session: &mut Session<'_>) -> Result<ChangesOutput, ToolError> {
        let limit = input.limit.unwrap_or(20);
        if !(1..=100).contains(&limit) {
            return Err(ToolError::invalid("limit must be 1 to 100"));
        }
        let filter = ChangeFilter {
            user_id: input.user_id,
            record_id: input.record_id,
            object: input.object,
        };
        let changes = session
            .journal()?
            .list(&filter, limit)
            .map_err(|e| ToolError::Unavailable(format!("{e}; try again shortly")))?;
        Ok(ChangesOutput {
            changes: changes.into_iter().map(ChangeView::from).collect(),
        })
    }
}

/// Input of `crm_revert_change`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RevertInput {
    /// The change to put back, from crm_list_changes or a write's answer.
    change_id: String,
}

/// What `crm_revert_change` answers.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct RevertedOutput {
    /// The change that was put back.
    reverted: String,
    /// "hubspot" or "salesforce".
    crm: String,
    /// The object type of the record.
    object: String,
    /// The record whose values were put back.
    record_id: String,
    /// The values written back.
    restored: Map<String, Value>,
}

/// `crm_revert_change`.
pub(crate) struct RevertChange<C>(PhantomData<C>);

impl<C: CrmDirectory> Tool for RevertChange<C> {
    const NAME: &'static str = "crm_revert_change";
    const DESCRIPTION: &'static str = "Put back the values an earlier assistant update \
        overwrote (change_id from crm_list_changes), with one update. Refused when a field was \
        changed again since, and for creates, merges and links, which could only be undone by \
        deleting. Supports \"preview\": true like every write.";
    const TITLE: &'static str = "Revert an assistant change";
    const EFFECT: CrmEffect = CrmEffect::Changes { idempotent: true };
    type Input = RevertInput;
    type Output = RevertedOutput;

    fn run(input: RevertInput, session: &mut Session<'_>) -> Result<RevertedOutput, ToolError> {
        let change = journalled(session, &input.change_id)?;
        let crm = change.entry.crm;
        let record_id = revertible(&change)?;
        // Scopes before requests: the revert's own write scope is checked before the read that
        // precedes it, so a connection that may not write sends nothing at all.
        let governed = C::governed(crm);
        governed.check_update_scope(session, &change.entry.object)?;
        let fields: Vec<&str> = change.entry.new_values.keys().map(String::as_str).collect();
        let now = governed.current(session, &change.entry.object, &record_id, &fields)?;
        let policy = &session.config()?.policy;
        let moved = current::moved(
            &change.entry.new_values,
            &now.values,
            policy,
            |f, wrote, is| format!("{f} is {is}, not the {wrote} the change wrote"),
        );
        if !moved.is_empty() {
            let by = now
                .last_changed_by
                .map(|u| format!(", last changed by {} user {u}", crm.product()))
                .unwrap_or_default();
            return Err(ToolError::invalid(format!(
                "the record was changed again since change {}{by}: {}. Nothing was sent; \
                 putting the old values back would overwrite that later change",
                change.id,
                moved.join("; ")
            )));
        }
        if let Some(gate) = session.guard_mut::<WriteGate>() {
            gate.reverts = Some(change.id.clone());
        }
        let restored = change.entry.old_values.clone();
        governed.update(session, &change.entry.object, &record_id, &restored)?;
        Ok(RevertedOutput {
            reverted: change.id,
            crm: crm.id().into(),
            object: change.entry.object,
            record_id,
            restored,
        })
    }
}

/// One of this workspace's journalled changes by id, or a not-found naming where to look.
pub(super) fn journalled(session: &mut Session<'_>, id: &str) -> Result<Change, ToolError> {
    session
        .journal()?
        .get(id)
        .map_err(|e| ToolError::Unavailable(format!("{e}; try again shortly")))?
        .ok_or_else(|| {
            ToolError::NotFound(format!(
                "no change {id:?} in this workspace's journal; list them with crm_list_changes"
            ))
        })
}

/// The record an applied update changed, or why the change cannot be reverted.
fn revertible(change: &Change) -> Result<String, ToolError> {
    let refuse = |why: String| Err(ToolError::invalid(format!("change {} {why}", change.id)));
    match change.entry.kind {
        ChangeKind::Update => {}
        ChangeKind::Create => {
            return refuse(format!(
                "created a record; undoing a create would delete it, and this plugin never \
                 deletes. Archive it in {} if it should go",
                change.entry.crm.product()
            ));
        }
        ChangeKind::Merge => {
            return refuse("merged two companies; HubSpot cannot split a merge".into());
        }
        ChangeKind::Association => {
            return refuse("linked two records; removing a link is a delete".into());
        }
    }
    match change.status {
        ChangeStatus::Applied => {}
        ChangeStatus::Failed => {
            return refuse("was never applied: there is nothing to put back".into());
        }
        _ => {
            return refuse(
                "has an unknown outcome; check the record in the CRM and change it there".into(),
            );
        }
    }
    change
        .entry
        .record_id
        .clone()
        .ok_or_else(|| ToolError::invalid("the change names no record"))
}
