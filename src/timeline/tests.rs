//! The merge and cursor as pure functions, and the tool against answers shaped as the vendors
//! document them: HubSpot's search answer (page cited on `SearchAnswer`) for each activity
//! type, Salesforce's query answer ("Execute a SOQL query", REST API Developer Guide) with the
//! `Owner` relationship nested as `{"attributes": ..., "Name": ...}`.

use super::*;
use crate::harness;
use crate::http::{Request, Response, Transport, TransportError};
use crate::retry::tests::response;
use serde_json::{Value, json};
use std::time::Duration;

fn item(kind: &'static str, id: &str, millis: u64) -> Item {
    Item {
        kind,
        id: id.into(),
        time: crate::time::iso_utc(millis),
        subject: None,
        preview: None,
        owner: None,
        status: None,
        url: None,
        millis,
    }
}

fn ids(items: &[Item]) -> Vec<&str> {
    items.iter().map(|i| i.id.as_str()).collect()
}

#[test]
fn pages_of_the_merged_list_never_repeat_or_skip_an_item() {
    // Two sources, with ties at 500 across them.
    let notes = vec![
        item("note", "1", 900),
        item("note", "2", 500),
        item("note", "3", 100),
    ];
    let calls = vec![
        item("call", "7", 700),
        item("call", "8", 500),
        item("call", "9", 500),
    ];
    let all = |cursor: Option<&Cursor>, want: usize| {
        let pick = |list: &Vec<Item>| {
            let mut mine: Vec<Item> = list
                .iter()
                .filter(|i| cursor.is_none_or(|c| i.millis <= c.before))
                .cloned()
                .collect();
            mine.truncate(want);
            Fetched {
                full: mine.len() >= want,
                items: mine,
            }
        };
        vec![pick(&notes), pick(&calls)]
    };
    let mut seen = Vec::new();
    let mut cursor: Option<Cursor> = None;
    for _ in 0..10 {
        let want = 2 + cursor.as_ref().map_or(0, |c| c.seen.len());
        let (page, next) = merge(all(cursor.as_ref(), want), cursor.as_ref(), 2);
        seen.extend(ids(&page).into_iter().map(str::to_string));
        match next {
            Some(next) => {
                let text = next.encode();
                assert_eq!(Cursor::decode(&text).unwrap(), next);
                cursor = Some(next);
            }
            None => break,
        }
    }
    assert_eq!(
        seen,
        ["1", "7", "9", "8", "2", "3"],
        "newest first, ties by type then id"
    );
}

#[test]
fn a_cursor_not_handed_out_is_refused_and_previews_are_short_plain_text() {
    for bad in ["", "soon", "12~", "12~a b", "12~<script>"] {
        assert!(Cursor::decode(bad).is_err(), "{bad:?}");
    }
    assert_eq!(
        preview(
            "<p>Kick-off&nbsp;went <b>well</b> &amp; fast</p>\n\n",
            Markup::Html
        )
        .as_deref(),
        Some("Kick-off went well & fast")
    );
}

/// A HubSpot portal with a note and a call on contact 51, and Salesforce with one Task and
/// one Event on a contact.
#[derive(Default)]
struct Crms {
    paths: Vec<String>,
    bodies: Vec<Value>,
    queries: Vec<String>,
}

