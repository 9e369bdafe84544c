//! Writes a workspace admin can govern: the policy over objects and fields, preview and
//! confirmation, the change journal with revert, and the provenance marker.
//!
//! Every write tool is called through [`call_write`]: it takes `preview` and
//! `confirmation_token` off the input, and installs a [`WriteGate`] that every write of the
//! call passes at [`Session::send`](crate::tool::Session::send), the last seam before the wire.
//! What each CRM contributes (reading a write's target back, current values, a revert's
//! update) comes through [`crm::GovernedCrm`], implemented beside each CRM: governance names
//! neither CRM's client.

pub mod crm;
mod current;
mod gate;
mod resolve;
#[cfg(test)]
mod resolve_tests;
pub mod target;
#[cfg(test)]
mod tests;
mod tools;

pub use crate::journal::{
    Change, ChangeEntry, ChangeFilter, ChangeKind, ChangeStatus, Confirmation, Journal,
    JournalError, TokenRefusal,
};
pub use crate::policy::{Marker, Rule, WorkspacePolicy};
pub use gate::{Mode, Preview, PreviewOutput, PreviewRequest, WriteGate};
pub(crate) use resolve::ResolveChange;
pub use target::{WriteKind, WriteTarget};
pub(crate) use tools::{ListChanges, RevertChange};

use crate::error::{Crm, ToolError};
use crate::proxy;
use crate::tool::{Entry, Session};
use crm::GovernedCrm;
use serde_json::{Map, Value};

/// Runs a write tool's registry `entry`: reads `preview` and `confirmation_token` off the
/// input, runs the tool with a gate (`governed` gives each CRM's part), and answers with the
/// preview when the gate stopped the write, or with the tool's output and the journal's
/// `change_id` when it went out.
pub(crate) fn call_write(
    entry: &Entry,
    input: &str,
    session: &mut Session<'_>,
    governed: fn(Crm) -> &'static dyn GovernedCrm,
) -> Result<String, ToolError> {
    let name = entry.name;
    let invalid = |what: String| ToolError::invalid(format!("{name}: {what}"));
    let mut fields: Map<String, Value> =
        serde_json::from_slice(input.as_bytes()).map_err(|e| invalid(e.to_string()))?;
    let preview = match fields.remove("preview") {
        None | Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) => true,
        Some(_) => return Err(invalid("preview must be true or false".into())),
    };
    let token = match fields.remove("confirmation_token") {
        None | Some(Value::Null) => None,
        Some(Value::String(token)) => Some(token),
        Some(_) => return Err(invalid("confirmation_token must be text".into())),
    };
    if preview && token.is_some() {
        return Err(invalid(
            "give either preview or confirmation_token: preview first, then apply with the token"
                .into(),
        ));
    }
    let canonical = canonical(&Value::Object(fields));
    let mode = if preview {
        Mode::Preview
    } else {
        Mode::Apply { token }
    };
    let gate = WriteGate::new(name, canonical.clone(), mode, governed);
    session.gate = Some(Box::new(gate));
    let result = (entry.call)(&canonical, session);
    let gate: Box<dyn std::any::Any> = session
        .gate
        .take()
        .expect("the gate stays for the whole call");
    let mut gate = gate
        .downcast::<WriteGate>()
        .expect("call_write installed a WriteGate");
    if let Some(stopped) = gate.stopped.take() {
        let confirmation = session
            .journal()?
            .issue(gate.input(), &stopped.current)
            .map_err(|e| {
                ToolError::Unavailable(format!(
                    "{e}; no confirmation could be issued. Try again shortly"
                ))
            })?;
        let config = session.config()?;
        let root = match stopped.target.crm {
            Crm::Hubspot => proxy::crm_a(config, &[], &[])?,
            Crm::Salesforce => proxy::crm_b(config, &[], &[])?,
        };
        let confirm = config.policy.confirm_writes;
        let output = stopped.preview(name, root.path(), confirmation, confirm);
        return Ok(serde_json::to_string(&output).expect("a preview serialises"));
    }
    let text = result.map_err(|err| conceal_masked_conflict(err, &gate.written, session))?;
    if preview {
        return Err(ToolError::invalid(format!(
            "{name} made no write to preview for this input"
        )));
    }
    Ok(match gate.change_id {
        Some(id) => with_field(text, "change_id", &id),
        None => text,
    })
}

/// A conflict names the record that already holds a unique value the write carried (HubSpot's
/// `existing_id`, "Existing ID: 123" in its words). When a masked field was among the values
/// written, that would answer a lookup by a value the caller may not read (which record has
/// this e-mail): the id and the CRM's words are withheld, and the error says why.
fn conceal_masked_conflict(err: ToolError, written: &[String], session: &Session<'_>) -> ToolError {
    let ToolError::CrmError(mut problem) = err else {
        return err;
    };
    let Ok(config) = session.config() else {
        return ToolError::CrmError(problem);
    };
    let masked = written.iter().find(|f| config.policy.is_masked(f));
    if let (Some(field), Some(_)) = (masked, &problem.existing_id) {
        problem.existing_id = None;
        problem.messages.clear();
        problem.hint = format!(
            "A record already holds a unique value this create carried. {field} is masked in this \
             workspace, so the record is not named: nothing was created. Ask the workspace admin, \
             or look for the record in the CRM itself."
        );
    }
    ToolError::CrmError(problem)
}

/// A JSON value as text with every object's keys in order, whatever map type serde_json was
/// built with: two inputs that mean the same are the same text, for a confirmation's binding.
/// Public so the host binds the tokens it uses up itself to exactly the same text.
pub fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(crate::sorted_map::json_object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&map[k])))
                        .collect(),
                ))
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

/// Adds a text field to a serialised JSON object.
fn with_field(mut object: String, name: &str, value: &str) -> String {
    let field = format!(
        "{}{}:{}}}",
        if object.trim_end() == "{}" { "" } else { "," },
        Value::from(name),
        Value::from(value)
    );
    object.truncate(object.trim_end().len() - 1);
    object.push_str(&field);
    object
}

#[cfg(test)]
mod canonical_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_same_input_in_any_key_order_is_one_binding() {
        let a = canonical(&json!({"b": 1, "a": {"y": [1, {"d": 1, "c": 2}], "x": null}}));
        let b = canonical(&json!({"a": {"x": null, "y": [1, {"c": 2, "d": 1}]}, "b": 1}));
        assert_eq!(a, b);
        assert_eq!(a, r#"{"a":{"x":null,"y":[1,{"c":2,"d":1}]},"b":1}"#);
    }

    #[test]
    fn a_change_id_joins_any_object() {
        assert_eq!(
            with_field("{}".into(), "change_id", "c1"),
            r#"{"change_id":"c1"}"#
        );
        assert_eq!(
            with_field(r#"{"id":"5"}"#.into(), "change_id", "c\"1"),
            r#"{"id":"5","change_id":"c\"1"}"#
        );
    }
}
