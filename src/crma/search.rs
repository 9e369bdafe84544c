//! HubSpot CRM search: typed filters checked against HubSpot's documented limits before
//! sending, the request body as HubSpot wants it, and the typed answer mapped for the
//! assistant.

use super::metadata::account::RecordLinks;
use super::tools::is_cursor;
use super::types::{ObjectType, PropertyName};
use super::wire::{Page, RecordObject};
use crate::error::ToolError;
use crate::raw_json::ObjectText;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::collections::BTreeSet;

// HubSpot's documented search limits.

/// Most filter groups in one search.
pub const MAX_FILTER_GROUPS: usize = 5;
/// Most filters in one group.
pub const MAX_FILTERS_PER_GROUP: usize = 6;
/// Most filters in one search, all groups together.
pub const MAX_FILTERS: usize = 18;
/// Largest page size (`limit`).
pub const MAX_LIMIT: u32 = 200;
/// Longest free-text `query`, in characters.
pub const MAX_QUERY_CHARS: usize = 3000;
/// HubSpot applies one sort rule per search.
pub const MAX_SORTS: usize = 1;
/// Results past this many cannot be paged to.
pub const MAX_REACHABLE: u64 = 10_000;

/// Filter operators HubSpot's search accepts.
// The variants have no doc comments: schemars would make each a schema description and turn
// the schema's plain `enum` of names into a `oneOf`. `Filter`'s value fields say which
// operators use them. Docs on the other search input types are kept out of the schema with
// `description = ""`, so the input schema stays as the model knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[allow(missing_docs, reason = "variant docs would change the input schema")]
pub enum Operator {
    Eq,
    Neq,
    Lt,
    Lte,
    Gt,
    Gte,
    Between,
    In,
    NotIn,
    HasProperty,
    NotHasProperty,
    ContainsToken,
    NotContainsToken,
}

impl Operator {
    fn wire(self) -> &'static str {
        match self {
            Operator::Eq => "EQ",
            Operator::Neq => "NEQ",
            Operator::Lt => "LT",
            Operator::Lte => "LTE",
            Operator::Gt => "GT",
            Operator::Gte => "GTE",
            Operator::Between => "BETWEEN",
            Operator::In => "IN",
            Operator::NotIn => "NOT_IN",
            Operator::HasProperty => "HAS_PROPERTY",
            Operator::NotHasProperty => "NOT_HAS_PROPERTY",
            Operator::ContainsToken => "CONTAINS_TOKEN",
            Operator::NotContainsToken => "NOT_CONTAINS_TOKEN",
        }
    }
}

/// One filter. Which value fields it needs depends on the operator.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    /// Property internal name, e.g. "dealstage", "createdate", "email".
    pub property: PropertyName,
    /// How the property is compared; decides which of the value fields are needed.
    #[schemars(description = "")]
    pub operator: Operator,
    /// For EQ, NEQ, LT, LTE, GT, GTE, CONTAINS_TOKEN, NOT_CONTAINS_TOKEN, and the low end of
    /// BETWEEN. Dates as ISO 8601 or epoch milliseconds.
    #[serde(default)]
    pub value: Option<Value>,
    /// For IN and NOT_IN.
    #[serde(default)]
    pub values: Option<Vec<Value>>,
    /// The high end of BETWEEN.
    #[serde(default)]
    pub high_value: Option<Value>,
}

/// Filters ANDed together; groups are ORed.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FilterGroup {
    /// The group's filters, 1 to [`MAX_FILTERS_PER_GROUP`].
    #[schemars(description = "")]
    pub filters: Vec<Filter>,
}

/// A sort order, written `ASCENDING` or `DESCENDING`.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[schemars(description = "")]
#[allow(missing_docs, reason = "variant docs would change the input schema")]
pub enum Direction {
    Ascending,
    Descending,
}

/// One sort rule: HubSpot takes at most [`MAX_SORTS`] per search.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(description = "")]
pub struct Sort {
    /// The property to sort by.
    #[schemars(description = "")]
    pub property: PropertyName,
    /// Which way to sort.
    #[schemars(description = "")]
    pub direction: Direction,
}

