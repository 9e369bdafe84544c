//! Issue 12, target 4: one 2,000-record Salesforce query page mapped by the same core code,
//! compiled natively and inside the component (the shipping release build).
//!
//! Both sides run `crmb_run_soql_query` on the same page: parse the answer, validate, drop
//! `attributes`, add a `record_url` per row, size each record against the inline budget and
//! serialise the answer. Natively the page comes from an in-memory transport; in the component
//! it comes through the whole host from a stub that hands out the same bytes. The host's fixed
//! cost per call (instantiation, `wasi:http`, config, audit) is measured with an empty page and
//! subtracted, so the component figure is the guest's work on the 2,000 records plus moving
//! the body into linear memory.

use crm_host::{AuditLog, CallRequest, Host, Runtime, TenantSpec};
use crm_plugin::config::{Config, keys};
use crm_plugin::context::CallContext;
use crm_plugin::http::{Request, Response, Transport, TransportError};
use crm_plugin::tool::Session;
use crm_sandbox::stub::{Recorded, Reply, StubBackend};
use std::sync::Arc;
use std::time::{Duration, Instant};

const RECORDS: u64 = 2_000;
const INSTANCE_URL: &str = "https://acme.my.salesforce.com";
const QUERY: &str = "SELECT Id, Name, StageName, Amount, CloseDate, Account.Name FROM Opportunity";
/// An inline budget no page reaches, so every record is returned inline on both sides.
const INLINE_MAX_BYTES: u64 = 64 << 20;
const RUNS: usize = 30;

/// Runs per figure: [`RUNS`], or `CRM_BENCH_RUNS` to lengthen the phase for a profile.
fn runs() -> usize {
    std::env::var("CRM_BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(RUNS)
}

/// Prints the native and in-component times and their ratio.
pub async fn figures(runtime: &Arc<Runtime>, wasm: &[u8]) {
    let page = page_body(RECORDS);
    let empty = page_body(0);
    let input = serde_json::json!({"query": QUERY, "max_records": RECORDS}).to_string();

    let native_answer = native_call(&page, &input);
    let native = fastest(|| {
        native_call(&page, &input);
    });
    let native_empty = fastest(|| {
        native_call(&empty, &input);
    });

    let host = host_answering(runtime, wasm, page.clone());
    let host_empty = host_answering(runtime, wasm, empty);
    let request = CallRequest {
        tenant_id: "bench".into(),
        user_id: "bench-user".into(),
        instance_url: Some(INSTANCE_URL.into()),
        tool: "crmb_run_soql_query".into(),
        input: input.clone(),
        ..CallRequest::default()
    };
    let component_answer = host.call(request.clone()).await.unwrap();
    assert_eq!(
        component_answer, native_answer,
        "the component and the native build answer alike"
    );
    let component = fastest_async(|| host.call(request.clone())).await;
    let component_empty = fastest_async(|| host_empty.call(request.clone())).await;

    let native_work = native.saturating_sub(native_empty);
    let guest_work = component.saturating_sub(component_empty);
    println!(
        "mapping {RECORDS} Salesforce records ({} KiB page): native {native_work:?} \
         (call {native:?}), component {guest_work:?} (call {component:?} minus {component_empty:?} \
         host cost of an empty page; fastest of {}): {:.2}x native (target <= 1.6x)",
        page.len() / 1024,
        runs(),
        guest_work.as_secs_f64() / native_work.as_secs_f64()
    );
    println!(
        "answer sizes for those {RECORDS} records: {} bytes of Salesforce page in, {} bytes of \
         tool answer out ({} per record, link included)",
        page.len(),
        native_answer.len(),
        native_answer.len() / RECORDS as usize
    );
}

/// The page `crm_sandbox::stub::query_pages` serves, as bytes.
fn page_body(records: u64) -> Vec<u8> {
    let request = Recorded {
        method: http::Method::GET,
        uri: "https://broker.example.com/sdk/proxy/salesforce/services/data/v65.0/query"
            .parse()
            .unwrap(),
        headers: http::HeaderMap::new(),
        body: Default::default(),
    };
    match crm_sandbox::stub::query_pages(records, records.max(1))(&request) {
        Reply::Respond { body, .. } => body.to_vec(),
        other => panic!("the query stub answers: {other:?}"),
    }
}

/// The tool called natively on a transport that answers with `page`.
fn native_call(page: &[u8], input: &str) -> String {
    let config = Config::from_vars([
        (keys::PROXY_BASE, "https://broker.example.com".to_string()),
        (keys::INLINE_MAX_BYTES, INLINE_MAX_BYTES.to_string()),
    ])
    .unwrap();
    let ctx = CallContext {
        granted_scopes: vec![],
        instance_url: Some(INSTANCE_URL.into()),
    };
    let mut transport = Answering(page);
    let mut session = Session::new(&ctx, Ok(&config), &mut transport);
    crm_plugin::registry::call_tool("crmb_run_soql_query", input, &mut session).unwrap()
}

/// A transport that answers every request with the same JSON page.
struct Answering<'a>(&'a [u8]);

impl Transport for Answering<'_> {
    fn send(&mut self, _: &Request) -> Result<Response, TransportError> {
        Ok(Response {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: self.0.to_vec(),
        })
    }
    fn sleep(&mut self, _: Duration) {}
    fn now_unix_millis(&mut self) -> u64 {
        0
    }
}

/// A host with one tenant whose broker answers every request with `page`.
fn host_answering(runtime: &Arc<Runtime>, wasm: &[u8], page: Vec<u8>) -> Host {
    let body = bytes::Bytes::from(page);
    let stub = StubBackend::with_handler(move |_| Reply::Respond {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.clone(),
    });
    let host = Host::new(runtime.clone(), Arc::new(stub), AuditLog::discard());
    host.add_tenant(
        TenantSpec {
            tenant_id: "bench".into(),
            proxy_base: "https://broker.example.com".parse().unwrap(),
            credential: crm_host::credential::Credential::new("bench-credential"),
            settings: vec![("CRM_INLINE_MAX_BYTES".into(), INLINE_MAX_BYTES.to_string())],
            results_dir: None,
            mappings: crm_host::tenant_db::DbLocation::Memory,
        },
        runtime.load(wasm).unwrap(),
    )
    .unwrap();
    host
}

/// The fastest of [`RUNS`] runs after a warm-up: the figure least disturbed by other work on
/// the machine, on both sides alike.
fn fastest(mut run: impl FnMut()) -> Duration {
    run();
    (0..runs())
        .map(|_| {
            let started = Instant::now();
            run();
            started.elapsed()
        })
        .min()
        .unwrap()
}

/// As [`fastest`], for a call through the host.
async fn fastest_async<F, T, E>(mut run: impl FnMut() -> F) -> Duration
where
    F: std::future::Future<Output = Result<T, E>>,
    E: std::fmt::Debug,
{
    run().await.unwrap();
    let mut fastest = Duration::MAX;
    for _ in 0..runs() {
        let started = Instant::now();
        run().await.unwrap();
        fastest = fastest.min(started.elapsed());
    }
    fastest
}
