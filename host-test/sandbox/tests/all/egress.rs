//! The egress policy end to end: a hostile component carrying crm-plugin's own policy tries
//! every spelling of a delete and of a request outside the spec, and the host refuses each
//! before it reaches the backend; components whose policy admits one are never loaded.

use crate::fixtures::*;
use crm_host::audit::AuditEvent;
use crm_host::credential::Credential;
use crm_host::egress::Crm;
use crm_host::tenant_db::DbLocation;
use crm_host::{AuditLog, Host, PluginVersion};
use crm_sandbox::SandboxCrm;
use crm_sandbox::stub::{Reply, StubBackend};
use serde_json::{Value, json};
use std::sync::Arc;

fn egress_probe() -> Arc<PluginVersion> {
    runtime()
        .load(&std::fs::read(crm_sandbox::EGRESS_PROBE_PATH).unwrap())
        .unwrap()
}

/// Tenant `t1` on broker-one running the egress probe; the stub answers 200 to anything.
fn probe_fixture() -> Fixture {
    let f = fixture(StubBackend::with_handler(|_| {
        Reply::json(200, json!({"id": "1"}))
    }));
    f.host.swap_version("t1", egress_probe()).unwrap();
    f
}

async fn send(f: &Fixture, tool: &str, request: &str) -> Value {
    let mut call = call("t1", tool, json!(null));
    call.input = request.into();
    probe_report(f.host.call(call).await)
}

const SF: &str = "/sdk/proxy/salesforce/services/data/v65.0";
const HS: &str = "/sdk/proxy/hubspot";
const ID: &str = "001000000000001AAA";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_spelling_of_a_delete_is_refused_and_none_reaches_the_backend() {
    let f = probe_fixture();
    // The probe can send: what the policy admits for the tool reaches the backend.
    let allowed = send(
        &f,
        "crmb_update_record",
        &format!(
            "PATCH {SF}/sobjects/Account/{ID}\ncontent-type: application/json\n\n{{\"Name\":\"x\"}}"
        ),
    )
    .await;
    assert_eq!(allowed["status"], 200, "{allowed}");
    assert_eq!(f.stub.requests().len(), 1);

    let spellings = [
        (
            "crma_create_record",
            format!(
                "POST {HS}/crm/v3/objects/contacts/batch/archive\n\n{{\"inputs\":[{{\"id\":\"1\"}}]}}"
            ),
        ),
        (
            "crma_create_record",
            format!("POST {HS}/crm/v3/objects/contacts/gdpr-delete\n\n{{\"objectId\":\"1\"}}"),
        ),
        (
            "crma_update_record",
            format!("DELETE {HS}/crm/v3/objects/contacts/51"),
        ),
        (
            "crma_update_record",
            format!("delete {HS}/crm/v3/objects/contacts/51"),
        ),
        (
            "crmb_create_record",
            format!("POST {SF}/sobjects/Account/{ID}?_HttpMethod=DELETE"),
        ),
        (
            "crmb_update_record",
            format!("PATCH {SF}/sobjects/Account/{ID}?_HttpMethod=DELETE\n\n{{}}"),
        ),
        (
            "crmb_update_record",
            format!("PATCH {SF}/sobjects/Account/{ID}\nx-http-method-override: DELETE\n\n{{}}"),
        ),
        (
            "crmb_update_record",
            format!("PATCH {SF}/sobjects/Account/{ID}\nX-HTTP-Method: DELETE\n\n{{}}"),
        ),
        (
            "crmb_create_record",
            format!(
                "POST {SF}/composite\n\n{{\"compositeRequest\":[{{\"method\":\"DELETE\",\"url\":\"/services/data/v65.0/sobjects/Account/{ID}\",\"referenceId\":\"r\"}}]}}"
            ),
        ),
        (
            "crmb_create_record",
            format!(
                "POST {SF}/composite/batch\n\n{{\"batchRequests\":[{{\"method\":\"DELETE\",\"url\":\"v65.0/sobjects/Account/{ID}\"}}]}}"
            ),
        ),
        (
            "crmb_create_record",
            format!("POST {SF}/composite/sobjects\n\n{{}}"),
        ),
        (
            "crmb_run_soql_query",
            format!(
                "GET {SF}/tooling/executeAnonymous?anonymousBody=delete+%5Bselect+id+from+account%5D%3B"
            ),
        ),
        (
            "crmb_get_record",
            format!("GET /sdk/proxy/another-integration/services/data/v65.0/sobjects/Account/{ID}"),
        ),
        (
            "crmb_update_record",
            format!(
                "PATCH /sdk/proxy/salesforce/../another-integration/services/data/v65.0/sobjects/Account/{ID}\n\n{{}}"
            ),
        ),
        (
            "crmb_update_record",
            format!("PATCH {SF}/sobjects/Account/..%2F..%2Fcomposite\n\n{{}}"),
        ),
        (
            "crmb_update_record",
            format!("PATCH {SF}/sobjects/Account%2F{ID}\n\n{{}}"),
        ),
        (
            "crmb_update_record",
            format!("PATCH {SF}//sobjects/Account/{ID}\n\n{{}}"),
        ),
        (
            "crmb_update_record",
            format!("PATCH {SF}/sobjects/Account/{ID};x=y\n\n{{}}"),
        ),
        // A tool may send only its own endpoints, and a GET never carries a body.
        (
            "crmb_get_record",
            format!("PATCH {SF}/sobjects/Account/{ID}\n\n{{}}"),
        ),
        (
            "crmb_get_record",
            format!("GET {SF}/sobjects/Account/{ID}\n\nbody"),
        ),
    ];
    for (tool, request) in &spellings {
        let report = send(&f, tool, request).await;
        assert!(
            report["error"]
                .as_str()
                .is_some_and(|e| e.contains("HttpRequestDenied")),
            "{tool} {request}: {report}"
        );
    }
    assert_eq!(
        f.stub.requests().len(),
        1,
        "only the allowed request reached the backend"
    );
    let denials = f
        .audit
        .events()
        .into_iter()
        .filter(
            |e| matches!(e, AuditEvent::Request { outcome, .. } if outcome.starts_with("denied")),
        )
        .count();
    // The GET with a body is admitted by path and refused once its body is read.
    assert_eq!(
        denials + 1,
        spellings.len(),
        "each refusal but the body one is audited before sending"
    );
}