/// A search, validated.
#[derive(Debug, Clone)]
pub struct Search {
    /// The object type searched; the path segment of the search endpoint.
    pub object_type: ObjectType,
    /// Filter groups, ORed together; empty for no filter.
    pub filter_groups: Vec<FilterGroup>,
    /// Sort rules, at most [`MAX_SORTS`].
    pub sorts: Vec<Sort>,
    /// Free text HubSpot searches in the type's default text properties.
    pub query: Option<String>,
    /// Properties to return; empty leaves HubSpot's default set.
    pub properties: Vec<PropertyName>,
    /// Page size asked for, 1 to [`MAX_LIMIT`] (shortened near [`MAX_REACHABLE`]).
    pub limit: u32,
    /// HubSpot's paging token; for search it is the offset of the next result.
    pub after: Option<String>,
    /// Properties known to be strings, whose `IN` / `NOT_IN` values HubSpot wants lower-case.
    pub string_properties: BTreeSet<String>,
}

/// A filter value on the wire: HubSpot takes strings.
fn wire_value(value: &Value, what: &str) -> Result<String, ToolError> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err(ToolError::invalid(format!(
            "{what} must be a string, number or boolean"
        ))),
    }
}

impl Search {
    /// Checks HubSpot's limits and each filter's shape; nothing is sent when this fails.
    pub fn validate(&self) -> Result<(), ToolError> {
        let groups = self.filter_groups.len();
        if groups > MAX_FILTER_GROUPS {
            return Err(ToolError::invalid(format!(
                "{groups} filter groups: HubSpot allows at most {MAX_FILTER_GROUPS}"
            )));
        }
        let mut total = 0;
        for (g, group) in self.filter_groups.iter().enumerate() {
            if group.filters.is_empty() {
                return Err(ToolError::invalid(format!(
                    "filter group {} is empty",
                    g + 1
                )));
            }
            if group.filters.len() > MAX_FILTERS_PER_GROUP {
                return Err(ToolError::invalid(format!(
                    "filter group {} has {} filters: HubSpot allows at most {MAX_FILTERS_PER_GROUP} per group",
                    g + 1,
                    group.filters.len()
                )));
            }
            total += group.filters.len();
            for filter in &group.filters {
                filter_body(filter, false)?;
            }
        }
        if total > MAX_FILTERS {
            return Err(ToolError::invalid(format!(
                "{total} filters in all: HubSpot allows at most {MAX_FILTERS}"
            )));
        }
        if self.sorts.len() > MAX_SORTS {
            return Err(ToolError::invalid(
                "HubSpot search takes one sort rule; give at most one entry in sorts",
            ));
        }
        if !(1..=MAX_LIMIT).contains(&self.limit) {
            return Err(ToolError::invalid(format!(
                "limit must be from 1 to {MAX_LIMIT}"
            )));
        }
        if let Some(query) = &self.query
            && query.chars().count() > MAX_QUERY_CHARS
        {
            return Err(ToolError::invalid(format!(
                "query is over {MAX_QUERY_CHARS} characters"
            )));
        }
        if self.offset().is_some_and(|a| a >= MAX_REACHABLE) {
            return Err(ToolError::invalid(format!(
                "HubSpot search cannot page past {MAX_REACHABLE} results: narrow the filters (for example by date windows)"
            )));
        }
        Ok(())
    }

    /// The result offset the cursor stands for, when it is a number (as search's are).
    fn offset(&self) -> Option<u64> {
        self.after.as_deref().and_then(|a| a.parse().ok())
    }

    /// The page size actually asked for: HubSpot answers 400 when `after + limit` crosses
    /// 10,000, so the last reachable page is shortened to end exactly there.
    pub fn page_limit(&self) -> u32 {
        match self.offset() {
            Some(offset) => {
                let left = MAX_REACHABLE.saturating_sub(offset);
                self.limit.min(u32::try_from(left).unwrap_or(u32::MAX))
            }
            None => self.limit,
        }
    }

    /// The request body, as HubSpot documents it.
    pub fn body(&self) -> Result<Value, ToolError> {
        self.validate()?;
        let groups: Vec<Value> = self
            .filter_groups
            .iter()
            .map(|g| {
                g.filters
                    .iter()
                    .map(|f| filter_body(f, self.string_properties.contains(f.property.as_str())))
                    .collect::<Result<Vec<_>, _>>()
                    .map(|f| json!({"filters": f}))
            })
            .collect::<Result<_, _>>()?;
        let sorts: Vec<Value> = self
            .sorts
            .iter()
            .map(|s| {
                json!({"propertyName": s.property.as_str(), "direction": match s.direction {
                    Direction::Ascending => "ASCENDING",
                    Direction::Descending => "DESCENDING",
                }})
            })
            .collect();
        let mut body = json!({
            "filterGroups": groups,
            "sorts": sorts,
            "properties": self.properties.iter().map(PropertyName::as_str).collect::<Vec<_>>(),
            "limit": self.page_limit(),
        });
        if let Some(query) = &self.query {
            body["query"] = query.clone().into();
        }
        if let Some(after) = &self.after {
            body["after"] = after.clone().into();
        }
        Ok(body)
    }
}

