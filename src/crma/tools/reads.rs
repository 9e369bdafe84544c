//! The record reads: `crma_search_records` and `crma_get_record`.

use super::after;
use crate::crma::client::{self, Call};
use crate::crma::metadata::account::RecordLinks;
use crate::crma::properties;
use crate::crma::scopes::Operation;
use crate::crma::search::export::{self, ExportPlan};
use crate::crma::search::{self, FilterGroup, Search, SearchOutput, Shown, Sort};
use crate::crma::types::{ObjectType, PropertyName, RecordId};
use crate::crma::wire::RecordObject;
use crate::error::ToolError;

use crate::policy::ReadScope;
use crate::tool::{CrmEffect, Session, Tool, capped};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// Results per page when the caller gives no limit.
const DEFAULT_SEARCH_LIMIT: u32 = 20;

/// Input of `crma_search_records`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchInput {
    /// The object type to search.
    // Rustdoc only: the input schema keeps `ObjectType`'s own description.
    #[schemars(description = "")]
    pub object_type: ObjectType,
    /// Groups are ORed; filters inside a group are ANDed. At most 5 groups, 6 filters each, 18 in all.
    #[serde(default)]
    pub filter_groups: Vec<FilterGroup>,
    /// At most one sort rule.
    #[serde(default)]
    pub sorts: Vec<Sort>,
    /// Free text searched in the type's default text properties.
    #[serde(default)]
    pub query: Option<String>,
    /// Properties to return; HubSpot returns a default set when omitted.
    #[serde(default)]
    pub properties: Vec<PropertyName>,
    /// 1-200, default 20.
    #[serde(default)]
    pub limit: Option<u32>,
    /// next_cursor from the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
    /// true keeps properties that have no value, as null; by default they are left out.
    #[serde(default)]
    pub include_empty: bool,
    /// true writes every match, past the 10,000 a search can page through, to a JSON Lines
    /// file in the workspace's results directory, in hs_object_id order, and answers with
    /// file_path, record_count and a preview instead of results. Not with cursor, sorts or
    /// limit. Default false.
    #[serde(default)]
    pub to_file: bool,
}

/// `crma_search_records`.
pub struct SearchRecords;

impl Tool for SearchRecords {
    const NAME: &'static str = "crma_search_records";
    const DESCRIPTION: &'static str = "Search HubSpot records of one object type (contacts, \
        companies, deals, tasks, notes, emails, meetings, calls, or a custom type) with filters \
        (EQ, NEQ, LT, LTE, GT, GTE, BETWEEN, IN, NOT_IN, HAS_PROPERTY, NOT_HAS_PROPERTY, \
        CONTAINS_TOKEN, NOT_CONTAINS_TOKEN), one sort, free text and chosen properties. Returns \
        results (id, properties), total and next_cursor. HubSpot can page through only the first \
        10,000 matches; narrow by date windows, or set to_file to write every match (any number) \
        to a JSON Lines file and get its file_path, record_count and a preview.";
    const TITLE: &'static str = "Search HubSpot records";
    const EFFECT: CrmEffect = CrmEffect::Reads;
    type Input = SearchInput;
    type Output = SearchOutput;

