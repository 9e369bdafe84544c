//! The framework every tool is written against: the [`Tool`] trait, the [`Session`] a running
//! tool uses (who it acts for, the configuration, the only way out), [`NoInput`], and the
//! [`Entry`] a CRM module lists its tools with. It knows no CRM, no registry and no governance:
//! a write passes whatever [`WriteGuard`] the registry installed for the call.

use crate::config::{Config, ConfigError};
use crate::context::CallContext;
use crate::error::ToolError;
use crate::http::{Effect, Request, Transport};
use crate::journal::Journal;
use crate::mapping::{CreatedRecord, MappingStore};
use crate::policy::ReadScope;
use crate::retry::{self, Answer, HintReader};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Everything a running tool may use: who it acts for, where the CRMs are, and the only way out.
pub struct Session<'a> {
    /// The call's context from the host: granted scopes and the Salesforce org URL.
    pub ctx: &'a CallContext,
    config: Result<&'a Config, &'a ConfigError>,
    transport: &'a mut dyn Transport,
    store: Option<&'a mut dyn MappingStore>,
    files: Option<&'a mut dyn ResultFiles>,
    journal: Option<&'a mut dyn Journal>,
    /// The gate a write tool's call sends its write through; `None` in a read tool's call,
    /// which therefore cannot send one.
    pub(crate) gate: Option<Box<dyn WriteGuard>>,
}

/// What every write of a governed call passes at [`Session::send`], the last seam before the
/// wire (the governance gate: policy, preview, confirmation, journal).
pub trait WriteGuard: std::any::Any {
    /// Judges one write and sends it, or stops it.
    fn send(
        &mut self,
        session: &mut Session<'_>,
        request: &Request,
        read_hint: HintReader,
    ) -> Result<Answer, ToolError>;
}

/// The tenant's results directory, the only place a tool writes files. The core reaches it
/// only through this seam; the shell gives the host's `result-files` import.
pub trait ResultFiles {
    /// Creates the new file `name` for writing; fails when it exists.
    fn create(&mut self, name: &str) -> std::io::Result<Box<dyn std::io::Write>>;
    /// Renames the finished file `from` to `to`, which makes it a result, and answers where
    /// the user finds it (the host keeps each user's results apart, so only it knows).
    fn publish(&mut self, from: &str, to: &str) -> std::io::Result<String>;
    /// Removes an unfinished file.
    fn discard(&mut self, name: &str);
}

impl<'a> Session<'a> {
    /// A session with no mapping store and no results directory; `config` is the tenant's
    /// configuration or why it could not be read, reported when a tool first needs it.
    pub fn new(
        ctx: &'a CallContext,
        config: Result<&'a Config, &'a ConfigError>,
        transport: &'a mut dyn Transport,
    ) -> Self {
        Session {
            ctx,
            config,
            transport,
            store: None,
            files: None,
            journal: None,
            gate: None,
        }
    }

    /// Gives the tools the host's change journal and confirmations for this tenant.
    pub fn with_journal(mut self, journal: &'a mut dyn Journal) -> Self {
        self.journal = Some(journal);
        self
    }

    /// The tenant's change journal; without one no write is sent, as none could be reverted.
    pub fn journal(&mut self) -> Result<&mut (dyn Journal + 'a), ToolError> {
        self.journal.as_deref_mut().ok_or_else(|| {
            ToolError::Unavailable(
                "this host keeps no change journal, so no write is sent; ask the workspace admin"
                    .into(),
            )
        })
    }

    /// Gives the tools the tenant's results directory.
    pub fn with_files(mut self, files: &'a mut dyn ResultFiles) -> Self {
        self.files = Some(files);
        self
    }

    /// The tenant's results directory.
    pub fn files(&mut self) -> Result<&mut (dyn ResultFiles + 'a), ToolError> {
        self.files.as_deref_mut().ok_or_else(|| {
            ToolError::Unavailable(
                "this host gives the workspace no results directory for large results; ask for \
                 fewer records (max_records) or ask the workspace admin"
                    .into(),
            )
        })
    }

    /// Gives the tools the host's mapping store for this tenant.
    pub fn with_store(mut self, store: &'a mut dyn MappingStore) -> Self {
        self.store = Some(store);
        self
    }

    /// The tenant's mapping store.
    pub fn store(&mut self) -> Result<&mut (dyn MappingStore + 'a), ToolError> {
        self.store.as_deref_mut().ok_or_else(|| {
            ToolError::Unavailable(
                "this host keeps no local mapping store; ask the workspace admin".into(),
            )
        })
    }

    /// Keeps a created record's id in the mapping store. The record exists whatever happens
    /// here, so a failure is returned as a warning for the output, never as the call's error.
    pub fn remember_created(&mut self, record: CreatedRecord) -> Option<String> {
        let stored = self
            .store()
            .map_err(|e| e.to_string())
            .and_then(|store| store.record_created(&record).map_err(|e| e.to_string()));
        stored
            .err()
            .map(|why| format!("the record was created, but its id was not kept locally ({why})"))
    }

