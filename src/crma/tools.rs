//! The `crma_*` tools. Each builds its HubSpot call as data and sends it through
//! [`client::send`], which checks the granted scopes first.

use super::associations::{AssociationInput, associations_body};
use super::client::{self, Call};
use super::properties;
use super::scopes::Operation;
use super::search::{self, FilterGroup, Search, Sort};
use super::types::{ObjectType, PropertyName, RecordId};
use crate::error::{Crm, CrmProblem, ToolError};
use crate::http::{Effect, Method};
use crate::mapping::CreatedRecord;
use crate::tool::{Session, Tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// Property name → value for writes. HubSpot stores every value as a string; numbers and
/// booleans are sent as their text, null clears the property.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct PropertyValues(BTreeMap<PropertyName, Value>);

impl PropertyValues {
    pub(super) fn to_wire(&self) -> Result<Map<String, Value>, ToolError> {
        self.0
            .iter()
            .map(|(name, value)| {
                let text = match value {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    Value::Null => String::new(),
                    _ => {
                        return Err(ToolError::invalid(format!(
                            "property {}: values must be a string, number, boolean or null (multi-select as \"a;b\")",
                            name.as_str()
                        )));
                    }
                };
                Ok((name.as_str().to_string(), Value::String(text)))
            })
            .collect()
    }
}

/// The id of a created or changed record, from `id` or (older answers) `entity.id`.
fn answer_id(answer: &Value) -> Option<String> {
    answer["id"]
        .as_str()
        .or(answer["entity"]["id"].as_str())
        .map(str::to_string)
}

/// Longest paging token accepted back from a caller.
const MAX_CURSOR_LEN: usize = 1024;

/// A HubSpot paging cursor (`after`). HubSpot documents it only as "the paging cursor token"
/// and its own examples are base64 text such as `NTI1Cg%3D%3D`, so any URL-safe token of a
/// bounded length is passed back as it came.
pub(super) fn after(cursor: &Option<String>) -> Result<Option<String>, ToolError> {
    match cursor {
        Some(c) if is_cursor(c) => Ok(Some(c.clone())),
        Some(_) => Err(ToolError::invalid(
            "cursor is not one this tool returned: pass next_cursor unchanged",
        )),
        None => Ok(None),
    }
}

/// 1 to 1,024 characters that need no escaping in a URL or are already escaped.
fn is_cursor(text: &str) -> bool {
    (1..=MAX_CURSOR_LEN).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.~%=+/".contains(&b))
}

/// HubSpot's `paging.next.after`, when it is one this tool will accept back.
pub(super) fn next_cursor(answer: &Value) -> Option<String> {
    answer["paging"]["next"]["after"]
        .as_str()
        .filter(|after| is_cursor(after))
        .map(str::to_string)
}

/// Input of `crma_search_records`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchInput {
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
        10,000 matches; narrow by date windows for more.";
    const READ_ONLY: bool = true;
    type Input = SearchInput;
    type Output = Value;

    fn run(input: SearchInput, session: &mut Session<'_>) -> Result<Self::Output, ToolError> {
        let after = after(&input.cursor)?;
        let string_properties =
            string_properties_in(session, &input.object_type, &input.filter_groups)?;
        let search = Search {
            object_type: input.object_type.clone(),
            filter_groups: input.filter_groups,
            sorts: input.sorts,
            query: input.query,
            properties: input.properties,
            limit: input.limit.unwrap_or(20),
            after,
            string_properties,
        };
        let answer = run_search(session, &search)?;
        search::map_answer(&answer)
            .map_err(|why| CrmProblem::unexpected_answer(Crm::Hubspot, 200, why).into())
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

fn run_search(session: &mut Session<'_>, search: &Search) -> Result<Value, ToolError> {
    let body = search.body()?;
    let object = search.object_type.as_str().to_string();
    let call = Call::get(
        Operation::Read(search.object_type.clone()),
        vec!["crm", "v3", "objects", &object, "search"],
        format!("{object} search"),
    )
    // A search is a POST that only reads: safe to retry.
    .with_body(Method::Post, Effect::Read, body);
    client::send(session, call)
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

/// One record as `GET /crm/v3/objects/{type}/{id}` answers it
/// (https://developers.hubspot.com/docs/api/crm/objects, "Retrieve records").
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireRecord {
    id: String,
    #[serde(default)]
    properties: Map<String, Value>,
    #[serde(default)]
    created_at: Option<String>,
    #[serde(default)]
    updated_at: Option<String>,
    #[serde(default)]
    archived: bool,
    #[serde(default)]
    archived_at: Option<String>,
}

impl Tool for GetRecord {
    const NAME: &'static str = "crma_get_record";
    const DESCRIPTION: &'static str = "Fetch one HubSpot record by object type and id, with the \
        properties asked for (or HubSpot's default set). Finds records created moments ago, \
        and says when a record is archived (in HubSpot's recycle bin).";
    const READ_ONLY: bool = true;
    type Input = GetRecordInput;
    type Output = Value;

    fn run(input: GetRecordInput, session: &mut Session<'_>) -> Result<Self::Output, ToolError> {
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
        let answer = match client::send(session, read(false)) {
            Err(ToolError::NotFound(message)) => match client::send(session, read(true)) {
                Ok(archived) if archived["archived"] == true => archived,
                _ => return Err(ToolError::NotFound(message)),
            },
            other => other?,
        };
        let record: WireRecord = serde_json::from_value(answer).map_err(|err| {
            CrmProblem::unexpected_answer(Crm::Hubspot, 200, format!("the record: {err}"))
        })?;
        let mut out = json!({"id": record.id, "object_type": object, "properties": record.properties,
                             "created_at": record.created_at, "updated_at": record.updated_at});
        if record.archived {
            out["archived"] = true.into();
            out["archived_at"] = record.archived_at.into();
            out["note"] = format!(
                "This {object} record is archived (in HubSpot's recycle bin): it is not in searches \
                 and cannot be changed until someone restores it in HubSpot."
            )
            .into();
        }
        Ok(out)
    }
}

/// Input of `crma_create_record`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateInput {
    pub object_type: ObjectType,
    /// Property internal name → value, e.g. {"email": "a@b.com", "firstname": "Ana"}.
    pub properties: PropertyValues,
    /// Records to associate the new record with, using HubSpot's default association types.
    #[serde(default)]
    pub associations: Vec<AssociationInput>,
}

/// `crma_create_record`.
pub struct CreateRecord;

impl Tool for CreateRecord {
    const NAME: &'static str = "crma_create_record";
    const DESCRIPTION: &'static str = "Create one HubSpot record (contact, company, deal, ...) \
        with properties and optional associations. Sent exactly once: an unknown outcome is \
        reported, not retried, so search before creating again.";
    const READ_ONLY: bool = false;
    type Input = CreateInput;
    type Output = Value;

    fn run(input: CreateInput, session: &mut Session<'_>) -> Result<Self::Output, ToolError> {
        let wire = input.properties.to_wire()?;
        if wire.is_empty() {
            return Err(ToolError::invalid(
                "properties is empty: give at least one property",
            ));
        }
        create(
            session,
            &input.object_type,
            wire,
            &input.associations,
            "search for it before creating it again",
        )
    }
}

/// Creates one record (records and activities alike): sent once, and its returned id kept in
/// the mapping store. `before_redo` tells the user how to check when no id comes back.
pub(super) fn create(
    session: &mut Session<'_>,
    object_type: &ObjectType,
    mut wire: Map<String, Value>,
    associations: &[AssociationInput],
    before_redo: &str,
) -> Result<Value, ToolError> {
    properties::normalise_dates(session, object_type, &mut wire)?;
    let mut body = json!({"properties": wire});
    if !associations.is_empty() {
        body["associations"] = associations_body(object_type, associations)?.into();
    }
    let object = object_type.as_str().to_string();
    let call = Call::get(
        Operation::Write(object_type.clone()),
        vec!["crm", "v3", "objects", &object],
        format!("new {object} record"),
    )
    .with_body(Method::Post, Effect::Write, body);
    let answer = client::send(session, call)?;
    let id = answer_id(&answer).ok_or_else(|| {
        ToolError::OutcomeUnknown(format!(
            "HubSpot accepted the new {object} record but returned no id; {before_redo}"
        ))
    })?;
    let mut out = json!({"id": id, "object_type": object});
    if let Some(warning) = session.remember_created(CreatedRecord {
        crm: "hubspot",
        object_type: object,
        record_id: id,
    }) {
        out["warning"] = warning.into();
    }
    Ok(out)
}

/// Input of `crma_update_record`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateInput {
    pub object_type: ObjectType,
    pub record_id: RecordId,
    /// Property internal name → new value; only these change.
    pub properties: PropertyValues,
}

/// `crma_update_record`.
pub struct UpdateRecord;

impl Tool for UpdateRecord {
    const NAME: &'static str = "crma_update_record";
    const DESCRIPTION: &'static str = "Update properties of one HubSpot record by object type \
        and id; only the given properties change. Sent once, never retried.";
    const READ_ONLY: bool = false;
    type Input = UpdateInput;
    type Output = Value;

    fn run(input: UpdateInput, session: &mut Session<'_>) -> Result<Self::Output, ToolError> {
        let mut wire = input.properties.to_wire()?;
        if wire.is_empty() {
            return Err(ToolError::invalid(
                "properties is empty: give at least one property to change",
            ));
        }
        properties::normalise_dates(session, &input.object_type, &mut wire)?;
        let object = input.object_type.as_str().to_string();
        let id = input.record_id.to_string();
        let call = Call::get(
            Operation::Write(input.object_type.clone()),
            vec!["crm", "v3", "objects", &object, &id],
            format!("{object} record {id}"),
        )
        .with_body(Method::Patch, Effect::Write, json!({"properties": wire}));
        client::send(session, call)?;
        Ok(json!({"id": id, "object_type": object, "updated": true}))
    }
}

/// Input of `crma_merge_companies`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MergeInput {
    /// The company that remains.
    pub primary_id: RecordId,
    /// The duplicate merged into it.
    pub merge_id: RecordId,
}

