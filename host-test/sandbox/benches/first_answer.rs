//! `cargo bench -p crm-sandbox --bench plugin -- start`: the time to a first answer, in
//! process, against the in-process stub, the way a server meets it:
//!
//! - **a host joining** (a fleet host, `crm-host serve` or `mcp` starting): a fresh runtime
//!   loads the component on its compile thread, and the clock stops when a first
//!   `crmb_get_record` is answered;
//! - **a tenant swap** to a new build (other bytes): the swap, then a first call on it.
//!
//! Each way three times over: before (no cache entry, calls wait for Cranelift, as every start
//! without a cache did), after (no cache entry, the first calls on Winch's code while
//! Cranelift's is built), and precompiled (the entry `crm-host precompile` or another host of
//! the same user made).

use crm_host::cache::{CacheKey, ComponentCache};
use crm_host::{AuditLog, CallRequest, Host, HostLimits, PluginVersion, Runtime};
use crm_sandbox::stub::{Reply, StubBackend};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const RUNS: usize = 3;

#[derive(Clone, Copy, PartialEq)]
enum Way {
    Before,
    After,
    Precompiled,
}

impl Way {
    const ALL: [Way; 3] = [Way::Before, Way::After, Way::Precompiled];

    fn label(self) -> &'static str {
        match self {
            Way::Before => "before: no cache entry, Cranelift only",
            Way::After => "after: no cache entry, Winch first",
            Way::Precompiled => "precompiled (cache entry)",
        }
    }
}

fn runtime(way: Way, cache: &Path) -> Arc<Runtime> {
    let cache = ComponentCache::new(cache, CacheKey::from_bytes(&[7; 32]));
    let runtime = Runtime::new(HostLimits::default())
        .unwrap()
        .with_cache(Some(cache));
    Arc::new(match way {
        Way::After => runtime.with_baseline_compiler().unwrap(),
        Way::Before | Way::Precompiled => runtime,
    })
}

fn host(runtime: Arc<Runtime>, plugin: Arc<PluginVersion>) -> Host {
    let stub = StubBackend::with_handler(|request| {
        let id = request
            .uri
            .path()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string();
        Reply::json(
            200,
            json!({"attributes": {"type": "Account", "url": "/x"}, "Id": id, "Name": "Acme"}),
        )
    });
    let host = Host::new(runtime, Arc::new(stub), AuditLog::discard());
    host.add_tenant(crate::bench_tenant(), plugin).unwrap();
    host
}

fn get_record() -> CallRequest {
    CallRequest {
        tenant_id: "bench".into(),
        user_id: "bench".into(),
        granted_scopes: vec![],
        instance_url: None,
        tool: "crmb_get_record".into(),
        input: json!({"object": "Account", "record_id": "001000000000001AAA"}).to_string(),
    }
}

/// The component with a custom section added at its end: a new build to the host.
fn another_build(wasm: &[u8]) -> Vec<u8> {
    let name = b"bench-build";
    let mut out = wasm.to_vec();
    out.extend_from_slice(&[0, (1 + name.len() + 1) as u8, name.len() as u8]);
    out.extend_from_slice(name);
    out.push(1);
    out
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

pub async fn figures(wasm: &[u8]) {
    let dir = std::env::temp_dir().join(format!("crm-bench-first-{}", std::process::id()));
    let next = another_build(wasm);
    println!("time to first answer (medians of {RUNS}):");
    for way in Way::ALL {
        let mut joins = Vec::new();
        let mut swaps = Vec::new();
        for run in 0..RUNS {
            let cache = dir.join(format!("{run}"));
            let _ = std::fs::remove_dir_all(&cache);
            if way == Way::Precompiled {
                let filler = runtime(Way::Before, &cache);
                filler.load(wasm).unwrap();
                filler.load(&next).unwrap();
            }
            // A host joining: nothing loaded, the component read and compiled (or taken from
            // the cache) on the compile thread while the first call waits.
            let started = Instant::now();
            let joining = runtime(way, &cache);
            let plugin = joining.load_in_background(wasm.into()).unwrap();
            let serving = host(joining, plugin);
            serving.call(get_record()).await.unwrap();
            joins.push(started.elapsed());

            // Cranelift's code for the first build, built on the compile thread, is in the
            // cache before the next figure: it would share the two cores with it otherwise.
            let settled = |bytes: &[u8]| {
                let cache = serving.runtime().cache().unwrap();
                cache
                    .entry_path(serving.runtime().engine(), bytes)
                    .is_file()
            };
            while way != Way::Before && !settled(wasm) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            // A swap to a new build on that host, then its first call.
            let started = Instant::now();
            serving.swap("bench", &next).unwrap();
            serving.call(get_record()).await.unwrap();
            swaps.push(started.elapsed());
            while !settled(&next) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        println!(
            "  {}: a host joining {:?}; a tenant swap {:?}",
            way.label(),
            median(joins),
            median(swaps)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
