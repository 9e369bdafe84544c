//! `crm_find_across` against the sandbox, where one customer is planted in both CRMs with
//! disagreements: Maria Garcia, a customer in HubSpot and an open lead in Salesforce, with
//! another phone number and another owner; and the company Acme Energy, whose domain differs.
//! With HubSpot disconnected the answer comes from Salesforce and says why.

use crate::fixtures::{acme_sandbox, ok, tool_error};
use crm_host::CallRequest;
use crm_host::egress::Crm;
use crm_sandbox::SandboxCrm;
use serde_json::{Value, json};

/// The call with the org's URL, as a platform passes it, so Salesforce records get links.
fn with_org(mut request: CallRequest) -> CallRequest {
    request.instance_url = Some(SandboxCrm::instance_url("acme"));
    request
}

fn disagreeing(pair: &Value) -> Vec<&str> {
    pair["disagreements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["field"].as_str().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_customer_in_both_crms_with_what_disagrees() {
    let (host, acme) = acme_sandbox();
    let out = ok(host
        .call(with_org(acme(
            "crm_find_across",
            json!({"email": "maria.garcia@acme-energy.example.com"}),
        )))
        .await);
    assert_eq!(out["looked_for"], "person");
    let hubspot = &out["hubspot"]["records"][0];
    assert_eq!(hubspot["id"], "357200", "{out}");
    assert!(
        hubspot["url"]
            .as_str()
            .unwrap()
            .contains("/record/0-1/357200"),
        "{out}"
    );
    let salesforce = &out["salesforce"]["records"][0];
    assert_eq!(salesforce["object"], "Lead", "{out}");
    assert!(
        salesforce["url"]
            .as_str()
            .unwrap()
            .contains("00Q5gA000000004EBA"),
        "{out}"
    );
    let pair = &out["pairs"][0];
    let fields = disagreeing(pair);
    assert!(
        fields.contains(&"stage") && fields.contains(&"phone"),
        "{out}"
    );
    assert!(!fields.contains(&"name"), "the name agrees: {out}");
    let stage = pair["disagreements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["field"] == "stage")
        .unwrap();
    assert_eq!(
        stage["note"],
        "HubSpot has this person as a customer, Salesforce still as an open lead"
    );

    let company = ok(host
        .call(acme("crm_find_across", json!({"company": "Acme Energy"})))
        .await);
    let pair = &company["pairs"][0];
    assert!(disagreeing(pair).contains(&"domain"), "{company}");
    assert!(!disagreeing(pair).contains(&"annual_revenue"), "{company}");

    let (kind, _) = tool_error(
        host.call(acme(
            "crm_find_across",
            json!({"email": "x@y.z", "company": "Acme"}),
        ))
        .await,
    );
    assert_eq!(kind, "invalid-input");

    host.disconnect("acme", Crm::Hubspot).unwrap();
    let out = ok(host
        .call(acme(
            "crm_find_across",
            json!({"email": "maria.garcia@acme-energy.example.com"}),
        ))
        .await);
    let problem = out["hubspot"]["problem"].as_str().unwrap();
    assert!(problem.to_lowercase().contains("reconnect"), "{problem}");
    assert_eq!(out["salesforce"]["records"][0]["object"], "Lead", "{out}");
    assert_eq!(out["pairs"], json!([]));
}
