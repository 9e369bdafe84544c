//! Builds the two probe guests the end-to-end tests load next to the real component: a hostile
//! one (`CRM_PROBE_WASM`) and one carrying crm-plugin's own egress policy that sends whatever a
//! test asks (`CRM_EGRESS_PROBE_WASM`). Only this test-support crate builds them, so a release
//! build of `crm-host` never does.

#[path = "../build/wasm.rs"]
#[allow(
    dead_code,
    reason = "crm-host's build script alone strips the shipped component"
)]
mod wasm;

use std::path::PathBuf;
use wasm::{build_component, ensure_wasm_target};

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest_dir
        .ancestors()
        .nth(2)
        .expect("host-test/sandbox sits two levels below the workspace root")
        .to_path_buf();
    for watched in [
        "wit",
        "src/egress-policy.toml",
        "host-test/build/wasm.rs",
        "host-test/sandbox/guests/probe/src",
        "host-test/sandbox/guests/probe/Cargo.toml",
        "host-test/sandbox/guests/probe/egress-policy.toml",
        "host-test/sandbox/guests/egress-probe/src",
        "host-test/sandbox/guests/egress-probe/Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    let target_dir = wasm::target_dir(&root);
    ensure_wasm_target();
    let probe = build_component(
        &root,
        &target_dir,
        &[
            "--manifest-path",
            "host-test/sandbox/guests/probe/Cargo.toml",
        ],
        "release",
        "probe_guest",
    );
    println!("cargo:rustc-env=CRM_PROBE_WASM={}", probe.display());
    let egress_probe = build_component(
        &root,
        &target_dir,
        &[
            "--manifest-path",
            "host-test/sandbox/guests/egress-probe/Cargo.toml",
        ],
        "release",
        "egress_probe",
    );
    println!(
        "cargo:rustc-env=CRM_EGRESS_PROBE_WASM={}",
        egress_probe.display()
    );
    // The shipping build of crm-plugin as cargo wrote it, function names included (crm-host's
    // build script makes it, and ships a copy without them): the size bench attributes its
    // code to crates by those names.
    let profile = wasm::component_profile(&std::env::var("PROFILE").unwrap_or_default());
    println!(
        "cargo:rustc-env=CRM_PLUGIN_NAMED_WASM={}",
        target_dir
            .join(format!("{}/{profile}/crm_plugin.wasm", wasm::WASM_TARGET))
            .display()
    );
}
