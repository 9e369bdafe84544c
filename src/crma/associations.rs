//! Associations between HubSpot records: the default association type ids used when creating
//! records and activities, and the v4 read and create-default tools.
//!
//! v4 paths take activity types by their type id (`0-47` for meetings and so on): HubSpot's
//! associations guide, "Associate records" / "Retrieve associated records".

use super::client::{self, Call};
use super::scopes::Operation;
use super::tools::{after, next_cursor};
use super::types::{ObjectType, RecordId, id_text};
use crate::error::{Crm, CrmProblem, ToolError};
use crate::http::{Effect, Method};
use crate::tool::{Session, Tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// A record to associate with.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AssociationInput {
    /// contacts, companies or deals (or another type with a default association).
    pub to_object_type: ObjectType,
    pub to_record_id: RecordId,
}

/// HubSpot's default (HUBSPOT_DEFINED) association type ids, from HubSpot's associations guide.
pub fn default_association_type(from: &ObjectType, to: &ObjectType) -> Option<u32> {
    use ObjectType::*;
    Some(match (from, to) {
        (Notes, Contacts) => 202,
        (Notes, Companies) => 190,
        (Notes, Deals) => 214,
        (Calls, Contacts) => 194,
        (Calls, Companies) => 182,
        (Calls, Deals) => 206,
        (Emails, Contacts) => 198,
        (Emails, Companies) => 186,
        (Emails, Deals) => 210,
        (Meetings, Contacts) => 200,
        (Meetings, Companies) => 188,
        (Meetings, Deals) => 212,
        (Tasks, Contacts) => 204,
        (Tasks, Companies) => 192,
        (Tasks, Deals) => 216,
        (Contacts, Companies) => 279,
        (Companies, Contacts) => 280,
        (Deals, Contacts) => 3,
        (Contacts, Deals) => 4,
        (Deals, Companies) => 341,
        (Companies, Deals) => 342,
        _ => return None,
    })
}