impl Transport for Crms {
    fn send(&mut self, request: &Request) -> Result<Response, TransportError> {
        let url = request.url();
        let path = url.path().to_string();
        self.paths.push(path.clone());
        let answer = if path.ends_with("/search") {
            let body = harness::body(request);
            self.bodies.push(body.clone());
            let object = path.rsplit('/').nth(1).unwrap();
            let results = match object {
                "notes" => {
                    json!([{"id": "11", "properties": {"hs_timestamp": "2026-11-10T15:00:00Z",
                    "hs_note_body": "<p>Kick-off went well</p>", "hubspot_owner_id": "101"},
                    "createdAt": "2026-11-10T15:00:00Z", "updatedAt": "2026-11-10T15:00:00Z"}])
                }
                "calls" => {
                    json!([{"id": "12", "properties": {"hs_timestamp": "2026-11-18T16:30:00.000Z",
                    "hs_call_title": "Pricing call", "hs_call_body": "Asked for options",
                    "hubspot_owner_id": "202"},
                    "createdAt": "2026-11-18T16:30:00Z", "updatedAt": "2026-11-18T16:30:00Z"}])
                }
                _ => json!([]),
            };
            json!({"total": results.as_array().unwrap().len(), "results": results})
        } else if path.ends_with("/owners") {
            json!({"results": [{"id": "101", "firstName": "Ana", "lastName": "Ruiz"}]})
        } else if path.ends_with("/account-info/v3/details") {
            json!({"portalId": 62515, "uiDomain": "app.hubspot.com"})
        } else if path.ends_with("/queryAll") {
            // Only `queryAll` answers a record's archived Tasks and Events ("QueryAll", REST API
            // Developer Guide); a timeline read through `/query` would lose them unsaid.
            let q = url
                .query_pairs()
                .find(|(k, _)| k == "q")
                .map(|(_, v)| v.into_owned())
                .unwrap();
            self.queries.push(q.clone());
            if q.contains("FROM Task") {
                json!({"totalSize": 1, "done": true, "records": [{"attributes": {"type": "Task"},
                    "Id": "00T5gA000000001EBA", "CreatedDate": "2026-11-19T15:00:00.000+0000",
                    "Subject": "Send revised quote", "Description": null, "Status": "Not Started",
                    "Owner": {"attributes": {"type": "User"}, "Name": "Dana Whitfield"}}]})
            } else {
                json!({"totalSize": 1, "done": true, "records": [{"attributes": {"type": "Event"},
                    "Id": "00U5gA000000001EBA", "StartDateTime": "2026-11-24T15:00:00.000+0000",
                    "Subject": "Renewal meeting", "Description": "Bring the\n\nthree options",
                    "Owner": {"attributes": {"type": "User"}, "Name": "Dana Whitfield"}}]})
            }
        } else {
            panic!("unexpected {path}")
        };
        response(200, &answer.to_string())
    }
    fn sleep(&mut self, _: Duration) {}
    fn now_unix_millis(&mut self) -> u64 {
        1_795_253_400_000
    }
}

fn timeline(crms: &mut Crms, scopes: &[&str], input: Value) -> Result<Value, ToolError> {
    harness::call(
        crms,
        &harness::ctx(scopes, Some("https://acme.my.salesforce.com")),
        &harness::config(&[]),
        "crm_record_timeline",
        &input,
    )
}

const HUBSPOT: &[&str] = &[
    "timeline",
    "crm.objects.contacts.read",
    "crm.objects.owners.read",
    "oauth",
];

#[test]
fn a_hubspot_contacts_activities_newest_first_with_owners_and_links() {
    let mut crms = Crms::default();
    let out = timeline(
        &mut crms,
        HUBSPOT,
        json!({"crm": "hubspot", "object_type": "contacts", "record_id": "51"}),
    )
    .unwrap();
    let items = out["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{out}");
    assert_eq!(items[0]["type"], "call");
    assert_eq!(items[0]["subject"], "Pricing call");
    assert_eq!(
        items[0]["owner"], "202",
        "an owner without a name keeps the id"
    );
    assert_eq!(items[1]["type"], "note");
    assert_eq!(items[1]["preview"], "Kick-off went well");
    assert_eq!(items[1]["owner"], "Ana Ruiz");
    assert_eq!(items[1]["time"], "2026-11-10T15:00:00.000Z");
    assert_eq!(
        items[1]["url"],
        "https://app.hubspot.com/contacts/62515/record/0-1/51"
    );
    assert!(
        out.get("next_cursor").is_none() && out.get("left_out").is_none(),
        "{out}"
    );
    // One search per type, filtered on the association, newest first.
    assert_eq!(crms.bodies.len(), 5);
    for body in &crms.bodies {
        assert_eq!(
            body["filterGroups"][0]["filters"][0],
            json!({"propertyName": "associations.contact", "operator": "EQ", "value": "51"})
        );
        assert_eq!(
            body["sorts"][0],
            json!({"propertyName": "hs_timestamp", "direction": "DESCENDING"})
        );
    }
}

