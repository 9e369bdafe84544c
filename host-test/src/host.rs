//! The tenant registry and the call path.
//!
//! Each tenant has its own component version, configuration and credential. A call looks its
//! tenant up once and keeps that entry to the end, so [`Host::swap`] can replace a tenant's
//! component at any moment: calls in flight finish on the old version, new calls start on the
//! new one, and none fails because of the swap.

use crate::audit::{AuditEvent, AuditLog, millis};
use crate::backend::Backend;
use crate::bindings::{CallContext, ToolError, ToolMetadata, ToolSpec};
use crate::credential::Credential;
use crate::egress::Crm;
use crate::governance::HostPolicy;
use crate::progress::ProgressSink;
use crate::runtime::{PluginVersion, Runtime, ToolListing};
use crate::tenant_db::{DbLocation, TenantDb};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use url::Url;

/// Why a call produced no tool result.
mod call_error;
/// Each call's store: its tenant's resources and hooks.
mod call_store;
use call_store::CallSite;
/// Following the fleet's store: what other hosts announce.
mod fleet;
/// A tenant's store, connections and results directory, opened at first need.
mod opened;
use opened::{Opened, TenantState};
/// An operator's disconnects and reconnects.
mod operator;
/// Tenants taken out of service on this host, and whether the host is ready.
mod service;
/// What tenants on one broker under one policy share, built once.
mod shape;

pub use call_error::CallError;
pub use service::Readiness;

/// The configuration variable that carries the broker URL into the component.
const PROXY_BASE_VAR: &str = "CRM_PROXY_BASE";

/// The variable the CLI reads the broker credential from; never passed on as a setting, whoever
/// builds the tenant's settings.
const CREDENTIAL_VAR: &str = "CRM_PROXY_CREDENTIAL";

/// What the host knows about one tenant.
#[derive(Debug, Clone)]
pub struct TenantSpec {
    pub tenant_id: String,
    /// The tenant's broker, e.g. `https://broker.example.com`; the only origin its calls reach.
    pub proxy_base: Url,
    pub credential: Credential,
    /// Non-secret settings served to the component by `wasi:config/store` (`CRM_*`, documented
    /// in docs/contributors.md, "Embedding the component"). `CRM_PROXY_BASE` is always taken
    /// from `proxy_base`.
    pub settings: Vec<(String, String)>,
    /// A directory only this tenant's calls may write, for large query results (JSON Lines),
    /// through `result-files`; `None` keeps every result inline.
    pub results_dir: Option<PathBuf>,
    /// Where the tenant's user/owner mappings and created-record ids are kept.
    pub mappings: DbLocation,
}

/// What the component is told about its results directory: files are on. It names files,
/// never paths, so this is only a label; `publish` answers where the user finds each one.
const RESULTS_LABEL: &str = "/results";

/// A registered tenant, immutable once built; a swap replaces the whole entry.
struct TenantEntry {
    tenant_id: Arc<str>,
    /// Its broker, egress roots, settings and policy: shared with every tenant like it.
    shape: Arc<shape::Shape>,
    /// The tenant's store, connections and results directory; shared across swaps.
    state: Arc<TenantState>,
    plugin: Arc<PluginVersion>,
}

/// One tool call as the host receives it.
#[derive(Debug, Clone, Default)]
pub struct CallRequest {
    pub tenant_id: String,
    pub user_id: String,
    pub granted_scopes: Vec<String>,
    pub instance_url: Option<String>,
    pub tool: String,
    pub input: String,
}

/// The tenant registry and call path.
pub struct Host {
    runtime: Arc<Runtime>,
    backend: Arc<dyn Backend>,
    audit: AuditLog,
    /// Keyed by the entry's own id (shared, not copied: a host may list a hundred thousand).
    tenants: RwLock<foldhash::HashMap<Arc<str>, Arc<TenantEntry>>>,
    /// Tells listeners (MCP sessions) which tenant's component was just swapped.
    swaps: tokio::sync::broadcast::Sender<Arc<str>>,
    /// Calls running in the background as tasks.
    tasks: crate::tasks::TaskBoard,
    /// Holds requests until their account has room; none by default (see [`Host::with_pacer`]).
    pacer: Option<crate::pacing::Pacer>,
    /// The form of every answer an MCP client gets (see [`Host::with_answer_form`]).
    answer_form: crate::answer_form::AnswerForm,
    /// Listed tenants this host cannot serve, with why (see [`Host::take_out_of_service`]).
    out_of_service: RwLock<std::collections::BTreeMap<String, String>>,
    /// Brokers, settings and policies, each built once for every tenant that has it.
    shapes: shape::Shapes,
}