/// True for an `IN` / `NOT_IN` filter with a capital in its values: whether to lower-case
/// them depends on the property's type.
pub fn lowercases(filter: &Filter) -> bool {
    matches!(filter.operator, Operator::In | Operator::NotIn)
        && filter.values.iter().flatten().any(|v| {
            v.as_str()
                .is_some_and(|s| s.chars().any(char::is_uppercase))
        })
}

/// One filter on the wire, checking that the operator has the values it needs. `string` says
/// the property is a string, whose `IN` / `NOT_IN` values HubSpot matches in lower case only.
fn filter_body(filter: &Filter, string: bool) -> Result<Value, ToolError> {
    let name = filter.property.as_str();
    let mut out = json!({"propertyName": name, "operator": filter.operator.wire()});
    let need = |field: &str| {
        ToolError::invalid(format!(
            "filter on {name}: {} needs {field}",
            filter.operator.wire()
        ))
    };
    match filter.operator {
        Operator::HasProperty | Operator::NotHasProperty => {}
        Operator::In | Operator::NotIn => {
            let values = filter
                .values
                .as_ref()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| need("values (a non-empty list)"))?;
            // "When searching a string property with this operator, values must be lowercase";
            // enumeration values (NOT_STARTED) go exactly as given.
            let values: Vec<String> = values
                .iter()
                .map(|v| wire_value(v, "values").map(|s| if string { s.to_lowercase() } else { s }))
                .collect::<Result<_, _>>()?;
            out["values"] = values.into();
        }
        Operator::Between => {
            let low = filter
                .value
                .as_ref()
                .ok_or_else(|| need("value (the low end) and high_value"))?;
            let high = filter
                .high_value
                .as_ref()
                .ok_or_else(|| need("high_value (the high end)"))?;
            out["value"] = wire_value(low, "value")?.into();
            out["highValue"] = wire_value(high, "high_value")?.into();
        }
        _ => {
            let value = filter.value.as_ref().ok_or_else(|| need("value"))?;
            out["value"] = wire_value(value, "value")?.into();
        }
    }
    Ok(out)
}

/// HubSpot's search answer
/// (<https://developers.hubspot.com/docs/api-reference/crm-objects-v3/search/post-crm-v3-objects-objectType-search>):
/// the required `total` of all matches, and one page of records with the cursor of the next.
#[derive(Debug, Deserialize)]
pub(crate) struct SearchAnswer {
    pub(crate) total: u64,
    #[serde(flatten)]
    pub(crate) page: Page<RecordObject>,
}

/// What `crma_search_records` answers: one page of matching records, or with `to_file` a JSON
/// Lines file holding every match.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchOutput {
    /// How many records match in all, on every page.
    total: u64,
    /// The records, on this page or in a file. Flattened, so the root of the schema stays an
    /// object with the fields above, and its `anyOf` says which fields come with them.
    #[serde(flatten)]
    rows: SearchRows,
    /// Present when not every match is here: past the 10,000 results HubSpot lets a search
    /// page through (narrow the filters, or use to_file), or a file that stopped at the
    /// per-file record limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

impl SearchOutput {
    /// The answer of an export written to a file.
    pub(crate) fn file(total: u64, file: export::ExportFile, note: Option<String>) -> Self {
        SearchOutput {
            total,
            rows: SearchRows::File(file),
            note,
        }
    }
}

/// Where the matching records are.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum SearchRows {
    /// One page, in the answer itself.
    Page(SearchPage),
    /// Every match, in a JSON Lines file (to_file).
    File(export::ExportFile),
}

/// One page of matching records.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SearchPage {
    /// The matching records on this page, each an object: id, the record's HubSpot id;
    /// properties, property internal name → value as HubSpot stores it (text), for the
    /// properties asked for or HubSpot's default set for the type, leaving out those without a
    /// value unless include_empty is set, and hs_object_id (the id again), createdate and
    /// lastmodifieddate unless asked for by name; record_url, the link that opens the record in
    /// HubSpot, when the workspace's settings name the HubSpot account.
    #[schemars(schema_with = "crate::raw_json::records_schema")]
    results: Vec<FoundRecord>,
    /// Pass it back as cursor for the next page; absent on the last page and past the
    /// 10,000 results HubSpot lets a search page through.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
}

