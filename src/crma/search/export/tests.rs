use super::*;
use crate::config::keys;
use crate::crma::search::FilterGroup;
use crate::crma::search::keyset::pause_before;
use crate::crma::search::plan::PACE;
use crate::crma::types::{ObjectType, PropertyName};
use crate::harness;
use crate::http::{Request, Response, Transport, TransportError};
use crate::retry::tests::{ScriptedTransport, response};
use serde_json::Value;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

const READ: &[&str] = &["crm.objects.contacts.read"];

fn groups(value: Value) -> Vec<FilterGroup> {
    serde_json::from_value(value).unwrap()
}

fn plan(filter_groups: Value) -> ExportPlan {
    ExportPlan::new(
        ObjectType::Contacts,
        groups(filter_groups),
        &[],
        None,
        vec![PropertyName::parse("email").unwrap()],
        None,
        None,
    )
    .unwrap()
}

/// The request bodies are HubSpot's search request
/// (<https://developers.hubspot.com/docs/api/crm/search>): the first asks for the first 200
/// matches in `hs_object_id` order; each next one adds `hs_object_id GT <last id>` to every
/// filter group (filters in a group are ANDed) and never carries `after`.
#[test]
fn the_first_request_and_the_next_are_keyset_pages_of_two_hundred() {
    let plan = plan(json!([
        {"filters": [{"property": "lifecyclestage", "operator": "EQ", "value": "customer"}]},
        {"filters": [{"property": "email", "operator": "CONTAINS_TOKEN", "value": "*@acme.com"},
                     {"property": "hs_object_id", "operator": "LT", "value": 900000}]}
    ]));
    assert_eq!(
        plan.body(None).unwrap(),
        json!({
            "filterGroups": [
                {"filters": [{"propertyName": "lifecyclestage", "operator": "EQ", "value": "customer"}]},
                {"filters": [{"propertyName": "email", "operator": "CONTAINS_TOKEN", "value": "*@acme.com"},
                             {"propertyName": "hs_object_id", "operator": "LT", "value": "900000"}]}
            ],
            "sorts": [{"propertyName": "hs_object_id", "direction": "ASCENDING"}],
            "properties": ["email"],
            "limit": 200
        })
    );
    let next = plan.body(Some(512)).unwrap();
    let above = json!({"propertyName": "hs_object_id", "operator": "GT", "value": "512"});
    assert_eq!(
        next["filterGroups"],
        json!([
            {"filters": [{"propertyName": "lifecyclestage", "operator": "EQ", "value": "customer"}, above]},
            {"filters": [{"propertyName": "email", "operator": "CONTAINS_TOKEN", "value": "*@acme.com"},
                         {"propertyName": "hs_object_id", "operator": "LT", "value": "900000"}, above]}
        ])
    );
    assert_eq!(next["limit"], 200);
    assert!(next.get("after").is_none(), "never an offset: {next}");
    assert_eq!(next["sorts"], plan.body(None).unwrap()["sorts"]);
}

#[test]
fn without_filter_groups_the_key_filter_is_the_one_group() {
    let plan = plan(json!([]));
    assert_eq!(plan.body(None).unwrap()["filterGroups"], json!([]));
    assert_eq!(
        plan.body(Some(18_446_744_073_709_551_000)).unwrap()["filterGroups"],
        json!([{"filters": [{"propertyName": "hs_object_id", "operator": "GT", "value": "18446744073709551000"}]}])
    );
}

#[test]
fn filters_that_leave_room_for_the_key_filter_are_accepted() {
    let f = json!({"property": "firstname", "operator": "HAS_PROPERTY"});
    // 5 in a group (6 with the key filter); 4 + 4 + 5 = 13 given, 16 sent.
    plan(json!([{"filters": vec![f.clone(); 5]}]));
    plan(
        json!([{"filters": vec![f.clone(); 4]}, {"filters": vec![f.clone(); 4]}, {"filters": vec![f.clone(); 5]}]),
    );
    // Upper bounds, EQ and IN on hs_object_id are ANDed with the export's lower bound.
    for op in [
        json!({"operator": "LTE", "value": "99"}),
        json!({"operator": "IN", "values": ["5", "7"]}),
        json!({"operator": "EQ", "value": 5}),
        json!({"operator": "NEQ", "value": 5}),
    ] {
        let mut filter = op.clone();
        filter["property"] = "hs_object_id".into();
        plan(json!([{"filters": [filter]}]));
    }
}

