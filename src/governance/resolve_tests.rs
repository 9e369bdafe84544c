//! `crm_resolve_change` reads the whole window of records created since the write before it
//! says "failed" (issue 37): on scripted CRM answers that put non-matching records first.

use crate::error::{Crm, ToolError};
use crate::harness::{self, MemoryJournal};
use crate::journal::{Change, ChangeEntry, ChangeKind, ChangeStatus};
use crate::retry::tests::{ScriptedTransport, response};
use serde_json::{Map, Value, json};

/// A journal holding one create of `object` with `values` whose outcome is unknown.
fn unknown_create(crm: Crm, object: &str, values: Value) -> MemoryJournal {
    let mut journal = MemoryJournal::default();
    journal.changes.push(Change {
        id: "chg-1".into(),
        at_ms: 0,
        user_id: "u1".into(),
        call_id: "call-1".into(),
        status: ChangeStatus::Unknown,
        entry: ChangeEntry {
            crm,
            tool: "create".into(),
            kind: ChangeKind::Create,
            object: object.into(),
            record_id: None,
            old_values: Map::new(),
            new_values: values.as_object().unwrap().clone(),
            reverts: None,
        },
    });
    journal
}

fn resolve(t: &mut ScriptedTransport, journal: &mut MemoryJournal) -> Result<Value, ToolError> {
    harness::call_with_journal_granted(
        t,
        journal,
        &harness::config(&[]),
        &["crm.objects.deals.read"],
        "crm_resolve_change",
        &json!({"change_id": "chg-1"}),
    )
}

/// A page of HubSpot's search answer ("Search the CRM",
/// <https://developers.hubspot.com/docs/api-reference/search/guide>): `total`, `results` and,
/// while more remain, `paging.next.after`.
fn hubspot_page(
    ids: std::ops::Range<u32>,
    name: impl Fn(u32) -> String,
    after: Option<u32>,
) -> String {
    let results: Vec<Value> = ids
        .map(|i| {
            json!({"id": i.to_string(), "properties": {"dealname": name(i), "amount": "1200"},
                   "createdAt": "2026-11-21T09:00:00Z", "updatedAt": "2026-11-21T09:00:00Z",
                   "archived": false})
        })
        .collect();
    let mut page = json!({"total": 180, "results": results});
    if let Some(after) = after {
        page["paging"] = json!({"next": {"after": after.to_string()}});
    }
    page.to_string()
}

#[test]
fn hubspot_the_create_on_the_second_page_is_found_not_failed() {
    let mut journal = unknown_create(
        Crm::Hubspot,
        "deals",
        json!({"dealname": "Renewal Q3", "amount": 1200}),
    );
    let other = |i| format!("Other deal {i}");
    let mut t = ScriptedTransport::new([
        response(200, &hubspot_page(1..101, other, Some(100))),
        response(
            200,
            &hubspot_page(
                101..181,
                |i| {
                    if i == 170 {
                        "Renewal Q3".into()
                    } else {
                        other(i)
                    }
                },
                None,
            ),
        ),
    ]);
    let out = resolve(&mut t, &mut journal).unwrap();
    assert_eq!(out["outcome"], "applied", "{out}");
    assert_eq!(out["record_id"], "170");
    assert_eq!(t.sent.len(), 2, "page 2 was asked for");
    assert_eq!(harness::body(&t.sent[1])["after"], "100");
    assert_eq!(journal.changes[0].status, ChangeStatus::Applied);
}

#[test]
fn hubspot_failed_only_when_every_page_was_read_without_a_match() {
    let mut journal = unknown_create(Crm::Hubspot, "deals", json!({"dealname": "Renewal Q3"}));
    let other = |i| format!("Other deal {i}");
    let mut t = ScriptedTransport::new([
        response(200, &hubspot_page(1..101, other, Some(100))),
        response(200, &hubspot_page(101..181, other, None)),
    ]);
    let out = resolve(&mut t, &mut journal).unwrap();
    assert_eq!(out["outcome"], "failed", "{out}");
    assert_eq!(journal.changes[0].status, ChangeStatus::Failed);
}

