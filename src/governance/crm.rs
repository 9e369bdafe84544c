//! What governance needs from each CRM, implemented beside that CRM (`crma::governed`,
//! `crmb::governed`) so that governance names no CRM's client: which record and fields a write
//! request changes, the current values of those fields, writing values back for a revert, and
//! where the provenance marker goes.

use super::target::WriteTarget;
use crate::config::Config;
use crate::error::{Crm, ToolError};
use crate::http::Request;
use crate::tool::Session;
use serde_json::{Map, Value};

/// One CRM, as governance sees it.
pub trait GovernedCrm: Sync {
    /// Which CRM this is.
    fn crm(&self) -> Crm;

    /// The record and fields a write request changes, read back from the request itself (its
    /// path below the tenant's integration root, and its body); a write it does not recognise
    /// is refused, never let through.
    fn target(&self, request: &Request, config: &Config) -> Result<WriteTarget, ToolError>;

    /// The current values of `fields` of record `record_id` of `object`, on the CRM's
    /// documented read path.
    fn current(
        &self,
        session: &mut Session<'_>,
        object: &str,
        record_id: &str,
        fields: &[&str],
    ) -> Result<CurrentValues, ToolError>;

    /// Checks, before anything is sent, that the connection may update `object`.
    fn check_update_scope(&self, session: &Session<'_>, object: &str) -> Result<(), ToolError>;

    /// Sends one update of `values` to a record: how a revert puts old values back.
    fn update(
        &self,
        session: &mut Session<'_>,
        object: &str,
        record_id: &str,
        values: &Map<String, Value>,
    ) -> Result<(), ToolError>;

    /// Records of `object` created since `since_ms` (milliseconds since the epoch), newest
    /// first, each with its values of `fields`: the candidates for a create whose outcome was
    /// unknown. Every page of the window is read (HubSpot until `paging` ends; Salesforce by a
    /// keyset on `CreatedDate, Id`), up to [`LOOKUP_BUDGET`] records; the window says whether
    /// it was read whole, for "never made" may only be said of a window read whole. `created`
    /// are the values that create sent, which a CRM may use to narrow the lookup (HubSpot: the
    /// contact's e-mail, the provenance marker).
    fn created_since(
        &self,
        session: &mut Session<'_>,
        object: &str,
        created: &Map<String, Value>,
        since_ms: u64,
    ) -> Result<CreatedWindow, ToolError>;

    /// How long after a create the CRM's lookup may still miss it (HubSpot's search index
    /// lags; Salesforce's queries do not), in milliseconds.
    fn lookup_lag_ms(&self) -> u64;

    /// The provenance marker's value when the policy gives none.
    fn default_marker(&self) -> Value;

    /// The object of a create's body that holds its field values (HubSpot's `properties`).
    fn created_fields<'b>(&self, body: &'b mut Value) -> &'b mut Value;
}

/// A record a lookup found: its id and its values of the fields asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The record's id.
    pub id: String,
    /// Its values of the fields looked for.
    pub values: Map<String, Value>,
}

/// Candidates one page of a lookup asks for.
pub const LOOKUP_LIMIT: usize = 100;

/// Most candidates one lookup reads, over all its pages: past it, the outcome stays unknown.
pub const LOOKUP_BUDGET: usize = 2_000;

/// The records a CRM shows created since a write.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CreatedWindow {
    /// Newest first.
    pub candidates: Vec<Candidate>,
    /// Whether every record of the window was read (`false`: the budget ran out first).
    pub complete: bool,
}

/// The CRMs a build governs: the registry picks the implementation for each.
pub trait CrmDirectory: 'static {
    /// The governed form of `crm`.
    fn governed(crm: Crm) -> &'static dyn GovernedCrm;
}

/// A record's current field values, and who changed it last when the CRM says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CurrentValues {
    /// Each field asked for, keyed by the name it was asked by; `null` when empty.
    pub values: Map<String, Value>,
    /// The CRM user who last changed the record (Salesforce's `LastModifiedById`, HubSpot's
    /// `hs_updated_by_user_id`), when the CRM gives it.
    pub last_changed_by: Option<String>,
}

impl CurrentValues {
    /// The asked fields from a record's values, matched without case (Salesforce answers with
    /// its own spelling), keyed by the asked name; `changed_by` names the CRM's field for who
    /// changed the record last.
    pub fn pick(record: &Map<String, Value>, fields: &[&str], changed_by: &str) -> Self {
        let find = |name: &str| {
            record
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
                .unwrap_or(Value::Null)
        };
        CurrentValues {
            values: crate::sorted_map::json_object(
                fields.iter().map(|f| (f.to_string(), find(f))).collect(),
            ),
            last_changed_by: match find(changed_by) {
                Value::String(s) if !s.is_empty() => Some(s),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            },
        }
    }
}

/// The refusal for a write request no CRM's governance recognises.
pub fn unrecognised(request: &Request) -> ToolError {
    ToolError::Forbidden(format!(
        "a {} to {} is not a write this plugin knows how to govern, so it was not sent",
        request.method().as_str(),
        request.url().path()
    ))
}

/// The request's path below `root` (the tenant's integration root), as segments, and its JSON
/// body (`null` when it has none or it is not JSON).
pub fn path_and_body<'r>(request: &'r Request, root: &url::Url) -> (Vec<&'r str>, Value) {
    let root = root.path().trim_end_matches('/');
    let rest: Vec<&str> = request
        .url()
        .path()
        .strip_prefix(root)
        .and_then(|p| p.strip_prefix('/'))
        .map(|p| p.split('/').collect())
        .unwrap_or_default();
    let body: Value = match request.body() {
        Some(bytes) => serde_json::from_slice(bytes).unwrap_or(Value::Null),
        None => Value::Null,
    };
    (rest, body)
}

/// A JSON string or number as text (HubSpot's ids come as either).
pub fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A Salesforce record answer as "Get field values from a standard object record" shows
    /// it (https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_get_field_values.htm).
    #[test]
    fn fields_are_picked_by_their_asked_name_with_who_changed_them() {
        let record = json!({
            "attributes": {"type": "Account", "url": "/services/data/v65.0/sobjects/Account/001D000000INjVe"},
            "AccountNumber": "CD656092", "BillingPostalCode": "27215",
            "LastModifiedById": "005D0000001KyEIIA0"
        });
        let current = CurrentValues::pick(
            record.as_object().unwrap(),
            &["accountnumber", "Phone"],
            "LastModifiedById",
        );
        assert_eq!(current.values["accountnumber"], json!("CD656092"));
        assert_eq!(current.values["Phone"], Value::Null);
        assert_eq!(
            current.last_changed_by.as_deref(),
            Some("005D0000001KyEIIA0")
        );
    }
}
