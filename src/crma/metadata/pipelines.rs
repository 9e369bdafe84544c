//! `crma_get_pipeline_stages`: the stages of one pipeline, or every pipeline of a type with its
//! stages, with HubSpot's string metadata read as a win probability and a closed flag.

use crate::crma::client::{self, Call};
use crate::crma::scopes::Operation;
use crate::crma::types::{Collection, ObjectType, decode};
use crate::error::ToolError;
use crate::schema::string_schema;
use crate::tool::{CrmEffect, Session, Tool};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// A pipeline id: `default` or HubSpot's digits, or a custom id of letters, digits, `-`, `_`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub(crate) struct PipelineId(String);

impl TryFrom<String> for PipelineId {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        let text = text.trim();
        if !text.is_empty()
            && text.len() <= 64
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            Ok(PipelineId(text.to_string()))
        } else {
            Err(format!(
                "{text:?} is not a pipeline id: use \"default\" or an id from crma_get_pipeline_stages without pipeline_id"
            ))
        }
    }
}

impl JsonSchema for PipelineId {
    fn schema_name() -> Cow<'static, str> {
        "PipelineId".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        string_schema(
            "^[A-Za-z0-9_-]{1,64}$",
            "Pipeline id, e.g. \"default\" for the standard deal pipeline.",
        )
    }
}

/// Input of `crma_get_pipeline_stages`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PipelineStagesInput {
    /// deals, or a custom object type with pipelines.
    object_type: ObjectType,
    /// The pipeline; omit it to list every pipeline of the type with its stages.
    #[serde(default)]
    pipeline_id: Option<PipelineId>,
}

/// A pipeline, one row of `GET /crm/v3/pipelines/{objectType}`
/// (<https://developers.hubspot.com/docs/api-reference/legacy/crm/pipelines/get-pipelines>),
/// where `id`, `label`, `displayOrder` and `stages` are all required.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePipeline {
    id: String,
    label: String,
    display_order: i64,
    stages: Vec<WireStage>,
}

/// A stage, one row of `GET /crm/v3/pipelines/{objectType}/{pipelineId}/stages`
/// (<https://developers.hubspot.com/docs/api-reference/legacy/crm/pipelines/stages/get-pipeline-stages>)
/// or of a pipeline's `stages`: `{"id": "closedwon", "label": "Closed won", "displayOrder": 5,
/// "metadata": {"isClosed": "true", "probability": "1.0"}, "archived": false, ...}`.
///
/// HubSpot documents `displayOrder`, `metadata` and `archived` as always present too; this tool
/// has always read them leniently (a stage without them is listed, their outputs null), and it
/// still does, so only `id` and `label` are required.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireStage {
    id: String,
    label: String,
    display_order: Option<i64>,
    metadata: Option<StageMetadata>,
    archived: Option<bool>,
}

/// A stage's `metadata`: a map of strings in HubSpot's reference (`"probability": "0.2"`, the
/// deal win probability; `"isClosed": "true"`), of which these two are read. Some answers carry
/// the bare number or boolean, so each value is read in any of the three forms.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StageMetadata {
    probability: Option<MetadataValue>,
    is_closed: Option<MetadataValue>,
}

/// One metadata value, as HubSpot writes it.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum MetadataValue {
    Text(String),
    Number(serde_json::Number),
    Flag(bool),
}

impl MetadataValue {
    fn text(&self) -> String {
        match self {
            MetadataValue::Text(text) => text.clone(),
            MetadataValue::Number(number) => number.to_string(),
            MetadataValue::Flag(flag) => flag.to_string(),
        }
    }
}

/// What `crma_get_pipeline_stages` answers.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct PipelineStages {
    /// The object type asked about, e.g. deals.
    object_type: String,
    #[serde(flatten)]
    listing: Listing,
}

/// One pipeline's stages when pipeline_id was given; every pipeline otherwise.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
enum Listing {
    /// The stages of the pipeline asked for.
    OnePipeline {
        /// The pipeline asked for.
        pipeline_id: String,
        /// Its stages, in HubSpot's order.
        stages: Vec<Stage>,
    },
    /// Every pipeline of the object type.
    AllPipelines {
        /// The pipelines, each with its stages.
        pipelines: Vec<Pipeline>,
    },
}

/// A pipeline with its stages.
#[derive(Debug, Serialize, JsonSchema)]
struct Pipeline {
    /// The pipeline id, to pass as pipeline_id (e.g. "default").
    id: String,
    /// The pipeline's name in HubSpot.
    label: String,
    /// Its position among the type's pipelines.
    display_order: i64,
    /// Its stages.
    stages: Vec<Stage>,
}