#[test]
fn a_component_whose_policy_admits_a_delete_or_worse_is_never_loaded() {
    let endpoint = |crm: &str, method: &str, path: &str| {
        format!(
            "version = 1\nheaders = []\n[[endpoint]]\ncrm = \"{crm}\"\nmethod = \"{method}\"\n\
             path = \"{path}\"\ntools = [\"crmb_update_record\"]\n"
        )
    };
    for (policy, reason) in [
        (
            endpoint(
                "crm-b",
                "DELETE",
                "/services/data/{version}/sobjects/{object}/{sf_id}",
            ),
            "DELETE",
        ),
        (
            endpoint("crm-b", "POST", "/services/data/{version}/composite"),
            "composite",
        ),
        (
            endpoint("crm-b", "POST", "/services/data/{version}/composite/batch"),
            "composite",
        ),
        (
            endpoint(
                "crm-b",
                "GET",
                "/services/data/{version}/tooling/executeAnonymous",
            ),
            "tooling",
        ),
        (endpoint("crm-b", "POST", "/services/apex/x"), "apex"),
        (
            endpoint("crm-a", "POST", "/crm/v3/objects/{object}/batch/archive"),
            "batch",
        ),
        (
            endpoint("crm-a", "POST", "/crm/v3/objects/contacts/gdpr-delete"),
            "gdpr-delete",
        ),
        (
            endpoint("crm-a", "GET", "/../another-integration/x"),
            "'.' or '..'",
        ),
    ] {
        let refused = runtime().load(&component_with_policy(Some(&policy)));
        let message = format!("{:#}", refused.err().expect("refused"));
        assert!(message.contains(reason), "{reason}: {message}");
    }
    let none = runtime().load(&component_with_policy(None)).err().unwrap();
    assert!(format!("{none:#}").contains("no egress policy"), "{none:#}");
    // The real component with a second policy appended: which one holds is unclear, so neither.
    let mut two = plugin_bytes();
    two.extend(policy_section(EMPTY_POLICY));
    let refused = runtime().load(&two).err().unwrap();
    assert!(
        format!("{refused:#}").contains("2 egress policies"),
        "{refused:#}"
    );
}