/// A results directory of its own for one test.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("crm-plugin-export-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn export(
    transport: &mut dyn Transport,
    dir: Option<&Path>,
    extra: &[(&'static str, &str)],
    scopes: &[&str],
    input: Value,
) -> Result<Value, ToolError> {
    let dir_text = dir.map(|d| d.display().to_string());
    let mut vars: Vec<(&'static str, &str)> = extra.to_vec();
    if let Some(d) = &dir_text {
        vars.push((keys::RESULTS_DIR, d));
    }
    let config = harness::config(&vars);
    harness::call(
        transport,
        &harness::ctx(scopes, None),
        &config,
        "crma_search_records",
        &input,
    )
}

#[test]
fn what_an_export_cannot_take_is_refused_before_anything_is_sent() {
    let dir = temp_dir("refused");
    let f = json!({"property": "firstname", "operator": "HAS_PROPERTY"});
    let cases = [
        (json!({"cursor": "200"}), "no cursor"),
        (
            json!({"sorts": [{"property": "createdate", "direction": "DESCENDING"}]}),
            "no sorts",
        ),
        (json!({"limit": 50}), "no limit"),
        (
            json!({"filter_groups": [{"filters": [{"property": "hs_object_id", "operator": "GT", "value": "5"}]}]}),
            "(GT)",
        ),
        (
            json!({"filter_groups": [{"filters": [{"property": "hs_object_id", "operator": "GTE", "value": "5"}]}]}),
            "(GTE)",
        ),
        (
            json!({"filter_groups": [{"filters": [f.clone()]}, {"filters": [{"property": "hs_object_id", "operator": "BETWEEN", "value": "5", "high_value": "9"}]}]}),
            "filter group 2",
        ),
        (
            json!({"filter_groups": [{"filters": vec![f.clone(); 6]}]}),
            "at most 6 per group",
        ),
        (
            json!({"filter_groups": vec![json!({"filters": vec![f.clone(); 4]}); 4]}),
            "20 in all",
        ),
        // The caller's own filters are checked as for any search.
        (
            json!({"filter_groups": [{"filters": vec![f.clone(); 7]}]}),
            "at most 6",
        ),
    ];
    for (extra, expected) in cases {
        let mut input = json!({"object_type": "contacts", "to_file": true});
        input
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let mut t = ScriptedTransport::default();
        let err = export(&mut t, Some(&dir), &[], READ, input.clone()).unwrap_err();
        assert!(
            matches!(&err, ToolError::InvalidInput(m) if m.contains(expected)),
            "{input}: {err:?}"
        );
        assert!(t.sent.is_empty(), "{input}");
    }
    assert!(files_in(&dir).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn without_a_results_directory_or_the_scope_nothing_is_sent() {
    let mut t = ScriptedTransport::default();
    let input = json!({"object_type": "contacts", "to_file": true});
    let err = export(&mut t, None, &[], READ, input.clone()).unwrap_err();
    assert!(
        matches!(&err, ToolError::Unavailable(m) if m.contains("no results directory")),
        "{err:?}"
    );
    let dir = temp_dir("scope");
    let err = export(&mut t, Some(&dir), &[], &["crm.objects.deals.read"], input).unwrap_err();
    assert!(matches!(err, ToolError::MissingScopes(_)), "{err:?}");
    assert!(t.sent.is_empty());
    assert!(files_in(&dir).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A record as HubSpot's search answers it (the reference's example, cited on
/// [`crate::crma::wire::RecordObject`]), with id `id`.
fn hubspot_record(id: u64) -> Value {
    json!({"id": id.to_string(), "archived": false,
           "createdAt": "2019-10-30T03:30:17.883Z", "updatedAt": "2019-12-07T16:50:06.678Z",
           "properties": {"email": format!("c{id}@example.com"), "hs_object_id": id.to_string(),
                          "createdate": "2019-10-30T03:30:17.883Z", "lastmodifieddate": null}})
}

fn records(ids: &[u64]) -> Vec<RecordObject> {
    ids.iter()
        .map(|id| serde_json::from_value(hubspot_record(*id)).unwrap())
        .collect()
}

#[test]
fn a_page_becomes_lines_holding_all_that_hubspot_sent() {
    let page = page_lines(records(&[512, 513, 900]), Some(7), 10, 2).unwrap();
    let text = String::from_utf8(page.jsonl).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(
        lines[0],
        json!({"id": "512", "properties": {"email": "c512@example.com", "hs_object_id": "512",
                                          "createdate": "2019-10-30T03:30:17.883Z", "lastmodifieddate": null},
               "created_at": "2019-10-30T03:30:17.883Z", "updated_at": "2019-12-07T16:50:06.678Z"})
    );
    // A file is for analysis: unlike a page the model reads, it keeps the timestamps, the
    // echoed id and the empty values.
    let inline =
        crate::crma::search::map_answer(&json!({"total": 1, "results": [hubspot_record(512)]}))
            .unwrap();
    assert_eq!(inline["results"][0]["id"], lines[0]["id"]);
    assert!(inline["results"][0].get("created_at").is_none());
    assert_eq!(
        (page.count, page.last_id, page.preview.len()),
        (3, Some(900), 2)
    );

    let cut = page_lines(records(&[512, 513, 900]), None, 2, 0).unwrap();
    assert_eq!(
        (cut.count, cut.last_id),
        (2, Some(513)),
        "only the room left"
    );
    assert!(cut.preview.is_empty());
    let empty = page_lines(Vec::new(), Some(900), 5, 3).unwrap();
    assert_eq!((empty.count, empty.last_id), (0, Some(900)));
}

#[test]
fn a_page_out_of_id_order_or_with_a_strange_id_is_refused() {
    let err = page_lines(records(&[5, 9, 8]), None, 10, 0).unwrap_err();
    assert!(err.contains("record 8 came after record 9"), "{err}");
    let err = page_lines(records(&[5]), Some(5), 10, 0).unwrap_err();
    assert!(err.contains("record 5 came after record 5"), "{err}");
    let mut odd = records(&[5]);
    odd[0].id = "+5".into();
    assert!(page_lines(odd, None, 10, 0).unwrap_err().contains("\"+5\""));
}

#[test]
fn request_starts_are_paced_a_quarter_second_apart() {
    assert_eq!(pause_before(None, 1_000), Duration::ZERO);
    assert_eq!(pause_before(Some(1_000), 1_000), PACE);
    assert_eq!(pause_before(Some(1_000), 1_100), Duration::from_millis(150));
    assert_eq!(pause_before(Some(1_000), 1_250), Duration::ZERO);
    assert_eq!(pause_before(Some(1_000), 9_000), Duration::ZERO);
    // A clock that went back waits the whole pace, never less.
    assert_eq!(pause_before(Some(5_000), 1_000), PACE);
}

/// A HubSpot portal in miniature for the export: contacts with the given ids, searched as
/// HubSpot does (sorted by `hs_object_id`, `GT` compared as numbers, pages of `limit`, `total`
/// of the whole match, `paging.next` while more remain), on a clock where each request takes
/// 100 ms.
struct Portal {
    ids: Vec<u64>,
    bodies: Vec<Value>,
    starts: Vec<u64>,
    clock: u64,
    fail_at: Option<usize>,
}

impl Portal {
    fn new(ids: Vec<u64>) -> Self {
        Portal {
            ids,
            bodies: Vec::new(),
            starts: Vec::new(),
            clock: 1_795_253_400_000,
            fail_at: None,
        }
    }
}

impl Transport for Portal {
    fn send(&mut self, request: &Request) -> Result<Response, TransportError> {
        assert!(
            request
                .url()
                .path()
                .ends_with("/crm/v3/objects/contacts/search")
        );
        let body = harness::body(request);
        self.bodies.push(body.clone());
        self.starts.push(self.clock);
        self.clock += 100;
        if self.fail_at == Some(self.bodies.len()) {
            return response(
                400,
                r#"{"status":"error","message":"Invalid input","correlationId":"c-1","category":"VALIDATION_ERROR"}"#,
            );
        }
        let limit = body["limit"].as_u64().unwrap() as usize;
        let above: Vec<u64> = body["filterGroups"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["filters"].as_array().unwrap())
            .filter(|f| f["propertyName"] == "hs_object_id" && f["operator"] == "GT")
            .map(|f| f["value"].as_str().unwrap().parse().unwrap())
            .collect();
        let hits: Vec<u64> = self
            .ids
            .iter()
            .copied()
            .filter(|id| above.iter().all(|a| id > a))
            .collect();
        let results: Vec<Value> = hits
            .iter()
            .take(limit)
            .map(|id| hubspot_record(*id))
            .collect();
        let mut answer = json!({"total": hits.len(), "results": results});
        if hits.len() > limit {
            answer["paging"] =
                json!({"next": {"after": limit.to_string(), "link": format!("?after={limit}")}});
        }
        response(200, &answer.to_string())
    }
    fn sleep(&mut self, duration: Duration) {
        self.clock += duration.as_millis() as u64;
    }
    fn now_unix_millis(&mut self) -> u64 {
        self.clock
    }
}

fn lines_of(dir: &Path, out: &Value) -> Vec<Value> {
    let shown = out["file_path"].as_str().unwrap();
    assert!(
        shown.starts_with(&format!("{}/crma-contacts-", dir.display()))
            && shown.ends_with(".jsonl"),
        "{shown}"
    );
    let text = std::fs::read_to_string(dir.join(shown.rsplit('/').next().unwrap())).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn twenty_five_thousand_contacts_are_written_past_ten_thousand() {
    let dir = temp_dir("all");
    // Ids with gaps, as a real portal's are.
    let ids: Vec<u64> = (0..25_000u64).map(|i| 1_001 + 3 * i + i % 2).collect();
    let mut portal = Portal::new(ids.clone());
    let out = export(
        &mut portal,
        Some(&dir),
        &[],
        READ,
        json!({"object_type": "contacts", "to_file": true, "properties": ["email"]}),
    )
    .unwrap();
    assert_eq!(out["record_count"], 25_000);
    assert_eq!(out["total"], 25_000);
    assert_eq!(out["done"], true);
    assert_eq!(out["format"], "jsonl");
    assert!(
        out.get("results").is_none() && out.get("note").is_none(),
        "{out}"
    );
    assert_eq!(out["preview"].as_array().unwrap().len(), 3);
    assert_eq!(out["preview"][0]["id"], "1001");

    let lines = lines_of(&dir, &out);
    let written: Vec<u64> = lines
        .iter()
        .map(|l| l["id"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(written, ids, "every record once, in ascending id order");
    assert_eq!(
        files_in(&dir).len(),
        1,
        "no partial file left: {:?}",
        files_in(&dir)
    );

    assert_eq!(portal.bodies.len(), 125, "200 a request");
    for (n, body) in portal.bodies.iter().enumerate() {
        assert_eq!(body["limit"], 200);
        assert!(body.get("after").is_none());
        let expected = if n == 0 {
            json!([])
        } else {
            json!([{"filters": [{"propertyName": "hs_object_id", "operator": "GT", "value": ids[200 * n - 1].to_string()}]}])
        };
        assert_eq!(body["filterGroups"], expected, "request {n}");
    }
    for pair in portal.starts.windows(2) {
        assert!(pair[1] - pair[0] >= 250, "{pair:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_per_file_limit_stops_the_export_and_says_so() {
    let dir = temp_dir("limit");
    let mut portal = Portal::new((1..=1_000).collect());
    let out = export(
        &mut portal,
        Some(&dir),
        &[(keys::FILE_MAX_RECORDS, "450")],
        READ,
        json!({"object_type": "contacts", "to_file": true}),
    )
    .unwrap();
    assert_eq!(
        (
            out["record_count"].as_u64(),
            out["done"].as_bool(),
            out["total"].as_u64()
        ),
        (Some(450), Some(false), Some(1000))
    );
    let note = out["note"].as_str().unwrap();
    assert!(
        note.contains("first 450 of 1000") && note.contains("CRM_FILE_MAX_RECORDS"),
        "{note}"
    );
    assert_eq!(lines_of(&dir, &out).len(), 450);
    assert_eq!(portal.bodies.len(), 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_failure_mid_export_publishes_nothing() {
    let dir = temp_dir("failed");
    let mut portal = Portal::new((1..=1_000).collect());
    portal.fail_at = Some(3);
    let err = export(
        &mut portal,
        Some(&dir),
        &[],
        READ,
        json!({"object_type": "contacts", "to_file": true}),
    )
    .unwrap_err();
    assert!(matches!(err, ToolError::CrmError(_)), "{err:?}");
    assert_eq!(portal.bodies.len(), 3);
    assert!(files_in(&dir).is_empty(), "{:?}", files_in(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_answer_out_of_order_discards_the_file() {
    let dir = temp_dir("disorder");
    let page = json!({"total": 3, "results": [hubspot_record(9), hubspot_record(4)]});
    let mut t = ScriptedTransport::new([response(200, &page.to_string())]);
    let err = export(
        &mut t,
        Some(&dir),
        &[],
        READ,
        json!({"object_type": "contacts", "to_file": true}),
    )
    .unwrap_err();
    assert!(
        matches!(&err, ToolError::CrmError(p) if p.codes == ["UNEXPECTED_ANSWER"] && p.to_string().contains("record 4 came after record 9")),
        "{err:?}"
    );
    assert!(files_in(&dir).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_small_export_is_one_request_and_an_empty_one_an_empty_file() {
    let dir = temp_dir("small");
    let mut portal = Portal::new(vec![3, 5, 8]);
    let out = export(
        &mut portal,
        Some(&dir),
        &[],
        READ,
        json!({"object_type": "contacts", "to_file": true}),
    )
    .unwrap();
    assert_eq!(
        (out["record_count"].as_u64(), out["done"].as_bool()),
        (Some(3), Some(true))
    );
    assert_eq!(portal.bodies.len(), 1);
    let mut none = Portal::new(vec![]);
    let out = export(
        &mut none,
        Some(&dir),
        &[],
        READ,
        json!({"object_type": "contacts", "to_file": true}),
    )
    .unwrap();
    assert_eq!(
        (out["record_count"].as_u64(), out["total"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(lines_of(&dir, &out).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}
