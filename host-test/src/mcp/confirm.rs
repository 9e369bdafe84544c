//! The person confirms a write, not the model (`CRM_POLICY_CONFIRM_WRITES=user` or
//! `user-or-token`). For a client that declared MCP elicitation, a governed write runs as: a
//! preview made by the host, a form asking the user (the record, each field's current and new
//! value, the link), and only on "accept" the write, with the preview's token, which never
//! reaches the model. A decline or cancel sends nothing and the journal says `declined`. The
//! model's own `preview` / `confirmation_token` are refused in that mode; a client that cannot
//! ask its user gets the token flow only under `user-or-token`, else a refusal saying why.

use super::{Principal, convert};
use crate::host::{CallRequest, Host};
use crate::tenant_db::journal::{CallIdentity, Kind, NewChange, Status};
use crm_plugin::policy::ConfirmBy;
use rmcp::model::{
    CallToolResponse, CallToolResult, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationSchema, InputRequest, InputRequests, InputRequiredResult,
    InputResponses,
};
use rmcp::service::Peer;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// What happens to one tool call under the workspace's confirmation policy.
#[derive(Debug, PartialEq)]
pub(crate) enum Flow {
    /// Not a write the person confirms: the call goes on as the model made it.
    AsAsked,
    /// The host previews, asks the person, and writes only on their "accept".
    AskUser,
    /// Refused before anything is sent: the tool error's kind and message.
    Refuse(&'static str, String),
}

/// Decides the flow for `tool` (a governed write takes a `confirmation_token`) with `input`,
/// under `confirm_by`, for a client that can (or cannot) ask its user.
pub(crate) fn flow(
    confirm_by: ConfirmBy,
    confirm_writes: bool,
    governed_write: bool,
    input: &Value,
    can_ask: bool,
) -> Flow {
    if !governed_write || !person_confirms(confirm_writes, confirm_by, can_ask) {
        // Includes `user-or-token` with a client that cannot ask: the token flow.
        return Flow::AsAsked;
    }
    let drives_it_itself = input.get("confirmation_token").is_some()
        || input
            .get("preview")
            .is_some_and(|p| p != &Value::Bool(false));
    if drives_it_itself {
        return Flow::Refuse(
            "invalid-input",
            "this workspace has the person confirm each write in their client: call the tool \
             without preview and confirmation_token, and their client asks them. Nothing was \
             sent."
                .into(),
        );
    }
    if !can_ask {
        return Flow::Refuse(
            "forbidden",
            "this workspace requires the person to confirm each write (its confirm_writes is \
             \"user\"), and this client cannot ask its user: it did not declare MCP elicitation. \
             Nothing was sent. Use a client that supports elicitation, or ask the workspace \
             admin about user-or-token."
                .into(),
        );
    }
    Flow::AskUser
}

/// Whether the person, not the model, confirms this client's writes: `user`, or
/// `user-or-token` with a client that can ask its user.
pub(crate) fn person_confirms(confirm_writes: bool, confirm_by: ConfirmBy, can_ask: bool) -> bool {
    confirm_writes
        && match confirm_by {
            ConfirmBy::Assistant => false,
            ConfirmBy::User => true,
            ConfirmBy::UserOrAssistant => can_ask,
        }
}

/// What a governed write's listing offers the model when the person confirms: no `preview`
/// and no `confirmation_token` (that mode refuses both), and a description saying the
/// person is asked.
pub(crate) fn as_the_person_confirms(tool: &mut rmcp::model::Tool) {
    let mut schema = (*tool.input_schema).clone();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.remove("preview");
        properties.remove("confirmation_token");
    }
    tool.input_schema = std::sync::Arc::new(schema);
    let said = tool.description.as_deref().unwrap_or_default();
    tool.description = Some(
        format!(
            "{said} In this workspace the person confirms each write in their client: call \
             the tool with the intended input; nothing is written until they accept."
        )
        .into(),
    );
}

