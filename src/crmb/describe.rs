//! A compact view of Salesforce's describe: what a model needs to write SOQL and field maps,
//! without the hundreds of kilobytes of the raw answer.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The parts of a describe answer that are kept (serde skips the rest while parsing).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawDescribe {
    name: String,
    #[serde(default)]
    label: String,
    #[serde(default)]
    label_plural: String,
    #[serde(default)]
    key_prefix: Option<String>,
    #[serde(default)]
    custom: bool,
    #[serde(default)]
    queryable: bool,
    #[serde(default)]
    createable: bool,
    #[serde(default)]
    updateable: bool,
    #[serde(default)]
    pub(crate) fields: Vec<RawField>,
    #[serde(default)]
    child_relationships: Vec<RawChild>,
}

/// One entry of the describe answer's `fields`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawField {
    name: String,
    #[serde(default)]
    label: String,
    #[serde(rename = "type", default)]
    field_type: String,
    #[serde(default)]
    length: u64,
    #[serde(default)]
    nillable: bool,
    #[serde(default)]
    createable: bool,
    #[serde(default)]
    updateable: bool,
    #[serde(default)]
    custom: bool,
    #[serde(default)]
    defaulted_on_create: bool,
    #[serde(default)]
    picklist_values: Vec<RawPicklistValue>,
    #[serde(default)]
    reference_to: Vec<String>,
    #[serde(default)]
    relationship_name: Option<String>,
}

/// One entry of a field's `picklistValues`.
#[derive(Debug, Deserialize)]
struct RawPicklistValue {
    value: String,
    #[serde(default)]
    active: bool,
}

/// One entry of the describe answer's `childRelationships`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawChild {
    #[serde(default)]
    child_s_object: String,
    #[serde(default)]
    field: String,
    #[serde(default)]
    relationship_name: Option<String>,
}

/// Which fields the caller wants.
#[derive(Debug, Clone, Default)]
pub struct FieldFilter {
    /// Case-insensitive part of the name or label.
    pub name_contains: Option<String>,
    /// Only custom fields (API names ending in `__c`).
    pub custom_only: bool,
    /// Only fields that can be set when creating a record.
    pub createable_only: bool,
}

/// One field of the object.
#[derive(Debug, Serialize, JsonSchema, PartialEq)]
pub struct FieldView {
    /// Field API name, as used in SOQL and in field maps (e.g. StageName, Region__c).
    pub name: String,
    /// The field's label in the Salesforce UI.
    pub label: String,
    /// Salesforce field type, e.g. string, picklist, reference, currency, date, boolean.
    #[serde(rename = "type")]
    pub field_type: String,
    /// Present for picklist, multipicklist and combobox fields: the active values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub picklist_values: Option<Vec<String>>,
    /// Present for lookups: the objects the field may point to.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reference_to: Vec<String>,
    /// Present for lookups: the name to reach the parent in SOQL (e.g. Account in Account.Name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relationship_name: Option<String>,
    /// Must be given on create: not nillable, createable, and not defaulted by Salesforce.
    pub required_on_create: bool,
    /// The field can be set when creating a record.
    pub createable: bool,
    /// The field can be changed on an existing record.
    pub updateable: bool,
    /// A custom field (its API name ends in __c).
    pub custom: bool,
    /// Present for text fields: the most characters the field holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length: Option<u64>,
}

/// A Salesforce object's fields, in compact form.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ObjectView {
    /// Object API name.
    pub object: String,
    /// The object's label in the Salesforce UI.
    pub label: String,
    /// The object's plural label.
    pub label_plural: String,
    /// The first three characters of this object's record ids; null for objects without ids
    /// of their own.
    pub key_prefix: Option<String>,
    /// A custom object (its API name ends in __c).
    pub custom: bool,
    /// The user can query the object with SOQL.
    pub queryable: bool,
    /// The user can create records of the object.
    pub createable: bool,
    /// The user can update records of the object.
    pub updateable: bool,
    /// How many fields the object has in all, before the filters.
    pub field_count: usize,
    /// The fields that pass the filters.
    pub fields: Vec<FieldView>,
    /// Present when asked for: child relationship names usable in subqueries, e.g.
    /// `(SELECT Id FROM Contacts)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub child_relationships: Option<Vec<ChildView>>,
}

