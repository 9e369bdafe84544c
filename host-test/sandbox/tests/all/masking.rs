//! Masked means masked, by meaning and by every route (issue 21): Salesforce compound fields,
//! result files read after a field was masked (and expired ones), HubSpot's free-text search
//! and owner lookup, and the words of an error.

use crate::fixtures::*;
use crate::mcp::answer;
use crm_host::audit::AuditEvent;
use crm_host::{AuditLog, Backend, CallRequest, Host};
use crm_sandbox::SandboxCrm;
use serde_json::{Value, json};
use std::sync::Arc;

const MASKED: &str = "[masked by workspace policy]";
const MARIA: &str = "0035gA000000001ABA";
const ACME_ACCOUNT: &str = "0015gA000000001ABA";

fn request(tool: &str, input: Value) -> CallRequest {
    CallRequest {
        tenant_id: "acme".into(),
        user_id: "ana".into(),
        granted_scopes: ALL_SCOPES.iter().map(|s| s.to_string()).collect(),
        instance_url: Some(SandboxCrm::instance_url("acme")),
        tool: tool.into(),
        input: input.to_string(),
    }
}

/// The acme sandbox tenant masking `masked`, with its result files in `results`.
fn masking_host(masked: &str, results: Option<&std::path::Path>) -> (Host, AuditLog) {
    let audit = AuditLog::in_memory();
    let host = Host::new(runtime(), Arc::new(SandboxCrm::new()), audit.clone());
    let mut spec = SandboxCrm::tenant_spec("acme");
    spec.settings = vec![
        ("CRM_POLICY_MASKED_FIELDS".into(), masked.into()),
        ("CRM_FILE_THRESHOLD_RECORDS".into(), "1".into()),
    ];
    spec.results_dir = results.map(std::path::Path::to_path_buf);
    host.add_tenant(spec, plugin()).unwrap();
    (host, audit)
}