    /// Wall-clock time in milliseconds since the Unix epoch.
    pub fn now_unix_millis(&mut self) -> u64 {
        self.transport.now_unix_millis()
    }

    /// Reports how far a long call has come (records written, read or synced so far, of
    /// `total` when known): the host passes it on to a client that asked for progress.
    pub fn progress(&mut self, done: u64, total: Option<u64>) {
        self.transport.report_progress(done, total);
    }

    /// Waits on the transport's clock (a monotonic-clock sleep in the component), for a tool
    /// that paces its own requests.
    pub fn sleep(&mut self, duration: std::time::Duration) {
        self.transport.sleep(duration);
    }

    /// The tenant's configuration; a missing or broken one is a connection problem for an admin.
    pub fn config(&self) -> Result<&'a Config, ToolError> {
        self.config.map_err(|err| {
            ToolError::NotConnected(format!(
                "{err}. The workspace's CRM connection is not set up correctly: reconnect it in \
                 the integration settings or ask the workspace admin"
            ))
        })
    }

    /// The call's write guard as its concrete type, when it is one.
    pub(crate) fn guard_mut<G: WriteGuard>(&mut self) -> Option<&mut G> {
        let guard: &mut dyn std::any::Any = self.gate.as_deref_mut()?;
        guard.downcast_mut::<G>()
    }

    /// Sends a request with the retry rules of [`retry::execute`]; `read_hint` is the CRM's
    /// own reader of when to try again. A write goes through the call's [`WriteGuard`] (policy,
    /// preview, confirmation, journal); a call without one sends no write at all.
    pub fn send(&mut self, request: &Request, read_hint: HintReader) -> Result<Answer, ToolError> {
        if request.effect() == Effect::Write {
            let Some(mut gate) = self.gate.take() else {
                return Err(ToolError::Forbidden(
                    "a read-only tool tried to send a write; nothing was sent".into(),
                ));
            };
            let sent = gate.send(self, request, read_hint);
            self.gate = Some(gate);
            return sent;
        }
        self.send_unguarded(request, read_hint)
    }

    /// Sends a request past the gate: only the gate itself sends writes this way.
    pub(crate) fn send_unguarded(
        &mut self,
        request: &Request,
        read_hint: HintReader,
    ) -> Result<Answer, ToolError> {
        let limits = self.config()?.limits;
        retry::execute(self.transport, &limits, request, read_hint)
    }
}

/// One tool: a typed input and a typed output (both schemas are derived from the types) and a
/// run function. The registry serialises the output once; tools never build JSON by hand.
pub trait Tool {
    /// The name the tool is listed and called by, prefixed by its CRM (`crmb_get_record`).
    const NAME: &'static str;
    /// Written for a language model: what the tool does and when to use it.
    const DESCRIPTION: &'static str;
    /// A short human-readable title (MCP's `title`).
    const TITLE: &'static str;
    /// What the tool does to the CRM: whether it is read-only, and MCP's annotations.
    const EFFECT: CrmEffect;
    /// The parsed input; its doc comments become the input schema's descriptions.
    type Input: DeserializeOwned + JsonSchema;
    /// The answer, serialised as the call's result; its doc comments become the output
    /// schema's descriptions.
    type Output: Serialize + JsonSchema;
    /// Runs the tool on a parsed input. An error here is the call's error.
    fn run(input: Self::Input, session: &mut Session<'_>) -> Result<Self::Output, ToolError>;

    /// What the input names for the workspace's read policy (fields, free text, a query, a
    /// record count): the registry checks it before [`Tool::run`], so a tool never calls the
    /// masking or record-cap checks itself. Most tools name nothing.
    fn reads(_input: &Self::Input) -> ReadScope<'_> {
        ReadScope::default()
    }

    /// Binds what one call touches to the workspace's record cap (`CRM_POLICY_MAX_RECORDS`):
    /// a limit the caller left out becomes the tool's default or the cap, whichever is less.
    /// The registry calls it for every tool when a cap is set, after [`Tool::reads`] refused
    /// an ask over the cap, so no read returns, pages or looks at more than the cap whatever
    /// the caller wrote or omitted. Exports to files are bound by the same cap through the
    /// file limit (`Config`), aggregates by the records they read.
    fn cap_records(_input: &mut Self::Input, _cap: u32) {}
}

/// A page size bound by the record cap: the caller's, else `default`, never over `cap`.
pub(crate) fn capped(limit: Option<u32>, default: u32, cap: u32) -> Option<u32> {
    Some(limit.unwrap_or(default).min(cap))
}

