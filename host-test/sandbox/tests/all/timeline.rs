//! `crm_record_timeline` through the real component in the host, against the sandbox: Maria
//! Garcia's HubSpot activities (a note, a call, a meeting, an email and a task planted on her
//! contact) newest first and paged without repeats, and a Salesforce contact's Task and Event.
//! Without the `timeline` scope nothing is sent; a masked body never shows.

use crate::fixtures::{ALL_SCOPES, ok, plugin, runtime, tool_error};
use crm_host::{AuditLog, CallRequest, Host};
use crm_sandbox::SandboxCrm;
use serde_json::{Value, json};
use std::sync::Arc;

fn acme(settings: &[(&str, &str)]) -> Host {
    let host = Host::new(
        runtime(),
        Arc::new(SandboxCrm::new()),
        AuditLog::in_memory(),
    );
    let mut spec = SandboxCrm::tenant_spec("acme");
    spec.settings = settings
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    host.add_tenant(spec, plugin()).unwrap();
    host
}

fn timeline(input: Value, timeline_scope: bool) -> CallRequest {
    let extra: &[&str] = if timeline_scope { &["timeline"] } else { &[] };
    CallRequest {
        tenant_id: "acme".into(),
        user_id: "demo-user".into(),
        granted_scopes: ALL_SCOPES
            .iter()
            .chain(extra)
            .map(|s| s.to_string())
            .collect(),
        instance_url: Some(SandboxCrm::instance_url("acme")),
        tool: "crm_record_timeline".into(),
        input: input.to_string(),
    }
}

fn maria(extra: Value) -> Value {
    let mut input = json!({"crm": "hubspot", "object_type": "contacts", "record_id": "357200"});
    input
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    input
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hubspot_contacts_activities_newest_first_paged_without_repeats() {
    let host = acme(&[]);
    let out = ok(host.call(timeline(maria(json!({})), true)).await);
    let kinds: Vec<&str> = out["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["task", "email", "meeting", "call", "note"], "{out}");
    let times: Vec<&str> = out["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["time"].as_str().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");
    let call = &out["items"][3];
    assert_eq!(call["subject"], "Renewal pricing call");
    assert_eq!(call["owner"], "Dana Whitfield");
    assert!(
        call["url"]
            .as_str()
            .unwrap()
            .ends_with("/contacts/24681357/record/0-1/357200"),
        "{call}"
    );
    assert!(out.get("next_cursor").is_none(), "{out}");

    // Two at a time: the same five, in the same order, each once.
    let mut paged = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..5 {
        let mut input = maria(json!({"limit": 2}));
        if let Some(c) = &cursor {
            input["cursor"] = json!(c);
        }
        let page = ok(host.call(timeline(input, true)).await);
        for item in page["items"].as_array().unwrap() {
            paged.push(item["id"].as_str().unwrap().to_string());
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    let all: Vec<String> = out["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(paged, all);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_salesforce_contacts_tasks_and_events_with_links() {
    let host = acme(&[]);
    let out = ok(host
        .call(timeline(
            json!({"crm": "salesforce", "record_id": "0035gA000000001ABA"}),
            false,
        ))
        .await);
    let items = out["items"].as_array().unwrap();
    let subjects: Vec<&str> = items
        .iter()
        .map(|i| i["subject"].as_str().unwrap())
        .collect();
    assert_eq!(
        subjects,
        ["Renewal negotiation meeting", "Send revised renewal quote"],
        "{out}"
    );
    assert_eq!(items[0]["type"], "event");
    assert_eq!(items[1]["owner"], "Dana Whitfield");
    assert!(
        items[1]["url"]
            .as_str()
            .unwrap()
            .ends_with("/lightning/r/Task/00T5gA000000001EBA/view"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_timeline_scope_nothing_is_sent_and_a_masked_body_never_shows() {
    let host = acme(&[]);
    let (kind, message) = tool_error(host.call(timeline(maria(json!({})), false)).await);
    assert_eq!(kind, "missing-scopes", "{message}");
    assert!(message.contains("timeline"), "{message}");

    let host = acme(&[(
        "CRM_POLICY_MASKED_FIELDS",
        "hs_call_body,hs_note_body,Description",
    )]);
    let out = ok(host.call(timeline(maria(json!({})), true)).await);
    let text = out.to_string();
    assert!(!text.contains("three-year price"), "{text}");
    assert!(!text.contains("Kick-off call went well"), "{text}");
    assert_eq!(out["items"].as_array().unwrap().len(), 5);
}
