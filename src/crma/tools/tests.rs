use super::*;
use crate::crma::activity::LogActivity;
use crate::crma::associations::{CreateAssociation, GetAssociations};
use crate::crma::metadata::{
    GenerateRecordUrl, GetAccountDetails, GetPipelineStages, GetProperties, ListRoles,
};
use crate::harness;
use crate::http::Method;
use crate::mapping::MemoryStore;
use crate::retry::tests::NOW_UNIX_MILLIS;
use crate::retry::tests::{ScriptedTransport, response};
use crate::tool::Tool;
use serde_json::json;

/// Runs tool `T` by name, through the registry, with these scopes.
fn run<T: Tool>(
    transport: &mut ScriptedTransport,
    scopes: &[&str],
    input: Value,
) -> Result<Value, ToolError> {
    harness::call(
        transport,
        &harness::ctx(scopes, None),
        &harness::config(&[]),
        T::NAME,
        &input,
    )
}

fn body(t: &ScriptedTransport, i: usize) -> Value {
    harness::body(&t.sent[i])
}

/// (tool input, the scope that allows it) for the scope tests, with a successful answer.
#[test]
fn every_tool_checks_its_scope_before_sending() {
    type Runner = fn(&mut ScriptedTransport, &[&str], Value) -> Result<Value, ToolError>;
    let cases: Vec<(Runner, Value, &str, &str)> = vec![
        (
            run::<SearchRecords>,
            json!({"object_type": "deals"}),
            "crm.objects.deals.read",
            r#"{"total":0,"results":[]}"#,
        ),
        (
            run::<GetRecord>,
            json!({"object_type": "contacts", "record_id": "51"}),
            "crm.objects.contacts.read",
            r#"{"id":"51","properties":{},"createdAt":"2026-11-21T09:29:58Z","updatedAt":"2026-11-21T09:29:58Z","archived":false}"#,
        ),
        (
            run::<CreateRecord>,
            json!({"object_type": "deals", "properties": {"dealname": "X"}}),
            "crm.objects.deals.write",
            r#"{"id":"9","properties":{}}"#,
        ),
        (
            run::<MergeCompanies>,
            json!({"primary_id": "1", "merge_id": "2"}),
            "crm.objects.companies.write",
            r#"{"id":"1"}"#,
        ),
        (
            run::<ListOwners>,
            json!({}),
            "crm.objects.owners.read",
            r#"{"results":[]}"#,
        ),
        (
            run::<ListUsers>,
            json!({}),
            "settings.users.read",
            r#"{"results":[]}"#,
        ),
        (
            run::<GetAssociations>,
            json!({"object_type": "deals", "record_id": "5", "to_object_type": "contacts"}),
            "crm.objects.deals.read",
            r#"{"results":[]}"#,
        ),
        (
            run::<CreateAssociation>,
            json!({"object_type": "contacts", "record_id": "5", "to_object_type": "companies", "to_record_id": "6"}),
            "crm.objects.companies.write",
            r#"{"status":"COMPLETE","results":[]}"#,
        ),
        (
            run::<LogActivity>,
            json!({"activity_type": "note", "properties": {"hs_note_body": "Called"}}),
            "crm.objects.contacts.write",
            r#"{"id":"77"}"#,
        ),
        (
            run::<ListRoles>,
            json!({}),
            "crm.objects.users.read",
            r#"{"results":[]}"#,
        ),
        (
            run::<GetPipelineStages>,
            json!({"object_type": "deals", "pipeline_id": "default"}),
            "crm.objects.deals.read",
            r#"{"results":[]}"#,
        ),
        (
            run::<GetProperties>,
            json!({"object_type": "companies"}),
            "crm.schemas.companies.read",
            r#"{"results":[]}"#,
        ),
        (
            run::<GetAccountDetails>,
            json!({}),
            "oauth",
            r#"{"portalId":1,"uiDomain":"app.hubspot.com"}"#,
        ),
        (
            run::<GenerateRecordUrl>,
            json!({"object_type": "deals", "record_id": "5"}),
            "oauth",
            r#"{"portalId":1,"uiDomain":"app.hubspot.com"}"#,
        ),
    ];
    for (runner, input, scope, answer) in cases {
        let lacking: &[&str] = if scope == "oauth" {
            &["crm.objects.deals.read"]
        } else {
            &["crm.objects.deals.read.typo"]
        };
        let mut t = ScriptedTransport::default();
        let err = runner(&mut t, lacking, input.clone()).unwrap_err();
        assert!(
            matches!(&err, ToolError::MissingScopes(s) if s.iter().any(|x| x == scope)),
            "{input}: {err:?}"
        );
        assert!(t.sent.is_empty(), "{input}: nothing sent");
        let status = if answer.is_empty() { 204 } else { 200 };
        let mut t = ScriptedTransport::new([response(status, answer)]);
        runner(&mut t, &[scope], input.clone()).unwrap_or_else(|e| panic!("{input}: {e:?}"));
        assert_eq!(t.sent.len(), 1);
    }
}

