//! The gate every write passes at the last seam before the wire ([`Session::send`]): the
//! workspace policy, the provenance marker, the preview, the confirmation and the journal,
//! for whichever tool built the request.

use super::crm::GovernedCrm;
use super::current;
use super::target::{WriteKind, WriteTarget};
use crate::error::{Crm, ToolError};
use crate::http::Request;
use crate::journal::{ChangeEntry, ChangeFilter, ChangeKind, ChangeStatus, Confirmation};
use crate::policy::{ConfirmBy, WorkspacePolicy};
use crate::retry::{Answer, HintReader};
use crate::tool::{Session, WriteGuard};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

/// How a governed call runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Show what would be sent; send no write.
    Preview,
    /// Send the write, with the token of an earlier preview when one is given.
    Apply {
        /// The `confirmation_token` from the preview.
        token: Option<String>,
    },
}

/// One call's gate: what it was asked to do, and what became of its write.
pub struct WriteGate {
    tool: &'static str,
    /// Each CRM's part: reading a write back, and the current values.
    governed: fn(Crm) -> &'static dyn GovernedCrm,
    /// The call's input without `preview` and `confirmation_token`, in canonical form: what a
    /// confirmation is bound to.
    input: String,
    mode: Mode,
    /// The change a revert undoes, journalled with it.
    pub(crate) reverts: Option<String>,
    /// The write a preview stopped, with the values read for it.
    pub(crate) stopped: Option<Stopped>,
    /// The journal id of the write sent.
    pub(crate) change_id: Option<String>,
    /// The fields the write sent carried (its target's), for what its error may say.
    pub(crate) written: Vec<String>,
}

/// A write a preview stopped before the wire.
#[derive(Debug)]
pub(crate) struct Stopped {
    pub(crate) request: Request,
    pub(crate) target: WriteTarget,
    pub(crate) current: Map<String, Value>,
}

impl WriteGate {
    /// A gate for one call of `tool` on the canonical `input`.
    pub fn new(
        tool: &'static str,
        input: String,
        mode: Mode,
        governed: fn(Crm) -> &'static dyn GovernedCrm,
    ) -> Self {
        WriteGate {
            tool,
            governed,
            input,
            mode,
            reverts: None,
            stopped: None,
            change_id: None,
            written: Vec::new(),
        }
    }

    /// The canonical input a confirmation is bound to.
    pub fn input(&self) -> &str {
        &self.input
    }
}