impl Host {
    pub fn new(runtime: Arc<Runtime>, backend: Arc<dyn Backend>, audit: AuditLog) -> Self {
        Host {
            runtime,
            backend,
            audit,
            tenants: RwLock::default(),
            swaps: tokio::sync::broadcast::channel(64).0,
            tasks: crate::tasks::TaskBoard::default(),
            pacer: None,
            answer_form: crate::answer_form::AnswerForm::default(),
            out_of_service: RwLock::default(),
            shapes: shape::Shapes::default(),
        }
    }

    /// Paces every tenant's requests to its CRM accounts with `pacer`: this host's own, or one
    /// over the fleet's store, so that many hosts together keep each account's limits.
    pub fn with_pacer(mut self, pacer: crate::pacing::Pacer) -> Self {
        self.pacer = Some(pacer);
        self
    }

    /// Gives MCP clients every answer in `form`: text alone (the default), or structured with
    /// the same JSON as text beside it.
    pub fn with_answer_form(mut self, form: crate::answer_form::AnswerForm) -> Self {
        self.answer_form = form;
        self
    }

    /// The form of every answer an MCP client gets.
    pub fn answer_form(&self) -> crate::answer_form::AnswerForm {
        self.answer_form
    }

    /// The calls running in the background as tasks, each its owner's only.
    pub fn tasks(&self) -> &crate::tasks::TaskBoard {
        &self.tasks
    }

    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// Registers (or re-registers) a tenant with a component version, opening its store and
    /// results directory now: a registration fails when they cannot be opened.
    pub fn add_tenant(
        &self,
        spec: TenantSpec,
        plugin: Arc<PluginVersion>,
    ) -> Result<(), CallError> {
        self.register(spec, plugin, true)
    }

    /// Registers (or re-registers) a tenant with a component version, leaving its store and
    /// results directory to its first call: listing a tenant opens no file and sends no
    /// query, so a host's start does not grow with its tenants. A store that then fails to
    /// open takes the tenant out of service, named in [`Host::readiness`], until it opens.
    pub fn list_tenant(
        &self,
        spec: TenantSpec,
        plugin: Arc<PluginVersion>,
    ) -> Result<(), CallError> {
        self.register(spec, plugin, false)
    }

    /// Makes room for `additional` more tenants at once, before listing many (a hundred
    /// thousand at a start would otherwise grow the table seventeen times).
    pub fn reserve_tenants(&self, additional: usize) {
        self.tenants
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .reserve(additional);
    }

    /// Checks and registers a tenant, its state opened now when `open_now`.
    fn register(
        &self,
        spec: TenantSpec,
        plugin: Arc<PluginVersion>,
        open_now: bool,
    ) -> Result<(), CallError> {
        let tenant_id = spec.tenant_id.clone();
        let entry = self.entry(spec, plugin)?;
        if open_now {
            entry
                .state
                .open_now()
                .map_err(|why| CallError::BadTenant(tenant_id.clone(), why))?;
        }
        self.insert(&tenant_id, entry);
        Ok(())
    }

    fn insert(&self, tenant_id: &str, entry: TenantEntry) {
        self.tenants
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(entry.tenant_id.clone(), Arc::new(entry));
        self.back_in_service(tenant_id);
    }

    /// A tenant's entry from its spec, checked (its broker, its policy), nothing opened.
    fn entry(
        &self,
        spec: TenantSpec,
        plugin: Arc<PluginVersion>,
    ) -> Result<TenantEntry, CallError> {
        let settings: Vec<(String, String)> = spec
            .settings
            .into_iter()
            .filter(|(k, _)| k.starts_with("CRM_") && k != PROXY_BASE_VAR && k != CREDENTIAL_VAR)
            .collect();
        let shape = self
            .shapes
            .get(&spec.proxy_base, settings, spec.results_dir.is_some())
            .map_err(|why| CallError::BadTenant(spec.tenant_id.clone(), why))?;
        let tenant_id: Arc<str> = spec.tenant_id.as_str().into();
        Ok(TenantEntry {
            tenant_id: tenant_id.clone(),
            shape,
            state: Arc::new(TenantState::new(
                tenant_id,
                spec.credential,
                spec.results_dir,
                spec.mappings,
            )),
            plugin,
        })
    }