#[test]
fn search_sends_hubspots_documented_body() {
    let mut t = ScriptedTransport::new([response(
        200,
        r#"{"total":1,"results":[{"id":"5","properties":{"dealname":"Big"},"createdAt":"2026-01-01T00:00:00Z","updatedAt":"2026-02-01T00:00:00Z","archived":false}],"paging":{"next":{"after":"20"}}}"#,
    )]);
    let out = run::<SearchRecords>(&mut t, &["crm.objects.deals.read"], json!({
        "object_type": "deals",
        "filter_groups": [{"filters": [{"property": "amount", "operator": "GT", "value": 1000}]}],
        "sorts": [{"property": "amount", "direction": "DESCENDING"}],
        "properties": ["dealname", "amount"], "limit": 20, "cursor": "0"
    })).unwrap();
    assert_eq!(t.sent[0].method(), Method::Post);
    assert_eq!(
        t.sent[0].url().path(),
        "/sdk/proxy/hubspot/crm/v3/objects/deals/search"
    );
    assert_eq!(
        body(&t, 0),
        json!({
            "filterGroups": [{"filters": [{"propertyName": "amount", "operator": "GT", "value": "1000"}]}],
            "sorts": [{"propertyName": "amount", "direction": "DESCENDING"}],
            "properties": ["dealname", "amount"], "limit": 20, "after": "0"
        })
    );
    assert_eq!(out["next_cursor"], "20");
    assert_eq!(out["results"][0]["id"], "5");
}

/// HubSpot's search is eventually consistent ("a record created seconds ago may be missing"),
/// so one record is read with `GET /crm/v3/objects/{type}/{id}` (CRM objects guide, "Retrieve
/// records"), which sees it at once.
#[test]
fn get_record_reads_the_record_by_id_not_through_search() {
    let mut t = ScriptedTransport::new([response(
        200,
        r#"{"id":"51","properties":{"email":"ana@example.com","hs_object_id":"51"},"createdAt":"2026-11-21T09:29:58Z","updatedAt":"2026-11-21T09:29:58Z","archived":false}"#,
    )]);
    let out = run::<GetRecord>(
        &mut t,
        &["crm.objects.contacts.read"],
        json!({"object_type": "contacts", "record_id": "51", "properties": ["email", "firstname"]}),
    )
    .unwrap();
    assert_eq!(t.sent.len(), 1);
    assert_eq!(t.sent[0].method(), Method::Get);
    assert_eq!(
        t.sent[0].url().path(),
        "/sdk/proxy/hubspot/crm/v3/objects/contacts/51"
    );
    assert_eq!(
        t.sent[0].url().query(),
        Some("archived=false&properties=email%2Cfirstname")
    );
    assert_eq!(out["properties"]["email"], "ana@example.com");
    assert!(out.get("archived").is_none());
}

/// An archived record answers 404 unless `archived=true` is asked for; then it comes with
/// `archived: true` and `archivedAt` (CRM objects API: "archived: Whether to return only results
/// that have been archived"). The assistant is told it is in the recycle bin.
#[test]
fn get_record_says_when_a_record_is_archived() {
    let not_found = r#"{"status":"error","message":"resource not found","correlationId":"c-9","category":"OBJECT_NOT_FOUND"}"#;
    let mut t = ScriptedTransport::new([
        response(404, not_found),
        response(
            200,
            r#"{"id":"51","properties":{"email":"old@example.com"},"createdAt":"2024-01-10T10:00:00Z","updatedAt":"2025-10-01T10:00:00Z","archived":true,"archivedAt":"2025-10-01T10:00:00Z"}"#,
        ),
    ]);
    let out = run::<GetRecord>(
        &mut t,
        &["crm.objects.contacts.read"],
        json!({"object_type": "contacts", "record_id": "51"}),
    )
    .unwrap();
    assert_eq!(t.sent[1].url().query(), Some("archived=true"));
    assert_eq!(out["archived"], true);
    assert_eq!(out["archived_at"], "2025-10-01T10:00:00Z");
    assert!(out["note"].as_str().unwrap().contains("recycle bin"));
    // Neither live nor archived: not found, with HubSpot's correlation id.
    let mut t = ScriptedTransport::new([response(404, not_found), response(404, not_found)]);
    let err = run::<GetRecord>(
        &mut t,
        &["crm.objects.contacts.read"],
        json!({"object_type": "contacts", "record_id": "52"}),
    )
    .unwrap_err();
    assert!(
        matches!(&err, ToolError::NotFound(m) if m.contains("c-9")),
        "{err:?}"
    );
}

