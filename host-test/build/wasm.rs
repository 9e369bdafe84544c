//! Building wasm32-wasip2 components from a build script: shared by `crm-host`'s build script
//! (the crm-plugin component) and `crm-sandbox`'s (the probe guests its tests load).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The component's target.
pub const WASM_TARGET: &str = "wasm32-wasip2";

/// Makes sure the toolchain can build for `wasm32-wasip2`. `rust-toolchain.toml` names the
/// target, but rustup adds it only when it installs the toolchain, so a machine that already
/// had the toolchain lacks it: add it through rustup, or stop with the exact command to run.
pub fn ensure_wasm_target() {
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

/// Where the nested builds put their artifacts: `CRM_PLUGIN_TARGET_DIR`, else
/// `$CARGO_TARGET_DIR/component`, else `<workspace>/target/component`; a directory of its own,
/// so a nested cargo never waits on the outer build's lock.
pub fn target_dir(root: &Path) -> PathBuf {
    println!("cargo:rerun-if-env-changed=CRM_PLUGIN_TARGET_DIR");
    std::env::var_os("CRM_PLUGIN_TARGET_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("CARGO_TARGET_DIR").map(|d| PathBuf::from(d).join("component"))
        })
        .unwrap_or_else(|| root.join("target").join("component"))
}

/// Runs `cargo build --profile {profile} --target wasm32-wasip2` for one package and returns the
/// component's path.
pub fn build_component(
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