/// `crma_merge_companies`.
pub struct MergeCompanies;

impl Tool for MergeCompanies {
    const NAME: &'static str = "crma_merge_companies";
    const DESCRIPTION: &'static str = "Merge a duplicate HubSpot company into a primary one \
        (companies only). The primary keeps its id; the duplicate's data and associations move \
        into it. Not reversible from here: confirm with the user first.";
    const READ_ONLY: bool = false;
    type Input = MergeInput;
    type Output = Value;

    fn run(input: MergeInput, session: &mut Session<'_>) -> Result<Self::Output, ToolError> {
        if input.primary_id == input.merge_id {
            return Err(ToolError::invalid(
                "primary_id and merge_id are the same company",
            ));
        }
        let body = json!({"primaryObjectId": input.primary_id.to_string(), "objectIdToMerge": input.merge_id.to_string()});
        let call = Call::get(
            Operation::MergeCompanies,
            vec!["crm", "v3", "objects", "companies", "merge"],
            format!("companies {} and {}", input.primary_id, input.merge_id),
        )
        .with_body(Method::Post, Effect::Write, body);
        let answer = client::send(session, call)?;
        Ok(
            json!({"id": answer_id(&answer).unwrap_or_else(|| input.primary_id.to_string()), "merged_id": input.merge_id.to_string()}),
        )
    }
}