impl WriteGuard for WriteGate {
    /// Judges one write and, when it may go, sends it once (journalled before and settled
    /// after). In preview mode the write is kept and the call stopped with an error the
    /// caller discards.
    fn send(
        &mut self,
        session: &mut Session<'_>,
        request: &Request,
        read_hint: HintReader,
    ) -> Result<Answer, ToolError> {
        if self.stopped.is_some() || self.change_id.is_some() {
            return Err(ToolError::Forbidden(
                "one call may send one write; nothing more was sent".into(),
            ));
        }
        let config = session.config()?;
        let policy = &config.policy;
        let governed = (self.governed)(request.crm());
        let mut target = governed.target(request, config)?;
        policy.check_write(&target)?;
        let mut request = request.clone();
        if target.kind == WriteKind::Create
            && let Some(marker) = policy.marker(target.crm)
        {
            let value = match &marker.value {
                Some(v) => Value::String(v.clone()),
                None => governed.default_marker(),
            };
            target.fields.insert(marker.field.clone(), value.clone());
            mark(&mut request, governed, &marker.field, value);
        }
        if target.kind == WriteKind::Create {
            refuse_while_unknown(session, &target)?;
        }
        let current = match &target.kind {
            WriteKind::Update { record_id } => {
                let fields: Vec<&str> = target.fields.keys().map(String::as_str).collect();
                governed
                    .current(session, &target.object, record_id, &fields)?
                    .values
            }
            _ => Map::new(),
        };
        let token = match &self.mode {
            Mode::Preview => {
                self.stopped = Some(Stopped {
                    request,
                    target,
                    current,
                });
                return Err(ToolError::invalid("stopped for a preview"));
            }
            Mode::Apply { token } => token.clone(),
        };
        match token {
            Some(token) => {
                let read = session
                    .journal()?
                    .redeem(&token, &self.input)
                    .map_err(|why| {
                        ToolError::invalid(format!(
                            "{why}. Nothing was sent: {}",
                            confirm_again(self.tool, policy.confirm_by)
                        ))
                    })?;
                stale_since_preview(&read, &current, &target, policy)?;
            }
            None if policy.confirm_writes => {
                return Err(ToolError::invalid(unconfirmed(
                    self.tool,
                    policy.confirm_by,
                )));
            }
            None => {}
        }
        self.written = target.fields.keys().cloned().collect();
        let entry = ChangeEntry {
            crm: target.crm,
            tool: self.tool.to_string(),
            kind: target.kind.change_kind(),
            object: target.object.clone(),
            record_id: target.kind.record_id().map(str::to_string),
            old_values: current,
            new_values: target.fields.clone(),
            reverts: self.reverts.clone(),
        };
        let id = session.journal()?.begin(&entry).map_err(|e| {
            ToolError::Unavailable(format!(
                "{e}; the change could not be journalled, so it was not sent. Try again shortly"
            ))
        })?;
        let sent = session.send_unguarded(&request, read_hint);
        let (status, created) = match &sent {
            Ok(answer) if answer.response.is_success() => {
                match created_id(&answer.response.body) {
                    // Made, but which record is not known (a cut-off answer): a second create
                    // would be a duplicate, so it stays unknown until resolved.
                    None if target.kind == WriteKind::Create => (ChangeStatus::Unknown, None),
                    id => (ChangeStatus::Applied, id),
                }
            }
            Ok(_) => (ChangeStatus::Failed, None),
            Err(ToolError::OutcomeUnknown(_)) => (ChangeStatus::Unknown, None),
            Err(_) => (ChangeStatus::Failed, None),
        };
        // The write happened or not whatever the journal says now; a failed settle leaves the
        // entry `pending`, which reads as "check the record".
        let _ = session.journal()?.settle(&id, status, created.as_deref());
        let sent = match sent {
            // A create may have been made: the way on is to resolve it, never to create again.
            Err(ToolError::OutcomeUnknown(why)) if target.kind == WriteKind::Create => {
                Err(ToolError::OutcomeUnknown(format!(
                    "{why}. Its change_id is {id}: call crm_resolve_change with it to find out \
                     whether the record was made before creating it again"
                )))
            }
            Ok(answer) if status == ChangeStatus::Unknown => {
                Err(ToolError::OutcomeUnknown(format!(
                    "{} answered {} to the create of a {} record but without a readable record id: \
                 it was probably made. Its change_id is {id}: call crm_resolve_change with it to \
                 find the record before creating it again",
                    match target.crm {
                        Crm::Hubspot => "HubSpot",
                        Crm::Salesforce => "Salesforce",
                    },
                    answer.response.status,
                    target.object
                )))
            }
            other => other,
        };
        self.change_id = Some(id);
        sent
    }
}

/// Refuses a create while an earlier create of the same values has an unknown outcome (it may
/// have been made, and a second would be a duplicate) or is still pending (being made now, or
/// its host died mid-way: the host turns it unknown once its call's time is up).
fn refuse_while_unknown(session: &mut Session<'_>, target: &WriteTarget) -> Result<(), ToolError> {
    let filter = ChangeFilter {
        object: Some(target.object.clone()),
        ..ChangeFilter::default()
    };
    let earlier = session
        .journal()?
        .list(&filter, 100)
        .map_err(|e| ToolError::Unavailable(format!("{e}; nothing was sent. Try again shortly")))?;
    let same = |sent: &Map<String, Value>| {
        sent.len() == target.fields.len()
            && sent.iter().all(|(field, value)| {
                target
                    .fields
                    .get(field)
                    .is_some_and(|now| current::same_value(value, now))
            })
    };
    let earlier = earlier.iter().find(|c| {
        matches!(c.status, ChangeStatus::Unknown | ChangeStatus::Pending)
            && c.entry.kind == ChangeKind::Create
            && c.entry.crm == target.crm
            && same(&c.entry.new_values)
    });
    match earlier {
        Some(change) if change.status == ChangeStatus::Pending => Err(ToolError::invalid(format!(
            "the same {} create (change {}) is being made right now, by this or another \
             session, or its host stopped while making it; nothing was sent. Wait for it: call \
             crm_list_changes, and if change \"{}\" turns unknown (at most a few minutes), call \
             crm_resolve_change with it before creating the record again",
            target.object, change.id, change.id
        ))),
        Some(change) => Err(ToolError::invalid(format!(
            "an earlier create of this same {} record (change {}) has an unknown outcome: it may \
             have been made. Call crm_resolve_change with change_id \"{}\" first; nothing was \
             sent",
            target.object, change.id, change.id
        ))),
        None => Ok(()),
    }
}

