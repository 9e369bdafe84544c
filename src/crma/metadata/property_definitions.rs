//! `crma_get_properties`: an object type's property definitions, compact: what a model needs
//! to write a filter or a value, and nothing of HubSpot's long descriptions and group names.

use crate::crma::client::{self, Call};
use crate::crma::scopes::Operation;
use crate::crma::types::{Collection, ObjectType, decode};
use crate::error::ToolError;
use crate::tool::{CrmEffect, Session, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Input of `crma_get_properties`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PropertiesInput {
    object_type: ObjectType,
    /// Only properties whose name or label contains this text (case-insensitive).
    #[serde(default)]
    name_contains: Option<String>,
}

/// A property definition, one row of `GET /crm/v3/properties/{objectType}`: HubSpot's
/// `Property` object, as in
/// <https://developers.hubspot.com/docs/api-reference/crm-properties-v3/batch/post-crm-v3-properties-objectType-batch-read>:
/// `{"name": "my_contact_property", "label": "My Contact Property", "type": "enumeration",
/// "fieldType": "select", "options": [{"label": "Option A", "value": "A", "hidden": false,
/// ...}], "modificationMetadata": {"readOnlyValue": false, ...}, "hasUniqueValue": false, ...}`.
///
/// `name`, `label`, `type` and `fieldType` are required. So is `options` in the reference
/// (empty for types without options), but this tool has always listed a definition without it
/// as having no options, and still does. The flags are optional in the reference.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireProperty {
    name: String,
    label: String,
    #[serde(rename = "type")]
    kind: String,
    field_type: String,
    #[serde(default)]
    options: Vec<WireOption>,
    modification_metadata: Option<ModificationMetadata>,
    calculated: Option<bool>,
    has_unique_value: Option<bool>,
    archived: Option<bool>,
}

/// An enumeration option: `label`, `value` and `hidden` are required.
#[derive(Debug, Deserialize)]
struct WireOption {
    label: String,
    value: String,
    hidden: bool,
}

/// A definition's `modificationMetadata`, of which `readOnlyValue` (required) is read: whether
/// values can be written at all.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModificationMetadata {
    read_only_value: bool,
}

impl WireProperty {
    /// Whether the name or label contains `needle` (already lower-case).
    fn matches(&self, needle: &str) -> bool {
        [&self.name, &self.label]
            .iter()
            .any(|text| text.to_lowercase().contains(needle))
    }
}

/// What `crma_get_properties` answers.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct PropertyDefinitions {
    /// The object type asked about.
    object_type: String,
    /// How many properties are listed.
    count: usize,
    /// The type's properties that are not archived (and match name_contains when given).
    properties: Vec<PropertySummary>,
}

/// One property definition, compact: what a model needs to write a filter or a value.
#[derive(Debug, Serialize, JsonSchema)]
struct PropertySummary {
    /// The internal name to use in filters and writes, e.g. dealstage.
    name: String,
    /// The name shown in HubSpot, e.g. "Deal Stage".
    label: String,
    /// The data type: string, number, date, datetime, enumeration, bool, ...
    #[serde(rename = "type")]
    kind: String,
    /// How HubSpot shows it: text, textarea, select, checkbox, date, ...
    field_type: String,
    /// The allowed options, without hidden ones; write the option's value. Present only when
    /// the property has options.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<PropertyOption>")]
    options: Option<Vec<PropertyOption>>,
    /// Present (true) only when values cannot be written: read-only or calculated by HubSpot.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    read_only: bool,
    /// Present (true) only when every record must have a different value.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    unique: bool,
}

/// One allowed value of an enumeration property.
#[derive(Debug, Serialize, JsonSchema)]
struct PropertyOption {
    /// The option's name in HubSpot.
    label: String,
    /// The internal value to write and filter by.
    value: String,
}

impl From<WireProperty> for PropertySummary {
    fn from(p: WireProperty) -> Self {
        // A property with options lists them even when every one is hidden.
        let options = (!p.options.is_empty()).then(|| {
            p.options
                .into_iter()
                .filter(|o| !o.hidden)
                .map(|o| PropertyOption {
                    label: o.label,
                    value: o.value,
                })
                .collect()
        });
        let read_only = p.modification_metadata.is_some_and(|m| m.read_only_value)
            || p.calculated == Some(true);
        PropertySummary {
            name: p.name,
            label: p.label,
            kind: p.kind,
            field_type: p.field_type,
            options,
            read_only,
            unique: p.has_unique_value == Some(true),
        }
    }
}

