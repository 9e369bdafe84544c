//! `crma_search_records` with `to_file` through the real component in the host, against the
//! sandbox HubSpot seeded past the 10,000 results a search can page through: every record
//! reaches the file, once and in id order, in pages of at most 200, paced under the search
//! API's 5 requests a second, with the component's memory flat.

use crate::fixtures::*;
use bytes::Bytes;
use crm_host::backend::BoxFuture;
use crm_host::{AuditLog, Backend, CallRequest, Host};
use crm_sandbox::SandboxCrm;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wasmtime_wasi_http::Error as HttpError;

/// One request as the sandbox received it, and when.
struct Arrival {
    at: Instant,
    method: String,
    path: String,
    body: Value,
}

/// The sandbox, with every request that reaches it recorded with its arrival time.
#[derive(Clone)]
struct RecordingSandbox {
    sandbox: SandboxCrm,
    log: Arc<Mutex<Vec<Arrival>>>,
}

impl Backend for RecordingSandbox {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<Result<http::Response<Bytes>, HttpError>> {
        self.log.lock().unwrap().push(Arrival {
            at: Instant::now(),
            method: request.method().to_string(),
            path: request.uri().path().to_string(),
            body: serde_json::from_slice(request.body()).unwrap_or(Value::Null),
        });
        self.sandbox.send(request)
    }
}

struct Exporter {
    host: Host,
    sandbox: SandboxCrm,
    log: Arc<Mutex<Vec<Arrival>>>,
    audit: AuditLog,
}

/// The sandbox tenant `acme`, with a results directory when `dir` is given.
fn exporter(dir: Option<&Path>) -> Exporter {
    let sandbox = SandboxCrm::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let backend = RecordingSandbox {
        sandbox: sandbox.clone(),
        log: log.clone(),
    };
    let audit = AuditLog::in_memory();
    let host = Host::new(runtime(), Arc::new(backend), audit.clone());
    let mut spec = SandboxCrm::tenant_spec("acme");
    spec.results_dir = dir.map(Path::to_path_buf);
    host.add_tenant(spec, plugin()).unwrap();
    Exporter {
        host,
        sandbox,
        log,
        audit,
    }
}

fn acme_call(input: Value) -> CallRequest {
    CallRequest {
        tenant_id: "acme".into(),
        user_id: "demo-user".into(),
        granted_scopes: ALL_SCOPES.iter().map(|s| s.to_string()).collect(),
        instance_url: None,
        tool: "crma_search_records".into(),
        input: input.to_string(),
    }
}

fn of_company(company: &str) -> Value {
    json!([{"filters": [{"property": "company", "operator": "EQ", "value": company}]}])
}

fn file_ids(out: &Value) -> Vec<u64> {
    let path = PathBuf::from(out["file_path"].as_str().unwrap());
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .map(|line| {
            let record: Value = serde_json::from_str(line).unwrap();
            assert!(record["properties"]["email"].is_string(), "{record}");
            record["id"].as_str().unwrap().parse().unwrap()
        })
        .collect()
}

