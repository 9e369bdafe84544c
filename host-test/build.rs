//! Builds the crm-plugin component for `wasm32-wasip2` before the host compiles, so one
//! `cargo test` covers both, and tells the host where the component is (`CRM_PLUGIN_WASM`).
//!
//! The nested cargo uses its own target directory, so it never waits on the outer build's lock
//! and never shares (or flips) dependency features with the native build.

#[path = "build/wasm.rs"]
mod wasm;

use std::path::PathBuf;
use wasm::{build_component, ensure_wasm_target};

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest_dir
        .parent()
        .expect("host-test sits in the workspace root")
        .to_path_buf();
    for watched in [
        "src",
        "wit",
        "Cargo.toml",
        "Cargo.lock",
        ".cargo/config.toml",
        "host-test/build/wasm.rs",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    let target_dir = wasm::target_dir(&root);
    ensure_wasm_target();
    let profile = wasm::component_profile(&std::env::var("PROFILE").unwrap_or_default());
    let mut plugin = build_component(
        &root,
        &target_dir,
        &["-p", "crm-plugin"],
        profile,
        "crm_plugin",
    );
    // The shipped component carries no function names (a tenth of its size); the test build
    // keeps them for readable trap backtraces, and so does cargo's own artifact of the shipping
    // build, which the size bench reads to attribute code to crates.
    if profile == "component" {
        let shipped = target_dir.join("shipped/crm_plugin.wasm");
        wasm::strip_names(&plugin, &shipped);
        plugin = shipped;
    }
    println!("cargo:rustc-env=CRM_PLUGIN_WASM={}", plugin.display());
}
