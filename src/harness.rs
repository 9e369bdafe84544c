//! The one way the component's own tests run a tool: through [`registry::call_tool`], as the
//! shell does, on a session built from a call context, a configuration and a scripted
//! transport. Every test module builds on these instead of keeping its own copies.

use crate::config::{Config, keys};
use crate::context::CallContext;
use crate::error::ToolError;
use crate::governance::{
    Change, ChangeEntry, ChangeFilter, ChangeStatus, Confirmation, Journal, JournalError,
    TokenRefusal,
};
use crate::http::Transport;
use crate::mapping::MappingStore;
use crate::registry;
use crate::tool::{ResultFiles, Session};
use serde_json::{Map, Value};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::PathBuf;

/// The broker every test configuration points at.
pub(crate) const BROKER: &str = "https://broker.example.com";

/// A call with these CRM A scopes and (for Salesforce links) org URL.
pub(crate) fn ctx(scopes: &[&str], instance_url: Option<&str>) -> CallContext {
    CallContext {
        granted_scopes: scopes.iter().map(|s| s.to_string()).collect(),
        instance_url: instance_url.map(str::to_string),
    }
}

/// The test broker plus `extra` settings.
pub(crate) fn config(extra: &[(&'static str, &str)]) -> Config {
    let mut vars = vec![(keys::PROXY_BASE, BROKER.to_string())];
    vars.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
    Config::from_vars(vars).unwrap()
}

/// Runs `tool` on `input` and reads its JSON output.
pub(crate) fn call(
    transport: &mut dyn Transport,
    ctx: &CallContext,
    config: &Config,
    tool: &str,
    input: &Value,
) -> Result<Value, ToolError> {
    let mut files = config.results.dir.as_deref().map(DirFiles::new);
    let mut journal = MemoryJournal::default();
    let mut session = Session::new(ctx, Ok(config), transport).with_journal(&mut journal);
    if let Some(files) = files.as_mut() {
        session = session.with_files(files);
    }
    read(
        tool,
        registry::call_tool(tool, &input.to_string(), &mut session),
    )
}

/// As [`call`], with the tenant's mapping store.
pub(crate) fn call_with_store(
    transport: &mut dyn Transport,
    store: &mut dyn MappingStore,
    ctx: &CallContext,
    config: &Config,
    tool: &str,
    input: &Value,
) -> Result<Value, ToolError> {
    let mut journal = MemoryJournal::default();
    let mut session = Session::new(ctx, Ok(config), transport)
        .with_store(store)
        .with_journal(&mut journal);
    read(
        tool,
        registry::call_tool(tool, &input.to_string(), &mut session),
    )
}

/// As [`call`], with a journal the test keeps across calls.
pub(crate) fn call_with_journal(
    transport: &mut dyn Transport,
    journal: &mut MemoryJournal,
    config: &Config,
    tool: &str,
    input: &Value,
) -> Result<Value, ToolError> {
    call_with_journal_granted(transport, journal, config, &[], tool, input)
}

/// As [`call_with_journal`], with these CRM A scopes granted.
pub(crate) fn call_with_journal_granted(
    transport: &mut dyn Transport,
    journal: &mut MemoryJournal,
    config: &Config,
    scopes: &[&str],
    tool: &str,
    input: &Value,
) -> Result<Value, ToolError> {
    let ctx = ctx(scopes, Some("https://acme.my.salesforce.com"));
    let mut session = Session::new(&ctx, Ok(config), transport).with_journal(journal);
    read(
        tool,
        registry::call_tool(tool, &input.to_string(), &mut session),
    )
}

/// Reads a tool's JSON output and checks it against the output schema the tool advertises, so
/// every answer any test sees is one an MCP client would accept as `structuredContent`.
fn read(tool: &str, output: Result<String, ToolError>) -> Result<Value, ToolError> {
    let output: Value = serde_json::from_str(&output?).expect("tool output is JSON");
    let spec = registry::list_tools()
        .into_iter()
        .find(|spec| spec.name == tool)
        .expect("a tool that answered is listed");
    let schema: Value = serde_json::from_str(spec.output_schema).expect("schema is JSON");
    let validator = jsonschema::draft202012::new(&schema).expect("a valid output schema");
    let problems: Vec<String> = validator
        .iter_errors(&output)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        problems.is_empty(),
        "{tool} answered outside its output schema: {problems:?}\n{output:#}"
    );
    Ok(output)
}

/// The JSON body of a sent request.
pub(crate) fn body(request: &crate::http::Request) -> Value {
    serde_json::from_slice(request.body().expect("a body")).expect("a JSON body")
}

/// A results directory on the native filesystem, standing in for the host's `result-files`.
#[derive(Debug, Clone)]
pub(crate) struct DirFiles {
    dir: PathBuf,
}

impl DirFiles {
    pub(crate) fn new(dir: impl Into<PathBuf>) -> Self {
        DirFiles { dir: dir.into() }
    }
}

impl ResultFiles for DirFiles {
    fn create(&mut self, name: &str) -> io::Result<Box<dyn Write>> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.dir.join(name))?;
        Ok(Box::new(file))
    }

    fn publish(&mut self, from: &str, to: &str) -> io::Result<String> {
        fs::rename(self.dir.join(from), self.dir.join(to))?;
        Ok(self.dir.join(to).display().to_string())
    }

    fn discard(&mut self, name: &str) {
        let _ = fs::remove_file(self.dir.join(name));
    }
}

