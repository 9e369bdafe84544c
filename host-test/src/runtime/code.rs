//! A component version's code, in two tiers.
//!
//! Cranelift's code is what every call should run: it is cached on disk (`crm-host precompile`
//! puts it there at install time) and read back in milliseconds. When it is not there, compiling
//! it takes seconds (the bench prints how many), so a runtime may also hold Winch, wasmtime's
//! baseline compiler: it compiles the same component about twenty times faster into slower
//! code. The first calls then run on Winch's code while Cranelift's is built on another thread
//! and swapped in; a call keeps the code it started on, and its store is made on that code's
//! engine.

use super::{CallState, plugin_linker};
use crate::bindings::PluginPre;
use crate::cache::ComponentCache;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::watch;
use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Store};

/// What a compile hands over: the pre-instantiated code, or why there is none.
pub(super) type Compiled = Option<Result<PluginPre<CallState>, Arc<str>>>;

/// A version's code, or the promise of it; it may get better (Winch's, then Cranelift's).
#[derive(Clone)]
pub(crate) struct Code(pub(super) watch::Receiver<Compiled>);

/// Why a version's code cannot run.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the component could not be compiled: {0}")]
pub struct CodeUnavailable(pub(super) Arc<str>);

impl Code {
    pub(super) fn ready(pre: PluginPre<CallState>) -> Self {
        Code(watch::channel(Some(Ok(pre))).1)
    }

    /// The best code compiled so far, once there is some.
    pub(crate) async fn pre(&self) -> Result<PluginPre<CallState>, CodeUnavailable> {
        let mut ready = self.0.clone();
        let compiled = ready
            .wait_for(Option::is_some)
            .await
            .map_err(|_| CodeUnavailable("the compile stopped without an answer".into()))?;
        match &*compiled {
            Some(Ok(pre)) => Ok(pre.clone()),
            Some(Err(why)) => Err(CodeUnavailable(why.clone())),
            None => unreachable!("waited for Some"),
        }
    }
}

/// One compiler's engine and the linker made for it.
#[derive(Clone)]
struct Tier {
    engine: Engine,
    linker: Linker<CallState>,
}

impl Tier {
    fn new(engine: Engine) -> wasmtime::Result<Self> {
        let linker = plugin_linker(&engine)?;
        Ok(Tier { engine, linker })
    }

    fn pre(&self, component: &Component) -> wasmtime::Result<PluginPre<CallState>> {
        PluginPre::new(self.linker.instantiate_pre(component)?)
    }
}

/// The compilers a runtime has: Cranelift (optimized, cached), and Winch when enabled.
#[derive(Clone)]
pub(super) struct Compilers {
    optimized: Tier,
    baseline: Option<Tier>,
    cache: Option<ComponentCache>,
}

impl Compilers {
    pub(super) fn new(optimized: Engine) -> wasmtime::Result<Self> {
        Ok(Compilers {
            optimized: Tier::new(optimized)?,
            baseline: None,
            cache: None,
        })
    }

    pub(super) fn set_baseline(&mut self, engine: Engine) -> wasmtime::Result<()> {
        self.baseline = Some(Tier::new(engine)?);
        Ok(())
    }

    pub(super) fn set_cache(&mut self, cache: Option<ComponentCache>) {
        self.cache = cache;
    }

    pub(super) fn engine(&self) -> &Engine {
        &self.optimized.engine
    }

    pub(super) fn linker(&self) -> &Linker<CallState> {
        &self.optimized.linker
    }

    pub(super) fn cache(&self) -> Option<&ComponentCache> {
        self.cache.as_ref()
    }

    /// Cranelift's code from the cache, without compiling anything.
    fn cached(&self, wasm: &[u8]) -> Option<wasmtime::Result<PluginPre<CallState>>> {
        let component = self.cache.as_ref()?.cached(&self.optimized.engine, wasm)?;
        Some(self.optimized.pre(&component))
    }

