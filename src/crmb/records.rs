//! Salesforce record JSON made ready for the assistant in one pass over Salesforce's text
//! ([`crate::raw_json`]): `attributes` removed, masked values replaced, a `record_url` added
//! wherever a record has an Id and a type, parents and child rows included, and every field
//! left where Salesforce put it, its value's text untouched.

use super::compound::{self, MASKED};
use super::ids::{ApiName, SalesforceId};
use super::record_url::InstanceUrl;
use crate::error::{Crm, CrmProblem, ToolError};
use crate::raw_json::{self, Member, Members, ObjectList, ObjectText, ObjectTexts, ObjectWriter};
use serde_json::Value;
use serde_json::value::RawValue;
use std::ops::Range;

/// Most records nested one inside another (parent lookups and child subquery rows alike) that
/// are mapped. Salesforce nests at most 5 levels of relationships and 5 of child subqueries, so
/// 32 is never reached by a real answer; the bound keeps the recursion from exhausting the
/// wasm stack on a hostile or broken one.
pub const MAX_RECORD_DEPTH: usize = 32;

/// Which link a record gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkStyle {
    /// The Lightning record page (`/lightning/r/{object}/{id}/view`): one record's answer.
    Lightning,
    /// `{instance}/{Id}`, which Salesforce redirects to the record: half the bytes, for the
    /// rows of a query, where a link per row is most of what a link costs.
    Short,
}

/// What mapping a record needs besides the record: the org and link style for links, and the
/// workspace's masked fields (by meaning: compounds included, see [`super::compound`]).
#[derive(Clone, Copy)]
pub struct Mapping<'a> {
    /// The org, for each record's `record_url`; no links when unknown.
    pub instance: Option<&'a InstanceUrl>,
    /// The workspace's masked fields, lower-cased.
    pub masked: &'a [String],
    /// Which link each record gets.
    pub links: LinkStyle,
}

/// Maps one record (and everything nested in it) from Salesforce's text; anything but an
/// object, or an answer nested deeper than [`MAX_RECORD_DEPTH`], is a `crm-error`.
pub(crate) fn map_record_text(
    record: &RawValue,
    mapping: &Mapping<'_>,
) -> Result<ObjectText, ToolError> {
    let members = Members::of(record).map_err(unreadable)?;
    write_object(
        &members.0,
        Pass {
            source: record.get(),
            mapping,
        },
        &mut Vec::new(),
    )
}

/// As [`map_record_text`] for each record of a page, in order, their members read with the
/// page itself ([`ObjectList`]) from `page`, the page's text.
pub(crate) fn map_records(
    records: &ObjectList<'_>,
    page: &str,
    mapping: &Mapping<'_>,
) -> Result<ObjectTexts, ToolError> {
    let pass = Pass {
        source: page,
        mapping,
    };
    // The answer is about the page's size: records lose `attributes` and gain a link.
    let mut mapped = ObjectTexts::with_capacity(page.len());
    let mut nested = Vec::new();
    for members in records.iter() {
        mapped.push_with(|out| write_record(members, pass, 1, out, &mut nested))?;
    }
    Ok(mapped)
}

/// The text a record's members were read from (runs of members are copied from it) and how to
/// map them.
#[derive(Clone, Copy)]
struct Pass<'p> {
    source: &'p str,
    mapping: &'p Mapping<'p>,
}

/// A top-level record's text.
/// `nested` is a buffer for the members of the objects inside it, kept from one record to the
/// next.
fn write_object<'a>(
    members: &[Member<'a>],
    pass: Pass<'_>,
    nested: &mut Vec<Member<'a>>,
) -> Result<ObjectText, ToolError> {
    let size: usize = members
        .iter()
        .map(|(k, v)| k.len() + v.get().len() + 4)
        .sum();
    let mut out = String::with_capacity(size + 64);
    write_record(members, pass, 1, &mut out, nested)?;
    ObjectText::new(out).map_err(unreadable)
}

/// As [`map_record_text`], for a record held as a `Value` (the fuzzer and property tests):
/// an object is replaced by its mapping, anything else is left as it is.
pub fn map_record(record: &mut Value, instance: Option<&InstanceUrl>) -> Result<(), ToolError> {
    if !record.is_object() {
        return Ok(());
    }
    let text = serde_json::value::to_raw_value(record).map_err(unreadable)?;
    let mapping = Mapping {
        instance,
        masked: &[],
        links: LinkStyle::Lightning,
    };
    let mapped = map_record_text(&text, &mapping)?;
    *record = serde_json::from_str(mapped.get()).map_err(unreadable)?;
    Ok(())
}

