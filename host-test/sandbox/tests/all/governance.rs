//! Writes an admin can govern (issue 14), end to end against the sandbox: preview and confirm,
//! the change journal and revert, the per-tenant policy, masked fields, provenance, and a
//! journal that outlives the host.

use crate::fixtures::{ALL_SCOPES, output, plugin, runtime, temp_dir, tool_error};
use crm_host::audit::AuditEvent;
use crm_host::tenant_db::DbLocation;
use crm_host::{AuditLog, CallRequest, Host};
use crm_sandbox::SandboxCrm;
use serde_json::{Value, json};
use std::sync::Arc;

const DEAL: &str = "357300";
const ACCOUNT: &str = "0015gA000000001ABA";

/// A host on `sandbox` with the sandbox tenants `tenants`, each with `settings`.
fn host_on(
    sandbox: &Arc<SandboxCrm>,
    audit: &AuditLog,
    tenants: &[&str],
    settings: &[(&str, &str)],
    mappings: impl Fn(&str) -> DbLocation,
) -> Host {
    let host = Host::new(runtime(), sandbox.clone(), audit.clone());
    for tenant in tenants {
        let mut spec = SandboxCrm::tenant_spec(tenant);
        spec.settings = settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        spec.mappings = mappings(tenant);
        host.add_tenant(spec, plugin()).unwrap();
    }
    host
}

fn sandbox_host(settings: &[(&str, &str)]) -> (Host, AuditLog) {
    let audit = AuditLog::in_memory();
    let sandbox = Arc::new(SandboxCrm::new());
    let host = host_on(&sandbox, &audit, &["acme", "globex"], settings, |_| {
        DbLocation::Memory
    });
    (host, audit)
}

fn request(tenant: &str, user: &str, tool: &str, input: Value) -> CallRequest {
    CallRequest {
        tenant_id: tenant.into(),
        user_id: user.into(),
        granted_scopes: ALL_SCOPES.iter().map(|s| s.to_string()).collect(),
        instance_url: Some(SandboxCrm::instance_url(tenant)),
        tool: tool.into(),
        input: input.to_string(),
    }
}

async fn run(host: &Host, tool: &str, input: Value) -> Result<String, crm_host::CallError> {
    host.call(request("acme", "ana", tool, input)).await
}

/// The writes (anything but a GET or a search) that went out.
fn writes(audit: &AuditLog) -> Vec<String> {
    audit
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AuditEvent::Request { method, path, .. }
                if method != "GET" && !path.ends_with("/search") =>
            {
                Some(format!("{method} {path}"))
            }
            _ => None,
        })
        .collect()
}

fn outgoing(audit: &AuditLog) -> usize {
    audit
        .events()
        .iter()
        .filter(|e| matches!(e, AuditEvent::Request { .. }))
        .count()
}

async fn deal_amount(host: &Host) -> Value {
    let deal = output(
        run(
            host,
            "crma_get_record",
            json!({"object_type": "deals", "record_id": DEAL, "properties": ["amount"]}),
        )
        .await,
    );
    deal["properties"]["amount"].clone()
}

fn update(amount: &str) -> Value {
    json!({"object_type": "deals", "record_id": DEAL, "properties": {"amount": amount}})
}