#[tokio::test]
async fn twenty_five_thousand_contacts_export_past_ten_thousand_paced_and_flat() {
    let dir = temp_dir("export");
    let e = exporter(Some(&dir));
    let small = e
        .sandbox
        .seed_hubspot_contacts("acme", 2_000, "Small Import Co")
        .unwrap();
    let seeded = e
        .sandbox
        .seed_hubspot_contacts("acme", 25_000, "Seeded Import Co")
        .unwrap();

    // A small export first: the large one's memory is compared with it.
    let out = output(
        e.host
            .call(acme_call(json!({"object_type": "contacts", "to_file": true,
                                   "filter_groups": of_company("Small Import Co"), "properties": ["email"]})))
            .await,
    );
    assert_eq!(out["record_count"], 2_000);
    assert_eq!(file_ids(&out), small);
    let small_peak = last_peak(&e.audit);
    e.log.lock().unwrap().clear();

    let started = Instant::now();
    let out = output(
        e.host
            .call(acme_call(
                json!({"object_type": "contacts", "to_file": true,
                                   "filter_groups": of_company("Seeded Import Co"),
                                   "properties": ["email", "company"]}),
            ))
            .await,
    );
    let took = started.elapsed();
    let peak = last_peak(&e.audit);
    eprintln!(
        "exported 25,000 contacts in {took:?}; peak linear memory {peak} bytes (2,000: {small_peak})"
    );

    assert_eq!(out["record_count"], 25_000);
    assert_eq!(out["total"], 25_000);
    assert_eq!(out["done"], true);
    assert!(
        out.get("results").is_none() && out.get("note").is_none(),
        "{out}"
    );
    assert_eq!(out["preview"].as_array().unwrap().len(), 3);
    let path = PathBuf::from(out["file_path"].as_str().unwrap());
    assert!(
        path.starts_with(dir.canonicalize().unwrap()),
        "{path:?} is in the tenant's own directory"
    );
    let ids = file_ids(&out);
    assert_eq!(ids.len(), 25_000);
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "ascending, so distinct"
    );
    assert_eq!(ids, seeded, "exactly the seeded contacts");
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".partial"))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    let log = e.log.lock().unwrap();
    assert_eq!(log.len(), 125, "200 a request");
    for (n, arrival) in log.iter().enumerate() {
        assert_eq!(arrival.method, "POST");
        assert!(
            arrival.path.ends_with("/crm/v3/objects/contacts/search"),
            "{}",
            arrival.path
        );
        assert_eq!(arrival.body["limit"], 200, "request {n}");
        assert!(arrival.body.get("after").is_none(), "request {n}");
        assert_eq!(
            arrival.body["sorts"],
            json!([{"propertyName": "hs_object_id", "direction": "ASCENDING"}])
        );
        let filters = arrival.body["filterGroups"][0]["filters"]
            .as_array()
            .unwrap();
        if n > 0 {
            assert_eq!(
                filters.last().unwrap(),
                &json!({"propertyName": "hs_object_id", "operator": "GT", "value": seeded[200 * n - 1].to_string()})
            );
        }
    }
    // Paced on the component's clock, 250 ms between request starts (unit-tested in
    // crma::search::export). A request reaches the sandbox later than it started by however
    // long the host took to pass it on, tens of milliseconds on a loaded CI machine, so two
    // arrivals can be closer than 250 ms; what must hold is HubSpot's own limit, 5 searches a
    // second: no second holds six arrivals.
    for (k, six) in log.windows(6).enumerate() {
        let span = six[5].at - six[0].at;
        assert!(
            span > Duration::from_secs(1),
            "requests {k} to {} arrived within {span:?}",
            k + 5
        );
    }
    assert!(
        log[124].at - log[0].at >= Duration::from_millis(124 * 249),
        "{:?}",
        log[124].at - log[0].at
    );
    // Memory stays flat: a page at a time, whatever the number of records.
    assert!(
        peak <= small_peak + (1 << 20),
        "25,000 records peaked at {peak} bytes, 2,000 at {small_peak}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn an_export_refused_before_sending_sends_nothing_and_writes_nothing() {
    let dir = temp_dir("export-refused");
    let e = exporter(Some(&dir));
    for input in [
        json!({"object_type": "contacts", "to_file": true, "cursor": "200"}),
        json!({"object_type": "contacts", "to_file": true,
               "sorts": [{"property": "createdate", "direction": "DESCENDING"}]}),
    ] {
        let (kind, message) = tool_error(e.host.call(acme_call(input.clone())).await);
        assert_eq!(kind, "invalid-input", "{input}: {message}");
        assert!(message.contains("to_file"), "{message}");
    }
    assert!(e.log.lock().unwrap().is_empty(), "nothing reached the CRM");
    assert_eq!(std::fs::read_dir(&dir).map_or(0, |d| d.count()), 0);

    // A tenant without a results directory: the files error, and nothing sent.
    let e = exporter(None);
    let (kind, message) = tool_error(
        e.host
            .call(acme_call(
                json!({"object_type": "contacts", "to_file": true}),
            ))
            .await,
    );
    assert_eq!(kind, "unavailable", "{message}");
    assert!(message.contains("results directory"), "{message}");
    assert!(e.log.lock().unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// An export the host stops at its call timeout leaves nothing in the tenant's directory: the
/// unpublished `.partial` file goes with the call.
#[tokio::test]
async fn an_export_cut_by_the_call_timeout_leaves_no_partial_file() {
    let dir = temp_dir("export-timeout");
    let runtime = Arc::new(
        crm_host::Runtime::new(crm_host::HostLimits {
            call_timeout: Duration::from_secs(2),
            ..crm_host::HostLimits::default()
        })
        .unwrap(),
    );
    let sandbox = SandboxCrm::new();
    sandbox
        .seed_hubspot_contacts("acme", 5_000, "Slow Export Co")
        .unwrap();
    let host = Host::new(runtime.clone(), Arc::new(sandbox), AuditLog::in_memory());
    let mut spec = SandboxCrm::tenant_spec("acme");
    spec.results_dir = Some(dir.clone());
    host.add_tenant(spec, crate::fixtures::load(&runtime))
        .unwrap();
    // 25 paced searches take over 6 s; the host stops the call after 2.
    let err = host
        .call(acme_call(
            json!({"object_type": "contacts", "to_file": true,
                               "filter_groups": of_company("Slow Export Co")}),
        ))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("longer than"), "{err}");
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}
