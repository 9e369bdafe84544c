//! The CRM B (Salesforce) tools end to end, against the stub and the sandbox.

use crate::fixtures::*;
use crm_host::audit::AuditEvent;
use crm_host::{AuditLog, Host};
use crm_sandbox::SandboxCrm;
use crm_sandbox::stub::{Reply, StubBackend};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

// ---- CRM B tools end to end ----

const CRMB_TOOLS: [&str; 6] = [
    "crmb_run_soql_query",
    "crmb_get_object_fields",
    "crmb_get_record",
    "crmb_create_record",
    "crmb_update_record",
    "crmb_generate_record_url",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_six_crmb_tools_are_listed() {
    let f = fixture(record_stub(Duration::ZERO));
    let tools = f.host.list_tools("t1").await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for name in CRMB_TOOLS {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    for tool in &tools {
        let schema: Value = serde_json::from_str(&tool.input_schema).unwrap();
        // The portable core every model API takes as sent (src/schema/portable_input.rs).
        for outside in ["$schema", "$defs", "additionalProperties"] {
            assert!(schema.get(outside).is_none(), "{}: {outside}", tool.name);
        }
        let writes = ["create", "update", "merge", "log_activity", "revert"]
            .iter()
            .any(|w| tool.name.contains(w));
        assert_eq!(tool.read_only, !writes, "{}", tool.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_has_a_title_annotations_and_an_output_schema() {
    let f = fixture(record_stub(Duration::ZERO));
    let tools = f.host.list_tools("t1").await.unwrap();
    let metadata = f.host.tool_metadata("t1").await.unwrap();
    let names = |v: Vec<&str>| v.join(",");
    assert_eq!(
        names(metadata.iter().map(|m| m.name.as_str()).collect()),
        names(tools.iter().map(|t| t.name.as_str()).collect()),
        "one metadata row per tool, in list-tools order"
    );
    assert_eq!(metadata.len(), 29);
    for (tool, meta) in tools.iter().zip(&metadata) {
        assert_eq!(meta.annotations.read_only, tool.read_only, "{}", tool.name);
        assert!(!meta.title.is_empty(), "{}", tool.name);
        let schema: Value = serde_json::from_str(&meta.output_schema).unwrap();
        assert_eq!(schema["type"], "object", "{}", tool.name);
    }
    let record_url = metadata
        .iter()
        .find(|m| m.name == "crmb_generate_record_url")
        .unwrap();
    let schema: Value = serde_json::from_str(&record_url.output_schema).unwrap();
    assert_eq!(schema["properties"]["url"]["type"], "string");
    assert!(!record_url.annotations.open_world && !record_url.annotations.destructive);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_page_query_pages_through_the_host() {
    let stub = StubBackend::with_handler(crm_sandbox::stub::query_pages(6000, 2000));
    let f = fixture_on(runtime(), stub, &[("CRM_INLINE_MAX_BYTES", "67108864")]);
    let query = "SELECT Id, Name, Amount, Account.Name FROM Opportunity";
    let mut names = Vec::new();
    let mut cursor = Value::Null;
    for _ in 0..4 {
        let mut input = json!({"query": query, "max_records": 2000});
        if !cursor.is_null() {
            input["cursor"] = cursor.clone();
        }
        let out = output(f.host.call(call("t1", "crmb_run_soql_query", input)).await);
        names.extend(
            out["records"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["Name"].as_str().unwrap().to_string()),
        );
        cursor = out.get("next_cursor").cloned().unwrap_or(Value::Null);
        if cursor.is_null() {
            assert_eq!(out["done"], true);
            break;
        }
    }
    assert_eq!(names.len(), 6000);
    assert_eq!(names[5999], "Deal 5999");
    let requests = f.stub.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests[0].uri.query().unwrap().starts_with("q=SELECT"));
    assert!(
        requests[2]
            .uri
            .path()
            .ends_with("/query/01gRO0000016PIAYA2-4000")
    );
    assert!(
        requests
            .iter()
            .all(|r| r.header("x-proxy-credential") == Some("cred-one"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_record_query_lands_in_the_tenants_file() {
    let dir = std::env::temp_dir().join(format!("crm-e2e-results-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let audit = AuditLog::in_memory();
    let stub = StubBackend::with_handler(crm_sandbox::stub::query_pages(100_000, 2000));
    let host = Host::new(runtime(), Arc::new(stub.clone()), audit.clone());
    let mut spec = sf_tenant("t1", "https://broker-one.example.com", "cred-one", &[]);
    spec.results_dir = Some(dir.join("t1"));
    host.add_tenant(spec, plugin()).unwrap();

    let out = output(
        host.call(call(
            "t1",
            "crmb_run_soql_query",
            json!({"query": "SELECT Id, Name FROM Opportunity"}),
        ))
        .await,
    );
    assert!(out.get("records").is_none());
    assert_eq!(out["record_count"], 100_000);
    let path = std::path::PathBuf::from(out["file_path"].as_str().unwrap());
    assert!(
        path.starts_with(dir.join("t1").canonicalize().unwrap()),
        "{path:?} is in the tenant's own directory"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 100_000);
    assert_eq!(stub.requests().len(), 50);
    let peak = audit.events().iter().find_map(|e| match e {
        AuditEvent::ToolCall {
            peak_memory_bytes, ..
        } => Some(*peak_memory_bytes),
        _ => None,
    });
    assert!(peak.unwrap() < 64 << 20, "memory stays bounded: {peak:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creates_and_updates_go_out_once_with_the_field_map() {
    let stub = StubBackend::scripted([
        Reply::json(
            201,
            json!({"id": "00T000000000001EAA", "success": true, "errors": []}),
        ),
        // The update reads the value it overwrites first, for the change journal.
        Reply::json(
            200,
            json!({"attributes": {"type": "Opportunity"}, "StageName": "Negotiation/Review"}),
        ),
        Reply::Respond {
            status: 204,
            headers: vec![],
            body: bytes::Bytes::new(),
        },
        Reply::json(503, json!([])),
    ]);
    let f = fixture(stub);
    let created = output(
        f.host
            .call(call("t1", "crmb_create_record", json!({"object": "Task", "fields": {"Subject": "Call Maria", "WhatId": "006000000000001", "ActivityDate": "2026-11-24"}})))
            .await,
    );
    assert_eq!(created["id"], "00T000000000001EAA");
    assert_eq!(
        created["record_url"],
        "https://acme.lightning.force.com/lightning/r/Task/00T000000000001EAA/view"
    );
    let updated = output(
        f.host
            .call(call("t1", "crmb_update_record", json!({"object": "Opportunity", "record_id": "006000000000001", "fields": {"StageName": "Closed Won"}})))
            .await,
    );
    assert_eq!(
        updated["record_url"],
        "https://acme.lightning.force.com/lightning/r/Opportunity/006000000000001/view"
    );
    let (kind, _) = tool_error(
        f.host
            .call(call(
                "t1",
                "crmb_create_record",
                json!({"object": "Task", "fields": {"Subject": "x"}}),
            ))
            .await,
    );
    assert_eq!(kind, "outcome-unknown");

    let requests = f.stub.requests();
    assert_eq!(requests.len(), 4, "the failed create was not re-sent");
    assert_eq!(requests[0].method, http::Method::POST);
    assert_eq!(
        requests[0].uri.path(),
        "/sdk/proxy/salesforce/services/data/v65.0/sobjects/Task"
    );
    assert_eq!(
        requests[0].body_json(),
        json!({"Subject": "Call Maria", "WhatId": "006000000000001", "ActivityDate": "2026-11-24"})
    );
    assert_eq!(requests[0].header("content-type"), Some("application/json"));
    assert_eq!(requests[1].method, http::Method::GET);
    assert_eq!(requests[2].method, http::Method::PATCH);
    assert_eq!(requests[2].body_json(), json!({"StageName": "Closed Won"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_next_records_url_is_not_followed() {
    let stub = StubBackend::scripted([Reply::json(
        200,
        json!({"totalSize": 4000, "done": false, "nextRecordsUrl": "https://evil.example.com/services/data/v65.0/query/01gRO0000016PIAYA2-2000",
               "records": [{"attributes": {"type": "Account"}, "Id": ACCOUNT_ID, "Name": "A"}]}),
    )]);
    let f = fixture(stub);
    let (kind, message) = tool_error(
        f.host
            .call(call(
                "t1",
                "crmb_run_soql_query",
                json!({"query": "SELECT Id, Name FROM Account", "max_records": 2000}),
            ))
            .await,
    );
    assert_eq!(kind, "crm-error");
    assert!(message.contains("UNSAFE_NEXT_RECORDS_URL"), "{message}");
    assert_eq!(f.stub.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_answers_all_six_crmb_tools() {
    let host = Host::new(
        runtime(),
        Arc::new(SandboxCrm::new()),
        AuditLog::in_memory(),
    );
    host.add_tenant(SandboxCrm::tenant_spec("acme"), plugin())
        .unwrap();
    let run = |tool: &str, input: Value| {
        let mut request = call("acme", tool, input);
        request.instance_url = Some(SandboxCrm::instance_url("acme"));
        host.call(request)
    };
    let open = output(run("crmb_run_soql_query", json!({"query": "SELECT Id, Name, Amount, CloseDate, Account.Name FROM Opportunity WHERE IsClosed = false AND CloseDate = THIS_MONTH ORDER BY Amount DESC"})).await);
    let first = &open["records"][0];
    assert_eq!(
        first["record_url"],
        format!(
            "https://acme-sandbox.my.salesforce.com/{}",
            first["Id"].as_str().unwrap()
        ),
        "a query row links by the short form, which opens the record"
    );
    assert!(
        first["Account"]["record_url"].is_null(),
        "the parent has no Id selected, so no link"
    );
    let opportunity = first["Id"].as_str().unwrap().to_string();

    let fields = output(
        run(
            "crmb_get_object_fields",
            json!({"object": "Opportunity", "name_contains": "stage"}),
        )
        .await,
    );
    assert_eq!(fields["fields"][0]["name"], "StageName");
    assert_eq!(fields["fields"][0]["required_on_create"], true);

    let created = output(run("crmb_create_record", json!({"object": "Task", "fields": {"Subject": "Send the renewal quote", "WhatId": opportunity, "Status": "Not Started"}})).await);
    let task = created["id"].as_str().unwrap().to_string();
    output(run("crmb_update_record", json!({"object": "Opportunity", "record_id": opportunity, "fields": {"StageName": "Negotiation/Review"}})).await);
    let read = output(
        run(
            "crmb_get_record",
            json!({"object": "Opportunity", "record_id": opportunity, "fields": ["StageName"]}),
        )
        .await,
    );
    assert_eq!(
        read["record"]["StageName"], "Negotiation/Review",
        "the update is visible"
    );
    let task_read = output(
        run(
            "crmb_get_record",
            json!({"object": "Task", "record_id": task}),
        )
        .await,
    );
    assert_eq!(task_read["record"]["Subject"], "Send the renewal quote");
    let link = output(
        run(
            "crmb_generate_record_url",
            json!({"object": "Task", "record_id": task}),
        )
        .await,
    );
    assert_eq!(link["url"], created["record_url"]);

    let (kind, message) = tool_error(
        run(
            "crmb_run_soql_query",
            json!({"query": "SELECT Nmae FROM Account"}),
        )
        .await,
    );
    assert_eq!(kind, "crm-error");
    assert!(
        message.contains("INVALID_FIELD") && message.contains("crmb_get_object_fields"),
        "{message}"
    );
}

// What a real org does and a lenient fake hid (issue 8), one test per rule: against the
// sandbox, which answers as Salesforce documents (a URI over 16,384 bytes is a 414; a version
// the org does not serve answers 404 NOT_FOUND beside `GET /services/data/`), and against the
// stub with Salesforce's documented answers.

fn sandbox_host(audit: &AuditLog, version: Option<&str>) -> Host {
    let host = Host::new(runtime(), Arc::new(SandboxCrm::new()), audit.clone());
    let mut acme = SandboxCrm::tenant_spec("acme");
    if let Some(version) = version {
        acme.settings
            .push(("CRM_B_API_VERSION".into(), version.into()));
    }
    host.add_tenant(acme, plugin()).unwrap();
    host
}

/// An IN list too long for the URL is refused before anything is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_too_long_for_the_url_is_refused_unsent() {
    let audit = AuditLog::in_memory();
    let host = sandbox_host(&audit, None);
    let ids: Vec<String> = (0..800).map(|i| format!("'001{i:015}'")).collect();
    let long = format!(
        "SELECT Id, Name FROM Account WHERE Id IN ({})",
        ids.join(", ")
    );
    let (kind, message) = tool_error(
        host.call(call("acme", "crmb_run_soql_query", json!({"query": long})))
            .await,
    );
    assert_eq!(kind, "invalid-input");
    assert!(message.contains("IN lists"), "{message}");
    let requests = audit
        .events()
        .iter()
        .filter(|e| matches!(e, AuditEvent::Request { .. }))
        .count();
    assert_eq!(requests, 0, "nothing was sent");
}

/// A pinned version the org does not serve: named, with the version to configure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_the_org_does_not_serve_is_named() {
    let host = sandbox_host(&AuditLog::in_memory(), Some("99.0"));
    let (kind, message) = tool_error(
        host.call(call(
            "acme",
            "crmb_run_soql_query",
            json!({"query": "SELECT Id FROM Account"}),
        ))
        .await,
    );
    assert_eq!(kind, "crm-error");
    assert!(
        message.contains("API_VERSION_NOT_SUPPORTED") && message.contains("v66.0"),
        "{message}"
    );
}

fn sf_error(status: u16, code: &str, message: &str) -> Reply {
    Reply::json(status, json!([{"message": message, "errorCode": code}]))
}

/// Concurrent long-running requests: momentary, not the 24-hour allowance (limits cheat
/// sheet: long-running requests over the limit get REQUEST_LIMIT_EXCEEDED).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_request_limits_say_retry_in_a_moment() {
    let f = fixture(StubBackend::scripted([sf_error(
        403,
        "REQUEST_LIMIT_EXCEEDED",
        "ConcurrentRequests (Concurrent API Requests) Limit exceeded.",
    )]));
    let (kind, message) = tool_error(f.host.call(get_account("t1")).await);
    assert_eq!(kind, "unavailable");
    assert!(
        message.contains("retry in a moment") && !message.contains("24-hour"),
        "{message}"
    );
}

/// UNABLE_TO_LOCK_ROW on an update: not applied, safe to make again; sent once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_row_is_safe_to_retry() {
    let f = fixture(StubBackend::scripted([sf_error(
        400,
        "UNABLE_TO_LOCK_ROW",
        "unable to obtain exclusive access to this record",
    )]));
    let (kind, message) = tool_error(
        f.host
            .call(call(
                "t1",
                "crmb_update_record",
                json!({"object": "Account", "record_id": ACCOUNT_ID, "fields": {"Name": "X"}}),
            ))
            .await,
    );
    assert_eq!(kind, "unavailable");
    assert!(message.contains("Nothing was applied"), "{message}");
    assert_eq!(f.stub.requests().len(), 1);
}

/// A child subquery cut short (done: false) is marked incomplete, with how to get the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incomplete_child_subquery_is_marked() {
    let f = fixture(StubBackend::scripted([Reply::json(
        200,
        json!({"totalSize": 1, "done": true, "records": [{
            "attributes": {"type": "Account", "url": "/a"}, "Id": ACCOUNT_ID, "Name": "Acme",
            "Contacts": {"totalSize": 250, "done": false, "nextRecordsUrl": "/services/data/v65.0/query/01gD0000002HU6KIAW-200",
                         "records": [{"attributes": {"type": "Contact", "url": "/c"}, "Id": "003000000000001AAA"}]}}]}),
    )]));
    let out = output(
        f.host
            .call(call(
                "t1",
                "crmb_run_soql_query",
                json!({"query": "SELECT Id, Name, (SELECT Id FROM Contacts) FROM Account"}),
            ))
            .await,
    );
    let contacts = &out["records"][0]["Contacts"];
    assert_eq!(contacts["incomplete"], true, "{out}");
    assert!(
        contacts["note"]
            .as_str()
            .unwrap()
            .contains("query Contact directly")
    );
}

/// An answer that is not the expected JSON is a crm-error of the one shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_answer_is_a_crm_error_of_the_one_shape() {
    let f = fixture(StubBackend::scripted([Reply::json(200, json!("<html>"))]));
    let (kind, message) = tool_error(f.host.call(get_account("t1")).await);
    assert_eq!(kind, "crm-error");
    let problem: Value = serde_json::from_str(&message).unwrap();
    for key in [
        "crm",
        "status",
        "codes",
        "messages",
        "fields",
        "hint",
        "correlation_id",
    ] {
        assert!(problem.get(key).is_some(), "{key} missing in {problem}");
    }
}

/// A combobox (Task.Subject) carries its picklist values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn combobox_fields_carry_picklist_values() {
    let f = fixture(StubBackend::scripted([Reply::json(
        200,
        json!({"name": "Task", "label": "Task", "custom": false, "createable": true, "updateable": true, "queryable": true,
               "fields": [{"name": "Subject", "label": "Subject", "type": "combobox", "length": 255, "nillable": true,
                           "createable": true, "updateable": true, "custom": false, "defaultedOnCreate": false,
                           "picklistValues": [{"value": "Call", "label": "Call", "active": true, "defaultValue": false}],
                           "referenceTo": []}],
               "childRelationships": []}),
    )]));
    let out = output(
        f.host
            .call(call(
                "t1",
                "crmb_get_object_fields",
                json!({"object": "Task"}),
            ))
            .await,
    );
    assert_eq!(
        out["fields"][0]["picklist_values"],
        json!(["Call"]),
        "{out}"
    );
}

/// Government Cloud Plus records open on lightning.crmforce.mil.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn government_cloud_links_open_on_crmforce_mil() {
    let f = fixture(StubBackend::scripted([]));
    let mut request = call(
        "t1",
        "crmb_generate_record_url",
        json!({"object": "Case", "record_id": "500000000000001AAA"}),
    );
    request.instance_url = Some("https://agency.my.salesforce.mil".into());
    let out = output(f.host.call(request).await);
    assert_eq!(
        out["url"],
        "https://agency.lightning.crmforce.mil/lightning/r/Case/500000000000001AAA/view"
    );
}

/// FIELDS(ALL) without LIMIT 200 is refused before sending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unbounded_fields_need_a_limit() {
    let f = fixture(StubBackend::scripted([]));
    let (kind, message) = tool_error(
        f.host
            .call(call(
                "t1",
                "crmb_run_soql_query",
                json!({"query": "SELECT FIELDS(ALL) FROM Account"}),
            ))
            .await,
    );
    assert_eq!(kind, "invalid-input");
    assert!(message.contains("LIMIT 200"), "{message}");
    assert!(f.stub.requests().is_empty());
}

/// Input nested past any real query's depth is refused with `invalid-input` naming the limit,
/// and nothing is sent; an answer nested past the limit is a typed error. Never a trap: the
/// wasm stack is far smaller than a native one (issue 13).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_nesting_is_refused_never_a_trap() {
    let f = fixture(StubBackend::scripted([]));
    let deep = |open: &str, close: &str| {
        format!(
            "SELECT Id FROM Account WHERE {}Name = 'x'{}",
            open.repeat(2000),
            close.repeat(2000)
        )
    };
    for query in [
        deep("(", ")"),
        deep("NOT (", ")"),
        format!(
            "SELECT {}Id{} FROM Account",
            "FORMAT(".repeat(2000),
            ")".repeat(2000)
        ),
    ] {
        let (kind, message) = tool_error(
            f.host
                .call(call("t1", "crmb_run_soql_query", json!({"query": query})))
                .await,
        );
        assert_eq!(kind, "invalid-input", "{message}");
        assert!(message.contains("more than 32"), "{message}");
    }
    // A run of NOTs is refused at the second one, whatever its length.
    let nots = deep("NOT ", "");
    let (kind, message) = tool_error(
        f.host
            .call(call("t1", "crmb_run_soql_query", json!({"query": nots})))
            .await,
    );
    assert_eq!(
        (kind.as_str(), message.contains("NOT NOT")),
        ("invalid-input", true)
    );
    assert!(f.stub.requests().is_empty(), "nothing was sent");

    // A record nested 2,000 parents deep in an answer (written as text: a `Value` that deep
    // would overflow the test's own stack).
    let level =
        format!(r#"{{"attributes":{{"type":"Account","url":"/x"}},"Id":"{ACCOUNT_ID}","Parent":"#);
    let body = format!("{}null{}", level.repeat(2000), "}".repeat(2000));
    let f = fixture(StubBackend::scripted([Reply::Respond {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.into(),
    }]));
    let (kind, _) = tool_error(f.host.call(get_account("t1")).await);
    assert_eq!(kind, "crm-error");
}
