use super::*;
use crate::client::tests::{ScriptedTransport, response};
use crate::config::{Config, keys};
use crate::context::CallContext;
use crate::http::Method;
use crate::tools::Session;

fn ctx(scopes: &[&str]) -> CallContext {
    CallContext {
        tenant_id: "t1".into(),
        user_id: "u1".into(),
        granted_scopes: scopes.iter().map(|s| s.to_string()).collect(),
        instance_url: None,
    }
}

fn run<T: Tool>(
    transport: &mut ScriptedTransport,
    scopes: &[&str],
    input: Value,
) -> Result<Value, ToolError> {
    let config = Config::from_vars([(keys::PROXY_BASE, "https://broker.example.com")]).unwrap();
    let ctx = ctx(scopes);
    let mut session = Session::new(&ctx, Ok(&config), transport);
    let input: T::Input =
        serde_json::from_value(input).map_err(|e| ToolError::invalid(e.to_string()))?;
    T::run(input, &mut session)
}

fn body(t: &ScriptedTransport, i: usize) -> Value {
    serde_json::from_slice(t.sent[i].body.as_deref().unwrap()).unwrap()
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
            r#"{"total":1,"results":[{"id":"51","properties":{}}]}"#,
        ),
        (
            run::<CreateRecord>,
            json!({"object_type": "deals", "properties": {"dealname": "X"}}),
            "crm.objects.deals.write",
            r#"{"id":"9","properties":{}}"#,
        ),
        (
            run::<UpdateRecord>,
            json!({"object_type": "companies", "record_id": "7", "properties": {"name": "Y"}}),
            "crm.objects.companies.write",
            "",
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
    ];
    for (runner, input, scope, answer) in cases {
        let mut t = ScriptedTransport::default();
        let err = runner(&mut t, &["oauth"], input.clone()).unwrap_err();
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
        r#"{"total":1,"results":[{"id":"5","properties":{"dealname":"Big"}}],"paging":{"next":{"after":"20"}}}"#,
    )]);
    let out = run::<SearchRecords>(&mut t, &["crm.objects.deals.read"], json!({
        "object_type": "deals",
        "filter_groups": [{"filters": [{"property": "amount", "operator": "GT", "value": 1000}]}],
        "sorts": [{"property": "amount", "direction": "DESCENDING"}],
        "properties": ["dealname", "amount"], "limit": 20, "cursor": "0"
    })).unwrap();
    assert_eq!(t.sent[0].method, Method::Post);
    assert_eq!(
        t.sent[0].url.path(),
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

#[test]
fn get_record_searches_by_object_id_and_reports_absence() {
    let mut t = ScriptedTransport::new([response(200, r#"{"total":0,"results":[]}"#)]);
    let err = run::<GetRecord>(
        &mut t,
        &["crm.objects.contacts.read"],
        json!({"object_type": "contacts", "record_id": "51", "properties": ["email"]}),
    )
    .unwrap_err();
    assert!(matches!(err, ToolError::NotFound(_)));
    assert_eq!(
        body(&t, 0)["filterGroups"][0]["filters"][0],
        json!({"propertyName": "hs_object_id", "operator": "EQ", "value": "51"})
    );
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
        t.sent[0].url.path(),
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
    let mut t = ScriptedTransport::new([response(200, r#"{"id":"7","properties":{"name":"Y"}}"#)]);
    run::<UpdateRecord>(
        &mut t,
        &["crm.objects.companies.write"],
        json!({"object_type": "companies", "record_id": "7", "properties": {"name": "Y"}}),
    )
    .unwrap();
    assert_eq!(
        (t.sent[0].method, t.sent[0].url.path()),
        (
            Method::Patch,
            "/sdk/proxy/hubspot/crm/v3/objects/companies/7"
        )
    );
    assert_eq!(body(&t, 0), json!({"properties": {"name": "Y"}}));
    let mut t = ScriptedTransport::new([response(200, r#"{"id":"1"}"#)]);
    run::<MergeCompanies>(
        &mut t,
        &["crm.objects.companies.write"],
        json!({"primary_id": "1", "merge_id": "2"}),
    )
    .unwrap();
    assert_eq!(
        t.sent[0].url.path(),
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
    assert_eq!(t.sent[0].url.path(), "/sdk/proxy/hubspot/crm/v3/owners");
    assert_eq!(t.sent[0].url.query(), Some("limit=50&archived=true"));
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
    assert_eq!(t.sent[0].url.query(), Some("limit=100&after=abc"));
    assert_eq!(out["results"][0]["role_ids"], json!(["3"]));
    assert!(out.get("next_cursor").is_none());
}
