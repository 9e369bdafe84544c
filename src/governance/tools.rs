//! `crm_list_changes` and `crm_revert_change`: what the assistant changed, and putting an
//! update back. A create, a merge or a link is never undone, as each undo would be a delete.

use super::current;
use super::journal::{Change, ChangeFilter, ChangeKind, ChangeStatus};
use super::target::{WriteKind, WriteTarget};
use crate::crma::client::{self as crma_client, Call};
use crate::crma::scopes::{self, Operation};
use crate::crma::types::ObjectType;
use crate::crmb::client as crmb_client;
use crate::error::{Crm, ToolError};
use crate::http::{Request, WriteMethod};
use crate::proxy;
use crate::tool::{CrmEffect, Session, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

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
pub(crate) struct RevertChange;

impl Tool for RevertChange {
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
        let change = session
            .journal()?
            .get(&input.change_id)
            .map_err(|e| ToolError::Unavailable(format!("{e}; try again shortly")))?
            .ok_or_else(|| {
                ToolError::NotFound(format!(
                    "no change {:?} in this workspace's journal; list them with crm_list_changes",
                    input.change_id
                ))
            })?;
        let crm = change.entry.crm;
        let record_id = revertible(&change)?;
        // Scopes before requests: the revert's own write scope is checked before the read that
        // precedes it, so a connection that may not write sends nothing at all.
        if crm == Crm::Hubspot {
            let object_type =
                ObjectType::parse(&change.entry.object).map_err(ToolError::invalid)?;
            scopes::check(&session.ctx.granted_scopes, &Operation::Write(object_type))?;
        }
        let target = WriteTarget {
            crm,
            kind: WriteKind::Update {
                record_id: record_id.clone(),
            },
            object: change.entry.object.clone(),
            fields: change.entry.new_values.clone(),
        };
        let fields: Vec<&str> = target.fields.keys().map(String::as_str).collect();
        let now = current::read(session, &target, &record_id, &fields)?;
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
        if let Some(gate) = session.gate.as_mut() {
            gate.reverts = Some(change.id.clone());
        }
        let restored = change.entry.old_values.clone();
        send_update(session, crm, &change.entry.object, &record_id, &restored)?;
        Ok(RevertedOutput {
            reverted: change.id,
            crm: crm.id().into(),
            object: change.entry.object,
            record_id,
            restored,
        })
    }
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

/// Sends one update of `values` to a record.
fn send_update(
    session: &mut Session<'_>,
    crm: Crm,
    object: &str,
    record_id: &str,
    values: &Map<String, Value>,
) -> Result<(), ToolError> {
    match crm {
        Crm::Hubspot => {
            let object_type = ObjectType::parse(object).map_err(ToolError::invalid)?;
            // HubSpot clears a property set to empty text.
            let properties: Map<String, Value> = values
                .iter()
                .map(|(k, v)| (k.clone(), if v.is_null() { json!("") } else { v.clone() }))
                .collect();
            let call = Call::get(
                Operation::Write(object_type),
                vec!["crm", "v3", "objects", object, record_id],
                format!("{object} record {record_id}"),
            )
            .writing(WriteMethod::Patch, Some(json!({"properties": properties})));
            crma_client::send(session, call).map(drop)
        }
        Crm::Salesforce => {
            let url = proxy::crm_b(session.config()?, &["sobjects", object, record_id], &[])?;
            let request = Request::write(
                Crm::Salesforce,
                WriteMethod::Patch,
                url,
                Some(&Value::Object(values.clone())),
            );
            crmb_client::send(session, &request, &format!("{object} record {record_id}")).map(drop)
        }
    }
}
