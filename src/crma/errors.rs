//! HubSpot error responses turned into tool errors, keeping the `correlationId` HubSpot
//! support asks for.

use crate::error::{Crm, CrmProblem, ToolError};
use crate::http::{Response, RetryHint};
use serde::Deserialize;

/// The parts of HubSpot's error body that are used:
/// `{status, message, correlationId, category, subCategory?, errors?: [{message, code?, in?,
/// context?}], context?, policyName?}`
/// (<https://developers.hubspot.com/docs/faq/api-error-responses>; `policyName` on rate-limit
/// answers, <https://developers.hubspot.com/docs/api/usage-details>).
/// HubSpot says every field "should all be treated as optional in any error parsing", and the
/// broker answers in its own words, so each field defaults: an error is mapped from whatever
/// part of the body came, and a body that is not JSON at all maps from its status alone.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct HubSpotError {
    message: String,
    correlation_id: Option<String>,
    category: String,
    sub_category: Option<String>,
    errors: Vec<ErrorDetail>,
    context: ErrorContext,
    policy_name: Option<String>,
}

/// One entry of `errors`: a detail of what went wrong.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ErrorDetail {
    message: String,
    code: Option<String>,
    context: ErrorContext,
}

/// The `context` lists that are read, at the top of the body or in `errors[]` (HubSpot's
/// context maps a name to a list of strings): the scopes a `MISSING_SCOPES` answer names,
/// and the properties a validation error names.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct ErrorContext {
    required_granular_scopes: Vec<String>,
    missing_scopes: Vec<String>,
    required_scopes: Vec<String>,
    property_name: Vec<String>,
}

impl ErrorContext {
    /// The scopes named, granular ones first.
    fn scopes(&self) -> impl Iterator<Item = &String> {
        self.required_granular_scopes
            .iter()
            .chain(&self.missing_scopes)
            .chain(&self.required_scopes)
    }
}

