//! Builds the crm-plugin component for `wasm32-wasip2` before the host compiles, so one
//! `cargo test` covers both, and tells the host where the component is (`CRM_PLUGIN_WASM`).
//!
//! The nested cargo uses its own target directory, so it never waits on the outer build's lock
//! and never shares (or flips) dependency features with the native build.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest_dir.parent().expect("host-test sits in the workspace root").to_path_buf();
    for watched in ["src", "wit", "Cargo.toml", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    println!("cargo:rerun-if-env-changed=CRM_PLUGIN_TARGET_DIR");

    let target_dir = std::env::var_os("CRM_PLUGIN_TARGET_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("CARGO_TARGET_DIR").map(|d| PathBuf::from(d).join("component")))
        .unwrap_or_else(|| root.join("target").join("component"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(&root)
        .args(["build", "--release", "--locked", "--target", "wasm32-wasip2", "-p", "crm-plugin"])
        .env("CARGO_TARGET_DIR", &target_dir)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("CARGO_MAKEFLAGS")
        .status()
        .expect("running cargo to build the component");
    if !status.success() {
        panic!(
            "building the crm-plugin component failed; is the target installed? \
             (`rustup target add wasm32-wasip2`)"
        );
    }
    let wasm = target_dir.join("wasm32-wasip2/release/crm_plugin.wasm");
    assert!(wasm.exists(), "the component was not produced at {}", wasm.display());
    println!("cargo:rustc-env=CRM_PLUGIN_WASM={}", wasm.display());
}
