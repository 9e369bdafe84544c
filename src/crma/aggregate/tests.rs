//! `crma_aggregate_records` against a portal that answers as HubSpot documents: property
//! definitions (page cited in `labels`), pipelines
//! (<https://developers.hubspot.com/docs/api-reference/legacy/crm/pipelines/get-pipelines>),
//! owners (<https://developers.hubspot.com/docs/api-reference/crm-owners-v3/owners/get-crm-v3-owners>),
//! account details (cited on `AccountDetails`) and the search, keyset-paged as the export
//! pages it. Expected figures are worked out from the same deals by brute force.

use super::decimal::Decimal;
use crate::error::ToolError;
use crate::harness;
use crate::http::{Request, Response, Transport, TransportError};
use crate::retry::tests::response;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

const SCOPES: &[&str] = &["crm.objects.deals.read", "crm.objects.owners.read", "oauth"];

/// One deal of the fake portal.
#[derive(Debug, Clone)]
struct Deal {
    id: u64,
    stage: &'static str,
    owner: Option<&'static str>,
    amount: Option<String>,
    closedate: String,
}

/// `n` deals over three stages, two owners (and some unowned), amounts in cents that add up
/// exactly only in decimal, close dates across months, some exactly at a month's edge in UTC.
fn deals(n: u64) -> Vec<Deal> {
    let stages = ["appointmentscheduled", "contractsent", "closedwon"];
    (0..n)
        .map(|i| Deal {
            id: 1000 + i * 3,
            stage: stages[(i % 3) as usize],
            owner: match i % 5 {
                0 => None,
                1 | 2 => Some("101"),
                _ => Some("202"),
            },
            amount: (i % 7 != 0).then(|| format!("{}.{:02}", 100 + i % 900, i % 100)),
            // 02:30 UTC on the 1st: the evening before in New York.
            closedate: format!("2026-{:02}-01T02:30:00.000Z", 1 + i % 12),
        })
        .collect()
}

/// The portal: answers each documented endpoint, records every request path, keeps a clock.
struct Portal {
    deals: Vec<Deal>,
    paths: Vec<String>,
    searches: usize,
    clock: u64,
    /// The account's currencies besides USD (`additionalCurrencies`).
    additional: Vec<&'static str>,
}

/// A deal's amount in the company currency, as HubSpot's `amount_in_home_currency` holds it:
/// here every odd deal is in a currency worth two dollars.
fn home_amount(deal: &Deal) -> Option<String> {
    let amount = Decimal::parse(deal.amount.as_ref()?).unwrap();
    let home = if deal.id % 2 == 1 {
        amount.checked_add(amount).unwrap()
    } else {
        amount
    };
    Some(home.to_string())
}

impl Portal {
    fn new(deals: Vec<Deal>) -> Self {
        Portal {
            deals,
            paths: Vec::new(),
            searches: 0,
            clock: 1_795_253_400_000,
            additional: Vec::new(),
        }
    }

    fn search(&mut self, body: &Value) -> Value {
        self.searches += 1;
        let above: Option<u64> = body["filterGroups"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["filters"].as_array().unwrap())
            .find(|f| f["propertyName"] == "hs_object_id" && f["operator"] == "GT")
            .map(|f| f["value"].as_str().unwrap().parse().unwrap());
        let wanted: Vec<&str> = body["properties"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap())
            .collect();
        let limit = body["limit"].as_u64().unwrap() as usize;
        assert!(limit <= 200);
        let hits: Vec<&Deal> = self
            .deals
            .iter()
            .filter(|d| above.is_none_or(|a| d.id > a))
            .collect();
        let results: Vec<Value> = hits
            .iter()
            .take(limit)
            .map(|d| {
                let mut properties = json!({
                    "hs_object_id": d.id.to_string(), "createdate": "2026-01-05T08:00:00Z",
                    "hs_lastmodifieddate": "2026-01-05T08:00:00Z"});
                for name in &wanted {
                    properties[*name] = match *name {
                        "dealstage" => json!(d.stage),
                        "hubspot_owner_id" => json!(d.owner),
                        "amount" => json!(d.amount),
                        "amount_in_home_currency" => json!(home_amount(d)),
                        "closedate" => json!(d.closedate),
                        other => panic!("asked for {other}"),
                    };
                }
                json!({"id": d.id.to_string(), "properties": properties,
                       "createdAt": "2026-01-05T08:00:00Z", "updatedAt": "2026-01-05T08:00:00Z",
                       "archived": false})
            })
            .collect();
        let mut answer = json!({"total": hits.len(), "results": results});
        if hits.len() > limit {
            answer["paging"] = json!({"next": {"after": limit.to_string()}});
        }
        answer
    }
}