/// With the portal in the tenant's settings, the link costs no request for account details.
#[test]
fn a_configured_portal_links_without_asking_for_the_account() {
    let mut crms = Crms::default();
    let out = harness::call(
        &mut crms,
        &harness::ctx(HUBSPOT, Some("https://acme.my.salesforce.com")),
        &harness::config(&[
            (crate::config::keys::CRM_A_PORTAL_ID, "777"),
            (crate::config::keys::CRM_A_UI_DOMAIN, "app-eu1.hubspot.com"),
        ]),
        "crm_record_timeline",
        &json!({"crm": "hubspot", "object_type": "contacts", "record_id": "51"}),
    )
    .unwrap();
    assert_eq!(
        out["items"][1]["url"],
        "https://app-eu1.hubspot.com/contacts/777/record/0-1/51"
    );
    assert!(
        !crms
            .paths
            .iter()
            .any(|p| p.ends_with("/account-info/v3/details")),
        "{:?}",
        crms.paths
    );
}

#[test]
fn without_the_timeline_scope_nothing_is_sent_and_without_a_types_scope_it_is_named() {
    let mut crms = Crms::default();
    let err = timeline(
        &mut crms,
        &["crm.objects.contacts.read"],
        json!({"crm": "hubspot", "object_type": "deals", "record_id": "5"}),
    )
    .unwrap_err();
    assert!(
        matches!(&err, ToolError::MissingScopes(s) if s == &["timeline"]),
        "{err}"
    );
    assert!(crms.paths.is_empty());

    // Emails are readable with sales-email-read alone: the other four types are left out.
    let mut crms = Crms::default();
    let out = timeline(
        &mut crms,
        &["timeline", "sales-email-read"],
        json!({"crm": "hubspot", "object_type": "deals", "record_id": "5"}),
    )
    .unwrap();
    let left: Vec<&str> = out["left_out"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["type"].as_str().unwrap())
        .collect();
    assert_eq!(left, ["note", "call", "meeting", "task"]);
    assert!(
        out["left_out"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("crm.objects.contacts.read")
    );
    assert_eq!(crms.bodies.len(), 1, "only emails are searched");
}

#[test]
fn a_salesforce_records_tasks_and_events_merged_with_links() {
    let mut crms = Crms::default();
    let out = timeline(
        &mut crms,
        &[],
        json!({"crm": "salesforce", "record_id": "0035gA000000001ABA", "limit": 5}),
    )
    .unwrap();
    let items = out["items"].as_array().unwrap();
    let kinds: Vec<&str> = items.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["event", "task"]);
    assert_eq!(items[0]["preview"], "Bring the three options");
    assert_eq!(items[1]["owner"], "Dana Whitfield");
    assert_eq!(items[1]["status"], "Not Started");
    assert_eq!(
        items[1]["url"],
        "https://acme.lightning.force.com/lightning/r/Task/00T5gA000000001EBA/view"
    );
    assert_eq!(
        crms.queries[0],
        "SELECT Id, CreatedDate, Subject, Description, Owner.Name, Status FROM Task WHERE \
         (WhoId = '0035gA000000001ABA' OR WhatId = '0035gA000000001ABA') AND IsDeleted = false \
         ORDER BY CreatedDate DESC LIMIT 5"
    );
    // The next page asks for what is at or before the last item shown.
    let mut crms = Crms::default();
    let _ = timeline(
        &mut crms,
        &[],
        json!({"crm": "salesforce", "record_id": "0035gA000000001ABA", "limit": 1}),
    )
    .unwrap();
    let out = timeline(
        &mut crms,
        &[],
        json!({"crm": "salesforce", "record_id": "0035gA000000001ABA", "limit": 1,
               "cursor": "1795000000000~00U5gA000000001EBA"}),
    )
    .unwrap();
    assert!(
        crms.queries[2].contains("AND CreatedDate <= 2026-11-18T"),
        "{}",
        crms.queries[2]
    );
    assert!(out["items"].is_array());
}