/// A record Salesforce sent that is not the JSON object it should be.
fn unreadable(err: serde_json::Error) -> ToolError {
    CrmProblem::unexpected_answer(
        Crm::Salesforce,
        200,
        format!("a record in the answer was not the expected JSON object: {err}"),
    )
    .into()
}

/// The record's type from its `attributes` (`{"type": "Account", "url": ...}`), when it is
/// a plain string; read without collecting the attributes' members.
fn record_type<'a>(members: &[Member<'a>]) -> Option<&'a str> {
    #[derive(serde::Deserialize)]
    struct Attributes<'a> {
        #[serde(rename = "type", borrow)]
        record_type: Option<&'a str>,
    }
    let attributes = raw_json::member(members, "attributes")?.get();
    // As Salesforce writes them, `type` comes first: read in place, without a parser.
    if let Some(rest) = attributes.strip_prefix(r#"{"type":""#)
        && let Some(end) = rest.find(['"', '\\'])
        && rest.as_bytes()[end] == b'"'
    {
        return Some(&rest[..end]);
    }
    serde_json::from_str::<Attributes<'a>>(attributes)
        .ok()?
        .record_type
}

/// Writes one record. Members the mapping leaves as they are (nearly all of them) are copied
/// from the pass's source a run at a time rather than name by name and value by value.
fn write_record<'a>(
    members: &[Member<'a>],
    pass: Pass<'_>,
    depth: usize,
    out: &mut String,
    nested: &mut Vec<Member<'a>>,
) -> Result<(), ToolError> {
    if depth > MAX_RECORD_DEPTH {
        return Err(too_deep());
    }
    let record_type = record_type(members);
    // Masked before anything is read from it: a compound's value is replaced whole.
    let person = !pass.mapping.masked.is_empty()
        && compound::has_person_name(record_type, members.iter().map(|(k, _)| k.as_ref()));
    let mut id = None;
    let mut object = ObjectWriter::open(out);
    let mut run: Option<Range<usize>> = None;
    for member in members {
        let (key, value) = member;
        let name = key.as_ref();
        match name {
            "attributes" => {
                copy_run(&mut object, pass.source, run.take());
                continue;
            }
            "Id" => id = raw_json::plain_str(value),
            _ => {}
        }
        let masked = !pass.mapping.masked.is_empty()
            && !raw_json::is_null(value)
            && compound::shows_masked(name, person, pass.mapping.masked).is_some();
        let object_valued = !masked && raw_json::is_object(value);
        if !masked
            && !object_valued
            && let Some(span) = raw_json::span_of(pass.source, member)
        {
            run = Some(match run {
                Some(r) if raw_json::joins(&r, &span) => r.start..span.end,
                earlier => {
                    copy_run(&mut object, pass.source, earlier);
                    span
                }
            });
            continue;
        }
        copy_run(&mut object, pass.source, run.take());
        if masked {
            object.string(name, MASKED);
        } else if object_valued {
            let out = object.read_key(key);
            write_nested(name, value, pass, depth, out, nested)?;
        } else {
            object.read_key(key).push_str(value.get());
        }
    }
    copy_run(&mut object, pass.source, run);
    if let (Some(instance), Some(record_type), Some(id)) = (pass.mapping.instance, record_type, id)
    {
        write_link(&mut object, id, record_type, instance, pass.mapping.links);
    }
    object.close();
    Ok(())
}

/// Copies a run of members left as they are ([`raw_json::span_of`]) from `source`. A run
/// starts at a name's opening quote and ends where a value's text does, both within `source`,
/// so it is whole characters.
fn copy_run(object: &mut ObjectWriter<'_>, source: &str, run: Option<Range<usize>>) {
    if let Some(run) = run {
        object.members_text(&source[run]);
    }
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

/// An object-valued field: a parent record (it has attributes), a child query result
/// (`{totalSize, done, records}`), or any other object (a compound address), copied as it is.
fn write_nested<'a>(
    name: &str,
    value: &'a RawValue,
    pass: Pass<'_>,
    depth: usize,
    out: &mut String,
    buffer: &mut Vec<Member<'a>>,
) -> Result<(), ToolError> {
    // This object's members go in `buffer`, and the objects inside it get a buffer of their
    // own; `buffer` keeps its allocation for the next record's.
    let mut inner = std::mem::take(buffer);
    let written = match Members::read_into(value, &mut inner) {
        Ok(()) => write_nested_members(name, value, &inner, pass, depth, out, buffer),
        Err(err) => Err(unreadable(err)),
    };
    *buffer = inner;
    written
}