    /// Every property filtered, sorted or asked for, free text over the type's searchable
    /// properties, and the page size.
    fn reads(input: &SearchInput) -> ReadScope<'_> {
        let named = input
            .filter_groups
            .iter()
            .flat_map(|g| &g.filters)
            .map(|f| &f.property)
            .chain(input.sorts.iter().map(|s| &s.property))
            .chain(&input.properties);
        let free_text = input.query.as_deref().is_some_and(|q| !q.trim().is_empty());
        ReadScope {
            fields: named.map(PropertyName::as_str).collect(),
            free_text_in: free_text.then(|| input.object_type.as_str()),
            records: input.limit.map(Into::into),
            ..ReadScope::default()
        }
    }

    /// A page holds at most the cap; an export (which takes no limit) is bound by the file's
    /// record limit instead.
    fn cap_records(input: &mut SearchInput, cap: u32) {
        if !input.to_file {
            input.limit = capped(input.limit, DEFAULT_SEARCH_LIMIT, cap);
        }
    }

    fn run(input: SearchInput, session: &mut Session<'_>) -> Result<SearchOutput, ToolError> {
        if input.to_file {
            // Everything an export cannot take is refused before anything is sent.
            let plan = ExportPlan::new(
                input.object_type,
                input.filter_groups,
                &input.sorts,
                input.query,
                input.properties,
                input.limit,
                input.cursor.as_deref(),
            )?;
            export::check_before_sending(session, &plan)?;
            let string_properties =
                string_properties_in(session, plan.object_type(), plan.filter_groups())?;
            return export::run(session, plan.with_string_properties(string_properties));
        }
        let after = after(&input.cursor)?;
        let string_properties =
            string_properties_in(session, &input.object_type, &input.filter_groups)?;
        let links = RecordLinks::configured(session.config()?);
        let search = Search {
            object_type: input.object_type.clone(),
            filter_groups: input.filter_groups,
            sorts: input.sorts,
            query: input.query,
            properties: input.properties,
            limit: input.limit.unwrap_or(DEFAULT_SEARCH_LIMIT),
            after,
            string_properties,
        };
        let shown = Shown {
            asked: &search.properties,
            include_empty: input.include_empty,
            links: links.map(|links| (links, &input.object_type)),
        };
        run_search(session, &search, |body| search::output(body, &shown))
    }
}

/// The `IN` / `NOT_IN` properties whose given values have capitals and whose definitions say
/// they are strings: only their values are lower-cased (see [`properties`]).
fn string_properties_in(
    session: &mut Session<'_>,
    object_type: &ObjectType,
    groups: &[FilterGroup],
) -> Result<BTreeSet<String>, ToolError> {
    let with_capitals: BTreeSet<&PropertyName> = groups
        .iter()
        .flat_map(|g| &g.filters)
        .filter(|f| search::lowercases(f))
        .map(|f| &f.property)
        .collect();
    if with_capitals.is_empty() {
        return Ok(BTreeSet::new());
    }
    match properties::kinds(session, object_type, &with_capitals) {
        Ok(kinds) => Ok(kinds
            .into_iter()
            .filter(|(_, kind)| *kind == properties::Kind::Text)
            .map(|(name, _)| name)
            .collect()),
        // Allowed to search but not to read definitions (emails with only
        // `sales-email-read`): HubSpot's rule for strings, the usual case, applies.
        Err(ToolError::MissingScopes(_)) => Ok(with_capitals
            .into_iter()
            .map(|name| name.as_str().to_string())
            .collect()),
        Err(err) => Err(err),
    }
}

/// Sends one search and reads its answer with `read`, which maps the page from HubSpot's text.
fn run_search<T>(
    session: &mut Session<'_>,
    search: &Search,
    read: impl FnOnce(&[u8]) -> Result<T, serde_json::Error>,
) -> Result<T, ToolError> {
    let body = search.body()?;
    let object = search.object_type.as_str().to_string();
    let call = Call::get(
        Operation::Read(search.object_type.clone()),
        vec!["crm", "v3", "objects", &object, "search"],
        format!("{object} search"),
    )
    // A search is a POST that only reads: safe to retry.
    .searching(body);
    client::send_reading(session, call, read)
}

/// Input of `crma_get_record`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetRecordInput {
    pub object_type: ObjectType,
    pub record_id: RecordId,
    /// Properties to return; a default set when omitted.
    #[serde(default)]
    pub properties: Vec<PropertyName>,
}

