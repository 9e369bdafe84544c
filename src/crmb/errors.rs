//! Salesforce error responses turned into tool errors that say what to do next.
//!
//! Salesforce answers errors with `[{message, errorCode, fields?}]`. Codes the user can act on
//! get their own case and advice; the rest keep the raw codes, messages and fields as JSON in
//! `crm-error`, with a hint.

use crate::error::{Crm, CrmProblem, ToolError};
use crate::http::{Response, RetryHint};
use serde::Deserialize;

/// One entry of a Salesforce error body.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
struct SalesforceError {
    #[serde(default)]
    message: String,
    #[serde(default)]
    error_code: String,
    #[serde(default)]
    fields: Vec<String>,
}

/// Parses an error body; tolerates a single object or an unexpected shape.
fn parse_errors(body: &[u8]) -> Vec<SalesforceError> {
    serde_json::from_slice::<Vec<SalesforceError>>(body)
        .or_else(|_| serde_json::from_slice::<SalesforceError>(body).map(|e| vec![e]))
        .unwrap_or_default()
}

/// Parses a success answer's JSON body, or says Salesforce sent something unexpected.
pub fn parse_answer<'a, T: serde::Deserialize<'a>>(
    response: &'a Response,
    what: &str,
) -> Result<T, ToolError> {
    serde_json::from_slice(&response.body).map_err(|err| not_json(response, what, err))
}

/// As [`parse_answer`], for an answer whose text the caller reads from again (a query page,
/// whose records are copied from it): the text and what it holds.
pub fn parse_answer_text<'a, T: serde::Deserialize<'a>>(
    response: &'a Response,
    what: &str,
) -> Result<(&'a str, T), ToolError> {
    let text = std::str::from_utf8(&response.body).map_err(|err| not_json(response, what, err))?;
    let answer = serde_json::from_str(text).map_err(|err| not_json(response, what, err))?;
    Ok((text, answer))
}

/// A success answer that is not the JSON it should be.
fn not_json(response: &Response, what: &str, err: impl std::fmt::Display) -> ToolError {
    CrmProblem::unexpected_answer(
        Crm::Salesforce,
        response.status,
        format!("{what} was not the expected JSON: {err}"),
    )
    .into()
}

