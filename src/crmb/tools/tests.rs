use super::*;
use crate::context::CallContext;
use crate::crmb::client::SERVED_VERSIONS;
use crate::harness;
use crate::http::Method;
use crate::retry::tests::{ScriptedTransport, response};
use serde_json::{Value, json};

fn ctx() -> CallContext {
    harness::ctx(&[], Some("https://acme.my.salesforce.com"))
}

fn run(
    transport: &mut ScriptedTransport,
    ctx: &CallContext,
    tool: &str,
    input: Value,
) -> Result<Value, ToolError> {
    harness::call(transport, ctx, &harness::config(&[]), tool, &input)
}

#[test]
fn generate_record_url_needs_no_request() {
    let mut t = ScriptedTransport::default();
    let out = run(
        &mut t,
        &ctx(),
        "crmb_generate_record_url",
        json!({"object": "Account", "record_id": "001000000000001AAA"}),
    )
    .unwrap();
    assert_eq!(
        out,
        json!({"url": "https://acme.lightning.force.com/lightning/r/Account/001000000000001AAA/view"})
    );
    assert!(t.sent.is_empty());
}

#[test]
fn an_id_of_another_object_is_refused_before_sending() {
    let mut t = ScriptedTransport::default();
    let err = run(
        &mut t,
        &ctx(),
        "crmb_get_record",
        json!({"object": "Account", "record_id": "003000000000001AAA"}),
    )
    .unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidInput(m) if m.contains("Contact id")),
        "{err:?}"
    );
    assert!(t.sent.is_empty());
}

#[test]
fn get_record_builds_the_request_and_maps_the_record() {
    let body = json!({
        "attributes": {"type": "Account", "url": "/services/data/v65.0/sobjects/Account/001000000000001AAA"},
        "Id": "001000000000001AAA", "Name": "Acme", "Industry": "Energy"
    });
    let mut t = ScriptedTransport::new([response(200, &body.to_string())]);
    let out = run(&mut t, &ctx(), "crmb_get_record", json!({"object": "Account", "record_id": "001000000000001AAA", "fields": ["Name", "Industry"]})).unwrap();
    let sent = &t.sent[0];
    assert_eq!(sent.method(), Method::Get);
    assert_eq!(
        sent.url().path(),
        "/sdk/proxy/salesforce/services/data/v65.0/sobjects/Account/001000000000001AAA"
    );
    assert_eq!(sent.url().query(), Some("fields=Name%2CIndustry"));
    assert_eq!(out["record"]["Name"], "Acme");
    assert!(out["record"].get("attributes").is_none());
    assert_eq!(
        out["record_url"],
        "https://acme.lightning.force.com/lightning/r/Account/001000000000001AAA/view"
    );
}

#[test]
fn get_record_errors_are_mapped() {
    let mut t = ScriptedTransport::new([
        response(
            404,
            r#"[{"errorCode":"NOT_FOUND","message":"The requested resource does not exist"}]"#,
        ),
        response(200, SERVED_VERSIONS),
    ]);
    let err = run(
        &mut t,
        &ctx(),
        "crmb_get_record",
        json!({"object": "Account", "record_id": "001000000000001AAA"}),
    )
    .unwrap_err();
    assert!(
        matches!(&err, ToolError::NotFound(m) if m.contains("Account record 001000000000001AAA")),
        "{err:?}"
    );
    let mut t = ScriptedTransport::new([response(200, "[1,2]")]);
    let err = run(
        &mut t,
        &ctx(),
        "crmb_get_record",
        json!({"object": "Account", "record_id": "001000000000001AAA"}),
    )
    .unwrap_err();
    assert!(matches!(err, ToolError::CrmError(_)));
}

#[test]
fn bad_ids_names_and_fields_send_nothing() {
    for input in [
        json!({"object": "Account", "record_id": "001000000000001AAB"}),
        json!({"object": "Account/../User", "record_id": "001000000000001AAA"}),
        json!({"object": "Account", "record_id": "001000000000001AAA", "fields": ["Name; DROP"]}),
        json!({"object": "Account", "record_id": "001000000000001AAA", "fields": []}),
        json!({"object": "Account"}),
    ] {
        let mut t = ScriptedTransport::default();
        let err = run(&mut t, &ctx(), "crmb_get_record", input.clone()).unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidInput(_)),
            "{input}: {err:?}"
        );
        assert!(t.sent.is_empty());
    }
}

