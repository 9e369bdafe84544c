//! Field maps for creates and updates: API names to JSON scalars, checked before sending.

use super::ids::ApiName;
use crate::error::ToolError;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Most fields one write may set.
const MAX_FIELDS: usize = 500;

/// A field value Salesforce accepts in a write: string, number, boolean or null.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Scalar(Value);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            value @ (Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_)) => {
                Ok(Scalar(value))
            }
            _ => Err(serde::de::Error::custom(
                "field values must be a string, number, boolean or null (dates as \"2026-11-30\", \
                 multi-select picklists as \"a;b\")",
            )),
        }
    }
}

impl JsonSchema for Scalar {
    fn schema_name() -> Cow<'static, str> {
        "FieldValue".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": ["string", "number", "boolean", "null"]})
    }
}

/// Field API name → value, for `crmb_create_record` and `crmb_update_record`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
pub(crate) struct FieldValues(BTreeMap<ApiName, Scalar>);

impl FieldValues {
    /// The JSON body of the write; refuses an empty or oversized map and fields no write may set.
    pub(crate) fn to_body(&self) -> Result<Value, ToolError> {
        if self.0.is_empty() {
            return Err(ToolError::invalid(
                "fields is empty: give at least one field API name and value",
            ));
        }
        if self.0.len() > MAX_FIELDS {
            return Err(ToolError::invalid(format!(
                "fields sets {} fields; at most {MAX_FIELDS} per call",
                self.0.len()
            )));
        }
        if let Some(name) = self
            .0
            .keys()
            .find(|k| k.as_str().eq_ignore_ascii_case("Id"))
        {
            return Err(ToolError::invalid(format!(
                "{name} cannot be set: the record id is chosen by Salesforce (to change a record, use crmb_update_record with record_id)"
            )));
        }
        let body = crate::sorted_map::json_object(
            self.0
                .iter()
                .map(|(k, v)| (k.as_str().to_string(), v.0.clone()))
                .collect(),
        );
        Ok(Value::Object(body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value) -> Result<FieldValues, String> {
        serde_json::from_value(value).map_err(|e| e.to_string())
    }

    #[test]
    fn scalars_pass_through_in_the_body() {
        let fields = parse(
            json!({"Name": "Acme", "AnnualRevenue": 5e6, "IsActive__c": true, "Description": null}),
        )
        .unwrap();
        assert_eq!(
            fields.to_body().unwrap(),
            json!({"Name": "Acme", "AnnualRevenue": 5e6, "IsActive__c": true, "Description": null})
        );
    }

    #[test]
    fn nested_values_and_bad_names_are_refused() {
        assert!(
            parse(json!({"Name": {"first": "A"}}))
                .unwrap_err()
                .contains("string, number, boolean or null")
        );
        assert!(parse(json!({"Tags": ["a", "b"]})).is_err());
        assert!(
            parse(json!({"Bad Name": "x"}))
                .unwrap_err()
                .contains("API name")
        );
        assert!(parse(json!(["Name"])).is_err());
    }

    #[test]
    fn empty_maps_and_ids_are_refused() {
        assert!(matches!(
            parse(json!({})).unwrap().to_body(),
            Err(ToolError::InvalidInput(_))
        ));
        let err = parse(json!({"Id": "001000000000001"}))
            .unwrap()
            .to_body()
            .unwrap_err();
        assert!(matches!(&err, ToolError::InvalidInput(m) if m.contains("crmb_update_record")));
    }
}
