//! The engine and the per-call store.
//!
//! One [`Engine`] with the pooling allocator and epoch interruption serves every tenant. A
//! component is compiled once and pre-instantiated ([`PluginVersion`]); each call then gets a
//! fresh [`Store`] with a memory limit and an epoch deadline, so calls share nothing.

use crate::bindings::PluginPre;
use crate::bindings::crm::plugin::{change_journal, mapping_store, result_files};
use crate::cache::{CacheOutcome, ComponentCache};
use crate::connections::Connections;
use crate::egress::Crm;
use crate::files::{FilesView, ResultFiles, ResultsDir};
use crate::governance::HostPolicy;
use crate::hooks::BrokerHooks;
use crate::journal::{ChangeJournal, JournalView};
pub use crate::listing::ToolListing;
pub(crate) use code::Code;
pub use code::CodeUnavailable;
use code::Compilers;

mod code;
mod version;
use crate::mapping_store::{MappingStore, MappingStoreView};
use crate::progress::{CallProgress, Progress, ProgressSink};
use crate::refusal::Egress;
use crate::tenant_db::TenantDb;
use crate::tenant_db::journal::CallIdentity;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
pub use version::PluginVersion;
use version::{already_loaded, new_version, read_declarations};
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, ResourceLimiter,
    Store, StoreLimits, StoreLimitsBuilder,
};
use wasmtime_wasi::cli::{WasiCli, WasiCliView};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
use wasmtime_wasi::p2::bindings::{cli, clocks, random};
use wasmtime_wasi::random::WasiRandom;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_config::{WasiConfig, WasiConfigVariables};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};
use wasmtime_wasi_io::IoView;

/// How often the epoch advances; deadlines are counted in these ticks.
const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Linear memory a pooling slot keeps mapped between calls (dirtied pages only): enough for a
/// typical call's stack, data and heap, so a call on a warm slot takes no page faults.
const MEMORY_KEPT_RESIDENT: usize = 2 << 20;

/// The same for tables.
const TABLE_KEPT_RESIDENT: usize = 64 << 10;

/// How long past a call's time limit its journal entries stay leased to it: the time the
/// trapped call's host takes to drop it and settle what it knows.
const LEASE_MARGIN_MS: i64 = 5_000;

/// Bounds the host puts on every call, whatever the component or tenant asks for.
#[derive(Debug, Clone, Copy)]
pub struct HostLimits {
    /// Linear memory per call.
    pub memory_bytes: usize,
    /// Wall-clock ceiling for one tool call, host waits included.
    pub call_timeout: Duration,
    /// Ceiling for one HTTP request.
    pub http_timeout: Duration,
    /// Largest file a component may write to a tenant's results directory.
    pub max_result_file_bytes: u64,
    /// Largest request body a component may send.
    pub max_request_bytes: usize,
    /// Calls that may run at once (pooling allocator slots).
    pub concurrent_calls: u32,
}

impl Default for HostLimits {
    fn default() -> Self {
        HostLimits {
            memory_bytes: 128 << 20,
            call_timeout: Duration::from_secs(120),
            http_timeout: Duration::from_secs(30),
            max_result_file_bytes: 1 << 30,
            max_request_bytes: 4 << 20,
            concurrent_calls: 64,
        }
    }
}