/// What a tool does to the CRM: the source of MCP's annotations. No tool deletes, so there is
/// no case for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrmEffect {
    /// Answers from its input and configuration alone; calls no CRM.
    Offline,
    /// Reads the CRM and changes nothing there.
    Reads,
    /// Adds to the CRM (a record, an activity, a link) without changing what is there.
    Adds {
        /// Whether making the same call twice leaves the CRM as making it once.
        idempotent: bool,
    },
    /// Overwrites existing CRM data (an update, a merge).
    Changes {
        /// Whether making the same call twice leaves the CRM as making it once.
        idempotent: bool,
    },
}

/// MCP's tool annotations, as the `tool-metadata` interface carries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotations {
    /// `readOnlyHint`: the tool changes nothing.
    pub read_only: bool,
    /// `destructiveHint`: the tool may overwrite existing data.
    pub destructive: bool,
    /// `idempotentHint`: repeating a call with the same input has no further effect.
    pub idempotent: bool,
    /// `openWorldHint`: the tool reaches outside the plugin (a CRM).
    pub open_world: bool,
}

impl CrmEffect {
    /// The annotations a client sees: only overwrites are destructive; only offline tools are
    /// closed-world.
    pub const fn annotations(self) -> Annotations {
        let (read_only, destructive, idempotent) = match self {
            CrmEffect::Offline | CrmEffect::Reads => (true, false, true),
            CrmEffect::Adds { idempotent } => (false, false, idempotent),
            CrmEffect::Changes { idempotent } => (false, true, idempotent),
        };
        Annotations {
            read_only,
            destructive,
            idempotent,
            open_world: !matches!(self, CrmEffect::Offline),
        }
    }
}

/// The input of a tool that takes none: `{}`, and nothing else.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoInput {}

/// A registry row: the tool's metadata and its entry points, monomorphised per tool.
pub struct Entry {
    pub(crate) name: &'static str,
    pub(crate) title: &'static str,
    pub(crate) description: &'static str,
    pub(crate) read_only: bool,
    pub(crate) effect: CrmEffect,
    /// Derives the input schema (a write's own, before governance adds `preview` and
    /// `confirmation_token`); the component serves the checked-in copy instead.
    #[cfg(test)]
    pub(crate) input_schema: fn() -> String,
    /// Derives the output schema; the component serves the checked-in copy instead.
    #[cfg(test)]
    pub(crate) output_schema: fn() -> String,
    pub(crate) call: fn(&str, &mut Session<'_>) -> Result<String, ToolError>,
}

/// The registry row of tool `T`.
pub(crate) const fn entry<T: Tool>() -> Entry {
    Entry {
        name: T::NAME,
        title: T::TITLE,
        description: T::DESCRIPTION,
        read_only: T::EFFECT.annotations().read_only,
        effect: T::EFFECT,
        #[cfg(test)]
        input_schema: crate::schema::derive::input_schema::<T::Input>,
        #[cfg(test)]
        output_schema: crate::schema::derive::output_schema::<T::Output>,
        // A write tool's call is governed by the registry around this (its input may ask for
        // a preview or carry a confirmation, and its write passes the gate).
        call: call::<T>,
    }
}

/// Parses the input, runs the tool and serialises its output: the one place JSON is written.
/// The input is read as bytes, like every CRM answer, so the component carries one JSON
/// reader rather than serde_json's `&str` and `&[u8]` readers side by side (a `&str` is valid
/// UTF-8, so both readers accept and refuse alike, with the same messages).
///
/// One copy of this is made per tool (29), so what does not depend on the tool's types is in
/// the plain functions below, kept out of line: once in the component rather than 29 times.
fn call<T: Tool>(input: &str, session: &mut Session<'_>) -> Result<String, ToolError> {
    let mut input: T::Input =
        serde_json::from_slice(input.as_bytes()).map_err(|err| invalid_input(T::NAME, err))?;
    check_reads(&T::reads(&input), session)?;
    if let Some(cap) = record_cap(session) {
        T::cap_records(&mut input, cap);
    }
    let output = T::run(input, session)?;
    Ok(serde_json::to_string(&output).unwrap_or_else(unserialisable))
}

/// The error for an input that does not parse as the tool's input.
#[inline(never)]
#[cold]
fn invalid_input(tool: &str, err: serde_json::Error) -> ToolError {
    ToolError::invalid(format!("{tool}: {err}"))
}

/// Checks what the input names against the workspace's read policy.
#[inline(never)]
fn check_reads(scope: &ReadScope<'_>, session: &Session<'_>) -> Result<(), ToolError> {
    if *scope != ReadScope::default() {
        session.config()?.policy.check_read(scope)?;
    }
    Ok(())
}

/// The workspace's record cap, if it sets one.
#[inline(never)]
fn record_cap(session: &Session<'_>) -> Option<u32> {
    let cap = session.config().ok()?.policy.max_records?;
    Some(u32::try_from(cap).unwrap_or(u32::MAX))
}

/// A tool output serde_json refused: a bug (a map with non-string keys), never the input's fault.
#[inline(never)]
#[cold]
fn unserialisable(err: serde_json::Error) -> String {
    panic!("tool outputs serialise: no maps with non-string keys: {err:?}")
}
