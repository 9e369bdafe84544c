use super::*;
use crate::config::keys;
use crate::harness;
use crate::http::{Response, Transport, TransportError};
use crate::retry::tests::{ScriptedTransport, response};
use serde_json::{Value, json};
use std::time::Duration;

const LOCATOR: &str = "01gRO0000016PIAYA2";

/// A Salesforce org in miniature: answers the first page and every locator page of one query
/// over `total` generated Opportunity rows, `page_size` at a time.
struct PagedOrg {
    total: u64,
    page_size: u64,
    sent: Vec<String>,
}

impl PagedOrg {
    fn new(total: u64, page_size: u64) -> Self {
        PagedOrg {
            total,
            page_size,
            sent: Vec::new(),
        }
    }

    fn page(&self, offset: u64) -> Value {
        let end = (offset + self.page_size).min(self.total);
        let records: Vec<Value> = (offset..end)
            .map(|n| {
                let id = opportunity_id(n);
                json!({"attributes": {"type": "Opportunity", "url": format!("/services/data/v65.0/sobjects/Opportunity/{id}")},
                       "Id": id, "Name": format!("Deal {n}"), "Amount": n * 10,
                       "Account": {"attributes": {"type": "Account", "url": "/x"}, "Name": "Acme"}})
            })
            .collect();
        let mut page =
            json!({"totalSize": self.total, "done": end >= self.total, "records": records});
        if end < self.total {
            page["nextRecordsUrl"] = format!("/services/data/v65.0/query/{LOCATOR}-{end}").into();
        }
        page
    }
}

/// A valid 15-character Opportunity id for row n (digits only, so no checksum concerns).
fn opportunity_id(n: u64) -> String {
    format!("006{n:012}")
}

impl Transport for PagedOrg {
    fn send(&mut self, request: &Request) -> Result<Response, TransportError> {
        let path = request.url().path().to_string();
        self.sent.push(path.clone());
        let offset = match path.rsplit_once(&format!("/query/{LOCATOR}-")) {
            Some((_, offset)) => offset.parse().unwrap(),
            None => {
                assert!(path.ends_with("/query"), "{path}");
                0
            }
        };
        response(200, &self.page(offset).to_string())
    }
    fn sleep(&mut self, _: Duration) {}
    fn now_unix_millis(&mut self) -> u64 {
        0
    }
}

