//! Associations between HubSpot records: the default association type ids used when creating
//! records and activities, and the v4 read and create-default tools.
//!
//! v4 paths take activity types by their type id (`0-47` for meetings and so on): HubSpot's
//! associations guide, "Associate records" / "Retrieve associated records".

use super::client::{self, Call};
use super::scopes::Operation;
use super::tools::after;
use super::types::{AnswerId, Collection, ObjectType, RecordId, decode};
use crate::error::{Crm, CrmProblem, ToolError};
use crate::http::WriteMethod;
use crate::tool::{CrmEffect, Session, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A record to associate with.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AssociationInput {
    /// contacts, companies or deals (or another type with a default association).
    pub to_object_type: ObjectType,
    /// The id of the record to associate with.
    // Rustdoc only: the input schema keeps `RecordId`'s own description.
    #[schemars(description = "")]
    pub to_record_id: RecordId,
}

/// HubSpot's default (HUBSPOT_DEFINED) association type ids, from HubSpot's associations guide.
fn default_association_type(from: &ObjectType, to: &ObjectType) -> Option<u32> {
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

/// The `associations` array of a v3 create body: each record linked to a new record of type
/// `from` with HubSpot's default association type; a pair without one is invalid input.
pub(crate) fn associations_body(
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
fn v4_segment(object: &ObjectType) -> &str {
    match object.type_id() {
        Some(id) if object.is_activity() => id,
        _ => object.as_str(),
    }
}

/// One row of `GET /crm/v4/objects/{objectType}/{objectId}/associations/{toObjectType}`
/// (<https://developers.hubspot.com/docs/api-reference/crm-associations-v4/basic/get-crm-v4-objects-objectType-objectId-associations-toObjectType>):
/// `{"toObjectId": 101, "associationTypes": [{"category": "HUBSPOT_DEFINED", "typeId": 214,
/// "label": null}]}`, both fields required. HubSpot writes `toObjectId` as a number, and its
/// reference as a string, so it is read either way.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AssociationRow {
    to_object_id: AnswerId,
    association_types: Vec<AssociationTypeRow>,
}

/// An association type of a row: `category` and `typeId` required, `label` only for labeled
/// associations.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AssociationTypeRow {
    category: String,
    type_id: i64,
    label: Option<String>,
}

/// What `crma_get_associations` answers.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Associations {
    /// The type of the record asked about.
    object_type: String,
    /// The record asked about.
    record_id: String,
    /// The type of the associated records.
    to_object_type: String,
    /// How many associations are in results.
    count: usize,
    /// The associated records, each with its association types.
    results: Vec<Association>,
    /// Present when more associations remain: pass it as cursor to read on.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    next_cursor: Option<String>,
}

/// One associated record.
#[derive(Debug, Serialize, JsonSchema)]
struct Association {
    /// The associated record's id (of to_object_type).
    to_object_id: String,
    /// How the two records are associated.
    association_types: Vec<AssociationType>,
}

/// One association type between two records.
#[derive(Debug, Serialize, JsonSchema)]
struct AssociationType {
    /// HUBSPOT_DEFINED, USER_DEFINED or INTEGRATOR_DEFINED.
    category: String,
    /// The association type id.
    type_id: i64,
    /// The association label (e.g. "Decision maker"); null for unlabeled associations.
    label: Option<String>,
}

impl From<AssociationRow> for Association {
    fn from(row: AssociationRow) -> Self {
        Association {
            to_object_id: row.to_object_id.into(),
            association_types: row
                .association_types
                .into_iter()
                .map(|t| AssociationType {
                    category: t.category,
                    type_id: t.type_id,
                    label: t.label,
                })
                .collect(),
        }
    }
}

/// Largest page HubSpot's v4 read returns.
const PAGE_LIMIT: u32 = 500;
/// Default and largest number of associations one call reads.
const DEFAULT_BUDGET: u32 = 1_000;
const MAX_BUDGET: u32 = 10_000;

/// Input of `crma_get_associations`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetAssociationsInput {
    object_type: ObjectType,
    record_id: RecordId,
    /// The type of the associated records, e.g. contacts.
    to_object_type: ObjectType,
    /// Most associations to read in this call (1-10000, default 1000); every page up to it.
    #[serde(default)]
    max_results: Option<u32>,
    /// next_cursor from a previous call that stopped at its budget.
    #[serde(default)]
    cursor: Option<String>,
}

/// `crma_get_associations`.
pub(crate) struct GetAssociations;