/// Maps a non-success response; `granted` are the scopes the tenant granted, `subject` names
/// what the call was about.
pub fn map_error(
    response: &Response,
    hint: Option<RetryHint>,
    granted: &[String],
    subject: &str,
) -> ToolError {
    let body: HubSpotError = serde_json::from_slice(&response.body).unwrap_or_default();
    let correlation = body
        .correlation_id
        .as_deref()
        .or(response.header("x-hubspot-correlation-id"))
        .map(|id| format!(" (HubSpot correlation id {id})"))
        .unwrap_or_default();
    let said = if body.message.is_empty() {
        String::new()
    } else {
        format!(" HubSpot said: {}", body.message)
    };
    let marketplace = body.message.to_ascii_lowercase().contains("marketplace");
    match (response.status, body.category.as_str()) {
        (401, _) => ToolError::NotConnected(format!(
            "HubSpot rejected the connection: it is missing, expired or revoked. Ask the user to \
             reconnect HubSpot in the workspace's integration settings; if that does not help, \
             confirm the HubSpot installation uses project framework release 2025.2 or later \
             (legacy and newer installations mixed cause authentication failures) and reinstall \
             if needed.{said}{correlation}"
        )),
        (_, "MISSING_SCOPES") => {
            // HubSpot's list means "one or more of the following": holding any one suffices.
            let required = scopes_in(&body);
            let already: Vec<&String> = required.iter().filter(|s| granted.contains(s)).collect();
            if !already.is_empty() {
                ToolError::Forbidden(format!(
                    "HubSpot says the connection lacks a scope for this, but the workspace already \
                     granted {} (any one of {} would do), so approving it again will not help: \
                     legacy and newer installations are mixed. Confirm the HubSpot installation \
                     uses project framework release 2025.2 or later, and reinstall if needed.{correlation}",
                    already
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    required.join(", ")
                ))
            } else if required.is_empty() {
                ToolError::Forbidden(format!(
                    "HubSpot says the connection is missing scopes for this; re-authorize the HubSpot \
                     connection and approve the scopes it asks for.{said}{correlation}"
                ))
            } else {
                ToolError::MissingScopes(required)
            }
        }
        (403, _) if marketplace => ToolError::Forbidden(format!(
            "The connecting HubSpot user lacks the App Marketplace access permission needed to \
             install or connect apps. A HubSpot super admin must enable App Marketplace access \
             in that user's permission set, then the user reconnects.{said}{correlation}"
        )),
        (403, _) => ToolError::Forbidden(format!(
            "HubSpot refused this for the connected user: their HubSpot permissions do not allow \
             it. A HubSpot super admin can grant it.{said}{correlation}"
        )),
        (404, _) | (_, "OBJECT_NOT_FOUND") => ToolError::NotFound(format!(
            "HubSpot has no {subject}. Check the id, or find the record with crma_search_records.{said}{correlation}"
        )),
        (429, _) | (_, "RATE_LIMITS") => ToolError::RateLimited(rate_limit_seconds(hint, &body)),
        (500..=599, _) => ToolError::Unavailable(format!(
            "HubSpot or the connection broker failed with {} after retries; try again in a moment.{correlation}",
            response.status
        )),
        (status, category) => {
            let properties = property_names(&body);
            let existing_id = (category == "CONFLICT")
                .then(|| existing_id(&body.message))
                .flatten();
            let hint = match category {
                "VALIDATION_ERROR" if !properties.is_empty() => format!(
                    "HubSpot rejected the value of {}: check the name and the value's format \
                     (crma_get_properties lists names, types and options).",
                    properties.join(", ")
                ),
                "VALIDATION_ERROR" => "HubSpot rejected the input; the message says which part. \
                     crma_get_properties lists property names, types and options."
                    .into(),
                "CONFLICT" => match &existing_id {
                    Some(id) => format!(
                        "A record with this unique value already exists: its id is {id}. Update \
                         that record (crma_update_record) instead of creating another."
                    ),
                    None => "A record with this unique value already exists (for contacts, the \
                         email); find it with crma_search_records and update it instead."
                        .into(),
                },
                _ => "HubSpot refused the request; see the message.".into(),
            };
            let mut codes: Vec<String> = [Some(category.to_string()), body.sub_category.clone()]
                .into_iter()
                .flatten()
                .filter(|c| !c.is_empty())
                .collect();
            let mut messages = vec![body.message.clone()];
            for detail in &body.errors {
                codes.extend(detail.code.clone());
                messages.push(detail.message.clone());
            }
            codes.dedup();
            messages.retain(|m| !m.is_empty());
            CrmProblem {
                crm: Crm::Hubspot,
                status: Some(status),
                codes,
                messages,
                fields: properties,
                hint,
                correlation_id: body.correlation_id.clone(),
                existing_id,
            }
            .into()
        }
    }
}

