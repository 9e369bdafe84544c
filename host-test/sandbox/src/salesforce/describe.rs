//! The sandbox org's describe answers ("Describe an object", REST API Developer Guide): each
//! field's type, whether it is required or createable, and the compound it belongs to
//! (`compoundFieldName`), as Salesforce reports them.

use super::*;

impl SalesforceData {
    pub(super) fn describe(&self, object: &str) -> Answer {
        let Some(prefix) = KEY_PREFIXES
            .iter()
            .find(|(o, _)| *o == object)
            .map(|(_, p)| *p)
        else {
            return not_found();
        };
        let required: &[&str] = REQUIRED
            .iter()
            .find(|(o, _)| *o == object)
            .map(|(_, r)| *r)
            .unwrap_or(&[]);
        let fields: Vec<Value> = self
            .field_names(object)
            .into_iter()
            .map(|name| self.describe_field(object, &name, required.contains(&name.as_str())))
            .collect();
        let children: Vec<Value> = match object {
            "Account" => vec![
                json!({"childSObject": "Contact", "field": "AccountId", "relationshipName": "Contacts"}),
                json!({"childSObject": "Opportunity", "field": "AccountId", "relationshipName": "Opportunities"}),
                json!({"childSObject": "Case", "field": "AccountId", "relationshipName": "Cases"}),
            ],
            _ => vec![],
        };
        (
            200,
            json!({"name": object, "label": object, "labelPlural": object.strip_suffix('y').map_or(format!("{object}s"), |stem| format!("{stem}ies")), "keyPrefix": prefix, "custom": false,
                   "queryable": true, "createable": object != "User", "updateable": true, "fields": fields, "childRelationships": children}),
        )
    }

    /// A field's describe, its type read off its name and values.
    fn describe_field(&self, object: &str, name: &str, required: bool) -> Value {
        let sample = self
            .rows(object)
            .into_iter()
            .flatten()
            .map(|r| &r[name])
            .find(|v| !v.is_null());
        let (kind, reference) = field_type(name, sample);
        let picklist: Vec<Value> = if kind == "picklist" {
            let mut values: Vec<String> = self
                .rows(object)
                .into_iter()
                .flatten()
                .filter_map(|r| r[name].as_str().map(str::to_string))
                .collect();
            values.sort();
            values.dedup();
            values
                .iter()
                .map(|v| json!({"value": v, "label": v, "active": true, "defaultValue": false}))
                .collect()
        } else {
            vec![]
        };
        // Salesforce sets these itself (Name of people is compound: FirstName + LastName).
        let system_set = NOT_CREATEABLE.contains(&name)
            || kind == "address"
            || (name == "Name" && matches!(object, "Contact" | "Lead" | "User"));
        let createable = !system_set;
        json!({
            "name": name, "label": name, "type": kind, "length": if kind == "string" || kind == "picklist" { 255 } else { 0 },
            "nillable": !required && name != "Id", "createable": createable, "updateable": createable,
            "custom": name.ends_with("__c"), "calculated": false, "defaultedOnCreate": name == "Id" || name == "CreatedDate" || name == "OwnerId",
            "picklistValues": picklist,
            "referenceTo": reference.iter().collect::<Vec<_>>(),
            "relationshipName": name.strip_suffix("Id").filter(|_| reference.is_some()),
            "compoundFieldName": compound_field_name(object, name),
        })
    }
}

/// The compound a field is part of, as describe reports it (`compoundFieldName`; SOAP API
/// Developer Guide, "Compound Fields"): a person's name parts are parts of `Name`, an address's
/// parts of the address with the same prefix, a geolocation's of the geolocation field.
fn compound_field_name(object: &str, name: &str) -> Option<String> {
    const NAME_PARTS: [&str; 5] = [
        "FirstName",
        "LastName",
        "MiddleName",
        "Suffix",
        "Salutation",
    ];
    const ADDRESS_PARTS: [&str; 10] = [
        "Street",
        "City",
        "State",
        "PostalCode",
        "Country",
        "StateCode",
        "CountryCode",
        "Latitude",
        "Longitude",
        "GeocodeAccuracy",
    ];
    if matches!(object, "Contact" | "Lead" | "User") && NAME_PARTS.contains(&name) {
        return Some("Name".into());
    }
    for geo in ["__Latitude__s", "__Longitude__s"] {
        if let Some(base) = name.strip_suffix(geo) {
            return Some(format!("{base}__c"));
        }
    }
    ADDRESS_PARTS.iter().find_map(|part| {
        let prefix = name.strip_suffix(part)?;
        matches!(prefix, "Billing" | "Shipping" | "Mailing" | "Other")
            .then(|| format!("{prefix}Address"))
    })
}

/// A field's describe type and lookup target, from its name and a sample value.
fn field_type(name: &str, sample: Option<&Value>) -> (&'static str, Option<String>) {
    let reference = |target: &str| ("reference", Some(target.to_string()));
    match name {
        "Id" => ("id", None),
        "OwnerId" => reference("User"),
        "AccountId" => reference("Account"),
        "ContactId" | "WhoId" => reference("Contact"),
        "WhatId" => reference("Opportunity"),
        "Amount" | "AnnualRevenue" => ("currency", None),
        "Probability" => ("percent", None),
        "Email" => ("email", None),
        "Phone" => ("phone", None),
        "Website" => ("url", None),
        "StageName" | "Industry" | "Status" | "Type" | "Priority" | "Origin" | "LeadSource"
        | "Rating" => ("picklist", None),
        _ => match sample {
            // Compound address fields read as one object (SOAP API Developer Guide, "Address
            // Compound Fields"), and cannot be written whole.
            Some(Value::Object(_)) if name.ends_with("Address") => ("address", None),
            Some(Value::Bool(_)) => ("boolean", None),
            Some(Value::Number(n)) if n.is_i64() => ("int", None),
            Some(Value::Number(_)) => ("double", None),
            Some(Value::String(s)) if s.len() == 10 && s.as_bytes()[4] == b'-' => ("date", None),
            Some(Value::String(s))
                if s.len() > 10 && s.as_bytes()[4] == b'-' && s.as_bytes()[10] == b'T' =>
            {
                ("datetime", None)
            }
            _ => ("string", None),
        },
    }
}
