//! `crm_connection_status` against the sandbox: both CRMs answer, with HubSpot's account and
//! scopes and the versions the Salesforce org serves; after an operator disconnects HubSpot,
//! the check says so and how to fix it, and still answers for Salesforce. No credential shows.

use crate::fixtures::{acme_sandbox, ok};
use crm_host::egress::Crm;
use crm_sandbox::SandboxCrm;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_connection_check_reports_each_crm_and_a_disconnect() {
    let (host, acme) = acme_sandbox();
    let out = ok(host.call(acme("crm_connection_status", json!({}))).await);
    let hubspot = &out["hubspot"];
    assert_eq!(hubspot["connected"], true, "{out}");
    assert!(hubspot["account"]["portal_id"].as_u64().is_some(), "{out}");
    assert!(hubspot["account"]["ui_domain"].as_str().is_some(), "{out}");
    assert_eq!(hubspot["missing_scopes"], json!([]), "{out}");
    let salesforce = &out["salesforce"];
    assert_eq!(salesforce["connected"], true, "{out}");
    assert_eq!(salesforce["api_access"], true, "{out}");
    assert_eq!(salesforce["version_served"], true, "{out}");
    assert!(!salesforce["api_versions"].as_array().unwrap().is_empty());
    let credential = SandboxCrm::credential("acme");
    assert!(
        !out.to_string().contains(&credential),
        "the credential never shows"
    );

    host.disconnect("acme", Crm::Hubspot).unwrap();
    let out = ok(host.call(acme("crm_connection_status", json!({}))).await);
    assert_eq!(out["hubspot"]["connected"], false, "{out}");
    let problem = out["hubspot"]["problem"].as_str().unwrap();
    assert!(problem.to_lowercase().contains("reconnect"), "{problem}");
    assert_eq!(out["salesforce"]["connected"], true, "{out}");
}
