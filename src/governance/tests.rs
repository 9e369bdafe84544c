//! The gate as a write tool meets it, natively: Salesforce's documented answers on a scripted
//! transport, and the in-memory journal standing in for the host's.

use crate::error::ToolError;
use crate::harness::{self, MemoryJournal};
use crate::http::Method;
use crate::retry::tests::{ScriptedTransport, response};
use serde_json::{Value, json};

const OPPORTUNITY: &str = "0065gA000000001ABA";

/// An Opportunity's fields as "Get field values from a standard object record" answers
/// (REST API Developer Guide), with who changed it last.
fn current(stage: &str) -> String {
    json!({"attributes": {"type": "Opportunity"}, "StageName": stage,
           "LastModifiedById": "005000000000001AAA"})
    .to_string()
}

fn update(stage: &str) -> Value {
    json!({"object": "Opportunity", "record_id": OPPORTUNITY, "fields": {"StageName": stage}})
}

fn with(mut input: Value, key: &str, value: Value) -> Value {
    input[key] = value;
    input
}

fn run(
    t: &mut ScriptedTransport,
    journal: &mut MemoryJournal,
    settings: &[(&'static str, &str)],
    tool: &str,
    input: Value,
) -> Result<Value, ToolError> {
    harness::call_with_journal(t, journal, &harness::config(settings), tool, &input)
}

#[test]
fn a_preview_reads_and_writes_nothing_and_its_token_writes_once() {
    let mut journal = MemoryJournal::default();
    let mut t = ScriptedTransport::new([response(200, &current("Prospecting"))]);
    let out = run(
        &mut t,
        &mut journal,
        &[],
        "crmb_update_record",
        with(update("Closed Won"), "preview", json!(true)),
    )
    .unwrap();
    let preview = &out["preview"];
    assert_eq!(
        preview["changes"]["StageName"],
        json!({"current": "Prospecting", "new": "Closed Won"})
    );
    assert_eq!(preview["request"]["method"], "PATCH");
    assert_eq!(
        preview["request"]["path"],
        format!("/sobjects/Opportunity/{OPPORTUNITY}")
    );
    assert_eq!(t.sent.len(), 1, "only the read");
    assert!(journal.changes.is_empty(), "nothing journalled");

    let token = preview["confirmation_token"].clone();
    let mut t = ScriptedTransport::new([response(200, &current("Prospecting")), response(204, "")]);
    let out = run(
        &mut t,
        &mut journal,
        &[],
        "crmb_update_record",
        with(update("Closed Won"), "confirmation_token", token.clone()),
    )
    .unwrap();
    assert_eq!(out["change_id"], "chg-1");
    assert_eq!(
        (t.sent[0].method(), t.sent[1].method()),
        (Method::Get, Method::Patch)
    );
    let change = &journal.changes[0];
    assert_eq!(change.entry.old_values["StageName"], "Prospecting");
    assert_eq!(change.entry.new_values["StageName"], "Closed Won");

    let mut t = ScriptedTransport::new([response(200, &current("Closed Won"))]);
    let err = run(
        &mut t,
        &mut journal,
        &[],
        "crmb_update_record",
        with(update("Closed Won"), "confirmation_token", token),
    )
    .unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidInput(m) if m.contains("already used")),
        "{err}"
    );
    assert!(
        t.sent.iter().all(|r| r.method() == Method::Get),
        "no second write"
    );
}

#[test]
fn the_policy_refuses_before_anything_is_written() {
    let mut journal = MemoryJournal::default();
    for (settings, needle) in [
        (
            &[("CRM_POLICY_READ_ONLY", "true")][..],
            "CRM_POLICY_READ_ONLY",
        ),
        (
            &[("CRM_POLICY_CRM_B_WRITABLE", "Task")][..],
            "writable: task",
        ),
        (
            &[("CRM_POLICY_NEVER_WRITTEN", "stagename")][..],
            "CRM_POLICY_NEVER_WRITTEN",
        ),
    ] {
        let mut t = ScriptedTransport::default();
        let err = run(
            &mut t,
            &mut journal,
            settings,
            "crmb_update_record",
            update("Closed Won"),
        )
        .unwrap_err();
        assert!(
            matches!(&err, ToolError::Forbidden(m) if m.contains(needle)),
            "{err}"
        );
        assert!(t.sent.is_empty(), "{needle}: nothing sent");
    }
    let mut t = ScriptedTransport::new([response(200, &current("Prospecting"))]);
    let err = run(
        &mut t,
        &mut journal,
        &[("CRM_POLICY_CONFIRM_WRITES", "true")],
        "crmb_update_record",
        update("Closed Won"),
    )
    .unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidInput(m) if m.contains("preview")),
        "{err}"
    );
    assert!(t.sent.iter().all(|r| r.method() == Method::Get));
    assert!(journal.changes.is_empty());
}