fn config(extra: &[(&'static str, &str)]) -> Config {
    harness::config(extra)
}

fn run_with(
    transport: &mut dyn Transport,
    config: &Config,
    input: Value,
) -> Result<Value, ToolError> {
    let ctx = harness::ctx(&[], Some("https://acme.my.salesforce.com"));
    harness::call(transport, &ctx, config, "crmb_run_soql_query", &input)
}

const QUERY: &str = "SELECT Id, Name, Amount, Account.Name FROM Opportunity WHERE IsClosed = false";

/// The same page as a table: the field names once, each record a row in that order, its link
/// last, and the paging fields as with records.
#[test]
fn a_table_layout_names_the_fields_once_and_keeps_every_link() {
    let mut org = PagedOrg::new(30, 2000);
    let objects = run_with(
        &mut org,
        &config(&[]),
        json!({"query": QUERY, "max_records": 10}),
    )
    .unwrap();
    let mut org = PagedOrg::new(30, 2000);
    let table = run_with(
        &mut org,
        &config(&[]),
        json!({"query": QUERY, "max_records": 10, "layout": "table"}),
    )
    .unwrap();
    assert!(table.get("records").is_none());
    assert_eq!(table["returned"], 10);
    assert_eq!(table["next_cursor"], objects["next_cursor"]);
    assert_eq!(table["remaining_records"], 20);
    let fields: Vec<&str> = table["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert_eq!(fields.last(), Some(&"record_url"));
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 10);
    for (row, record) in rows.iter().zip(objects["records"].as_array().unwrap()) {
        for (i, field) in fields.iter().enumerate() {
            assert_eq!(&row[i], &record[*field], "{field}");
        }
    }
    assert!(
        serde_json::to_string(&table).unwrap().len()
            < serde_json::to_string(&objects).unwrap().len()
    );
    let wrong = run_with(
        &mut PagedOrg::new(1, 1),
        &config(&[]),
        json!({"query": QUERY, "layout": "csv"}),
    )
    .unwrap_err();
    assert!(matches!(wrong, ToolError::InvalidInput(_)), "{wrong:?}");
}

#[test]
fn three_full_pages_come_back_within_budget() {
    let big = config(&[(keys::INLINE_MAX_BYTES, &(64 << 20).to_string())]);
    let mut org = PagedOrg::new(6000, 2000);
    // max_records is at most 2000 per call: follow the cursor to the end.
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut input = json!({"query": QUERY, "max_records": 2000});
        if let Some(c) = &cursor {
            input["cursor"] = c.clone().into();
        }
        let out = run_with(&mut org, &big, input).unwrap();
        assert_eq!(out["total_size"], 6000);
        all.extend(out["records"].as_array().unwrap().iter().cloned());
        match out.get("next_cursor") {
            Some(c) => cursor = Some(c.as_str().unwrap().to_string()),
            None => {
                assert_eq!(out["done"], true);
                break;
            }
        }
    }
    assert_eq!(all.len(), 6000);
    assert_eq!(org.sent.len(), 3, "one request per page, none repeated");
    for (n, record) in all.iter().enumerate() {
        assert_eq!(
            record["Name"],
            format!("Deal {n}"),
            "records in order, none lost or doubled"
        );
    }
    assert!(all[0].get("attributes").is_none());
    assert_eq!(
        all[0]["record_url"],
        format!("https://acme.my.salesforce.com/{}", opportunity_id(0)),
        "query rows link by the short form Salesforce redirects to the record"
    );
    assert!(
        all[0]["Account"].get("record_url").is_none(),
        "a parent without Id gets no URL"
    );
}

#[test]
fn a_cut_inside_a_page_resumes_at_the_exact_record() {
    let big = config(&[(keys::INLINE_MAX_BYTES, &(64 << 20).to_string())]);
    let mut org = PagedOrg::new(6000, 2000);
    let first = run_with(&mut org, &big, json!({"query": QUERY, "max_records": 2000})).unwrap();
    assert_eq!(first["returned"], 2000, "a whole page, cursor at its end");
    let second = run_with(
        &mut org,
        &big,
        json!({"query": QUERY, "max_records": 700, "cursor": first["next_cursor"]}),
    )
    .unwrap();
    assert_eq!(second["returned"], 700);
    assert_eq!(second["records"][0]["Name"], "Deal 2000");
    assert_eq!(second["remaining_records"], 3300);
    let third = run_with(
        &mut org,
        &big,
        json!({"query": QUERY, "max_records": 2000, "cursor": second["next_cursor"]}),
    )
    .unwrap();
    assert_eq!(third["records"][0]["Name"], "Deal 2700");
    assert!(
        org.sent
            .last()
            .unwrap()
            .ends_with(&format!("{LOCATOR}-2700"))
    );
}

#[test]
fn the_byte_budget_cuts_and_says_how_to_get_the_rest() {
    let small = config(&[(keys::INLINE_MAX_BYTES, "20000")]);
    let mut org = PagedOrg::new(6000, 2000);
    let out = run_with(
        &mut org,
        &small,
        json!({"query": QUERY, "max_records": 2000}),
    )
    .unwrap();
    let returned = out["returned"].as_u64().unwrap();
    assert!(returned > 10 && returned < 2000, "{returned}");
    assert!(serde_json::to_vec(&out["records"]).unwrap().len() <= 20000 + 1000);
    assert_eq!(out["remaining_records"], 6000 - returned);
    assert!(
        out["how_to_get_the_rest"]
            .as_str()
            .unwrap()
            .contains("size budget")
    );
    assert!(out["next_cursor"].is_string());
}

#[test]
fn hostile_next_records_urls_are_refused() {
    for hostile in [
        "https://evil.example.com/services/data/v65.0/query/01gRO0000016PIAYA2-2000",
        "//evil.example.com/services/data/v65.0/query/01gRO0000016PIAYA2-2000",
        "/services/data/v65.0/sobjects/Account/001000000000001",
        "/services/data/v65.0/query/../../sobjects/User-2000",
        "/services/data/v65.0/query/01gRO0000016PIAYA2-2000/../../x",
        "/services/data/v65.0/query/01gRO0000016PIAYA2-2000?x=1",
        "/services/data/v60.0/query/01gRO0000016PIAYA2-2000",
        "/services/data/v65.0/query/01gRO%2F016PIAYA2-2000",
    ] {
        let page = json!({"totalSize": 4000, "done": false, "nextRecordsUrl": hostile,
                          "records": [{"attributes": {"type": "Account"}, "Id": "001000000000001", "Name": "A"}]});
        let mut t = ScriptedTransport::new([response(200, &page.to_string())]);
        let err = run_with(
            &mut t,
            &config(&[]),
            json!({"query": "SELECT Id, Name FROM Account", "max_records": 2000}),
        )
        .unwrap_err();
        assert!(
            matches!(&err, ToolError::CrmError(p) if p.codes == ["UNSAFE_NEXT_RECORDS_URL"]),
            "{hostile}: {err:?}"
        );
        assert_eq!(t.sent.len(), 1, "{hostile}: not followed");
    }
}

#[test]
fn cursors_are_checked_before_anything_is_sent() {
    let mut org = PagedOrg::new(6000, 2000);
    let out = run_with(
        &mut org,
        &config(&[]),
        json!({"query": QUERY, "max_records": 10}),
    )
    .unwrap();
    let cursor = out["next_cursor"].as_str().unwrap().to_string();
    org.sent.clear();
    // Found by the property tests: `u64` parsing takes a sign and leading zeros, which made
    // these pass for the cursor they resemble.
    let (head, hash) = cursor.rsplit_once('.').unwrap();
    let signed = format!("{head}.+{hash}");
    let (start, offset) = head.rsplit_once('.').unwrap();
    let padded = format!("{start}.0{offset}.{hash}");
    for (query, cursor, word) in [
        ("SELECT Id FROM Account", cursor.as_str(), "different query"),
        (QUERY, signed.as_str(), "not one this tool returned"),
        (QUERY, padded.as_str(), "not one this tool returned"),
        (
            QUERY,
            "sfq1.01gRO0000016PIAYA2.10",
            "not one this tool returned",
        ),
        (
            QUERY,
            "sfq1.../../x.10.0000000000000000",
            "not one this tool returned",
        ),
        (
            QUERY,
            "https://evil.example.com/q",
            "not one this tool returned",
        ),
    ] {
        let err = run_with(
            &mut org,
            &config(&[]),
            json!({"query": query, "cursor": cursor}),
        )
        .unwrap_err();
        assert!(
            matches!(&err, ToolError::InvalidInput(m) if m.contains(word)),
            "{cursor}: {err:?}"
        );
    }
    assert!(org.sent.is_empty());
}

#[test]
fn invalid_soql_and_budgets_send_nothing() {
    let mut t = ScriptedTransport::default();
    for input in [
        json!({"query": "DELETE FROM Account"}),
        json!({"query": "SELECT * FROM Account"}),
        json!({"query": "SELECT Id FROM Account FOR UPDATE"}),
        json!({"query": "SELECT Id FROM Account", "max_records": 0}),
        json!({"query": "SELECT Id FROM Account", "max_records": 5000}),
        json!({"query": "SELECT Id FROM Account", "extra": true}),
    ] {
        let err = run_with(&mut t, &config(&[]), input.clone()).unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidInput(_)),
            "{input}: {err:?}"
        );
    }
    assert!(t.sent.is_empty());
}