    /// Replaces a tenant's component with one built from `wasm` (compiled once, outside any
    /// lock). Calls already running keep the version they started with.
    pub fn swap(&self, tenant_id: &str, wasm: &[u8]) -> Result<Arc<PluginVersion>, CallError> {
        let plugin = self
            .runtime
            .load(wasm)
            .map_err(|e| CallError::Plugin(format!("loading the new component: {e}")))?;
        self.swap_version(tenant_id, plugin.clone())?;
        Ok(plugin)
    }

    /// Replaces a tenant's component with an already loaded version.
    pub fn swap_version(
        &self,
        tenant_id: &str,
        plugin: Arc<PluginVersion>,
    ) -> Result<(), CallError> {
        let mut tenants = self.tenants.write().unwrap_or_else(|e| e.into_inner());
        let old = tenants
            .get(tenant_id)
            .ok_or_else(|| CallError::UnknownTenant(tenant_id.into()))?;
        let entry = TenantEntry {
            tenant_id: old.tenant_id.clone(),
            shape: old.shape.clone(),
            state: old.state.clone(),
            plugin,
        };
        tenants.insert(entry.tenant_id.clone(), Arc::new(entry));
        // Nobody listening is fine: no session to tell.
        let _ = self.swaps.send(tenant_id.into());
        Ok(())
    }

    /// Every later swap's tenant id, for telling clients that a tenant's tools changed.
    pub fn swaps(&self) -> tokio::sync::broadcast::Receiver<Arc<str>> {
        self.swaps.subscribe()
    }

    /// The tenant's results directory, where its large query results are (for serving them
    /// back to that tenant alone).
    pub fn results_dir(&self, tenant_id: &str) -> Result<Option<PathBuf>, CallError> {
        Ok(self.opened(tenant_id)?.results_dir.clone())
    }

