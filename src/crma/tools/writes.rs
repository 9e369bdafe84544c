//! The record writes: `crma_create_record`, `crma_update_record` and `crma_merge_companies`.
//! Each is sent exactly once; an answer that cannot be read after HubSpot accepted the write
//! is an unknown outcome, never a guess.

use super::PropertyValues;
use crate::crma::associations::{AssociationInput, associations_body};
use crate::crma::client::{self, Call};
use crate::crma::properties;
use crate::crma::scopes::Operation;
use crate::crma::types::{ObjectType, RecordId};
use crate::error::ToolError;
use crate::http::WriteMethod;
use crate::mapping::CreatedRecord;
use crate::tool::{CrmEffect, Session, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The record HubSpot answers a create or a merge with (`SimplePublicObject`: "Create records"
/// on <https://developers.hubspot.com/docs/api/crm/objects>, and
/// <https://developers.hubspot.com/docs/api-reference/crm-companies-v3/basic/post-crm-v3-objects-companies-merge>).
/// Only its required `id` is read; the tools answer with ids, not with the record.
#[derive(Debug, Deserialize)]
struct WrittenRecord {
    id: String,
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

/// What `crma_create_record` answers: the new record's id.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CreatedOutput {
    /// The new record's HubSpot id.
    pub(crate) id: String,
    /// Its object type, e.g. "contacts".
    object_type: String,
    /// Present when the record was created but its id could not be kept locally: the record
    /// exists in HubSpot all the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) warning: Option<String>,
}

impl Tool for CreateRecord {
    const NAME: &'static str = "crma_create_record";
    const DESCRIPTION: &'static str = "Create one HubSpot record (contact, company, deal, ...) \
        with properties and optional associations. Sent exactly once: an unknown outcome is \
        reported, not retried, so search before creating again.";
    const TITLE: &'static str = "Create a HubSpot record";
    const EFFECT: CrmEffect = CrmEffect::Adds { idempotent: false };
    type Input = CreateInput;
    type Output = CreatedOutput;

    fn run(input: CreateInput, session: &mut Session<'_>) -> Result<CreatedOutput, ToolError> {
        let wire = input.properties.to_wire()?;
        if wire.is_empty() {
            return Err(ToolError::invalid(
                "properties is empty: give at least one property",
            ));
        }
        create_record(
            session,
            &input.object_type,
            wire,
            &input.associations,
            "search for it before creating it again",
        )
    }
}

/// Creates one record (records and activities alike): the associations are checked before
/// anything is sent, the record is sent once, and its returned id is kept in the mapping store.
/// `before_redo` tells the user how to check when no id comes back.
pub(crate) fn create_record(
    session: &mut Session<'_>,
    object_type: &ObjectType,
    mut wire: Map<String, Value>,
    associations: &[AssociationInput],
    before_redo: &str,
) -> Result<CreatedOutput, ToolError> {
    let associations = associations_body(object_type, associations)?;
    properties::normalise_dates(session, object_type, &mut wire)?;
    let mut body = json!({"properties": wire});
    if !associations.is_empty() {
        body["associations"] = associations.into();
    }
    let object = object_type.as_str().to_string();
    let call = Call::get(
        Operation::Write(object_type.clone()),
        vec!["crm", "v3", "objects", &object],
        format!("new {object} record"),
    )
    .writing(WriteMethod::Post, Some(body));
    let answer = client::send(session, call)?;
    let WrittenRecord { id } = WrittenRecord::deserialize(&answer).map_err(|err| {
        ToolError::OutcomeUnknown(format!(
            "HubSpot accepted the new {object} record but its answer has no record id ({err}); \
             {before_redo}"
        ))
    })?;
    let warning = session.remember_created(CreatedRecord {
        crm: "hubspot",
        object_type: object.clone(),
        record_id: id.clone(),
    });
    Ok(CreatedOutput {
        id,
        object_type: object,
        warning,
    })
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

/// What `crma_update_record` answers: which record changed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct UpdatedOutput {
    /// The changed record's HubSpot id.
    id: String,
    /// Its object type, e.g. "deals".
    object_type: String,
    /// Always true: HubSpot accepted the change.
    updated: bool,
}

impl Tool for UpdateRecord {
    const NAME: &'static str = "crma_update_record";
    const DESCRIPTION: &'static str = "Update properties of one HubSpot record by object type \
        and id; only the given properties change. Sent once, never retried.";
    const TITLE: &'static str = "Update a HubSpot record";
    const EFFECT: CrmEffect = CrmEffect::Changes { idempotent: true };
    type Input = UpdateInput;
    type Output = UpdatedOutput;

    fn run(input: UpdateInput, session: &mut Session<'_>) -> Result<UpdatedOutput, ToolError> {
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
        .writing(WriteMethod::Patch, Some(json!({"properties": wire})));
        // A success status is the whole answer: the record HubSpot returns is not needed.
        client::send(session, call)?;
        Ok(UpdatedOutput {
            id,
            object_type: object,
            updated: true,
        })
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

/// What `crma_merge_companies` answers: the company that remains and the one merged into it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MergedOutput {
    /// The id of the company that remains, as HubSpot's answer names it.
    id: String,
    /// The id of the duplicate that was merged into it and no longer exists on its own.
    merged_id: String,
}

impl Tool for MergeCompanies {
    const NAME: &'static str = "crma_merge_companies";
    const DESCRIPTION: &'static str = "Merge a duplicate HubSpot company into a primary one \
        (companies only). The primary keeps its id; the duplicate's data and associations move \
        into it. Not reversible from here: confirm with the user first.";
    const TITLE: &'static str = "Merge two HubSpot companies";
    const EFFECT: CrmEffect = CrmEffect::Changes { idempotent: false };
    type Input = MergeInput;
    type Output = MergedOutput;

    fn run(input: MergeInput, session: &mut Session<'_>) -> Result<MergedOutput, ToolError> {
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
        .writing(WriteMethod::Post, Some(body));
        let WrittenRecord { id } = client::send_for(session, call)?;
        Ok(MergedOutput {
            id,
            merged_id: input.merge_id.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answer of HubSpot's merge reference (cited on [`WrittenRecord`]), as it shows it.
    #[test]
    fn a_written_record_reads_its_id() {
        let record: WrittenRecord = serde_json::from_value(json!({
            "archived": false, "createdAt": "2019-10-30T03:30:17.883Z", "id": "512",
            "properties": {"property_checkbox": "false", "property_date": "1572480000000", "property_string": "value"},
            "updatedAt": "2019-12-07T16:50:06.678Z"
        }))
        .unwrap();
        assert_eq!(record.id, "512");
    }

    #[test]
    fn a_written_record_without_its_id_is_refused_by_name() {
        let err =
            serde_json::from_value::<WrittenRecord>(json!({"properties": {}, "archived": false}))
                .unwrap_err();
        assert!(err.to_string().contains("missing field `id`"), "{err}");
        // An id is text in HubSpot's answers; a number is not taken for one.
        assert!(serde_json::from_value::<WrittenRecord>(json!({"id": 512})).is_err());
    }
}
