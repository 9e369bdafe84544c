//! The host's guarantees whatever the component does: the credential stays in the host, only
//! the broker is reachable, no delete, hot swap loses no call, tenants never cross, timeouts hold.

use crate::fixtures::*;
use crm_host::audit::AuditEvent;
use crm_host::credential::Credential;
use crm_host::{AuditLog, CallError, Host, HostLimits, Runtime};
use crm_sandbox::SandboxCrm;
use crm_sandbox::stub::{Fault, Reply, StubBackend};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_credential_reaches_the_broker_on_every_request() {
    // The first answer is a 503, so the read is retried: both attempts must carry it.
    let answered_once = std::sync::atomic::AtomicBool::new(false);
    let records = record_stub(Duration::ZERO);
    let stub = StubBackend::with_handler(move |request| {
        if answered_once.swap(true, std::sync::atomic::Ordering::SeqCst) {
            records.reply_to(request)
        } else {
            Reply::json(503, json!([]))
        }
    });
    let f = fixture(stub);
    let out: Value = serde_json::from_str(&f.host.call(get_account("t1")).await.unwrap()).unwrap();
    assert_eq!(out["record"]["Id"], ACCOUNT_ID);
    let requests = f.stub.requests();
    assert_eq!(requests.len(), 2, "one retry after the 503");
    for r in &requests {
        assert_eq!(r.header("x-proxy-credential"), Some("cred-one"));
        assert_eq!(r.method, http::Method::GET);
        assert_eq!(r.uri.host(), Some("broker-one.example.com"));
        assert_eq!(
            r.uri.path(),
            format!("/sdk/proxy/salesforce/services/data/v65.0/sobjects/Account/{ACCOUNT_ID}")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_can_neither_set_nor_see_the_credential() {
    let stub = StubBackend::with_handler(|_| {
        Reply::json(200, json!({})).with_header("x-proxy-credential", "echoed-back")
    });
    let f = fixture(stub);
    f.host.swap_version("t1", probe(&runtime())).unwrap();

    let report = probe_report(f.host.call(call("t1", "set-credential", json!(null))).await);
    assert!(
        report["set_credential"]
            .as_str()
            .unwrap()
            .contains("Forbidden"),
        "{report}"
    );

    let mut request = call("t1", "get", json!(null));
    request.input = "https://broker-one.example.com/sdk/proxy/salesforce/x".into();
    let report = probe_report(f.host.call(request).await);
    assert_eq!(report["status"], 200);
    let headers = report["headers"].to_string().to_ascii_lowercase();
    assert!(
        !headers.contains("x-proxy-credential") && !headers.contains("cred-one"),
        "{headers}"
    );
    assert_eq!(
        f.stub.requests()[0].header("x-proxy-credential"),
        Some("cred-one")
    );

    // Even a tenant whose settings were built carelessly never hands the credential on.
    let mut spec = sf_tenant("t3", "https://broker-one.example.com", "cred-three", &[]);
    spec.settings
        .push(("CRM_PROXY_CREDENTIAL".into(), "cred-three".into()));
    f.host.add_tenant(spec, probe(&runtime())).unwrap();
    let config = probe_report(f.host.call(call("t3", "config", json!(null))).await).to_string();
    assert!(
        config.contains("CRM_PROXY_BASE") && !config.contains("cred-three"),
        "{config}"
    );

    let env = probe_report(f.host.call(call("t1", "config", json!(null))).await).to_string();
    assert!(
        !env.contains("cred-one"),
        "the credential is not in the guest's configuration: {env}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_to_any_host_but_the_broker_are_denied() {
    let f = fixture(record_stub(Duration::ZERO));
    f.host.swap_version("t1", probe(&runtime())).unwrap();
    for target in [
        "https://evil.example.com/steal",
        "https://broker-two.example.com/sdk/proxy/salesforce/x",
        "http://broker-one.example.com/sdk/proxy/salesforce/x",
        "https://broker-one.example.com:8443/sdk",
    ] {
        let mut request = call("t1", "get", json!(null));
        request.input = target.into();
        let report = probe_report(f.host.call(request).await);
        assert!(
            report["error"]
                .as_str()
                .unwrap()
                .contains("HttpRequestDenied"),
            "{target}: {report}"
        );
    }
    assert!(f.stub.requests().is_empty(), "nothing reached the backend");
    let denied = f
        .audit
        .events()
        .into_iter()
        .filter(|e| matches!(e, AuditEvent::Request { outcome, .. } if outcome.contains("not this tenant's broker")))
        .count();
    assert_eq!(denied, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_delete_is_ever_sent() {
    let f = fixture(record_stub(Duration::ZERO));
    f.host.swap_version("t1", probe(&runtime())).unwrap();
    let mut request = call("t1", "delete", json!(null));
    request.input = format!(
        "https://broker-one.example.com/sdk/proxy/salesforce/services/data/v65.0/sobjects/Account/{ACCOUNT_ID}"
    );
    let report = probe_report(f.host.call(request).await);
    assert!(
        report["error"]
            .as_str()
            .unwrap()
            .contains("HttpRequestDenied"),
        "{report}"
    );
    assert!(f.stub.requests().is_empty());
    assert!(f.audit.events().iter().any(|e| matches!(e, AuditEvent::Request { method, outcome, .. } if method == "DELETE" && outcome.contains("DELETE is never sent"))));
    // The real component offers no tool that deletes.
    f.host.swap_version("t1", plugin()).unwrap();
    let tools = f.host.list_tools("t1").await.unwrap();
    assert!(tools.iter().all(|t| !t.name.contains("delete")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swap_under_concurrent_calls_loses_no_call() {
    let f = fixture(record_stub(Duration::from_millis(40)));
    let v1 = plugin();
    let v2 = f.host.runtime().load(&relabelled_plugin("v2")).unwrap();
    assert_ne!(v1.label(), v2.label());

    let mut calls = Vec::new();
    for i in 0..48 {
        let host = f.host.clone();
        calls.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(i * 3)).await;
            host.call(get_account("t1")).await
        }));
    }
    tokio::time::sleep(Duration::from_millis(60)).await;
    f.host.swap("t1", &relabelled_plugin("v2")).unwrap();
    for c in calls {
        let out = c.await.unwrap().expect("no call fails because of the swap");
        assert!(out.contains(ACCOUNT_ID));
    }
    // And afterwards the new version answers.
    f.host.call(get_account("t1")).await.unwrap();
    let served: Vec<String> = f
        .audit
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AuditEvent::ToolCall {
                plugin_version,
                outcome,
                ..
            } => {
                assert_eq!(outcome, "ok");
                Some(plugin_version)
            }
            _ => None,
        })
        .collect();
    assert_eq!(served.len(), 49);
    assert!(
        served.iter().any(|label| label == v1.label()),
        "calls before the swap ran on v1"
    );
    assert_eq!(
        served.last().map(String::as_str),
        Some(v2.label()),
        "the call after the swap ran on v2"
    );

    // Swapping in a different component is visible at once.
    f.host
        .swap("t1", &std::fs::read(crm_sandbox::PROBE_PATH).unwrap())
        .unwrap();
    let tools = f.host.list_tools("t1").await.unwrap();
    assert_eq!(tools[0].name, "probe");
    assert_ne!(
        f.host.list_tools("t2").await.unwrap()[0].name,
        "probe",
        "t2 unaffected"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_never_see_each_others_credential_or_configuration() {
    let f = fixture(record_stub(Duration::from_millis(5)));
    let (a, b) = tokio::join!(
        async {
            let mut out = Vec::new();
            for _ in 0..5 {
                out.push(f.host.call(get_account("t1")).await);
            }
            out
        },
        async {
            let mut out = Vec::new();
            for _ in 0..5 {
                out.push(f.host.call(get_account("t2")).await);
            }
            out
        }
    );
    assert!(a.iter().chain(&b).all(|r| r.is_ok()));
    let requests = f.stub.requests();
    assert_eq!(requests.len(), 10);
    for r in &requests {
        match r.uri.host() {
            Some("broker-one.example.com") => {
                assert_eq!(r.header("x-proxy-credential"), Some("cred-one"));
                assert!(r.uri.path().contains("/v65.0/"));
            }
            Some("broker-two.example.com") => {
                assert_eq!(r.header("x-proxy-credential"), Some("cred-two"));
                assert!(r.uri.path().contains("/v61.0/"), "t2's own API version");
            }
            other => panic!("unexpected host {other:?}"),
        }
    }

    // Each tenant's component sees only its own configuration.
    let p = probe(&runtime());
    f.host.swap_version("t1", p.clone()).unwrap();
    f.host.swap_version("t2", p).unwrap();
    let env1 = probe_report(f.host.call(call("t1", "config", json!(null))).await).to_string();
    let env2 = probe_report(f.host.call(call("t2", "config", json!(null))).await).to_string();
    assert!(
        env1.contains("broker-one") && !env1.contains("broker-two") && !env1.contains("61.0"),
        "{env1}"
    );
    assert!(
        env2.contains("broker-two")
            && env2.contains("CRM_B_API_VERSION=61.0")
            && !env2.contains("broker-one"),
        "{env2}"
    );
    assert!(!env1.contains("cred-") && !env2.contains("cred-"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_serves_each_tenant_only_its_own_data() {
    let audit = AuditLog::in_memory();
    let host = Host::new(runtime(), Arc::new(SandboxCrm::new()), audit.clone());
    host.add_tenant(SandboxCrm::tenant_spec("acme"), plugin())
        .unwrap();
    host.add_tenant(SandboxCrm::tenant_spec("globex"), plugin())
        .unwrap();
    let mut forged = SandboxCrm::tenant_spec("acme");
    forged.tenant_id = "intruder".into();
    forged.credential = Credential::new("sandbox-credential-nobody");
    host.add_tenant(forged, plugin()).unwrap();

    let acme_account = "0015gA000000001ABA";
    let mut request = call(
        "acme",
        "crmb_get_record",
        json!({"object": "Account", "record_id": acme_account}),
    );
    request.instance_url = Some(SandboxCrm::instance_url("acme"));
    let out: Value = serde_json::from_str(&host.call(request.clone()).await.unwrap()).unwrap();
    assert_eq!(out["record"]["Name"], "Acme Energy");

    request.tenant_id = "globex".into();
    assert_eq!(tool_error(host.call(request.clone()).await).0, "not-found");
    request.tenant_id = "intruder".into();
    assert_eq!(tool_error(host.call(request).await).0, "not-connected");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_ids_and_object_names_send_nothing() {
    let f = fixture(record_stub(Duration::ZERO));
    for input in [
        json!({"object": "Account", "record_id": "001000000000001AAB"}),
        json!({"object": "Account", "record_id": "001-not-an-id"}),
        json!({"object": "Account", "record_id": "00100000000000"}),
        json!({"object": "../../sobjects/User", "record_id": ACCOUNT_ID}),
        json!({"object": "Account Name", "record_id": ACCOUNT_ID}),
        json!({"object": "Account", "record_id": ACCOUNT_ID, "fields": ["Name,Id"]}),
        json!({"object": "Account", "record_id": ACCOUNT_ID, "extra": 1}),
    ] {
        for tool in ["crmb_get_record", "crmb_generate_record_url"] {
            let (kind, message) = tool_error(f.host.call(call("t1", tool, input.clone())).await);
            assert_eq!(kind, "invalid-input", "{tool} {input}: {message}");
        }
    }
    assert!(f.stub.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_trail_records_calls_and_requests_without_secrets_or_contents() {
    let f = fixture(record_stub(Duration::ZERO));
    f.host.call(get_account("t1")).await.unwrap();
    let _ = f
        .host
        .call(call("t1", "crmb_get_record", json!({"object": "Account"})))
        .await;
    let events = f.audit.events();
    assert!(
        events.contains(&AuditEvent::Request {
            tenant: "t1".into(),
            method: "GET".into(),
            path: format!(
                "/sdk/proxy/salesforce/services/data/v65.0/sobjects/Account/{ACCOUNT_ID}"
            ),
            status: Some(200),
            outcome: "ok".into(),
            correlation_id: Some("corr-123".into()),
            duration_ms: match events
                .iter()
                .find(|e| matches!(e, AuditEvent::Request { .. }))
            {
                Some(AuditEvent::Request { duration_ms, .. }) => *duration_ms,
                _ => unreachable!(),
            },
        })
    );
    let outcomes: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AuditEvent::ToolCall {
                tenant,
                user,
                tool,
                outcome,
                ..
            } => {
                assert_eq!(
                    (tenant.as_str(), user.as_str(), tool.as_str()),
                    ("t1", "user-7", "crmb_get_record")
                );
                Some(outcome.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(outcomes, vec!["ok", "invalid-input"]);
    let text = serde_json::to_string(&events).unwrap();
    assert!(
        !text.contains("cred-one"),
        "no credential in the audit trail"
    );
    assert!(
        !text.contains("Acme Energy"),
        "no record contents in the audit trail"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_clamps_request_time_and_stops_runaway_guests() {
    let limits = HostLimits {
        http_timeout: Duration::from_millis(200),
        call_timeout: Duration::from_secs(2),
        concurrent_calls: 8,
        ..HostLimits::default()
    };
    let runtime = Arc::new(Runtime::new(limits).unwrap());
    // The component asks for 30 s per request; the host allows 200 ms.
    let f = fixture_on(
        runtime.clone(),
        record_stub(Duration::from_secs(5)),
        &[("CRM_READ_ATTEMPTS", "1")],
    );
    let started = std::time::Instant::now();
    let (kind, message) = tool_error(f.host.call(get_account("t1")).await);
    assert_eq!(kind, "unavailable", "{message}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(f.audit.events().iter().any(
        |e| matches!(e, AuditEvent::Request { outcome, .. } if outcome.contains("timed out"))
    ));

    f.host.swap_version("t1", probe(&runtime)).unwrap();
    let started = std::time::Instant::now();
    let err = f
        .host
        .call(call("t1", "spin", json!(null)))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Plugin(_)), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(4));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_failures_on_reads_are_retried_then_reported() {
    let f = fixture_on(
        runtime(),
        StubBackend::scripted([
            Reply::Fault(Fault::ConnectionRefused),
            Reply::Fault(Fault::ConnectionReset),
            Reply::Fault(Fault::ConnectionRefused),
        ]),
        &[("CRM_RETRY_BASE_MS", "1")],
    );
    let (kind, message) = tool_error(f.host.call(get_account("t1")).await);
    assert_eq!(kind, "unavailable");
    assert!(message.contains("3 attempts"), "{message}");
    assert_eq!(f.stub.requests().len(), 3);
}

/// Every interface the shipped component imports: exactly the `plugin` world's. A new one (a
/// dependency reaching for sockets, the filesystem or the environment, say) fails here first,
/// and then fails to load, since the host links nothing else.
#[test]
fn the_component_imports_exactly_what_its_world_declares() {
    let runtime = runtime();
    let engine = runtime.engine();
    let component =
        wasmtime::component::Component::from_file(engine, crm_host::COMPONENT_PATH).unwrap();
    let mut imports: Vec<String> = component
        .component_type()
        .imports(engine)
        .map(|(name, _)| name.to_string())
        .collect();
    imports.sort();
    assert_eq!(
        imports,
        [
            "crm:plugin/change-journal@0.1.0",
            "crm:plugin/egress@0.1.0",
            "crm:plugin/mapping-store@0.1.0",
            "crm:plugin/progress@0.1.0",
            "crm:plugin/result-files@0.1.0",
            "wasi:cli/environment@0.2.12",
            "wasi:cli/exit@0.2.12",
            "wasi:cli/stderr@0.2.12",
            "wasi:cli/stdin@0.2.12",
            "wasi:cli/stdout@0.2.12",
            "wasi:cli/terminal-input@0.2.12",
            "wasi:cli/terminal-output@0.2.12",
            "wasi:cli/terminal-stderr@0.2.12",
            "wasi:cli/terminal-stdin@0.2.12",
            "wasi:cli/terminal-stdout@0.2.12",
            "wasi:clocks/monotonic-clock@0.2.12",
            "wasi:clocks/wall-clock@0.2.12",
            "wasi:config/store@0.2.0-rc.1",
            "wasi:http/outgoing-handler@0.2.12",
            "wasi:http/types@0.2.12",
            "wasi:io/error@0.2.12",
            "wasi:io/poll@0.2.12",
            "wasi:io/streams@0.2.12",
            "wasi:random/insecure-seed@0.2.12",
        ]
    );
}

/// A component that imports one function `func: func() -> u64` of `interface`, in the component
/// binary format: preamble, a type section with that instance type, an import section.
fn component_importing(interface: &str, func: &str) -> Vec<u8> {
    let name = |text: &str| {
        let mut bytes = vec![0, text.len() as u8];
        bytes.extend(text.as_bytes());
        bytes
    };
    // An instance type (0x42) with two declarations: a function type (0x40) taking nothing
    // and returning a u64 (0x77), and an export of that function (0x04 .. 0x01 0).
    let mut instance = vec![0x42, 2, 0x01, 0x40, 0, 0, 0x77, 0x04];
    instance.extend(name(func));
    instance.extend([0x01, 0]);
    let mut types = vec![1];
    types.extend(instance);
    // One import of type 0 as an instance (0x05).
    let mut imports = vec![1];
    imports.extend(name(interface));
    imports.extend([0x05, 0]);
    let mut wasm = b"\0asm\x0d\x00\x01\x00".to_vec();
    for (id, section) in [(7u8, types), (10, imports)] {
        wasm.extend([id, section.len() as u8]);
        wasm.extend(section);
    }
    // With an acceptable egress policy, so what refuses it is the import.
    wasm.extend(policy_section(EMPTY_POLICY));
    wasm
}

#[test]
fn a_component_asking_for_any_other_capability_is_refused_at_load() {
    let runtime = runtime();
    // An import of the world links; such a component is then refused only for lacking the
    // tools...
    let err = runtime
        .load(&component_importing(
            "wasi:clocks/monotonic-clock@0.2.12",
            "now",
        ))
        .err()
        .unwrap();
    assert!(format!("{err:#}").contains("crm:plugin/tools"), "{err:#}");
    // ...and one that asks for anything the world does not import fails to link.
    for (interface, func) in [
        ("wasi:random/random@0.2.12", "get-random-u64"),
        ("wasi:random/insecure@0.2.12", "get-insecure-random-u64"),
    ] {
        let err = runtime
            .load(&component_importing(interface, func))
            .err()
            .unwrap_or_else(|| panic!("a component importing {interface} was loaded"));
        let err = format!("{err:#}");
        assert!(
            !err.contains("crm:plugin/tools"),
            "{interface} linked: {err}"
        );
        assert!(err.contains(interface), "{interface}: {err}");
    }
}
