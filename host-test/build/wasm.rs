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

/// The profile the crm-plugin component is built with for a host built with `profile` (cargo's
/// `PROFILE`: `debug` or `release`): tests and the debug CLI take `component-test` (no
/// whole-program LTO, a fast edit-and-test loop), release builds and `cargo bench` the shipping
/// `component` profile.
pub fn component_profile(profile: &str) -> &'static str {
    match profile {
        "debug" => "component-test",
        _ => "component",
    }
}

/// Writes `from` without its function names to `to`: every `name` custom section (a core
/// module's) and `component-name` section (a component's) is dropped, at any nesting depth,
/// and every other byte is kept as it is, custom sections included (the host reads
/// `crm-plugin:egress-policy`). `strip = true` leaves these sections in a component (about
/// 250 KB of crm-plugin's, a tenth of it); they only name functions in a trap's backtrace.
pub fn strip_names(from: &Path, to: &Path) {
    let wasm = std::fs::read(from).expect("reading the component");
    let stripped = without_names(&wasm).unwrap_or_else(|| {
        panic!(
            "{} is not a WebAssembly binary this build can read",
            from.display()
        )
    });
    std::fs::create_dir_all(to.parent().expect("a file has a parent")).unwrap();
    // Write beside and rename, so a reader never sees half a component.
    let partial = to.with_extension("wasm.partial");
    std::fs::write(&partial, stripped).expect("writing the stripped component");
    std::fs::rename(&partial, to).expect("moving the stripped component into place");
}

/// A module or component (`\0asm`, version, sections) without its name sections; `None` when
/// `wasm` is not one. A section is its id byte, its size as unsigned LEB128, and its contents;
/// a component's core-module (1) and component (4) sections hold a whole binary, stripped in
/// turn and given its new size.
fn without_names(wasm: &[u8]) -> Option<Vec<u8>> {
    const CORE_MODULE: u8 = 1;
    const COMPONENT: u8 = 4;
    let header = wasm.get(..8)?;
    if &header[..4] != b"\0asm" {
        return None;
    }
    // A component's version is 0x0d 0x00 followed by layer 1; a core module's layer is 0.
    let is_component = header[6..8] == [1, 0];
    let mut out = header.to_vec();
    let mut at = 8;
    while at < wasm.len() {
        let id = wasm[at];
        let (size, size_len) = leb128(wasm.get(at + 1..)?)?;
        let start = at + 1 + size_len;
        let end = start.checked_add(size)?;
        let contents = wasm.get(start..end)?;
        if id == 0 {
            let (name_len, len_len) = leb128(contents)?;
            let name = contents.get(len_len..len_len + name_len)?;
            if name != b"name" && name != b"component-name" {
                out.extend_from_slice(&wasm[at..end]);
            }
        } else if is_component && (id == CORE_MODULE || id == COMPONENT) {
            let inner = without_names(contents)?;
            out.push(id);
            push_leb128(&mut out, inner.len());
            out.extend_from_slice(&inner);
        } else {
            out.extend_from_slice(&wasm[at..end]);
        }
        at = end;
    }
    Some(out)
}

/// An unsigned LEB128 number and how many bytes it took.
fn leb128(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut value = 0usize;
    for (i, &byte) in bytes.iter().enumerate().take(5) {
        value |= usize::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

fn push_leb128(out: &mut Vec<u8>, mut value: usize) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}