/// Puts the provenance marker into a create's body.
fn mark(request: &mut Request, governed: &dyn GovernedCrm, field: &str, value: Value) {
    let Some(mut body) = request
        .body()
        .and_then(|b| serde_json::from_slice::<Value>(b).ok())
    else {
        return;
    };
    if let Some(fields) = governed.created_fields(&mut body).as_object_mut() {
        fields.insert(field.to_string(), value);
        request.replace_body(&body);
    }
}

/// The new record's id from a create's answer (both CRMs answer with `id`).
fn created_id(body: &[u8]) -> Option<String> {
    let answer: Value = serde_json::from_slice(body).ok()?;
    match &answer["id"] {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Refuses an apply when a field read for its preview holds another value now.
fn stale_since_preview(
    read: &Map<String, Value>,
    now: &Map<String, Value>,
    target: &WriteTarget,
    policy: &WorkspacePolicy,
) -> Result<(), ToolError> {
    let moved = current::moved(read, now, policy, |field, then, now| {
        format!("{field} was {then} at the preview and is {now} now")
    });
    if moved.is_empty() {
        return Ok(());
    }
    Err(ToolError::invalid(format!(
        "the {} record changed in {} since the preview: {}. Nothing was sent: preview again \
         and show the user the new values",
        target.object,
        target.crm.product(),
        moved.join("; ")
    )))
}

/// What a preview answers: the write that would be sent, and the token to send it with.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PreviewOutput {
    /// The write this call would make; nothing was written.
    pub preview: Preview,
}

/// The write a preview stopped.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Preview {
    /// "hubspot" or "salesforce".
    pub crm: String,
    /// "create", "update", "merge" or "association".
    pub action: String,
    /// The object type written, e.g. "deals" or "Account".
    pub object: String,
    /// The record changed; absent for a create.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record_id: Option<String>,
    /// The request exactly as it would be sent (below the CRM's API root).
    pub request: PreviewRequest,
    /// For an update: each field's current value beside the new one. For a create: the
    /// values the new record gets (`current` is null).
    pub changes: Map<String, Value>,
    /// Pass it back as `confirmation_token`, with the same input, to make this write. Good for
    /// one write, by this user, until `expires_at_ms`.
    pub confirmation_token: String,
    /// When the token stops being good (milliseconds since the Unix epoch).
    pub expires_at_ms: u64,
    /// What to do next, for the assistant.
    pub next_step: String,
}

/// A request as a preview shows it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PreviewRequest {
    /// The HTTP method.
    pub method: String,
    /// The path below the CRM's API root, e.g. "/crm/v3/objects/deals/42".
    pub path: String,
    /// The JSON body; absent when the request has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
}

