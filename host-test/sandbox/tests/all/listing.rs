//! The tool listing a component carries as data (its `crm-plugin:tool-listing` section): what
//! its exports return, and what the host serves while the code is still being compiled, or
//! when it cannot be compiled at all.

use crate::fixtures::{get_account, plugin_bytes, record_stub, sf_tenant};
use crm_host::listing::{SECTION, ToolListing};
use crm_host::{AuditLog, CallError, Host, HostLimits, Runtime};
use std::sync::Arc;
use std::time::Duration;

fn fresh_runtime() -> Arc<Runtime> {
    let limits = HostLimits {
        concurrent_calls: 2,
        ..HostLimits::default()
    };
    Arc::new(Runtime::new(limits).unwrap())
}

/// A host serving tenant `t1` on `plugin`.
fn host_on(runtime: Arc<Runtime>, plugin: Arc<crm_host::PluginVersion>) -> Host {
    let host = Host::new(
        runtime,
        Arc::new(record_stub(Duration::ZERO)),
        AuditLog::in_memory(),
    );
    host.add_tenant(
        sf_tenant("t1", "https://broker-one.example.com", "cred-one", &[]),
        plugin,
    )
    .unwrap();
    host
}

/// Where `needle` is in `haystack` (once).
fn only_position(haystack: &[u8], needle: &[u8]) -> usize {
    let at: Vec<usize> = haystack
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(at.len(), 1, "{:?} occurs {} times", needle, at.len());
    at[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listing_the_component_carries_is_what_its_exports_return() {
    let wasm = plugin_bytes();
    let carried = ToolListing::from_component(&wasm)
        .unwrap()
        .expect("the build carries its listing");
    assert!(carried.tool("crmb_get_record").is_some());

    // The same component with the section renamed, so the host must run it to list its tools.
    let mut unlisted = wasm.clone();
    let at = only_position(&unlisted, SECTION.as_bytes());
    *unlisted.get_mut(at + SECTION.len() - 1).unwrap() = b'X';
    assert!(ToolListing::from_component(&unlisted).unwrap().is_none());
    let runtime = fresh_runtime();
    let host = host_on(runtime.clone(), runtime.load(&unlisted).unwrap());
    let exported = host.listing("t1").await.unwrap();
    assert!(
        exported.same_as(&carried),
        "the listing section differs from list-tools / list-tool-metadata"
    );
}

/// The component with one function's first instruction replaced by a byte that is no
/// instruction: every section still reads, but the code does not compile.
fn with_uncompilable_code(wasm: &[u8]) -> Vec<u8> {
    let mut broken = wasm.to_vec();
    let body = wasmparser::Parser::new(0)
        .parse_all(wasm)
        .find_map(|payload| match payload.unwrap() {
            wasmparser::Payload::CodeSectionEntry(body) => Some(body),
            _ => None,
        })
        .expect("the component has code");
    let first_op = body.get_operators_reader().unwrap().original_position();
    broken[first_op] = 0xff;
    broken
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_listed_without_compiling_and_a_call_says_why_the_code_cannot_run() {
    let broken: Arc<[u8]> = with_uncompilable_code(&plugin_bytes()).into();
    let runtime = fresh_runtime();
    assert!(
        runtime.load(&broken).is_err(),
        "the code really does not compile"
    );

    let plugin = fresh_runtime().load_in_background(broken.clone()).unwrap();
    let host = host_on(runtime, plugin.clone());
    let listed = host.list_tools("t1").await.unwrap();
    let carried = ToolListing::from_component(&broken).unwrap().unwrap();
    assert_eq!(
        listed.len(),
        carried.specs.len(),
        "listed from the section alone"
    );

    match host.call(get_account("t1")).await {
        Err(CallError::Plugin(why)) => {
            assert!(why.contains("could not be compiled"), "{why}")
        }
        other => panic!("a call on code that cannot compile: {other:?}"),
    }
    assert!(
        plugin.code_ready(),
        "the failed compile is settled, not pending"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_made_while_the_code_compiles_waits_for_it_and_is_served() {
    // No cache: the code is compiled on the compile thread while the call waits.
    let runtime = fresh_runtime();
    let plugin = runtime.load_in_background(plugin_bytes().into()).unwrap();
    let host = host_on(runtime, plugin);
    let carried = ToolListing::from_component(&plugin_bytes())
        .unwrap()
        .unwrap();
    assert_eq!(
        host.list_tools("t1").await.unwrap().len(),
        carried.specs.len()
    );
    let answer = crate::fixtures::output(host.call(get_account("t1")).await);
    assert_eq!(
        answer["record"]["Id"],
        crate::fixtures::ACCOUNT_ID,
        "{answer}"
    );
}