impl Tool for GetAssociations {
    const NAME: &'static str = "crma_get_associations";
    const DESCRIPTION: &'static str = "List the records of one type associated with a HubSpot record (e.g. the contacts \
        of a company, the deals of a contact, the notes of a deal): each to_object_id \
        with its association types and labels. Reads every page up to max_results \
        (default 1000); next_cursor continues. Fetch details with crma_get_record or \
        crma_search_records.";
    const TITLE: &'static str = "List a HubSpot record's associations";
    const EFFECT: CrmEffect = CrmEffect::Reads;
    type Input = GetAssociationsInput;
    type Output = Associations;

    fn reads(input: &GetAssociationsInput) -> crate::policy::ReadScope<'_> {
        crate::policy::ReadScope {
            records: input.max_results.map(Into::into),
            ..Default::default()
        }
    }

    fn cap_records(input: &mut GetAssociationsInput, cap: u32) {
        input.max_results = crate::tool::capped(input.max_results, DEFAULT_BUDGET, cap);
    }

    fn run(
        input: GetAssociationsInput,
        session: &mut Session<'_>,
    ) -> Result<Associations, ToolError> {
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
        let mut results: Vec<Association> = Vec::new();
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
            let page: Collection<AssociationRow> =
                decode(client::send(session, call)?, "associations")?;
            let next = page.next_after().map(str::to_string);
            if next.is_some() && next == cursor {
                return Err(CrmProblem::unexpected_answer(
                    Crm::Hubspot,
                    200,
                    "the associations answer repeated its paging cursor",
                )
                .into());
            }
            let page_was_empty = page.results.is_empty();
            results.extend(page.results.into_iter().map(Association::from));
            cursor = next;
            if cursor.is_none() || results.len() as u32 >= budget || page_was_empty {
                break;
            }
        }
        Ok(Associations {
            object_type: input.object_type.as_str().to_string(),
            record_id: id,
            to_object_type: input.to_object_type.as_str().to_string(),
            count: results.len(),
            results,
            next_cursor: cursor,
        })
    }
}

/// HubSpot's answer to `PUT
/// /crm/v4/objects/{fromObjectType}/{fromObjectId}/associations/default/{toObjectType}/{toObjectId}`
/// (the same endpoint in HubSpot's current reference:
/// <https://developers.hubspot.com/docs/api-reference/latest/crm/associations/associate-records/update-association>):
/// `{"status": "COMPLETE", "results": [{"from": {"id": "5"}, "to": {"id": "6"},
/// "associationSpec": {"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": 279}}],
/// ...}`. `results` and each `associationSpec` are required.
#[derive(Debug, Deserialize)]
struct CreatedAssociations {
    results: Vec<CreatedAssociation>,
}

/// One association the default PUT made (one per direction).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreatedAssociation {
    association_spec: AssociationSpec,
}

/// An association type as writes name it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AssociationSpec {
    association_category: String,
    association_type_id: i64,
}

/// Input of `crma_create_association`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateAssociationInput {
    object_type: ObjectType,
    record_id: RecordId,
    to_object_type: ObjectType,
    to_record_id: RecordId,
}

/// What `crma_create_association` answers.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct AssociationCreated {
    /// The type of the first record.
    object_type: String,
    /// The first record.
    record_id: String,
    /// The type of the second record.
    to_object_type: String,
    /// The second record.
    to_record_id: String,
    /// Always true: the records are associated (also when they already were).
    associated: bool,
    /// The association types HubSpot made, one per direction.
    association_types: Vec<CreatedAssociationType>,
}

/// An association type HubSpot made.
#[derive(Debug, Serialize, JsonSchema)]
struct CreatedAssociationType {
    /// HUBSPOT_DEFINED for the default association.
    category: String,
    /// The association type id, e.g. 279 for contact to company.
    type_id: i64,
}

/// `crma_create_association`: HubSpot's default (unlabeled) association, v4.
pub(crate) struct CreateAssociation;

impl Tool for CreateAssociation {
    const NAME: &'static str = "crma_create_association";
    const DESCRIPTION: &'static str = "Associate two existing HubSpot records with HubSpot's default association (e.g. \
        a contact with a company, a deal with a contact, a note with a deal). Creating \
        one that already exists changes nothing. Sent once, never retried.";
    const TITLE: &'static str = "Associate two HubSpot records";
    const EFFECT: CrmEffect = CrmEffect::Adds { idempotent: true };
    type Input = CreateAssociationInput;
    type Output = AssociationCreated;

