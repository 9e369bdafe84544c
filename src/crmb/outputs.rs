//! What the `crmb_*` tools answer, as types. The registry serialises them and publishes their
//! JSON Schema as each tool's output schema, so the doc comments here are the field
//! descriptions a model reads. Record bodies stay Salesforce's JSON objects, carried as text in
//! Salesforce's field order, without `attributes` and with a `record_url` added
//! ([`super::records`]); the schema calls each an open object. `crmb_get_object_fields`
//! answers the compact describe, [`super::describe::ObjectView`].

use super::ids::{ApiName, SalesforceId};
pub(crate) use crate::result_file::FileFormat;
use schemars::JsonSchema;
use serde::Serialize;

/// One Salesforce record, mapped: field API name → value, in Salesforce's order.
pub(crate) type Record = crate::raw_json::ObjectText;

/// A link that opens a record in Salesforce.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct RecordLink {
    /// The record's page in Salesforce, to show the user.
    pub(crate) url: String,
}

/// One record, as the connected user may see it, and its link.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct FetchedRecord {
    /// Field API name → value, for the fields the user may read (the others are absent).
    pub(crate) record: Record,
    /// Link to open the record in Salesforce; null when the org's URL is not known.
    pub(crate) record_url: Option<String>,
}

/// The record Salesforce created.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct NewRecord {
    /// Id of the new record.
    pub(crate) id: SalesforceId,
    /// Object API name of the new record.
    pub(crate) object: ApiName,
    /// Link to open the new record in Salesforce; null when the org's URL is not known.
    pub(crate) record_url: Option<String>,
    /// Present when the record was created but its id could not be kept locally; the record
    /// exists all the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) warning: Option<String>,
}

/// The record Salesforce updated.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct UpdatedRecord {
    /// Id of the updated record.
    pub(crate) id: SalesforceId,
    /// Object API name of the updated record.
    pub(crate) object: ApiName,
    /// Link to open the record in Salesforce; null when the org's URL is not known.
    pub(crate) record_url: Option<String>,
    /// Always true: Salesforce applied the change (a refused one is an error instead).
    pub(crate) updated: bool,
}

/// A SOQL query's result: the records in this answer, or, when the result is very large, a
/// JSON Lines file holding them.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct QueryResult {
    /// The object the query selects FROM, as written in the query.
    pub(crate) object: String,
    /// How many records match the query in all (for SELECT COUNT(), the count).
    pub(crate) total_size: u64,
    /// True when this answer, or the file, holds every matching record.
    pub(crate) done: bool,
    /// The records themselves, inline or in a file. Flattened, so the root of the schema stays
    /// an object with the fields above, and its `anyOf` says which fields come with them.
    #[serde(flatten)]
    pub(crate) rows: QueryRows,
    /// Present when done is false: why the answer stopped and how to get the other records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) how_to_get_the_rest: Option<String>,
}

/// Where a query's records are.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum QueryRows {
    /// In the answer itself.
    Inline(InlineRecords),
    /// In the answer itself, as a table (layout "table").
    Table(TableRecords),
    /// In a JSON Lines file, because there are too many for one answer.
    File(ResultFile),
}

/// Records returned in the answer.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct InlineRecords {
    /// How many records this answer holds.
    pub(crate) returned: usize,
    /// The records, each an object with its fields by API name and a record_url when it has
    /// an Id. Parent records are nested objects; child subquery results are
    /// {totalSize, done, records}, marked incomplete with a note when Salesforce cut them.
    #[schemars(schema_with = "crate::raw_json::records_schema")]
    pub(crate) records: crate::raw_json::ObjectTexts,
    /// Present when done is false: matching records not in this answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) remaining_records: Option<u64>,
    /// Present when more records can be fetched: pass it back as cursor, with the same query,
    /// to get the next records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next_cursor: Option<String>,
}

/// Records returned in the answer as a table: the field names once, then a row per record.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct TableRecords {
    /// How many rows this answer holds.
    pub(crate) returned: usize,
    /// The column names: every field of any row by first appearance, record_url included.
    pub(crate) fields: Vec<String>,
    /// One row per record: its values in the order of fields (null where a record has none).
    /// Parent records and child subquery results are nested objects, as in records.
    #[schemars(schema_with = "crate::raw_json::records_schema")]
    pub(crate) rows: Vec<crate::raw_json::ArrayText>,
    /// Present when done is false: matching records not in this answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) remaining_records: Option<u64>,
    /// Present when more records can be fetched: pass it back as cursor, with the same query,
    /// to get the next records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next_cursor: Option<String>,
}

impl TableRecords {
    /// `records` as a table, with the paging fields of the answer they came in.
    pub(crate) fn of(inline: InlineRecords) -> Result<Self, serde_json::Error> {
        let members = inline.records.members().collect::<Result<Vec<_>, _>>()?;
        let mut fields: Vec<&str> = Vec::new();
        for record in &members {
            for (name, _) in &record.0 {
                if !fields.contains(&name.as_ref()) {
                    fields.push(name);
                }
            }
        }
        let rows = members
            .iter()
            .map(|record| crate::raw_json::ArrayText::row(&fields, record))
            .collect::<Result<_, _>>()?;
        Ok(TableRecords {
            returned: inline.returned,
            fields: fields.into_iter().map(str::to_string).collect(),
            rows,
            remaining_records: inline.remaining_records,
            next_cursor: inline.next_cursor,
        })
    }
}

/// A result written to a file in the workspace's results directory.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ResultFile {
    /// Where the file is, as the workspace sees it.
    pub(crate) file_path: String,
    /// How the file is written.
    pub(crate) format: FileFormat,
    /// How many records the file holds.
    pub(crate) record_count: u64,
    /// Every field name that occurs in the records, in order of first appearance.
    pub(crate) columns: Vec<String>,
    /// The first few records, to show what the file holds.
    pub(crate) preview: Vec<Record>,
}