/// As [`write_nested`], its members read.
fn write_nested_members<'a>(
    name: &str,
    value: &'a RawValue,
    inner: &[Member<'a>],
    pass: Pass<'_>,
    depth: usize,
    out: &mut String,
    nested: &mut Vec<Member<'a>>,
) -> Result<(), ToolError> {
    if raw_json::member(inner, "attributes").is_some() {
        return write_record(inner, pass, depth + 1, out, nested);
    }
    let Some(rows) = raw_json::member(inner, "records") else {
        out.push_str(value.get());
        return Ok(());
    };
    let Ok(rows) = serde_json::from_str::<Vec<&RawValue>>(rows.get()) else {
        out.push_str(value.get());
        return Ok(());
    };
    let mut child_type = None;
    let cut = raw_json::member(inner, "done").is_some_and(|d| d.get().trim() == "false");
    let mut result = ObjectWriter::open(out);
    for (key, field) in inner {
        match key.as_ref() {
            "records" => {
                let list = result.key("records");
                list.push('[');
                for (i, row) in rows.iter().enumerate() {
                    if i > 0 {
                        list.push(',');
                    }
                    match Members::of(row) {
                        Ok(members) => {
                            if i == 0 {
                                child_type = record_type(&members.0);
                            }
                            write_record(&members.0, pass, depth + 1, list, nested)?;
                        }
                        Err(_) => list.push_str(row.get()),
                    }
                }
                list.push(']');
            }
            "nextRecordsUrl" if cut => {}
            key => result.raw(key, field.get()),
        }
    }
    if cut {
        let total =
            raw_json::member(inner, "totalSize").and_then(|t| t.get().trim().parse::<u64>().ok());
        result.raw("incomplete", "true");
        result.string(
            "note",
            &incomplete_note(name, rows.len(), total, child_type),
        );
    }
    result.close();
    Ok(())
}

/// A child subquery Salesforce cut short (`done: false`, the rest behind its own
/// `nextRecordsUrl`; SOQL and SOSL Reference, "Understanding Query Results"): said plainly,
/// with how to get every row, instead of passing for the complete list.
fn incomplete_note(
    relationship: &str,
    returned: usize,
    total: Option<u64>,
    child_type: Option<&str>,
) -> String {
    let of_total = total.map(|t| format!(" of {t}")).unwrap_or_default();
    let object = child_type.unwrap_or("the child object");
    format!(
        "Only {returned}{of_total} {relationship} rows came back with this record. To get \
         them all, query {object} directly with crmb_run_soql_query, filtering on its lookup \
         to this record (crmb_get_object_fields with include_child_relationships names the \
         field)."
    )
}

/// The record's `record_url` member, when its id is an id (aggregate rows have none).
fn write_link(
    object: &mut ObjectWriter<'_>,
    id: &str,
    record_type: &str,
    instance: &InstanceUrl,
    links: LinkStyle,
) {
    if links == LinkStyle::Short
        && let Some(id) = SalesforceId::canonical(id)
    {
        // The way nearly every row goes: an id as Salesforce writes it, linked in place. A
        // serialised URL holds no quote, backslash or control character (the URL Standard
        // percent-encodes them), and an id is letters and digits, so nothing needs escaping.
        let out = object.key("record_url");
        out.push('"');
        instance.push_short_record_url(id, out);
        out.push('"');
    } else if let Some(url) = url_for(id, record_type, instance, links) {
        object.string("record_url", &url);
    }
}

