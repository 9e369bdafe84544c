//! `crm-sandbox demo`: a short tour against the sandbox, what a newcomer should see the plugin do.

use super::report;
use crate::{CallRequest, Host};
use std::process::ExitCode;

/// A short tour: what a newcomer should see the plugin do.
pub(crate) async fn demo(
    host: &Host,
    request: &dyn Fn(&str, &str) -> CallRequest,
) -> Result<ExitCode, String> {
    let tools = host.list_tools("acme").await.map_err(|e| e.to_string())?;
    println!("# crm-plugin against the sandbox CRM (tenant acme)\n");
    println!("## Tools this build offers");
    for tool in &tools {
        println!(
            "- {}{}",
            tool.name,
            if tool.read_only { " (read-only)" } else { "" }
        );
    }
    let steps: &[(&str, &str, &str)] = &[
        (
            "Open opportunities closing this month, biggest first",
            "crmb_run_soql_query",
            r#"{"query":"SELECT Id, Name, StageName, Amount, CloseDate, Account.Name FROM Opportunity WHERE IsClosed = false AND CloseDate = THIS_MONTH ORDER BY Amount DESC","max_records":5}"#,
        ),
        (
            "What can be set on an opportunity's stage?",
            "crmb_get_object_fields",
            r#"{"object":"Opportunity","name_contains":"stage"}"#,
        ),
        (
            "Fetch an account with chosen fields",
            "crmb_get_record",
            r#"{"object":"Account","record_id":"0015gA000000001ABA","fields":["Name","Industry","AnnualRevenue"]}"#,
        ),
        (
            "Log a follow-up task on the biggest deal",
            "crmb_create_record",
            r#"{"object":"Task","fields":{"Subject":"Send the renewal quote","WhatId":"0065gA000000004ABA","Status":"Not Started"}}"#,
        ),
        (
            "Move that deal forward",
            "crmb_update_record",
            r#"{"object":"Opportunity","record_id":"0065gA000000004ABA","fields":{"StageName":"Negotiation/Review"}}"#,
        ),
        (
            "Build a link to an opportunity",
            "crmb_generate_record_url",
            r#"{"object":"Opportunity","record_id":"0065gA000000001ABA"}"#,
        ),
        (
            "A locking query is refused before anything is sent",
            "crmb_run_soql_query",
            r#"{"query":"SELECT Id FROM Opportunity FOR UPDATE"}"#,
        ),
        (
            "A mistyped id is refused before anything is sent",
            "crmb_get_record",
            r#"{"object":"Account","record_id":"0015gA000000001ABX"}"#,
        ),
        (
            "A field name Salesforce does not know",
            "crmb_run_soql_query",
            r#"{"query":"SELECT Nmae FROM Account"}"#,
        ),
        (
            "HubSpot: open deals over $40,000, biggest first",
            "crma_search_records",
            r#"{"object_type":"deals","filter_groups":[{"filters":[{"property":"amount","operator":"GT","value":40000},{"property":"dealstage","operator":"NOT_IN","values":["closedwon","closedlost"]}]}],"sorts":[{"property":"amount","direction":"DESCENDING"}],"properties":["dealname","amount","dealstage","closedate"],"limit":3}"#,
        ),
        (
            "HubSpot: which stages can a deal be in?",
            "crma_get_pipeline_stages",
            r#"{"object_type":"deals","pipeline_id":"default"}"#,
        ),
        (
            "HubSpot: log the call about the biggest renewal, on the deal and its contact",
            "crma_log_activity",
            r#"{"activity_type":"call","properties":{"hs_call_title":"Renewal check-in","hs_call_body":"Agreed to send the quote by Friday","hs_call_direction":"OUTBOUND","hs_call_status":"COMPLETED"},"associations":[{"to_object_type":"deals","to_record_id":"357300"},{"to_object_type":"contacts","to_record_id":"357200"}]}"#,
        ),
        (
            "HubSpot: the deal's calls now include it",
            "crma_get_associations",
            r#"{"object_type":"deals","record_id":"357300","to_object_type":"calls"}"#,
        ),
        (
            "HubSpot: sync users and owners into the local mappings (run the demo twice: all unchanged)",
            "crma_sync_users",
            "{}",
        ),
        (
            "HubSpot: a link to the deal",
            "crma_generate_record_url",
            r#"{"object_type":"deals","record_id":"357300"}"#,
        ),
        (
            "HubSpot: pipeline value by stage (every deal read, only the groups answered)",
            "crma_aggregate_records",
            r#"{"object_type":"deals","group_by":[{"property":"dealstage"}],"metrics":["sum:amount","avg:amount"]}"#,
        ),
        (
            "HubSpot: deals closing per quarter by owner, in the account's time zone",
            "crma_aggregate_records",
            r#"{"object_type":"deals","group_by":[{"property":"closedate","bucket":"quarter"},{"property":"hubspot_owner_id"}],"metrics":["sum:amount"]}"#,
        ),
        (
            "Salesforce: what happened with Maria Lopez lately?",
            "crm_record_timeline",
            r#"{"crm":"salesforce","record_id":"0035gA000000001ABA","limit":5}"#,
        ),
        (
            "Is Maria Garcia the same customer in both CRMs, and what disagrees?",
            "crm_find_across",
            r#"{"email":"maria.garcia@acme-energy.example.com"}"#,
        ),
        (
            "Are both CRMs connected, with the scopes and API access they need?",
            "crm_connection_status",
            "{}",
        ),
    ];
    for (title, tool, input) in steps {
        println!("\n## {title}\n$ crm-sandbox call {tool} '{input}'");
        report(host.call(request(tool, input)).await);
    }
    let (tool, input) = (
        "crm_record_timeline",
        r#"{"crm":"hubspot","object_type":"contacts","record_id":"357200","limit":5}"#,
    );
    println!(
        "\n## HubSpot: Maria Garcia's latest activities (needs the spec's optional timeline scope)\n\
         $ crm-sandbox --scopes <the required scopes>,timeline call {tool} '{input}'"
    );
    let mut with_timeline = request(tool, input);
    with_timeline.granted_scopes.push("timeline".into());
    report(host.call(with_timeline).await);
    governed(host, request).await;
    let read_only = "crm.objects.deals.read";
    let tool = "crma_create_record";
    let input = r#"{"object_type":"deals","properties":{"dealname":"Expansion"}}"#;
    println!(
        "\n## HubSpot: with only {read_only} granted, a create is refused before anything is sent\n\
         $ crm-sandbox --scopes {read_only} call {tool} '{input}'"
    );
    let mut limited = request(tool, input);
    limited.granted_scopes = vec![read_only.into()];
    report(host.call(limited).await);
    println!("\nRun `crm-host --help` for more; `--audit -` shows the audit trail.");
    Ok(ExitCode::SUCCESS)
}