/// Maps a non-success response. `subject` names what the call was about (e.g. "Account
/// 001...") for not-found messages.
pub fn map_error(response: &Response, retry: Option<RetryHint>, subject: &str) -> ToolError {
    let errors = parse_errors(&response.body);
    let first = errors.first().cloned().unwrap_or_default();
    let said = if first.message.is_empty() {
        String::new()
    } else {
        format!(" Salesforce said: {}", first.message)
    };
    let code = first.error_code.as_str();
    match (response.status, code) {
        (401, _) | (_, "INVALID_SESSION_ID") => ToolError::NotConnected(format!(
            "Salesforce rejected the connection (INVALID_SESSION_ID): it is missing, expired or \
             revoked. Ask the user to reconnect Salesforce in the workspace's integration settings.{said}"
        )),
        (_, "API_DISABLED_FOR_ORG") => ToolError::Forbidden(format!(
            "This Salesforce org has no API access (API_DISABLED_FOR_ORG): its edition or licence \
             does not include the REST API, even though sign-in worked. A Salesforce admin must \
             move to an edition with API access or enable the API Enabled permission.{said}"
        )),
        // The concurrent long-running request limit frees up as soon as other requests finish.
        (_, "REQUEST_LIMIT_EXCEEDED") if first.message.contains("ConcurrentRequests") => {
            ToolError::Unavailable(format!(
                "Salesforce is running too many long requests for this org at once \
                 (REQUEST_LIMIT_EXCEEDED, ConcurrentRequests). This is momentary: retry in a \
                 moment.{said}"
            ))
        }
        (_, "REQUEST_LIMIT_EXCEEDED") => ToolError::Unavailable(format!(
            "The Salesforce org has used up its API request limit (REQUEST_LIMIT_EXCEEDED), a \
             rolling 24-hour allowance shared by all its integrations. Calls work again as the \
             window rolls on; an admin can see usage under Setup > Company Information.{}{said}",
            api_usage(response)
        )),
        // Another transaction held the record: nothing was applied, so the same call is safe.
        (_, "UNABLE_TO_LOCK_ROW") => ToolError::Unavailable(format!(
            "Salesforce could not lock the record because another process was changing it at the \
             same moment (UNABLE_TO_LOCK_ROW). Nothing was applied: the same request is safe to \
             make again in a moment.{said}"
        )),
        (414 | 431, _) => CrmProblem::new(
            Crm::Salesforce,
            if response.status == 414 {
                "URI_TOO_LONG"
            } else {
                "REQUEST_HEADER_FIELDS_TOO_LARGE"
            },
            "The request was longer than Salesforce accepts (16,384 bytes of URL and headers). \
             Shorten the query: select fewer fields, or split long IN lists across several calls.",
        )
        .with_status(response.status)
        .into(),
        (_, "INSUFFICIENT_ACCESS_OR_READONLY" | "INSUFFICIENT_ACCESS") | (403, _) => {
            ToolError::Forbidden(format!(
                "Salesforce denied this for the connected user ({}): their profile, permission \
                 sets, field-level security or sharing rules do not allow it. The plugin acts as \
                 that user and cannot go beyond their access; a Salesforce admin can grant it.{said}",
                if code.is_empty() { "403" } else { code }
            ))
        }
        (404, _) | (_, "NOT_FOUND") => ToolError::NotFound(format!(
            "Salesforce has no {subject}, or it was deleted. Check the object name and id, or \
             find the record with crmb_run_soql_query.{said}"
        )),
        (429, _) => ToolError::RateLimited(match retry {
            Some(RetryHint::After(wait)) => Some(u32::try_from(wait.as_secs()).unwrap_or(u32::MAX)),
            _ => None,
        }),
        (500..=599, _) => ToolError::Unavailable(format!(
            "Salesforce or the connection broker failed with {} after retries; try again in a \
             moment.{said}",
            response.status
        )),
        _ => problem(response.status, &errors, hint(code, &first)).into(),
    }
}

/// Advice for the codes that need a change of input rather than of access.
fn hint(code: &str, first: &SalesforceError) -> String {
    let fields = if first.fields.is_empty() {
        String::new()
    } else {
        format!(" ({})", first.fields.join(", "))
    };
    match code {
        "INVALID_FIELD" => format!(
            "A field name is wrong{fields}; the message names it. Call crmb_get_object_fields \
             for the object to see its field API names."
        ),
        "INVALID_TYPE" => "The object name is wrong or not visible to this user; check the API \
             name (custom objects end in __c)."
            .into(),
        "MALFORMED_QUERY" => "The SOQL is malformed at the place the message names; fix it and \
             run the query again."
            .into(),
        "REQUIRED_FIELD_MISSING" => format!(
            "Required fields are missing{fields}: add them. crmb_get_object_fields shows which \
             fields are required on create."
        ),
        "FIELD_CUSTOM_VALIDATION_EXCEPTION" => format!(
            "An org validation rule rejected the values{fields}; the message is the rule's own \
             text: change the values to satisfy it."
        ),
        "INVALID_CROSS_REFERENCE_KEY" => format!(
            "A lookup id does not point to a record of the right type{fields}; check the id."
        ),
        "DUPLICATE_VALUE" => format!(
            "A unique field already holds this value on another record{fields}; update that \
             record instead, or use another value."
        ),
        "STRING_TOO_LONG" => format!(
            "A text value is longer than the field allows{fields}; shorten it (the field's \
             length is in crmb_get_object_fields)."
        ),
        "QUERY_TIMEOUT" => "The query ran too long: add selective WHERE filters (on indexed \
             fields such as Id, Name, CreatedDate or lookups) or a LIMIT."
            .into(),
        "INVALID_QUERY_LOCATOR" => "The paging cursor has expired: run the query again \
             without a cursor."
            .into(),
        "MALFORMED_ID" => format!(
            "An id is not a valid Salesforce id{fields}: ids are 15 or 18 letters and digits, \
             e.g. from a query's Id column. Check the id (and, for lookups, that it is the related \
             record's id)."
        ),
        "INSUFFICIENT_ACCESS_ON_CROSS_REFERENCE_ENTITY" => format!(
            "The connected user cannot see or use a record this change points to{fields} (a \
             lookup such as the account or owner). Use a record the user has access to, or ask \
             a Salesforce admin to share it."
        ),
        "CANNOT_INSERT_UPDATE_ACTIVATE_ENTITY" => format!(
            "An automation in the org (an Apex trigger, flow or process) failed while saving{fields}. \
             Its own words are: \"{}\". Tell the user, who may need an admin to look at that \
             automation; change the values if the message says how.",
            first.message
        ),
        "FIELD_INTEGRITY_EXCEPTION" => format!(
            "A value does not fit the field{fields}: for example a lookup to the wrong object, a \
             picklist value not allowed for the record type, or a date in the wrong form. \
             crmb_get_object_fields shows the field's type and allowed values."
        ),
        _ => "Salesforce refused the request; see the message.".into(),
    }
}