/// One call of every tool against the sandbox: each answers, and the host refused nothing the
/// real component sent under its own policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_component_needs_nothing_its_policy_refuses() {
    let audit = AuditLog::in_memory();
    let host = Host::new(runtime(), Arc::new(SandboxCrm::new()), audit.clone());
    let mut spec = SandboxCrm::tenant_spec("acme");
    spec.mappings = DbLocation::Memory;
    host.add_tenant(spec, plugin()).unwrap();
    let tools = host.list_tools("acme").await.unwrap();
    let mut request = call("acme", "", json!(null));
    // The spec's optional `timeline` scope too, for crm_record_timeline.
    request.granted_scopes = ALL_SCOPES
        .iter()
        .chain(&["timeline"])
        .map(|s| s.to_string())
        .collect();
    request.instance_url = Some(SandboxCrm::instance_url("acme"));
    let calls = sandbox_tour();
    for tool in &tools {
        // crm_resolve_change only reaches the CRM for a create whose outcome is unknown;
        // resolve.rs makes those, under the same policy, and checks nothing was refused.
        assert!(
            tool.name == "crm_resolve_change" || calls.iter().any(|(t, _)| *t == tool.name),
            "the tour covers {}",
            tool.name
        );
    }
    let mut salesforce_update = None;
    for (tool, mut input) in calls {
        if tool == "crm_revert_change" {
            input["change_id"] = json!(salesforce_update.clone().expect("the update ran"));
        }
        request.tool = tool.into();
        request.input = input.to_string();
        let out = host.call(request.clone()).await;
        assert!(out.is_ok(), "{tool}: {out:?}");
        if tool == "crmb_update_record" {
            let out: Value = serde_json::from_str(&out.unwrap()).unwrap();
            salesforce_update = out["change_id"].as_str().map(str::to_string);
        }
    }
    let denied: Vec<_> = audit
        .events()
        .into_iter()
        .filter(|e| matches!(e, AuditEvent::Request { outcome, .. } if outcome != "ok"))
        .collect();
    assert!(denied.is_empty(), "{denied:?}");
}