#[test]
fn past_the_lookup_budget_the_outcome_stays_unknown_never_failed() {
    let mut journal = unknown_create(Crm::Hubspot, "deals", json!({"dealname": "Renewal Q3"}));
    let pages = crate::governance::crm::LOOKUP_BUDGET as u32 / 100;
    let mut t = ScriptedTransport::new((0..pages).map(|p| {
        let ids = p * 100 + 1..p * 100 + 101;
        response(
            200,
            &hubspot_page(ids, |i| format!("Other {i}"), Some(p * 100 + 100)),
        )
    }));
    let err = resolve(&mut t, &mut journal).unwrap_err();
    assert!(
        matches!(&err, ToolError::Unavailable(m) if m.contains("still unknown")),
        "{err}"
    );
    assert_eq!(journal.changes[0].status, ChangeStatus::Unknown);
}

/// A Salesforce query answer ("Execute a SOQL Query",
/// <https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_query.htm>)
/// of Accounts created a second apart, newest first.
fn salesforce_page(rows: std::ops::Range<u32>, name: impl Fn(u32) -> String) -> String {
    let records: Vec<Value> = rows
        .map(|i| {
            let at = crate::time::iso_utc(1_795_250_000_000 - u64::from(i) * 1000);
            json!({"attributes": {"type": "Account"}, "Id": format!("001000000000{i:03}AAA"),
                   "CreatedDate": at.replace('Z', "+0000"), "Name": name(i)})
        })
        .collect();
    json!({"totalSize": records.len(), "done": true, "records": records}).to_string()
}

#[test]
fn salesforce_reads_past_the_first_page_by_created_date_and_id() {
    let mut journal = unknown_create(
        Crm::Salesforce,
        "Account",
        json!({"Name": "Globex Renewal"}),
    );
    let other = |i| format!("Other {i}");
    let mut t = ScriptedTransport::new([
        response(200, &salesforce_page(0..100, other)),
        response(
            200,
            &salesforce_page(100..130, |i| {
                if i == 120 {
                    "Globex Renewal".into()
                } else {
                    other(i)
                }
            }),
        ),
    ]);
    let out = resolve(&mut t, &mut journal).unwrap();
    assert_eq!(out["outcome"], "applied", "{out}");
    assert_eq!(out["record_id"], "001000000000120AAA");
    let second = t.sent[1]
        .url()
        .query_pairs()
        .find(|(k, _)| k == "q")
        .unwrap()
        .1;
    assert!(
        second.contains("CreatedDate <") && second.contains("Id < '001000000000099AAA'"),
        "{second}"
    );
    assert!(
        second.contains("ORDER BY CreatedDate DESC, Id DESC"),
        "{second}"
    );
}

/// A create journalled but not settled: being made now, or its host died mid-way.
fn pending_create() -> MemoryJournal {
    let mut journal = unknown_create(
        Crm::Salesforce,
        "Account",
        json!({"Name": "Globex Renewal"}),
    );
    journal.changes[0].status = ChangeStatus::Pending;
    journal
}

#[test]
fn the_same_create_while_one_is_pending_is_refused_with_nothing_sent() {
    let mut journal = pending_create();
    let mut t = ScriptedTransport::new([]);
    let err = harness::call_with_journal(
        &mut t,
        &mut journal,
        &harness::config(&[]),
        "crmb_create_record",
        &json!({"object": "Account", "fields": {"Name": "Globex Renewal"}}),
    )
    .unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidInput(m) if m.contains("being made right now") && m.contains("chg-1")),
        "{err}"
    );
    assert!(t.sent.is_empty(), "nothing was sent");
    assert_eq!(journal.changes.len(), 1, "nothing new was journalled");
}

#[test]
fn a_pending_create_is_not_resolved_yet_and_says_when_it_can_be() {
    let mut journal = pending_create();
    let mut t = ScriptedTransport::new([]);
    let err = resolve(&mut t, &mut journal).unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidInput(m) if m.contains("still being written") && m.contains("turns unknown")),
        "{err}"
    );
    assert!(t.sent.is_empty());
}
