//! What one caller may reach, through real HTTP (issue 35): a masked value by no route
//! (relationships, stored answers, group keys, labels, conflicts), no more records than the
//! workspace cap whatever the caller omits, no other user's results, and none of the smaller
//! holes (a JWT's unknown `crit`, a provider's subject taken for the operator's user of the
//! same name, a trap's backtrace, issuers told to strangers).

use crate::fixtures::*;
use crate::http_server::{
    Conn, IDP_PRIVATE_KEY, IDP_PUBLIC_KEY, INITIALIZE, claims, serve_in_process, signed_by,
};
use crate::mcp::{answer, call, http_client};
use crate::tasks::Poller;
use crm_host::mcp::tenants::token_hash;
use crm_sandbox::SandboxCrm;
use rmcp::model::{CallToolResponse, GetTaskParams, ReadResourceRequestParams};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const MASKED: &str = "[masked by workspace policy]";
const MARIA: &str = "0035gA000000001ABA";
const OPPORTUNITY: &str = "0065gA000000001ABA";
const DANA: &str = "0055gA000000001ABA";

/// acme (and globex) from `sandbox` in one host, each with `settings` and its result files
/// under `dir/<tenant>`.
fn tenants_on(sandbox: SandboxCrm, dir: &Path, settings: &[(&str, &str)]) -> Arc<crm_host::Host> {
    let host = Arc::new(host_with(Arc::new(sandbox), &[]));
    for tenant in ["acme", "globex"] {
        host.add_tenant(spec(tenant, dir, settings), plugin())
            .unwrap();
    }
    host
}

