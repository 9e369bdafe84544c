//! The sandbox's Salesforce: records, describe, a small SOQL evaluator with Salesforce's paging,
//! creates and updates, all answered in Salesforce's own JSON shapes.
//!
//! The SOQL subset is what demo questions need: `SELECT fields (incl. Parent.Field) FROM Object
//! [WHERE field op value {AND|OR ...}] [ORDER BY field [ASC|DESC]] [LIMIT n]`, `COUNT()`, with
//! `= != < <= > >= LIKE IN` and the date literals TODAY, THIS_MONTH, NEXT_MONTH, LAST_MONTH,
//! THIS_YEAR, evaluated against the sandbox's fixed today, [`TODAY`].

mod describe;
mod soql;
mod versions;

use soql::{Select, compare};
pub use versions::{serves, versions};

use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};

/// The sandbox's "today", so date literals give stable answers.
pub const TODAY: (i32, u32, u32) = (2026, 11, 21);

/// Page size when the caller sets none (Salesforce's default batch).
const DEFAULT_BATCH: usize = 2000;

/// Fields Salesforce sets itself.
const NOT_CREATEABLE: &[&str] = &[
    "Id",
    "CreatedDate",
    "IsClosed",
    "IsWon",
    "CaseNumber",
    "IsConverted",
];

/// Fields a create must give, per object.
const REQUIRED: &[(&str, &[&str])] = &[
    ("Account", &["Name"]),
    ("Contact", &["LastName"]),
    ("Lead", &["LastName", "Company"]),
    ("Opportunity", &["Name", "StageName", "CloseDate"]),
    ("Task", &["Subject"]),
    ("Event", &["Subject", "StartDateTime", "EndDateTime"]),
    ("Case", &["Subject"]),
];

/// Key prefixes for new ids.
const KEY_PREFIXES: &[(&str, &str)] = &[
    ("Account", "001"),
    ("Contact", "003"),
    ("Opportunity", "006"),
    ("Lead", "00Q"),
    ("Case", "500"),
    ("Task", "00T"),
    ("Event", "00U"),
    ("User", "005"),
];

/// One tenant's Salesforce data; creates and updates change it for later reads.
pub struct SalesforceData {
    objects: BTreeMap<String, Vec<Value>>,
    /// Result snapshots of queries with more pages, by locator.
    locators: HashMap<String, Vec<Value>>,
    counter: u64,
    batch: usize,
}

type Answer = (u16, Value);

fn error(status: u16, code: &str, message: &str) -> Answer {
    (status, json!([{"message": message, "errorCode": code}]))
}

fn not_found() -> Answer {
    error(404, "NOT_FOUND", "The requested resource does not exist")
}