/// The host's change journal and confirmations, in memory, for one tenant and user: what the
/// native tests run write tools with.
#[derive(Debug, Default)]
pub(crate) struct MemoryJournal {
    pub(crate) changes: Vec<Change>,
    /// Issued tokens: (token, input, values read, used).
    pub(crate) tokens: Vec<(String, String, Map<String, Value>, bool)>,
}

impl Journal for MemoryJournal {
    fn begin(&mut self, entry: &ChangeEntry) -> Result<String, JournalError> {
        let id = format!("chg-{}", self.changes.len() + 1);
        self.changes.push(Change {
            id: id.clone(),
            at_ms: 0,
            user_id: "u1".into(),
            call_id: "call-1".into(),
            status: ChangeStatus::Pending,
            entry: entry.clone(),
        });
        Ok(id)
    }

    fn settle(
        &mut self,
        id: &str,
        status: ChangeStatus,
        record_id: Option<&str>,
    ) -> Result<(), JournalError> {
        let change = self
            .changes
            .iter_mut()
            .find(|c| c.id == id)
            .ok_or_else(|| JournalError("no such change".into()))?;
        change.status = status;
        if let Some(id) = record_id {
            change.entry.record_id = Some(id.into());
        }
        Ok(())
    }

    fn resolve(
        &mut self,
        id: &str,
        status: ChangeStatus,
        record_id: Option<&str>,
    ) -> Result<(), JournalError> {
        let change = self
            .changes
            .iter_mut()
            .find(|c| c.id == id && c.status == ChangeStatus::Unknown)
            .ok_or_else(|| JournalError("no change with an unknown outcome".into()))?;
        change.status = status;
        if let Some(id) = record_id {
            change.entry.record_id = Some(id.into());
        }
        Ok(())
    }

    fn list(&mut self, filter: &ChangeFilter, limit: u32) -> Result<Vec<Change>, JournalError> {
        Ok(self
            .changes
            .iter()
            .rev()
            .filter(|c| filter.record_id.is_none() || c.entry.record_id == filter.record_id)
            .filter(|c| filter.object.as_ref().is_none_or(|o| *o == c.entry.object))
            .take(limit as usize)
            .cloned()
            .collect())
    }

    fn get(&mut self, id: &str) -> Result<Option<Change>, JournalError> {
        Ok(self.changes.iter().find(|c| c.id == id).cloned())
    }

    fn issue(
        &mut self,
        input: &str,
        values_read: &Map<String, Value>,
    ) -> Result<Confirmation, JournalError> {
        let token = format!("tok-{}", self.tokens.len() + 1);
        self.tokens
            .push((token.clone(), input.into(), values_read.clone(), false));
        Ok(Confirmation {
            token,
            expires_at_ms: u64::MAX,
        })
    }

    fn redeem(&mut self, token: &str, input: &str) -> Result<Map<String, Value>, TokenRefusal> {
        let found = self
            .tokens
            .iter_mut()
            .find(|t| t.0 == token)
            .ok_or(TokenRefusal::Unknown)?;
        if found.3 {
            return Err(TokenRefusal::Used);
        }
        if found.1 != input {
            return Err(TokenRefusal::OtherInput);
        }
        found.3 = true;
        Ok(found.2.clone())
    }
}
