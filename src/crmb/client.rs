//! One Salesforce call: sent with the retry rules, errors mapped to what the user can do, and
//! a 404 checked against the versions the org serves, because a pinned API version the org
//! does not serve also answers "not found" and would otherwise read as "no such record".

use super::errors::map_error;
use crate::config::ApiVersion;
use crate::error::{Crm, CrmProblem, ToolError};
use crate::http::{Request, Response, RetryHint};
use crate::proxy;
use crate::retry::Answer;
use crate::tool::Session;
use serde::Deserialize;

/// One entry of `GET /services/data/`: `[{label, url, version}]`
/// (https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_versions.htm).
#[derive(Debug, Deserialize)]
struct ServedVersion {
    version: String,
}

/// Sends `request`; a non-success answer becomes the tool error for `subject` (what the call
/// was about, named in not-found messages).
pub fn send(
    session: &mut Session<'_>,
    request: &Request,
    subject: &str,
) -> Result<Response, ToolError> {
    let Answer { response, hint } = session.send(request, retry_hint)?;
    if response.is_success() {
        return Ok(response);
    }
    // 404 for a version the org does not know, 410 GONE for a retired one.
    if matches!(response.status, 404 | 410)
        && let Some(problem) = unserved_version(session)
    {
        return Err(problem.into());
    }
    Err(map_error(&response, hint, subject))
}

/// Salesforce says when to try again only with `Retry-After`.
pub fn retry_hint(response: &Response) -> Option<RetryHint> {
    response.retry_after().map(RetryHint::After)
}

/// A query answer's records as JSON objects ("Execute a SOQL query", REST API Developer
/// Guide), for the small lookups that read a handful of fields, not the paged query tool.
#[derive(Debug, Deserialize)]
pub(crate) struct QueryPage {
    pub(crate) records: Vec<serde_json::Map<String, serde_json::Value>>,
}

/// Runs one small SOQL lookup (a query this crate writes, not the caller's) and reads its one
/// page; `subject` says what it looks for, in errors.
pub(crate) fn lookup(
    session: &mut Session<'_>,
    soql: &str,
    subject: &str,
) -> Result<QueryPage, ToolError> {
    lookup_at(session, "query", soql, subject)
}

/// As [`lookup`], through `queryAll`, which also answers archived and deleted rows ("QueryAll",
/// REST API Developer Guide,
/// <https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_queryall.htm>):
/// Salesforce archives Tasks and Events after about a year and `query` leaves them out. The
/// caller's query filters `IsDeleted = false`, so only the archived ones are added.
pub(crate) fn lookup_all(
    session: &mut Session<'_>,
    soql: &str,
    subject: &str,
) -> Result<QueryPage, ToolError> {
    lookup_at(session, "queryAll", soql, subject)
}

fn lookup_at(
    session: &mut Session<'_>,
    resource: &str,
    soql: &str,
    subject: &str,
) -> Result<QueryPage, ToolError> {
    let url = proxy::crm_b(session.config()?, &[resource], &[("q", soql)])?;
    let response = send(session, &Request::read(Crm::Salesforce, url), subject)?;
    serde_json::from_slice(&response.body).map_err(|e| {
        CrmProblem::unexpected_answer(
            Crm::Salesforce,
            response.status,
            format!("the answer about {subject} was not a query result: {e}"),
        )
        .into()
    })
}

/// The REST API versions the org serves, oldest first (`GET /services/data/`), or the tool
/// error that stopped the answer.
pub(crate) fn served_versions(session: &mut Session<'_>) -> Result<Vec<ApiVersion>, ToolError> {
    let config = session.config()?;
    let request = Request::read(Crm::Salesforce, proxy::crm_b_versions(config));
    let response = send(session, &request, "the org's API versions")?;
    let served: Vec<ServedVersion> = serde_json::from_slice(&response.body).map_err(|e| {
        CrmProblem::unexpected_answer(
            Crm::Salesforce,
            response.status,
            format!("the org's API versions were not a list: {e}"),
        )
    })?;
    let mut served: Vec<ApiVersion> = served
        .iter()
        .filter_map(|v| ApiVersion::parse(&v.version))
        .collect();
    served.sort();
    Ok(served)
}

/// Asks the org once which versions it serves; a problem when the configured one is not
/// among them, `None` when it is or the list cannot be had.
fn unserved_version(session: &mut Session<'_>) -> Option<CrmProblem> {
    let config = session.config().ok()?;
    let versions = Request::read(Crm::Salesforce, proxy::crm_b_versions(config));
    let response = session.send(&versions, retry_hint).ok()?.response;
    if !response.is_success() {
        return None;
    }
    let served: Vec<ServedVersion> = serde_json::from_slice(&response.body).ok()?;
    let served: Vec<ApiVersion> = served
        .iter()
        .filter_map(|v| ApiVersion::parse(&v.version))
        .collect();
    unserved_problem(config.crm_b_api_version, &served)
}

/// The problem to report when `configured` is not in the org's `served` list.
fn unserved_problem(configured: ApiVersion, served: &[ApiVersion]) -> Option<CrmProblem> {
    let newest = served.iter().max()?;
    let oldest = served.iter().min()?;
    if served.contains(&configured) {
        return None;
    }
    Some(
        CrmProblem::new(
            Crm::Salesforce,
            "API_VERSION_NOT_SUPPORTED",
            format!(
                "This Salesforce org does not serve REST API {} (it serves {} to {}), so every \
                 call answers \"not found\". Ask the workspace admin to set the Salesforce API \
                 version to {} (CRM_B_API_VERSION) and try again.",
                configured.segment(),
                oldest.segment(),
                newest.segment(),
                newest.segment()
            ),
        )
        .with_status(404),
    )
}

/// What `GET /services/data/` answers for an org serving v64.0 to v66.0 (the shape of the REST
/// API Developer Guide's "List Available REST API Versions" example).
#[cfg(test)]
pub(crate) const SERVED_VERSIONS: &str = r#"[{"label":"Summer '25","url":"/services/data/v64.0","version":"64.0"},{"label":"Winter '26","url":"/services/data/v65.0","version":"65.0"},{"label":"Spring '26","url":"/services/data/v66.0","version":"66.0"}]"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> ApiVersion {
        ApiVersion::parse(text).unwrap()
    }

    #[test]
    fn a_served_version_is_no_problem_and_an_unserved_one_names_the_newest() {
        let served = [v("31.0"), v("64.0"), v("66.0")];
        assert!(unserved_problem(v("64.0"), &served).is_none());
        let problem = unserved_problem(v("99.0"), &served).unwrap();
        assert_eq!(problem.codes, ["API_VERSION_NOT_SUPPORTED"]);
        assert!(problem.hint.contains("v66.0") && problem.hint.contains("v99.0"));
        assert!(
            unserved_problem(v("99.0"), &[]).is_none(),
            "no list, no verdict"
        );
    }
}
