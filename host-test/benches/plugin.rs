//! `cargo bench -p host-test`: prints the component's size, its compile time, and
//! instantiate+call latency (p50/p99) through the whole host against the in-process stub.
//! Figures, not assertions: targets are read from here, never enforced by timed tests.

use crm_host::stub::{Reply, StubBackend};
use crm_host::{AuditLog, CallRequest, Host, HostLimits, Runtime, TenantSpec};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

const CALLS: usize = 2000;

fn main() {
    let wasm = std::fs::read(crm_host::COMPONENT_PATH).expect("the component is built");
    println!(
        "component size: {} bytes ({:.1} KiB)",
        wasm.len(),
        wasm.len() as f64 / 1024.0
    );

    let mut compile = Vec::new();
    for _ in 0..5 {
        let runtime = Runtime::new(HostLimits::default()).unwrap();
        let started = Instant::now();
        runtime.load(&wasm).unwrap();
        compile.push(started.elapsed());
    }
    compile.sort();
    println!(
        "compile + pre-instantiate: median {:?} (min {:?}, max {:?}, 5 runs)",
        compile[2], compile[0], compile[4]
    );

    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    tokio.block_on(async {
        let runtime = Arc::new(Runtime::new(HostLimits::default()).unwrap());
        let plugin = runtime.load(&wasm).unwrap();
        let stub = StubBackend::with_handler(|request| {
            let id = request.uri.path().rsplit('/').next().unwrap_or_default().to_string();
            Reply::json(200, json!({"attributes": {"type": "Account", "url": "/x"}, "Id": id, "Name": "Acme", "Industry": "Energy"}))
        });
        let host = Host::new(runtime, Arc::new(stub), AuditLog::discard());
        host.add_tenant(
            TenantSpec {
                tenant_id: "bench".into(),
                proxy_base: "https://broker.example.com".parse().unwrap(),
                credential: crm_host::hooks::Credential::new("bench-credential"),
                settings: vec![],
                results_dir: None,
            },
            plugin,
        )
        .unwrap();
        for (tool, input) in [
            ("crmb_generate_record_url", json!({"object": "Account", "record_id": "001000000000001AAA"})),
            ("crmb_get_record", json!({"object": "Account", "record_id": "001000000000001AAA", "fields": ["Name", "Industry"]})),
        ] {
            let request = CallRequest {
                tenant_id: "bench".into(),
                user_id: "bench-user".into(),
                granted_scopes: vec![],
                instance_url: Some("https://acme.my.salesforce.com".into()),
                tool: tool.into(),
                input: input.to_string(),
            };
            for _ in 0..100 {
                host.call(request.clone()).await.unwrap();
            }
            let mut samples = Vec::with_capacity(CALLS);
            for _ in 0..CALLS {
                let started = Instant::now();
                host.call(request.clone()).await.unwrap();
                samples.push(started.elapsed());
            }
            samples.sort();
            println!(
                "{tool}: instantiate + call p50 {:?}, p99 {:?} ({CALLS} calls)",
                percentile(&samples, 50),
                percentile(&samples, 99)
            );
        }
    });
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}