/// One matching record.
#[derive(Debug, Serialize)]
pub struct FoundRecord {
    id: String,
    properties: ObjectText,
    #[serde(skip_serializing_if = "Option::is_none")]
    record_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    created_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    updated_at: Option<String>,
}

/// An open object naming its members in words: clients validate each of up to 200 records
/// against this, and a schema of typed properties costs them four times as long.
impl JsonSchema for FoundRecord {
    fn schema_name() -> Cow<'static, str> {
        "FoundRecord".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "properties": {
                "id": { "type": "string" },
                "properties": { "type": "object" }
            },
            "required": ["id", "properties"],
            "description": "One matching record: id, the record's HubSpot id; properties, \
                property internal name → value as HubSpot stores it (text), for the properties \
                asked for or HubSpot's default set for the type, leaving out those without a \
                value unless include_empty is set, and hs_object_id (the id again), createdate \
                and lastmodifieddate unless asked for by name; record_url, the link that opens \
                the record in HubSpot, when the workspace's settings name the HubSpot account. \
                Lines of a result file hold every property HubSpot sent and also created_at and \
                updated_at (ISO 8601, UTC)."
        })
    }
}

/// Properties HubSpot sends whether or not they were asked for: the id again and the record's
/// timestamps. A page shows them only when asked for by name.
const UNASKED_ECHOES: &[&str] = &[
    "hs_object_id",
    "createdate",
    "lastmodifieddate",
    "hs_lastmodifieddate",
];

/// What a page of results shows of each record.
pub(crate) struct Shown<'a> {
    /// The properties the caller named (none: HubSpot's default set).
    pub(crate) asked: &'a [PropertyName],
    /// Whether properties without a value stay, as null.
    pub(crate) include_empty: bool,
    /// The account's links and the type searched, when the account is known.
    pub(crate) links: Option<(RecordLinks, &'a ObjectType)>,
}

impl FoundRecord {
    /// A record as a result file holds it: everything HubSpot sent, timestamps included, for
    /// the analysis a file is for.
    pub(crate) fn in_file(record: RecordObject) -> Self {
        FoundRecord {
            id: record.id,
            properties: ObjectText::of(&record.properties),
            record_url: None,
            created_at: Some(record.created_at),
            updated_at: Some(record.updated_at),
        }
    }
}

/// The answer, mapped: the records with `id` and `properties`, `total`, a cursor when more can
/// be paged to, and a note when some matches cannot be reached.
/// HubSpot's answer is read and its records mapped in one pass ([`page`]).
pub(crate) fn output(body: &[u8], shown: &Shown<'_>) -> Result<SearchOutput, serde_json::Error> {
    let page::ReadPage {
        total,
        results,
        paging,
    } = page::read(body, shown)?;
    let next_after = paging.and_then(|p| p.next).map(|n| n.after);
    // Any token HubSpot gives is passed on, except an offset HubSpot itself will refuse;
    // then the note below says why there is no cursor.
    let unreachable = |after: &str| after.parse::<u64>().is_ok_and(|a| a >= MAX_REACHABLE);
    let next_cursor = next_after
        .as_deref()
        .filter(|after| is_cursor(after) && !unreachable(after))
        .map(str::to_string);
    let note = if total > MAX_REACHABLE {
        Some(format!(
            "{total} records match, but HubSpot search can page through only the first {MAX_REACHABLE}. \
             Narrow the filters to reach the rest, for example by createdate or lastmodifieddate windows, \
             or search again with to_file: true to write every match to a file."
        ))
    } else if next_after.as_deref().is_some_and(|after| !is_cursor(after)) {
        Some(
            "HubSpot has more results, but its paging cursor was not one this tool can pass on; \
             narrow the filters to see the rest, or search again with to_file: true."
                .to_string(),
        )
    } else {
        None
    };
    Ok(SearchOutput {
        total,
        rows: SearchRows::Page(SearchPage {
            results,
            next_cursor,
        }),
        note,
    })
}

/// [`output`] as JSON, for any JSON at all: the fuzzer and the property tests feed it
/// arbitrary answers.
pub fn map_answer(body: &Value) -> Result<Value, String> {
    let text = body.to_string();
    let shown = Shown {
        asked: &[],
        include_empty: true,
        links: None,
    };
    let out = output(text.as_bytes(), &shown).map_err(|err| err.to_string())?;
    Ok(serde_json::to_value(out).expect("a search output serialises"))
}

pub(crate) mod export;
pub(crate) mod keyset;
mod page;
pub(crate) mod plan;

#[cfg(test)]
mod tests;