    /// Cranelift's code, compiled (and stored in the cache when there is one).
    fn optimized(&self, wasm: &[u8]) -> wasmtime::Result<PluginPre<CallState>> {
        let engine = &self.optimized.engine;
        let component = match &self.cache {
            Some(cache) => cache.compile_and_store(engine, wasm)?,
            None => Component::new(engine, wasm)?,
        };
        self.optimized.pre(&component)
    }

    /// Winch's code, when the runtime has Winch.
    fn baseline(&self, wasm: &[u8]) -> Option<wasmtime::Result<PluginPre<CallState>>> {
        let tier = self.baseline.as_ref()?;
        Some(Component::new(&tier.engine, wasm).and_then(|c| tier.pre(&c)))
    }

    /// Code for `wasm` now: Cranelift's from the cache, else Winch's (Cranelift's then built on
    /// another thread and swapped in), else Cranelift's compiled here. An error means the
    /// component does not compile.
    pub(super) fn load_now(&self, wasm: Arc<[u8]>) -> wasmtime::Result<Code> {
        if let Some(cached) = self.cached(&wasm) {
            return cached.map(Code::ready);
        }
        let started = Instant::now();
        match self.baseline(&wasm) {
            Some(baseline) => {
                let (done, code) = watch::channel(Some(Ok(baseline?)));
                log_ready("baseline (Winch)", started);
                let compilers = self.clone();
                spawn_compile(move || compilers.optimize(&wasm, &done, true))?;
                Ok(Code(code))
            }
            None => {
                let pre = self.optimized(&wasm)?;
                log_ready("optimized (Cranelift)", started);
                Ok(Code::ready(pre))
            }
        }
    }

    /// Code for `wasm` compiled on another thread; calls wait for the first tier to arrive.
    pub(super) fn load_in_background(&self, wasm: Arc<[u8]>) -> wasmtime::Result<Code> {
        let (done, code) = watch::channel(None);
        let compilers = self.clone();
        spawn_compile(move || {
            let started = Instant::now();
            if let Some(cached) = compilers.cached(&wasm) {
                log_ready("optimized (Cranelift), from the cache", started);
                let _ = done.send(Some(cached.map_err(failed)));
                return;
            }
            let on_baseline = match compilers.baseline(&wasm) {
                Some(Ok(pre)) => {
                    log_ready("baseline (Winch)", started);
                    let _ = done.send(Some(Ok(pre)));
                    true
                }
                Some(Err(err)) => {
                    let _ = done.send(Some(Err(failed(err))));
                    return;
                }
                None => false,
            };
            compilers.optimize(&wasm, &done, on_baseline);
        })?;
        Ok(Code(code))
    }

    /// Compiles Cranelift's code and hands it over; a failure after Winch's code is there
    /// leaves that code serving (and is logged).
    fn optimize(&self, wasm: &[u8], done: &watch::Sender<Compiled>, on_baseline: bool) {
        let started = Instant::now();
        match self.optimized(wasm) {
            Ok(pre) => {
                log_ready("optimized (Cranelift)", started);
                let _ = done.send(Some(Ok(pre)));
            }
            Err(err) if on_baseline => tracing::error!(
                "Cranelift could not compile the component; calls stay on Winch's code: {err:#}"
            ),
            Err(err) => {
                let _ = done.send(Some(Err(failed(err))));
            }
        }
    }
}

/// A fresh store for `pre`, on the engine its code was compiled for.
pub(super) fn store_for<T>(pre: &PluginPre<CallState>, state: T) -> Store<T> {
    Store::new(pre.engine(), state)
}

fn failed(err: wasmtime::Error) -> Arc<str> {
    tracing::error!("the component could not be compiled: {err:#}");
    Arc::from(format!("{err:#}"))
}

fn log_ready(tier: &str, started: Instant) {
    tracing::info!(
        "component code ready: {tier} in {} ms",
        started.elapsed().as_millis()
    );
}

fn spawn_compile(work: impl FnOnce() + Send + 'static) -> wasmtime::Result<()> {
    std::thread::Builder::new()
        .name("compile".into())
        .spawn(work)
        .map(drop)
        .map_err(|e| wasmtime::format_err!("starting the compile thread: {e}"))
}
