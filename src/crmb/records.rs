//! Salesforce record JSON made ready for the assistant: `attributes` removed, a `record_url`
//! added wherever a record has an Id and a type, parents and child rows included.

use super::ids::{ApiName, SalesforceId};
use super::record_url::InstanceUrl;
use crate::error::{Crm, CrmProblem, ToolError};
use serde_json::{Map, Value};

/// Most records nested one inside another (parent lookups and child subquery rows alike) that
/// are mapped. Salesforce nests at most 5 levels of relationships and 5 of child subqueries, so
/// 32 is never reached by a real answer; the bound keeps the recursion from exhausting the
/// wasm stack on a hostile or broken one.
pub const MAX_RECORD_DEPTH: usize = 32;

/// Maps one record (and everything nested in it) in place; an answer nested deeper than
/// [`MAX_RECORD_DEPTH`] is refused as a `crm-error`.
pub fn map_record(record: &mut Value, instance: Option<&InstanceUrl>) -> Result<(), ToolError> {
    map_at(
        record,
        &Mapping {
            instance,
            masked: &[],
        },
        1,
    )
}

/// What mapping a record needs besides the record: the org for links, and the workspace's
/// masked fields (by meaning: compounds included, see [`super::compound`]).
#[derive(Clone, Copy)]
pub struct Mapping<'a> {
    /// The org, for each record's `record_url`.
    pub instance: Option<&'a InstanceUrl>,
    /// The workspace's masked fields, lower-cased.
    pub masked: &'a [String],
}

/// As [`map_record`], for a record the answer's typed envelope already read as a JSON object.
pub(crate) fn map_record_fields(
    fields: &mut Map<String, Value>,
    mapping: &Mapping<'_>,
) -> Result<(), ToolError> {
    map_fields(fields, mapping, 1)
}

fn map_at(record: &mut Value, mapping: &Mapping<'_>, depth: usize) -> Result<(), ToolError> {
    match record {
        Value::Object(fields) => map_fields(fields, mapping, depth),
        _ => Ok(()),
    }
}

fn map_fields(
    fields: &mut Map<String, Value>,
    mapping: &Mapping<'_>,
    depth: usize,
) -> Result<(), ToolError> {
    if depth > MAX_RECORD_DEPTH {
        return Err(too_deep());
    }
    let record_type = fields
        .remove("attributes")
        .and_then(|a| a.get("type").and_then(Value::as_str).map(str::to_string));
    // Masked before anything is read from it: a compound's value is replaced whole.
    super::compound::mask_record(fields, record_type.as_deref(), mapping.masked);
    for (name, value) in fields.iter_mut() {
        map_nested(name, value, mapping, depth)?;
    }
    if let (Some(instance), Some(record_type)) = (mapping.instance, record_type)
        && let Some(url) = url_for(fields, &record_type, instance)
    {
        fields.insert("record_url".into(), Value::String(url));
    }
    Ok(())
}

fn too_deep() -> ToolError {
    CrmProblem::new(
        Crm::Salesforce,
        "RESPONSE_TOO_DEEP",
        "Salesforce's answer nests records deeper than any real query can; it was not read. \
         Run the query again, and report it if it persists.",
    )
    .with_message(format!(
        "records are nested more than {MAX_RECORD_DEPTH} levels deep"
    ))
    .into()
}

/// A field value: a parent record (an object with attributes), a child query result
/// (`{totalSize, done, records}`), or a plain value left as it is.
fn map_nested(
    name: &str,
    value: &mut Value,
    mapping: &Mapping<'_>,
    depth: usize,
) -> Result<(), ToolError> {
    let Value::Object(inner) = value else {
        return Ok(());
    };
    if inner.contains_key("attributes") {
        map_at(value, mapping, depth + 1)?;
    } else if let Some(Value::Array(rows)) = inner.get_mut("records") {
        let child_type = rows
            .first()
            .and_then(|row| row["attributes"]["type"].as_str())
            .map(str::to_string);
        for row in rows.iter_mut() {
            map_at(row, mapping, depth + 1)?;
        }
        let returned = rows.len();
        if inner.get("done") == Some(&Value::Bool(false)) {
            mark_incomplete(name, inner, returned, child_type.as_deref());
        }
    }
    Ok(())
}