/// A pipeline stage. Deal stages are stored by id: write the id to dealstage.
#[derive(Debug, Serialize, JsonSchema)]
struct Stage {
    /// The stage id, the value records store (e.g. closedwon).
    id: String,
    /// The stage's name in HubSpot (e.g. "Closed won").
    label: String,
    /// Its position in the pipeline; null when HubSpot did not say.
    display_order: Option<i64>,
    /// The win probability from 0.0 to 1.0 (deal stages); null when the stage has none.
    probability: Option<f64>,
    /// Whether a record in this stage is closed; null when HubSpot did not say.
    is_closed: Option<bool>,
    /// Whether the stage is archived; null when HubSpot did not say.
    archived: Option<bool>,
}

impl From<WireStage> for Stage {
    fn from(stage: WireStage) -> Self {
        let metadata = stage.metadata.as_ref();
        let probability = metadata
            .and_then(|m| m.probability.as_ref())
            .and_then(|p| p.text().parse::<f64>().ok())
            .filter(|p| p.is_finite());
        let is_closed = metadata
            .and_then(|m| m.is_closed.as_ref())
            .map(|closed| closed.text() == "true");
        Stage {
            id: stage.id,
            label: stage.label,
            display_order: stage.display_order,
            probability,
            is_closed,
            archived: stage.archived,
        }
    }
}

impl From<WirePipeline> for Pipeline {
    fn from(pipeline: WirePipeline) -> Self {
        Pipeline {
            id: pipeline.id,
            label: pipeline.label,
            display_order: pipeline.display_order,
            stages: pipeline.stages.into_iter().map(Stage::from).collect(),
        }
    }
}

/// `crma_get_pipeline_stages`.
pub(crate) struct GetPipelineStages;

impl Tool for GetPipelineStages {
    const NAME: &'static str = "crma_get_pipeline_stages";
    const DESCRIPTION: &'static str = "Get the stages of a HubSpot pipeline (deals or a custom \
        object): id, label, order, win probability, closed or not. Deal stages are stored by \
        id (e.g. closedwon); use this to read or set dealstage. Without pipeline_id, lists every \
        pipeline of the type with its stages.";
    const TITLE: &'static str = "List HubSpot pipelines and stages";
    const EFFECT: CrmEffect = CrmEffect::Reads;
    type Input = PipelineStagesInput;
    type Output = PipelineStages;

    fn run(
        input: PipelineStagesInput,
        session: &mut Session<'_>,
    ) -> Result<PipelineStages, ToolError> {
        if !matches!(input.object_type, ObjectType::Deals | ObjectType::Custom(_)) {
            return Err(ToolError::invalid(format!(
                "{} have no pipelines: pipelines exist for deals and custom object types",
                input.object_type
            )));
        }
        let object = input.object_type.as_str().to_string();
        let operation = Operation::ReadPipelines(input.object_type.clone());
        let listing = match input.pipeline_id {
            Some(PipelineId(pipeline)) => {
                let call = Call::get(
                    operation,
                    vec!["crm", "v3", "pipelines", &object, &pipeline, "stages"],
                    format!("{object} pipeline {pipeline}"),
                );
                let stages: Collection<WireStage> = decode(client::send(session, call)?, "stages")?;
                Listing::OnePipeline {
                    pipeline_id: pipeline,
                    stages: stages.results.into_iter().map(Stage::from).collect(),
                }
            }
            None => {
                let call = Call::get(
                    operation,
                    vec!["crm", "v3", "pipelines", &object],
                    format!("{object} pipelines"),
                );
                let pipelines: Collection<WirePipeline> =
                    decode(client::send(session, call)?, "pipelines")?;
                Listing::AllPipelines {
                    pipelines: pipelines.results.into_iter().map(Pipeline::from).collect(),
                }
            }
        };
        Ok(PipelineStages {
            object_type: object,
            listing,
        })
    }
}

/// A pipeline's name and its stages' names, in HubSpot's display order: what turns stored
/// pipeline and stage ids (`default`, `closedwon`) into words.
#[derive(Debug)]
pub(crate) struct PipelineNames {
    /// The pipeline id.
    pub(crate) id: String,
    /// Its name in HubSpot.
    pub(crate) label: String,
    /// Its stages as (id, name), in display order.
    pub(crate) stages: Vec<(String, String)>,
}

