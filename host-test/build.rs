//! Builds the crm-plugin component for `wasm32-wasip2` before the host compiles, so one
//! `cargo test` covers both, and tells the host where the component is (`CRM_PLUGIN_WASM`).
//!
//! The nested cargo uses its own target directory, so it never waits on the outer build's lock
//! and never shares (or flips) dependency features with the native build.

use std::path::{Path, PathBuf};
use std::process::Command;

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
        "host-test/guests/probe/src",
        "host-test/guests/probe/Cargo.toml",
        "host-test/guests/probe/egress-policy.toml",
        "host-test/guests/egress-probe/src",
        "host-test/guests/egress-probe/Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    println!("cargo:rerun-if-env-changed=CRM_PLUGIN_TARGET_DIR");

    let target_dir = std::env::var_os("CRM_PLUGIN_TARGET_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("CARGO_TARGET_DIR").map(|d| PathBuf::from(d).join("component"))
        })
        .unwrap_or_else(|| root.join("target").join("component"));
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
    // The hostile probe guest the end-to-end tests load next to the real component.
    let probe = build_component(
        &root,
        &target_dir,
        &["--manifest-path", "host-test/guests/probe/Cargo.toml"],
        "release",
        "probe_guest",
    );
    println!("cargo:rustc-env=CRM_PROBE_WASM={}", probe.display());
    // The egress probe: crm-plugin's own policy, with any request the tests ask it to send.
    let egress_probe = build_component(
        &root,
        &target_dir,
        &[
            "--manifest-path",
            "host-test/guests/egress-probe/Cargo.toml",
        ],
        "release",
        "egress_probe",
    );
    println!(
        "cargo:rustc-env=CRM_EGRESS_PROBE_WASM={}",
        egress_probe.display()
    );
}

/// The component's target.
const WASM_TARGET: &str = "wasm32-wasip2";

/// Makes sure the toolchain can build for `wasm32-wasip2`. `rust-toolchain.toml` names the
/// target, but rustup adds it only when it installs the toolchain, so a machine that already
/// had the toolchain lacks it: add it through rustup, or stop with the exact command to run.
fn ensure_wasm_target() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    let installed = |sysroot: &Path| sysroot.join("lib/rustlib").join(WASM_TARGET).is_dir();
    if sysroot.as_deref().is_some_and(installed) {
        return;
    }
    let toolchain = std::env::var("RUSTUP_TOOLCHAIN").ok();
    let mut rustup = Command::new("rustup");
    rustup.args(["target", "add", WASM_TARGET]);
    if let Some(toolchain) = &toolchain {
        rustup.args(["--toolchain", toolchain]);
    }
    println!(
        "cargo:warning=the {WASM_TARGET} target is missing from {}: running `rustup target add {WASM_TARGET}`",
        sysroot
            .as_deref()
            .map_or("the toolchain".into(), |s| s.display().to_string())
    );
    let added = rustup.status().is_ok_and(|status| status.success());
    if !added || !sysroot.as_deref().is_none_or(installed) {
        panic!(
            "the {WASM_TARGET} target is not installed and could not be added; run \
             `rustup target add {WASM_TARGET}{}` and build again",
            toolchain
                .map(|t| format!(" --toolchain {t}"))
                .unwrap_or_default()
        );
    }
}

/// Runs `cargo build --profile {profile} --target wasm32-wasip2` for one package and returns the
/// component's path.
fn build_component(
    root: &Path,
    target_dir: &Path,
    package: &[&str],
    profile: &str,
    artifact: &str,
) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root)
        .args([
            "build",
            "--profile",
            profile,
            "--locked",
            "--target",
            "wasm32-wasip2",
        ])
        .args(package)
        .env("CARGO_TARGET_DIR", target_dir)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("CARGO_MAKEFLAGS")
        // `cargo clippy` wraps rustc; the component is linted by its own clippy run instead
        // (see .ci/run), so switching between test and clippy never rebuilds it.
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("CLIPPY_ARGS")
        .status()
        .expect("running cargo to build a component");
    if !status.success() {
        panic!(
            "building {artifact} for wasm32-wasip2 failed (see the compiler output above); \
             if the target is missing: `rustup target add wasm32-wasip2`"
        );
    }
    let wasm = target_dir.join(format!("wasm32-wasip2/{profile}/{artifact}.wasm"));
    assert!(
        wasm.exists(),
        "the component was not produced at {}",
        wasm.display()
    );
    wasm
}
