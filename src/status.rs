//! `crm_connection_status`: the workspace's two connections, checked the way the spec's
//! "connection validation" means: which CRMs answer; for HubSpot the account and which of the
//! spec's required scopes were granted; for Salesforce the API versions the org serves and
//! whether the org allows API access at all (a failure after a successful sign-in). Each
//! problem comes with the fix in words. No credential or token appears anywhere.

use crate::crma::metadata::account::{AccountSummary, account_details};
use crate::crma::scopes;
use crate::crmb::client as crmb_client;
use crate::error::{Crm, ToolError};
use crate::http::Request;
use crate::proxy;
use crate::tool::{CrmEffect, NoInput, Session, Tool};
use schemars::JsonSchema;
use serde::Serialize;

/// What `crm_connection_status` answers.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct StatusOutput {
    /// CRM A.
    hubspot: HubspotStatus,
    /// CRM B.
    salesforce: SalesforceStatus,
}

/// HubSpot's connection.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct HubspotStatus {
    /// The account answered.
    connected: bool,
    /// What is wrong and what to do, when something is.
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
    /// The account: portal id, time zone, currency, UI (hub) domain.
    #[serde(skip_serializing_if = "Option::is_none")]
    account: Option<AccountSummary>,
    /// The spec's required scopes this connection was granted.
    granted_scopes: Vec<String>,
    /// The spec's required scopes it lacks: re-authorize the connection to add them.
    missing_scopes: Vec<String>,
    /// Optional scopes it lacks (`timeline`: activity timelines).
    missing_optional_scopes: Vec<String>,
}

/// Salesforce's connection.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SalesforceStatus {
    /// The org answered an API call.
    connected: bool,
    /// What is wrong and what to do, when something is.
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
    /// The REST API versions the org serves, oldest first (e.g. v62.0).
    api_versions: Vec<String>,
    /// The version this workspace uses, and whether the org serves it.
    api_version_in_use: String,
    /// Whether the org serves the version in use.
    version_served: bool,
    /// Whether the org allows API access at all (edition and licence); null when unknown.
    api_access: Option<bool>,
}

/// `crm_connection_status`.
pub(crate) struct ConnectionStatus;

impl Tool for ConnectionStatus {
    const NAME: &'static str = "crm_connection_status";
    const DESCRIPTION: &'static str = "Check the workspace's CRM connections: which CRMs \
        answer; for HubSpot the account (portal id, time zone, currency, hub domain) and which of \
        the required scopes were granted or are missing; for Salesforce the API versions the org \
        serves and whether the org allows API access at all. Each problem comes with what to do. \
        Use it when calls fail unexpectedly or before relying on a connection.";
    const TITLE: &'static str = "Check the CRM connections";
    const EFFECT: CrmEffect = CrmEffect::Reads;
    type Input = NoInput;
    type Output = StatusOutput;

    fn run(_: NoInput, session: &mut Session<'_>) -> Result<StatusOutput, ToolError> {
        Ok(StatusOutput {
            hubspot: hubspot(session),
            salesforce: salesforce(session)?,
        })
    }
}

/// A problem as the user reads it.
fn problem(error: &ToolError) -> String {
    error.to_string()
}

fn hubspot(session: &mut Session<'_>) -> HubspotStatus {
    let granted = &session.ctx.granted_scopes;
    let has = |scope: &str| granted.iter().any(|g| g == scope);
    let pick = |list: &[&str], wanted: bool| -> Vec<String> {
        list.iter()
            .filter(|s| has(s) == wanted)
            .map(|s| s.to_string())
            .collect()
    };
    let granted_scopes = pick(scopes::REQUIRED, true);
    let missing_scopes = pick(scopes::REQUIRED, false);
    let missing_optional_scopes = pick(scopes::OPTIONAL, false);
    let (connected, account, mut problem_text) = match account_details(session) {
        Ok(details) => (true, Some(AccountSummary::from(details)), None),
        Err(e @ (ToolError::NotConnected(_) | ToolError::MissingScopes(_))) => {
            (false, None, Some(problem(&e)))
        }
        // Anything else came from HubSpot itself, so the connection answers.
        Err(e) => (true, None, Some(problem(&e))),
    };
    if problem_text.is_none() && !missing_scopes.is_empty() {
        problem_text = Some(format!(
            "the connection lacks required scopes ({}): some tools will be refused; re-authorize \
             HubSpot in the workspace's integration settings and approve them",
            missing_scopes.join(", ")
        ));
    }
    HubspotStatus {
        connected,
        problem: problem_text,
        account,
        granted_scopes,
        missing_scopes,
        missing_optional_scopes,
    }
}

