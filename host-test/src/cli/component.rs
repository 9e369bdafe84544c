//! The component a command runs: wasmtime started, and the component compiled or taken from
//! the compiled-component cache.

use super::Options;
use crate::cache::{CacheKey, ComponentCache};
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
            .and_then(|dir| component_cache(dir, &options.data_dir))
    };
    let plugin = match &cache {
        Some(cache) => runtime.load_cached(&wasm, cache).map(|(plugin, _)| plugin),
        None => runtime.load(&wasm),
    }
    .map_err(|e| format!("loading {}: {e}", options.component))?;
    Ok((runtime, plugin))
}

/// The compiled-component cache in `dir`, its entries authenticated by the key in
/// `<data dir>/cache.key`; none (a warning) when that key cannot be had, or when it would sit
/// inside the cache directory it is meant to vouch for.
fn component_cache(dir: std::path::PathBuf, data_dir: &std::path::Path) -> Option<ComponentCache> {
    let key_path = data_dir.join("cache.key");
    let inside = |path: &std::path::Path| {
        std::path::absolute(path)
            .ok()
            .zip(std::path::absolute(&dir).ok())
            .is_some_and(|(path, dir)| path.starts_with(dir))
    };
    if inside(&key_path) {
        tracing::warn!(
            "compiled-component cache: the data directory is inside the cache directory {}, so \
             its key could not vouch for entries; compiling without the cache",
            dir.display()
        );
        return None;
    }
    match CacheKey::load_or_create(&key_path) {
        Ok(key) => Some(ComponentCache::new(dir, key)),
        Err(err) => {
            tracing::warn!(
                "compiled-component cache: key {}: {err}; compiling without the cache",
                key_path.display()
            );
            None
        }
    }
}