/// The id in HubSpot's conflict message, "Contact already exists. Existing ID: 12345".
fn existing_id(message: &str) -> Option<String> {
    let at = message.find("Existing ID:")? + "Existing ID:".len();
    let digits: String = message[at..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    (!digits.is_empty()).then_some(digits)
}

/// Scopes named in a MISSING_SCOPES body (`context.requiredGranularScopes`,
/// `context.missingScopes` or `context.requiredScopes`, at the top or in `errors[]`), each once.
fn scopes_in(body: &HubSpotError) -> Vec<String> {
    let contexts = std::iter::once(&body.context).chain(body.errors.iter().map(|e| &e.context));
    let mut scopes: Vec<String> = Vec::new();
    for scope in contexts.flat_map(ErrorContext::scopes) {
        if !scopes.contains(scope) {
            scopes.push(scope.clone());
        }
    }
    scopes
}

/// Property names a validation error mentions: `errors[].context.propertyName` or the
/// `"name":"..."` entries HubSpot embeds in its message.
fn property_names(body: &HubSpotError) -> Vec<String> {
    let mut names: Vec<String> = body
        .errors
        .iter()
        .flat_map(|e| e.context.property_name.iter().cloned())
        .collect();
    let mut rest = body.message.as_str();
    while let Some(at) = rest.find("\"name\":\"") {
        rest = &rest[at + 8..];
        if let Some(end) = rest.find('"') {
            names.push(rest[..end].to_string());
            rest = &rest[end..];
        }
    }
    names.dedup();
    names
}

/// Seconds to wait: the retry hint the answer gave (`Retry-After` or the rate-limit headers),
/// else the policy's window.
fn rate_limit_seconds(hint: Option<RetryHint>, body: &HubSpotError) -> Option<u32> {
    match hint {
        Some(RetryHint::After(wait)) => {
            return Some(u32::try_from(wait.as_millis().div_ceil(1000)).unwrap_or(u32::MAX));
        }
        Some(RetryHint::NotSoon) => return None,
        None => {}
    }
    match body.policy_name.as_deref() {
        Some("TEN_SECONDLY_ROLLING") => Some(10),
        Some("SECONDLY") => Some(1),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// The mapper as the client calls it, with the hint read from the answer.
    fn map_error(response: &Response, granted: &[String], subject: &str) -> ToolError {
        super::map_error(
            response,
            super::super::rate_limits::hint(response),
            granted,
            subject,
        )
    }

    fn answer(status: u16, body: Value) -> Response {
        Response {
            status,
            headers: vec![],
            body: body.to_string().into_bytes(),
        }
    }

    fn granted(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn unauthorized_means_reconnect_and_mentions_the_framework_release() {
        let err = map_error(
            &answer(
                401,
                json!({"status": "error", "message": "Authentication credentials not found.", "correlationId": "c-1", "category": "INVALID_AUTHENTICATION"}),
            ),
            &[],
            "x",
        );
        assert!(
            matches!(&err, ToolError::NotConnected(m) if m.contains("reconnect HubSpot") && m.contains("2025.2") && m.contains("c-1")),
            "{err:?}"
        );
    }

    #[test]
    fn missing_scopes_come_from_the_body() {
        let body = json!({"status": "error", "message": "This app hasn't been granted all required scopes to make this call.", "correlationId": "c-2", "category": "MISSING_SCOPES",
                          "errors": [{"message": "One or more of the following scopes are required.", "context": {"requiredGranularScopes": ["crm.objects.deals.write"]}}]});
        assert_eq!(
            map_error(&answer(403, body.clone()), &granted(&["oauth"]), "x"),
            ToolError::MissingScopes(vec!["crm.objects.deals.write".into()])
        );
        // Granted yet refused: the mixed-install case.
        let err = map_error(
            &answer(403, body),
            &granted(&["crm.objects.deals.write"]),
            "x",
        );
        assert!(
            matches!(&err, ToolError::Forbidden(m) if m.contains("2025.2") && m.contains("reinstall")),
            "{err:?}"
        );
    }

    /// HubSpot's MISSING_SCOPES detail says "One or more of the following scopes are
    /// required": any one of the listed scopes would do. When the workspace already granted
    /// one of them, asking the user to approve it again cannot help.
    #[test]
    fn missing_scopes_are_any_of_and_a_granted_one_is_never_asked_for_again() {
        let body = json!({"status": "error", "message": "This app hasn't been granted all required scopes to make this call.", "correlationId": "c-5", "category": "MISSING_SCOPES",
                          "errors": [{"message": "One or more of the following scopes are required.",
                                      "context": {"requiredGranularScopes": ["crm.schemas.custom.read", "crm.objects.custom.read"]}}]});
        let err = map_error(
            &answer(403, body.clone()),
            &granted(&["crm.schemas.custom.read"]),
            "x",
        );
        assert!(
            matches!(&err, ToolError::Forbidden(m) if m.contains("already granted crm.schemas.custom.read") && m.contains("2025.2")),
            "{err:?}"
        );
        // None of them granted: any one of them is what to approve.
        assert_eq!(
            map_error(&answer(403, body), &granted(&["oauth"]), "x"),
            ToolError::MissingScopes(vec![
                "crm.schemas.custom.read".into(),
                "crm.objects.custom.read".into()
            ])
        );
    }

    #[test]
    fn marketplace_permission_needs_a_super_admin() {
        let err = map_error(
            &answer(
                403,
                json!({"status": "error", "message": "User does not have App Marketplace Access permission", "category": "FORBIDDEN"}),
            ),
            &[],
            "x",
        );
        assert!(
            matches!(&err, ToolError::Forbidden(m) if m.contains("super admin") && m.contains("App Marketplace access")),
            "{err:?}"
        );
    }

    #[test]
    fn not_found_and_validation_errors() {
        let err = map_error(
            &answer(
                404,
                json!({"status": "error", "message": "Object not found. objectId are usually numeric.", "correlationId": "c-3", "category": "OBJECT_NOT_FOUND"}),
            ),
            &[],
            "deals record 5",
        );
        assert!(
            matches!(&err, ToolError::NotFound(m) if m.contains("deals record 5") && m.contains("c-3")),
            "{err:?}"
        );
        let body = json!({"status": "error", "category": "VALIDATION_ERROR", "correlationId": "c-4",
            "message": "Property values were not valid: [{\"isValid\":false,\"message\":\"Property \\\"favourite_colour\\\" does not exist\",\"error\":\"PROPERTY_DOESNT_EXIST\",\"name\":\"favourite_colour\"}]"});
        let ToolError::CrmError(problem) = map_error(&answer(400, body), &[], "x") else {
            panic!()
        };
        let v = serde_json::to_value(problem).unwrap();
        assert_eq!(v["fields"], json!(["favourite_colour"]));
        assert_eq!(v["correlation_id"], "c-4");
        assert!(v["hint"].as_str().unwrap().contains("favourite_colour"));
    }

    /// Details in `errors[]` (message, code, context lists, as HubSpot's error page shows the
    /// body) give the codes, messages and blamed properties.
    #[test]
    fn error_details_give_codes_messages_and_properties() {
        let body = json!({"status": "error", "message": "Property values were not valid", "correlationId": "c-6",
                          "category": "VALIDATION_ERROR", "subCategory": "PROPERTY_VALIDATION",
                          "errors": [{"message": "Email address ana@ is invalid", "code": "INVALID_EMAIL", "in": "email",
                                      "context": {"propertyName": ["email"]}}]});
        let ToolError::CrmError(problem) = map_error(&answer(400, body), &[], "x") else {
            panic!()
        };
        assert_eq!(
            problem.codes,
            ["VALIDATION_ERROR", "PROPERTY_VALIDATION", "INVALID_EMAIL"]
        );
        assert_eq!(
            problem.messages,
            [
                "Property values were not valid",
                "Email address ana@ is invalid"
            ]
        );
        assert_eq!(problem.fields, ["email"]);
        assert_eq!(problem.correlation_id.as_deref(), Some("c-6"));
    }

    /// "The fields ... should all be treated as optional in any error parsing": a body with
    /// none of them, or not JSON at all, still maps from its status.
    #[test]
    fn an_error_body_of_any_shape_maps_from_its_status() {
        for body in [
            json!({}),
            json!({"message": "Bad gateway"}),
            json!("oops"),
            json!([1, 2]),
        ] {
            assert!(
                matches!(map_error(&answer(404, body.clone()), &[], "deals record 5"), ToolError::NotFound(m) if m.contains("deals record 5")),
                "{body}"
            );
        }
        let not_json = Response {
            status: 403,
            headers: vec![],
            body: b"<html>Forbidden</html>".to_vec(),
        };
        assert!(matches!(
            map_error(&not_json, &[], "x"),
            ToolError::Forbidden(_)
        ));
    }

    #[test]
    fn rate_limits_report_seconds() {
        let mut limited = answer(
            429,
            json!({"status": "error", "message": "You have reached your ten_secondly_rolling limit.", "category": "RATE_LIMITS", "policyName": "TEN_SECONDLY_ROLLING"}),
        );
        assert_eq!(
            map_error(&limited, &[], "x"),
            ToolError::RateLimited(Some(10))
        );
        limited.headers.push(("retry-after".into(), "3".into()));
        assert_eq!(
            map_error(&limited, &[], "x"),
            ToolError::RateLimited(Some(3))
        );
        let daily = answer(
            429,
            json!({"category": "RATE_LIMITS", "policyName": "DAILY"}),
        );
        assert_eq!(map_error(&daily, &[], "x"), ToolError::RateLimited(None));
    }
}