    /// Every tenant's entry now.
    fn entries(&self) -> Vec<Arc<TenantEntry>> {
        self.tenants
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    fn tenant(&self, tenant_id: &str) -> Result<Arc<TenantEntry>, CallError> {
        self.tenants
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(tenant_id)
            .cloned()
            .ok_or_else(|| self.missing(tenant_id))
    }

    /// The tenant's mapping store, as the host keeps it (for tools around the host, and tests).
    pub fn mappings(&self, tenant_id: &str) -> Result<Arc<TenantDb>, CallError> {
        Ok(self.opened(tenant_id)?.mappings.clone())
    }

    /// The tenant's store, connections and results directory, opened if they were not.
    fn opened(&self, tenant_id: &str) -> Result<Arc<Opened>, CallError> {
        self.tenant(tenant_id)?.state.open()
    }

    /// The tenant's policy as the host reads it (masking, hidden tools).
    pub fn policy(&self, tenant_id: &str) -> Result<Arc<HostPolicy>, CallError> {
        Ok(self.tenant(tenant_id)?.shape.policy.clone())
    }

    /// The tools the tenant's component offers, less those the tenant's policy makes useless.
    pub async fn list_tools(&self, tenant_id: &str) -> Result<Vec<ToolSpec>, CallError> {
        let policy = self.tenant(tenant_id)?.shape.policy.clone();
        Ok(self
            .listing(tenant_id)
            .await?
            .specs
            .iter()
            .filter(|s| policy.hides(&s.name, s.read_only).is_none())
            .cloned()
            .collect())
    }

    /// Titles, annotations and output schemas of the same tools, in the same order, from the
    /// component's `tool-metadata` export.
    pub async fn tool_metadata(&self, tenant_id: &str) -> Result<Vec<ToolMetadata>, CallError> {
        let policy = self.tenant(tenant_id)?.shape.policy.clone();
        Ok(self
            .listing(tenant_id)
            .await?
            .metadata
            .iter()
            .filter(|m| policy.hides(&m.name, m.annotations.read_only).is_none())
            .cloned()
            .collect())
    }

    /// Refuses a tool the tenant's policy hides, naming the rule, before any component runs.
    async fn refuse_hidden(&self, entry: &TenantEntry, tool: &str) -> Result<(), CallError> {
        if entry.shape.policy.hides(tool, false).is_none() {
            return Ok(());
        }
        let listing = self.listing(&entry.tenant_id).await?;
        let read_only = listing
            .specs
            .iter()
            .find(|s| s.name == tool)
            .is_some_and(|s| s.read_only);
        match entry.shape.policy.hides(tool, read_only) {
            Some(rule) => Err(CallError::Tool(ToolError::Forbidden(format!(
                "{rule}. Nothing was sent. Only a workspace admin can change the policy."
            )))),
            None => Ok(()),
        }
    }

    /// The tenant's component's tool listing, read from a fresh instance the first time and
    /// kept with that version after.
    pub async fn listing(&self, tenant_id: &str) -> Result<Arc<ToolListing>, CallError> {
        let entry = self.tenant(tenant_id)?;
        if let Some(listing) = entry.plugin.tools.get() {
            return Ok(listing.clone());
        }
        let pre = entry
            .plugin
            .code
            .pre()
            .await
            .map_err(|e| CallError::Plugin(e.to_string()))?;
        // Listing sends nothing: no tool is named, so the policy admits no request.
        let nobody = CallSite {
            tool: "",
            user_id: "",
            writes: Arc::default(),
            call_id: "".into(),
        };
        let opened = entry.state.open()?;
        let mut store = self.store(&pre, &entry, &opened, nobody, CallOptions::default())?;
        let plugin_error = |e: wasmtime::Error| CallError::Plugin(format!("{e:#}"));
        let instance = pre
            .instantiate_async(&mut store)
            .await
            .map_err(plugin_error)?;
        let specs = instance
            .crm_plugin_tools()
            .call_list_tools(&mut store)
            .await
            .map_err(plugin_error)?;
        let metadata = instance
            .crm_plugin_tool_metadata()
            .call_list_tool_metadata(&mut store)
            .await
            .map_err(plugin_error)?;
        let listing = Arc::new(ToolListing::new(specs, metadata));
        Ok(entry.plugin.tools.get_or_init(|| listing).clone())
    }

    /// Runs one tool call in a fresh instance of the tenant's component, and audits it.
    pub async fn call(&self, request: CallRequest) -> Result<String, CallError> {
        self.call_until(request, std::future::pending()).await
    }

    /// As [`Host::call`], but stops when `cancelled` completes first (an MCP client's
    /// `notifications/cancelled`): the component is dropped where it stands, and the call is
    /// audited as `cancelled`, or `outcome-unknown` when a write had already gone out.
    pub async fn call_until(
        &self,
        request: CallRequest,
        cancelled: impl Future<Output = ()>,
    ) -> Result<String, CallError> {
        self.call_with(request, cancelled, CallOptions::default())
            .await
    }

    /// As [`Host::call_until`], with `options`: where the call's progress goes, and a time
    /// limit of its own (a task's, longer than a call's).
    pub async fn call_with(
        &self,
        request: CallRequest,
        cancelled: impl Future<Output = ()>,
        options: CallOptions,
    ) -> Result<String, CallError> {
        let started = Instant::now();
        let writes = Arc::new(AtomicBool::new(false));
        let call_id: Arc<str> = new_call_id().into();
        let entry = self.tenant(&request.tenant_id);
        let plugin_version = entry
            .as_ref()
            .map(|e| e.plugin.label().to_string())
            .unwrap_or_default();
        let (result, peak_memory_bytes) = match entry {
            Ok(entry) => tokio::select! {
                done = self.run(&entry, &request, writes.clone(), call_id.clone(), options) => done,
                () = cancelled => (Err(CallError::Cancelled {
                    write_sent: writes.load(Ordering::SeqCst),
                }), 0),
            },
            Err(err) => (Err(err), 0),
        };
        self.audit.record(AuditEvent::ToolCall {
            call_id: call_id.to_string(),
            tenant: request.tenant_id.clone(),
            user: request.user_id.clone(),
            tool: request.tool.clone(),
            plugin_version,
            outcome: match &result {
                Ok(_) => "ok".into(),
                Err(e) => e.kind().into(),
            },
            duration_ms: millis(started.elapsed()),
            peak_memory_bytes: peak_memory_bytes as u64,
        });
        result
    }

    /// Runs the call; also returns the peak memory it reached.
    async fn run(
        &self,
        entry: &TenantEntry,
        request: &CallRequest,
        writes: Arc<AtomicBool>,
        call_id: Arc<str>,
        options: CallOptions,
    ) -> (Result<String, CallError>, usize) {
        if let Err(refused) = self.refuse_hidden(entry, &request.tool).await {
            return (Err(refused), 0);
        }
        let opened = match entry.state.open() {
            Ok(opened) => opened,
            Err(refused) => return (Err(refused), 0),
        };
        // A tool refused up front is one whose every CRM is disconnected; a tool that may reach
        // either (`crm_revert_change`) still runs for the connected one, and the hooks answer a
        // request to the disconnected one with a typed refusal (`egress`), sending nothing.
        let reaches: Vec<Crm> = entry.plugin.policy.integrations_of(&request.tool).collect();
        if let Some(&integration) = reaches.first()
            && reaches.iter().all(|i| !opened.connections.is_connected(*i))
        {
            let crm = match integration {
                Crm::Hubspot => "HubSpot",
                Crm::Salesforce => "Salesforce",
            };
            return (
                Err(CallError::Tool(ToolError::NotConnected(format!(
                    "{crm} is disconnected for this workspace; nothing was sent. Reconnect {crm} \
                     in the workspace's integration settings."
                )))),
                0,
            );
        }
        let timeout = options
            .time_limit
            .unwrap_or(self.runtime.limits().call_timeout);
        let trap_id = call_id.clone();
        // The version's best code so far (a start without a cache entry compiles it first):
        // the call's store is made on that code's engine, and the wait counts against the
        // call's time.
        let started = std::time::Instant::now();
        let pre = match tokio::time::timeout(timeout, entry.plugin.code.pre()).await {
            Ok(Ok(pre)) => pre,
            Ok(Err(unavailable)) => return (Err(CallError::Plugin(unavailable.to_string())), 0),
            Err(_) => {
                return (
                    Err(CallError::Plugin(format!(
                        "the call took longer than {timeout:?}: the component was still being compiled"
                    ))),
                    0,
                );
            }
        };
        let timeout = timeout.saturating_sub(started.elapsed());
        let call = CallSite {
            tool: &request.tool,
            user_id: &request.user_id,
            writes,
            call_id,
        };
        let mut store = match self.store(&pre, entry, &opened, call, options) {
            Ok(store) => store,
            Err(err) => return (Err(err), 0),
        };
        let ctx = CallContext {
            tenant_id: request.tenant_id.clone(),
            user_id: request.user_id.clone(),
            granted_scopes: request.granted_scopes.clone(),
            instance_url: request.instance_url.clone(),
        };
        let call = async {
            let instance = pre.instantiate_async(&mut store).await?;
            instance
                .crm_plugin_tools()
                .call_call_tool(&mut store, &ctx, &request.tool, &request.input)
                .await
        };
        let result = match tokio::time::timeout(timeout, call).await {
            // Masked fields never leave the host, whatever the component answered.
            Ok(Ok(Ok(output))) => Ok(entry.shape.policy.mask_text(output)),
            // And masked values never leave through an error's words either.
            Ok(Ok(Err(tool_error))) => {
                Err(CallError::Tool(tool_error.masked_by(&entry.shape.policy)))
            }
            Ok(Err(trap)) => {
                // The whole error, wasm backtrace included, is the operator's; the client is
                // told what happened in one line and the call id to ask about.
                tracing::error!(call_id = %trap_id, tenant = %request.tenant_id,
                    tool = %request.tool, "the plugin failed: {trap:?}");
                Err(CallError::Plugin(call_error::trap_summary(&trap, &trap_id)))
            }
            Err(_) => Err(CallError::Plugin(format!(
                "the call took longer than {timeout:?}"
            ))),
        };
        store.data_mut().flush_progress();
        (result, store.data().peak_memory_bytes())
    }
}

/// How one call runs beyond its request.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// Where the call's progress goes (records exported, read, synced), a few times a second
    /// at most.
    pub progress: Option<ProgressSink>,
    /// The call's own time limit instead of the runtime's (a task runs longer than a call).
    pub time_limit: Option<Duration>,
    /// Who the call's result files belong to; the operator's user of the request's `user_id`
    /// when not given (the CLI, stdio).
    pub owner: Option<crate::tenant_db::ResultOwner>,
}

/// A fresh id for one call, written on its audit line and kept with every change it journals.
fn new_call_id() -> String {
    // Without the system's random numbers the time stands in: the id names, it does not guard.
    crate::tenant_db::journal::random_hex(8).unwrap_or_else(|_| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or_default();
        format!("{nanos:016x}")
    })
}