pub fn associations_body(
    from: &ObjectType,
    list: &[AssociationInput],
) -> Result<Vec<Value>, ToolError> {
    list.iter()
        .map(|a| {
            let type_id = default_association_type(from, &a.to_object_type).ok_or_else(|| {
                ToolError::invalid(format!(
                    "no default association from {from} to {}: create the record first, then use crma_create_association",
                    a.to_object_type
                ))
            })?;
            Ok(json!({"to": {"id": a.to_record_id.to_string()},
                      "types": [{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": type_id}]}))
        })
        .collect()
}

/// The path segment of an object type in v4 association paths.
pub fn v4_segment(object: &ObjectType) -> &str {
    match object.type_id() {
        Some(id) if object.is_activity() => id,
        _ => object.as_str(),
    }
}

/// One association from the v4 read answer, in the tool's output shape.
fn map_association(item: &Value) -> Option<Value> {
    // HubSpot writes `toObjectId` as a number, some answers as a string.
    let id = id_text(&item["toObjectId"])?;
    let types: Vec<Value> = item["associationTypes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| json!({"category": t["category"], "type_id": t["typeId"], "label": t["label"]}))
        .collect();
    Some(json!({"to_object_id": id, "association_types": types}))
}

/// Largest page HubSpot's v4 read returns.
const PAGE_LIMIT: u32 = 500;
/// Default and largest number of associations one call reads.
const DEFAULT_BUDGET: u32 = 1_000;
const MAX_BUDGET: u32 = 10_000;

/// Input of `crma_get_associations`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetAssociationsInput {
    pub object_type: ObjectType,
    pub record_id: RecordId,
    /// The type of the associated records, e.g. contacts.
    pub to_object_type: ObjectType,
    /// Most associations to read in this call (1-10000, default 1000); every page up to it.
    #[serde(default)]
    pub max_results: Option<u32>,
    /// next_cursor from a previous call that stopped at its budget.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// `crma_get_associations`.
pub struct GetAssociations;

impl Tool for GetAssociations {
    const NAME: &'static str = "crma_get_associations";
    const DESCRIPTION: &'static str = "List the records of one type associated with a HubSpot         record (e.g. the contacts of a company, the deals of a contact, the notes of a deal):         each to_object_id with its association types and labels. Reads every page up to         max_results (default 1000); next_cursor continues. Fetch details with         crma_get_record or crma_search_records.";
    const READ_ONLY: bool = true;
    type Input = GetAssociationsInput;
    type Output = Value;

    fn run(
        input: GetAssociationsInput,
        session: &mut Session<'_>,
    ) -> Result<Self::Output, ToolError> {
        let budget = input.max_results.unwrap_or(DEFAULT_BUDGET);
        if !(1..=MAX_BUDGET).contains(&budget) {
            return Err(ToolError::invalid(format!(
                "max_results must be from 1 to {MAX_BUDGET}"
            )));
        }
        let from = v4_segment(&input.object_type).to_string();
        let to = v4_segment(&input.to_object_type).to_string();
        let id = input.record_id.to_string();
        let mut cursor = after(&input.cursor)?;
        let mut results = Vec::new();
        loop {
            let remaining = budget - results.len() as u32;
            let mut query = vec![("limit", remaining.min(PAGE_LIMIT).to_string())];
            if let Some(after) = &cursor {
                query.push(("after", after.clone()));
            }
            let call = Call::get(
                Operation::ReadAssociations {
                    from: input.object_type.clone(),
                },
                vec!["crm", "v4", "objects", &from, &id, "associations", &to],
                format!("{} record {id}", input.object_type),
            )
            .with_query(query);
            let answer = client::send(session, call)?;
            let page = client::results(&answer, "associations")?;
            results.extend(page.iter().filter_map(map_association));
            let next = next_cursor(&answer);
            if next.is_some() && next == cursor {
                return Err(CrmProblem::unexpected_answer(
                    Crm::Hubspot,
                    200,
                    "the associations answer repeated its paging cursor",
                )
                .into());
            }
            cursor = next;
            if cursor.is_none() || results.len() as u32 >= budget || page.is_empty() {
                break;
            }
        }
        let mut out = json!({
            "object_type": input.object_type.as_str(),
            "record_id": id,
            "to_object_type": input.to_object_type.as_str(),
            "count": results.len(),
            "results": results,
        });
        if let Some(cursor) = cursor {
            out["next_cursor"] = cursor.into();
        }
        Ok(out)
    }
}

/// Input of `crma_create_association`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateAssociationInput {
    pub object_type: ObjectType,
    pub record_id: RecordId,
    pub to_object_type: ObjectType,
    pub to_record_id: RecordId,
}

/// `crma_create_association`: HubSpot's default (unlabeled) association, v4.
pub struct CreateAssociation;

impl Tool for CreateAssociation {
    const NAME: &'static str = "crma_create_association";
    const DESCRIPTION: &'static str = "Associate two existing HubSpot records with HubSpot's         default association (e.g. a contact with a company, a deal with a contact, a note with a         deal). Creating one that already exists changes nothing. Sent once, never retried.";
    const READ_ONLY: bool = false;
    type Input = CreateAssociationInput;
    type Output = Value;

    fn run(
        input: CreateAssociationInput,
        session: &mut Session<'_>,
    ) -> Result<Self::Output, ToolError> {
        if input.object_type == input.to_object_type && input.record_id == input.to_record_id {
            return Err(ToolError::invalid(
                "a record cannot be associated with itself",
            ));
        }
        let from = v4_segment(&input.object_type).to_string();
        let to = v4_segment(&input.to_object_type).to_string();
        let (id, to_id) = (input.record_id.to_string(), input.to_record_id.to_string());
        let call = Call::get(
            Operation::CreateAssociation {
                from: input.object_type.clone(),
                to: input.to_object_type.clone(),
            },
            vec![
                "crm",
                "v4",
                "objects",
                &from,
                &id,
                "associations",
                "default",
                &to,
                &to_id,
            ],
            format!(
                "{} record {id} or {} record {to_id}",
                input.object_type, input.to_object_type
            ),
        )
        .with_method(Method::Put, Effect::Write);
        let answer = client::send(session, call)?;
        let types: Vec<Value> = answer["results"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| json!({"category": r["associationSpec"]["associationCategory"], "type_id": r["associationSpec"]["associationTypeId"]}))
            .collect();
        Ok(json!({
            "object_type": input.object_type.as_str(), "record_id": id,
            "to_object_type": input.to_object_type.as_str(), "to_record_id": to_id,
            "associated": true, "association_types": types,
        }))
    }
}