/// Input of `crma_list_owners`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListOwnersInput {
    /// true lists only archived (deactivated) owners; HubSpot lists active ones otherwise.
    #[serde(default)]
    pub archived: bool,
    /// Only the owner with this email.
    #[serde(default)]
    pub email: Option<String>,
    /// 1-500, default 100.
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub cursor: Option<String>,
}

/// `crma_list_owners`.
pub struct ListOwners;

impl Tool for ListOwners {
    const NAME: &'static str = "crma_list_owners";
    const DESCRIPTION: &'static str = "List HubSpot owners (the users and queues records can be \
        assigned to): id, email, name, linked user id, teams. Active by default; archived=true \
        lists deactivated ones. Use it to map an owner id to a person.";
    const READ_ONLY: bool = true;
    type Input = ListOwnersInput;
    type Output = Value;

    fn run(input: ListOwnersInput, session: &mut Session<'_>) -> Result<Self::Output, ToolError> {
        let limit = input.limit.unwrap_or(100);
        if !(1..=500).contains(&limit) {
            return Err(ToolError::invalid("limit must be from 1 to 500"));
        }
        let mut query = vec![
            ("limit", limit.to_string()),
            ("archived", input.archived.to_string()),
        ];
        if let Some(after) = after(&input.cursor)? {
            query.push(("after", after));
        }
        if let Some(email) = input.email.filter(|e| !e.trim().is_empty()) {
            query.push(("email", email.trim().to_string()));
        }
        let answer = client::send(
            session,
            Call::get(Operation::ListOwners, vec!["crm", "v3", "owners"], "owners")
                .with_query(query),
        )?;
        let owners: Vec<Value> = answer["results"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|o| {
                // Archived owners keep their user only in `userIdIncludingInactive`.
                let user_id = if o["userId"].is_null() { &o["userIdIncludingInactive"] } else { &o["userId"] };
                json!({"id": o["id"], "email": o["email"], "first_name": o["firstName"], "last_name": o["lastName"],
                       "user_id": user_id, "archived": o["archived"], "teams": o["teams"]})
            })
            .collect();
        Ok(paged(json!({"results": owners}), &answer))
    }
}

