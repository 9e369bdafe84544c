//! `crma_aggregate_records` through the real component in the host, against the sandbox
//! HubSpot seeded with 25,000 deals: every deal counted once (past the 10,000 a search can page
//! through), each stage's count and exact sum equal to a brute-force sum of the seeded deals,
//! the component's memory flat between 2,000 and 25,000 deals, and months in the account's
//! time zone (America/New_York).

use crate::fixtures::*;
use crm_host::{AuditLog, CallRequest, Host};
use crm_sandbox::SandboxCrm;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

fn acme_host() -> (Host, SandboxCrm, AuditLog) {
    let sandbox = SandboxCrm::new();
    let audit = AuditLog::in_memory();
    let host = Host::new(runtime(), Arc::new(sandbox.clone()), audit.clone());
    host.add_tenant(SandboxCrm::tenant_spec("acme"), plugin())
        .unwrap();
    (host, sandbox, audit)
}

fn aggregate(input: Value) -> CallRequest {
    CallRequest {
        tenant_id: "acme".into(),
        user_id: "demo-user".into(),
        granted_scopes: ALL_SCOPES.iter().map(|s| s.to_string()).collect(),
        instance_url: None,
        tool: "crma_aggregate_records".into(),
        input: input.to_string(),
    }
}

fn named(label: &str) -> Value {
    json!([{"filters": [{"property": "dealname", "operator": "CONTAINS_TOKEN", "value": label}]}])
}

/// Decimal text with at most two places, in cents: exact, as the sums must be.
fn cents(text: &str) -> i64 {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    assert!(fraction.len() <= 2, "{text}");
    whole.parse::<i64>().unwrap() * 100 + format!("{fraction:0<2}").parse::<i64>().unwrap()
}

/// Count and cents per stage, by brute force over the seeded deals.
fn by_stage(deals: &[Value]) -> BTreeMap<String, (u64, i64)> {
    let mut stages: BTreeMap<String, (u64, i64)> = BTreeMap::new();
    for deal in deals {
        let entry = stages
            .entry(deal["dealstage"].as_str().unwrap().to_string())
            .or_default();
        entry.0 += 1;
        let amount = deal["amount"].as_str().unwrap();
        if !amount.is_empty() {
            entry.1 += cents(amount);
        }
    }
    stages
}

fn check_stages(out: &Value, deals: &[Value]) {
    let expected = by_stage(deals);
    let groups = out["groups"].as_array().unwrap();
    assert_eq!(groups.len(), expected.len(), "{out}");
    for group in groups {
        let stage = group["keys"][0]["value"].as_str().unwrap();
        let (count, sum) = expected[stage];
        assert_eq!(group["count"], count, "{stage}");
        assert_eq!(
            cents(group["metrics"]["sum:amount"].as_str().unwrap()),
            sum,
            "{stage}"
        );
    }
    let total: i64 = expected.values().map(|(_, s)| s).sum();
    assert_eq!(
        cents(out["totals"]["metrics"]["sum:amount"].as_str().unwrap()),
        total
    );
    assert_eq!(out["totals"]["count"], deals.len());
    assert_eq!(out["records_read"], deals.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_five_thousand_deals_by_stage_every_one_counted_once_and_memory_flat() {
    let (host, sandbox, audit) = acme_host();
    let small = sandbox
        .seed_hubspot_deals("acme", 2_000, "Small2k")
        .unwrap();
    let large = sandbox
        .seed_hubspot_deals("acme", 25_000, "Bulk25k")
        .unwrap();
    let by_stage_input = |label: &str| {
        json!({"object_type": "deals", "filter_groups": named(label),
               "group_by": [{"property": "dealstage"}], "metrics": ["sum:amount", "avg:amount"]})
    };

    let out = output(host.call(aggregate(by_stage_input("Small2k"))).await);
    check_stages(&out, &small);
    let small_peak = last_peak(&audit);

    let started = Instant::now();
    let out = output(host.call(aggregate(by_stage_input("Bulk25k"))).await);
    let took = started.elapsed();
    let peak = last_peak(&audit);
    eprintln!(
        "aggregated 25,000 deals in {took:?}; peak linear memory {peak} bytes (2,000: {small_peak})"
    );
    check_stages(&out, &large);
    assert_eq!(out["complete"], true);
    assert_eq!(out["currency"], "USD");
    // Stages in the pipeline's order, named.
    let labels: Vec<&str> = out["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["keys"][0]["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels.first(), Some(&"Appointment Scheduled"), "{labels:?}");
    assert!(
        peak <= small_peak + (1 << 20),
        "25,000 deals peaked at {peak} bytes, 2,000 at {small_peak}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deals_closing_per_month_by_owner_in_the_accounts_zone() {
    let (host, sandbox, _audit) = acme_host();
    let deals = sandbox
        .seed_hubspot_deals("acme", 1_000, "Monthly1k")
        .unwrap();
    let out = output(
        host.call(aggregate(json!({
            "object_type": "deals", "filter_groups": named("Monthly1k"),
            "group_by": [{"property": "closedate", "bucket": "month"},
                         {"property": "hubspot_owner_id"}],
            "metrics": ["count", "sum:amount"]})))
            .await,
    );
    assert_eq!(out["time_zone"], "America/New_York");
    // By brute force: 02:30 UTC on a month's first day is the previous evening in New York.
    let mut expected: BTreeMap<(String, Option<String>), u64> = BTreeMap::new();
    for deal in &deals {
        let date = deal["closedate"].as_str().unwrap();
        let (year, month): (i32, u32) = (date[..4].parse().unwrap(), date[5..7].parse().unwrap());
        let month_key = if date[8..].starts_with("01T02:30") {
            if month == 1 {
                format!("{}-12", year - 1)
            } else {
                format!("{year}-{:02}", month - 1)
            }
        } else {
            date[..7].to_string()
        };
        let owner = deal["hubspot_owner_id"].as_str().map(str::to_string);
        *expected.entry((month_key, owner)).or_default() += 1;
    }
    let groups = out["groups"].as_array().unwrap();
    assert_eq!(groups.len(), expected.len(), "{out}");
    assert_eq!(
        groups[0]["keys"][0]["value"], "2025-12",
        "time order, from December"
    );
    for group in groups {
        let key = (
            group["keys"][0]["value"].as_str().unwrap().to_string(),
            group["keys"][1]["value"].as_str().map(str::to_string),
        );
        assert_eq!(group["count"], expected[&key], "{group}");
        if key.1.as_deref() == Some("81035700") {
            assert_eq!(group["keys"][1]["label"], "Dana Whitfield");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_masked_property_is_never_grouped_or_summed() {
    let sandbox = SandboxCrm::new();
    let host = Host::new(runtime(), Arc::new(sandbox.clone()), AuditLog::in_memory());
    let mut spec = SandboxCrm::tenant_spec("acme");
    spec.settings = vec![("CRM_POLICY_MASKED_FIELDS".into(), "amount".into())];
    host.add_tenant(spec, plugin()).unwrap();
    for input in [
        json!({"object_type": "deals", "metrics": ["sum:amount"]}),
        json!({"object_type": "deals", "group_by": [{"property": "amount"}]}),
    ] {
        let (kind, message) = tool_error(host.call(aggregate(input.clone())).await);
        assert_eq!(kind, "forbidden", "{input}: {message}");
        assert!(message.contains("amount"), "{message}");
    }
}