/// Everything one call's store holds: that tenant's clocks, settings, results directory and
/// hooks, nothing shared.
pub struct CallState {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    pub(crate) table: ResourceTable,
    /// The tenant's settings, served by `wasi:config/store`.
    config: Arc<WasiConfigVariables>,
    /// The tenant's results directory, served by `result-files`.
    pub(crate) results: Option<ResultsDir>,
    pub(crate) hooks: BrokerHooks,
    limits: PeakTracking,
    /// The serving tenant's mapping store, and the user the call acts for.
    pub(crate) mappings: Arc<TenantDb>,
    pub(crate) user_id: String,
    /// The tenant's connections, and CRM A's generation when the call began: a sync cut by a
    /// disconnect writes nothing.
    connections: Arc<Connections>,
    crm_a_generation: u64,
    /// The tenant's policy, for masking result files and timing confirmations.
    pub(crate) policy: Arc<HostPolicy>,
    /// The audit trail's id of this call, kept with every change it journals.
    pub(crate) call_id: Arc<str>,
    /// When the call will have ended whatever happens (its time limit, plus a margin for the
    /// host's own settling): the lease of every change it journals.
    lease_until_ms: i64,
    /// Where the call's progress goes, when someone asked for it.
    progress: CallProgress,
}

impl CallState {
    /// The largest linear memory the call asked for, in bytes.
    pub fn peak_memory_bytes(&self) -> usize {
        self.limits.peak
    }
}

/// The store's limits, plus the peak memory a call reached (reported in the audit trail and
/// by the benchmark).
struct PeakTracking {
    limits: StoreLimits,
    peak: usize,
}

impl ResourceLimiter for PeakTracking {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = self.limits.memory_growing(current, desired, maximum)?;
        if allowed {
            self.peak = self.peak.max(desired);
        }
        Ok(allowed)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

impl CallState {
    /// `result-files` for this call: its tenant's directory and policy.
    fn files(&mut self) -> FilesView<'_> {
        FilesView {
            results: self.results.as_mut(),
            table: &mut self.table,
            policy: &self.policy,
            store: &self.mappings,
        }
    }

    /// `mapping-store` for this call: its tenant's store, user and connections.
    fn mapping_store(&mut self) -> MappingStoreView<'_> {
        MappingStoreView {
            db: &self.mappings,
            user_id: &self.user_id,
            connections: &self.connections,
            crm_a_generation: self.crm_a_generation,
            table: &mut self.table,
        }
    }

    /// `progress` for this call.
    fn progress(&mut self) -> &mut CallProgress {
        &mut self.progress
    }

    /// Sends the last progress report the thinning held back, once the call has ended.
    pub(crate) fn flush_progress(&mut self) {
        self.progress.flush();
    }

    /// `change-journal` for this call: its tenant's journal, in its user's, tool's and call's
    /// name.
    fn change_journal(&mut self) -> JournalView<'_> {
        JournalView {
            db: &self.mappings,
            identity: CallIdentity {
                user_id: &self.user_id,
                tool: &self.hooks.scope.tool,
                call_id: &self.call_id,
            },
            policy: &self.policy,
            lease_until_ms: self.lease_until_ms,
        }
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl IoView for CallState {
    fn table(&mut self) -> &mut ResourceTable {
        &mut self.table
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.hooks,
        }
    }
}

/// A compiled version and the bytes it came from.
type LoadedVersion = (Arc<[u8]>, Weak<PluginVersion>);

/// The shared engines, linkers and compiled-component cache.
pub struct Runtime {
    /// Cranelift (and Winch, when enabled), and where compiled components are kept between
    /// runs, when the host has a cache: every load (the start, a swap, a fleet peer's swap)
    /// goes through it.
    compilers: Compilers,
    limits: HostLimits,
    /// Compiled versions by their bytes, so the same component is compiled once.
    loaded: Mutex<Vec<LoadedVersion>>,
    stop_ticker: Arc<AtomicBool>,
}