impl Stopped {
    /// The preview of this stopped write, with its confirmation.
    pub(crate) fn preview(
        self,
        tool: &str,
        root_path: &str,
        confirmation: Confirmation,
        confirm_required: bool,
    ) -> PreviewOutput {
        let path = self
            .request
            .url()
            .path()
            .strip_prefix(root_path.trim_end_matches('/'))
            .unwrap_or(self.request.url().path())
            .to_string();
        let body = self
            .request
            .body()
            .and_then(|b| serde_json::from_slice(b).ok());
        let changes = self
            .target
            .fields
            .iter()
            .map(|(field, new)| {
                let current = self.current.get(field).cloned().unwrap_or(Value::Null);
                let change = serde_json::json!({"current": current, "new": new});
                (field.clone(), change)
            })
            .collect::<Vec<_>>();
        let changes = crate::sorted_map::json_object(changes);
        let next_step = format!(
            "Nothing was written. Show the user this change; {} call {tool} again with the same \
             input and \"confirmation_token\" to make it.",
            if confirm_required {
                "this workspace requires the token: once they agree,"
            } else {
                "once they agree,"
            }
        );
        PreviewOutput {
            preview: Preview {
                crm: self.target.crm.id().into(),
                action: self.target.kind.change_kind().name().into(),
                object: self.target.object.clone(),
                record_id: self.target.kind.record_id().map(str::to_string),
                request: PreviewRequest {
                    method: self.request.method().as_str().into(),
                    path,
                    body,
                },
                changes,
                confirmation_token: confirmation.token,
                expires_at_ms: confirmation.expires_at_ms,
                next_step,
            },
        }
    }
}

/// How to get a write confirmed again after its token failed, naming only what the
/// workspace's confirmation mode lets the assistant do.
fn confirm_again(tool: &str, confirm_by: ConfirmBy) -> String {
    match confirm_by {
        ConfirmBy::Assistant => format!("call {tool} with \"preview\": true again for a new token"),
        ConfirmBy::User => format!(
            "call {tool} again with the same input, without preview or confirmation_token: the \
             person is asked to confirm it again in their client"
        ),
        ConfirmBy::UserOrAssistant => format!(
            "call {tool} again with the same input: a client that can ask its user asks them \
             again; one that cannot gets a new token with \"preview\": true"
        ),
    }
}

/// Why a write without a confirmation token is refused, and what to do, in the workspace's
/// confirmation mode.
fn unconfirmed(tool: &str, confirm_by: ConfirmBy) -> String {
    match confirm_by {
        ConfirmBy::Assistant | ConfirmBy::UserOrAssistant => format!(
            "this workspace confirms every write: call {tool} with \"preview\": true first, \
             show the user what would change, then call it again with the same input and the \
             preview's confirmation_token. Nothing was sent."
        ),
        ConfirmBy::User => format!(
            "this workspace has the person confirm each write in their MCP client: call {tool} \
             through a client that asks its user (MCP elicitation). Nothing was sent."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::governance::crm::CrmDirectory;
    use serde_json::json;

    fn update(fields: &[(&str, Value)]) -> WriteTarget {
        WriteTarget {
            crm: Crm::Hubspot,
            kind: WriteKind::Update {
                record_id: "7".into(),
            },
            object: "deals".into(),
            fields: fields
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        }
    }

    #[test]
    fn an_apply_is_refused_when_a_previewed_value_moved_and_says_which() {
        let target = update(&[("amount", json!("20"))]);
        let then: Map<_, _> = [("amount".to_string(), json!("10"))].into_iter().collect();
        let policy = WorkspacePolicy::default();
        stale_since_preview(&then, &then.clone(), &target, &policy).unwrap();
        let now: Map<_, _> = [("amount".to_string(), json!("15"))].into_iter().collect();
        let e = stale_since_preview(&then, &now, &target, &policy).unwrap_err();
        assert!(
            matches!(&e, ToolError::InvalidInput(m) if m.contains("amount was \"10\" at the preview and is \"15\" now")),
            "{e}"
        );
    }

    #[test]
    fn the_marker_goes_into_the_fields_each_crm_reads() {
        let config = crate::harness::config(&[]);
        let url = crate::proxy::crm_a(&config, &["crm", "v3", "objects", "notes"], &[]).unwrap();
        let mut request = Request::write(
            Crm::Hubspot,
            crate::http::WriteMethod::Post,
            url,
            Some(&json!({"properties": {"hs_note_body": "hi"}})),
        );
        mark(
            &mut request,
            crate::registry::Crms::governed(Crm::Hubspot),
            "made_by_assistant",
            json!("true"),
        );
        let body: Value = serde_json::from_slice(request.body().unwrap()).unwrap();
        assert_eq!(body["properties"]["made_by_assistant"], "true");
        assert_eq!(
            created_id(br#"{"id":"512","success":true}"#).as_deref(),
            Some("512")
        );
    }
}