#[test]
fn a_record_named_wrongly_is_refused_before_anything_is_sent() {
    for (input, expected) in [
        (
            json!({"crm": "hubspot", "record_id": "51"}),
            "give object_type",
        ),
        (
            json!({"crm": "hubspot", "object_type": "notes", "record_id": "51"}),
            "not notes",
        ),
        (
            json!({"crm": "hubspot", "object_type": "contacts", "record_id": "x1"}),
            "",
        ),
        (json!({"crm": "salesforce", "record_id": "0035gA"}), ""),
        (
            json!({"crm": "salesforce", "object_type": "contacts", "record_id": "0035gA000000001ABA"}),
            "object_type is for HubSpot",
        ),
        (
            json!({"crm": "salesforce", "record_id": "0035gA000000001ABA", "limit": 500}),
            "limit",
        ),
        (
            json!({"crm": "salesforce", "record_id": "0035gA000000001ABA", "cursor": "later"}),
            "cursor",
        ),
    ] {
        let mut crms = Crms::default();
        let err = timeline(&mut crms, HUBSPOT, input.clone()).unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidInput(_)) && err.to_string().contains(expected),
            "{input}: {err}"
        );
        assert!(crms.paths.is_empty(), "{input}");
    }
}

#[test]
fn more_items_at_one_time_than_a_cursor_can_name_step_over_and_say_so() {
    // 200 Tasks bulk-loaded in one second, paged 50 at a time.
    let tasks: Vec<Item> = (0..200)
        .map(|n| item("task", &format!("00T{n:015}"), 5_000))
        .collect();
    let older = item("task", "00T999999999999999", 1_000);
    let fetch = |cursor: Option<&Cursor>, want: usize| {
        let mut mine: Vec<Item> = tasks
            .iter()
            .chain([&older])
            .filter(|i| cursor.is_none_or(|c| i.millis <= c.before))
            .cloned()
            .collect();
        mine.sort_by(|a, b| b.millis.cmp(&a.millis).then_with(|| b.id.cmp(&a.id)));
        mine.truncate(want);
        vec![Fetched {
            full: mine.len() >= want,
            items: mine,
        }]
    };
    let mut cursor: Option<Cursor> = None;
    let mut pages = 0;
    let mut shown = Vec::new();
    let mut stepped = false;
    loop {
        let want = 50 + cursor.as_ref().map_or(0, |c| c.seen.len());
        assert!(
            want <= 200,
            "a source is never asked for more than HubSpot's page"
        );
        let (page, next) = merge(fetch(cursor.as_ref(), want), cursor.as_ref(), 50);
        shown.extend(page.iter().map(|i| i.id.clone()));
        pages += 1;
        stepped |= stepped_over(&page, next.as_ref()).is_some();
        match next {
            Some(next) => {
                let text = next.encode();
                assert_eq!(Cursor::decode(&text).unwrap(), next, "every cursor decodes");
                cursor = Some(next);
            }
            None => break,
        }
        assert!(pages < 10);
    }
    assert!(stepped, "the step over is said");
    assert_eq!(
        shown.last().unwrap(),
        "00T999999999999999",
        "the older item still comes"
    );
    let distinct: std::collections::BTreeSet<_> = shown.iter().collect();
    assert_eq!(distinct.len(), shown.len(), "nothing repeats");
}