#[test]
fn create_posts_the_field_map_once_and_returns_id_and_link() {
    let mut t = ScriptedTransport::new([response(
        201,
        r#"{"id":"0015gA000000009ABA","success":true,"errors":[]}"#,
    )]);
    let out = run(
        &mut t,
        &ctx(),
        "crmb_create_record",
        json!({"object": "Account", "fields": {"Name": "Initech", "NumberOfEmployees": 250}}),
    )
    .unwrap();
    assert_eq!(out["id"], "0015gA000000009ABA");
    assert_eq!(
        out["record_url"],
        "https://acme.lightning.force.com/lightning/r/Account/0015gA000000009ABA/view"
    );
    let sent = &t.sent[0];
    assert_eq!(
        (sent.method(), sent.url().path()),
        (
            Method::Post,
            "/sdk/proxy/salesforce/services/data/v65.0/sobjects/Account"
        )
    );
    let body: Value = serde_json::from_slice(sent.body().unwrap()).unwrap();
    assert_eq!(body, json!({"Name": "Initech", "NumberOfEmployees": 250}));
}

#[test]
fn a_create_with_an_unknown_outcome_is_not_retried() {
    let mut t = ScriptedTransport::new([response(503, "")]);
    let err = run(
        &mut t,
        &ctx(),
        "crmb_create_record",
        json!({"object": "Task", "fields": {"Subject": "Call"}}),
    )
    .unwrap_err();
    assert!(matches!(err, ToolError::OutcomeUnknown(_)), "{err:?}");
    assert_eq!(t.sent.len(), 1);
    let mut t = ScriptedTransport::new([response(201, "not json")]);
    let err = run(
        &mut t,
        &ctx(),
        "crmb_create_record",
        json!({"object": "Task", "fields": {"Subject": "Call"}}),
    )
    .unwrap_err();
    assert!(
        matches!(err, ToolError::OutcomeUnknown(_)),
        "a create whose answer cannot be read: {err:?}"
    );
}

#[test]
fn create_rejections_keep_the_fields() {
    let mut t = ScriptedTransport::new([response(
        400,
        r#"[{"message":"Required fields are missing: [StageName]","errorCode":"REQUIRED_FIELD_MISSING","fields":["StageName"]}]"#,
    )]);
    let err = run(
        &mut t,
        &ctx(),
        "crmb_create_record",
        json!({"object": "Opportunity", "fields": {"Name": "X"}}),
    )
    .unwrap_err();
    assert!(
        matches!(&err, ToolError::CrmError(p) if p.fields.contains(&"StageName".to_string()) && p.codes.contains(&"REQUIRED_FIELD_MISSING".to_string())),
        "{err:?}"
    );
}

#[test]
fn update_patches_and_treats_204_as_success() {
    // The values the update overwrites are read first, for the change journal.
    let mut t = ScriptedTransport::new([response(200, CURRENT), response(204, "")]);
    let out = run(&mut t, &ctx(), "crmb_update_record", json!({"object": "Opportunity", "record_id": "006000000000001", "fields": {"StageName": "Closed Won"}})).unwrap();
    assert_eq!(
        out["record_url"],
        "https://acme.lightning.force.com/lightning/r/Opportunity/006000000000001/view"
    );
    assert_eq!(t.sent[0].method(), Method::Get);
    assert_eq!(
        t.sent[0].url().query(),
        Some("fields=StageName%2CLastModifiedById")
    );
    assert_eq!(t.sent[1].method(), Method::Patch);
    assert_eq!(
        t.sent[1].url().path(),
        "/sdk/proxy/salesforce/services/data/v65.0/sobjects/Opportunity/006000000000001"
    );
    let mut t = ScriptedTransport::default();
    let err = run(&mut t, &ctx(), "crmb_update_record", json!({"object": "Opportunity", "record_id": "006000000000001", "fields": {"Stage": {"a": 1}}})).unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput(_)));
    assert!(t.sent.is_empty());
}

#[test]
fn object_fields_are_compact_and_filtered() {
    let describe = json!({"name": "Account", "label": "Account", "labelPlural": "Accounts", "keyPrefix": "001", "queryable": true, "createable": true, "updateable": true,
    "fields": [
        {"name": "Name", "label": "Account Name", "type": "string", "length": 255, "nillable": false, "createable": true, "updateable": true},
        {"name": "Tier__c", "label": "Tier", "type": "picklist", "length": 255, "nillable": true, "createable": true, "updateable": true, "custom": true,
         "picklistValues": [{"value": "Gold", "active": true}, {"value": "Tin", "active": false}]}
    ]});
    let mut t = ScriptedTransport::new([response(200, &describe.to_string())]);
    let out = run(
        &mut t,
        &ctx(),
        "crmb_get_object_fields",
        json!({"object": "Account", "custom_only": true}),
    )
    .unwrap();
    assert_eq!(
        t.sent[0].url().path(),
        "/sdk/proxy/salesforce/services/data/v65.0/sobjects/Account/describe"
    );
    assert_eq!(out["object"], "Account");
    assert_eq!(
        out["fields"],
        json!([{"name": "Tier__c", "label": "Tier", "type": "picklist", "picklist_values": ["Gold"], "required_on_create": false, "createable": true, "updateable": true, "custom": true, "length": 255}])
    );
    let mut t = ScriptedTransport::new([
        response(
            404,
            r#"[{"errorCode":"NOT_FOUND","message":"The requested resource does not exist"}]"#,
        ),
        response(200, SERVED_VERSIONS),
    ]);
    let err = run(
        &mut t,
        &ctx(),
        "crmb_get_object_fields",
        json!({"object": "Nope__c"}),
    )
    .unwrap_err();
    assert!(matches!(&err, ToolError::NotFound(m) if m.contains("Nope__c")));
}