fn salesforce(session: &mut Session<'_>) -> Result<SalesforceStatus, ToolError> {
    let in_use = session.config()?.crm_b_api_version;
    let mut status = SalesforceStatus {
        connected: false,
        problem: None,
        api_versions: Vec::new(),
        api_version_in_use: in_use.segment(),
        version_served: false,
        api_access: None,
    };
    match crmb_client::served_versions(session) {
        Ok(served) => {
            status.version_served = served.contains(&in_use);
            status.api_versions = served.iter().map(|v| v.segment()).collect();
        }
        Err(e) => {
            status.problem = Some(problem(&e));
            return Ok(status);
        }
    }
    if !status.version_served {
        status.connected = true;
        status.problem = Some(format!(
            "this org does not serve REST API {}: ask the workspace admin to set the Salesforce \
             API version (CRM_B_API_VERSION) to one it serves, e.g. {}",
            status.api_version_in_use,
            status.api_versions.last().cloned().unwrap_or_default()
        ));
        return Ok(status);
    }
    // The cheapest authenticated call: it fails with API_DISABLED_FOR_ORG when the org's
    // edition or licence has no API access, even though sign-in worked.
    let url = proxy::crm_b(
        session.config()?,
        &["query"],
        &[("q", "SELECT Id FROM User LIMIT 1")],
    )?;
    match crmb_client::send(
        session,
        &Request::read(Crm::Salesforce, url),
        "a test query",
    ) {
        Ok(_) => {
            status.connected = true;
            status.api_access = Some(true);
        }
        Err(e @ ToolError::NotConnected(_)) => status.problem = Some(problem(&e)),
        Err(e @ ToolError::Forbidden(_)) => {
            status.connected = true;
            status.api_access = Some(false);
            status.problem = Some(problem(&e));
        }
        Err(e) => {
            status.connected = true;
            status.problem = Some(problem(&e));
        }
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use crate::crmb::client::SERVED_VERSIONS;
    use crate::harness;
    use crate::retry::tests::{ScriptedTransport, response};
    use serde_json::{Value, json};

    /// HubSpot's account details example ("Account details", account information API guide).
    const ACCOUNT: &str = r#"{"portalId": 123456, "accountType": "STANDARD", "timeZone": "US/Eastern",
        "companyCurrency": "USD", "additionalCurrencies": [], "utcOffset": "-05:00",
        "utcOffsetMilliseconds": -18000000, "uiDomain": "app.hubspot.com",
        "dataHostingLocation": "na1"}"#;

    fn status(transport: &mut ScriptedTransport, scopes: &[&str]) -> Value {
        let ctx = harness::ctx(scopes, Some("https://acme.my.salesforce.com"));
        harness::call(
            transport,
            &ctx,
            &harness::config(&[]),
            "crm_connection_status",
            &json!({}),
        )
        .unwrap()
    }

    #[test]
    fn both_connections_answer_with_the_account_the_scopes_and_the_versions() {
        // A query answer as "Execute a SOQL query" shows it (REST API Developer Guide).
        let query = json!({"totalSize": 1, "done": true, "records": [
            {"attributes": {"type": "User", "url": "/services/data/v65.0/sobjects/User/005"},
             "Id": "005000000000001AAA"}]});
        let mut t = ScriptedTransport::new([
            response(200, ACCOUNT),
            response(200, SERVED_VERSIONS),
            response(200, &query.to_string()),
        ]);
        let out = status(&mut t, &["oauth", "crm.objects.deals.read"]);
        let hubspot = &out["hubspot"];
        assert_eq!(hubspot["connected"], true, "{out}");
        assert_eq!(hubspot["account"]["portal_id"], 123456);
        assert_eq!(hubspot["account"]["time_zone"], "US/Eastern");
        assert_eq!(
            hubspot["granted_scopes"],
            json!(["crm.objects.deals.read", "oauth"])
        );
        let missing = hubspot["missing_scopes"].as_array().unwrap();
        assert_eq!(missing.len(), 11, "{out}");
        assert!(
            hubspot["problem"]
                .as_str()
                .unwrap()
                .contains("re-authorize")
        );
        let salesforce = &out["salesforce"];
        assert_eq!(salesforce["connected"], true, "{out}");
        assert_eq!(salesforce["api_access"], true);
        assert_eq!(salesforce["version_served"], true);
        assert_eq!(
            salesforce["api_versions"],
            json!(["v64.0", "v65.0", "v66.0"])
        );
        assert!(!out.to_string().to_lowercase().contains("token"), "{out}");
    }

    #[test]
    fn an_org_without_api_access_is_named_with_the_fix() {
        // Salesforce's error shape ("Status Codes and Error Responses").
        let disabled = json!([{"message": "API is not enabled for this Organization or Partner",
            "errorCode": "API_DISABLED_FOR_ORG"}]);
        let unauthorized = json!({"status": "error", "message": "Authentication credentials are missing", "category": "INVALID_AUTHENTICATION"});
        let mut t = ScriptedTransport::new([
            response(401, &unauthorized.to_string()),
            response(200, SERVED_VERSIONS),
            response(403, &disabled.to_string()),
        ]);
        let out = status(&mut t, super::scopes::REQUIRED);
        assert_eq!(out["hubspot"]["connected"], false, "{out}");
        assert!(
            out["hubspot"]["problem"]
                .as_str()
                .unwrap()
                .contains("reconnect"),
            "{out}"
        );
        assert_eq!(out["hubspot"]["missing_scopes"], json!([]));
        let salesforce = &out["salesforce"];
        assert_eq!(salesforce["api_access"], false, "{out}");
        let problem = salesforce["problem"].as_str().unwrap();
        assert!(
            problem.contains("API_DISABLED_FOR_ORG") && problem.contains("edition"),
            "{problem}"
        );
    }
}