impl SalesforceData {
    /// From the `salesforce` object of a dataset file.
    pub fn from_json(value: &Value) -> Self {
        let objects = value
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, rows)| (name.clone(), rows.as_array().cloned().unwrap_or_default()))
            .collect();
        SalesforceData {
            objects,
            locators: HashMap::new(),
            counter: 0,
            batch: DEFAULT_BATCH,
        }
    }

    /// Rows per query page (Salesforce's batch size); tests use small pages.
    pub fn set_batch_size(&mut self, rows: usize) {
        self.batch = rows.max(1);
    }

    /// Answers one request; `path` is what follows `/services/data/{version}/`.
    pub fn answer(
        &mut self,
        method: &str,
        version: &str,
        path: &[&str],
        query: Option<&str>,
        body: &[u8],
    ) -> Answer {
        match (method, path) {
            ("DELETE", _) => error(
                405,
                "METHOD_NOT_ALLOWED",
                "HTTP Method 'DELETE' not allowed: the sandbox never deletes",
            ),
            // queryAll answers archived and deleted rows too; the sandbox has neither.
            ("GET", ["query" | "queryAll"]) => match param(query, "q") {
                Some(soql) => self.query(version, &soql),
                None => error(400, "MALFORMED_QUERY", "the q parameter is missing"),
            },
            ("GET", ["query", locator]) => self.next_page(version, locator),
            ("GET", ["sobjects", object, "describe"]) => self.describe(object),
            ("GET", ["sobjects", object, id]) => {
                self.get(version, object, id, param(query, "fields").as_deref())
            }
            ("POST", ["sobjects", object]) => self.create(object, body),
            ("PATCH", ["sobjects", object, id]) => self.update(object, id, body),
            _ => not_found(),
        }
    }

    fn rows(&self, object: &str) -> Option<&Vec<Value>> {
        self.objects.get(object)
    }

    fn find(&self, object: &str, id: &str) -> Option<&Value> {
        let short = id.get(..15)?;
        self.rows(object)?
            .iter()
            .find(|r| r["Id"].as_str().and_then(|i| i.get(..15)) == Some(short))
    }

    /// Every field name the object's rows use, plus the standard ones and the audit fields
    /// every object has ("System Fields", Object Reference for the Salesforce Platform).
    fn field_names(&self, object: &str) -> Vec<String> {
        let mut names: Vec<String> = [
            "Id",
            "IsDeleted",
            "IsArchived",
            "CreatedById",
            "CreatedDate",
            "LastModifiedById",
            "LastModifiedDate",
            "SystemModstamp",
        ]
        .map(String::from)
        .to_vec();
        for row in self.rows(object).into_iter().flatten() {
            for key in row.as_object().into_iter().flatten().map(|(k, _)| k) {
                if key != "attributes" && !names.contains(key) {
                    names.push(key.clone());
                }
            }
        }
        for (name, required) in REQUIRED {
            if *name == object {
                names.extend(
                    required
                        .iter()
                        .filter(|f| !names.iter().any(|n| n == *f))
                        .map(|f| f.to_string())
                        .collect::<Vec<_>>(),
                );
            }
        }
        names
    }

    fn has_field(&self, object: &str, field: &str) -> bool {
        self.field_names(object)
            .iter()
            .any(|f| f.eq_ignore_ascii_case(field))
    }

    fn get(&self, version: &str, object: &str, id: &str, fields: Option<&str>) -> Answer {
        let Some(row) = self.find(object, id) else {
            return not_found();
        };
        let wanted: Option<Vec<&str>> = fields.map(|f| f.split(',').map(str::trim).collect());
        if let Some(bad) = wanted.iter().flatten().find(|f| !self.has_field(object, f)) {
            return invalid_field(bad, object);
        }
        let mut out = Map::new();
        out.insert("attributes".into(), attributes(version, object, row));
        for (key, value) in row.as_object().into_iter().flatten() {
            let keep = wanted
                .as_ref()
                .is_none_or(|w| key == "Id" || w.iter().any(|f| f.eq_ignore_ascii_case(key)));
            if key != "attributes" && keep {
                out.insert(key.clone(), value.clone());
            }
        }
        (200, Value::Object(out))
    }

    fn create(&mut self, object: &str, body: &[u8]) -> Answer {
        let Some(prefix) = KEY_PREFIXES
            .iter()
            .find(|(o, _)| *o == object)
            .map(|(_, p)| *p)
        else {
            return error(
                404,
                "NOT_FOUND",
                &format!("The requested resource does not exist: sObject type '{object}'"),
            );
        };
        let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(body) else {
            return error(400, "JSON_PARSER_ERROR", "the body is not a JSON object");
        };
        if let Some(answer) = self.check_fields(object, &fields) {
            return answer;
        }
        let required: &[&str] = REQUIRED
            .iter()
            .find(|(o, _)| *o == object)
            .map(|(_, r)| *r)
            .unwrap_or(&[]);
        let missing: Vec<&str> = required
            .iter()
            .copied()
            .filter(|f| fields.get(*f).is_none_or(Value::is_null))
            .collect();
        if !missing.is_empty() {
            return (
                400,
                json!([{"message": format!("Required fields are missing: [{}]", missing.join(", ")), "errorCode": "REQUIRED_FIELD_MISSING", "fields": missing}]),
            );
        }
        self.counter += 1;
        let org = self.org_part();
        let id = with_checksum(&format!(
            "{prefix}{org}{:0>width$}",
            self.counter + 900,
            width = 15 - 3 - org.len()
        ));
        let mut row = fields;
        row.insert("attributes".into(), json!({"type": object}));
        row.insert("Id".into(), id.clone().into());
        // Salesforce writes datetimes with a +0000 offset.
        let created = crm_plugin::time::iso_utc(crate::now_millis()).replace('Z', "+0000");
        row.insert("CreatedDate".into(), created.into());
        self.objects
            .entry(object.to_string())
            .or_default()
            .push(Value::Object(row));
        (201, json!({"id": id, "success": true, "errors": []}))
    }

    fn update(&mut self, object: &str, id: &str, body: &[u8]) -> Answer {
        let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(body) else {
            return error(400, "JSON_PARSER_ERROR", "the body is not a JSON object");
        };
        if self.find(object, id).is_none() {
            return not_found();
        }
        if let Some(answer) = self.check_fields(object, &fields) {
            return answer;
        }
        let short = id.get(..15).unwrap_or(id).to_string();
        let row = self
            .objects
            .get_mut(object)
            .and_then(|rows| {
                rows.iter_mut()
                    .find(|r| r["Id"].as_str().and_then(|i| i.get(..15)) == Some(short.as_str()))
            })
            .and_then(Value::as_object_mut)
            .expect("found above");
        row.extend(fields);
        (204, Value::Null)
    }

    /// Unknown or system fields in a write.
    fn check_fields(&self, object: &str, fields: &Map<String, Value>) -> Option<Answer> {
        if let Some(bad) = fields
            .keys()
            .find(|k| NOT_CREATEABLE.iter().any(|n| n.eq_ignore_ascii_case(k)))
        {
            return Some((
                400,
                json!([{"message": format!("Unable to create/update fields: {bad}. Please check the security settings of this field and verify that it is read/write for your profile or permission set."), "errorCode": "INVALID_FIELD_FOR_INSERT_UPDATE", "fields": [bad]}]),
            ));
        }
        fields
            .keys()
            .find(|k| !self.has_field(object, k))
            .map(|bad| invalid_field(bad, object))
    }

    /// The org part of this tenant's ids (characters 4 to 7 of any id).
    fn org_part(&self) -> String {
        self.objects
            .values()
            .flatten()
            .find_map(|r| {
                r["Id"]
                    .as_str()
                    .and_then(|i| i.get(3..7))
                    .map(str::to_string)
            })
            .unwrap_or_else(|| "0000".into())
    }

    fn query(&mut self, version: &str, soql: &str) -> Answer {
        let parsed = match Select::parse(soql) {
            Ok(parsed) => parsed,
            Err(why) => return error(400, "MALFORMED_QUERY", &why),
        };
        let Some(rows) = self.rows(&parsed.object) else {
            return error(
                400,
                "INVALID_TYPE",
                &format!("sObject type '{}' is not supported.", parsed.object),
            );
        };
        for field in parsed
            .fields
            .iter()
            .chain(parsed.conditions.iter().flatten().map(|c| &c.field))
        {
            let root = field.split('.').next().unwrap_or(field);
            let known = if field.contains('.') {
                self.has_field(&parsed.object, &format!("{root}Id"))
            } else {
                self.has_field(&parsed.object, field)
            };
            if !known {
                return invalid_field(field, &parsed.object);
            }
        }
        let mut matched: Vec<&Value> = rows.iter().filter(|r| parsed.matches(r)).collect();
        if let Some((field, descending)) = &parsed.order_by {
            matched.sort_by(|a, b| compare(&a[field.as_str()], &b[field.as_str()]));
            if *descending {
                matched.reverse();
            }
        }
        if let Some(limit) = parsed.limit {
            matched.truncate(limit);
        }
        if parsed.count_only {
            return (
                200,
                json!({"totalSize": matched.len(), "done": true, "records": []}),
            );
        }
        let records: Vec<Value> = matched
            .iter()
            .map(|row| self.project(version, &parsed, row))
            .collect();
        self.page(version, records, 0, None)
    }

    /// The rows of a result from `offset`, with a `nextRecordsUrl` when more remain.
    fn page(
        &mut self,
        version: &str,
        records: Vec<Value>,
        offset: usize,
        locator: Option<String>,
    ) -> Answer {
        let total = records.len();
        let end = (offset + self.batch).min(total);
        let page: Vec<Value> = records[offset.min(total)..end].to_vec();
        let mut answer = json!({"totalSize": total, "done": end >= total, "records": page});
        if end < total {
            let locator = locator.unwrap_or_else(|| {
                self.counter += 1;
                format!("01gSANDBOX{:08}", self.counter)
            });
            answer["nextRecordsUrl"] =
                format!("/services/data/{version}/query/{locator}-{end}").into();
            self.locators.insert(locator, records);
        }
        (200, answer)
    }

    fn next_page(&mut self, version: &str, segment: &str) -> Answer {
        let parsed = segment
            .split_once('-')
            .and_then(|(l, o)| Some((l.to_string(), o.parse::<usize>().ok()?)));
        match parsed.and_then(|(locator, offset)| {
            Some((self.locators.get(&locator)?.clone(), locator, offset))
        }) {
            Some((records, locator, offset)) => self.page(version, records, offset, Some(locator)),
            None => error(400, "INVALID_QUERY_LOCATOR", "invalid query locator"),
        }
    }

    /// One result row: attributes, the selected fields, and parents as nested records.
    fn project(&self, version: &str, select: &Select, row: &Value) -> Value {
        let mut out = Map::new();
        out.insert(
            "attributes".into(),
            attributes(version, &select.object, row),
        );
        for field in &select.fields {
            match field.split_once('.') {
                Some((relation, parent_field)) => {
                    let parent_object = if relation == "Owner" {
                        "User"
                    } else {
                        relation
                    };
                    let parent = row[format!("{relation}Id").as_str()]
                        .as_str()
                        .and_then(|id| self.find(parent_object, id));
                    let entry = out.entry(relation.to_string()).or_insert(Value::Null);
                    if let Some(parent) = parent {
                        if entry.is_null() {
                            *entry =
                                json!({"attributes": attributes(version, parent_object, parent)});
                        }
                        entry[parent_field] = parent[parent_field].clone();
                    }
                }
                None => {
                    let key = row
                        .as_object()
                        .and_then(|o| o.keys().find(|k| k.eq_ignore_ascii_case(field)).cloned())
                        .unwrap_or(field.clone());
                    out.insert(key.clone(), row[key.as_str()].clone());
                }
            }
        }
        Value::Object(out)
    }
}

fn invalid_field(field: &str, object: &str) -> Answer {
    error(
        400,
        "INVALID_FIELD",
        &format!(
            "No such column '{field}' on entity '{object}'. If you are attempting to use a custom field, be sure to append the '__c' after the custom field name."
        ),
    )
}

fn attributes(version: &str, object: &str, row: &Value) -> Value {
    let id = row["Id"].as_str().unwrap_or_default();
    json!({"type": object, "url": format!("/services/data/{version}/sobjects/{object}/{id}")})
}

fn param(query: Option<&str>, name: &str) -> Option<String> {
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// Appends Salesforce's 3-character checksum to a 15-character id.
fn with_checksum(body: &str) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ012345";
    let suffix: String = body
        .as_bytes()
        .chunks(5)
        .map(|c| {
            ALPHABET[c
                .iter()
                .enumerate()
                .filter(|(_, b)| b.is_ascii_uppercase())
                .fold(0, |a, (i, _)| a | (1 << i))] as char
        })
        .collect();
    format!("{body}{suffix}")
}

#[cfg(test)]
mod tests;