fn definition(name: &str) -> Value {
    match name {
        "amount" => json!({"name": "amount", "type": "number", "fieldType": "number"}),
        "closedate" => json!({"name": "closedate", "type": "datetime", "fieldType": "date"}),
        "dealstage" => json!({"name": "dealstage", "type": "enumeration", "fieldType": "radio",
                              "options": []}),
        "hubspot_owner_id" => json!({"name": "hubspot_owner_id", "type": "enumeration",
                                     "fieldType": "select", "referencedObjectType": "OWNER"}),
        "dealname" => json!({"name": "dealname", "type": "string", "fieldType": "text"}),
        _ => Value::Null,
    }
}

impl Transport for Portal {
    fn send(&mut self, request: &Request) -> Result<Response, TransportError> {
        let path = request.url().path().to_string();
        self.paths.push(path.clone());
        self.clock += 40;
        let tail = path.split("/hubspot/").nth(1).unwrap_or(&path).to_string();
        let answer = if tail.ends_with("crm/v3/objects/deals/search") {
            let body = harness::body(request);
            self.search(&body)
        } else if let Some(name) = tail.strip_prefix("crm/v3/properties/deals/") {
            let found = definition(name);
            if found.is_null() {
                return response(
                    404,
                    r#"{"status":"error","message":"Unable to find property","category":"OBJECT_NOT_FOUND"}"#,
                );
            }
            found
        } else if tail.ends_with("crm/v3/pipelines/deals") {
            json!({"results": [{"id": "default", "label": "Sales Pipeline", "displayOrder": 0,
                "stages": [
                    {"id": "closedwon", "label": "Closed won", "displayOrder": 5},
                    {"id": "appointmentscheduled", "label": "Appointment scheduled", "displayOrder": 0},
                    {"id": "contractsent", "label": "Contract sent", "displayOrder": 3}]}]})
        } else if tail.ends_with("crm/v3/owners") {
            json!({"results": [
                {"id": "101", "email": "ana@example.com", "firstName": "Ana", "lastName": "Ruiz", "archived": false},
                {"id": "202", "email": "bo@example.com", "firstName": "", "lastName": null, "archived": false}]})
        } else if tail.ends_with("account-info/v3/details") {
            json!({"portalId": 62515, "timeZone": "US/Eastern", "companyCurrency": "USD",
                   "additionalCurrencies": self.additional,
                   "uiDomain": "app.hubspot.com", "utcOffset": "-05:00"})
        } else {
            panic!("unexpected request {path}")
        };
        response(200, &answer.to_string())
    }
    fn sleep(&mut self, duration: Duration) {
        self.clock += duration.as_millis() as u64;
    }
    fn now_unix_millis(&mut self) -> u64 {
        self.clock
    }
}

fn aggregate(portal: &mut Portal, scopes: &[&str], input: Value) -> Result<Value, ToolError> {
    aggregate_with(portal, scopes, &[], input)
}