impl Runtime {
    pub fn new(limits: HostLimits) -> wasmtime::Result<Self> {
        let mut pooling = PoolingAllocationConfig::default();
        let slots = limits.concurrent_calls.max(1);
        pooling
            .total_component_instances(slots)
            .total_core_instances(slots * 8)
            .total_memories(slots)
            .total_tables(slots * 4)
            .total_stacks(slots)
            .max_memory_size(limits.memory_bytes);
        // Between calls, reset only the pages a call dirtied (found with Linux's PAGEMAP_SCAN)
        // and keep the first pages of a slot mapped, instead of unmapping the whole memory and
        // taking a page fault on every page the next call touches again; the next call still
        // starts from the component's pristine memory. Without PAGEMAP_SCAN, keeping memory
        // resident means clearing all of it by hand on every call, so the defaults stay.
        if PoolingAllocationConfig::is_pagemap_scan_available() {
            pooling
                .pagemap_scan(Enabled::Yes)
                .linear_memory_keep_resident(MEMORY_KEPT_RESIDENT)
                .table_keep_resident(TABLE_KEPT_RESIDENT);
        }
        let mut config = Config::new();
        config
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pooling))
            .epoch_interruption(true);
        // `CRM_HOST_PERF_MAP=1` names the component's compiled functions for `perf` (a
        // `/tmp/perf-<pid>.map`), so a profile shows guest code by name; off by default.
        if std::env::var_os("CRM_HOST_PERF_MAP").is_some_and(|v| v == "1") {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = Engine::new(&config)?;
        let stop_ticker = Arc::new(AtomicBool::new(false));
        tick_epochs(&engine, stop_ticker.clone())?;
        Ok(Runtime {
            compilers: Compilers::new(engine)?,
            limits,
            loaded: Mutex::default(),
            stop_ticker,
        })
    }

    /// The runtime taking compiled components from `cache` (and storing them there).
    pub fn with_cache(mut self, cache: Option<ComponentCache>) -> Self {
        self.compilers.set_cache(cache);
        self
    }

    /// The runtime with Winch, wasmtime's baseline compiler, for code not in the cache: a
    /// load then serves Winch's code within a fraction of a second and swaps in Cranelift's
    /// when it is built (see [`code`]).
    pub fn with_baseline_compiler(mut self) -> wasmtime::Result<Self> {
        let mut config = Config::new();
        config
            .strategy(wasmtime::Strategy::Winch)
            .epoch_interruption(true);
        let engine = Engine::new(&config)?;
        tick_epochs(&engine, self.stop_ticker.clone())?;
        self.compilers.set_baseline(engine)?;
        Ok(self)
    }

    /// The compiled-component cache every load goes through, if the host has one.
    pub fn cache(&self) -> Option<&ComponentCache> {
        self.compilers.cache()
    }

    /// The engine of Cranelift's code: the one the cache's entries are compiled for.
    pub fn engine(&self) -> &Engine {
        self.compilers.engine()
    }

    pub fn limits(&self) -> HostLimits {
        self.limits
    }

    /// Loads a component, or returns the version already loaded from the same bytes: its code
    /// from the runtime's cache, else Winch's (when the runtime has Winch, Cranelift's following
    /// on another thread), else compiled by Cranelift here. An error means it is refused: no
    /// acceptable egress policy or listing, or code that does not compile.
    pub fn load(&self, wasm: &[u8]) -> wasmtime::Result<Arc<PluginVersion>> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(version) = already_loaded(&mut loaded, wasm) {
            return Ok(version);
        }
        let (policy, listing) = read_declarations(wasm)?;
        let wasm: Arc<[u8]> = wasm.into();
        let code = self.compilers.load_now(wasm.clone())?;
        let version = new_version(&wasm, code, policy, listing);
        loaded.push((wasm, Arc::downgrade(&version)));
        Ok(version)
    }

    /// As [`Runtime::load`], taking the compiled component from `cache` when it holds it (and
    /// storing it there when not); also says which happened.
    pub fn load_cached(
        &self,
        wasm: &[u8],
        cache: &ComponentCache,
    ) -> wasmtime::Result<(Arc<PluginVersion>, CacheOutcome)> {
        self.load_with(wasm, |engine| cache.component(engine, wasm))
    }

    fn load_with(
        &self,
        wasm: &[u8],
        compile: impl FnOnce(&Engine) -> wasmtime::Result<(Component, CacheOutcome)>,
    ) -> wasmtime::Result<(Arc<PluginVersion>, CacheOutcome)> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(version) = already_loaded(&mut loaded, wasm) {
            return Ok((version, CacheOutcome::AlreadyLoaded));
        }
        let (policy, listing) = read_declarations(wasm)?;
        let (component, outcome) = compile(self.engine())?;
        let pre = PluginPre::new(self.compilers.linker().instantiate_pre(&component)?)?;
        let wasm: Arc<[u8]> = wasm.into();
        let version = new_version(&wasm, Code::ready(pre), policy, listing);
        loaded.push((wasm, Arc::downgrade(&version)));
        Ok((version, outcome))
    }

    /// As [`Runtime::load`], but returns as soon as the component's egress policy and tool
    /// listing are read: the code is taken from the cache or compiled on another thread, and a
    /// call waits for it. So a client's `initialize` and `tools/list` never wait on the
    /// compiler. A component that fails to compile fails each call with the reason (and it is
    /// logged).
    pub fn load_in_background(&self, wasm: Arc<[u8]>) -> wasmtime::Result<Arc<PluginVersion>> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(version) = already_loaded(&mut loaded, &wasm) {
            return Ok(version);
        }
        let (policy, listing) = read_declarations(&wasm)?;
        let code = self.compilers.load_in_background(wasm.clone())?;
        let version = new_version(&wasm, code, policy, listing);
        loaded.push((wasm, Arc::downgrade(&version)));
        // Hashed off the way to the first answer: the audit trail names the version by it.
        let hashed = Arc::downgrade(&version);
        let _ = std::thread::Builder::new()
            .name("hash".into())
            .spawn(move || hashed.upgrade().map(|v| v.sha256().len()));
        Ok(version)
    }

    /// A fresh store for one call, limited in memory and time.
    pub(crate) fn store(
        &self,
        pre: &PluginPre<CallState>,
        tenant: TenantResources,
        hooks: BrokerHooks,
        user_id: String,
    ) -> Store<CallState> {
        let time_limit = tenant.time_limit;
        let state = CallState {
            // Clocks only: no environment, arguments, stdio, preopens or sockets (none is linked).
            wasi: WasiCtx::builder().build(),
            http: WasiHttpCtx::new(),
            table: ResourceTable::new(),
            config: tenant.config,
            results: tenant.results_dir.map(|tenant_dir| {
                let owner = tenant.owner;
                ResultsDir {
                    dir: owner.dir_in(&tenant_dir),
                    owner,
                    max_file_bytes: self.limits.max_result_file_bytes,
                    unpublished: Default::default(),
                }
            }),
            mappings: tenant.mappings,
            crm_a_generation: tenant.connections.generation(Crm::Hubspot),
            connections: tenant.connections,
            policy: tenant.policy,
            call_id: tenant.call_id,
            lease_until_ms: crate::tenant_db::now_ms()
                .saturating_add(i64::try_from(time_limit.as_millis()).unwrap_or(i64::MAX))
                .saturating_add(LEASE_MARGIN_MS),
            progress: CallProgress::new(tenant.progress),
            hooks,
            user_id,
            limits: PeakTracking {
                limits: StoreLimitsBuilder::new()
                    .memory_size(self.limits.memory_bytes)
                    .instances(16)
                    .build(),
                peak: 0,
            },
        };
        let mut store = code::store_for(pre, state);
        store.limiter(|state| &mut state.limits);
        let ticks = (time_limit.as_millis() / EPOCH_TICK.as_millis()).max(1) as u64;
        store.set_epoch_deadline(ticks);
        store.epoch_deadline_trap();
        store
    }
}