#[test]
fn the_query_is_sent_form_encoded_to_the_query_path() {
    let mut t = ScriptedTransport::new([response(
        200,
        r#"{"totalSize": 0, "done": true, "records": []}"#,
    )]);
    let out = run_with(
        &mut t,
        &config(&[]),
        json!({"query": "SELECT Id FROM Account WHERE Name = 'A&B'"}),
    )
    .unwrap();
    assert_eq!(out["records"], json!([]));
    assert_eq!(out["done"], true);
    assert_eq!(
        t.sent[0].url().path(),
        "/sdk/proxy/salesforce/services/data/v65.0/query"
    );
    assert_eq!(
        t.sent[0].url().query(),
        Some("q=SELECT+Id+FROM+Account+WHERE+Name+%3D+%27A%26B%27")
    );
}

#[test]
fn aggregates_and_counts() {
    let agg = json!({"totalSize": 2, "done": true, "records": [
        {"attributes": {"type": "AggregateResult"}, "StageName": "Prospecting", "total": 1200},
        {"attributes": {"type": "AggregateResult"}, "StageName": "Closed Won", "total": 900}]});
    let mut t = ScriptedTransport::new([response(200, &agg.to_string())]);
    let out = run_with(
        &mut t,
        &config(&[]),
        json!({"query": "SELECT StageName, SUM(Amount) total FROM Opportunity GROUP BY StageName"}),
    )
    .unwrap();
    assert_eq!(
        out["records"][0],
        json!({"StageName": "Prospecting", "total": 1200})
    );
    let mut t = ScriptedTransport::new([response(
        200,
        r#"{"totalSize": 42, "done": true, "records": []}"#,
    )]);
    let out = run_with(
        &mut t,
        &config(&[]),
        json!({"query": "SELECT COUNT() FROM Contact"}),
    )
    .unwrap();
    assert_eq!(
        (out["total_size"].as_u64(), out["done"].as_bool()),
        (Some(42), Some(true))
    );
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("crm-plugin-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_hundred_thousand_records_land_in_a_file() {
    let dir = temp_dir("file");
    let config = config(&[(keys::RESULTS_DIR, &dir.display().to_string())]);
    let mut org = PagedOrg::new(100_000, 2000);
    let out = run_with(&mut org, &config, json!({"query": QUERY})).unwrap();
    assert!(out.get("records").is_none());
    assert_eq!(out["record_count"], 100_000);
    assert_eq!(out["done"], true);
    assert_eq!(org.sent.len(), 50);
    let shown = out["file_path"].as_str().unwrap();
    assert!(
        shown.starts_with(&format!("{}/soql-", dir.display())) && shown.ends_with(".jsonl"),
        "{shown}"
    );
    assert_eq!(
        out["columns"],
        json!(["Account", "Amount", "Id", "Name", "record_url"])
    );
    assert_eq!(out["preview"].as_array().unwrap().len(), 3);

    let file = dir.join(shown.rsplit('/').next().unwrap());
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 100_000);
    let last: Value = serde_json::from_str(lines[99_999]).unwrap();
    assert_eq!(last["Name"], "Deal 99999");
    assert!(
        !std::fs::read_dir(&dir).unwrap().any(|e| e
            .unwrap()
            .path()
            .to_string_lossy()
            .ends_with(".partial"))
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_failure_mid_file_leaves_no_partial_file() {
    let dir = temp_dir("partial");
    let config = config(&[
        (keys::RESULTS_DIR, &dir.display().to_string()),
        (keys::FILE_THRESHOLD_RECORDS, "10"),
    ]);
    let org = PagedOrg::new(30, 10);
    let mut t = ScriptedTransport::new([
        response(200, &org.page(0).to_string()),
        response(200, &org.page(10).to_string()),
        response(
            400,
            r#"[{"errorCode":"INVALID_QUERY_LOCATOR","message":"invalid query locator"}]"#,
        ),
    ]);
    let err = run_with(&mut t, &config, json!({"query": QUERY})).unwrap_err();
    assert!(
        matches!(&err, ToolError::CrmError(p) if p.codes == ["INVALID_QUERY_LOCATOR"]),
        "{err:?}"
    );
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Salesforce caps URI plus headers at 16,384 bytes ("414: The length of the URI exceeds the
/// 16,384 byte limit"; Salesforce Help 000386264). A query whose URL would not fit is refused
/// before sending, saying how to shorten it; one that fits goes out.
#[test]
fn a_query_too_long_for_the_url_is_refused_before_sending() {
    let ids = |n: usize| {
        (0..n)
            .map(|i| format!("'001{i:015}'"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let long = format!("SELECT Id, Name FROM Account WHERE Id IN ({})", ids(800));
    let mut t = ScriptedTransport::default();
    let err = run_with(&mut t, &config(&[]), json!({"query": long})).unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidInput(m) if m.contains("16,384") && m.contains("IN lists")),
        "{err:?}"
    );
    assert!(t.sent.is_empty());

    let fits = format!("SELECT Id, Name FROM Account WHERE Id IN ({})", ids(300));
    let mut t =
        ScriptedTransport::new([response(200, r#"{"totalSize":0,"done":true,"records":[]}"#)]);
    run_with(&mut t, &config(&[]), json!({"query": fits})).unwrap();
    let url = &t.sent[0].url();
    assert!(url.path().len() + url.query().unwrap().len() < super::MAX_QUERY_URL_BYTES);
}

/// A pinned API version the org does not serve answers 404 NOT_FOUND like a missing record;
/// the org's list of versions (`GET /services/data/`: `[{label, url, version}]`, REST API
/// Developer Guide "Versions") tells which to configure.
#[test]
fn a_version_the_org_does_not_serve_is_named_with_the_one_to_use() {
    let not_found =
        r#"[{"message":"The requested resource does not exist","errorCode":"NOT_FOUND"}]"#;
    let versions = crate::crmb::client::SERVED_VERSIONS;
    let mut t = ScriptedTransport::new([response(404, not_found), response(200, versions)]);
    let err = run_with(
        &mut t,
        &config(&[(keys::CRM_B_API_VERSION, "99.0")]),
        json!({"query": "SELECT Id FROM Account"}),
    )
    .unwrap_err();
    let ToolError::CrmError(problem) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(problem.codes, ["API_VERSION_NOT_SUPPORTED"]);
    assert!(problem.hint.contains("v66.0") && problem.hint.contains("CRM_B_API_VERSION"));
    assert_eq!(
        t.sent[1].url().path(),
        "/sdk/proxy/salesforce/services/data/"
    );

    // A served version: the 404 stays "not found".
    let mut t = ScriptedTransport::new([response(404, not_found), response(200, versions)]);
    let err = run_with(
        &mut t,
        &config(&[]),
        json!({"query": "SELECT Id FROM Account"}),
    )
    .unwrap_err();
    assert!(matches!(err, ToolError::NotFound(_)), "{err:?}");
}

/// Queries nested past the parser's limits: each would recurse once per level, so thousands of
/// levels would exhaust the wasm stack and trap. They are refused as invalid input instead,
/// naming the limit, and nothing is sent.
#[test]
fn queries_nested_past_the_limits_are_refused_before_sending() {
    let deep = |open: &str, inner: &str, close: &str, n: usize| {
        format!("{}{inner}{}", open.repeat(n), close.repeat(n))
    };
    let cases = [
        (
            format!(
                "SELECT Id FROM Account WHERE {}",
                deep("(", "Name = 'x'", ")", 2_000)
            ),
            "parentheses more than 32 deep",
        ),
        (
            format!("SELECT {} FROM Account", deep("FORMAT(", "Id", ")", 2_000)),
            "parentheses more than 32 deep",
        ),
        (
            format!(
                "SELECT Id FROM Account WHERE {}",
                deep("NOT ", "Name = 'x'", "", 2_000)
            ),
            "NOT NOT is not SOQL",
        ),
        (
            format!(
                "SELECT {} FROM Account",
                deep("(SELECT Id, ", "Id FROM Contacts", " FROM Contacts)", 2_000)
            ),
            "parentheses more than 32 deep",
        ),
        (
            format!(
                "SELECT Id FROM Account WHERE {}",
                deep(
                    "Id IN (SELECT AccountId FROM Contact WHERE ",
                    "Name = 'x'",
                    ")",
                    2_000
                )
            ),
            "parentheses more than 32 deep",
        ),
        (
            format!(
                "SELECT Id FROM Account WHERE {}",
                deep("(NOT ", "Name = 'x'", ")", 33)
            ),
            "parentheses more than 32 deep",
        ),
        (
            format!(
                "SELECT Id, {} FROM Account",
                deep("(SELECT Id, ", "Id FROM Contacts", " FROM Contacts)", 5)
            ),
            "nest at most 4 levels",
        ),
    ];
    for (query, limit) in cases {
        let mut t = ScriptedTransport::default();
        let err = run_with(&mut t, &config(&[]), json!({ "query": query })).unwrap_err();
        let ToolError::InvalidInput(message) = &err else {
            panic!("{err:?}");
        };
        assert!(message.contains(limit), "{message}");
        assert!(t.sent.is_empty());
    }
}

#[test]
fn nesting_up_to_the_limits_is_still_accepted() {
    let parens = format!(
        "SELECT Id FROM Account WHERE {}Name = 'x'{}",
        "(".repeat(crate::crmb::soql::MAX_NESTING),
        ")".repeat(crate::crmb::soql::MAX_NESTING)
    );
    let nots = format!(
        "SELECT Id FROM Account WHERE {}Name = 'x'{}",
        "NOT (".repeat(crate::crmb::soql::MAX_NESTING),
        ")".repeat(crate::crmb::soql::MAX_NESTING)
    );
    for query in [parens, nots] {
        assert!(crate::crmb::soql::validate(&query).is_ok(), "{query}");
    }
}

/// An answer nested 2,000 records deep is a `crm-error`, not a trap: serde_json stops at 128
/// levels, and `map_record` itself stops past `MAX_RECORD_DEPTH`.
#[test]
fn an_answer_nested_two_thousand_deep_is_a_typed_error() {
    let n = 2_000;
    let record = format!(
        "{}null{}",
        r#"{"attributes": {"type": "Account"}, "Parent": "#.repeat(n),
        "}".repeat(n)
    );
    let body = format!(r#"{{"totalSize": 1, "done": true, "records": [{record}]}}"#);
    let mut t = ScriptedTransport::new([response(200, &body)]);
    let err = run_with(&mut t, &config(&[]), json!({ "query": QUERY })).unwrap_err();
    assert!(matches!(err, ToolError::CrmError(_)), "{err:?}");
}

/// A query answer is `{"done", "totalSize", "records"}` (REST API Developer Guide, "Execute a
/// SOQL Query"). One that lost a field, or spells it otherwise, is refused as an unexpected
/// answer naming the field, not passed off as an empty or unsized result; so is a record that
/// is not a JSON object.
#[test]
fn a_query_answer_of_another_shape_is_refused_naming_the_field() {
    let record = json!({"attributes": {"type": "Account", "url": "/services/data/v65.0/sobjects/Account/001D000000IRFmaIAH"},
                        "Name": "Test 1"});
    for (answer, why) in [
        (
            json!({"done": true, "totalSize": 14, "rows": [record]}),
            "missing field `records`",
        ),
        (
            json!({"done": true, "total_size": 14, "records": [record]}),
            "missing field `totalSize`",
        ),
        (
            json!({"totalSize": 14, "records": [record]}),
            "missing field `done`",
        ),
        (
            json!({"done": true, "totalSize": 1, "records": ["Test 1"]}),
            "expected a JSON object",
        ),
    ] {
        let mut t = ScriptedTransport::new([response(200, &answer.to_string())]);
        let err = run_with(
            &mut t,
            &config(&[]),
            json!({"query": "SELECT Name FROM Account"}),
        )
        .unwrap_err();
        let ToolError::CrmError(problem) = &err else {
            panic!("{answer}: {err:?}");
        };
        assert_eq!(problem.codes, ["UNEXPECTED_ANSWER"]);
        assert!(problem.messages[0].contains(why), "{answer}: {problem}");
    }
}

/// Salesforce answers up to 2,000 rows in one batch with `done: true` and no `nextRecordsUrl`
/// ("Execute a SOQL Query", REST API Developer Guide: the batch size is 2,000 by default,
/// `nextRecordsUrl` only while more batches remain,
/// <https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_query.htm>).
/// Every row is still reachable, a page at a time, without rewriting the query.
#[test]
fn rows_of_one_batch_past_the_answer_are_reached_by_the_cursor() {
    let mut org = PagedOrg::new(1500, 2000);
    let mut seen: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    let mut calls = 0;
    loop {
        let mut input = json!({"query": QUERY});
        if let Some(c) = &cursor {
            input["cursor"] = json!(c);
        }
        let out = run_with(&mut org, &config(&[]), input).unwrap();
        calls += 1;
        let page: Vec<String> = out["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["Id"].as_str().unwrap().to_string())
            .collect();
        assert!(page.len() <= DEFAULT_MAX_RECORDS as usize);
        seen.extend(page);
        match out["next_cursor"].as_str() {
            Some(next) => {
                assert!(
                    out["how_to_get_the_rest"]
                        .as_str()
                        .is_some_and(|h| h.contains("next_cursor") && h.contains("to_file")),
                    "{out}"
                );
                cursor = Some(next.to_string());
            }
            None => break,
        }
    }
    let expected: Vec<String> = (0..1500).map(opportunity_id).collect();
    assert_eq!(seen, expected, "every row once, in order");
    assert_eq!(calls, 8);
    // A skip cursor is tied to its query like any other.
    let skip = Cursor::skipping(200, &soql::validate(QUERY).unwrap()).encode();
    let other = json!({"query": "SELECT Id FROM Account", "cursor": skip});
    assert!(run_with(&mut org, &config(&[]), other).is_err());
}

#[test]
fn to_file_writes_every_row_however_few() {
    let dir = temp_dir("to-file");
    let config = config(&[(keys::RESULTS_DIR, &dir.display().to_string())]);
    let mut org = PagedOrg::new(30, 2000);
    let out = run_with(&mut org, &config, json!({"query": QUERY, "to_file": true})).unwrap();
    assert_eq!(out["record_count"], 30, "{out}");
    assert!(out.get("records").is_none());
    let with_cursor = run_with(
        &mut org,
        &config,
        json!({"query": QUERY, "to_file": true, "cursor": "sfq1.skip.200.0000000000000000"}),
    );
    assert!(matches!(with_cursor, Err(ToolError::InvalidInput(_))));
}