/// An Opportunity's current values as "Get field values from a standard object record" shows
/// them (REST API Developer Guide).
const CURRENT: &str = r#"{"attributes":{"type":"Opportunity"},"StageName":"Prospecting","LastModifiedById":"005000000000001AAA"}"#;

/// The create answer as the REST API Developer Guide shows it ("Create a Record").
const CREATED: &str = r#"{"id":"001D000000IqhSLIAZ","errors":[],"success":true}"#;

/// The whole answers of create and update: id, object and link, plus a warning only when the
/// new id could not be kept locally; a link Salesforce's org URL cannot give is null, not absent.
#[test]
fn create_and_update_answer_id_object_and_link() {
    let input = json!({"object": "Account", "fields": {"Name": "Acme"}});
    let mut t = ScriptedTransport::new([response(201, CREATED)]);
    let mut store = crate::mapping::MemoryStore::default();
    let config = harness::config(&[]);
    let out = harness::call_with_store(
        &mut t,
        &mut store,
        &ctx(),
        &config,
        "crmb_create_record",
        &input,
    )
    .unwrap();
    assert_eq!(
        out,
        json!({"id": "001D000000IqhSLIAZ", "object": "Account", "change_id": "chg-1",
               "record_url": "https://acme.lightning.force.com/lightning/r/Account/001D000000IqhSLIAZ/view"})
    );
    assert_eq!(store.created[0].record_id, "001D000000IqhSLIAZ");

    let mut t = ScriptedTransport::new([response(201, CREATED)]);
    let out = run(&mut t, &ctx(), "crmb_create_record", input).unwrap();
    assert_eq!(out["id"], "001D000000IqhSLIAZ");
    assert!(
        out["warning"].as_str().unwrap().contains("was created"),
        "{out}"
    );

    let no_org_url = harness::ctx(&[], None);
    let mut t = ScriptedTransport::new([response(200, CURRENT), response(204, "")]);
    let out = run(
        &mut t,
        &no_org_url,
        "crmb_update_record",
        json!({"object": "Opportunity", "record_id": "006000000000001", "fields": {"StageName": "Closed Won"}}),
    )
    .unwrap();
    assert_eq!(
        out,
        json!({"id": "006000000000001", "object": "Opportunity", "record_url": null, "updated": true,
               "change_id": "chg-1"})
    );
}

/// A create answer that lost its `id`, spells it `Id`, or carries something that is no record
/// id cannot say which record now exists: the outcome is unknown, with the reason, and the
/// create is not sent again.
#[test]
fn a_create_answer_without_a_readable_id_says_why_the_outcome_is_unknown() {
    for (answer, why) in [
        // No `id` at all: the journal keeps the create unknown until it is resolved.
        (
            r#"{"Id":"001D000000IqhSLIAZ","errors":[],"success":true}"#,
            "call crm_resolve_change",
        ),
        (r#"{"errors":[],"success":true}"#, "call crm_resolve_change"),
        (
            r#"{"id":"001D000000IqhSLIAA","errors":[],"success":true}"#,
            "do not match the checksum",
        ),
    ] {
        let mut t = ScriptedTransport::new([response(201, answer)]);
        let err = run(
            &mut t,
            &ctx(),
            "crmb_create_record",
            json!({"object": "Account", "fields": {"Name": "Acme"}}),
        )
        .unwrap_err();
        assert!(
            matches!(&err, ToolError::OutcomeUnknown(m) if m.contains(why) && m.contains("before creating it again")),
            "{answer}: {err:?}"
        );
        assert_eq!(t.sent.len(), 1);
    }
}

/// A record fetched where the org's URL is not known: the record, and a null link.
#[test]
fn get_record_without_an_org_url_has_a_null_link() {
    let body = json!({
        "attributes": {"type": "Account", "url": "/services/data/v65.0/sobjects/Account/001000000000001AAA"},
        "Id": "001000000000001AAA", "Name": "Acme"
    });
    let mut t = ScriptedTransport::new([response(200, &body.to_string())]);
    let out = run(
        &mut t,
        &harness::ctx(&[], None),
        "crmb_get_record",
        json!({"object": "Account", "record_id": "001000000000001AAA"}),
    )
    .unwrap();
    assert_eq!(
        out,
        json!({"record": {"Id": "001000000000001AAA", "Name": "Acme"}, "record_url": null})
    );
}
