//! A tenant's result files over MCP: listed and read as resources (`crm-results://files/…`,
//! size-capped), and paged through by the read-only `crm_read_result_file` tool, for clients
//! that cannot read resources or files. Only the session's own user's files are reached (a
//! result belongs to the user who made it: [`ResultOwner`]), and only by plain file names.

use super::Principal;
use super::convert::{NDJSON, RESULTS_URI_PREFIX, tool_error};
use crate::answer_form::AnswerForm;
use crate::files::path_in;
use crate::host::Host;
use crate::tenant_db::ResultOwner;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResult, ContentBlock, ReadResourceResult, Resource, ResourceContents, Tool,
    ToolAnnotations,
};
use serde::Deserialize;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::sync::Arc;

/// The host's own tool for paging through a result file.
pub const READ_TOOL: &str = "crm_read_result_file";

/// Largest file `resources/read` returns whole; larger ones are paged with [`READ_TOOL`].
pub const MAX_RESOURCE_BYTES: u64 = 8 << 20;

/// Most records one page of [`READ_TOOL`] returns.
const MAX_PAGE: usize = 1000;

pub use crate::files::RESULT_FILE_TTL;

/// Whether a file was written longer ago than [`RESULT_FILE_TTL`]; expired ones are deleted.
fn expired(path: &std::path::Path) -> bool {
    let old = path
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age > RESULT_FILE_TTL);
    if old {
        let _ = std::fs::remove_file(path);
    }
    old
}

/// The tenant's policy, to mask a file's lines as they are read: a file written before a
/// field was masked must not show it now.
fn policy(
    host: &Host,
    principal: &Principal,
) -> Result<Arc<crate::governance::HostPolicy>, McpError> {
    host.policy(&principal.tenant_id)
        .map_err(|e| McpError::internal_error(e.to_string(), None))
}

/// The principal's own results directory (inside the tenant's).
fn dir(host: &Host, principal: &Principal) -> Result<PathBuf, McpError> {
    let tenant_dir = host
        .results_dir(&principal.tenant_id)
        .map_err(|e| McpError::internal_error(e.to_string(), None))?
        .ok_or_else(|| {
            McpError::resource_not_found("this workspace keeps no result files", None)
        })?;
    Ok(owner(principal).dir_in(&tenant_dir))
}

fn owner(principal: &Principal) -> ResultOwner {
    principal.owner()
}

/// A resource-not-found error naming the URI (as the MCP spec's example shows it in `data`).
fn not_found(uri: &str) -> McpError {
    McpError::resource_not_found(format!("no resource {uri}"), Some(json!({"uri": uri})))
}

/// The tenant's finished result files, newest names last.
pub fn list(host: &Host, principal: &Principal) -> Result<Vec<rmcp::model::Resource>, McpError> {
    let Ok(dir) = dir(host, principal) else {
        return Ok(Vec::new());
    };
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|name| name.ends_with(".jsonl") && !expired(&dir.join(name)))
                .collect()
        })
        .unwrap_or_default();
    // And those other hosts of the fleet published (the store keeps none on SQLite).
    let store = host
        .mappings(&principal.tenant_id)
        .map_err(|e| McpError::internal_error(e.to_string(), None))?;
    let kept = store
        .result_file_names(&owner(principal))
        .map_err(|e| McpError::internal_error(e.to_string(), None))?;
    names.extend(kept.into_iter().filter(|n| n.ends_with(".jsonl")));
    names.sort();
    names.dedup();
    Ok(names
        .into_iter()
        .map(|name| {
            Resource::new(format!("{RESULTS_URI_PREFIX}{name}"), name).with_mime_type(NDJSON)
        })
        .collect())
}

/// The file a `crm-results://files/<name>` URI names in the tenant's directory.
fn file(host: &Host, principal: &Principal, uri: &str) -> Result<PathBuf, McpError> {
    let name = uri
        .strip_prefix(RESULTS_URI_PREFIX)
        .ok_or_else(|| not_found(uri))?;
    let dir = dir(host, principal).map_err(|_| not_found(uri))?;
    let path = path_in(&dir, name).map_err(|_| {
        McpError::invalid_params(
            format!(
                "{name:?} is not a plain file name (1 to 128 letters, digits, '.', '-', '_', not \
                 starting with '.')"
            ),
            None,
        )
    })?;
    if !path.is_file() {
        // Published through another host of the fleet: brought here from the store.
        let store = host
            .mappings(&principal.tenant_id)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        crate::private_fs::create_dir_all(&dir)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        if !store
            .fetch_result_file(&owner(principal), name, &dir)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?
        {
            return Err(not_found(uri));
        }
    }
    if expired(&path) {
        return Err(not_found(uri));
    }
    Ok(path)
}