fn with(mut input: Value, key: &str, value: Value) -> Value {
    input[key] = value;
    input
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_writes_nothing_and_its_token_applies_it_once() {
    let (host, audit) = sandbox_host(&[("CRM_POLICY_CONFIRM_WRITES", "true")]);
    let before = deal_amount(&host).await;

    // Without a token the workspace refuses, and says to preview first.
    let (kind, message) = tool_error(run(&host, "crma_update_record", update("250000")).await);
    assert_eq!(kind, "invalid-input");
    assert!(message.contains("\"preview\": true first"), "{message}");

    let preview = output(
        run(
            &host,
            "crma_update_record",
            with(update("250000"), "preview", json!(true)),
        )
        .await,
    )["preview"]
        .clone();
    assert_eq!(preview["request"]["method"], "PATCH");
    assert_eq!(
        preview["request"]["path"],
        format!("/crm/v3/objects/deals/{DEAL}")
    );
    assert_eq!(
        preview["request"]["body"],
        json!({"properties": {"amount": "250000"}})
    );
    assert_eq!(
        preview["changes"]["amount"],
        json!({"current": before, "new": "250000"})
    );
    assert!(writes(&audit).is_empty(), "a preview writes nothing");
    assert_eq!(deal_amount(&host).await, before);

    let token = preview["confirmation_token"].clone();
    let applied = output(
        run(
            &host,
            "crma_update_record",
            with(update("250000"), "confirmation_token", token.clone()),
        )
        .await,
    );
    assert!(
        applied["change_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("chg_"))
    );
    assert_eq!(deal_amount(&host).await, "250000");
    assert_eq!(
        writes(&audit),
        [format!(
            "PATCH /sdk/proxy/hubspot/crm/v3/objects/deals/{DEAL}"
        )]
    );

    // The same token again: refused, nothing more written.
    let (kind, message) = tool_error(
        run(
            &host,
            "crma_update_record",
            with(update("250000"), "confirmation_token", token.clone()),
        )
        .await,
    );
    assert_eq!(kind, "invalid-input");
    assert!(message.contains("already used"), "{message}");
    // A token for another input, or altered, is refused too.
    let (_, message) = tool_error(
        run(
            &host,
            "crma_update_record",
            with(update("1"), "confirmation_token", token),
        )
        .await,
    );
    assert!(
        message.contains("already used") || message.contains("different input"),
        "{message}"
    );
    assert_eq!(writes(&audit).len(), 1, "written once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_from_another_tenant_or_user_or_past_its_time_is_refused() {
    let (host, audit) = sandbox_host(&[("CRM_POLICY_CONFIRM_TTL_SECONDS", "1")]);
    let create = json!({"object": "Task", "fields": {"Subject": "Call back"}});
    let preview = |tenant: &'static str, user: &'static str| {
        let host = &host;
        let create = create.clone();
        async move {
            let out = output(
                host.call(request(
                    tenant,
                    user,
                    "crmb_create_record",
                    with(create, "preview", json!(true)),
                ))
                .await,
            );
            out["preview"]["confirmation_token"].clone()
        }
    };
    let acme_token = preview("acme", "ana").await;
    let (kind, message) = tool_error(
        host.call(request(
            "globex",
            "ana",
            "crmb_create_record",
            with(create.clone(), "confirmation_token", acme_token.clone()),
        ))
        .await,
    );
    assert_eq!(kind, "invalid-input");
    assert!(
        message.contains("not issued for this workspace"),
        "{message}"
    );
    let (_, message) = tool_error(
        host.call(request(
            "acme",
            "bo",
            "crmb_create_record",
            with(create.clone(), "confirmation_token", acme_token),
        ))
        .await,
    );
    assert!(message.contains("another user"), "{message}");

    let token = preview("acme", "ana").await;
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    let (_, message) = tool_error(
        host.call(request(
            "acme",
            "ana",
            "crmb_create_record",
            with(create.clone(), "confirmation_token", token),
        ))
        .await,
    );
    assert!(message.contains("expired"), "{message}");
    assert!(writes(&audit).is_empty(), "no refused token wrote anything");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apply_after_the_record_changed_is_refused_and_says_what_changed() {
    let (host, audit) = sandbox_host(&[]);
    let before = deal_amount(&host).await;
    let preview = output(
        run(
            &host,
            "crma_update_record",
            with(update("300000"), "preview", json!(true)),
        )
        .await,
    );
    // Someone changes the deal meanwhile.
    output(run(&host, "crma_update_record", update("190000")).await);
    let token = preview["preview"]["confirmation_token"].clone();
    let (kind, message) = tool_error(
        run(
            &host,
            "crma_update_record",
            with(update("300000"), "confirmation_token", token),
        )
        .await,
    );
    assert_eq!(kind, "invalid-input");
    assert!(
        message.contains(&format!(
            "amount was {before} at the preview and is \"190000\" now"
        )),
        "{message}"
    );
    assert_eq!(writes(&audit).len(), 1, "only the other change was written");
    assert_eq!(deal_amount(&host).await, "190000");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_restores_old_values_and_refuses_when_the_field_moved_on() {
    let (host, _audit) = sandbox_host(&[]);
    let before = deal_amount(&host).await;
    let changed = output(run(&host, "crma_update_record", update("111")).await);
    let change_id = changed["change_id"].clone();

    let listed = output(run(&host, "crm_list_changes", json!({"record_id": DEAL})).await);
    let entry = &listed["changes"][0];
    assert_eq!(entry["change_id"], change_id);
    assert_eq!(entry["user_id"], "ana");
    assert_eq!(entry["old_values"], json!({"amount": before}));
    assert_eq!(entry["new_values"], json!({"amount": "111"}));
    assert_eq!(entry["revertible"], true);

    let reverted = output(run(&host, "crm_revert_change", json!({"change_id": change_id})).await);
    assert_eq!(reverted["restored"], json!({"amount": before}));
    assert_eq!(deal_amount(&host).await, before);

    // The field moved on since the change: the revert is refused, naming it.
    let second = output(run(&host, "crma_update_record", update("222")).await);
    output(run(&host, "crma_update_record", update("333")).await);
    let (kind, message) = tool_error(
        run(
            &host,
            "crm_revert_change",
            json!({"change_id": second["change_id"]}),
        )
        .await,
    );
    assert_eq!(kind, "invalid-input");
    assert!(
        message.contains("amount is \"333\", not the \"222\""),
        "{message}"
    );
    assert_eq!(deal_amount(&host).await, "333");

    // A create is never reverted: that would be a delete.
    let created = output(
        run(
            &host,
            "crma_create_record",
            json!({"object_type": "contacts", "properties": {"email": "new@acme.example.com"}}),
        )
        .await,
    );
    let (kind, message) = tool_error(
        run(
            &host,
            "crm_revert_change",
            json!({"change_id": created["change_id"]}),
        )
        .await,
    );
    assert_eq!(kind, "invalid-input");
    assert!(message.contains("would delete it"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_refusals_name_their_rule_and_send_nothing() {
    let (host, audit) = sandbox_host(&[
        ("CRM_POLICY_CRM_A_WRITABLE", "contacts, notes"),
        ("CRM_POLICY_NEVER_WRITTEN", "hubspot_owner_id"),
    ]);
    let (kind, message) = tool_error(run(&host, "crma_update_record", update("1")).await);
    assert_eq!(kind, "forbidden");
    assert!(
        message.contains("CRM_POLICY_CRM_A_WRITABLE") && message.contains("deals"),
        "{message}"
    );
    let (kind, message) = tool_error(
        run(&host, "crma_update_record", json!({"object_type": "contacts", "record_id": "357200", "properties": {"hubspot_owner_id": "1"}})).await,
    );
    assert_eq!(kind, "forbidden");
    assert!(message.contains("CRM_POLICY_NEVER_WRITTEN"), "{message}");
    assert_eq!(outgoing(&audit), 0, "nothing was sent for either");
    let tools = host.list_tools("acme").await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        !names.contains(&"crma_merge_companies"),
        "companies are not writable"
    );
    assert!(names.contains(&"crma_update_record") && names.contains(&"crma_log_activity"));

    let (read_only, audit) = sandbox_host(&[("CRM_POLICY_READ_ONLY", "true")]);
    let names: Vec<String> = read_only
        .list_tools("acme")
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    for hidden in [
        "crmb_create_record",
        "crma_update_record",
        "crm_revert_change",
    ] {
        assert!(!names.contains(&hidden.to_string()), "{hidden} is hidden");
    }
    assert!(names.contains(&"crm_list_changes".to_string()));
    let (kind, message) = tool_error(
        read_only
            .call(request(
                "acme",
                "ana",
                "crmb_update_record",
                json!({"object": "Account", "record_id": ACCOUNT, "fields": {"Phone": "1"}}),
            ))
            .await,
    );
    assert_eq!(kind, "forbidden");
    assert!(message.contains("CRM_POLICY_READ_ONLY"), "{message}");
    assert_eq!(outgoing(&audit), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn masked_fields_never_appear_in_any_answer_or_file() {
    let results = temp_dir("masked-results");
    let audit = AuditLog::in_memory();
    let host = Host::new(runtime(), Arc::new(SandboxCrm::new()), audit.clone());
    let mut spec = SandboxCrm::tenant_spec("acme");
    spec.settings = vec![("CRM_POLICY_MASKED_FIELDS".into(), "Phone, jobtitle".into())];
    spec.results_dir = Some(results.clone());
    host.add_tenant(spec, plugin()).unwrap();
    let secret_phone = "+1 713 555 0100";
    // None of these names a masked field in what it asks for, so each is answered, and the
    // masked values come back replaced: a whole record, a preview of a write to the field, and
    // an export to a file.
    let answers = [
        run(&host, "crmb_get_record", json!({"object": "Account", "record_id": ACCOUNT})).await,
        run(&host, "crma_get_record", json!({"object_type": "contacts", "record_id": "357200"})).await,
        run(&host, "crmb_update_record", json!({"object": "Account", "record_id": ACCOUNT, "fields": {"Phone": "+1 000"}, "preview": true})).await,
        run(&host, "crma_search_records", json!({"object_type": "contacts", "to_file": true})).await,
    ];
    let mut files = 0;
    for answer in answers {
        let text = answer.expect("answered");
        assert!(
            !text.contains(secret_phone) && !text.contains("VP Operations"),
            "{text}"
        );
        assert!(text.contains("[masked by workspace policy]"), "{text}");
        if let Ok(out) = serde_json::from_str::<Value>(&text)
            && let Some(path) = out["file_path"].as_str()
        {
            let lines = std::fs::read_to_string(path).unwrap();
            assert!(lines.contains("357200"), "{lines}");
            assert!(!lines.contains("VP Operations"), "{lines}");
            assert!(lines.contains("[masked by workspace policy]"), "{lines}");
            files += 1;
        }
    }
    assert_eq!(files, 1, "the export went to a file");
    // Naming a masked field to filter on would let its values be probed: refused, unsent.
    let sent = outgoing(&audit);
    for (tool, input) in [
        (
            "crmb_run_soql_query",
            json!({"query": format!("SELECT Id FROM Account WHERE Phone = '{secret_phone}'")}),
        ),
        (
            "crma_search_records",
            json!({"object_type": "contacts", "filter_groups": [{"filters": [{"property": "jobtitle", "operator": "EQ", "value": "VP Operations"}]}]}),
        ),
    ] {
        let (kind, message) = tool_error(run(&host, tool, input).await);
        assert_eq!(kind, "forbidden", "{tool}");
        assert!(message.contains("CRM_POLICY_MASKED_FIELDS"), "{message}");
    }
    assert_eq!(outgoing(&audit), sent, "nothing was sent for either");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_journal_outlives_the_host_and_a_second_host_sees_it() {
    let dir = temp_dir("journal");
    let file = |tenant: &str| DbLocation::File(dir.join(format!("{tenant}.sqlite")));
    let sandbox = Arc::new(SandboxCrm::new());
    let audit = AuditLog::in_memory();
    let first = host_on(&sandbox, &audit, &["acme"], &[], file);
    let second = host_on(&sandbox, &audit, &["acme"], &[], file);
    let changed = output(run(&first, "crma_update_record", update("444")).await);
    let seen = output(run(&second, "crm_list_changes", json!({})).await);
    assert_eq!(seen["changes"][0]["change_id"], changed["change_id"]);
    drop((first, second));

    let restarted = host_on(&sandbox, &audit, &["acme"], &[], file);
    let listed = output(run(&restarted, "crm_list_changes", json!({"user_id": "ana"})).await);
    assert_eq!(listed["changes"][0]["change_id"], changed["change_id"]);
    assert_eq!(listed["changes"][0]["status"], "applied");
    // The change is revertible from the restarted host.
    output(
        run(
            &restarted,
            "crm_revert_change",
            json!({"change_id": changed["change_id"]}),
        )
        .await,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn created_records_carry_the_admins_provenance_marker() {
    let (host, audit) = sandbox_host(&[("CRM_POLICY_CRM_A_PROVENANCE", "created_by_assistant")]);
    let created = output(
        run(
            &host,
            "crma_create_record",
            json!({"object_type": "contacts", "properties": {"email": "p@acme.example.com"}}),
        )
        .await,
    );
    let record = output(
        run(&host, "crma_get_record", json!({"object_type": "contacts", "record_id": created["id"], "properties": ["created_by_assistant"]})).await,
    );
    assert_eq!(record["properties"]["created_by_assistant"], "true");
    assert_eq!(writes(&audit).len(), 1);
}

/// Every write tool takes `"preview": true` and then writes nothing: each answers with the
/// request it would send and a token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_write_tool_previews_and_writes_nothing() {
    let (host, audit) = sandbox_host(&[]);
    let changed = output(run(&host, "crma_update_record", update("555")).await);
    let before = writes(&audit).len();
    for (tool, input, method) in [
        (
            "crma_create_record",
            json!({"object_type": "contacts", "properties": {"email": "x@acme.example.com"}}),
            "POST",
        ),
        ("crma_update_record", update("1"), "PATCH"),
        (
            "crma_merge_companies",
            json!({"primary_id": "357100", "merge_id": "357101"}),
            "POST",
        ),
        (
            "crma_create_association",
            json!({"object_type": "contacts", "record_id": "357201", "to_object_type": "companies", "to_record_id": "357102"}),
            "PUT",
        ),
        (
            "crma_log_activity",
            json!({"activity_type": "note", "properties": {"hs_note_body": "Called"}}),
            "POST",
        ),
        (
            "crmb_create_record",
            json!({"object": "Task", "fields": {"Subject": "Call back"}}),
            "POST",
        ),
        (
            "crmb_update_record",
            json!({"object": "Account", "record_id": ACCOUNT, "fields": {"Phone": "1"}}),
            "PATCH",
        ),
        (
            "crm_revert_change",
            json!({"change_id": changed["change_id"]}),
            "PATCH",
        ),
    ] {
        let out = output(run(&host, tool, with(input, "preview", json!(true))).await);
        assert_eq!(out["preview"]["request"]["method"], method, "{tool}: {out}");
        assert!(
            out["preview"]["confirmation_token"]
                .as_str()
                .is_some_and(|t| t.starts_with("cf1.")),
            "{tool}"
        );
    }
    assert_eq!(writes(&audit).len(), before, "no preview wrote anything");
}

/// The README's main command shows a governed write end to end: preview, apply with the token,
/// the journal, and the revert, in a `crm-sandbox demo` process of its own.
#[test]
fn the_demo_previews_applies_lists_and_reverts_a_change() {
    let dir = temp_dir("demo-governed");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_crm-sandbox"))
        .env("XDG_CACHE_HOME", crate::fixtures::cache_home())
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--results-dir")
        .arg(dir.join("results"))
        .arg("demo")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    for shown in [
        "\"confirmation_token\": \"cf1.",
        "\"current\": \"180000\"",
        "\"old_values\": {",
        "\"restored\": {",
    ] {
        assert!(text.contains(shown), "the demo shows {shown}:\n{text}");
    }
}

/// A revert reaches only the CRM its change was made in: with Salesforce disconnected a
/// HubSpot change is still put back, and a Salesforce one says to reconnect, sending nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_needs_only_the_crm_of_its_change() {
    use crm_host::egress::Crm;
    let (host, audit) = sandbox_host(&[]);
    let hubspot = output(run(&host, "crma_update_record", update("666")).await);
    let salesforce = output(
        run(
            &host,
            "crmb_update_record",
            json!({"object": "Account", "record_id": ACCOUNT, "fields": {"Phone": "+1 555"}}),
        )
        .await,
    );
    host.disconnect("acme", Crm::Salesforce).unwrap();
    let before = writes(&audit).len();
    output(
        run(
            &host,
            "crm_revert_change",
            json!({"change_id": hubspot["change_id"]}),
        )
        .await,
    );
    assert_eq!(
        writes(&audit).len(),
        before + 1,
        "the HubSpot revert went out"
    );
    let (kind, _) = tool_error(
        run(
            &host,
            "crm_revert_change",
            json!({"change_id": salesforce["change_id"]}),
        )
        .await,
    );
    assert_eq!(kind, "not-connected");
    assert_eq!(
        writes(&audit).len(),
        before + 1,
        "nothing went to Salesforce"
    );
}