/// A governed write: preview, apply with the preview's token, the journal, and a revert.
async fn governed(host: &Host, request: &dyn Fn(&str, &str) -> CallRequest) {
    let step = async |title: &str, tool: &str, input: String| {
        println!("\n## {title}\n$ crm-sandbox call {tool} '{input}'");
        let out = host.call(request(tool, &input)).await;
        let value = out
            .as_ref()
            .ok()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok());
        report(out);
        value.unwrap_or_default()
    };
    let update = r#""object_type":"deals","record_id":"357300","properties":{"amount":"195000"}"#;
    let preview = step(
        "HubSpot: preview a change to the deal (nothing is written; current value beside new)",
        "crma_update_record",
        format!(r#"{{{update},"preview":true}}"#),
    )
    .await;
    let Some(token) = preview["preview"]["confirmation_token"].as_str() else {
        return;
    };
    let applied = step(
        "HubSpot: apply it with the preview's token (good once, for this user and input)",
        "crma_update_record",
        format!(r#"{{{update},"confirmation_token":"{token}"}}"#),
    )
    .await;
    step(
        "The change journal: what the assistant changed, with the values it overwrote",
        "crm_list_changes",
        r#"{"record_id":"357300","limit":1}"#.into(),
    )
    .await;
    if let Some(change) = applied["change_id"].as_str() {
        step(
            "Put the old value back",
            "crm_revert_change",
            format!(r#"{{"change_id":"{change}"}}"#),
        )
        .await;
    }
}