/// Every tool with an input the sandbox answers, and every request path each can take.
fn sandbox_tour() -> Vec<(&'static str, Value)> {
    vec![
        (
            "crmb_get_record",
            json!({"object": "Account", "record_id": "0015gA000000001ABA", "fields": ["Name"]}),
        ),
        (
            "crmb_run_soql_query",
            json!({"query": "SELECT Id, Name FROM Account", "max_records": 2}),
        ),
        (
            "crmb_get_object_fields",
            json!({"object": "Opportunity", "name_contains": "stage"}),
        ),
        (
            "crmb_create_record",
            json!({"object": "Task", "fields": {"Subject": "Call back", "Status": "Not Started"}}),
        ),
        (
            "crmb_update_record",
            json!({"object": "Opportunity", "record_id": "0065gA000000004ABA", "fields": {"StageName": "Negotiation/Review"}}),
        ),
        (
            "crmb_generate_record_url",
            json!({"object": "Opportunity", "record_id": "0065gA000000001ABA"}),
        ),
        (
            "crma_search_records",
            json!({"object_type": "contacts", "query": "garcia", "properties": ["email"]}),
        ),
        (
            "crma_search_records",
            json!({"object_type": "deals", "filter_groups": [{"filters": [{"property": "closedate", "operator": "GTE", "value": "2026-01-01"}]}], "limit": 2}),
        ),
        (
            "crma_get_record",
            json!({"object_type": "deals", "record_id": "357300"}),
        ),
        (
            "crma_create_record",
            json!({"object_type": "deals", "properties": {"dealname": "Expansion", "closedate": "2026-12-31"}}),
        ),
        (
            "crma_update_record",
            json!({"object_type": "deals", "record_id": "357300", "properties": {"dealname": "Renewal 2027"}}),
        ),
        (
            "crma_merge_companies",
            json!({"primary_id": "357100", "merge_id": "357101"}),
        ),
        (
            "crma_get_associations",
            json!({"object_type": "deals", "record_id": "357300", "to_object_type": "contacts"}),
        ),
        (
            "crma_create_association",
            json!({"object_type": "deals", "record_id": "357300", "to_object_type": "companies", "to_record_id": "357100"}),
        ),
        (
            "crma_log_activity",
            json!({"activity_type": "call", "properties": {"hs_call_title": "Check-in", "hs_call_body": "Spoke"}, "associations": [{"to_object_type": "deals", "to_record_id": "357300"}]}),
        ),
        (
            "crma_get_properties",
            json!({"object_type": "deals", "name_contains": "stage"}),
        ),
        ("crma_get_pipeline_stages", json!({"object_type": "deals"})),
        (
            "crma_get_pipeline_stages",
            json!({"object_type": "deals", "pipeline_id": "default"}),
        ),
        ("crma_get_account_details", json!({})),
        (
            "crma_generate_record_url",
            json!({"object_type": "deals", "record_id": "357300"}),
        ),
        ("crma_list_owners", json!({"limit": 2})),
        ("crma_list_users", json!({"limit": 2})),
        ("crma_list_roles", json!({})),
        ("crma_sync_users", json!({})),
        ("crm_list_changes", json!({"object": "Opportunity"})),
        ("crm_connection_status", json!({})),
        (
            "crma_aggregate_records",
            json!({"object_type": "deals",
                   "group_by": [{"property": "dealstage"}, {"property": "closedate", "bucket": "quarter"}],
                   "metrics": ["sum:amount"]}),
        ),
        (
            "crma_aggregate_records",
            json!({"object_type": "deals", "group_by": [{"property": "hubspot_owner_id"}],
                   "metrics": ["avg:amount"], "order_by": "avg:amount"}),
        ),
        (
            "crm_record_timeline",
            json!({"crm": "hubspot", "object_type": "contacts", "record_id": "357200"}),
        ),
        (
            "crm_record_timeline",
            json!({"crm": "salesforce", "record_id": "0035gA000000001ABA"}),
        ),
        (
            "crm_find_across",
            json!({"email": "maria.garcia@acme-energy.example.com"}),
        ),
        (
            "crm_record_timeline",
            json!({"crm": "hubspot", "object_type": "contacts", "record_id": "357200"}),
        ),
        (
            "crm_record_timeline",
            json!({"crm": "salesforce", "record_id": "0035gA000000001ABA"}),
        ),
        (
            "crm_find_across",
            json!({"company": "acme-energy.example.com"}),
        ),
        // Reverts the crmb_update_record above (its change id is filled in).
        ("crm_revert_change", json!({"change_id": null})),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_disconnect_nothing_is_sent_other_crms_and_tenants_go_on_and_reconnect_works() {
    let f = fixture(record_stub(std::time::Duration::ZERO));
    f.host.disconnect("t1", Crm::Salesforce).unwrap();
    let (kind, message) = tool_error(f.host.call(get_account("t1")).await);
    assert_eq!(kind, "not-connected", "{message}");
    assert!(message.contains("Reconnect Salesforce"), "{message}");
    assert!(f.stub.requests().is_empty(), "nothing was sent");
    // The other tenant, and a tool that makes no CRM call, go on.
    assert!(f.host.call(get_account("t2")).await.is_ok());
    let link = call(
        "t1",
        "crmb_generate_record_url",
        json!({"object": "Account", "record_id": ACCOUNT_ID}),
    );
    assert!(f.host.call(link).await.is_ok());
    assert!(f.host.is_connected("t1", Crm::Hubspot).unwrap());
    f.host
        .reconnect("t1", Crm::Salesforce, Credential::new("cred-one-new"))
        .unwrap();
    assert!(f.host.call(get_account("t1")).await.is_ok());
    let sent = f.stub.requests();
    assert_eq!(
        sent.last().unwrap().header("x-proxy-credential"),
        Some("cred-one-new")
    );
}

/// A refusal comes before the host reads the body: a search whose body is larger than the
/// body stream buffers still gets the typed refusal (not-connected, reconnect), never a
/// retried "connection failed" about the half-written body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_body_to_a_disconnected_crm_gets_the_refusal_not_a_broken_pipe() {
    let stub = hubspot_stub();
    let host = host(&stub);
    host.disconnect("t1", Crm::Hubspot).unwrap();
    let long = "x".repeat(2_900);
    let filters: Vec<Value> = (0..6)
        .map(|n| json!({"property": format!("p{n}"), "operator": "EQ", "value": long}))
        .collect();
    let groups: Vec<Value> = (0..3).map(|_| json!({"filters": filters})).collect();
    for _ in 0..3 {
        let out = host
            .call(hs_call(
                "crma_search_records",
                json!({"object_type": "contacts", "filter_groups": groups, "query": long}),
                ALL_SCOPES,
            ))
            .await;
        let (kind, message) = tool_error(out);
        assert_eq!(kind, "not-connected", "{message}");
        assert!(message.contains("Reconnect HubSpot"), "{message}");
    }
    assert!(stub.requests().is_empty(), "nothing was sent");
}

#[test]
fn an_operator_disconnects_from_the_command_line_and_every_later_start_honours_it() {
    let dir = temp_dir("cli-disconnect");
    let crm_host = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_crm-sandbox"))
            .env("XDG_CACHE_HOME", crate::fixtures::cache_home())
            .arg("--data-dir")
            .arg(dir.join("data"))
            .arg("--results-dir")
            .arg(dir.join("results"))
            .args(args)
            .output()
            .unwrap();
        let json: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (out.status.success(), json)
    };
    let read = [
        "call",
        "crmb_get_record",
        r#"{"object":"Account","record_id":"0015gA000000001ABA","fields":["Name"]}"#,
    ];
    let (ok, out) = crm_host(&["connection", "disconnect", "--crm", "crm-b"]);
    assert!(ok && out["connected"] == false, "{out}");
    let (ok, out) = crm_host(&read);
    assert!(!ok);
    assert_eq!(out["error"]["kind"], "not-connected", "{out}");
    let (ok, out) = crm_host(&["call", "crma_get_account_details", "{}"]);
    assert!(ok, "HubSpot is still connected: {out}");
    let (ok, _) = crm_host(&["connection", "connect", "--crm", "crm-b"]);
    assert!(ok);
    let (ok, out) = crm_host(&read);
    assert!(ok, "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