fn url_for(
    id: &str,
    record_type: &str,
    instance: &InstanceUrl,
    links: LinkStyle,
) -> Option<String> {
    // Aggregate rows (type AggregateResult) have no Id, so they get no URL.
    let id = SalesforceId::parse(id).ok()?;
    Some(match links {
        LinkStyle::Lightning => {
            let object = ApiName::parse(record_type).ok()?;
            instance.record_url(&object, &id).to_string()
        }
        // The type is not part of the link; a row without one still gets none (above).
        LinkStyle::Short => instance.short_record_url(&id),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, json};

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

    /// A query row as Salesforce sends it ("Execute a SOQL Query", REST API Developer Guide):
    /// `attributes` first, then the fields in the order the query selected them.
    #[test]
    fn fields_keep_salesforces_order_and_their_text() {
        let instance = InstanceUrl::parse("https://acme.my.salesforce.com").unwrap();
        let row: Box<RawValue> = serde_json::from_str(
            r#"{"attributes":{"type":"Opportunity","url":"/services/data/v65.0/sobjects/Opportunity/006000000000001AAA"},"Name":"Big deal","Amount":1250.50,"Id":"006000000000001AAA","CloseDate":"2026-12-01","Account":{"attributes":{"type":"Account","url":"/a"},"Name":"Acme","Id":"001000000000001AAA"},"Description":null}"#,
        )
        .unwrap();
        let mapping = Mapping {
            instance: Some(&instance),
            masked: &[],
            links: LinkStyle::Short,
        };
        let mapped = map_record_text(&row, &mapping).unwrap();
        assert_eq!(
            mapped.get(),
            r#"{"Name":"Big deal","Amount":1250.50,"Id":"006000000000001AAA","CloseDate":"2026-12-01","Account":{"Name":"Acme","Id":"001000000000001AAA","record_url":"https://acme.my.salesforce.com/001000000000001AAA"},"Description":null,"record_url":"https://acme.my.salesforce.com/006000000000001AAA"}"#
        );
    }

    /// Runs of members left as they are are copied from Salesforce's text in one piece: a run
    /// stops at whatever the mapping changes (attributes, a masked value, a parent record, a
    /// name with escapes) and starts again after it. Spaces and line breaks between members
    /// are not copied: the answer stays compact whatever the CRM sent.
    #[test]
    fn runs_of_unchanged_members_are_copied_whole_and_stop_where_the_mapping_acts() {
        let instance = InstanceUrl::parse("https://acme.my.salesforce.com").unwrap();
        let text = "{\"Name\" : \"Ada\",\n \"Amount\":1.50, \"attributes\":{\"type\":\"Contact\"},\
                    \"Id\":\"003000000000001AAA\",\"Phone\":\"555\",\"Ti\\u0074le\":\"CEO\",\
                    \"Email\":\"ada@example.com\",\"Account\":{\"attributes\":{\"type\":\"Account\"},\
                    \"Name\":\"Acme\"},\"Fax\":null}";
        let row: Box<RawValue> = serde_json::from_str(text).unwrap();
        let masked = ["phone".to_string()];
        let mapping = Mapping {
            instance: Some(&instance),
            masked: &masked,
            links: LinkStyle::Short,
        };
        assert_eq!(
            map_record_text(&row, &mapping).unwrap().get(),
            "{\"Name\":\"Ada\",\"Amount\":1.50,\"Id\":\"003000000000001AAA\",\
             \"Phone\":\"[masked by workspace policy]\",\"Title\":\"CEO\",\
             \"Email\":\"ada@example.com\",\"Account\":{\"Name\":\"Acme\"},\"Fax\":null,\
             \"record_url\":\"https://acme.my.salesforce.com/003000000000001AAA\"}"
        );
    }

    #[test]
    fn masked_values_are_replaced_where_they_stand() {
        let row: Box<RawValue> = serde_json::from_str(
            r#"{"attributes":{"type":"Contact"},"LastName":"Lovelace","Email":"ada@example.com","Name":"Ada Lovelace","Phone":null}"#,
        )
        .unwrap();
        let masked = ["lastname".to_string(), "phone".to_string()];
        let mapping = Mapping {
            instance: None,
            masked: &masked,
            links: LinkStyle::Short,
        };
        assert_eq!(
            map_record_text(&row, &mapping).unwrap().get(),
            r#"{"LastName":"[masked by workspace policy]","Email":"ada@example.com","Name":"[masked by workspace policy]","Phone":null}"#,
            "a masked part masks its compound Name; an empty value stays empty"
        );
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