    fn run(
        input: CreateAssociationInput,
        session: &mut Session<'_>,
    ) -> Result<AssociationCreated, ToolError> {
        if input.object_type == input.to_object_type && input.record_id == input.to_record_id {
            return Err(ToolError::invalid(
                "a record cannot be associated with itself",
            ));
        }
        let from = v4_segment(&input.object_type).to_string();
        let to = v4_segment(&input.to_object_type).to_string();
        let (id, to_id) = (input.record_id.to_string(), input.to_record_id.to_string());
        let subject = format!(
            "{} record {id} or {} record {to_id}",
            input.object_type, input.to_object_type
        );
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
            subject.clone(),
        )
        .writing(WriteMethod::Put, None);
        // HubSpot said yes; an answer that cannot be read leaves only the details unknown.
        let created: CreatedAssociations = serde_json::from_value(client::send(session, call)?)
            .map_err(|err| {
                ToolError::OutcomeUnknown(format!(
                    "HubSpot accepted the association but its answer could not be read ({err}); \
                     check with crma_get_associations on {subject} before redoing it"
                ))
            })?;
        Ok(AssociationCreated {
            object_type: input.object_type.as_str().to_string(),
            record_id: id,
            to_object_type: input.to_object_type.as_str().to_string(),
            to_record_id: to_id,
            associated: true,
            association_types: created
                .results
                .into_iter()
                .map(|r| CreatedAssociationType {
                    category: r.association_spec.association_category,
                    type_id: r.association_spec.association_type_id,
                })
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness;
    use crate::retry::tests::{ScriptedTransport, response};

    #[test]
    fn association_rows_read_numeric_and_string_ids_and_labels() {
        // Rows as GET /crm/v4/objects/deals/5/associations/contacts answers them (page cited on
        // `AssociationRow`).
        let page: Collection<AssociationRow> = decode(
            json!({"results": [
                {"toObjectId": 101, "associationTypes": [
                    {"category": "HUBSPOT_DEFINED", "typeId": 3, "label": null}]},
                {"toObjectId": "102", "associationTypes": [
                    {"category": "USER_DEFINED", "typeId": 7, "label": "Decision maker"}]}
            ], "paging": {"next": {"after": "MTAy", "link": "?after=MTAy"}}}),
            "associations",
        )
        .unwrap();
        assert_eq!(page.next_after(), Some("MTAy"));
        let out: Vec<Value> = page
            .results
            .into_iter()
            .map(|row| serde_json::to_value(Association::from(row)).unwrap())
            .collect();
        assert_eq!(
            out,
            [
                json!({"to_object_id": "101", "association_types": [
                    {"category": "HUBSPOT_DEFINED", "type_id": 3, "label": null}]}),
                json!({"to_object_id": "102", "association_types": [
                    {"category": "USER_DEFINED", "type_id": 7, "label": "Decision maker"}]}),
            ]
        );
    }

    #[test]
    fn an_association_row_without_its_target_is_an_unexpected_answer() {
        let err = decode::<Collection<AssociationRow>>(
            json!({"results": [{"associationTypes": []}]}),
            "associations",
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("missing field `toObjectId`"),
            "{err}"
        );
        let err = decode::<Collection<AssociationRow>>(
            json!({"results": [{"toObjectId": 6, "associationTypes": [{"category": "HUBSPOT_DEFINED"}]}]}),
            "associations",
        )
        .unwrap_err();
        assert!(err.to_string().contains("missing field `typeId`"), "{err}");
    }

    #[test]
    fn the_default_association_answer_names_both_directions() {
        // The answer of the default PUT (page cited on `CreatedAssociations`).
        let created: CreatedAssociations = serde_json::from_value(json!({
            "status": "COMPLETE",
            "results": [
                {"from": {"id": "5"}, "to": {"id": "6"}, "associationSpec":
                    {"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": 279}},
                {"from": {"id": "6"}, "to": {"id": "5"}, "associationSpec":
                    {"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": 280}}
            ],
            "startedAt": "2025-01-01T00:00:00Z", "completedAt": "2025-01-01T00:00:01Z"
        }))
        .unwrap();
        let ids: Vec<i64> = created
            .results
            .iter()
            .map(|r| r.association_spec.association_type_id)
            .collect();
        assert_eq!(ids, [279, 280]);
        assert!(
            serde_json::from_value::<CreatedAssociations>(json!({"status": "COMPLETE"})).is_err()
        );
    }

    #[test]
    fn an_unreadable_answer_to_the_default_put_is_an_unknown_outcome() {
        // HubSpot said yes but left out `results`: the association exists, its details do not
        // come back, and nothing is sent again.
        let mut t = ScriptedTransport::new([response(200, r#"{"status":"COMPLETE"}"#)]);
        let err = harness::call(
            &mut t,
            &harness::ctx(&["crm.objects.contacts.write"], None),
            &harness::config(&[]),
            CreateAssociation::NAME,
            &json!({"object_type": "contacts", "record_id": "5", "to_object_type": "companies", "to_record_id": "6"}),
        )
        .unwrap_err();
        assert!(
            matches!(&err, ToolError::OutcomeUnknown(m) if m.contains("missing field `results`")),
            "{err:?}"
        );
        assert_eq!(t.sent.len(), 1);
    }
}
