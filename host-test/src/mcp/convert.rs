//! What the MCP server says, as pure functions over what the host returns: tool listings with
//! titles, annotations and output schemas; tool results with structured content; result files
//! as resource links. No I/O here, so all of it is unit-tested natively.

use crate::answer_form::AnswerForm;
use crate::bindings::{ToolMetadata, ToolSpec};
use crate::host::CallError;
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Resource, Tool, ToolAnnotations};
use serde_json::{Value, json};
use std::sync::Arc;

/// The scheme of a tenant's result files as MCP resources: `crm-results://files/<name>`. The
/// tenant is never in the URI; it is always the session's own.
pub const RESULTS_URI_PREFIX: &str = "crm-results://files/";

/// The media type of a result file (JSON Lines).
pub const NDJSON: &str = "application/x-ndjson";

/// One MCP tool from the component's spec and metadata rows (matched by name); its output
/// schema only when answers are structured.
pub fn tool(spec: &ToolSpec, meta: Option<&ToolMetadata>, form: AnswerForm) -> Tool {
    let mut tool = Tool::new(
        spec.name.clone(),
        spec.description.clone(),
        Arc::new(object(&spec.input_schema)),
    );
    if let Some(meta) = meta {
        let a = &meta.annotations;
        if form == AnswerForm::Structured {
            tool = tool.with_raw_output_schema(Arc::new(object(&meta.output_schema)));
        }
        tool = tool.with_title(meta.title.clone()).with_annotations(
            ToolAnnotations::new()
                .read_only(a.read_only)
                .destructive(a.destructive)
                .idempotent(a.idempotent)
                .open_world(a.open_world),
        );
    } else {
        tool = tool.with_annotations(ToolAnnotations::new().read_only(spec.read_only));
    }
    tool
}

