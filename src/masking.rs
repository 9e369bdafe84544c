//! The one masking step every answer passes through before anyone reads it: a tool's answer as
//! the host hands it on, a finished task's stored answer, a result file's lines, a CRM error.
//! It runs with the policy in force when the answer is *read*, so an answer kept from before a
//! field was masked no longer shows it.
//!
//! Fields are masked by meaning, not only by name ([`compound`]): a masked part masks its
//! compound (`LastName` masks a person's `Name`), a masked compound its parts, and a name
//! reached through a relationship to a person (`Owner.Name`, `Who.Name`, a timeline's `owner`)
//! is a compound of that person's name parts. Keys are compared without case and without
//! underscores as well (`last_name` is `LastName`): masking too much is safe, too little is not.

use crate::crmb::compound::{self, MASKED};
use serde_json::{Map, Value};

/// Keys whose text value is the name of a related person (an owner, an assignee, whoever
/// created the record): a compound of that person's name parts. Compared without case and
/// without underscores.
const PERSON_NAME_KEYS: &[&str] = &[
    "owner",
    "ownername",
    "createdby",
    "lastmodifiedby",
    "who",
    "assignee",
    "assignedto",
];

/// Replaces, anywhere in `value`, every value that would show a masked field. `masked` holds
/// the masked names, lower-case.
pub fn mask_value(value: &mut Value, masked: &[String]) {
    if !masked.is_empty() {
        walk(value, false, masked);
    }
}

/// Whether the masked names hide a person's name (any part of it, or `Name` itself).
pub fn person_name_masked(masked: &[String]) -> bool {
    compound::shows_masked("Name", true, masked).is_some()
}

fn walk(value: &mut Value, person: bool, masked: &[String]) {
    match value {
        Value::Object(map) => walk_record(map, person, masked),
        Value::Array(items) => items.iter_mut().for_each(|v| walk(v, false, masked)),
        _ => {}
    }
}

/// One object: a record (a person's when its type or its fields say so, or when reached
/// through a relationship to a person) or any other part of an answer.
fn walk_record(map: &mut Map<String, Value>, person: bool, masked: &[String]) {
    let record_type = map
        .get("attributes")
        .and_then(|a| a.get("type"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let person =
        person || compound::has_person_name(record_type.as_deref(), map.keys().map(String::as_str));
    for (key, v) in map.iter_mut() {
        if key == "attributes" {
            continue;
        }
        let compact: String = key.chars().filter(|c| *c != '_').collect();
        let shows = |name: &str| compound::shows_masked(name, person, masked).is_some();
        if shows(key) || (compact.len() != key.len() && shows(&compact)) {
            if !v.is_null() {
                *v = Value::String(MASKED.into());
            }
            continue;
        }
        let names_a_person = PERSON_NAME_KEYS
            .iter()
            .any(|k| k.eq_ignore_ascii_case(&compact));
        match v {
            Value::String(_) if names_a_person && person_name_masked(masked) => {
                *v = Value::String(MASKED.into());
            }
            Value::Object(_) if names_a_person || compound::leads_to_person(&compact) => {
                walk(v, true, masked)
            }
            _ => walk(v, false, masked),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn masked(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_ascii_lowercase()).collect()
    }

    #[test]
    fn a_name_through_a_relationship_is_a_compound_of_the_persons_parts() {
        let m = masked(&["LastName"]);
        // A timeline item (crm_record_timeline) and a SOQL row with its owner's name.
        let mut answer = json!({
            "items": [{"kind": "task", "owner": "Dana Whitfield", "subject": "Call"}],
            "records": [{
                "attributes": {"type": "Opportunity"},
                "Name": "Big deal",
                "Owner": {"attributes": {"type": "User"}, "Name": "Dana Whitfield"},
                "CreatedBy": {"Name": "Dana Whitfield", "Email": "dana@example.com"}
            }],
            "owners": [{"id": "1", "first_name": "Dana", "last_name": "Whitfield"}]
        });
        mask_value(&mut answer, &m);
        let text = answer.to_string();
        assert!(!text.contains("Whitfield"), "{text}");
        assert_eq!(answer["items"][0]["subject"], "Call");
        assert_eq!(
            answer["records"][0]["Name"], "Big deal",
            "an opportunity's own name"
        );
        assert_eq!(
            answer["records"][0]["CreatedBy"]["Email"],
            "dana@example.com"
        );
        assert_eq!(
            answer["owners"][0]["first_name"], "Dana",
            "a sibling part is not masked"
        );
    }

    #[test]
    fn nothing_masked_changes_nothing_and_nulls_stay_null() {
        let mut answer = json!({"owner": "Dana", "Email": null});
        let before = answer.clone();
        mask_value(&mut answer, &[]);
        assert_eq!(answer, before);
        mask_value(&mut answer, &masked(&["email"]));
        assert_eq!(answer["Email"], Value::Null);
    }

    #[test]
    fn a_masked_field_is_masked_at_any_depth_and_in_any_spelling() {
        let m = masked(&["SSN__c", "jobtitle"]);
        let mut answer = json!({"a": [{"b": {"ssn__C": "1", "job_title": "CEO", "x": 2}}]});
        mask_value(&mut answer, &m);
        assert_eq!(
            answer,
            json!({"a": [{"b": {"ssn__C": MASKED, "job_title": MASKED, "x": 2}}]})
        );
    }
}
