//! The component a command runs: wasmtime started, and the component compiled or taken from
//! the compiled-component cache.

use super::Options;
use crate::cache::{CacheOutcome, ComponentCache};
use crate::{HostLimits, PluginVersion, Runtime};
use std::sync::Arc;

/// When a command needs the component's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CodeNeeded {
    /// Before the command goes on (it checks the component, or runs one call and exits).
    Now,
    /// By the first call: the servers list tools from the component's listing section while
    /// its code is compiled (or read from the cache) on another thread.
    ByFirstCall,
}

/// Starts wasmtime and loads the component `--component` names.
pub(super) fn load_component(
    options: &Options,
    needed: CodeNeeded,
) -> Result<(Arc<Runtime>, Arc<PluginVersion>), String> {
    let runtime = Arc::new(start_runtime(options)?);
    let wasm: Arc<[u8]> = std::fs::read(&options.component)
        .map_err(|e| format!("reading {}: {e}", options.component))?
        .into();
    let plugin = match needed {
        CodeNeeded::Now => runtime.load(&wasm),
        CodeNeeded::ByFirstCall => runtime.load_in_background(wasm),
    }
    .map_err(|e| format!("loading {}: {e}", options.component))?;
    Ok((runtime, plugin))
}

/// `crm-host precompile`: the component compiled into the cache (or found there already).
pub(super) fn precompile(options: &Options) -> Result<serde_json::Value, String> {
    let runtime = start_runtime(options)?;
    let cache = runtime
        .cache()
        .ok_or("precompile needs the compiled-component cache: drop --no-cache, or give a --cache-dir this user owns")?
        .clone();
    let wasm = std::fs::read(&options.component)
        .map_err(|e| format!("reading {}: {e}", options.component))?;
    let started = std::time::Instant::now();
    let (plugin, outcome) = runtime
        .load_cached(&wasm, &cache)
        .map_err(|e| format!("compiling {}: {e}", options.component))?;
    Ok(serde_json::json!({
        "component": options.component,
        "sha256": plugin.sha256(),
        "cache_entry": cache.entry_path(runtime.engine(), &wasm),
        "outcome": match outcome {
            CacheOutcome::Hit | CacheOutcome::AlreadyLoaded => "already compiled",
            CacheOutcome::Compiled => "compiled",
            CacheOutcome::Replaced(_) => "compiled, replacing an unusable entry",
        },
        "milliseconds": started.elapsed().as_millis() as u64,
    }))
}

/// wasmtime with the host's limits and, unless `--no-cache`, the compiled-component cache.
pub(super) fn start_runtime(options: &Options) -> Result<Runtime, String> {
    let cache = if options.no_cache {
        None
    } else {
        options
            .cache_dir
            .clone()
            .or_else(ComponentCache::default_dir)
            .and_then(shared_cache)
    };
    Runtime::new(HostLimits {
        call_timeout: std::time::Duration::from_secs(options.call_timeout_seconds.max(1)),
        ..HostLimits::default()
    })
    .map(|runtime| runtime.with_cache(cache))
    .and_then(|runtime| match options.no_baseline_compiler {
        true => Ok(runtime),
        false => runtime.with_baseline_compiler(),
    })
    .map_err(|e| format!("starting wasmtime: {e}"))
}

/// The compiled-component cache in `dir`, shared with every host of this OS user (its key is
/// `<dir>/cache.key`); none, with a warning, when the directory cannot be trusted or used.
fn shared_cache(dir: std::path::PathBuf) -> Option<ComponentCache> {
    ComponentCache::shared(&dir)
        .inspect_err(|err| {
            tracing::warn!("compiled-component cache: {err}; compiling without the cache")
        })
        .ok()
}