/// Every pipeline of `object_type` with its stages' names, pipelines and stages in display
/// order.
pub(crate) fn pipeline_names(
    session: &mut Session<'_>,
    object_type: &ObjectType,
) -> Result<Vec<PipelineNames>, ToolError> {
    let object = object_type.as_str().to_string();
    let call = Call::get(
        Operation::ReadPipelines(object_type.clone()),
        vec!["crm", "v3", "pipelines", &object],
        format!("{object} pipelines"),
    );
    let mut pipelines: Collection<WirePipeline> =
        decode(client::send(session, call)?, "pipelines")?;
    pipelines.results.sort_by_key(|p| p.display_order);
    Ok(pipelines
        .results
        .into_iter()
        .map(|mut p| {
            p.stages
                .sort_by_key(|s| s.display_order.unwrap_or(i64::MAX));
            PipelineNames {
                id: p.id,
                label: p.label,
                stages: p.stages.into_iter().map(|s| (s.id, s.label)).collect(),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stage_metadata_strings_become_a_probability_and_a_closed_flag() {
        // A stage as GET /crm/v3/pipelines/deals/default/stages answers it (page cited on
        // `WireStage`), metadata as strings; then the same values bare, and none at all.
        let stages: Collection<WireStage> = decode(
            json!({"results": [
                {"id": "closedwon", "label": "Closed Won", "displayOrder": 5,
                 "metadata": {"isClosed": "true", "probability": "1.0"}, "archived": false,
                 "createdAt": "2025-01-10T09:00:00Z", "updatedAt": "2025-01-10T09:00:00Z"},
                {"id": "qualified", "label": "Qualified", "displayOrder": 1,
                 "metadata": {"isClosed": false, "probability": 0.4}, "archived": false},
                {"id": "a", "label": "A"}
            ]}),
            "stages",
        )
        .unwrap();
        let out: Vec<serde_json::Value> = stages
            .results
            .into_iter()
            .map(|s| serde_json::to_value(Stage::from(s)).unwrap())
            .collect();
        assert_eq!(
            out,
            [
                json!({"id": "closedwon", "label": "Closed Won", "display_order": 5,
                       "probability": 1.0, "is_closed": true, "archived": false}),
                json!({"id": "qualified", "label": "Qualified", "display_order": 1,
                       "probability": 0.4, "is_closed": false, "archived": false}),
                json!({"id": "a", "label": "A", "display_order": null, "probability": null,
                       "is_closed": null, "archived": null}),
            ]
        );
    }

    #[test]
    fn a_pipeline_reads_with_its_stages() {
        // A deal pipeline as GET /crm/v3/pipelines/deals answers it (page cited on
        // `WirePipeline`).
        let pipelines: Collection<WirePipeline> = decode(
            json!({"results": [{"id": "default", "label": "Sales Pipeline", "displayOrder": 0,
                "archived": false, "createdAt": "2025-01-10T09:00:00Z",
                "updatedAt": "2025-01-10T09:00:00Z",
                "stages": [{"id": "appointmentscheduled", "label": "Appointment Scheduled",
                    "displayOrder": 0, "metadata": {"isClosed": "false", "probability": "0.2"},
                    "archived": false, "createdAt": "2025-01-10T09:00:00Z",
                    "updatedAt": "2025-01-10T09:00:00Z", "writePermissions": "CRM_PERMISSIONS_ENFORCEMENT"}]}]}),
            "pipelines",
        )
        .unwrap();
        let pipeline = Pipeline::from(pipelines.results.into_iter().next().unwrap());
        assert_eq!(
            serde_json::to_value(pipeline).unwrap(),
            json!({"id": "default", "label": "Sales Pipeline", "display_order": 0, "stages": [
                {"id": "appointmentscheduled", "label": "Appointment Scheduled", "display_order": 0,
                 "probability": 0.2, "is_closed": false, "archived": false}]})
        );
    }

    #[test]
    fn a_stage_or_pipeline_without_its_required_fields_is_an_unexpected_answer() {
        let err = decode::<Collection<WireStage>>(json!({"results": [{"id": "a"}]}), "stages")
            .unwrap_err();
        assert!(err.to_string().contains("missing field `label`"), "{err}");
        let err = decode::<Collection<WirePipeline>>(
            json!({"results": [{"id": "default", "label": "Sales", "displayOrder": 0}]}),
            "pipelines",
        )
        .unwrap_err();
        assert!(err.to_string().contains("missing field `stages`"), "{err}");
    }
}