/// What a call's store gets from its tenant: settings, results directory, mapping store.
pub(crate) struct TenantResources {
    pub(crate) config: Arc<WasiConfigVariables>,
    pub(crate) results_dir: Option<std::path::PathBuf>,
    /// Whose result files the call writes: its user's directory inside the tenant's.
    pub(crate) owner: crate::tenant_db::ResultOwner,
    pub(crate) mappings: Arc<TenantDb>,
    pub(crate) connections: Arc<Connections>,
    pub(crate) policy: Arc<HostPolicy>,
    pub(crate) call_id: Arc<str>,
    pub(crate) progress: Option<ProgressSink>,
    /// How long the call may run.
    pub(crate) time_limit: Duration,
}

/// The interfaces the `plugin` world imports, and nothing else: `wasi:io` and `wasi:http` for
/// the way out, the two clocks, `wasi:config/store`, `mapping-store` and `result-files`, and
/// the pieces of `wasi:cli` and `wasi:random` Rust's standard library imports, with nothing
/// behind them (the store's `WasiCtx` has no variables, no stdin, discards output). A component
/// importing anything more (sockets, the filesystem, real randomness) fails to load.
fn plugin_linker(engine: &Engine) -> wasmtime::Result<Linker<CallState>> {
    let mut linker = Linker::new(engine);
    let l = &mut linker;
    wasmtime_wasi_io::add_to_linker_async(l)?;
    clocks::monotonic_clock::add_to_linker::<CallState, WasiClocks>(l, |s| s.clocks())?;
    clocks::wall_clock::add_to_linker::<CallState, WasiClocks>(l, |s| s.clocks())?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(l)?;
    cli::environment::add_to_linker::<CallState, WasiCli>(l, |s| s.cli())?;
    cli::exit::add_to_linker::<CallState, WasiCli>(l, |s| s.cli())?;
    cli::stdin::add_to_linker::<CallState, WasiCli>(l, |s| s.cli())?;
    cli::stdout::add_to_linker::<CallState, WasiCli>(l, |s| s.cli())?;
    cli::stderr::add_to_linker::<CallState, WasiCli>(l, |s| s.cli())?;
    cli::terminal_input::add_to_linker::<CallState, WasiCli>(l, |s| s.cli())?;
    cli::terminal_output::add_to_linker::<CallState, WasiCli>(l, |s| s.cli())?;
    cli::terminal_stdin::add_to_linker::<CallState, WasiCli>(l, |s| s.cli())?;
    cli::terminal_stdout::add_to_linker::<CallState, WasiCli>(l, |s| s.cli())?;
    cli::terminal_stderr::add_to_linker::<CallState, WasiCli>(l, |s| s.cli())?;
    random::insecure_seed::add_to_linker::<CallState, WasiRandom>(l, |s| s.wasi.random())?;
    wasmtime_wasi_config::add_to_linker(l, |s: &mut CallState| WasiConfig::from(&*s.config))?;
    mapping_store::add_to_linker::<CallState, MappingStore>(l, CallState::mapping_store)?;
    result_files::add_to_linker::<CallState, ResultFiles>(l, CallState::files)?;
    change_journal::add_to_linker::<CallState, ChangeJournal>(l, CallState::change_journal)?;
    crate::bindings::crm::plugin::progress::add_to_linker::<CallState, Progress>(
        l,
        CallState::progress,
    )?;
    crate::bindings::crm::plugin::egress::add_to_linker::<CallState, Egress>(l, |s| {
        &s.hooks.refusals
    })?;
    Ok(linker)
}

/// Advances `engine`'s epoch every [`EPOCH_TICK`] until `stop` (or the engine is gone).
fn tick_epochs(engine: &Engine, stop: Arc<AtomicBool>) -> wasmtime::Result<()> {
    let engine = engine.weak();
    std::thread::Builder::new()
        .name("epoch-ticker".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(EPOCH_TICK);
                match engine.upgrade() {
                    Some(engine) => engine.increment_epoch(),
                    None => break,
                }
            }
        })
        .map(drop)
        .map_err(|e| wasmtime::format_err!("starting the epoch ticker: {e}"))
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.stop_ticker.store(true, Ordering::Relaxed);
    }
}
