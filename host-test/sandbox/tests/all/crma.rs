//! The CRM A (HubSpot) tools end to end: scopes before requests, request shapes on the wire,
//! HubSpot's errors and rules, against the stub and the sandbox.

use crate::fixtures::*;
use crm_host::CallError;
use crm_sandbox::stub::{Reply, StubBackend};
use serde_json::{Value, json};

/// Every tool, an input, and the scopes that allow it (the test grants every required scope
/// but these, then only these).
fn every_tool() -> Vec<(&'static str, Value, Vec<&'static str>)> {
    vec![
        (
            "crma_search_records",
            json!({"object_type": "deals", "limit": 5}),
            vec!["crm.objects.deals.read"],
        ),
        (
            "crma_aggregate_records",
            json!({"object_type": "deals"}),
            vec!["crm.objects.deals.read"],
        ),
        (
            "crma_get_record",
            json!({"object_type": "contacts", "record_id": "51"}),
            vec!["crm.objects.contacts.read"],
        ),
        (
            "crma_create_record",
            json!({"object_type": "deals", "properties": {"dealname": "New"}}),
            vec!["crm.objects.deals.write"],
        ),
        (
            "crma_update_record",
            json!({"object_type": "companies", "record_id": "7", "properties": {"name": "N"}}),
            vec!["crm.objects.companies.write"],
        ),
        (
            "crma_merge_companies",
            json!({"primary_id": "1", "merge_id": "2"}),
            vec!["crm.objects.companies.write"],
        ),
        (
            "crma_get_associations",
            json!({"object_type": "deals", "record_id": "5", "to_object_type": "contacts"}),
            vec!["oauth", "crm.objects.deals.read"],
        ),
        (
            "crma_create_association",
            json!({"object_type": "contacts", "record_id": "5", "to_object_type": "companies", "to_record_id": "6"}),
            vec![
                "oauth",
                "crm.objects.contacts.write",
                "crm.objects.companies.write",
            ],
        ),
        (
            "crma_log_activity",
            json!({"activity_type": "note", "properties": {"hs_note_body": "Called"}}),
            vec!["crm.objects.contacts.write"],
        ),
        (
            "crma_list_owners",
            json!({}),
            vec!["crm.objects.owners.read"],
        ),
        (
            "crma_list_users",
            json!({}),
            vec!["settings.users.read", "crm.objects.users.read"],
        ),
        (
            "crma_list_roles",
            json!({}),
            vec!["settings.users.read", "crm.objects.users.read"],
        ),
        (
            "crma_get_pipeline_stages",
            json!({"object_type": "deals", "pipeline_id": "default"}),
            vec![
                "crm.objects.deals.read",
                "crm.schemas.deals.read",
                "crm.schemas.custom.read",
            ],
        ),
        (
            "crma_get_properties",
            json!({"object_type": "companies"}),
            vec![
                "crm.objects.companies.read",
                "crm.schemas.companies.read",
                "crm.schemas.custom.read",
            ],
        ),
        ("crma_get_account_details", json!({}), vec!["oauth"]),
        (
            "crma_sync_users",
            json!({}),
            vec!["settings.users.read", "crm.objects.users.read"],
        ),
        (
            "crma_generate_record_url",
            json!({"object_type": "deals", "record_id": "5"}),
            vec!["oauth"],
        ),
    ]
}

#[tokio::test]
async fn every_crma_tool_is_listed() {
    let stub = hubspot_stub();
    let host = host(&stub);
    let tools = host.list_tools("t1").await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for (tool, _, _) in every_tool() {
        assert!(names.contains(&tool), "{tool} is not listed");
    }
    assert_eq!(names.iter().filter(|n| n.starts_with("crma_")).count(), 17);
    assert_eq!(
        names.len(),
        29,
        "17 CRM A tools, 6 CRM B tools, the change journal's three, the connection check, \
         the cross-CRM lookup and the timeline"
    );
    for read_only in [
        "crma_search_records",
        "crma_list_owners",
        "crma_sync_users",
        "crma_generate_record_url",
    ] {
        assert!(
            tools.iter().any(|t| t.name == read_only && t.read_only),
            "{read_only}"
        );
    }
    for writes in [
        "crma_create_record",
        "crma_update_record",
        "crma_merge_companies",
        "crma_create_association",
        "crma_log_activity",
    ] {
        assert!(
            tools.iter().any(|t| t.name == writes && !t.read_only),
            "{writes}"
        );
    }
}

