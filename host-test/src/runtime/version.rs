//! A component version: what it declares as data (egress policy, tool listing), read without
//! compiling it, and its code.

use super::{Code, CodeUnavailable, LoadedVersion, ToolListing};
use crate::egress::Policy;
use std::sync::Arc;

/// A component version: its listing and egress policy, read from its bytes at once, and its
/// code, compiled and pre-instantiated (at once, or on another thread while the host serves).
pub struct PluginVersion {
    pub(crate) code: Code,
    /// Size of the component in bytes.
    pub size: usize,
    /// The component's bytes, hashed when first asked (not on the way to listing its tools).
    wasm: Arc<[u8]>,
    digest: std::sync::OnceLock<String>,
    /// The version's tool specs and metadata: from the component's listing section when it
    /// carries one, else read once by running it (`list-tools` takes no input, so they are the
    /// same for every tenant and call).
    pub(crate) tools: std::sync::OnceLock<Arc<ToolListing>>,
    /// The egress policy the component carries, vetted when it was loaded.
    pub policy: Arc<Policy>,
}

impl PluginVersion {
    /// The SHA-256 of the component's bytes (hex): how a fleet's store names the version.
    pub fn sha256(&self) -> &str {
        self.digest
            .get_or_init(|| crate::tenant_db::journal::sha256_hex(&self.wasm))
    }

    /// A short fingerprint of the component's bytes (the SHA-256's first 16 hex digits),
    /// written to the audit trail so every call says which version served it.
    pub fn label(&self) -> &str {
        &self.sha256()[..16]
    }

    /// Whether the code is compiled (or failed to compile), so a call would not wait for it.
    pub fn code_ready(&self) -> bool {
        self.code.0.borrow().is_some()
    }

    /// Why the code cannot serve a call now: still being compiled, or it failed to.
    pub fn code_unavailable(&self) -> Option<String> {
        match &*self.code.0.borrow() {
            None => Some("the component is still being compiled".into()),
            Some(Err(why)) => Some(CodeUnavailable(why.clone()).to_string()),
            Some(Ok(_)) => None,
        }
    }
}

/// The version already loaded from the same bytes, if one is still in use.
pub(super) fn already_loaded(
    loaded: &mut Vec<LoadedVersion>,
    wasm: &[u8],
) -> Option<Arc<PluginVersion>> {
    loaded.retain(|(_, version)| version.strong_count() > 0);
    loaded
        .iter()
        .find(|(bytes, _)| **bytes == *wasm)
        .and_then(|(_, v)| v.upgrade())
}

/// What a component declares as data, read without compiling it: its egress policy (a
/// component without an acceptable one is never compiled, let alone run) and its tool listing.
pub(super) fn read_declarations(wasm: &[u8]) -> wasmtime::Result<(Policy, Option<ToolListing>)> {
    let policy = Policy::from_component(wasm).map_err(|e| wasmtime::format_err!("refused: {e}"))?;
    let listing =
        ToolListing::from_component(wasm).map_err(|e| wasmtime::format_err!("refused: {e}"))?;
    Ok((policy, listing))
}

pub(super) fn new_version(
    wasm: &Arc<[u8]>,
    code: Code,
    policy: Policy,
    listing: Option<ToolListing>,
) -> Arc<PluginVersion> {
    let tools = std::sync::OnceLock::new();
    if let Some(listing) = listing {
        let _ = tools.set(Arc::new(listing));
    }
    Arc::new(PluginVersion {
        code,
        size: wasm.len(),
        wasm: wasm.clone(),
        digest: std::sync::OnceLock::new(),
        tools,
        policy: Arc::new(policy),
    })
}