/// The form's message: what would change, in words a person reads.
pub(crate) fn message(tool: &str, preview: &Value, link: Option<&str>) -> String {
    let action = preview["action"].as_str().unwrap_or("change");
    let crm = match preview["crm"].as_str() {
        Some("hubspot") => "HubSpot",
        Some("salesforce") => "Salesforce",
        _ => "the CRM",
    };
    let object = preview["object"].as_str().unwrap_or("record");
    let mut text = match preview["record_id"].as_str() {
        Some(id) => format!("The assistant wants to {action} {object} {id} in {crm} ({tool}):"),
        None => format!("The assistant wants to {action} a {object} record in {crm} ({tool}):"),
    };
    let shown = |v: &Value| match v {
        Value::Null => "(empty)".to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    for (field, change) in preview["changes"].as_object().into_iter().flatten() {
        if !change.is_object() {
            // Masked by the workspace's policy (the host masks every answer by key).
            text.push_str(&format!("\n- {field}: (hidden by workspace policy)"));
        } else if change["current"].is_null() {
            text.push_str(&format!("\n- {field}: {}", shown(&change["new"])));
        } else {
            text.push_str(&format!(
                "\n- {field}: {} → {}",
                shown(&change["current"]),
                shown(&change["new"])
            ));
        }
    }
    if let Some(link) = link {
        text.push_str(&format!("\n{link}"));
    }
    text.push_str("\nMake this change?");
    text
}

/// The key of the one question a write asks, in the 2026-07-28 era's `inputRequests`.
const QUESTION: &str = "confirm";

/// The form asking the person about `preview`.
async fn form(
    host: &Host,
    call: &CallRequest,
    preview: &Value,
) -> Result<ElicitRequestParams, McpError> {
    let link = record_link(host, call, preview).await;
    let schema = ElicitationSchema::builder()
        .required_bool_with(QUESTION, |b| {
            b.title("Make this change")
                .description(
                    "Leave on to write it to the CRM; turn off or decline to send nothing.",
                )
                .with_default(true)
        })
        .build()
        .map_err(|e| McpError::internal_error(e, None))?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message(&call.tool, preview, link.as_deref()),
        requested_schema: schema,
    })
}

/// Whether the person's answer lets the write go: "accept", and the box left on.
fn accepted(answer: &ElicitResult) -> bool {
    answer.action == ElicitationAction::Accept
        && match &answer.content {
            // Accepted without form values: the form itself was the question.
            None => true,
            // With values, only an explicit yes: "false", 0 or null are not one.
            Some(content) => content.get(QUESTION) == Some(&Value::Bool(true)),
        }
}

/// The preview of the write `call` would make, or the tool result that stopped it.
async fn preview_of(
    host: &Host,
    call: &CallRequest,
    cancelled: &CancellationToken,
) -> Result<Result<Value, CallToolResult>, McpError> {
    let input: Value = serde_json::from_str(&call.input).unwrap_or(Value::Null);
    let mut previewing = call.clone();
    previewing.input = with(&input, "preview", json!(true));
    match host
        .call_until(previewing, cancelled.clone().cancelled_owned())
        .await
    {
        Ok(out) => Ok(Ok(serde_json::from_str::<Value>(&out)
            .ok()
            .and_then(|out| out.get("preview").cloned())
            .unwrap_or(Value::Null))),
        Err(err) => convert::failure(err).map(Err),
    }
}

/// The write `call` with the preview's token: the person said yes.
async fn apply(
    host: &Host,
    call: CallRequest,
    token: &str,
    cancelled: CancellationToken,
) -> Result<CallToolResult, McpError> {
    let input: Value = serde_json::from_str(&call.input).unwrap_or(Value::Null);
    let mut applying = call;
    applying.input = with(&input, "confirmation_token", json!(token));
    match host.call_until(applying, cancelled.cancelled_owned()).await {
        Ok(output) => Ok(convert::success(
            &output,
            convert::FilePaths::Resources,
            host.answer_form(),
        )),
        Err(err) => convert::failure(err),
    }
}

/// What the model is told when the person said no: nothing was sent.
fn refused_by_person(action: &ElicitationAction) -> CallToolResult {
    let how = match action {
        ElicitationAction::Cancel => "cancelled",
        _ => "declined",
    };
    convert::tool_error(
        "declined",
        &format!(
            "the person {how} this write: nothing was sent, and the change journal records it \
             as declined. Ask them what they want instead before trying again."
        ),
    )
}