/// Input of `crma_list_users`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListUsersInput {
    /// 1-100, default 100.
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub cursor: Option<String>,
}

/// `crma_list_users`.
pub struct ListUsers;

impl Tool for ListUsers {
    const NAME: &'static str = "crma_list_users";
    const DESCRIPTION: &'static str = "List the HubSpot account's users: id, email, role ids, \
        primary and secondary team ids, super admin flag. For provisioning and permission mapping.";
    const READ_ONLY: bool = true;
    type Input = ListUsersInput;
    type Output = Value;

    fn run(input: ListUsersInput, session: &mut Session<'_>) -> Result<Self::Output, ToolError> {
        let limit = input.limit.unwrap_or(100);
        if !(1..=100).contains(&limit) {
            return Err(ToolError::invalid("limit must be from 1 to 100"));
        }
        let mut query = vec![("limit", limit.to_string())];
        if let Some(after) = after(&input.cursor)? {
            query.push(("after", after));
        }
        let answer = client::send(
            session,
            Call::get(
                Operation::ListUsers,
                vec!["settings", "v3", "users"],
                "users",
            )
            .with_query(query),
        )?;
        let users: Vec<Value> = answer["results"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|u| {
                json!({"id": u["id"], "email": u["email"], "first_name": u["firstName"], "last_name": u["lastName"],
                       "role_id": u["roleId"], "role_ids": u["roleIds"], "primary_team_id": u["primaryTeamId"],
                       "secondary_team_ids": u["secondaryTeamIds"], "super_admin": u["superAdmin"]})
            })
            .collect();
        Ok(paged(json!({"results": users}), &answer))
    }
}

/// Adds `next_cursor` when HubSpot has another page.
pub(super) fn paged(mut out: Value, answer: &Value) -> Value {
    if let Some(cursor) = next_cursor(answer) {
        out["next_cursor"] = cursor.into();
    }
    out
}

#[cfg(test)]
mod tests;