/// A child relationship: records of another object that look up to this one.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ChildView {
    /// The name to use in a subquery's FROM, e.g. Contacts.
    pub relationship_name: String,
    /// The child object's API name, e.g. Contact.
    pub child_object: String,
    /// The child's lookup field to this object, e.g. AccountId.
    pub field: String,
}

const TEXT_TYPES: &[&str] = &[
    "string",
    "textarea",
    "email",
    "phone",
    "url",
    "picklist",
    "multipicklist",
    "combobox",
    "encryptedstring",
];

/// Maps a parsed describe to the compact view.
pub fn compact(raw: RawDescribe, filter: &FieldFilter, with_children: bool) -> ObjectView {
    let needle = filter.name_contains.as_deref().map(str::to_ascii_lowercase);
    let field_count = raw.fields.len();
    let fields = raw
        .fields
        .into_iter()
        .filter(|f| {
            needle.as_deref().is_none_or(|n| {
                f.name.to_ascii_lowercase().contains(n) || f.label.to_ascii_lowercase().contains(n)
            }) && (!filter.custom_only || f.custom)
                && (!filter.createable_only || f.createable)
        })
        .map(field_view)
        .collect();
    let child_relationships = with_children.then(|| {
        raw.child_relationships
            .into_iter()
            .filter_map(|c| {
                Some(ChildView {
                    relationship_name: c.relationship_name?,
                    child_object: c.child_s_object,
                    field: c.field,
                })
            })
            .collect()
    });
    ObjectView {
        object: raw.name,
        label: raw.label,
        label_plural: raw.label_plural,
        key_prefix: raw.key_prefix,
        custom: raw.custom,
        queryable: raw.queryable,
        createable: raw.createable,
        updateable: raw.updateable,
        field_count,
        fields,
        child_relationships,
    }
}