/// `IN` values are lower-cased for string properties only ("When searching a string property
/// with this operator, values must be lowercase"); an enumeration's internal values such as
/// `NOT_STARTED` go as given. The type comes from the property's definition
/// (`GET /crm/v3/properties/{type}/{name}`, Properties API), read only for values with capitals.
#[test]
fn in_values_are_lower_cased_for_strings_only() {
    let mut t = ScriptedTransport::new([
        response(
            200,
            r#"{"name":"hs_task_status","label":"Task Status","type":"enumeration","fieldType":"select","options":[]}"#,
        ),
        response(
            200,
            r#"{"name":"hs_task_subject","label":"Subject","type":"string","fieldType":"text","options":[]}"#,
        ),
        response(200, r#"{"total":0,"results":[]}"#),
    ]);
    run::<SearchRecords>(
        &mut t,
        &["crm.objects.contacts.read"],
        json!({"object_type": "tasks", "filter_groups": [{"filters": [
            {"property": "hs_task_status", "operator": "IN", "values": ["NOT_STARTED", "WAITING"]},
            {"property": "hs_task_subject", "operator": "NOT_IN", "values": ["Call Back"]},
            {"property": "hs_task_priority", "operator": "IN", "values": ["high"]}
        ]}]}),
    )
    .unwrap();
    let paths: Vec<&str> = t.sent.iter().map(|r| r.url().path()).collect();
    assert_eq!(
        paths,
        [
            "/sdk/proxy/hubspot/crm/v3/properties/tasks/hs_task_status",
            "/sdk/proxy/hubspot/crm/v3/properties/tasks/hs_task_subject",
            "/sdk/proxy/hubspot/crm/v3/objects/tasks/search"
        ],
        "only properties whose values have capitals are looked up"
    );
    let filters = &body(&t, 2)["filterGroups"][0]["filters"];
    assert_eq!(filters[0]["values"], json!(["NOT_STARTED", "WAITING"]));
    assert_eq!(filters[1]["values"], json!(["call back"]));
    assert_eq!(filters[2]["values"], json!(["high"]));
}

/// Allowed to search emails (`sales-email-read`) but not to read their definitions: nothing is
/// asked, and HubSpot's rule for string values applies.
#[test]
fn without_the_scope_for_definitions_in_values_follow_the_string_rule() {
    let mut t = ScriptedTransport::new([response(200, r#"{"total":0,"results":[]}"#)]);
    run::<SearchRecords>(
        &mut t,
        &["sales-email-read"],
        json!({"object_type": "emails", "filter_groups": [{"filters": [
            {"property": "hs_email_subject", "operator": "IN", "values": ["Renewal Quote"]}
        ]}]}),
    )
    .unwrap();
    assert_eq!(t.sent.len(), 1, "only the search was sent");
    assert_eq!(
        body(&t, 0)["filterGroups"][0]["filters"][0]["values"],
        json!(["renewal quote"])
    );
}

/// HubSpot: "Date properties will only store the date, and must be set to midnight UTC ... If
/// you try to set a value that is not midnight UTC, you will receive an error" (FAQ, timestamp
/// formats). An ISO midnight becomes `YYYY-MM-DD`; a time of day is refused with nothing sent.
#[test]
fn date_properties_are_sent_as_dates_or_refused() {
    let definition = r#"{"name":"renewal_date","label":"Renewal date","type":"date","fieldType":"date","options":[]}"#;
    let mut t = ScriptedTransport::new([
        response(200, definition),
        response(201, r#"{"id":"77","properties":{}}"#),
    ]);
    run::<CreateRecord>(
        &mut t,
        &["crm.objects.contacts.read", "crm.objects.contacts.write"],
        json!({"object_type": "contacts", "properties": {"firstname": "Ana", "renewal_date": "2026-11-30T00:00:00-05:00"}}),
    )
    .unwrap();
    assert_eq!(
        t.sent[0].url().path(),
        "/sdk/proxy/hubspot/crm/v3/properties/contacts/renewal_date"
    );
    assert_eq!(body(&t, 1)["properties"]["renewal_date"], "2026-11-30");

    let mut t = ScriptedTransport::new([response(200, definition)]);
    let err = run::<UpdateRecord>(
        &mut t,
        &["crm.objects.contacts.read", "crm.objects.contacts.write"],
        json!({"object_type": "contacts", "record_id": "77", "properties": {"renewal_date": "2026-11-30T15:30:00Z"}}),
    )
    .unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidInput(m) if m.contains("renewal_date") && m.contains("YYYY-MM-DD")),
        "{err:?}"
    );
    assert_eq!(
        t.sent.len(),
        1,
        "only the definition was read; nothing was written"
    );

    // A datetime property takes the instant as given.
    let mut t = ScriptedTransport::new([
        response(
            200,
            r#"{"name":"last_touch","type":"datetime","fieldType":"date","options":[]}"#,
        ),
        response(200, r#"{"id":"77","properties":{"last_touch":null}}"#),
        response(200, r#"{"id":"77","properties":{}}"#),
    ]);
    run::<UpdateRecord>(
        &mut t,
        &["crm.objects.contacts.read", "crm.objects.contacts.write"],
        json!({"object_type": "contacts", "record_id": "77", "properties": {"last_touch": "2026-11-30T15:30:00Z"}}),
    )
    .unwrap();
    assert_eq!(
        body(&t, 2)["properties"]["last_touch"],
        "2026-11-30T15:30:00Z"
    );
}

/// A second contact with a known email is a 409 CONFLICT whose message names the existing
/// record ("Contact already exists. Existing ID: 37765128953", as HubSpot's client libraries
/// report it); the error carries that id so the assistant can update it instead.
#[test]
fn a_conflicting_create_returns_the_existing_records_id() {
    let mut t = ScriptedTransport::new([response(
        409,
        r#"{"status":"error","message":"Contact already exists. Existing ID: 37765128953","correlationId":"2dea5219-c-1","category":"CONFLICT"}"#,
    )]);
    let err = run::<CreateRecord>(
        &mut t,
        &["crm.objects.contacts.write"],
        json!({"object_type": "contacts", "properties": {"email": "ana@example.com"}}),
    )
    .unwrap_err();
    let ToolError::CrmError(problem) = err else {
        panic!("{err:?}")
    };
    assert_eq!(problem.existing_id.as_deref(), Some("37765128953"));
    assert_eq!(problem.codes, ["CONFLICT"]);
    assert!(problem.hint.contains("37765128953") && problem.hint.contains("crma_update_record"));
    assert_eq!(problem.correlation_id.as_deref(), Some("2dea5219-c-1"));
}

/// HubSpot's `after` is "the paging cursor token" and its own examples are base64 such as
/// `NTI1Cg%3D%3D`: such a token is accepted back and sent unchanged.
#[test]
fn opaque_paging_tokens_are_accepted_and_sent_back() {
    let mut t = ScriptedTransport::new([response(200, r#"{"results":[]}"#)]);
    run::<ListUsers>(
        &mut t,
        &["settings.users.read"],
        json!({"cursor": "NTI1Cg%3D%3D"}),
    )
    .unwrap();
    let sent = t.sent[0].url().query().unwrap();
    let after: Vec<(String, String)> = url::form_urlencoded::parse(sent.as_bytes())
        .into_owned()
        .filter(|(k, _)| k == "after")
        .collect();
    assert_eq!(after, [("after".to_string(), "NTI1Cg%3D%3D".to_string())]);
    for bad in ["", "a b", "x\ny", &"a".repeat(1025)] {
        let mut t = ScriptedTransport::default();
        let err =
            run::<ListUsers>(&mut t, &["settings.users.read"], json!({"cursor": bad})).unwrap_err();
        assert!(matches!(err, ToolError::InvalidInput(_)), "{bad:?}");
        assert!(t.sent.is_empty());
    }
}

#[test]
fn create_sends_string_properties_and_default_associations() {
    let mut t = ScriptedTransport::new([response(
        201,
        r#"{"id":"901","properties":{"dealname":"Renewal"}}"#,
    )]);
    let out = run::<CreateRecord>(&mut t, &["crm.objects.deals.write"], json!({
        "object_type": "deals",
        "properties": {"dealname": "Renewal", "amount": 5000, "hs_priority": null},
        "associations": [{"to_object_type": "companies", "to_record_id": "44"}, {"to_object_type": "contacts", "to_record_id": 51}]
    })).unwrap();
    assert_eq!(out["id"], "901");
    assert_eq!(
        t.sent[0].url().path(),
        "/sdk/proxy/hubspot/crm/v3/objects/deals"
    );
    assert_eq!(
        body(&t, 0),
        json!({
            "properties": {"amount": "5000", "dealname": "Renewal", "hs_priority": ""},
            "associations": [
                {"to": {"id": "44"}, "types": [{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": 341}]},
                {"to": {"id": "51"}, "types": [{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": 3}]}
            ]
        })
    );
}

#[test]
fn writes_are_never_resent_and_bad_input_sends_nothing() {
    let mut t = ScriptedTransport::new([response(502, "")]);
    let err = run::<CreateRecord>(
        &mut t,
        &["crm.objects.contacts.write"],
        json!({"object_type": "contacts", "properties": {"email": "a@b.com"}}),
    )
    .unwrap_err();
    assert!(matches!(err, ToolError::OutcomeUnknown(_)));
    assert_eq!(t.sent.len(), 1);
    let scopes = ["crm.objects.contacts.write", "crm.objects.companies.write"];
    for (runner, input) in [
        (
            run::<CreateRecord>
                as fn(&mut ScriptedTransport, &[&str], Value) -> Result<Value, ToolError>,
            json!({"object_type": "contacts", "properties": {}}),
        ),
        (
            run::<CreateRecord>,
            json!({"object_type": "contacts", "properties": {"first name": "x"}}),
        ),
        (
            run::<CreateRecord>,
            json!({"object_type": "contacts", "properties": {"tags": ["a"]}}),
        ),
        (
            run::<CreateRecord>,
            json!({"object_type": "contacts", "properties": {"email": "x"}, "associations": [{"to_object_type": "contacts", "to_record_id": "1"}]}),
        ),
        (
            run::<UpdateRecord>,
            json!({"object_type": "contacts", "record_id": "12a", "properties": {"email": "x"}}),
        ),
        (
            run::<MergeCompanies>,
            json!({"primary_id": "3", "merge_id": "3"}),
        ),
        (run::<SearchRecords>, json!({"object_type": "leads"})),
    ] {
        let mut t = ScriptedTransport::default();
        let err = runner(&mut t, &scopes, input.clone()).unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidInput(_)),
            "{input}: {err:?}"
        );
        assert!(t.sent.is_empty());
    }
}

#[test]
fn update_and_merge_shapes() {
    let input = json!({"object_type": "companies", "record_id": "7", "properties": {"name": "Y"}});
    // The values an update overwrites are read first, for the change journal: with the write
    // scope alone the call names the read scope it lacks, and sends nothing.
    let mut t = ScriptedTransport::default();
    let err =
        run::<UpdateRecord>(&mut t, &["crm.objects.companies.write"], input.clone()).unwrap_err();
    assert_eq!(
        err,
        ToolError::MissingScopes(vec!["crm.objects.companies.read".into()])
    );
    assert!(t.sent.is_empty());
    let mut t = ScriptedTransport::new([
        response(
            200,
            r#"{"id":"7","properties":{"name":"X","hs_updated_by_user_id":"9"}}"#,
        ),
        response(200, r#"{"id":"7","properties":{"name":"Y"}}"#),
    ]);
    let out = run::<UpdateRecord>(
        &mut t,
        &["crm.objects.companies.read", "crm.objects.companies.write"],
        input,
    )
    .unwrap();
    assert_eq!(out["change_id"], "chg-1");
    assert_eq!(
        (t.sent[0].method(), t.sent[0].url().query()),
        (Method::Get, Some("properties=name%2Chs_updated_by_user_id"))
    );
    assert_eq!(
        (t.sent[1].method(), t.sent[1].url().path()),
        (
            Method::Patch,
            "/sdk/proxy/hubspot/crm/v3/objects/companies/7"
        )
    );
    assert_eq!(body(&t, 1), json!({"properties": {"name": "Y"}}));
    let mut t = ScriptedTransport::new([response(200, r#"{"id":"1"}"#)]);
    run::<MergeCompanies>(
        &mut t,
        &["crm.objects.companies.write"],
        json!({"primary_id": "1", "merge_id": "2"}),
    )
    .unwrap();
    assert_eq!(
        t.sent[0].url().path(),
        "/sdk/proxy/hubspot/crm/v3/objects/companies/merge"
    );
    assert_eq!(
        body(&t, 0),
        json!({"primaryObjectId": "1", "objectIdToMerge": "2"})
    );
}

#[test]
fn owners_and_users_page_with_cursors() {
    let mut t = ScriptedTransport::new([response(
        200,
        r#"{"results":[{"id":"41","email":"dana@example.com","firstName":"Dana","lastName":"W","userId":9001,"archived":true,"teams":[]}],"paging":{"next":{"after":"41"}}}"#,
    )]);
    let out = run::<ListOwners>(
        &mut t,
        &["crm.objects.owners.read"],
        json!({"archived": true, "limit": 50}),
    )
    .unwrap();
    assert_eq!(t.sent[0].url().path(), "/sdk/proxy/hubspot/crm/v3/owners");
    assert_eq!(t.sent[0].url().query(), Some("limit=50&archived=true"));
    assert_eq!(out["results"][0]["user_id"], 9001);
    assert_eq!(out["next_cursor"], "41");
    let mut t = ScriptedTransport::new([response(
        200,
        r#"{"results":[{"id":"9001","email":"dana@example.com","roleIds":["3"],"primaryTeamId":"7","superAdmin":false}]}"#,
    )]);
    let out = run::<ListUsers>(
        &mut t,
        &["crm.objects.users.read"],
        json!({"cursor": "abc"}),
    )
    .unwrap();
    assert_eq!(t.sent[0].url().query(), Some("limit=100&after=abc"));
    assert_eq!(out["results"][0]["role_ids"], json!(["3"]));
    assert!(out.get("next_cursor").is_none());
}

/// A read whose answer lacks a field HubSpot documents as required is an `UNEXPECTED_ANSWER`
/// naming the field, never an output with a `null` in its place; nothing is retried or guessed.
#[test]
fn reads_missing_a_required_field_name_it() {
    type Runner = fn(&mut ScriptedTransport, &[&str], Value) -> Result<Value, ToolError>;
    let cases: Vec<(Runner, Value, &str, &str)> = vec![
        (
            run::<SearchRecords>,
            json!({"object_type": "deals"}),
            r#"{"results":[]}"#,
            "total",
        ),
        (
            run::<SearchRecords>,
            json!({"object_type": "deals"}),
            r#"{"total":1,"results":[{"id":"5","createdAt":"2026-01-01T00:00:00Z","updatedAt":"2026-02-01T00:00:00Z"}]}"#,
            "properties",
        ),
        (
            run::<GetRecord>,
            json!({"object_type": "deals", "record_id": "5"}),
            r#"{"id":"5","createdAt":"2026-01-01T00:00:00Z","updatedAt":"2026-02-01T00:00:00Z"}"#,
            "properties",
        ),
        (
            run::<ListOwners>,
            json!({}),
            r#"{"results":[{"email":"dana@example.com","userId":9001,"archived":false}]}"#,
            "id",
        ),
        (
            run::<ListUsers>,
            json!({}),
            r#"{"results":[{"id":"9001","roleIds":[],"superAdmin":false}]}"#,
            "email",
        ),
    ];
    let scopes = [
        "crm.objects.deals.read",
        "crm.objects.owners.read",
        "settings.users.read",
    ];
    for (runner, input, answer, field) in cases {
        let mut t = ScriptedTransport::new([response(200, answer)]);
        let err = runner(&mut t, &scopes, input.clone()).unwrap_err();
        let ToolError::CrmError(problem) = &err else {
            panic!("{input}: {err:?}")
        };
        assert_eq!(problem.codes, ["UNEXPECTED_ANSWER"], "{input}");
        assert!(
            problem
                .messages
                .iter()
                .any(|m| m.contains(&format!("missing field `{field}`"))),
            "{input}: {problem:?}"
        );
        assert_eq!(
            t.sent.len(),
            1,
            "{input}: a malformed answer is not retried"
        );
    }
}

/// A write HubSpot accepted but whose answer names no record id cannot be reported as done
/// or as failed: an unknown outcome, with what to check before redoing it.
#[test]
fn writes_answered_without_an_id_are_outcome_unknown() {
    let mut t = ScriptedTransport::new([response(201, r#"{"properties":{"dealname":"X"}}"#)]);
    let err = run::<CreateRecord>(
        &mut t,
        &["crm.objects.deals.write"],
        json!({"object_type": "deals", "properties": {"dealname": "X"}}),
    )
    .unwrap_err();
    assert!(
        // The journal keeps the create unknown, so the way on is to resolve it.
        matches!(&err, ToolError::OutcomeUnknown(m) if m.contains("without a readable record id") && m.contains("call crm_resolve_change")),
        "{err:?}"
    );
    let mut t = ScriptedTransport::new([response(200, r#"{"properties":{}}"#)]);
    let err = run::<MergeCompanies>(
        &mut t,
        &["crm.objects.companies.write"],
        json!({"primary_id": "1", "merge_id": "2"}),
    )
    .unwrap_err();
    assert!(
        matches!(&err, ToolError::OutcomeUnknown(m) if m.contains("missing field `id`") && m.contains("companies 1 and 2")),
        "{err:?}"
    );
    assert_eq!(t.sent.len(), 1);
}

#[test]
fn associations_read_every_page_up_to_the_budget_with_v4_type_ids() {
    let mut t = ScriptedTransport::new([
        response(
            200,
            r#"{"results":[{"toObjectId":101,"associationTypes":[{"category":"HUBSPOT_DEFINED","typeId":214,"label":null}]}],"paging":{"next":{"after":"MTAx"}}}"#,
        ),
        response(
            200,
            r#"{"results":[{"toObjectId":"102","associationTypes":[{"category":"USER_DEFINED","typeId":7,"label":"Decision maker"}]}]}"#,
        ),
    ]);
    let out = run::<GetAssociations>(
        &mut t,
        &["crm.objects.deals.read"],
        json!({"object_type": "deals", "record_id": "5", "to_object_type": "meetings"}),
    )
    .unwrap();
    assert_eq!(
        t.sent[0].url().path(),
        "/sdk/proxy/hubspot/crm/v4/objects/deals/5/associations/0-47"
    );
    assert_eq!(t.sent[0].url().query(), Some("limit=500"));
    assert_eq!(t.sent[1].url().query(), Some("limit=500&after=MTAx"));
    assert_eq!(out["count"], 2);
    assert_eq!(out["results"][0]["to_object_id"], "101");
    assert_eq!(
        out["results"][1]["association_types"][0]["label"],
        "Decision maker"
    );
    assert!(out.get("next_cursor").is_none());

    // A budget of 1 stops after the first page and hands back the cursor.
    let mut t = ScriptedTransport::new([response(
        200,
        r#"{"results":[{"toObjectId":101,"associationTypes":[]}],"paging":{"next":{"after":"MTAx"}}}"#,
    )]);
    let out = run::<GetAssociations>(
        &mut t,
        &["oauth"],
        json!({"object_type": "calls", "record_id": "5", "to_object_type": "contacts", "max_results": 1}),
    )
    .unwrap();
    assert_eq!(
        t.sent[0].url().as_str(),
        "https://broker.example.com/sdk/proxy/hubspot/crm/v4/objects/0-48/5/associations/contacts?limit=1"
    );
    assert_eq!(out["next_cursor"], "MTAx");
}

#[test]
fn create_association_is_a_bodiless_v4_put_sent_once() {
    let mut t = ScriptedTransport::new([response(
        200,
        r#"{"status":"COMPLETE","results":[{"from":{"id":"5"},"to":{"id":"6"},"associationSpec":{"associationCategory":"HUBSPOT_DEFINED","associationTypeId":279}}]}"#,
    )]);
    let out = run::<CreateAssociation>(
        &mut t,
        &["crm.objects.contacts.write"],
        json!({"object_type": "contacts", "record_id": "5", "to_object_type": "companies", "to_record_id": "6"}),
    )
    .unwrap();
    assert_eq!(t.sent[0].method(), Method::Put);
    assert_eq!(
        t.sent[0].url().path(),
        "/sdk/proxy/hubspot/crm/v4/objects/contacts/5/associations/default/companies/6"
    );
    assert!(t.sent[0].body().is_none());
    assert_eq!(out["association_types"][0]["type_id"], 279);
    let mut t = ScriptedTransport::new([response(503, "")]);
    let err = run::<CreateAssociation>(
        &mut t,
        &["crm.objects.contacts.write"],
        json!({"object_type": "contacts", "record_id": "5", "to_object_type": "companies", "to_record_id": "6"}),
    )
    .unwrap_err();
    assert!(matches!(err, ToolError::OutcomeUnknown(_)));
    assert_eq!(t.sent.len(), 1);
}

#[test]
fn log_activity_sends_timestamp_owner_and_pinned_associations() {
    let mut t = ScriptedTransport::new([response(201, r#"{"id":"3001","properties":{}}"#)]);
    let out = run::<LogActivity>(
        &mut t,
        &["crm.objects.contacts.write"],
        json!({"activity_type": "call",
               "properties": {"hs_call_title": "Renewal call", "hs_call_duration": 600000, "hs_call_direction": "OUTBOUND"},
               "owner_id": "41",
               "associations": [{"to_object_type": "contacts", "to_record_id": "51"},
                                {"to_object_type": "companies", "to_record_id": "44"},
                                {"to_object_type": "deals", "to_record_id": "901"}]}),
    )
    .unwrap();
    assert_eq!(
        t.sent[0].url().path(),
        "/sdk/proxy/hubspot/crm/v3/objects/calls"
    );
    let types =
        |id: u32| json!([{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": id}]);
    assert_eq!(
        body(&t, 0),
        json!({
            "properties": {"hs_call_title": "Renewal call", "hs_call_duration": "600000",
                           "hs_call_direction": "OUTBOUND", "hubspot_owner_id": "41",
                           "hs_timestamp": "2026-11-21T09:30:00.000Z"},
            "associations": [{"to": {"id": "51"}, "types": types(194)},
                             {"to": {"id": "44"}, "types": types(182)},
                             {"to": {"id": "901"}, "types": types(206)}]
        })
    );
    assert_eq!(out["id"], "3001");
    assert_eq!(NOW_UNIX_MILLIS, 1_795_253_400_000);

    // Every type's pinned ids, and an explicit time passes through unchanged.
    for (kind, main, ids) in [
        ("note", "hs_note_body", [202, 190, 214]),
        ("email", "hs_email_subject", [198, 186, 210]),
        ("meeting", "hs_meeting_title", [200, 188, 212]),
        ("task", "hs_task_subject", [204, 192, 216]),
    ] {
        let mut t = ScriptedTransport::new([response(201, r#"{"id":"1"}"#)]);
        run::<LogActivity>(&mut t, &["crm.objects.contacts.write"], json!({
            "activity_type": kind, "properties": {main: "x"}, "timestamp": "2026-11-20T15:00:00Z",
            "associations": [{"to_object_type": "contacts", "to_record_id": "1"},
                             {"to_object_type": "companies", "to_record_id": "2"},
                             {"to_object_type": "deals", "to_record_id": "3"}]
        }))
        .unwrap();
        let sent = body(&t, 0);
        assert_eq!(sent["properties"]["hs_timestamp"], "2026-11-20T15:00:00Z");
        let got: Vec<&Value> = sent["associations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| &a["types"][0]["associationTypeId"])
            .collect();
        assert_eq!(
            got,
            ids.map(Value::from).iter().collect::<Vec<_>>(),
            "{kind}"
        );
    }
}

#[test]
fn log_activity_refuses_empty_or_conflicting_input_without_sending() {
    for input in [
        json!({"activity_type": "note"}),
        json!({"activity_type": "note", "properties": {"hs_note_body": "  "}}),
        json!({"activity_type": "note", "properties": {"hs_note_body": "x", "hs_timestamp": "1"}, "timestamp": "2"}),
        json!({"activity_type": "note", "properties": {"hs_note_body": "x", "hubspot_owner_id": "1"}, "owner_id": "2"}),
        json!({"activity_type": "note", "properties": {"hs_note_body": "x"}, "timestamp": "tomorrow"}),
        json!({"activity_type": "sms", "properties": {"hs_note_body": "x"}}),
        json!({"activity_type": "task", "properties": {"hs_task_subject": "x"},
               "associations": [{"to_object_type": "notes", "to_record_id": "1"}]}),
    ] {
        let mut t = ScriptedTransport::default();
        let err =
            run::<LogActivity>(&mut t, &["crm.objects.contacts.write"], input.clone()).unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidInput(_)),
            "{input}: {err:?}"
        );
        assert!(t.sent.is_empty());
    }
}

#[test]
fn creates_keep_only_the_returned_id_locally() {
    let ctx = harness::ctx(
        &["crm.objects.deals.write", "crm.objects.contacts.write"],
        None,
    );
    let config = harness::config(&[]);
    let mut store = MemoryStore::default();
    let mut t = ScriptedTransport::new([
        response(
            201,
            r#"{"id":"901","properties":{"dealname":"Secret deal"}}"#,
        ),
        response(201, r#"{"id":"3001"}"#),
    ]);
    let out = harness::call_with_store(
        &mut t,
        &mut store,
        &ctx,
        &config,
        CreateRecord::NAME,
        &json!({"object_type": "deals", "properties": {"dealname": "Secret deal"}}),
    )
    .unwrap();
    assert!(out.get("warning").is_none());
    harness::call_with_store(
        &mut t,
        &mut store,
        &ctx,
        &config,
        LogActivity::NAME,
        &json!({"activity_type": "note", "properties": {"hs_note_body": "hi"}}),
    )
    .unwrap();
    let kept: Vec<(&str, &str, &str)> = store
        .created
        .iter()
        .map(|c| (c.crm, c.object_type.as_str(), c.record_id.as_str()))
        .collect();
    assert_eq!(
        kept,
        [("hubspot", "deals", "901"), ("hubspot", "notes", "3001")]
    );
    // Without a store the record still exists: a warning, not an error.
    let mut t = ScriptedTransport::new([response(201, r#"{"id":"902"}"#)]);
    let out = run::<CreateRecord>(
        &mut t,
        &["crm.objects.deals.write"],
        json!({"object_type": "deals", "properties": {"dealname": "x"}}),
    )
    .unwrap();
    assert_eq!(out["id"], "902");
    assert!(
        out["warning"]
            .as_str()
            .unwrap()
            .contains("not kept locally")
    );
}

#[test]
fn metadata_tools_call_the_documented_paths() {
    let mut t = ScriptedTransport::new([response(
        200,
        r#"{"results":[{"id":"closedwon","label":"Closed won","displayOrder":5,"metadata":{"isClosed":"true","probability":"1.0"},"archived":false}]}"#,
    )]);
    let out = run::<GetPipelineStages>(
        &mut t,
        &["crm.schemas.deals.read"],
        json!({"object_type": "deals", "pipeline_id": "default"}),
    )
    .unwrap();
    assert_eq!(
        t.sent[0].url().path(),
        "/sdk/proxy/hubspot/crm/v3/pipelines/deals/default/stages"
    );
    assert_eq!(out["stages"][0]["id"], "closedwon");
    assert_eq!(out["stages"][0]["probability"], 1.0);
    assert_eq!(out["stages"][0]["is_closed"], true);

    let mut t = ScriptedTransport::new([response(
        200,
        r#"{"results":[{"id":"default","label":"Sales","displayOrder":0,"stages":[{"id":"a","label":"A"}]}]}"#,
    )]);
    let out = run::<GetPipelineStages>(
        &mut t,
        &["crm.objects.deals.read"],
        json!({"object_type": "deals"}),
    )
    .unwrap();
    assert_eq!(
        t.sent[0].url().path(),
        "/sdk/proxy/hubspot/crm/v3/pipelines/deals"
    );
    assert_eq!(out["pipelines"][0]["stages"][0]["id"], "a");

    let mut t = ScriptedTransport::new([response(
        200,
        r#"{"results":[{"name":"industry","label":"Industry","type":"enumeration","fieldType":"select","options":[{"label":"Energy","value":"ENERGY","hidden":false}]},{"name":"old","label":"Old","type":"string","fieldType":"text","archived":true}]}"#,
    )]);
    let out = run::<GetProperties>(
        &mut t,
        &["crm.objects.companies.read"],
        json!({"object_type": "companies"}),
    )
    .unwrap();
    assert_eq!(
        t.sent[0].url().path(),
        "/sdk/proxy/hubspot/crm/v3/properties/companies"
    );
    assert_eq!(
        out["properties"],
        json!([{"name": "industry", "label": "Industry", "type": "enumeration", "field_type": "select",
                "options": [{"label": "Energy", "value": "ENERGY"}]}])
    );

    let mut t = ScriptedTransport::new([response(
        200,
        r#"{"results":[{"id":"100","name":"Sales rep","requiresBillingWrite":false}]}"#,
    )]);
    let out = run::<ListRoles>(&mut t, &["settings.users.read"], json!({})).unwrap();
    assert_eq!(
        t.sent[0].url().path(),
        "/sdk/proxy/hubspot/settings/v3/users/roles"
    );
    assert_eq!(out["results"], json!([{"id": "100", "name": "Sales rep"}]));

    let details = r#"{"portalId":12345678,"accountType":"STANDARD","timeZone":"America/New_York","companyCurrency":"USD","additionalCurrencies":[],"utcOffset":"-05:00","utcOffsetMilliseconds":-18000000,"uiDomain":"app.hubspot.com","dataHostingLocation":"na1"}"#;
    let mut t = ScriptedTransport::new([response(200, details)]);
    let out = run::<GetAccountDetails>(&mut t, &["oauth"], json!({})).unwrap();
    assert_eq!(
        t.sent[0].url().path(),
        "/sdk/proxy/hubspot/account-info/v3/details"
    );
    assert_eq!(
        (out["portal_id"].clone(), out["time_zone"].clone()),
        (json!(12345678), json!("America/New_York"))
    );
    let mut t = ScriptedTransport::new([response(200, details)]);
    let out = run::<GenerateRecordUrl>(
        &mut t,
        &["oauth"],
        json!({"object_type": "contacts", "record_id": "51"}),
    )
    .unwrap();
    assert_eq!(
        out["url"],
        "https://app.hubspot.com/contacts/12345678/record/0-1/51"
    );

    // Types without pipelines, and custom types named by p_ in links, are refused unsent.
    for (runner, input) in [
        (
            run::<GetPipelineStages>
                as fn(&mut ScriptedTransport, &[&str], Value) -> Result<Value, ToolError>,
            json!({"object_type": "contacts", "pipeline_id": "default"}),
        ),
        (
            run::<GetPipelineStages>,
            json!({"object_type": "deals", "pipeline_id": "../x"}),
        ),
        (
            run::<GenerateRecordUrl>,
            json!({"object_type": "p_cars", "record_id": "1"}),
        ),
    ] {
        let mut t = ScriptedTransport::default();
        let err = runner(
            &mut t,
            &[
                "oauth",
                "crm.objects.contacts.read",
                "crm.objects.deals.read",
            ],
            input.clone(),
        )
        .unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidInput(_)),
            "{input}: {err:?}"
        );
        assert!(t.sent.is_empty());
    }
}
