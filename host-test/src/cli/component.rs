//! The component a command runs: wasmtime started, and the component compiled or taken from
//! the compiled-component cache.

use super::Options;
use crate::cache::ComponentCache;
use crate::{HostLimits, PluginVersion, Runtime};
use std::sync::Arc;

/// Starts wasmtime and loads the component `--component` names.
pub(super) fn load_component(
    options: &Options,
) -> Result<(Arc<Runtime>, Arc<PluginVersion>), String> {
    let runtime = Arc::new(
        Runtime::new(HostLimits {
            call_timeout: std::time::Duration::from_secs(options.call_timeout_seconds.max(1)),
            ..HostLimits::default()
        })
        .map_err(|e| format!("starting wasmtime: {e}"))?,
    );
    let wasm = std::fs::read(&options.component)
        .map_err(|e| format!("reading {}: {e}", options.component))?;
    let cache = if options.no_cache {
        None
    } else {
        options
            .cache_dir
            .clone()
            .or_else(ComponentCache::default_dir)
            .and_then(shared_cache)
    };
    let plugin = match &cache {
        Some(cache) => runtime.load_cached(&wasm, cache).map(|(plugin, _)| plugin),
        None => runtime.load(&wasm),
    }
    .map_err(|e| format!("loading {}: {e}", options.component))?;
    Ok((runtime, plugin))
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