fn aggregate_with(
    portal: &mut Portal,
    scopes: &[&str],
    settings: &[(&'static str, &str)],
    input: Value,
) -> Result<Value, ToolError> {
    harness::call(
        portal,
        &harness::ctx(scopes, None),
        &harness::config(settings),
        "crma_aggregate_records",
        &input,
    )
}

fn exact_sum<'a>(amounts: impl Iterator<Item = &'a String>) -> String {
    amounts
        .fold(Decimal::ZERO, |s, a| {
            s.checked_add(Decimal::parse(a).unwrap()).unwrap()
        })
        .to_string()
}

/// An account with several currencies: `amount` is each deal's own currency
/// (`deal_currency_code`), so its figures come from `amount_in_home_currency` and the answer
/// says so ("Set up and use multiple currencies", HubSpot Knowledge Base,
/// <https://knowledge.hubspot.com/object-settings/add-and-edit-your-account-currencies>).
#[test]
fn amounts_in_several_currencies_are_never_added_as_one() {
    let all = deals(40);
    let mut portal = Portal::new(all.clone());
    portal.additional = vec!["EUR"];
    let out = aggregate(
        &mut portal,
        SCOPES,
        json!({"object_type": "deals", "metrics": ["sum:amount", "max:amount"]}),
    )
    .unwrap();
    let homes: Vec<String> = all.iter().filter_map(home_amount).collect();
    assert_eq!(
        out["totals"]["metrics"]["sum:amount"],
        exact_sum(homes.iter()),
        "{out}"
    );
    let notes = out["note"].to_string();
    assert!(
        notes.contains("amount_in_home_currency") && notes.contains("EUR"),
        "{out}"
    );
    // One currency: amount as it is, nothing converted.
    let mut single = Portal::new(all.clone());
    let out = aggregate(
        &mut single,
        SCOPES,
        json!({"object_type": "deals", "metrics": ["sum:amount"]}),
    )
    .unwrap();
    assert_eq!(
        out["totals"]["metrics"]["sum:amount"],
        exact_sum(all.iter().filter_map(|d| d.amount.as_ref()))
    );
    assert!(!out.to_string().contains("amount_in_home_currency"));
}

#[test]
fn pipeline_value_by_stage_counts_every_deal_past_ten_thousand_exactly() {
    let all = deals(12_345);
    let mut portal = Portal::new(all.clone());
    let out = aggregate(
        &mut portal,
        SCOPES,
        json!({"object_type": "deals", "group_by": [{"property": "dealstage"}],
               "metrics": ["count", "sum:amount", "avg:amount", "min:amount", "max:amount"]}),
    )
    .unwrap();
    assert_eq!(out["records_read"], 12_345);
    assert_eq!(out["complete"], true);
    assert_eq!(out["currency"], "USD");
    assert_eq!(portal.searches, 62, "200 a page, keyset-paged past 10,000");
    // Stages in the pipeline's order, with their names.
    let stages: Vec<(&str, &str)> = out["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["keys"][0]["value"].as_str().unwrap(),
                g["keys"][0]["label"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        stages,
        [
            ("appointmentscheduled", "Appointment scheduled"),
            ("contractsent", "Contract sent"),
            ("closedwon", "Closed won")
        ]
    );
    for group in out["groups"].as_array().unwrap() {
        let stage = group["keys"][0]["value"].as_str().unwrap();
        let of_stage: Vec<&Deal> = all.iter().filter(|d| d.stage == stage).collect();
        assert_eq!(group["count"], of_stage.len());
        let amounts: Vec<&String> = of_stage.iter().filter_map(|d| d.amount.as_ref()).collect();
        assert_eq!(
            group["metrics"]["sum:amount"],
            exact_sum(amounts.iter().copied())
        );
        let min = amounts
            .iter()
            .map(|a| Decimal::parse(a).unwrap())
            .min()
            .unwrap();
        assert_eq!(group["metrics"]["min:amount"], min.to_string());
        let avg = Decimal::parse(&exact_sum(amounts.iter().copied()))
            .unwrap()
            .divided(amounts.len() as u64, 2)
            .unwrap();
        assert_eq!(group["metrics"]["avg:amount"], avg.to_string());
    }
    assert_eq!(out["totals"]["count"], 12_345);
    assert_eq!(
        out["totals"]["metrics"]["sum:amount"],
        exact_sum(all.iter().filter_map(|d| d.amount.as_ref()))
    );
}

#[test]
fn deals_closing_per_month_by_owner_are_bucketed_in_the_accounts_zone() {
    let all = deals(600);
    let mut portal = Portal::new(all.clone());
    let out = aggregate(
        &mut portal,
        SCOPES,
        json!({"object_type": "deals",
               "group_by": [{"property": "closedate", "bucket": "month"},
                            {"property": "hubspot_owner_id"}],
               "metrics": ["sum:amount"]}),
    )
    .unwrap();
    assert_eq!(out["time_zone"], "US/Eastern");
    assert_eq!(
        out["group_by"],
        json!(["closedate by month", "hubspot_owner_id"])
    );
    let groups = out["groups"].as_array().unwrap();
    // 02:30 UTC on the 1st of each month is still the previous month in New York: January
    // 1st's deals close in December 2025.
    assert_eq!(groups[0]["keys"][0]["value"], "2025-12");
    let mut expected: BTreeMap<(String, Option<&str>), u64> = BTreeMap::new();
    for d in &all {
        let month: u32 = d.closedate[5..7].parse().unwrap();
        let key = if month == 1 {
            "2025-12".to_string()
        } else {
            format!("2026-{:02}", month - 1)
        };
        *expected.entry((key, d.owner)).or_default() += 1;
    }
    assert_eq!(groups.len(), expected.len());
    for g in groups {
        let key = (
            g["keys"][0]["value"].as_str().unwrap().to_string(),
            g["keys"][1]["value"].as_str(),
        );
        assert_eq!(g["count"], expected[&key], "{g}");
        match key.1 {
            Some("101") => assert_eq!(g["keys"][1]["label"], "Ana Ruiz"),
            Some("202") => assert_eq!(g["keys"][1]["label"], "bo@example.com"),
            _ => assert!(g["keys"][1].get("label").is_none(), "unowned has no name"),
        }
    }
    // Within a month, owners by name, the unowned last.
    let first_month: Vec<&Value> = groups
        .iter()
        .filter(|g| g["keys"][0]["value"] == "2025-12")
        .map(|g| &g["keys"][1]["value"])
        .collect();
    assert_eq!(first_month, [&json!("101"), &json!("202"), &Value::Null]);
}

#[test]
fn groups_sort_by_a_metric_when_asked_and_totals_alone_need_no_group() {
    let mut portal = Portal::new(deals(90));
    let out = aggregate(
        &mut portal,
        SCOPES,
        json!({"object_type": "deals", "group_by": [{"property": "dealstage"}],
               "metrics": ["sum:amount"], "order_by": "sum:amount"}),
    )
    .unwrap();
    let sums: Vec<Decimal> = out["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| Decimal::parse(g["metrics"]["sum:amount"].as_str().unwrap()).unwrap())
        .collect();
    assert!(sums.windows(2).all(|w| w[0] >= w[1]), "{sums:?}");

    let mut portal = Portal::new(deals(90));
    let out = aggregate(&mut portal, SCOPES, json!({"object_type": "deals"})).unwrap();
    assert_eq!(out["totals"]["count"], 90);
    assert_eq!(out["groups"], json!([{"count": 90}]));
    assert!(
        portal.paths.iter().all(|p| p.ends_with("/search")),
        "a count reads nothing but the search: {:?}",
        portal.paths
    );
}

#[test]
fn what_cannot_be_aggregated_is_refused_before_any_search() {
    let cases = [
        (
            json!({"object_type": "deals", "metrics": ["sum:dealname"]}),
            "dealname is not a number property",
        ),
        (
            json!({"object_type": "deals", "group_by": [{"property": "dealstage", "bucket": "month"}]}),
            "dealstage is not a date",
        ),
        (
            json!({"object_type": "deals", "group_by": [{"property": "a"}, {"property": "b"}, {"property": "c"}]}),
            "at most two",
        ),
        (
            json!({"object_type": "deals", "metrics": ["median:amount"]}),
            "is not a metric",
        ),
        (
            json!({"object_type": "deals", "metrics": ["count"], "order_by": "sum:amount"}),
            "is not count or one of the metrics",
        ),
        (
            json!({"object_type": "deals", "group_by": [{"property": "no_such_thing"}]}),
            "crma_get_properties lists the names",
        ),
    ];
    for (input, expected) in cases {
        let mut portal = Portal::new(deals(10));
        let err = aggregate(&mut portal, SCOPES, input.clone()).unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidInput(_)) && err.to_string().contains(expected),
            "{input}: {err}"
        );
        assert_eq!(portal.searches, 0, "{input}: nothing searched");
    }
}

#[test]
fn without_the_read_scope_nothing_is_sent_and_without_owners_ids_stay_unnamed() {
    let mut portal = Portal::new(deals(10));
    let err = aggregate(&mut portal, &["oauth"], json!({"object_type": "deals"})).unwrap_err();
    assert!(err.to_string().contains("crm.objects.deals.read"), "{err}");
    assert!(portal.paths.is_empty(), "{:?}", portal.paths);

    let mut portal = Portal::new(deals(10));
    let out = aggregate(
        &mut portal,
        &["crm.objects.deals.read", "oauth"],
        json!({"object_type": "deals", "group_by": [{"property": "hubspot_owner_id"}]}),
    )
    .unwrap();
    assert!(
        out["groups"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["keys"][0].get("label").is_none())
    );
    assert!(
        out["note"].as_str().unwrap().contains("without names"),
        "{out}"
    );
    assert!(!portal.paths.iter().any(|p| p.ends_with("/owners")));
}

#[test]
fn more_groups_than_an_answer_can_hold_is_refused_with_what_to_do() {
    let mut many = deals(1_500);
    for (i, d) in many.iter_mut().enumerate() {
        // A different day for each deal.
        d.closedate = format!(
            "{}-{:02}-{:02}T12:00:00Z",
            2000 + i / 336,
            1 + (i / 28) % 12,
            1 + i % 28
        );
    }
    let mut portal = Portal::new(many);
    let err = aggregate(
        &mut portal,
        SCOPES,
        json!({"object_type": "deals", "group_by": [{"property": "closedate", "bucket": "day"}]}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("coarser bucket"), "{err}");
}

#[test]
fn the_workspaces_record_cap_bounds_what_one_call_reads_and_says_so() {
    use crate::policy::keys::MAX_RECORDS;
    let by_stage = json!({"object_type": "deals", "group_by": [{"property": "dealstage"}]});
    let mut portal = Portal::new(deals(1_000));
    let out = aggregate_with(
        &mut portal,
        SCOPES,
        &[(MAX_RECORDS, "500")],
        by_stage.clone(),
    )
    .unwrap();
    assert_eq!(out["records_read"], 500);
    assert_eq!(out["totals"]["count"], 500);
    assert_eq!(out["complete"], false);
    assert!(
        out["note"]
            .as_str()
            .unwrap()
            .contains("CRM_POLICY_MAX_RECORDS"),
        "{out}"
    );
    assert_eq!(portal.searches, 3, "stops reading at the cap");
    // Exactly the cap, and no more to read: complete.
    let mut portal = Portal::new(deals(400));
    let out = aggregate_with(&mut portal, SCOPES, &[(MAX_RECORDS, "400")], by_stage).unwrap();
    assert_eq!(
        (out["records_read"].as_u64(), out["complete"].as_bool()),
        (Some(400), Some(true))
    );
}