fn spec(tenant: &str, dir: &Path, settings: &[(&str, &str)]) -> crm_host::TenantSpec {
    let mut spec = SandboxCrm::tenant_spec(tenant);
    spec.mappings = crm_host::tenant_db::DbLocation::Memory;
    spec.results_dir = Some(dir.join(tenant));
    spec.settings
        .extend(settings.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    spec
}

/// The tenants file: acme's alice and bob, globex's bob; `extra` appended.
fn tenants_file(extra: &str) -> String {
    format!(
        "[[tenants]]\nid = \"acme\"\n[[tenants]]\nid = \"globex\"\n\
         [[tokens]]\nsha256 = \"{}\"\ntenant = \"acme\"\nuser = \"alice\"\n\
         [[tokens]]\nsha256 = \"{}\"\ntenant = \"acme\"\nuser = \"bob\"\n\
         [[tokens]]\nsha256 = \"{}\"\ntenant = \"globex\"\nuser = \"bob\"\n{extra}",
        token_hash("acme-token"),
        token_hash("acme-bob-token"),
        token_hash("globex-token"),
    )
}

/// What a call answered, as text: the answer, or the tool error, or the protocol error.
async fn said(client: &RunningService<RoleClient, ()>, tool: &'static str, input: Value) -> String {
    match client.call_tool(call(tool, input)).await {
        Ok(result) => serde_json::to_string(&result).unwrap(),
        Err(e) => e.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_masked_last_name_reaches_the_model_by_no_route() {
    let dir = temp_dir("contain-routes");
    let host = tenants_on(
        SandboxCrm::new(),
        &dir,
        &[("CRM_POLICY_MASKED_FIELDS", "LastName")],
    );
    let url = serve_in_process(host, &tenants_file("")).await;
    let alice = http_client(&url, "acme-token").await;
    let routes: Vec<(&'static str, Value)> = vec![
        // Relationships: the owner of every activity on a contact's and an opportunity's
        // timeline is a User, whose Name holds LastName.
        (
            "crm_record_timeline",
            json!({"crm": "salesforce", "record_id": MARIA}),
        ),
        (
            "crm_record_timeline",
            json!({"crm": "salesforce", "record_id": OPPORTUNITY}),
        ),
        (
            "crmb_run_soql_query",
            json!({"query": "SELECT Id, Subject, Owner.Name FROM Task"}),
        ),
        (
            "crmb_run_soql_query",
            json!({"query": "SELECT Id, Who.Name FROM Task"}),
        ),
        (
            "crmb_run_soql_query",
            json!({"query": "SELECT Id, CreatedBy.LastName FROM Opportunity"}),
        ),
        (
            "crmb_run_soql_query",
            json!({"query": "SELECT Id, (SELECT Name FROM Contacts) FROM Account"}),
        ),
        // Group keys, filters, sorts.
        (
            "crmb_run_soql_query",
            json!({"query": "SELECT LastName, COUNT(Id) FROM Contact GROUP BY LastName"}),
        ),
        (
            "crmb_run_soql_query",
            json!({"query": "SELECT Id FROM Contact WHERE LastName = 'Lopez'"}),
        ),
        (
            "crmb_run_soql_query",
            json!({"query": "SELECT Id, FirstName FROM Contact ORDER BY Name"}),
        ),
        // The fields of a person, whole.
        (
            "crmb_get_record",
            json!({"object": "User", "record_id": DANA}),
        ),
        (
            "crmb_get_record",
            json!({"object": "Contact", "record_id": MARIA}),
        ),
        // Compared fields across both CRMs, owners' names in HubSpot, and owner labels of
        // group keys.
        (
            "crm_find_across",
            json!({"email": "maria.lopez@example.com"}),
        ),
        ("crma_list_owners", json!({})),
        (
            "crma_aggregate_records",
            json!({"object_type": "deals", "group_by": [{"property": "hubspot_owner_id"}]}),
        ),
        // A preview shows the current value of what a write would change.
        (
            "crmb_update_record",
            json!({"object": "Contact", "record_id": MARIA, "fields": {"LastName": "Smith"},
                   "preview": true}),
        ),
        // Free text over a masked searchable property, and the property asked for.
        (
            "crma_search_records",
            json!({"object_type": "contacts", "query": "Whitfield"}),
        ),
        (
            "crma_search_records",
            json!({"object_type": "contacts", "properties": ["lastname"]}),
        ),
    ];
    for (tool, input) in routes {
        let text = said(&alice, tool, input.clone()).await;
        for last_name in ["Whitfield", "Lopez"] {
            assert!(
                !text.contains(last_name),
                "{tool} {input} shows {last_name}: {text}"
            );
        }
    }
    // The timeline still answers, with the owner masked rather than left out.
    let timeline = answer(
        &alice
            .call_tool(call(
                "crm_record_timeline",
                json!({"crm": "salesforce", "record_id": MARIA}),
            ))
            .await
            .unwrap(),
    );
    let items = timeline["items"].as_array().unwrap();
    assert!(!items.is_empty(), "{timeline}");
    assert!(items.iter().all(|i| i["owner"] == MASKED), "{timeline}");
    // Metrics and group keys over a masked number, and a filter on it: refused, not computed.
    let masked_amount = tenants_on(
        SandboxCrm::new(),
        &dir.join("amount"),
        &[("CRM_POLICY_MASKED_FIELDS", "amount")],
    );
    let url = serve_in_process(masked_amount, &tenants_file("")).await;
    let alice = http_client(&url, "acme-token").await;
    for input in [
        json!({"object_type": "deals", "metrics": ["sum:amount"]}),
        json!({"object_type": "deals", "group_by": [{"property": "amount"}]}),
        json!({"object_type": "deals", "filter_groups": [{"filters": [
            {"property": "amount", "operator": "GT", "value": "1000"}]}]}),
    ] {
        let result = alice
            .call_tool(call("crma_aggregate_records", input.clone()))
            .await
            .unwrap();
        assert_eq!(result.is_error, Some(true), "{input}: {result:?}");
        assert!(format!("{result:?}").contains("masked"), "{input}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A client that declares MCP's tasks extension, over Streamable HTTP.
async fn tasks_client(url: &str, token: &str) -> RunningService<RoleClient, Poller> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token);
    Poller
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_answer_is_masked_by_the_policy_in_force_when_it_is_read() {
    let dir = temp_dir("contain-kept");
    let sandbox = SandboxCrm::new();
    sandbox
        .seed_hubspot_contacts("acme", 30, "Kept Answers Co")
        .unwrap();
    let host = tenants_on(sandbox, &dir, &[]);
    let url = serve_in_process(host.clone(), &tenants_file("")).await;
    let alice = tasks_client(&url, "acme-token").await;
    let export = json!({"object_type": "contacts", "to_file": true,
        "properties": ["firstname", "jobtitle", "company"],
        "filter_groups": [{"filters": [{"property": "company", "operator": "EQ",
                                        "value": "Kept Answers Co"}]}]});
    let started = alice
        .peer()
        .call_tool_once(call("crma_search_records", export))
        .await
        .unwrap();
    let CallToolResponse::Task(created) = started else {
        panic!("expected a task, got {started:?}")
    };
    let id = created.task.task_id.clone();
    let begun = Instant::now();
    let done = loop {
        let got = alice
            .peer()
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .unwrap();
        if got.task.task.status.is_terminal() {
            break serde_json::to_string(&got).unwrap();
        }
        assert!(begun.elapsed() < Duration::from_secs(60));
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(done.contains("Kept Answers Co"), "{done}");

    // The registry now masks what the answer showed: the same host, the tenant rebuilt with
    // the new policy (what a registry version does on every host).
    host.add_tenant(
        spec(
            "acme",
            &dir,
            &[("CRM_POLICY_MASKED_FIELDS", "firstname, jobtitle, company")],
        ),
        plugin(),
    )
    .unwrap();
    let later = alice
        .peer()
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .unwrap();
    let later = serde_json::to_string(&later).unwrap();
    assert!(!later.contains("Kept Answers Co"), "{later}");
    assert!(later.contains("masked by workspace policy"), "{later}");
    // And the file it names, read back.
    let listed = alice.peer().list_all_resources().await.unwrap();
    let uri = listed
        .iter()
        .find(|r| r.uri.ends_with(".jsonl"))
        .map(|r| r.uri.clone())
        .expect("the export's file is listed");
    let read = alice
        .peer()
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .unwrap();
    let read = serde_json::to_string(&read).unwrap();
    assert!(!read.contains("Kept Answers Co"), "{read}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_record_cap_binds_every_call_whatever_the_caller_omits() {
    let dir = temp_dir("contain-cap");
    let sandbox = SandboxCrm::new();
    sandbox
        .seed_hubspot_contacts("acme", 12, "Capped Co")
        .unwrap();
    let paged = SandboxCrm::new();
    paged.set_salesforce_batch_size("acme", 2);
    let host = tenants_on(sandbox, &dir, &[("CRM_POLICY_MAX_RECORDS", "3")]);
    let url = serve_in_process(host, &tenants_file("")).await;
    let alice = http_client(&url, "acme-token").await;
    let ok = |result: rmcp::model::CallToolResult| answer(&result);
    let count = |v: &Value, key: &str| v[key].as_array().map_or(0, Vec::len);

    // SOQL: the default, a LIMIT in the text, and the page after a cursor.
    for query in [
        "SELECT Id FROM Opportunity",
        "SELECT Id FROM Opportunity LIMIT 100",
    ] {
        let first = ok(alice
            .call_tool(call("crmb_run_soql_query", json!({"query": query})))
            .await
            .unwrap());
        assert_eq!(count(&first, "records"), 3, "{query}: {first}");
        assert_eq!(first["done"], false, "{query}: {first}");
        assert_eq!(first["remaining_records"], 5, "{query}: {first}");
    }
    // Where Salesforce pages (two rows a batch here), every page after a cursor is bound too.
    let paged_url = serve_in_process(
        tenants_on(
            paged,
            &dir.join("paged"),
            &[("CRM_POLICY_MAX_RECORDS", "3")],
        ),
        &tenants_file(""),
    )
    .await;
    let paged = http_client(&paged_url, "acme-token").await;
    let mut cursor: Option<String> = None;
    let mut seen = 0;
    loop {
        let mut input = json!({"query": "SELECT Id FROM Opportunity"});
        if let Some(c) = &cursor {
            input["cursor"] = json!(c);
        }
        let page = ok(paged
            .call_tool(call("crmb_run_soql_query", input))
            .await
            .unwrap());
        let rows = count(&page, "records");
        assert!((1..=3).contains(&rows), "{page}");
        seen += rows;
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(seen, 8, "every row reached, three at most a call");
    // HubSpot: a search, owners, a timeline, find-across, an export and an aggregate.
    let search = ok(alice
        .call_tool(call(
            "crma_search_records",
            json!({"object_type": "contacts"}),
        ))
        .await
        .unwrap());
    assert_eq!(count(&search, "results"), 3, "{search}");
    let owners = ok(alice
        .call_tool(call("crma_list_owners", json!({})))
        .await
        .unwrap());
    assert!(count(&owners, "results") <= 3, "{owners}");
    let timeline = ok(alice
        .call_tool(call(
            "crm_record_timeline",
            json!({"crm": "salesforce", "record_id": MARIA}),
        ))
        .await
        .unwrap());
    assert!(count(&timeline, "items") <= 3, "{timeline}");
    let across = ok(alice
        .call_tool(call("crm_find_across", json!({"company": "Acme Energy"})))
        .await
        .unwrap());
    assert!(count(&across["hubspot"], "records") <= 3, "{across}");
    assert!(count(&across["salesforce"], "records") <= 3, "{across}");
    let export = ok(alice
        .call_tool(call(
            "crma_search_records",
            json!({"object_type": "contacts", "to_file": true,
                   "filter_groups": [{"filters": [{"property": "company", "operator": "EQ",
                                                   "value": "Capped Co"}]}]}),
        ))
        .await
        .unwrap());
    assert_eq!(export["record_count"], 3, "{export}");
    let tally = ok(alice
        .call_tool(call(
            "crma_aggregate_records",
            json!({"object_type": "contacts"}),
        ))
        .await
        .unwrap());
    assert_eq!(tally["records_read"], 3, "{tally}");
    assert_eq!(tally["complete"], false, "{tally}");
    // Asking for more than the cap is refused, saying so.
    let over = alice
        .call_tool(call(
            "crmb_run_soql_query",
            json!({"query": "SELECT Id FROM Opportunity", "max_records": 5}),
        ))
        .await
        .unwrap();
    assert_eq!(over.is_error, Some(true));
    assert!(format!("{over:?}").contains("CRM_POLICY_MAX_RECORDS"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_belongs_to_the_user_who_made_it_on_every_route() {
    let dir = temp_dir("contain-owner");
    let host = tenants_on(
        SandboxCrm::new(),
        &dir,
        &[("CRM_FILE_THRESHOLD_RECORDS", "1")],
    );
    let provider = format!(
        "[[jwt]]\nissuer = \"https://idp.acme.example\"\naudience = \"crm-mcp\"\n\
         algorithm = \"EdDSA\"\ntenants = [\"acme\"]\npublic_key_pem = '''{IDP_PUBLIC_KEY}'''\n"
    );
    let url = serve_in_process(host, &tenants_file(&provider)).await;
    let alice = http_client(&url, "acme-token").await;
    let written = answer(
        &alice
            .call_tool(call(
                "crmb_run_soql_query",
                json!({"query": "SELECT Id, Name FROM Opportunity"}),
            ))
            .await
            .unwrap(),
    );
    let uri = written["file_path"].as_str().unwrap().to_string();
    assert!(uri.starts_with("crm-results://files/"), "{written}");
    let name = uri.rsplit('/').next().unwrap().to_string();
    let listed = |client: &RunningService<RoleClient, ()>| {
        let client = client.peer().clone();
        async move {
            client
                .list_all_resources()
                .await
                .unwrap()
                .into_iter()
                .map(|r| r.uri.clone())
                .collect::<Vec<_>>()
        }
    };
    assert!(listed(&alice).await.contains(&uri));
    let read = |client: &RunningService<RoleClient, ()>, uri: String| {
        let client = client.peer().clone();
        async move {
            client
                .read_resource(ReadResourceRequestParams::new(uri))
                .await
                .is_ok()
        }
    };
    assert!(read(&alice, uri.clone()).await);

    // Bob of the same tenant, and a provider's subject named alice: strangers to it.
    let bob = http_client(&url, "acme-bob-token").await;
    let key = jsonwebtoken::EncodingKey::from_ed_pem(IDP_PRIVATE_KEY.as_bytes()).unwrap();
    let mut as_alice = claims("acme");
    as_alice["sub"] = json!("alice");
    let jwt_alice = http_client(&url, &signed_by(&key, None, as_alice)).await;
    for stranger in [&bob, &jwt_alice] {
        let theirs = listed(stranger).await;
        assert!(
            !theirs.contains(&uri),
            "listed to another: {uri} in {theirs:?}"
        );
        assert!(!read(stranger, uri.clone()).await, "read by another");
        for file in [uri.as_str(), name.as_str()] {
            let paged = stranger
                .call_tool(call("crm_read_result_file", json!({"file": file})))
                .await
                .unwrap();
            assert_eq!(paged.is_error, Some(true), "{paged:?}");
        }
    }
    // Alice pages through her own.
    let paged = alice
        .call_tool(call("crm_read_result_file", json!({"file": uri})))
        .await
        .unwrap();
    assert!(
        answer(&paged)["records"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_smaller_holes_are_closed() {
    let dir = temp_dir("contain-holes");
    let runtime = runtime();
    let host = Arc::new(host_with(Arc::new(SandboxCrm::new()), &[]));
    host.add_tenant(
        spec("acme", &dir, &[("CRM_POLICY_MASKED_FIELDS", "email")]),
        plugin(),
    )
    .unwrap();
    // globex runs the probe component, whose `trap` tool traps.
    host.add_tenant(spec("globex", &dir, &[]), probe(&runtime))
        .unwrap();
    let provider = format!(
        "[[jwt]]\nissuer = \"https://idp.acme.example\"\naudience = \"crm-mcp\"\n\
         algorithm = \"EdDSA\"\ntenants = [\"acme\"]\npublic_key_pem = '''{IDP_PUBLIC_KEY}'''\n"
    );
    let url = serve_in_process(host, &tenants_file(&provider)).await;

    // A JWT whose `crit` names an extension this server does not understand is refused.
    let key = jsonwebtoken::EncodingKey::from_ed_pem(IDP_PRIVATE_KEY.as_bytes()).unwrap();
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
    header.crit = Some(vec!["exp-policy".into()]);
    let critical = jsonwebtoken::encode(&header, &claims("acme"), &key).unwrap();
    let mut conn = Conn::open(&url).await;
    let auth = format!("Bearer {critical}");
    let refused = conn
        .send("POST", "/mcp", &[("authorization", &auth)], INITIALIZE)
        .await;
    assert_eq!(refused.status, 401, "{}", refused.body);
    let plain = format!("Bearer {}", signed_by(&key, None, claims("acme")));
    let accepted = conn
        .send("POST", "/mcp", &[("authorization", &plain)], INITIALIZE)
        .await;
    assert_eq!(accepted.status, 200, "the same token without crit is good");

    // A stranger learns no tenant's identity provider from the public metadata.
    let metadata = conn
        .send("GET", "/.well-known/oauth-protected-resource/mcp", &[], "")
        .await;
    assert_eq!(metadata.status, 200);
    assert!(
        !metadata.body.contains("idp.acme.example"),
        "{}",
        metadata.body
    );

    // A trap is one line and a call id, never the wasm backtrace.
    let globex = http_client(&url, "globex-token").await;
    let trapped = said(&globex, "trap", json!({})).await;
    assert!(trapped.contains("call "), "{trapped}");
    for detail in ["backtrace", "0x", "wasm function", "\n"] {
        assert!(!trapped.contains(detail), "{detail:?} in {trapped}");
    }

    // A create refused for a conflict on a masked property names no record.
    let alice = http_client(&url, "acme-token").await;
    let contact = json!({"object_type": "contacts",
        "properties": {"email": "maria.conflict@example.com", "firstname": "Maria"}});
    let made = alice
        .call_tool(call("crma_create_record", contact.clone()))
        .await
        .unwrap();
    let made_id = answer(&made)["id"].as_str().unwrap().to_string();
    let again = said(&alice, "crma_create_record", contact).await;
    assert!(again.contains("masked"), "{again}");
    assert!(
        !again.contains(&made_id),
        "the conflicting record is named: {again}"
    );
    assert!(!again.contains("existing_id"), "{again}");
    let _ = std::fs::remove_dir_all(&dir);
}