/// `crma_get_record`: one record by id, read with HubSpot's documented read path.
///
/// Search is eventually consistent and can miss a record created seconds ago, so this reads
/// `GET /crm/v3/objects/{type}/{id}`; when that says "not found" it asks once more for an
/// archived record, so the assistant can say the record is in the recycle bin.
pub struct GetRecord;

/// What `crma_get_record` answers: one HubSpot record.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RecordOutput {
    /// The record's HubSpot id.
    id: String,
    /// The object type it was read as, e.g. "contacts" or "2-1234".
    object_type: String,
    /// Property internal name → value, as HubSpot stores it (text, or null when empty): the
    /// properties asked for, or HubSpot's default set for the type.
    properties: Map<String, Value>,
    /// When the record was created (ISO 8601, UTC).
    created_at: String,
    /// When the record last changed (ISO 8601, UTC).
    updated_at: String,
    /// Only for a record in HubSpot's recycle bin: `archived`, `archived_at` and `note`.
    #[serde(flatten)]
    archived: Option<Archived>,
}

/// What `crma_get_record` adds for an archived record: the three fields come together, and
/// only for a record in HubSpot's recycle bin.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Archived {
    /// Present, and true, only for an archived record (in HubSpot's recycle bin).
    archived: bool,
    /// Present only for an archived record: when it was archived (ISO 8601, UTC), or null
    /// when HubSpot does not say.
    archived_at: Option<String>,
    /// Present only for an archived record, for the user: it is not in searches and cannot be
    /// changed until someone restores it in HubSpot.
    note: String,
}

impl Tool for GetRecord {
    const NAME: &'static str = "crma_get_record";
    const DESCRIPTION: &'static str = "Fetch one HubSpot record by object type and id, with the \
        properties asked for (or HubSpot's default set). Finds records created moments ago, \
        and says when a record is archived (in HubSpot's recycle bin).";
    const TITLE: &'static str = "Get a HubSpot record";
    const EFFECT: CrmEffect = CrmEffect::Reads;
    type Input = GetRecordInput;
    type Output = RecordOutput;

    fn reads(input: &GetRecordInput) -> ReadScope<'_> {
        ReadScope {
            fields: input.properties.iter().map(PropertyName::as_str).collect(),
            ..ReadScope::default()
        }
    }

    fn run(input: GetRecordInput, session: &mut Session<'_>) -> Result<RecordOutput, ToolError> {
        let object = input.object_type.as_str().to_string();
        let id = input.record_id.to_string();
        let properties = input
            .properties
            .iter()
            .map(PropertyName::as_str)
            .collect::<Vec<_>>()
            .join(",");
        let read = |archived: bool| {
            let mut query = vec![("archived", archived.to_string())];
            if !properties.is_empty() {
                query.push(("properties", properties.clone()));
            }
            Call::get(
                Operation::Read(input.object_type.clone()),
                vec!["crm", "v3", "objects", &object, &id],
                format!("{object} record {id}"),
            )
            .with_query(query)
        };
        let record: RecordObject = match client::send_for(session, read(false)) {
            Err(ToolError::NotFound(message)) => match client::send_for(session, read(true)) {
                Ok(record @ RecordObject { archived: true, .. }) => record,
                // Not archived either, or that second look failed: the record is not live,
                // as the first answer said.
                _ => return Err(ToolError::NotFound(message)),
            },
            other => other?,
        };
        Ok(record_output(object, record))
    }
}

/// The record as the assistant sees it, with a note when it is archived.
fn record_output(object: String, record: RecordObject) -> RecordOutput {
    let archived = record.archived.then(|| Archived {
        archived: true,
        archived_at: record.archived_at,
        note: format!(
            "This {object} record is archived (in HubSpot's recycle bin): it is not in searches \
             and cannot be changed until someone restores it in HubSpot."
        ),
    });
    RecordOutput {
        id: record.id,
        object_type: object,
        properties: record.properties,
        created_at: record.created_at,
        updated_at: record.updated_at,
        archived,
    }
}
