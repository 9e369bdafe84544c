//! The tool registry behind the generic `tools` interface: every CRM module's tools, listed
//! with their specs, and dispatch from a name and JSON input to the typed tool.

use crate::error::{Crm, ToolError};
use crate::governance::crm::{CrmDirectory, GovernedCrm};
use crate::tool::{Annotations, Entry, Session};
use crate::{crma, crmb, governance, schema};

/// The CRMs this build governs: each CRM's own part of the write gate and the revert.
pub(crate) struct Crms;

impl CrmDirectory for Crms {
    fn governed(crm: Crm) -> &'static dyn GovernedCrm {
        match crm {
            Crm::Hubspot => &crma::governed::Hubspot,
            Crm::Salesforce => &crmb::governed::Salesforce,
        }
    }
}

/// What `list-tools` and `list-tool-metadata` return for one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSpec {
    /// The name a caller calls it by, e.g. `crmb_run_soql_query`.
    pub name: &'static str,
    /// A short human-readable title (MCP's `title`).
    pub title: &'static str,
    /// What the tool does and when to use it, written for a language model.
    pub description: &'static str,
    /// JSON Schema (draft 2020-12) of the input object, derived from the tool's input type.
    pub input_schema: &'static str,
    /// JSON Schema (draft 2020-12) of the output object, derived from the tool's output type.
    pub output_schema: &'static str,
    /// True when the tool changes nothing in the CRM; the same as `annotations.read_only`.
    pub read_only: bool,
    /// MCP's behaviour hints, derived from the tool's [`CrmEffect`](crate::tool::CrmEffect).
    pub annotations: Annotations,
}

/// Every tool this build offers, in `list-tools` order: only ones that work end to end.
pub(crate) fn entries() -> impl Iterator<Item = &'static Entry> {
    crmb::TOOLS.iter().chain(crma::TOOLS).chain(GOVERNANCE)
}

/// The tools over the change journal, for both CRMs.
const GOVERNANCE: &[Entry] = &[
    crate::tool::entry::<governance::ListChanges>(),
    crate::tool::entry::<governance::RevertChange<Crms>>(),
    crate::tool::entry::<governance::ResolveChange<Crms>>(),
    crate::tool::entry::<crate::status::ConnectionStatus>(),
    crate::tool::entry::<crate::across::FindAcross>(),
    crate::tool::entry::<crate::timeline::RecordTimeline>(),
];

/// The specs of every tool, for `list-tools`.
pub fn list_tools() -> Vec<ToolSpec> {
    entries()
        .map(|e| {
            // The checked-in schemas cover every tool: a unit test derives them all.
            let (input_schema, output_schema) =
                schema::of(e.name).expect("every tool has checked-in schemas");
            ToolSpec {
                name: e.name,
                title: e.title,
                description: e.description,
                input_schema,
                output_schema,
                read_only: e.read_only,
                annotations: e.effect.annotations(),
            }
        })
        .collect()
}

/// Runs one tool by name on JSON input and returns its JSON output.
pub fn call_tool(name: &str, input: &str, session: &mut Session<'_>) -> Result<String, ToolError> {
    let entry = entries().find(|e| e.name == name).ok_or_else(|| {
        let names: Vec<_> = entries().map(|e| e.name).collect();
        ToolError::invalid(format!(
            "there is no tool named {name:?}; the tools are: {}",
            names.join(", ")
        ))
    })?;
    // Every write tool is governed: its input may ask for a preview or carry a confirmation,
    // and its write passes the gate.
    if entry.read_only {
        (entry.call)(input, session)
    } else {
        governance::call_write(entry, input, session, Crms::governed)
    }
}