#[tokio::test]
async fn every_crma_tool_checks_scopes_before_sending_anything() {
    for (tool, input, allowing) in every_tool() {
        let stub = hubspot_stub();
        let host = host(&stub);
        let lacking: Vec<&str> = ALL_SCOPES
            .iter()
            .copied()
            .filter(|s| !allowing.contains(s))
            .collect();
        match run(&host, tool, input.clone(), &lacking).await {
            Err(CallError::Tool(crm_host::bindings::ToolError::MissingScopes(scopes))) => {
                assert!(
                    allowing.iter().any(|a| scopes.iter().any(|s| s == a)),
                    "{tool}: {scopes:?} should name one of {allowing:?}"
                );
            }
            other => panic!("{tool}: expected missing-scopes, got {other:?}"),
        }
        assert!(stub.requests().is_empty(), "{tool}: nothing may be sent");

        // With only what it needs (sync also needs the owners scope) it succeeds.
        let mut needed = vec![allowing[allowing.len() - 1]];
        if tool == "crma_sync_users" {
            needed.push("crm.objects.owners.read");
        }
        // An update reads the values it overwrites first, for the change journal.
        if tool == "crma_update_record" {
            needed.push("crm.objects.companies.read");
        }
        let out = run(&host, tool, input.clone(), &needed)
            .await
            .unwrap_or_else(|e| panic!("{tool} with {needed:?}: {e}"));
        assert!(!stub.requests().is_empty(), "{tool}: sent with the scope");
        assert!(out.is_object(), "{tool}: {out}");
    }
}

