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
    // Tests and the debug CLI take the component without whole-program LTO (a fast edit-and-test
    // loop); release builds and `cargo bench` take the shipping build.
    let profile = match std::env::var("PROFILE").as_deref() {
        Ok("debug") => "component-test",
        _ => "release",
    };
    let plugin = build_component(
        &root,
        &target_dir,
        &["-p", "crm-plugin"],
        profile,
        "crm_plugin",
    );
    println!("cargo:rustc-env=CRM_PLUGIN_WASM={}", plugin.display());
}