#[cfg(test)]
mod egress_agreement;
#[cfg(test)]
mod governed_targets;
#[cfg(test)]
mod listing;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigError;
    use crate::context::CallContext;
    use crate::retry::tests::ScriptedTransport;
    use serde_json::Value;

    /// Input schemas are open objects, as every model API takes them (`schema::portable_input`):
    /// the parser is what refuses a field the tool does not know, for every tool, before
    /// anything is sent.
    #[test]
    fn every_tool_has_an_object_schema_and_its_parser_refuses_unknown_fields() {
        let sent = offline(|session| {
            for spec in list_tools() {
                let schema: Value = serde_json::from_str(spec.input_schema).unwrap();
                assert_eq!(schema["type"], "object", "{}", spec.name);
                assert!(schema.get("$schema").is_none(), "{}", spec.name);
                assert!(
                    spec.description.len() > 40,
                    "{} needs a real description",
                    spec.name
                );
                let e = call_tool(spec.name, r#"{"zz_not_a_field": 1}"#, session).unwrap_err();
                assert!(
                    matches!(&e, ToolError::InvalidInput(m) if m.contains("unknown field `zz_not_a_field`")),
                    "{}: {e:?}",
                    spec.name
                );
            }
        });
        assert!(sent.is_empty());
    }

    /// Runs `body` in a session with no configuration; what it sent.
    fn offline(body: impl FnOnce(&mut Session<'_>)) -> Vec<crate::http::Request> {
        let ctx = CallContext::default();
        let err = ConfigError {
            key: "X",
            problem: "unset".into(),
        };
        let mut transport = ScriptedTransport::default();
        body(&mut Session::new(&ctx, Err(&err), &mut transport));
        transport.sent
    }

    #[test]
    fn every_tool_declares_an_object_output_schema() {
        // MCP requires an object at the root of `outputSchema`, and a model reads the fields.
        let untyped: Vec<_> = list_tools()
            .into_iter()
            .filter(|spec| {
                let schema: Value = serde_json::from_str(spec.output_schema).unwrap();
                // A write tool answers with its output or a preview: each branch is typed.
                let branches = match schema["anyOf"].as_array() {
                    Some(branches) if !spec.read_only => branches.clone(),
                    _ => vec![schema.clone()],
                };
                schema["type"] != "object"
                    || branches.iter().any(|b| {
                        b["type"] != "object"
                            || b["properties"].as_object().is_none_or(|p| p.is_empty())
                    })
            })
            .map(|spec| spec.name)
            .collect();
        assert!(
            untyped.is_empty(),
            "tools without a typed object output: {untyped:?}"
        );
    }

    #[test]
    fn annotations_say_what_each_tool_does_to_the_crm() {
        let specs = list_tools();
        let destructive: Vec<_> = specs
            .iter()
            .filter(|s| s.annotations.destructive)
            .map(|s| s.name)
            .collect();
        // Only overwrites are destructive: no read, create or link is, and nothing deletes.
        assert_eq!(
            destructive,
            [
                "crmb_update_record",
                "crma_update_record",
                "crma_merge_companies",
                "crm_revert_change"
            ]
        );
        for spec in &specs {
            assert_eq!(spec.read_only, spec.annotations.read_only, "{}", spec.name);
            assert!(
                !spec.title.is_empty() && spec.title != spec.name,
                "{}",
                spec.name
            );
            if spec.read_only {
                assert!(spec.annotations.idempotent, "{} reads", spec.name);
            }
        }
        let closed: Vec<_> = specs
            .iter()
            .filter(|s| !s.annotations.open_world)
            .map(|s| s.name)
            .collect();
        assert_eq!(
            closed,
            ["crmb_generate_record_url", "crm_list_changes"],
            "only they call no CRM"
        );
        let writes = specs.iter().filter(|s| !s.read_only).count();
        assert_eq!(writes, 8, "the spec's seven write tools and the revert");
    }

    #[test]
    fn unknown_tools_and_fields_are_invalid_input_with_nothing_sent() {
        let sent = offline(|session| {
            let e = call_tool("crmb_delete_record", "{}", session).unwrap_err();
            assert!(
                matches!(&e, ToolError::InvalidInput(m) if m.contains("crmb_get_record")),
                "{e:?}"
            );
            let e = call_tool(
                "crmb_get_record",
                r#"{"object":"Account","record_id":"001000000000001","colour":"red"}"#,
                session,
            )
            .unwrap_err();
            assert!(
                matches!(&e, ToolError::InvalidInput(m) if m.contains("unknown field `colour`")),
                "{e:?}"
            );
            let e = call_tool("crmb_get_record", "not json", session).unwrap_err();
            assert!(matches!(e, ToolError::InvalidInput(_)));
        });
        assert!(sent.is_empty());
    }
}