#[test]
fn a_create_carries_the_marker_and_is_never_reverted() {
    let mut journal = MemoryJournal::default();
    let mut t = ScriptedTransport::new([response(
        201,
        r#"{"id":"00T5gA000000009EBA","errors":[],"success":true}"#,
    )]);
    let settings = [("CRM_POLICY_CRM_B_PROVENANCE", "Made_By_Assistant__c")];
    let out = run(
        &mut t,
        &mut journal,
        &settings,
        "crmb_create_record",
        json!({"object": "Task", "fields": {"Subject": "Call"}}),
    )
    .unwrap();
    assert_eq!(
        harness::body(&t.sent[0]),
        json!({"Subject": "Call", "Made_By_Assistant__c": true})
    );
    assert_eq!(
        journal.changes[0].entry.record_id.as_deref(),
        Some("00T5gA000000009EBA")
    );
    let mut t = ScriptedTransport::default();
    let err = run(
        &mut t,
        &mut journal,
        &[],
        "crm_revert_change",
        json!({"change_id": out["change_id"]}),
    )
    .unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidInput(m) if m.contains("would delete it")),
        "{err}"
    );
    assert!(t.sent.is_empty());
}

#[test]
fn a_revert_writes_the_old_values_back_unless_they_moved_on() {
    let mut journal = MemoryJournal::default();
    let mut t = ScriptedTransport::new([response(200, &current("Prospecting")), response(204, "")]);
    let out = run(
        &mut t,
        &mut journal,
        &[],
        "crmb_update_record",
        update("Closed Won"),
    )
    .unwrap();
    let change = json!({"change_id": out["change_id"]});

    let mut t = ScriptedTransport::new([response(200, &current("Closed Lost"))]);
    let err = run(
        &mut t,
        &mut journal,
        &[],
        "crm_revert_change",
        change.clone(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidInput(m) if m.contains("StageName is \"Closed Lost\"") && m.contains("005000000000001AAA")),
        "{err}"
    );
    assert_eq!(t.sent.len(), 1, "only the read");

    let mut t = ScriptedTransport::new([
        response(200, &current("Closed Won")),
        response(200, &current("Closed Won")),
        response(204, ""),
    ]);
    let out = run(&mut t, &mut journal, &[], "crm_revert_change", change).unwrap();
    assert_eq!(out["restored"], json!({"StageName": "Prospecting"}));
    assert_eq!(
        harness::body(&t.sent[2]),
        json!({"StageName": "Prospecting"})
    );
    assert_eq!(journal.changes[1].entry.reverts.as_deref(), Some("chg-1"));
}

#[test]
fn masked_fields_are_refused_wherever_a_read_names_them() {
    let settings = [("CRM_POLICY_MASKED_FIELDS", "SSN__c")];
    let mut journal = MemoryJournal::default();
    for (tool, input) in [
        (
            "crmb_run_soql_query",
            json!({"query": "SELECT Id FROM Contact WHERE ssn__c LIKE '1%'"}),
        ),
        (
            "crmb_run_soql_query",
            json!({"query": "SELECT Account.SSN__c FROM Contact"}),
        ),
        (
            "crmb_get_record",
            json!({"object": "Contact", "record_id": "0035gA000000001ABA", "fields": ["SSN__c"]}),
        ),
    ] {
        let mut t = ScriptedTransport::default();
        let err = run(&mut t, &mut journal, &settings, tool, input).unwrap_err();
        assert!(
            matches!(&err, ToolError::Forbidden(m) if m.contains("CRM_POLICY_MASKED_FIELDS")),
            "{err}"
        );
        assert!(t.sent.is_empty());
    }
}

/// A HubSpot revert on a connection that may read but not write names the write scope and
/// sends nothing, not even the read before it.
#[test]
fn a_revert_checks_its_write_scope_before_any_request() {
    let mut journal = MemoryJournal::default();
    let config = harness::config(&[]);
    let update = json!({"object_type": "deals", "record_id": "7", "properties": {"amount": "20"}});
    let both = ["crm.objects.deals.read", "crm.objects.deals.write"];
    let mut t = ScriptedTransport::new([
        response(200, r#"{"id":"7","properties":{"amount":"10"}}"#),
        response(200, r#"{"id":"7","properties":{"amount":"20"}}"#),
    ]);
    let out = harness::call_with_journal_granted(
        &mut t,
        &mut journal,
        &config,
        &both,
        "crma_update_record",
        &update,
    )
    .unwrap();
    let mut t = ScriptedTransport::default();
    let err = harness::call_with_journal_granted(
        &mut t,
        &mut journal,
        &config,
        &["crm.objects.deals.read"],
        "crm_revert_change",
        &json!({"change_id": out["change_id"]}),
    )
    .unwrap_err();
    assert_eq!(
        err,
        ToolError::MissingScopes(vec!["crm.objects.deals.write".into()])
    );
    assert!(t.sent.is_empty(), "nothing sent");
}
