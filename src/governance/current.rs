//! Reads the current values of the fields a write will change, just before it: what the
//! preview shows beside the new values, what the journal keeps for a revert, and what a
//! confirmation is checked against. One read per CRM, on each CRM's documented read path.

use super::policy::WorkspacePolicy;
use super::target::WriteTarget;
use crate::crma::client::{self as crma_client, Call};
use crate::crma::scopes::Operation;
use crate::crma::types::ObjectType;
use crate::crmb::client as crmb_client;
use crate::error::{Crm, CrmProblem, ToolError};
use crate::http::Request;
use crate::proxy;
use crate::tool::Session;
use serde::Deserialize;
use serde_json::{Map, Value};

/// A record's current field values, and who changed it last when the CRM says.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct CurrentValues {
    /// Each field asked for, keyed by the name it was asked by; `null` when empty.
    pub(super) values: Map<String, Value>,
    /// The CRM user who last changed the record (Salesforce's `LastModifiedById`, HubSpot's
    /// `hs_updated_by_user_id`), when the CRM gives it.
    pub(super) last_changed_by: Option<String>,
}

/// HubSpot's record answer, `GET /crm/v3/objects/{type}/{id}` ("Retrieve records" on
/// <https://developers.hubspot.com/docs/api/crm/objects>): only `properties` is read.
#[derive(Debug, Deserialize)]
struct HubspotRecord {
    properties: Map<String, Value>,
}

/// HubSpot's property holding the user who last changed a record.
const HUBSPOT_UPDATED_BY: &str = "hs_updated_by_user_id";
/// Salesforce's field holding the user who last changed a record.
const SALESFORCE_UPDATED_BY: &str = "LastModifiedById";

/// The current values of `fields` of record `record_id` written by `target`.
pub(super) fn read(
    session: &mut Session<'_>,
    target: &WriteTarget,
    record_id: &str,
    fields: &[&str],
) -> Result<CurrentValues, ToolError> {
    match target.crm {
        Crm::Hubspot => read_hubspot(session, &target.object, record_id, fields),
        Crm::Salesforce => read_salesforce(session, &target.object, record_id, fields),
    }
}

fn read_hubspot(
    session: &mut Session<'_>,
    object: &str,
    record_id: &str,
    fields: &[&str],
) -> Result<CurrentValues, ToolError> {
    let object_type = ObjectType::parse(object).map_err(ToolError::invalid)?;
    let mut asked: Vec<&str> = fields.to_vec();
    asked.push(HUBSPOT_UPDATED_BY);
    let call = Call::get(
        Operation::Read(object_type),
        vec!["crm", "v3", "objects", object, record_id],
        format!("{object} record {record_id}"),
    )
    .with_query(vec![("properties", asked.join(","))]);
    let record: HubspotRecord = crma_client::send_for(session, call)?;
    Ok(pick(&record.properties, fields, HUBSPOT_UPDATED_BY))
}

fn read_salesforce(
    session: &mut Session<'_>,
    object: &str,
    record_id: &str,
    fields: &[&str],
) -> Result<CurrentValues, ToolError> {
    let mut asked: Vec<&str> = fields.to_vec();
    asked.push(SALESFORCE_UPDATED_BY);
    let list = asked.join(",");
    let url = proxy::crm_b(
        session.config()?,
        &["sobjects", object, record_id],
        &[("fields", &list)],
    )?;
    let subject = format!("{object} record {record_id}");
    let response = crmb_client::send(session, &Request::read(Crm::Salesforce, url), &subject)?;
    let record: Map<String, Value> = serde_json::from_slice(&response.body).map_err(|e| {
        CrmProblem::unexpected_answer(
            Crm::Salesforce,
            response.status,
            format!("the answer about {subject} was not a record: {e}"),
        )
    })?;
    Ok(pick(&record, fields, SALESFORCE_UPDATED_BY))
}

/// The asked fields from a record's values, matched without case (Salesforce answers with
/// its own spelling), keyed by the asked name.
fn pick(record: &Map<String, Value>, fields: &[&str], changed_by: &str) -> CurrentValues {
    let find = |name: &str| {
        record
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
            .unwrap_or(Value::Null)
    };
    CurrentValues {
        values: fields.iter().map(|f| (f.to_string(), find(f))).collect(),
        last_changed_by: match find(changed_by) {
            Value::String(s) if !s.is_empty() => Some(s),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        },
    }
}

/// Each field of `expected` whose value `now` holds no longer, with both values, described
/// for a refusal by `describe(field, expected, now)`; a masked field is named, never its values.
pub(super) fn moved(
    expected: &Map<String, Value>,
    now: &Map<String, Value>,
    policy: &WorkspacePolicy,
    describe: impl Fn(&str, &Value, &Value) -> String,
) -> Vec<String> {
    expected
        .iter()
        .filter_map(|(field, then)| {
            let now = now.get(field).unwrap_or(&Value::Null);
            (!same_value(then, now)).then(|| {
                if policy.is_masked(field) {
                    format!("{field} (masked) holds another value")
                } else {
                    describe(field, then, now)
                }
            })
        })
        .collect()
}

/// Whether two field values are the same value as the CRM stores it: HubSpot keeps every
/// value as text, so `10` and `"10"` are one value, and an empty text is no value.
pub(super) fn same_value(a: &Value, b: &Value) -> bool {
    fn text(v: &Value) -> Option<String> {
        match v {
            Value::Null => None,
            Value::String(s) if s.is_empty() => None,
            Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        }
    }
    text(a) == text(b)
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
        let current = pick(
            record.as_object().unwrap(),
            &["accountnumber", "Phone"],
            SALESFORCE_UPDATED_BY,
        );
        assert_eq!(current.values["accountnumber"], json!("CD656092"));
        assert_eq!(current.values["Phone"], Value::Null);
        assert_eq!(
            current.last_changed_by.as_deref(),
            Some("005D0000001KyEIIA0")
        );
    }

    #[test]
    fn values_compare_as_the_crm_stores_them() {
        assert!(same_value(&json!(10), &json!("10")));
        assert!(same_value(&json!(""), &Value::Null));
        assert!(!same_value(&json!("10"), &json!("11")));
        assert!(same_value(&json!(true), &json!("true")));
    }
}