fn api_usage(response: &Response) -> String {
    response
        .header("sforce-limit-info")
        .map(|v| format!(" Usage: {v}."))
        .unwrap_or_default()
}

/// The CRM-error payload: every code, message and field Salesforce named, and the hint.
fn problem(status: u16, errors: &[SalesforceError], hint: String) -> CrmProblem {
    let mut fields: Vec<String> = errors.iter().flat_map(|e| e.fields.clone()).collect();
    fields.dedup();
    CrmProblem {
        crm: Crm::Salesforce,
        status: Some(status),
        codes: errors
            .iter()
            .map(|e| e.error_code.clone())
            .filter(|c| !c.is_empty())
            .collect(),
        messages: errors
            .iter()
            .map(|e| e.message.clone())
            .filter(|m| !m.is_empty())
            .collect(),
        fields,
        hint,
        correlation_id: None,
        existing_id: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The mapper as the client calls it, with the hint read from the answer.
    fn map_error(response: &Response, subject: &str) -> ToolError {
        super::map_error(
            response,
            super::super::client::retry_hint(response),
            subject,
        )
    }

    fn answer(status: u16, code: &str, message: &str, fields: &[&str]) -> Response {
        Response {
            status,
            headers: vec![("sforce-limit-info".into(), "api-usage=15000/15000".into())],
            body: json!([{"message": message, "errorCode": code, "fields": fields}])
                .to_string()
                .into_bytes(),
        }
    }

    fn crm_error(err: ToolError) -> serde_json::Value {
        match err {
            ToolError::CrmError(problem) => serde_json::to_value(problem).unwrap(),
            other => panic!("expected crm-error, got {other:?}"),
        }
    }

    #[test]
    fn invalid_session_means_reconnect() {
        let err = map_error(
            &answer(401, "INVALID_SESSION_ID", "Session expired or invalid", &[]),
            "x",
        );
        assert!(
            matches!(&err, ToolError::NotConnected(m) if m.contains("reconnect Salesforce")),
            "{err:?}"
        );
    }

    #[test]
    fn permission_errors_are_forbidden_and_explain_whose_permissions() {
        for code in ["INSUFFICIENT_ACCESS_OR_READONLY", "INSUFFICIENT_ACCESS"] {
            let err = map_error(
                &answer(403, code, "insufficient access rights on object id", &[]),
                "x",
            );
            assert!(
                matches!(&err, ToolError::Forbidden(m) if m.contains(code) && m.contains("admin")),
                "{err:?}"
            );
        }
    }

    #[test]
    fn api_disabled_explains_edition_and_licence() {
        let err = map_error(
            &answer(
                403,
                "API_DISABLED_FOR_ORG",
                "API is not enabled for this Organization or Partner",
                &[],
            ),
            "x",
        );
        assert!(
            matches!(&err, ToolError::Forbidden(m) if m.contains("edition or licence")),
            "{err:?}"
        );
    }

    #[test]
    fn request_limit_is_the_orgs_api_allowance() {
        let err = map_error(
            &answer(
                403,
                "REQUEST_LIMIT_EXCEEDED",
                "TotalRequests Limit exceeded.",
                &[],
            ),
            "x",
        );
        assert!(
            matches!(&err, ToolError::Unavailable(m) if m.contains("API request limit") && m.contains("15000/15000")),
            "{err:?}"
        );
    }

    /// The concurrent long-running request limit uses the same code as the 24-hour allowance;
    /// the message tells them apart ("ConcurrentRequests (Concurrent API Requests) Limit
    /// exceeded." vs "TotalRequests Limit exceeded."; Salesforce limits cheat sheet: "If the
    /// number of long running requests exceeds the limit, the API returns a
    /// REQUEST_LIMIT_EXCEEDED exception code").
    #[test]
    fn concurrent_request_limits_say_retry_in_a_moment() {
        let err = map_error(
            &answer(
                403,
                "REQUEST_LIMIT_EXCEEDED",
                "ConcurrentRequests (Concurrent API Requests) Limit exceeded.",
                &[],
            ),
            "x",
        );
        assert!(
            matches!(&err, ToolError::Unavailable(m) if m.contains("retry in a moment") && !m.contains("24-hour")),
            "{err:?}"
        );
    }

    /// UNABLE_TO_LOCK_ROW: "A deadlock or timeout condition has been detected" (Core Data
    /// Types, StatusCode): the write failed as a whole, so doing it again is safe.
    #[test]
    fn a_locked_row_is_a_write_not_applied_and_safe_to_retry() {
        let err = map_error(
            &answer(
                400,
                "UNABLE_TO_LOCK_ROW",
                "unable to obtain exclusive access to this record",
                &[],
            ),
            "x",
        );
        assert!(
            matches!(&err, ToolError::Unavailable(m) if m.contains("Nothing was applied") && m.contains("safe")),
            "{err:?}"
        );
    }

    /// "414: The length of the URI exceeds the 16,384 byte limit"; "431: The combined length
    /// of the URI and headers exceeds the 16,384 byte limit" (REST API Developer Guide, Status
    /// Codes and Error Responses). Neither has a JSON body.
    #[test]
    fn too_long_requests_say_how_to_shorten_the_query() {
        for (status, code) in [
            (414, "URI_TOO_LONG"),
            (431, "REQUEST_HEADER_FIELDS_TOO_LARGE"),
        ] {
            let v = crm_error(map_error(
                &Response {
                    status,
                    headers: vec![],
                    body: b"<html>Request-URI Too Long</html>".to_vec(),
                },
                "x",
            ));
            assert_eq!(v["codes"], json!([code]));
            assert_eq!(v["status"], status);
            let hint = v["hint"].as_str().unwrap();
            assert!(
                hint.contains("fewer fields") && hint.contains("IN lists"),
                "{hint}"
            );
        }
    }

    /// Messages as Salesforce writes them (Core Data Types, StatusCode; REST examples).
    #[test]
    fn the_codes_users_hit_have_hints() {
        for (code, message, fields, words) in [
            (
                "MALFORMED_ID",
                "Account ID: id value of incorrect type: 001900K0001pPuOAAU",
                vec!["AccountId"],
                vec!["15 or 18", "AccountId"],
            ),
            (
                "INSUFFICIENT_ACCESS_ON_CROSS_REFERENCE_ENTITY",
                "insufficient access rights on cross-reference id: 001000000000001",
                vec![],
                vec!["cannot see", "share"],
            ),
            (
                "CANNOT_INSERT_UPDATE_ACTIVATE_ENTITY",
                "OpportunityTrigger: execution of AfterUpdate caused by: System.NullPointerException",
                vec![],
                vec!["automation", "OpportunityTrigger: execution of AfterUpdate"],
            ),
            (
                "FIELD_INTEGRITY_EXCEPTION",
                "Account ID: id value of incorrect type: 003000000000001",
                vec!["AccountId"],
                vec!["does not fit", "crmb_get_object_fields"],
            ),
        ] {
            let v = crm_error(map_error(&answer(400, code, message, &fields), "x"));
            assert_eq!(v["codes"], json!([code]));
            assert_eq!(v["messages"], json!([message]));
            let hint = v["hint"].as_str().unwrap();
            for word in words {
                assert!(hint.contains(word), "{code}: {hint}");
            }
        }
    }

    /// Every crm-error has one shape, whichever path made it.
    #[test]
    fn every_crm_error_has_the_same_keys() {
        let keys = |v: &serde_json::Value| {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        let expected = [
            "codes",
            "correlation_id",
            "crm",
            "fields",
            "hint",
            "messages",
            "status",
        ];
        let from_map = crm_error(map_error(
            &answer(400, "INVALID_FIELD", "No such column", &["X"]),
            "x",
        ));
        assert_eq!(keys(&from_map), expected);
        let unreadable = crm_error(
            parse_answer::<Vec<u8>>(
                &Response {
                    status: 200,
                    headers: vec![],
                    body: b"<html>".to_vec(),
                },
                "the answer",
            )
            .unwrap_err(),
        );
        assert_eq!(keys(&unreadable), expected);
        assert_eq!(unreadable["codes"], json!(["UNEXPECTED_ANSWER"]));
    }

    #[test]
    fn not_found_names_the_subject() {
        let err = map_error(
            &answer(
                404,
                "NOT_FOUND",
                "The requested resource does not exist",
                &[],
            ),
            "Account 001000000000001AAA",
        );
        assert!(
            matches!(&err, ToolError::NotFound(m) if m.contains("Account 001000000000001AAA")),
            "{err:?}"
        );
    }

    #[test]
    fn invalid_field_keeps_codes_and_points_to_describe() {
        let v = crm_error(map_error(
            &answer(
                400,
                "INVALID_FIELD",
                "No such column 'Nmae' on entity 'Account'.",
                &["Nmae"],
            ),
            "x",
        ));
        assert_eq!(v["status"], 400);
        assert_eq!(v["codes"][0], "INVALID_FIELD");
        assert_eq!(v["fields"][0], "Nmae");
        assert!(
            v["hint"]
                .as_str()
                .unwrap()
                .contains("crmb_get_object_fields")
        );
    }

    #[test]
    fn write_rejections_name_the_fields() {
        for code in [
            "REQUIRED_FIELD_MISSING",
            "FIELD_CUSTOM_VALIDATION_EXCEPTION",
            "INVALID_CROSS_REFERENCE_KEY",
            "DUPLICATE_VALUE",
            "STRING_TOO_LONG",
        ] {
            let v = crm_error(map_error(
                &answer(400, code, "rejected", &["StageName"]),
                "x",
            ));
            assert_eq!(v["codes"][0], code);
            assert!(
                v["hint"].as_str().unwrap().contains("StageName"),
                "{code}: {v}"
            );
        }
    }

    #[test]
    fn query_errors_suggest_the_fix() {
        for (code, word) in [
            ("MALFORMED_QUERY", "SOQL"),
            ("INVALID_TYPE", "object name"),
            ("QUERY_TIMEOUT", "WHERE"),
            ("INVALID_QUERY_LOCATOR", "without a cursor"),
        ] {
            let v = crm_error(map_error(&answer(400, code, "m", &[]), "x"));
            assert!(v["hint"].as_str().unwrap().contains(word), "{code}: {v}");
        }
    }

    #[test]
    fn server_failures_and_rate_limits() {
        for status in [500, 502, 503] {
            let err = map_error(
                &Response {
                    status,
                    headers: vec![],
                    body: b"<html>oops</html>".to_vec(),
                },
                "x",
            );
            assert!(
                matches!(err, ToolError::Unavailable(_)),
                "{status}: {err:?}"
            );
        }
        let err = map_error(
            &Response {
                status: 429,
                headers: vec![("retry-after".into(), "7".into())],
                body: vec![],
            },
            "x",
        );
        assert_eq!(err, ToolError::RateLimited(Some(7)));
    }
}