/// `crma_get_properties`.
pub(crate) struct GetProperties;

impl Tool for GetProperties {
    const NAME: &'static str = "crma_get_properties";
    const DESCRIPTION: &'static str = "List the property definitions of a HubSpot object type, \
        compact: internal name, label, type, field type, and the allowed options of enumeration \
        properties (write the option's value). Use it before searching, creating or updating to \
        get property names and values right.";
    const TITLE: &'static str = "List HubSpot properties";
    const EFFECT: CrmEffect = CrmEffect::Reads;
    type Input = PropertiesInput;
    type Output = PropertyDefinitions;

    fn run(
        input: PropertiesInput,
        session: &mut Session<'_>,
    ) -> Result<PropertyDefinitions, ToolError> {
        let object = input.object_type.as_str().to_string();
        let call = Call::get(
            Operation::ReadProperties(input.object_type.clone()),
            vec!["crm", "v3", "properties", &object],
            format!("{object} properties"),
        );
        let definitions: Collection<WireProperty> =
            decode(client::send(session, call)?, "properties")?;
        let needle = input
            .name_contains
            .as_deref()
            .map(|n| n.trim().to_lowercase())
            .filter(|n| !n.is_empty());
        let properties: Vec<PropertySummary> = definitions
            .results
            .into_iter()
            .filter(|p| p.archived != Some(true))
            .filter(|p| needle.as_deref().is_none_or(|n| p.matches(n)))
            .map(PropertySummary::from)
            .collect();
        Ok(PropertyDefinitions {
            object_type: object,
            count: properties.len(),
            properties,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn compact(definition: Value) -> Value {
        let wire: WireProperty = decode(definition, "property").unwrap();
        serde_json::to_value(PropertySummary::from(wire)).unwrap()
    }

    #[test]
    fn properties_are_compacted_with_visible_options() {
        let p = compact(json!({
            "name": "dealstage", "label": "Deal Stage", "type": "enumeration", "fieldType": "select",
            "description": "long text", "groupName": "dealinformation",
            "options": [{"label": "Won", "value": "closedwon", "displayOrder": 1, "hidden": false},
                        {"label": "Old", "value": "old", "displayOrder": 2, "hidden": true}],
            "modificationMetadata": {"readOnlyValue": false}
        }));
        assert_eq!(
            p,
            json!({"name": "dealstage", "label": "Deal Stage", "type": "enumeration", "field_type": "select",
                   "options": [{"label": "Won", "value": "closedwon"}]})
        );
    }

    #[test]
    fn a_real_definition_reads_its_flags() {
        // The Property example of HubSpot's properties reference (page cited on `WireProperty`),
        // made read-only and unique as HubSpot's own hs_object_id is.
        let p = compact(json!({
            "displayOrder": 2, "fieldType": "select", "formField": true,
            "groupName": "contactinformation", "hasUniqueValue": true, "hidden": false,
            "label": "My Contact Property",
            "modificationMetadata": {"archivable": true, "readOnlyDefinition": false,
                                     "readOnlyOptions": false, "readOnlyValue": true},
            "name": "my_contact_property",
            "options": [{"description": "Choice number one", "displayOrder": 1, "hidden": true,
                         "label": "Option A", "value": "A"}],
            "type": "enumeration"
        }));
        assert_eq!(
            p,
            json!({"name": "my_contact_property", "label": "My Contact Property",
                   "type": "enumeration", "field_type": "select", "options": [],
                   "read_only": true, "unique": true})
        );
        assert_eq!(
            compact(
                json!({"name": "x", "label": "X", "type": "number", "fieldType": "number",
                           "options": [], "calculated": true})
            )["read_only"],
            true
        );
    }

    #[test]
    fn a_definition_without_its_required_fields_is_an_unexpected_answer() {
        let err = decode::<WireProperty>(
            json!({"name": "x", "label": "X", "fieldType": "text", "options": []}),
            "properties",
        )
        .unwrap_err();
        assert!(err.to_string().contains("missing field `type`"), "{err}");
        let err = decode::<WireProperty>(
            json!({"name": "x", "label": "X", "type": "enumeration", "fieldType": "select",
                   "options": [{"label": "A", "value": "a"}]}),
            "properties",
        )
        .unwrap_err();
        assert!(err.to_string().contains("missing field `hidden`"), "{err}");
    }
}