/// A JSON Schema text as an object; a schema that is not one becomes the empty object schema.
fn object(schema: &str) -> JsonObject {
    match serde_json::from_str(schema) {
        Ok(Value::Object(map)) => map,
        _ => json!({"type": "object"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    }
}

/// How a result file is named to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilePaths {
    /// As a path on this machine: the client runs here (MCP over stdio).
    Local,
    /// As its `crm-results://files/` URI only: a remote client cannot open the server's
    /// paths, and they are not its business.
    Resources,
}

/// A tool's answer: the JSON as a text block, and as `structuredContent` when answers are
/// structured; a large result's file also as a `resource_link` the client can read. The text
/// block is the component's own compact JSON, passed on as it came; the answer is parsed only
/// for `structuredContent` or to show a file's path as its URI.
pub fn success(output: &str, paths: FilePaths, form: AnswerForm) -> CallToolResult {
    let names_a_file = output.contains("\"file_path\"");
    if form == AnswerForm::Text && !names_a_file {
        return CallToolResult::success(vec![ContentBlock::text(output.to_string())]);
    }
    let mut value: Value = serde_json::from_str(output).unwrap_or(Value::String(output.into()));
    let name = result_file_name(&value).map(str::to_string);
    let mut text = None;
    let link = name.map(|name| {
        let uri = format!("{RESULTS_URI_PREFIX}{name}");
        if paths == FilePaths::Resources {
            value["file_path"] = Value::String(uri.clone());
            text = Some(value.to_string());
        }
        ContentBlock::resource_link(Resource::new(uri, name).with_mime_type(NDJSON))
    });
    let text = match (text, &value) {
        (Some(text), _) => text,
        // Not JSON at all: the text as it is, in a JSON string like the structured copy.
        (None, Value::String(_)) => value.to_string(),
        (None, _) => output.to_string(),
    };
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    if form == AnswerForm::Structured {
        result.structured_content = Some(value);
    }
    result.content.extend(link);
    result
}

/// The file name of a query result written to a file (its `file_path`), if any.
fn result_file_name(output: &Value) -> Option<&str> {
    let path = output.get("file_path")?.as_str()?;
    path.rsplit('/').next().filter(|name| !name.is_empty())
}

/// How a failed call reaches the client: a `tool-error` is a tool result with `isError` (the
/// model reads it and can correct itself), and so is a tenant out of service on this host (the
/// model can tell its user what the operator must fix); a broken or cancelled call is a
/// protocol error.
pub fn failure(err: CallError) -> Result<CallToolResult, McpError> {
    match err {
        CallError::Tool(e) => Ok(tool_error(e.kind(), &e.message())),
        out @ CallError::OutOfService { .. } => Ok(tool_error(out.kind(), &out.to_string())),
        other => Err(McpError::internal_error(other.to_string(), None)),
    }
}

/// A tool error as every client shows it: `isError`, and the kind and message as the text
/// (`{"error": {"kind", "message"}}`, the same JSON the CLI prints). No `structuredContent`:
/// clients validate it against the tool's `outputSchema`, which describes success, and would
/// show their validation failure instead of our message.
pub fn tool_error(kind: &str, message: &str) -> CallToolResult {
    let text = json!({"error": {"kind": kind, "message": message}}).to_string();
    CallToolResult::error(vec![ContentBlock::text(text)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::{ToolAnnotations as WitAnnotations, ToolError};

    fn spec() -> ToolSpec {
        ToolSpec {
            name: "crmb_update_record".into(),
            description: "Update a record".into(),
            input_schema: r#"{"type":"object","additionalProperties":false}"#.into(),
            read_only: false,
        }
    }

    #[test]
    fn a_tool_carries_title_annotations_and_output_schema() {
        let meta = ToolMetadata {
            name: "crmb_update_record".into(),
            title: "Update a Salesforce record".into(),
            output_schema: r#"{"type":"object","properties":{"id":{"type":"string"}}}"#.into(),
            annotations: WitAnnotations {
                read_only: false,
                destructive: true,
                idempotent: true,
                open_world: true,
            },
        };
        let wire =
            serde_json::to_value(tool(&spec(), Some(&meta), AnswerForm::Structured)).unwrap();
        assert_eq!(wire["title"], "Update a Salesforce record");
        assert_eq!(wire["inputSchema"]["additionalProperties"], false);
        assert_eq!(wire["outputSchema"]["properties"]["id"]["type"], "string");
        assert_eq!(wire["annotations"]["destructiveHint"], true);
        assert_eq!(wire["annotations"]["readOnlyHint"], false);
        assert_eq!(wire["annotations"]["idempotentHint"], true);
        assert_eq!(wire["annotations"]["openWorldHint"], true);
        let text_only = serde_json::to_value(tool(&spec(), Some(&meta), AnswerForm::Text)).unwrap();
        assert!(
            text_only.get("outputSchema").is_none(),
            "a client refuses a result without structuredContent from a tool with a schema"
        );
        assert_eq!(text_only["title"], "Update a Salesforce record");
    }

    #[test]
    fn an_answer_is_structured_and_text_and_a_file_is_a_link() {
        let out = r#"{"file_path":"/tmp/r/acme/query-1.jsonl","record_count":3}"#;
        let wire =
            serde_json::to_value(success(out, FilePaths::Local, AnswerForm::Structured)).unwrap();
        assert_eq!(
            wire["structuredContent"]["file_path"],
            "/tmp/r/acme/query-1.jsonl"
        );
        assert_eq!(wire["structuredContent"]["record_count"], 3);
        assert_eq!(wire["isError"], false);
        let content = wire["content"].as_array().unwrap();
        assert_eq!(content[0]["type"], "text");
        let text: Value = serde_json::from_str(content[0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text["record_count"], 3);
        assert_eq!(content[1]["type"], "resource_link");
        assert_eq!(content[1]["uri"], "crm-results://files/query-1.jsonl");
        assert_eq!(content[1]["mimeType"], NDJSON);
        let component = r#"{"url":"x","b":[1, 2.50]}"#;
        let plain =
            serde_json::to_value(success(component, FilePaths::Local, AnswerForm::Structured))
                .unwrap();
        assert_eq!(plain["content"].as_array().unwrap().len(), 1);
        assert_eq!(
            plain["content"][0]["text"], component,
            "the component's text is passed on as it came, its order and numbers kept"
        );
        assert_eq!(plain["structuredContent"]["b"][1], 2.5);
        let remote =
            serde_json::to_value(success(out, FilePaths::Resources, AnswerForm::Structured))
                .unwrap();
        assert_eq!(
            remote["structuredContent"]["file_path"], "crm-results://files/query-1.jsonl",
            "a remote client never sees the server's paths"
        );
        assert!(
            !remote["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("/tmp/")
        );
    }

    #[test]
    fn a_text_answer_is_one_copy_and_still_links_its_file() {
        let component =
            r#"{"records":[{"Id":"001","record_url":"https://acme.my.salesforce.com/001"}]}"#;
        let wire =
            serde_json::to_value(success(component, FilePaths::Local, AnswerForm::Text)).unwrap();
        assert!(wire.get("structuredContent").is_none());
        assert_eq!(wire["content"].as_array().unwrap().len(), 1);
        assert_eq!(wire["content"][0]["text"], component);
        assert_eq!(wire["isError"], false);
        let file = r#"{"file_path":"/tmp/r/acme/query-1.jsonl","record_count":3}"#;
        let remote =
            serde_json::to_value(success(file, FilePaths::Resources, AnswerForm::Text)).unwrap();
        assert!(remote.get("structuredContent").is_none());
        let text: Value =
            serde_json::from_str(remote["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text["file_path"], "crm-results://files/query-1.jsonl");
        assert_eq!(remote["content"][1]["type"], "resource_link");
    }

    #[test]
    fn tool_errors_are_results_the_model_reads_and_host_failures_are_protocol_errors() {
        let wire = serde_json::to_value(
            failure(CallError::Tool(ToolError::MissingScopes(vec![
                "crm.objects.deals.write".into(),
            ])))
            .unwrap(),
        )
        .unwrap();
        assert_eq!(wire["isError"], true);
        assert!(
            wire.get("structuredContent").is_none(),
            "an error carries nothing a client would check against the output schema"
        );
        let text: Value =
            serde_json::from_str(wire["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text["error"]["kind"], "missing-scopes");
        assert_eq!(text["error"]["message"], "crm.objects.deals.write");
        let err = failure(CallError::Plugin("wasm trap: unreachable".into())).unwrap_err();
        assert_eq!(err.code, rmcp::model::ErrorCode::INTERNAL_ERROR);
    }

    #[test]
    fn a_tenant_out_of_service_is_a_result_naming_what_the_operator_must_fix() {
        let out = CallError::OutOfService {
            tenant: "globex".into(),
            why: "GLOBEX_CRED is not set; set it on every host".into(),
        };
        let wire = serde_json::to_value(failure(out).unwrap()).unwrap();
        assert_eq!(wire["isError"], true);
        let text: Value =
            serde_json::from_str(wire["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text["error"]["kind"], "out-of-service");
        assert_eq!(
            text["error"]["message"],
            "tenant globex is out of service on this host: GLOBEX_CRED is not set; set it on \
             every host"
        );
    }
}