fn field_view(f: RawField) -> FieldView {
    // A combobox is "a picklist that also allows users to type a value that isn't already
    // specified in the list" (Field Types, Object Reference): its list matters as much.
    let is_picklist = matches!(
        f.field_type.as_str(),
        "picklist" | "multipicklist" | "combobox"
    );
    FieldView {
        required_on_create: !f.nillable && f.createable && !f.defaulted_on_create,
        picklist_values: is_picklist.then(|| {
            f.picklist_values
                .into_iter()
                .filter(|p| p.active)
                .map(|p| p.value)
                .collect()
        }),
        length: TEXT_TYPES
            .contains(&f.field_type.as_str())
            .then_some(f.length),
        name: f.name,
        label: f.label,
        field_type: f.field_type,
        reference_to: f.reference_to,
        relationship_name: f.relationship_name,
        createable: f.createable,
        updateable: f.updateable,
        custom: f.custom,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A trimmed real describe of Opportunity (shape as Salesforce returns it).
    fn opportunity() -> RawDescribe {
        serde_json::from_value(json!({
            "name": "Opportunity", "label": "Opportunity", "labelPlural": "Opportunities", "keyPrefix": "006",
            "custom": false, "queryable": true, "createable": true, "updateable": true, "deletable": true,
            "urls": {"describe": "/services/data/v65.0/sobjects/Opportunity/describe"},
            "fields": [
                {"name": "Id", "label": "Opportunity ID", "type": "id", "length": 18, "nillable": false, "createable": false, "updateable": false, "custom": false, "calculated": false, "defaultedOnCreate": true, "picklistValues": [], "referenceTo": [], "relationshipName": null},
                {"name": "AccountId", "label": "Account ID", "type": "reference", "length": 18, "nillable": true, "createable": true, "updateable": true, "custom": false, "defaultedOnCreate": false, "picklistValues": [], "referenceTo": ["Account"], "relationshipName": "Account"},
                {"name": "StageName", "label": "Stage", "type": "picklist", "length": 255, "nillable": false, "createable": true, "updateable": true, "custom": false, "defaultedOnCreate": false,
                 "picklistValues": [{"value": "Prospecting", "label": "Prospecting", "active": true, "defaultValue": false}, {"value": "Old Stage", "label": "Old Stage", "active": false, "defaultValue": false}],
                 "referenceTo": [], "relationshipName": null},
                {"name": "Amount", "label": "Amount", "type": "currency", "length": 0, "nillable": true, "createable": true, "updateable": true, "custom": false, "defaultedOnCreate": false, "picklistValues": [], "referenceTo": []},
                {"name": "Region__c", "label": "Sales Region", "type": "string", "length": 40, "nillable": true, "createable": true, "updateable": true, "custom": true, "defaultedOnCreate": false, "picklistValues": [], "referenceTo": []}
            ],
            "childRelationships": [{"childSObject": "OpportunityLineItem", "field": "OpportunityId", "relationshipName": "OpportunityLineItems", "cascadeDelete": true}, {"childSObject": "X", "field": "Y", "relationshipName": null}],
            "recordTypeInfos": []
        }))
        .unwrap()
    }

    #[test]
    fn compact_view_keeps_what_a_model_needs() {
        let view = compact(opportunity(), &FieldFilter::default(), true);
        let v = serde_json::to_value(&view).unwrap();
        assert_eq!(v["object"], "Opportunity");
        assert_eq!(v["field_count"], 5);
        let stage = &v["fields"][2];
        assert_eq!(
            stage["picklist_values"],
            json!(["Prospecting"]),
            "inactive values dropped"
        );
        assert_eq!(stage["required_on_create"], true);
        assert_eq!(
            v["fields"][0]["required_on_create"], false,
            "Id is not createable"
        );
        assert_eq!(v["fields"][1]["reference_to"], json!(["Account"]));
        assert_eq!(v["fields"][1]["relationship_name"], "Account");
        assert!(
            v["fields"][3].get("length").is_none(),
            "no length for currency"
        );
        assert_eq!(
            v["child_relationships"],
            json!([{"relationship_name": "OpportunityLineItems", "child_object": "OpportunityLineItem", "field": "OpportunityId"}])
        );
        assert!(v.get("urls").is_none() && v["fields"][0].get("calculated").is_none());
    }

    /// Task.Subject is a combobox: "a picklist that also allows users to type a value that isn't
    /// already specified in the list" (Object Reference, Field Types), and its describe carries
    /// the list in `picklistValues`.
    #[test]
    fn combobox_fields_carry_their_picklist_values() {
        let task: RawDescribe = serde_json::from_value(json!({
            "name": "Task", "label": "Task", "custom": false, "createable": true, "updateable": true, "queryable": true,
            "fields": [{"name": "Subject", "label": "Subject", "type": "combobox", "length": 255, "nillable": true,
                        "createable": true, "updateable": true, "custom": false, "defaultedOnCreate": false,
                        "picklistValues": [{"value": "Call", "label": "Call", "active": true, "defaultValue": false},
                                           {"value": "Send Letter", "label": "Send Letter", "active": true, "defaultValue": false}],
                        "referenceTo": []}],
            "childRelationships": []
        }))
        .unwrap();
        let v = serde_json::to_value(compact(task, &FieldFilter::default(), false)).unwrap();
        assert_eq!(
            v["fields"][0]["picklist_values"],
            json!(["Call", "Send Letter"])
        );
        assert_eq!(v["fields"][0]["length"], 255);
    }

    #[test]
    fn filters_narrow_the_fields() {
        let only = |filter: FieldFilter| -> Vec<String> {
            compact(opportunity(), &filter, false)
                .fields
                .into_iter()
                .map(|f| f.name)
                .collect()
        };
        assert_eq!(
            only(FieldFilter {
                name_contains: Some("region".into()),
                ..Default::default()
            }),
            vec!["Region__c"]
        );
        assert_eq!(
            only(FieldFilter {
                name_contains: Some("STAGE".into()),
                ..Default::default()
            }),
            vec!["StageName"]
        );
        assert_eq!(
            only(FieldFilter {
                custom_only: true,
                ..Default::default()
            }),
            vec!["Region__c"]
        );
        assert_eq!(
            only(FieldFilter {
                createable_only: true,
                ..Default::default()
            })
            .len(),
            4
        );
    }
}