#[tokio::test]
async fn requests_reach_the_broker_in_hubspots_documented_shapes() {
    let stub = hubspot_stub();
    let host = host(&stub);
    run(&host, "crma_search_records", json!({
        "object_type": "contacts",
        "filter_groups": [{"filters": [
            {"property": "createdate", "operator": "BETWEEN", "value": "2026-01-01T00:00:00Z", "high_value": "2026-06-30T00:00:00Z"},
            {"property": "lifecyclestage", "operator": "IN", "values": ["lead", "customer"]},
            {"property": "email", "operator": "HAS_PROPERTY"}]}],
        "sorts": [{"property": "createdate", "direction": "ASCENDING"}],
        "query": "acme", "properties": ["email", "firstname"], "limit": 50, "cursor": "100"
    }), ALL_SCOPES).await.unwrap();
    run(&host, "crma_create_record", json!({
        "object_type": "contacts", "properties": {"email": "new@example.com", "firstname": "New"},
        "associations": [{"to_object_type": "companies", "to_record_id": "44"}]
    }), ALL_SCOPES).await.unwrap();
    run(
        &host,
        "crma_update_record",
        json!({"object_type": "deals", "record_id": "7", "properties": {"amount": 1200.5}}),
        ALL_SCOPES,
    )
    .await
    .unwrap();
    run(
        &host,
        "crma_merge_companies",
        json!({"primary_id": "1", "merge_id": "2"}),
        ALL_SCOPES,
    )
    .await
    .unwrap();
    run(
        &host,
        "crma_get_associations",
        json!({"object_type": "emails", "record_id": "5", "to_object_type": "deals"}),
        ALL_SCOPES,
    )
    .await
    .unwrap();
    run(&host, "crma_create_association", json!({"object_type": "tasks", "record_id": "5", "to_object_type": "contacts", "to_record_id": "6"}), ALL_SCOPES).await.unwrap();
    run(&host, "crma_log_activity", json!({
        "activity_type": "meeting", "timestamp": "2026-11-20T15:00:00Z", "owner_id": "41",
        "properties": {"hs_meeting_title": "QBR", "hs_meeting_start_time": "2026-11-20T15:00:00Z", "hs_meeting_end_time": "2026-11-20T16:00:00Z"},
        "associations": [{"to_object_type": "companies", "to_record_id": "44"}]
    }), ALL_SCOPES).await.unwrap();
    run(
        &host,
        "crma_list_owners",
        json!({"archived": true, "email": "dana@example.com"}),
        ALL_SCOPES,
    )
    .await
    .unwrap();

    let sent = stub.requests();
    let line = |i: usize| {
        let r = &sent[i];
        format!(
            "{} {}{}",
            r.method,
            path_of(r),
            r.uri.query().map(|q| format!("?{q}")).unwrap_or_default()
        )
    };
    let lines: Vec<String> = (0..sent.len()).map(line).collect();
    assert_eq!(
        lines,
        [
            "POST /crm/v3/objects/contacts/search",
            "POST /crm/v3/objects/contacts",
            "GET /crm/v3/objects/deals/7?properties=amount%2Chs_updated_by_user_id",
            "PATCH /crm/v3/objects/deals/7",
            "POST /crm/v3/objects/companies/merge",
            "GET /crm/v4/objects/0-49/5/associations/deals?limit=500",
            "PUT /crm/v4/objects/0-27/5/associations/default/contacts/6",
            "POST /crm/v3/objects/meetings",
            "GET /crm/v3/owners?limit=100&archived=true&email=dana%40example.com",
        ]
    );
    assert_eq!(
        sent[0].body_json(),
        json!({
            "filterGroups": [{"filters": [
                {"propertyName": "createdate", "operator": "BETWEEN", "value": "2026-01-01T00:00:00Z", "highValue": "2026-06-30T00:00:00Z"},
                {"propertyName": "lifecyclestage", "operator": "IN", "values": ["lead", "customer"]},
                {"propertyName": "email", "operator": "HAS_PROPERTY"}]}],
            "sorts": [{"propertyName": "createdate", "direction": "ASCENDING"}],
            "query": "acme", "properties": ["email", "firstname"], "limit": 50, "after": "100"
        })
    );
    assert_eq!(
        sent[1].body_json(),
        json!({
            "properties": {"email": "new@example.com", "firstname": "New"},
            "associations": [{"to": {"id": "44"}, "types": [{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": 279}]}]
        })
    );
    assert_eq!(
        sent[3].body_json(),
        json!({"properties": {"amount": "1200.5"}})
    );
    assert_eq!(
        sent[4].body_json(),
        json!({"primaryObjectId": "1", "objectIdToMerge": "2"})
    );
    assert!(
        sent[6].body.is_empty(),
        "the default association PUT has no body"
    );
    assert_eq!(
        sent[7].body_json(),
        json!({
            "properties": {"hs_meeting_title": "QBR", "hs_meeting_start_time": "2026-11-20T15:00:00Z",
                           "hs_meeting_end_time": "2026-11-20T16:00:00Z", "hs_timestamp": "2026-11-20T15:00:00Z",
                           "hubspot_owner_id": "41"},
            "associations": [{"to": {"id": "44"}, "types": [{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": 188}]}]
        })
    );
    for r in &sent {
        assert_eq!(
            r.header("x-proxy-credential"),
            Some(CREDENTIAL),
            "the host adds the credential"
        );
        assert_eq!(r.uri.host(), Some("broker.example.com"));
        if !r.body.is_empty() {
            assert_eq!(r.header("content-type"), Some("application/json"));
        }
    }
}

#[tokio::test]
async fn the_sandbox_answers_all_sixteen_crma_tools() {
    let (host, acme) = acme_sandbox();
    let mut outputs = std::collections::HashMap::new();
    let steps = [
        (
            "crma_search_records",
            json!({"object_type": "deals", "filter_groups": [{"filters": [{"property": "amount", "operator": "GTE", "value": 100000}]}], "sorts": [{"property": "amount", "direction": "DESCENDING"}], "properties": ["dealname", "amount"]}),
        ),
        (
            "crma_get_record",
            json!({"object_type": "companies", "record_id": "357100", "properties": ["name", "industry"]}),
        ),
        (
            "crma_create_record",
            json!({"object_type": "contacts", "properties": {"email": "zoe@acme-energy.example.com", "firstname": "Zoe"}, "associations": [{"to_object_type": "companies", "to_record_id": "357100"}]}),
        ),
        (
            "crma_update_record",
            json!({"object_type": "deals", "record_id": "357300", "properties": {"dealstage": "closedwon"}}),
        ),
        (
            "crma_merge_companies",
            json!({"primary_id": "357102", "merge_id": "357103"}),
        ),
        (
            "crma_get_associations",
            json!({"object_type": "companies", "record_id": "357102", "to_object_type": "deals"}),
        ),
        (
            "crma_create_association",
            json!({"object_type": "contacts", "record_id": "357201", "to_object_type": "deals", "to_record_id": "357300"}),
        ),
        (
            "crma_log_activity",
            json!({"activity_type": "call", "properties": {"hs_call_title": "Renewal check-in", "hs_call_direction": "OUTBOUND"}, "associations": [{"to_object_type": "deals", "to_record_id": "357300"}]}),
        ),
        ("crma_list_owners", json!({})),
        ("crma_list_users", json!({})),
        ("crma_list_roles", json!({})),
        (
            "crma_get_pipeline_stages",
            json!({"object_type": "deals", "pipeline_id": "default"}),
        ),
        (
            "crma_get_properties",
            json!({"object_type": "deals", "name_contains": "stage"}),
        ),
        ("crma_get_account_details", json!({})),
        ("crma_sync_users", json!({})),
        (
            "crma_generate_record_url",
            json!({"object_type": "deals", "record_id": "357300"}),
        ),
    ];
    for (tool, input) in steps {
        let out = host
            .call(acme(tool, input))
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        outputs.insert(tool, serde_json::from_str::<Value>(&out).unwrap());
    }
    let o = |t: &str| &outputs[t];
    assert_eq!(o("crma_search_records")["total"], 2);
    assert_eq!(
        o("crma_search_records")["results"][0]["properties"]["dealname"],
        "Blue Yonder fleet analytics"
    );
    assert_eq!(o("crma_get_record")["properties"]["name"], "Acme Energy");
    // The merged company's deals moved to the primary.
    assert_eq!(o("crma_get_associations")["count"], 3);
    assert_eq!(
        o("crma_list_owners")["results"].as_array().unwrap().len(),
        3
    );
    assert_eq!(o("crma_sync_users")["created"], 7);
    assert_eq!(
        o("crma_get_pipeline_stages")["stages"]
            .as_array()
            .unwrap()
            .len(),
        7
    );
    assert_eq!(
        o("crma_get_properties")["properties"][0]["name"],
        "dealstage"
    );
    assert_eq!(o("crma_get_account_details")["portal_id"], 24681357);
    assert_eq!(
        o("crma_generate_record_url")["url"],
        "https://app.hubspot.com/contacts/24681357/record/0-3/357300"
    );

    // The call logged on the deal is now among its associations.
    let call_id = o("crma_log_activity")["id"].as_str().unwrap().to_string();
    let calls = host
        .call(acme(
            "crma_get_associations",
            json!({"object_type": "deals", "record_id": "357300", "to_object_type": "calls"}),
        ))
        .await
        .unwrap();
    assert!(calls.contains(&call_id), "{calls}");

    // Only the ids of created records were kept, with tenant, user and time.
    let created = host.mappings("acme").unwrap().created_records().unwrap();
    let kept: Vec<(&str, &str, &str)> = created
        .iter()
        .map(|c| (c.tenant.as_str(), c.crm.as_str(), c.object_type.as_str()))
        .collect();
    assert_eq!(
        kept,
        [
            ("acme", "hubspot", "contacts"),
            ("acme", "hubspot", "calls")
        ]
    );
    assert_eq!(created[1].record_id, call_id);
    assert!(
        created
            .iter()
            .all(|c| c.user_id == "demo-user" && c.created_at_ms > 0)
    );
}

/// What a tool error must look like.
type Expect = Box<dyn Fn(&crm_host::bindings::ToolError) -> bool>;

#[tokio::test]
async fn hubspot_errors_become_the_right_tool_errors_with_their_correlation_ids() {
    use crm_host::bindings::ToolError as E;
    let search = || json!({"object_type": "deals"});
    let cases: Vec<(Reply, &str, Value, Expect)> = vec![
        (
            hubspot_error(
                401,
                json!({"status": "error", "message": "Authentication credentials not found.", "correlationId": "c-401", "category": "INVALID_AUTHENTICATION"}),
            ),
            "crma_search_records",
            search(),
            Box::new(
                |e| matches!(e, E::NotConnected(m) if m.contains("reconnect") && m.contains("2025.2") && m.contains("c-401")),
            ),
        ),
        (
            hubspot_error(
                403,
                json!({"status": "error", "message": "This app hasn't been granted all required scopes to make this call.", "correlationId": "c-403", "category": "MISSING_SCOPES",
                "errors": [{"message": "One or more of the following scopes are required.", "context": {"requiredGranularScopes": ["crm.objects.deals.read"]}}]}),
            ),
            // Allowed here by oauth alone; HubSpot wants the deals read scope as well.
            "crma_get_associations",
            json!({"object_type": "deals", "record_id": "5", "to_object_type": "contacts"}),
            Box::new(
                |e| matches!(e, E::MissingScopes(s) if s == &["crm.objects.deals.read".to_string()]),
            ),
        ),
        (
            hubspot_error(
                403,
                json!({"status": "error", "message": "The user does not have App Marketplace access permission", "correlationId": "c-mkt", "category": "FORBIDDEN"}),
            ),
            "crma_search_records",
            search(),
            Box::new(
                |e| matches!(e, E::Forbidden(m) if m.contains("super admin") && m.contains("c-mkt")),
            ),
        ),
        (
            hubspot_error(
                404,
                json!({"status": "error", "message": "Object not found.  objectId are usually numeric.", "correlationId": "c-404", "category": "OBJECT_NOT_FOUND"}),
            ),
            "crma_update_record",
            json!({"object_type": "deals", "record_id": "99", "properties": {"amount": "1"}}),
            Box::new(|e| matches!(e, E::NotFound(m) if m.contains("99") && m.contains("c-404"))),
        ),
        (
            hubspot_error(
                400,
                json!({"status": "error", "correlationId": "c-400", "category": "VALIDATION_ERROR",
                "message": "Property values were not valid: [{\"isValid\":false,\"message\":\"Property \\\"favourite_colour\\\" does not exist\",\"error\":\"PROPERTY_DOESNT_EXIST\",\"name\":\"favourite_colour\"}]"}),
            ),
            "crma_create_record",
            json!({"object_type": "contacts", "properties": {"favourite_colour": "blue"}}),
            Box::new(
                |e| matches!(e, E::CrmError(m) if m.contains("favourite_colour") && m.contains("c-400") && m.contains("crma_get_properties")),
            ),
        ),
    ];
    for (reply, tool, input, expected) in cases {
        let stub = StubBackend::with_handler(move |_| reply.clone());
        let scopes: &[&str] = if tool == "crma_get_associations" {
            &["oauth"]
        } else {
            ALL_SCOPES
        };
        match run(&host(&stub), tool, input, scopes).await {
            Err(CallError::Tool(e)) => assert!(expected(&e), "{tool}: {e:?}"),
            other => panic!("{tool}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn legacy_installs_are_told_about_the_framework_release() {
    use crm_host::bindings::ToolError as E;
    // Scopes granted, yet HubSpot says they are missing: the mixed legacy/new install case.
    let stub = StubBackend::with_handler(|_| {
        hubspot_error(
            403,
            json!({"status": "error", "message": "This app hasn't been granted all required scopes to make this call.", "correlationId": "c-legacy", "category": "MISSING_SCOPES",
            "errors": [{"message": "One or more of the following scopes are required.", "context": {"requiredGranularScopes": ["crm.objects.deals.read"]}}]}),
        )
    });
    let host = host(&stub);
    let err = run(
        &host,
        "crma_search_records",
        json!({"object_type": "deals"}),
        &["crm.objects.deals.read"],
    )
    .await
    .unwrap_err();
    match err {
        CallError::Tool(E::Forbidden(m)) => {
            assert!(m.contains("2025.2") && m.contains("reinstall"), "{m}")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn rate_limits_are_retried_for_reads_and_reported_with_seconds() {
    use crm_host::bindings::ToolError as E;
    let limited = || {
        hubspot_error(429, json!({"status": "error", "message": "You have reached your secondly limit.", "errorType": "RATE_LIMIT", "correlationId": "c-429", "policyName": "SECONDLY"}))
            .with_header("x-hubspot-ratelimit-max", "100")
            .with_header("x-hubspot-ratelimit-remaining", "0")
            .with_header("x-hubspot-ratelimit-interval-milliseconds", "10")
    };
    // Twice limited, then answered: the read succeeds after waiting the header's interval.
    let stub = StubBackend::scripted([
        limited(),
        limited(),
        Reply::json(200, json!({"total": 0, "results": []})),
    ]);
    run(
        &host(&stub),
        "crma_search_records",
        json!({"object_type": "deals"}),
        ALL_SCOPES,
    )
    .await
    .unwrap();
    assert_eq!(stub.requests().len(), 3);
    // Always limited: rate-limited after the configured 3 attempts, with seconds to wait.
    let stub = StubBackend::with_handler(move |_| limited().with_header("retry-after", "0"));
    let err = run(&host(&stub), "crma_list_owners", json!({}), ALL_SCOPES)
        .await
        .unwrap_err();
    assert!(
        matches!(err, CallError::Tool(E::RateLimited(Some(_)))),
        "{err:?}"
    );
    assert_eq!(stub.requests().len(), 3);
    // A write is never re-sent, even when rate limited.
    let stub = StubBackend::with_handler(move |_| limited());
    let err = run(
        &host(&stub),
        "crma_create_record",
        json!({"object_type": "deals", "properties": {"dealname": "x"}}),
        ALL_SCOPES,
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CallError::Tool(E::RateLimited(_))), "{err:?}");
    assert_eq!(stub.requests().len(), 1);
}

#[tokio::test]
async fn writes_that_may_have_landed_are_outcome_unknown_and_sent_once() {
    use crm_host::bindings::ToolError as E;
    for (tool, input) in [
        (
            "crma_create_record",
            json!({"object_type": "deals", "properties": {"dealname": "x"}}),
        ),
        (
            "crma_update_record",
            json!({"object_type": "deals", "record_id": "5", "properties": {"dealname": "x"}}),
        ),
        (
            "crma_merge_companies",
            json!({"primary_id": "1", "merge_id": "2"}),
        ),
        (
            "crma_create_association",
            json!({"object_type": "deals", "record_id": "5", "to_object_type": "contacts", "to_record_id": "6"}),
        ),
        (
            "crma_log_activity",
            json!({"activity_type": "task", "properties": {"hs_task_subject": "Follow up"}}),
        ),
    ] {
        // Reads answer (an update reads what it overwrites first); every write gets a 502.
        let stub = StubBackend::with_handler(|r| match r.method.as_str() {
            "GET" => Reply::json(200, json!({"id": "5", "properties": {"dealname": "old"}})),
            _ => Reply::json(502, json!({"message": "Bad gateway"})),
        });
        let err = run(&host(&stub), tool, input, ALL_SCOPES)
            .await
            .unwrap_err();
        assert!(
            matches!(err, CallError::Tool(E::OutcomeUnknown(_))),
            "{tool}: {err:?}"
        );
        let writes = stub
            .requests()
            .iter()
            .filter(|r| r.method != http::Method::GET)
            .count();
        assert_eq!(writes, 1, "{tool} is never re-sent");
    }
}

#[tokio::test]
async fn reads_are_retried_through_server_and_connection_failures() {
    use crm_sandbox::stub::Fault;
    let stub = StubBackend::scripted([
        Reply::json(
            503,
            json!({"status": "error", "message": "Service Unavailable"}),
        ),
        Reply::Fault(Fault::ConnectionReset),
        Reply::json(200, json!({"total": 0, "results": []})),
    ]);
    run(
        &host(&stub),
        "crma_search_records",
        json!({"object_type": "companies"}),
        ALL_SCOPES,
    )
    .await
    .unwrap();
    let sent = stub.requests();
    assert_eq!(sent.len(), 3, "the search POST is a read: retried");
    assert!(
        sent.iter()
            .all(|r| r.method == "POST" && r.body == sent[0].body)
    );
}

#[tokio::test]
async fn malformed_crma_input_is_invalid_input_with_nothing_sent() {
    use crm_host::bindings::ToolError as E;
    for (tool, input) in [
        (
            "crma_get_record",
            json!({"object_type": "contacts", "record_id": "12; DROP"}),
        ),
        (
            "crma_get_record",
            json!({"object_type": "leads", "record_id": "1"}),
        ),
        (
            "crma_update_record",
            json!({"object_type": "deals", "record_id": "1", "properties": {"deal name": "x"}}),
        ),
        (
            "crma_search_records",
            json!({"object_type": "deals", "limit": 500}),
        ),
        (
            "crma_search_records",
            json!({"object_type": "deals", "filter_groups": [{"filters": [{"property": "amount", "operator": "BETWEEN", "value": 1}]}]}),
        ),
        (
            "crma_search_records",
            json!({"object_type": "deals", "filter_groups": (0..6).map(|_| json!({"filters": [{"property": "amount", "operator": "HAS_PROPERTY"}]})).collect::<Vec<_>>()}),
        ),
        (
            "crma_merge_companies",
            json!({"primary_id": "1", "merge_id": "1"}),
        ),
        (
            "crma_get_associations",
            json!({"object_type": "deals", "record_id": "-1", "to_object_type": "contacts"}),
        ),
        (
            "crma_log_activity",
            json!({"activity_type": "fax", "properties": {}}),
        ),
        (
            "crma_get_pipeline_stages",
            json!({"object_type": "deals", "pipeline_id": "a/b"}),
        ),
        ("crma_list_owners", json!({"limit": 0})),
        ("crma_sync_users", json!({"force": true})),
        ("crma_create_record", json!("not an object")),
    ] {
        let stub = hubspot_stub();
        let err = run(&host(&stub), tool, input.clone(), ALL_SCOPES)
            .await
            .unwrap_err();
        assert!(
            matches!(err, CallError::Tool(E::InvalidInput(_))),
            "{tool} {input}: {err:?}"
        );
        assert!(stub.requests().is_empty(), "{tool} {input}: nothing sent");
    }
}

// What a real portal does and a lenient fake hid (issue 8), one test per rule, through the
// built component and the sandbox, which answers as HubSpot documents.

/// Search is eventually consistent: a contact created a moment ago is read by id at once.
#[tokio::test]
async fn a_record_created_a_moment_ago_is_read_by_id() {
    let (host, acme) = acme_sandbox();
    let created = ok(host
        .call(acme(
            "crma_create_record",
            json!({"object_type": "contacts", "properties": {"email": "new.buyer@acme-energy.example.com", "firstname": "Nia"}}),
        ))
        .await);
    let id = created["id"].as_str().unwrap().to_string();
    let read = ok(host
        .call(acme(
            "crma_get_record",
            json!({"object_type": "contacts", "record_id": id, "properties": ["email"]}),
        ))
        .await);
    assert_eq!(
        read["properties"]["email"],
        "new.buyer@acme-energy.example.com"
    );
}

/// An archived record says so rather than "not found".
#[tokio::test]
async fn an_archived_record_says_it_is_archived() {
    let (host, acme) = acme_sandbox();
    let archived = ok(host
        .call(acme(
            "crma_get_record",
            json!({"object_type": "contacts", "record_id": "357206"}),
        ))
        .await);
    assert_eq!(archived["archived"], true, "{archived}");
}

/// IN on an enumeration sends its internal value as given; on a string it lower-cases.
#[tokio::test]
async fn in_filters_match_enumerations_exactly_and_strings_in_lower_case() {
    let (host, acme) = acme_sandbox();
    let tasks = ok(host
        .call(acme(
            "crma_search_records",
            json!({"object_type": "tasks", "filter_groups": [{"filters": [{"property": "hs_task_status", "operator": "IN", "values": ["NOT_STARTED"]}]}], "properties": ["hs_task_subject"]}),
        ))
        .await);
    assert_eq!(tasks["total"], 1, "{tasks}");
    let contacts = ok(host
        .call(acme(
            "crma_search_records",
            json!({"object_type": "contacts", "filter_groups": [{"filters": [{"property": "firstname", "operator": "IN", "values": ["Maria"]}]}]}),
        ))
        .await);
    assert_eq!(contacts["total"], 1, "{contacts}");
}

/// A date property takes a midnight ISO date as YYYY-MM-DD; a time of day is refused unsent.
#[tokio::test]
async fn date_properties_are_written_as_dates() {
    use crm_host::bindings::ToolError as E;
    let (host, acme) = acme_sandbox();
    let dated = ok(host
        .call(acme(
            "crma_update_record",
            json!({"object_type": "contacts", "record_id": "357200", "properties": {"renewal_date": "2026-11-30T00:00:00-05:00"}}),
        ))
        .await);
    assert_eq!(dated["updated"], true);
    let reread = ok(host
        .call(acme(
            "crma_get_record",
            json!({"object_type": "contacts", "record_id": "357200", "properties": ["renewal_date"]}),
        ))
        .await);
    assert_eq!(reread["properties"]["renewal_date"], "2026-11-30");
    let err = host
        .call(acme(
            "crma_update_record",
            json!({"object_type": "contacts", "record_id": "357200", "properties": {"renewal_date": "2026-11-30T15:30:00Z"}}),
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CallError::Tool(E::InvalidInput(m)) if m.contains("YYYY-MM-DD")),
        "{err:?}"
    );
}

/// A duplicate email is a conflict that names the existing contact.
#[tokio::test]
async fn a_duplicate_contact_returns_the_existing_id() {
    use crm_host::bindings::ToolError as E;
    let (host, acme) = acme_sandbox();
    let err = host
        .call(acme(
            "crma_create_record",
            json!({"object_type": "contacts", "properties": {"email": "maria.garcia@acme-energy.example.com"}}),
        ))
        .await
        .unwrap_err();
    match err {
        CallError::Tool(E::CrmError(text)) => {
            let problem: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(problem["existing_id"], "357200", "{problem}");
            assert_eq!(problem["codes"], json!(["CONFLICT"]));
        }
        other => panic!("{other:?}"),
    }
}

/// Listings page with HubSpot's opaque tokens (base64, `=` escaped).
#[tokio::test]
async fn listings_page_with_opaque_tokens() {
    let (host, acme) = acme_sandbox();
    let first = ok(host
        .call(acme("crma_list_users", json!({"limit": 1})))
        .await);
    let cursor = first["next_cursor"].as_str().unwrap().to_string();
    assert!(cursor.contains("%3D"), "{cursor}");
    let second = ok(host
        .call(acme(
            "crma_list_users",
            json!({"limit": 1, "cursor": cursor}),
        ))
        .await);
    assert_ne!(first["results"][0]["id"], second["results"][0]["id"]);
}

// HubSpot's documented answers and rules (issue 8), through the built component with the
// stub, one test per rule.

/// Custom-object pipelines: HubSpot's any-of list accepts crm.schemas.custom.read.
#[tokio::test]
async fn custom_object_pipelines_are_read_with_the_custom_schemas_scope() {
    let stub = StubBackend::with_handler(|_| {
        Reply::json(
            200,
            json!({"results": [{"id": "s1", "label": "New", "displayOrder": 0, "metadata": {}}]}),
        )
    });
    let pipelines = host(&stub);
    run(
        &pipelines,
        "crma_get_pipeline_stages",
        json!({"object_type": "2-1234", "pipeline_id": "default"}),
        &["crm.schemas.custom.read"],
    )
    .await
    .unwrap();
    assert_eq!(
        path_of(&stub.requests()[0]),
        "/crm/v3/pipelines/2-1234/default/stages"
    );
}

/// "One or more of the following scopes": one of them is granted, so never "approve it".
#[tokio::test]
async fn a_granted_scope_is_never_asked_for_again() {
    use crm_host::bindings::ToolError as E;
    let stub = StubBackend::with_handler(|_| {
        hubspot_error(
            403,
            json!({"status": "error", "message": "This app hasn't been granted all required scopes to make this call.", "correlationId": "c-any", "category": "MISSING_SCOPES",
                   "errors": [{"message": "One or more of the following scopes are required.", "context": {"requiredGranularScopes": ["crm.objects.deals.read", "crm.objects.custom.read"]}}]}),
        )
    });
    let scoped = host(&stub);
    let err = run(
        &scoped,
        "crma_search_records",
        json!({"object_type": "deals"}),
        &["crm.objects.deals.read"],
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, CallError::Tool(E::Forbidden(m)) if m.contains("already granted crm.objects.deals.read")),
        "{err:?}"
    );
}

/// Fully qualified custom type names (p{portalId}_{name}) are accepted.
#[tokio::test]
async fn fully_qualified_custom_type_names_are_accepted() {
    let stub = hubspot_stub();
    let custom = host(&stub);
    run(
        &custom,
        "crma_search_records",
        json!({"object_type": "p7878787_my_object"}),
        &["crm.objects.custom.read"],
    )
    .await
    .unwrap();
    assert_eq!(
        path_of(&stub.requests()[0]),
        "/crm/v3/objects/p7878787_my_object/search"
    );
}

/// "Attempting to page beyond 10,000 will result in a 400 error": the last page stops there.
#[tokio::test]
async fn the_last_search_page_stops_at_ten_thousand() {
    let stub = hubspot_stub();
    let deals = host(&stub);
    run(
        &deals,
        "crma_search_records",
        json!({"object_type": "deals", "limit": 100, "cursor": "9950"}),
        &["crm.objects.deals.read"],
    )
    .await
    .unwrap();
    assert_eq!(stub.requests()[0].body_json()["limit"], 50);
}