fn sent(audit: &AuditLog) -> usize {
    audit
        .events()
        .iter()
        .filter(|e| matches!(e, AuditEvent::Request { .. }))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_masked_part_masks_its_compound_and_a_masked_compound_its_parts() {
    let (host, audit) = masking_host("LastName, BillingCity, MailingAddress", None);
    // A whole Contact: LastName is masked, so is Name, which holds it.
    let maria = output(
        host.call(request(
            "crmb_get_record",
            json!({"object": "Contact", "record_id": MARIA}),
        ))
        .await,
    );
    let record = &maria["record"];
    assert_eq!(record["LastName"], MASKED);
    assert_eq!(record["Name"], MASKED, "{record}");
    assert_eq!(record["FirstName"], "Maria");
    let text = maria.to_string();
    assert!(!text.contains("Lopez"), "{text}");
    // A whole Account: BillingCity is masked, so is BillingAddress; its sibling is not.
    let account = output(
        host.call(request(
            "crmb_get_record",
            json!({"object": "Account", "record_id": ACME_ACCOUNT}),
        ))
        .await,
    );
    assert_eq!(account["record"]["BillingAddress"], MASKED);
    assert_eq!(account["record"]["BillingCity"], MASKED);
    assert_eq!(account["record"]["BillingCountry"], "United States");
    assert_eq!(
        account["record"]["Name"], "Acme Energy",
        "an account's Name is its own"
    );
    assert!(!account.to_string().contains("Houston"));
    // Naming a compound of a masked field, in any clause or through a relationship: refused,
    // and nothing is sent.
    let before = sent(&audit);
    for query in [
        "SELECT Name FROM Contact",
        "SELECT Id FROM Contact WHERE Name LIKE 'Maria L%'",
        "SELECT Id, Owner.Name FROM Account",
        "SELECT Id FROM Account WHERE BillingAddress != null",
        "SELECT Id, MailingCity FROM Contact",
    ] {
        let (kind, message) = tool_error(
            host.call(request("crmb_run_soql_query", json!({"query": query})))
                .await,
        );
        assert_eq!(kind, "forbidden", "{query}");
        assert!(message.contains("masked"), "{query}: {message}");
    }
    let (kind, _) = tool_error(
        host.call(request(
            "crmb_get_record",
            json!({"object": "Contact", "record_id": MARIA, "fields": ["Name"]}),
        ))
        .await,
    );
    assert_eq!(kind, "forbidden");
    assert_eq!(sent(&audit), before, "nothing was sent for any of them");
    // What is not a compound of a masked field still reads.
    let accounts = output(
        host.call(request(
            "crmb_run_soql_query",
            json!({"query": "SELECT Id, Name FROM Account WHERE Name = 'Acme Energy'"}),
        ))
        .await,
    );
    assert!(accounts.to_string().contains("Acme Energy"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_describes_compounds_as_salesforce_does_and_our_rules_agree() {
    let sandbox = SandboxCrm::new();
    let credential = SandboxCrm::credential("acme");
    for object in ["Contact", "Account", "Lead", "User"] {
        let uri = format!(
            "{}/sdk/proxy/salesforce/services/data/v62.0/sobjects/{object}/describe",
            crm_sandbox::SANDBOX_PROXY_BASE
        );
        let request = ::http::Request::get(uri)
            .header(crm_host::credential::CREDENTIAL_HEADER, &credential)
            .body(bytes::Bytes::new())
            .unwrap();
        let response = sandbox.send(request).await.unwrap();
        let describe: Value = serde_json::from_slice(response.body()).unwrap();
        let fields = describe["fields"]
            .as_array()
            .expect("a describe lists fields");
        let mut compounds = 0;
        for field in fields {
            let (Some(name), Some(compound)) =
                (field["name"].as_str(), field["compoundFieldName"].as_str())
            else {
                continue;
            };
            compounds += 1;
            // Masking the part masks the compound, and masking the compound masks the part.
            let part = vec![name.to_ascii_lowercase()];
            let whole = vec![compound.to_ascii_lowercase()];
            let person = matches!(object, "Contact" | "Lead" | "User");
            use crm_plugin::crmb::compound::shows_masked;
            assert!(
                shows_masked(compound, person, &part).is_some(),
                "{object}.{compound} of {name}"
            );
            assert!(
                shows_masked(name, person, &whole).is_some(),
                "{object}.{name} in {compound}"
            );
        }
        if object == "Contact" {
            assert!(compounds >= 2, "FirstName and LastName are parts of Name");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_written_before_a_field_was_masked_is_masked_as_read_and_old_files_expire() {
    use crm_host::mcp::{Authority, McpServer, Principal};
    use rmcp::ServiceExt;
    let results = temp_dir("masking-files");
    // Written while nothing was masked.
    let (open, _) = masking_host("", Some(&results));
    let written = output(
        open.call(request(
            "crmb_run_soql_query",
            json!({"query": "SELECT Id, Name, Phone FROM Account"}),
        ))
        .await,
    );
    let path = written["file_path"].as_str().unwrap().to_string();
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("+1 713 555 0100")
    );
    let name = path.rsplit('/').next().unwrap().to_string();
    // The admin masks Phone; the same files are read through MCP afterwards.
    let (masking, _) = masking_host("Phone", Some(&results));
    let principal = Principal {
        tenant_id: "acme".into(),
        user_id: "ana".into(),
        granted_scopes: ALL_SCOPES.iter().map(|s| s.to_string()).collect(),
        instance_url: None,
        authority: Authority::Process,
    };
    let (server_end, client_end) = tokio::io::duplex(1 << 20);
    let server = McpServer::for_principal(Arc::new(masking), principal);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_end).await.unwrap();
    let uri = format!("crm-results://files/{name}");
    let resource = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(uri.clone()))
        .await
        .unwrap();
    let text = format!("{:?}", resource.contents);
    assert!(!text.contains("555 0100"), "{text}");
    assert!(text.contains(MASKED), "{text}");
    let paged = client
        .call_tool(crate::mcp::call(
            "crm_read_result_file",
            json!({"file": name.clone()}),
        ))
        .await
        .unwrap();
    let paged = answer(&paged).to_string();
    assert!(
        !paged.contains("555 0100") && paged.contains(MASKED),
        "{paged}"
    );

    // A day later the file is gone: not listed, not readable, deleted.
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    let two_days_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 86_400);
    file.set_modified(two_days_ago).unwrap();
    drop(file);
    let listed = client.list_all_resources().await.unwrap();
    assert!(listed.iter().all(|r| r.uri != uri), "{listed:?}");
    assert!(
        client
            .read_resource(rmcp::model::ReadResourceRequestParams::new(uri))
            .await
            .is_err()
    );
    assert!(
        !std::path::Path::new(&path).exists(),
        "an expired file is deleted"
    );
    client.cancel().await.unwrap();
    let _ = std::fs::remove_dir_all(&results);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hubspot_free_text_and_owner_lookups_cannot_probe_a_masked_value() {
    let (host, audit) = masking_host("email", None);
    let before = sent(&audit);
    let (kind, message) = tool_error(
        host.call(request(
            "crma_search_records",
            json!({"object_type": "contacts", "query": "maria.l"}),
        ))
        .await,
    );
    assert_eq!(kind, "forbidden");
    assert!(message.contains("email"), "{message}");
    let (kind, _) = tool_error(
        host.call(request(
            "crma_list_owners",
            json!({"email": "dana@acme.example.com"}),
        ))
        .await,
    );
    assert_eq!(kind, "forbidden", "a yes/no answer on a masked e-mail");
    assert_eq!(sent(&audit), before, "nothing was sent");
    // Searching a type whose searchable properties are not masked still works, and so does
    // listing owners without the e-mail filter (their e-mails come back masked).
    output(
        host.call(request(
            "crma_search_records",
            json!({"object_type": "deals", "query": "renewal"}),
        ))
        .await,
    );
    let owners = output(host.call(request("crma_list_owners", json!({}))).await);
    assert!(
        !owners.to_string().contains("dana@acme.example.com"),
        "{owners}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_about_a_masked_field_does_not_carry_its_value() {
    use crm_sandbox::stub::{Reply, StubBackend};
    // HubSpot's validation error quotes the value it refused (its documented error shape).
    let stub = StubBackend::with_handler(|_| {
        Reply::json(
            400,
            json!({"status": "error", "message": "Property values were not valid: [{\"isValid\":false,\"message\":\"maria@@example.com is not a valid email address\",\"error\":\"INVALID_EMAIL\",\"name\":\"email\"}]", "correlationId": "c-1", "category": "VALIDATION_ERROR"}),
        )
    });
    let audit = AuditLog::in_memory();
    let host = Host::new(runtime(), Arc::new(stub), audit);
    let mut spec = hs_tenant("acme", crm_host::tenant_db::DbLocation::Memory);
    spec.settings
        .push(("CRM_POLICY_MASKED_FIELDS".into(), "email".into()));
    host.add_tenant(spec, plugin()).unwrap();
    let (kind, message) = tool_error(
        host.call(request(
            "crma_update_record",
            json!({"object_type": "contacts", "record_id": "51", "properties": {"firstname": "Maria"}}),
        ))
        .await,
    );
    assert_eq!(kind, "crm-error", "{message}");
    assert!(!message.contains("maria@@example.com"), "{message}");
    assert!(message.contains(MASKED), "{message}");
}
