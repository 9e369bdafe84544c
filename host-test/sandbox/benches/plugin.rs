//! `cargo bench -p crm-sandbox`: prints the component's size, its compile time, and
//! instantiate+call latency (p50/p99) through the whole host against the in-process stub.
//! Figures, not assertions: targets are read from here, never enforced by timed tests.
//!
//! `cargo bench -p crm-sandbox --bench plugin -- size` prints only the component's size by section
//! and its code by crate.
//!
//! `cargo bench -p crm-sandbox --bench plugin -- memory` prints only the peak-memory figures (the
//! SOQL export, the user/owner sync, the HubSpot export and aggregate), which need no latency
//! runs; `-- aggregate` only the aggregate's.

use crm_host::{AuditLog, CallRequest, Host, HostLimits, Runtime, TenantSpec};
use crm_sandbox::stub::{Reply, StubBackend};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "aggregate.rs"]
mod aggregate;
// In a folder, not benches/network.rs, so cargo does not take it for a bench target of its own.
#[path = "export.rs"]
mod export;
#[path = "first_answer.rs"]
mod first_answer;
#[path = "fleet.rs"]
mod fleet;
#[path = "mapping.rs"]
mod mapping;
mod network;
#[path = "size.rs"]
mod size;

const CALLS: usize = 2000;

#[path = "startup.rs"]
mod startup;
#[path = "tenants.rs"]
mod tenants;

fn main() {
    let memory_only = std::env::args().any(|a| a == "memory");
    // `percall`: only the per-call figures, e.g. under `perf record` with CRM_HOST_PERF_MAP=1.
    let percall_only = std::env::args().any(|a| a == "percall");
    // `mapping`: only the mapping comparison, for a profile of the guest's mapping code.
    let mapping_only = std::env::args().any(|a| a == "mapping");
    // `network`: only the loopback HTTP and HTTPS figures.
    let network_only = std::env::args().any(|a| a == "network");
    // `aggregate`: only the HubSpot aggregate's memory at 2,000 and 25,000 deals.
    let aggregate_only = std::env::args().any(|a| a == "aggregate");
    // `fleet`: only the PostgreSQL store's figures (needs CRM_TEST_POSTGRES).
    let fleet_only = std::env::args().any(|a| a == "fleet");
    // `start`: only the start-up figures (in process, the CLI, a first answer).
    let start_only = std::env::args().any(|a| a == "start");
    // `size`: only the component's size by section and its code by crate.
    let size_only = std::env::args().any(|a| a == "size");
    // CRM_BENCH_COMPONENT swaps in another build, e.g. one that keeps function names for a
    // profile (`CARGO_PROFILE_RELEASE_STRIP=none`).
    let component = std::env::var("CRM_BENCH_COMPONENT")
        .unwrap_or_else(|_| crm_host::COMPONENT_PATH.to_string());
    let wasm = std::fs::read(&component).expect("the component is built");
    println!(
        "component size: {} bytes ({:.1} KiB)",
        wasm.len(),
        wasm.len() as f64 / 1024.0
    );
    if size_only {
        size::figures(&wasm, env!("CRM_PLUGIN_NAMED_WASM"));
        return;
    }
    // `tenants`: only the many-tenants figures (`serve` processes with up to 100,000 tenants).
    let tenants_only = std::env::args().any(|a| a == "tenants");
    if tenants_only {
        tenants::figures();
        return;
    }
    let whole_run = !(memory_only
        || percall_only
        || mapping_only
        || network_only
        || aggregate_only
        || fleet_only
        || start_only);

    if !memory_only
        && !percall_only
        && !mapping_only
        && !network_only
        && !aggregate_only
        && !fleet_only
    {
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
        startup::figures(&wasm);
        size::figures(&wasm, env!("CRM_PLUGIN_NAMED_WASM"));
    }

    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    tokio.block_on(async {
        if start_only {
            first_answer::figures(&wasm).await;
            return;
        }
        if network_only {
            network::figures(&wasm).await;
            return;
        }
        if fleet_only {
            fleet::figures(&wasm).await;
            return;
        }
        let runtime = Arc::new(Runtime::new(HostLimits::default()).unwrap());
        let plugin = runtime.load(&wasm).unwrap();
        let stub = StubBackend::with_handler(|request| {
            let id = request.uri.path().rsplit('/').next().unwrap_or_default().to_string();
            Reply::json(200, json!({"attributes": {"type": "Account", "url": "/x"}, "Id": id, "Name": "Acme", "Industry": "Energy"}))
        });
        let host = Arc::new(Host::new(runtime, Arc::new(stub), AuditLog::discard()));
        host.add_tenant(bench_tenant(), plugin).unwrap();
        let runtime_for_queries = host.runtime().clone();
        if aggregate_only {
            aggregate::figures(&runtime_for_queries, &wasm).await;
            return;
        }
        if percall_only {
            per_call(&host).await;
            return;
        }
        mapping::figures(&runtime_for_queries, &wasm).await;
        if mapping_only {
            return;
        }
        for total in [2_000u64, 100_000] {
            let started = Instant::now();
            let (peak, summary) = query_peak_memory(&runtime_for_queries, &wasm, total).await;
            println!(
                "crmb_run_soql_query over {total} records: peak linear memory {:.2} MiB, {:?}, {summary}",
                peak as f64 / (1024.0 * 1024.0),
                started.elapsed()
            );
        }
        // The sync's linear memory stays flat as the portal grows: owners stream page by page.
        for (owners, users) in [(20_000usize, 2_000usize), (200_000, 2_000)] {
            sync_figures(&runtime_for_queries, &wasm, owners, users).await;
        }
        export::figures(&runtime_for_queries, &wasm).await;
        aggregate::figures(&runtime_for_queries, &wasm).await;
        if memory_only {
            return;
        }
        per_call(&host).await;
        first_answer::figures(&wasm).await;
        mcp::figures(host.clone()).await;
        network::figures(&wasm).await;
        fleet::figures(&wasm).await;
    });
    if whole_run {
        tenants::figures();
    }
}