/// A child subquery Salesforce cut short (`done: false`, the rest behind its own
/// `nextRecordsUrl`; SOQL and SOSL Reference, "Understanding Query Results"): said plainly,
/// with how to get every row, instead of passing for the complete list.
fn mark_incomplete(
    relationship: &str,
    result: &mut Map<String, Value>,
    returned: usize,
    child_type: Option<&str>,
) {
    result.remove("nextRecordsUrl");
    let total = result.get("totalSize").and_then(Value::as_u64);
    let of_total = total.map(|t| format!(" of {t}")).unwrap_or_default();
    let object = child_type.unwrap_or("the child object");
    result.insert("incomplete".into(), Value::Bool(true));
    result.insert(
        "note".into(),
        Value::String(format!(
            "Only {returned}{of_total} {relationship} rows came back with this record. To get \
             them all, query {object} directly with crmb_run_soql_query, filtering on its lookup \
             to this record (crmb_get_object_fields with include_child_relationships names the \
             field)."
        )),
    );
}

fn url_for(
    fields: &Map<String, Value>,
    record_type: &str,
    instance: &InstanceUrl,
) -> Option<String> {
    // Aggregate rows (type AggregateResult) have no Id, so they get no URL.
    let id = SalesforceId::parse(fields.get("Id")?.as_str()?).ok()?;
    let object = ApiName::parse(record_type).ok()?;
    Some(instance.record_url(&object, &id).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parents_children_and_aggregates() {
        let instance = InstanceUrl::parse("https://acme.my.salesforce.com").unwrap();
        let mut record = json!({
            "attributes": {"type": "Opportunity", "url": "/services/data/v65.0/sobjects/Opportunity/006000000000001AAA"},
            "Id": "006000000000001AAA",
            "Name": "Big deal",
            "Account": {"attributes": {"type": "Account", "url": "/x"}, "Id": "001000000000001AAA", "Name": "Acme"},
            "Owner": null,
            "OpportunityContactRoles": {"totalSize": 1, "done": true, "records": [
                {"attributes": {"type": "OpportunityContactRole", "url": "/y"}, "Id": "00K000000000001EAA", "Role": "Buyer"}
            ]},
        });
        map_record(&mut record, Some(&instance)).unwrap();
        assert_eq!(
            record["record_url"],
            "https://acme.lightning.force.com/lightning/r/Opportunity/006000000000001AAA/view"
        );
        assert_eq!(
            record["Account"]["record_url"],
            "https://acme.lightning.force.com/lightning/r/Account/001000000000001AAA/view"
        );
        assert!(record["Account"].get("attributes").is_none());
        assert_eq!(record["Owner"], Value::Null);
        let child = &record["OpportunityContactRoles"]["records"][0];
        assert!(child.get("attributes").is_none());
        assert!(
            child["record_url"]
                .as_str()
                .unwrap()
                .contains("/OpportunityContactRole/00K000000000001EAA/")
        );

        let mut aggregate = json!({"attributes": {"type": "AggregateResult"}, "expr0": 42});
        map_record(&mut aggregate, Some(&instance)).unwrap();
        assert_eq!(aggregate, json!({"expr0": 42}));
    }

    /// A child subquery with more rows than fit in the parent's answer comes back with
    /// `done: false` and its own `nextRecordsUrl` (SOQL and SOSL Reference, "Understanding
    /// Query Results": "you might need to use queryMore() to retrieve all the records if there
    /// are many children").
    #[test]
    fn a_cut_child_subquery_is_marked_incomplete_with_how_to_get_the_rest() {
        let mut record = json!({
            "attributes": {"type": "Account", "url": "/services/data/v65.0/sobjects/Account/001000000000001AAA"},
            "Id": "001000000000001AAA",
            "Contacts": {"totalSize": 250, "done": false,
                         "nextRecordsUrl": "/services/data/v65.0/query/01gD0000002HU6KIAW-200",
                         "records": [{"attributes": {"type": "Contact", "url": "/c"}, "Id": "003000000000001AAA"}]},
            "Opportunities": {"totalSize": 1, "done": true,
                              "records": [{"attributes": {"type": "Opportunity", "url": "/o"}, "Id": "006000000000001AAA"}]}
        });
        map_record(&mut record, None).unwrap();
        let contacts = &record["Contacts"];
        assert_eq!(contacts["incomplete"], true);
        assert!(contacts.get("nextRecordsUrl").is_none());
        let note = contacts["note"].as_str().unwrap();
        assert!(
            note.contains("1 of 250") && note.contains("query Contact directly"),
            "{note}"
        );
        assert!(record["Opportunities"].get("incomplete").is_none());
    }

    #[test]
    fn without_an_instance_url_attributes_still_go() {
        let mut record = json!({"attributes": {"type": "Account"}, "Id": "001000000000001AAA"});
        map_record(&mut record, None).unwrap();
        assert_eq!(record, json!({"Id": "001000000000001AAA"}));
    }

    /// A parent inside a parent, `depth` records deep.
    fn nested(depth: usize) -> Value {
        let mut record = json!({"attributes": {"type": "Account"}, "Id": "001000000000001AAA"});
        for _ in 1..depth {
            // Built by hand: `json!` would serialize `record` again, recursively, at each level.
            let mut parent = Map::new();
            parent.insert("attributes".into(), json!({"type": "Account"}));
            parent.insert("Parent".into(), record);
            record = Value::Object(parent);
        }
        record
    }

    /// Drops a value without recursing: a 2,000-deep `Value` would overflow the test thread's
    /// stack in its own recursive `Drop`.
    fn dismantle(value: Value) {
        let mut stack = vec![value];
        while let Some(mut value) = stack.pop() {
            match &mut value {
                Value::Object(map) => stack.extend(std::mem::take(map).into_iter().map(|(_, v)| v)),
                Value::Array(items) => stack.append(items),
                _ => {}
            }
        }
    }

    #[test]
    fn a_two_thousand_deep_answer_is_a_typed_error_not_a_crash() {
        let mut record = nested(2_000);
        let err = map_record(&mut record, None).unwrap_err();
        dismantle(record);
        let ToolError::CrmError(problem) = err else {
            panic!("{err:?}");
        };
        assert_eq!(problem.codes, ["RESPONSE_TOO_DEEP"]);
        assert!(
            problem.messages[0].contains("more than 32 levels"),
            "{problem}"
        );
    }

    #[test]
    fn child_rows_count_towards_the_depth_too() {
        let mut record = json!({"attributes": {"type": "Account"}});
        for _ in 0..40 {
            let mut children = Map::new();
            children.insert("done".into(), Value::Bool(true));
            children.insert("records".into(), Value::Array(vec![record]));
            let mut parent = Map::new();
            parent.insert("attributes".into(), json!({"type": "Account"}));
            parent.insert("Children".into(), Value::Object(children));
            record = Value::Object(parent);
        }
        assert!(map_record(&mut record, None).is_err());
    }

    #[test]
    fn the_deepest_allowed_answer_is_mapped() {
        let mut record = nested(MAX_RECORD_DEPTH);
        map_record(&mut record, None).unwrap();
        let mut innermost = &record;
        while let Some(parent) = innermost.get("Parent") {
            assert!(innermost.get("attributes").is_none());
            innermost = parent;
        }
        assert_eq!(innermost, &json!({"Id": "001000000000001AAA"}));
    }
}