/// The 2026-07-28 era, where a server asks nothing of its own accord: the first call answers
/// `input_required` with the form and, as the request state, the preview's confirmation token
/// (signed by the host, good once, for this user, tool and input); the client asks the person
/// and calls again with their answer and that state. Only an "accept" sends the write.
pub(crate) async fn ask_user_statelessly(
    host: &Host,
    principal: &Principal,
    call: CallRequest,
    request_state: Option<String>,
    answers: Option<InputResponses>,
    cancelled: CancellationToken,
) -> Result<CallToolResponse, McpError> {
    let answer = answers
        .as_ref()
        .and_then(|a| a.get(QUESTION))
        .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok());
    match (request_state, answer) {
        (Some(token), Some(answer)) if accepted(&answer) => {
            Ok(apply(host, call, &token, cancelled).await?.into())
        }
        (Some(token), Some(answer)) => {
            // The token is used up, so the same state cannot be accepted later; only a state
            // this host issued for this write is journalled (from a fresh preview, a read).
            if burn(host, principal, &call, &token)
                && let Ok(preview) = preview_of(host, &call, &cancelled).await?
            {
                declined(host, principal, &call, &preview);
            }
            Ok(refused_by_person(&answer.action).into())
        }
        _ => {
            let preview = match preview_of(host, &call, &cancelled).await? {
                Ok(preview) => preview,
                Err(stopped) => return Ok(stopped.into()),
            };
            let Some(token) = preview["confirmation_token"].as_str().map(str::to_string) else {
                return Err(McpError::internal_error(
                    "the preview carried no confirmation token",
                    None,
                ));
            };
            let question =
                InputRequest::Elicitation(ElicitRequest::new(form(host, &call, &preview).await?));
            let requests: InputRequests = [(QUESTION.to_string(), question)].into_iter().collect();
            Ok(InputRequiredResult::new(Some(requests), Some(token)).into())
        }
    }
}

/// Previews the write, asks the person, and makes it only on their "accept".
pub(crate) async fn ask_user(
    host: &Host,
    principal: &Principal,
    call: CallRequest,
    peer: &Peer<RoleServer>,
    cancelled: CancellationToken,
) -> Result<CallToolResult, McpError> {
    let preview = match preview_of(host, &call, &cancelled).await? {
        Ok(preview) => preview,
        Err(stopped) => return Ok(stopped),
    };
    let Some(token) = preview["confirmation_token"].as_str().map(str::to_string) else {
        return Err(McpError::internal_error(
            "the preview carried no confirmation token",
            None,
        ));
    };
    let params = form(host, &call, &preview).await?;
    let answer = tokio::select! {
        () = cancelled.cancelled() => return Err(McpError::internal_error("cancelled", None)),
        answer = peer.create_elicitation(params) => answer,
    };
    match answer {
        Ok(answer) if accepted(&answer) => apply(host, call, &token, cancelled).await,
        Ok(answer) => {
            declined(host, principal, &call, &preview);
            Ok(refused_by_person(&answer.action))
        }
        Err(err) => {
            declined(host, principal, &call, &preview);
            Ok(convert::tool_error(
                "declined",
                &format!(
                    "the person could not be asked ({err}); nothing was sent and the journal \
                     records the write as declined"
                ),
            ))
        }
    }
}

/// Uses up the token `call` would be applied with, so it can never be: `true` when it was one
/// this host issued for this user, tool and input, and still good.
fn burn(host: &Host, principal: &Principal, call: &CallRequest, token: &str) -> bool {
    let Ok(db) = host.mappings(&principal.tenant_id) else {
        return false;
    };
    let mut input: Value = serde_json::from_str(&call.input).unwrap_or(Value::Null);
    if let Some(fields) = input.as_object_mut() {
        fields.remove("preview");
        fields.remove("confirmation_token");
    }
    let who = CallIdentity {
        user_id: &call.user_id,
        tool: &call.tool,
        call_id: "declined",
    };
    // The component's own canonical form: a token is bound to exactly that text.
    db.redeem_confirmation(&who, token, &crm_plugin::governance::canonical(&input))
        .is_ok()
}

/// `input` with one more field.
fn with(input: &Value, key: &str, value: Value) -> String {
    let mut input = input.clone();
    if let Some(map) = input.as_object_mut() {
        map.insert(key.into(), value);
    }
    input.to_string()
}

/// The link that opens the record an update changes, when one can be built.
async fn record_link(host: &Host, call: &CallRequest, preview: &Value) -> Option<String> {
    let id = preview["record_id"].as_str()?;
    let object = preview["object"].as_str()?;
    let (tool, input) = match preview["crm"].as_str()? {
        "hubspot" => (
            "crma_generate_record_url",
            json!({"object_type": object, "record_id": id}),
        ),
        "salesforce" => (
            "crmb_generate_record_url",
            json!({"object": object, "record_id": id}),
        ),
        _ => return None,
    };
    let mut linking = call.clone();
    linking.tool = tool.into();
    linking.input = input.to_string();
    let out: Value = serde_json::from_str(&host.call(linking).await.ok()?).ok()?;
    out["url"].as_str().map(str::to_string)
}