/// The benches' tenant `bench`: a broker on no network (the stub answers), its store in memory.
fn bench_tenant() -> TenantSpec {
    TenantSpec {
        tenant_id: "bench".into(),
        proxy_base: "https://broker.example.com".parse().unwrap(),
        credential: crm_host::credential::Credential::new("bench-credential"),
        settings: vec![],
        results_dir: None,
        mappings: crm_host::tenant_db::DbLocation::Memory,
    }
}

/// Instantiate + call through the whole host, against the in-process stub: from a task on the
/// runtime's worker threads, as a server calls it (an MCP request is handled in one), and from
/// `block_on` on a thread of its own, where every request the component sends is a hand-off to
/// a worker and back: two cross-thread wake-ups a call, which on an idle virtual CPU cost more
/// than the call itself.
async fn per_call(host: &Arc<Host>) {
    let on_worker = host.clone();
    tokio::spawn(async move { measure(&on_worker, "on a worker task").await })
        .await
        .unwrap();
    measure(host, "from block_on").await;
}

async fn measure(host: &Host, label: &str) {
    for (tool, input) in [
        (
            "crmb_generate_record_url",
            json!({"object": "Account", "record_id": "001000000000001AAA"}),
        ),
        (
            "crmb_get_record",
            json!({"object": "Account", "record_id": "001000000000001AAA", "fields": ["Name", "Industry"]}),
        ),
    ] {
        // CRM_BENCH_TOOL keeps one tool, e.g. for a profile of its calls alone.
        if std::env::var("CRM_BENCH_TOOL").is_ok_and(|only| only != tool) {
            continue;
        }
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
        // CRM_BENCH_CALLS lengthens the run, e.g. for a profile of this phase alone.
        let calls = std::env::var("CRM_BENCH_CALLS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(CALLS);
        let mut samples = Vec::with_capacity(calls);
        for _ in 0..calls {
            let started = Instant::now();
            host.call(request.clone()).await.unwrap();
            samples.push(started.elapsed());
        }
        samples.sort();
        println!(
            "{tool} ({label}): instantiate + call p50 {:?}, p99 {:?} ({calls} calls)",
            percentile(&samples, 50),
            percentile(&samples, 99)
        );
    }
}

/// MCP round trips for the same two tools, so the protocol's cost shows next to the
/// in-process figures: over HTTP (loopback, the same stub host) and over stdio (`crm-host mcp`
/// as a child process, on the sandbox).
mod mcp {
    use super::{CALLS, percentile};
    use crm_host::Host;
    use crm_host::mcp::http::{Gate, RateLimit, ServeOptions, serve_with};
    use crm_host::mcp::tenants::{TenantsFile, token_hash};
    use rmcp::model::CallToolRequestParams;
    use rmcp::service::RunningService;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
    use rmcp::{RoleClient, ServiceExt};
    use serde_json::{Value, json};
    use std::sync::Arc;
    use std::time::Instant;

    async fn time(label: &str, client: &RunningService<RoleClient, ()>, tool: &str, input: &Value) {
        let call = || {
            CallToolRequestParams::new(tool.to_string())
                .with_arguments(input.as_object().cloned().unwrap_or_default())
        };
        for _ in 0..50 {
            client.call_tool(call()).await.unwrap();
        }
        let calls = CALLS / 4;
        let mut samples = Vec::with_capacity(calls);
        for _ in 0..calls {
            let started = Instant::now();
            let result = client.call_tool(call()).await.unwrap();
            samples.push(started.elapsed());
            assert_eq!(result.is_error, Some(false), "{result:?}");
        }
        samples.sort();
        println!(
            "{tool} over MCP {label}: round trip p50 {:?}, p99 {:?} ({calls} calls)",
            percentile(&samples, 50),
            percentile(&samples, 99)
        );
    }

    pub async fn figures(host: Arc<Host>) {
        let stub_calls = [
            (
                "crmb_generate_record_url",
                json!({"object": "Account", "record_id": "001000000000001AAA"}),
            ),
            (
                "crmb_get_record",
                json!({"object": "Account", "record_id": "001000000000001AAA", "fields": ["Name", "Industry"]}),
            ),
        ];
        let file = TenantsFile::parse(&format!(
            "[[tenants]]\nid = \"bench\"\n[[tokens]]\nsha256 = \"{}\"\ntenant = \"bench\"\nuser = \"bench-user\"\n",
            token_hash("bench-token")
        ))
        .unwrap();
        let tokens = file
            .tokens(&[], |_| Some("https://acme.my.salesforce.com".into()))
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let gate = Gate {
            tokens: tokens.into(),
            allowed_origins: vec![],
            public_url: url::Url::parse(&format!("{base}/mcp")).unwrap(),
        };
        // The bench measures calls back to back: no per-principal rate limit in the way.
        let mut options = ServeOptions::new(gate);
        options.limits.rate = RateLimit {
            per_second: 1e9,
            burst: 1e9,
        };
        tokio::spawn(serve_with(host, options, listener));
        let config = StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp"))
            .auth_header("bench-token");
        let http = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
        for (tool, input) in &stub_calls {
            time("Streamable HTTP (loopback, stub)", &http, tool, input).await;
        }
        http.cancel().await.unwrap();

        let dir = std::env::temp_dir().join(format!("crm-bench-mcp-{}", std::process::id()));
        let command =
            tokio::process::Command::new(env!("CARGO_BIN_EXE_crm-sandbox")).configure(|c| {
                c.arg("mcp").arg("--data-dir").arg(&dir);
            });
        let stdio = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
        let sandbox_calls = [
            (
                "crmb_generate_record_url",
                json!({"object": "Account", "record_id": "0015gA000000001ABA"}),
            ),
            (
                "crmb_get_record",
                json!({"object": "Account", "record_id": "0015gA000000001ABA", "fields": ["Name", "Industry"]}),
            ),
        ];
        for (tool, input) in &sandbox_calls {
            time("stdio (crm-host mcp, sandbox)", &stdio, tool, input).await;
        }
        stdio.cancel().await.unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Peak linear memory of `crmb_run_soql_query` over `total` stub records.
async fn query_peak_memory(
    runtime: &Arc<Runtime>,
    wasm: &[u8],
    total: u64,
) -> (u64, serde_json::Value) {
    let audit = AuditLog::in_memory();
    let stub = StubBackend::with_handler(crm_sandbox::stub::query_pages(total, 2000));
    let host = Host::new(runtime.clone(), Arc::new(stub), audit.clone());
    let dir = std::env::temp_dir().join(format!("crm-bench-results-{}", std::process::id()));
    host.add_tenant(
        TenantSpec {
            tenant_id: "bench".into(),
            proxy_base: "https://broker.example.com".parse().unwrap(),
            credential: crm_host::credential::Credential::new("bench-credential"),
            settings: vec![("CRM_INLINE_MAX_BYTES".into(), (64u64 << 20).to_string())],
            results_dir: Some(dir.clone()),
            mappings: crm_host::tenant_db::DbLocation::Memory,
        },
        runtime.load(wasm).unwrap(),
    )
    .unwrap();
    let request = CallRequest {
        tenant_id: "bench".into(),
        user_id: "bench-user".into(),
        instance_url: Some("https://acme.my.salesforce.com".into()),
        tool: "crmb_run_soql_query".into(),
        input: json!({"query": "SELECT Id, Name, StageName, Amount, CloseDate, Account.Name FROM Opportunity", "max_records": 2000}).to_string(),
        ..CallRequest::default()
    };
    let out: serde_json::Value = serde_json::from_str(&host.call(request).await.unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let peak = audit
        .events()
        .into_iter()
        .find_map(|e| match e {
            crm_host::audit::AuditEvent::ToolCall {
                peak_memory_bytes, ..
            } => Some(peak_memory_bytes),
            _ => None,
        })
        .unwrap_or_default();
    let summary = json!({
        "returned_inline": out.get("returned"),
        "record_count_in_file": out.get("record_count"),
    });
    (peak, summary)
}

/// `crma_sync_users` over `owners` owners (500 a page) and `users` users (100 a page) into an
/// in-memory SQLite store: the first run (all created), then a re-run (all unchanged).
async fn sync_figures(runtime: &Arc<Runtime>, wasm: &[u8], owners: usize, users: usize) {
    let page = move |uri: &http::Uri,
                     size: usize,
                     total: usize,
                     make: &dyn Fn(usize) -> serde_json::Value| {
        let after: usize = uri
            .query()
            .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("after=")))
            .and_then(|a| a.parse().ok())
            .unwrap_or(0);
        let results: Vec<_> = (after..total.min(after + size)).map(make).collect();
        let mut body = json!({"results": results});
        if after + size < total {
            body["paging"] = json!({"next": {"after": (after + size).to_string()}});
        }
        Reply::json(200, body)
    };
    let stub = StubBackend::with_handler(move |r| {
        let path = r.uri.path();
        let archived = r.uri.query().unwrap_or_default().contains("archived=true");
        if path.ends_with("/owners") && !archived {
            page(&r.uri, 500, owners, &|i| {
                json!({"id": (10_000 + i).to_string(), "email": format!("owner{i}@example.com"),
                "firstName": "Owner", "lastName": i.to_string(), "userId": (i < users).then_some(i), "archived": false,
                "teams": [{"id": "1", "name": "Sales", "primary": true}]})
            })
        } else if path.ends_with("/users") {
            page(&r.uri, 100, users, &|i| {
                json!({"id": i.to_string(), "email": format!("owner{i}@example.com"),
                "roleIds": ["1"], "primaryTeamId": "1", "secondaryTeamIds": [], "superAdmin": false})
            })
        } else {
            Reply::json(200, json!({"results": []}))
        }
    });
    let audit = AuditLog::in_memory();
    let host = Host::new(runtime.clone(), Arc::new(stub), audit.clone());
    host.add_tenant(
        TenantSpec {
            tenant_id: "bench-sync".into(),
            proxy_base: "https://broker.example.com".parse().unwrap(),
            credential: crm_host::credential::Credential::new("bench-credential"),
            settings: vec![],
            results_dir: None,
            mappings: crm_host::tenant_db::DbLocation::Memory,
        },
        runtime.load(wasm).unwrap(),
    )
    .unwrap();
    let request = CallRequest {
        tenant_id: "bench-sync".into(),
        user_id: "bench-user".into(),
        granted_scopes: vec![
            "settings.users.read".into(),
            "crm.objects.owners.read".into(),
        ],
        tool: "crma_sync_users".into(),
        input: "{}".into(),
        ..CallRequest::default()
    };
    for run in ["first run", "re-run"] {
        let started = Instant::now();
        let out: serde_json::Value = match host.call(request.clone()).await {
            Ok(out) => serde_json::from_str(&out).unwrap(),
            Err(e) => {
                println!(
                    "crma_sync_users {run} over {owners} owners and {users} users failed: {e}"
                );
                return;
            }
        };
        let elapsed = started.elapsed();
        let peak = audit
            .events()
            .into_iter()
            .filter_map(|e| match e {
                crm_host::audit::AuditEvent::ToolCall {
                    peak_memory_bytes, ..
                } => Some(peak_memory_bytes),
                _ => None,
            })
            .next_back()
            .unwrap_or_default();
        println!(
            "crma_sync_users {run} over {owners} owners and {users} users: {elapsed:?}, peak linear memory {:.2} MiB, created {} unchanged {}",
            peak as f64 / (1024.0 * 1024.0),
            out["created"],
            out["unchanged"]
        );
    }
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}