/// `resources/read`: the whole file, when it is at most [`MAX_RESOURCE_BYTES`].
pub fn read(host: &Host, principal: &Principal, uri: &str) -> Result<ReadResourceResult, McpError> {
    let path = file(host, principal, uri)?;
    let size = path.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
    if size > MAX_RESOURCE_BYTES {
        return Err(McpError::invalid_params(
            format!(
                "{uri} is {size} bytes, over the {MAX_RESOURCE_BYTES}-byte limit for reading it \
                 whole; page through it with {READ_TOOL}"
            ),
            None,
        ));
    }
    let mut text = std::fs::read_to_string(&path)
        .map_err(|e| McpError::internal_error(format!("reading {uri}: {e}"), None))?;
    let policy = policy(host, principal)?;
    if policy.masks() {
        let mut masked = String::with_capacity(text.len());
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            if let Some(line) = policy.mask_line(line.as_bytes()) {
                masked.push_str(&String::from_utf8_lossy(&line));
                masked.push('\n');
            }
        }
        text = masked;
    }
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(text, uri.to_string()).with_mime_type(NDJSON),
    ]))
}

/// Input of [`READ_TOOL`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadInput {
    file: String,
    #[serde(default)]
    offset: usize,
    #[serde(default = "default_limit")]
    limit: usize,
}

fn default_limit() -> usize {
    200
}

/// The [`READ_TOOL`] listing: read-only, closed-world (it reads the host's files only); its
/// output schema only when answers are structured.
pub fn read_tool(form: AnswerForm) -> Tool {
    // Open, as every model API takes it (the component's inputs are the same); the
    // arguments' parser refuses an unknown field.
    let input = json!({
        "type": "object",
        "required": ["file"],
        "properties": {
            "file": {"type": "string", "description": "The result file: its name, its crm-results://files/ URI, or the file_path a query answered."},
            "offset": {"type": "integer", "minimum": 0, "description": "Records to skip (0 for the first page; then next_offset)."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "description": "Most records to return (default 200)."}
        }
    });
    let output = json!({
        "type": "object",
        "required": ["file", "offset", "records", "done"],
        "properties": {
            "file": {"type": "string", "description": "The file's name."},
            "offset": {"type": "integer", "description": "Index of the first record returned."},
            "records": {"type": "array", "items": {"type": "object"}, "description": "The records, one JSON object each."},
            "next_offset": {"type": "integer", "description": "Pass as offset for the next page; absent when done."},
            "done": {"type": "boolean", "description": "True when no records follow."}
        }
    });
    let tool = Tool::new(
        READ_TOOL,
        "Page through a large query result file (JSON Lines) that crmb_run_soql_query wrote: \
         give the file and an offset; answers up to limit records and the next offset.",
        Arc::new(input.as_object().cloned().unwrap_or_default()),
    )
    .with_title("Read a result file")
    .with_annotations(
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    );
    match form {
        AnswerForm::Structured => {
            tool.with_raw_output_schema(Arc::new(output.as_object().cloned().unwrap_or_default()))
        }
        AnswerForm::Text => tool,
    }
}

/// Runs [`READ_TOOL`]; a wrong input is a tool error the model can correct.
pub fn read_tool_call(
    host: &Host,
    principal: &Principal,
    input: &Value,
) -> Result<CallToolResult, McpError> {
    let invalid = |message: String| Ok(tool_error("invalid-input", &message));
    let input: ReadInput = match serde_json::from_value(input.clone()) {
        Ok(input) => input,
        Err(e) => return invalid(format!("{READ_TOOL}: {e}")),
    };
    if !(1..=MAX_PAGE).contains(&input.limit) {
        return invalid(format!("limit must be from 1 to {MAX_PAGE}"));
    }
    // The name alone: a URI or a path the tool answered both end in it.
    let name = input.file.rsplit('/').next().unwrap_or_default();
    let path = match file(host, principal, &format!("{RESULTS_URI_PREFIX}{name}")) {
        Ok(path) => path,
        Err(e) => return invalid(e.message.to_string()),
    };
    let reader = std::fs::File::open(&path)
        .map(BufReader::new)
        .map_err(|e| McpError::internal_error(format!("opening {name}: {e}"), None))?;
    let policy = policy(host, principal)?;
    let mut lines = reader.lines().skip(input.offset);
    let mut records = Vec::new();
    for line in lines.by_ref().take(input.limit) {
        let line = line.map_err(|e| McpError::internal_error(e.to_string(), None))?;
        match serde_json::from_str::<Value>(&line) {
            Ok(mut record) => {
                policy.mask(&mut record);
                records.push(record);
            }
            // A line that is not JSON cannot be masked key by key: not shown.
            Err(_) if policy.masks() => {
                records.push(Value::String(crate::governance::MASKED.into()))
            }
            Err(_) => records.push(Value::String(line)),
        }
    }
    let done = lines.next().is_none();
    let mut out = json!({"file": name, "offset": input.offset, "records": records, "done": done});
    if !done {
        out["next_offset"] = json!(input.offset + out["records"].as_array().map_or(0, Vec::len));
    }
    Ok(match host.answer_form() {
        AnswerForm::Structured => CallToolResult::structured(out),
        AnswerForm::Text => CallToolResult::success(vec![ContentBlock::text(out.to_string())]),
    })
}