/// Journals a write the person declined (or could not be asked about): nothing was sent.
fn declined(host: &Host, principal: &Principal, call: &CallRequest, preview: &Value) {
    let Ok(db) = host.mappings(&principal.tenant_id) else {
        return;
    };
    let (mut old, mut new) = (serde_json::Map::new(), serde_json::Map::new());
    for (field, change) in preview["changes"].as_object().into_iter().flatten() {
        if !change["current"].is_null() {
            old.insert(field.clone(), change["current"].clone());
        }
        new.insert(field.clone(), change["new"].clone());
    }
    let (old, new) = (
        Value::Object(old).to_string(),
        Value::Object(new).to_string(),
    );
    let call_id = format!("declined-{}", uuid_like());
    let who = CallIdentity {
        user_id: &call.user_id,
        tool: &call.tool,
        call_id: &call_id,
    };
    let change = NewChange {
        crm: preview["crm"].as_str().unwrap_or_default(),
        kind: Kind::from_name(preview["action"].as_str().unwrap_or_default()),
        object: preview["object"].as_str().unwrap_or_default(),
        record_id: preview["record_id"].as_str(),
        old_values: &old,
        new_values: &new,
        reverts: None,
        // Settled at once, by this same step.
        lease_until_ms: crate::tenant_db::now_ms() + 60_000,
    };
    if let Ok(id) = db.journal_change(&who, &change) {
        let _ = db.settle_change(&who, &id, Status::Declined, None);
    }
}

/// A call id for a journal row the host writes itself.
fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{nanos:x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn who_confirms_follows_the_policy_and_the_clients_ability_to_ask() {
        let plain = json!({"object_type": "deals", "record_id": "5"});
        let own_token =
            json!({"object_type": "deals", "record_id": "5", "confirmation_token": "t"});
        use ConfirmBy::*;
        assert_eq!(flow(User, true, true, &plain, true), Flow::AskUser);
        assert!(matches!(
            flow(User, true, true, &plain, false),
            Flow::Refuse("forbidden", _)
        ));
        assert_eq!(
            flow(UserOrAssistant, true, true, &plain, false),
            Flow::AsAsked
        );
        assert_eq!(
            flow(UserOrAssistant, true, true, &plain, true),
            Flow::AskUser
        );
        assert!(matches!(
            flow(User, true, true, &own_token, true),
            Flow::Refuse("invalid-input", _)
        ));
        assert!(matches!(
            flow(UserOrAssistant, true, true, &json!({"preview": true}), true),
            Flow::Refuse("invalid-input", _)
        ));
        // Reads, and workspaces where the assistant confirms, go on as asked.
        assert_eq!(flow(User, true, false, &plain, false), Flow::AsAsked);
        assert_eq!(
            flow(Assistant, true, true, &own_token, false),
            Flow::AsAsked
        );
    }

    #[test]
    fn only_a_clear_yes_lets_the_write_go() {
        let answer = |action, content: Option<Value>| {
            let mut result = ElicitResult::new(action);
            if let Some(content) = content {
                result = result.with_content(content);
            }
            accepted(&result)
        };
        assert!(answer(
            ElicitationAction::Accept,
            Some(json!({"confirm": true}))
        ));
        assert!(answer(ElicitationAction::Accept, None));
        for unclear in [
            json!({"confirm": "false"}),
            json!({"confirm": 0}),
            json!({"confirm": null}),
            json!({}),
        ] {
            assert!(
                !answer(ElicitationAction::Accept, Some(unclear.clone())),
                "{unclear}"
            );
        }
        assert!(!answer(
            ElicitationAction::Decline,
            Some(json!({"confirm": true}))
        ));
        assert!(!answer(ElicitationAction::Cancel, None));
    }

    #[test]
    fn a_masked_field_is_shown_hidden_not_empty() {
        let preview = json!({"crm": "hubspot", "action": "update", "object": "contacts",
            "record_id": "51", "changes": {"email": "[masked by workspace policy]"}});
        let text = message("crma_update_record", &preview, None);
        assert!(
            text.contains("- email: (hidden by workspace policy)"),
            "{text}"
        );
    }

    #[test]
    fn the_form_shows_each_fields_current_and_new_value_and_the_link() {
        let preview = json!({"crm": "hubspot", "action": "update", "object": "deals",
            "record_id": "357300",
            "changes": {"amount": {"current": "180000", "new": "195000"},
                        "dealstage": {"current": null, "new": "closedwon"}}});
        let text = message(
            "crma_update_record",
            &preview,
            Some("https://app.hubspot.com/x"),
        );
        assert!(
            text.starts_with("The assistant wants to update deals 357300 in HubSpot"),
            "{text}"
        );
        assert!(text.contains("- amount: 180000 → 195000"), "{text}");
        assert!(text.contains("- dealstage: closedwon"), "{text}");
        assert!(text.contains("https://app.hubspot.com/x") && text.ends_with("Make this change?"));
    }
}
