//! What `crma_aggregate_records` learns before it counts: each property's definition (is it a
//! date, a number, an enumeration with named options, an owner?), and the names that turn
//! stored ids into words (stage and pipeline names in HubSpot's order, owners' names).
//!
//! Definitions: `GET /crm/v3/properties/{objectType}/{propertyName}`
//! (<https://developers.hubspot.com/docs/api-reference/crm-properties-v3/core/get-crm-v3-properties-objectType-propertyName>):
//! `{"name": "dealstage", "type": "enumeration", "fieldType": "radio", "options": [{"label":
//! "Appointment Scheduled", "value": "appointmentscheduled", "displayOrder": 0, "hidden":
//! false}], "referencedObjectType": "OWNER", ...}`; `name` and `type` are required.

use super::grouping::Labels;
use crate::crma::metadata::pipeline_names;
use crate::crma::owner_names;
use crate::crma::properties;
use crate::crma::types::{ObjectType, PropertyName};
use crate::error::ToolError;
use crate::sorted_map::by_text;
use crate::tool::Session;
use serde::Deserialize;

/// A property's definition, as far as grouping needs it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Definition {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    options: Vec<OptionDefinition>,
    #[serde(default)]
    referenced_object_type: Option<String>,
}

/// One option of an enumeration.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct OptionDefinition {
    label: String,
    value: String,
    #[serde(default)]
    display_order: Option<i64>,
}

/// What a property holds, for grouping and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holds {
    /// `date`: a calendar date, never shifted by a time zone.
    Date,
    /// `datetime`: an instant, bucketed in the account's zone.
    Datetime,
    /// `number`: summed, averaged, compared.
    Number,
    /// An owner id (`hubspot_owner_id` and other owner properties).
    Owner,
    /// A pipeline stage id (`dealstage`, `hs_pipeline_stage`).
    Stage,
    /// A pipeline id (`pipeline`, `hs_pipeline`).
    Pipeline,
    /// Anything else: grouped by its stored value, named by its option when it has one.
    Value,
}

impl Definition {
    /// What the property `name` with this definition holds.
    pub(crate) fn holds(&self, name: &str) -> Holds {
        let owner = self
            .referenced_object_type
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case("OWNER"));
        match (self.kind.as_str(), name) {
            ("date", _) => Holds::Date,
            ("datetime", _) => Holds::Datetime,
            ("number", _) if !owner => Holds::Number,
            (_, "dealstage" | "hs_pipeline_stage") => Holds::Stage,
            (_, "pipeline" | "hs_pipeline") => Holds::Pipeline,
            _ if owner || name == "hubspot_owner_id" => Holds::Owner,
            _ => Holds::Value,
        }
    }

    /// The enumeration's option names, in display order.
    pub(crate) fn option_labels(&self) -> Labels {
        let mut options: Vec<&OptionDefinition> = self.options.iter().collect();
        options.sort_by_key(|o| o.display_order.unwrap_or(i64::MAX));
        Labels {
            names: by_text(
                options
                    .into_iter()
                    .enumerate()
                    .map(|(rank, o)| (o.value.clone(), (o.label.clone(), Some(rank))))
                    .collect(),
            ),
        }
    }
}

/// The definition of `name` on `object_type` (an unknown property is an input error naming
/// the tool that lists the names).
pub(crate) fn definition(
    session: &mut Session<'_>,
    object_type: &ObjectType,
    name: &PropertyName,
) -> Result<Definition, ToolError> {
    properties::definition(session, object_type, name)
}

/// Stage names (`Closed won`, with the pipeline's name when the type has several pipelines)
/// ranked pipeline by pipeline in display order; or, with `stages` false, pipeline names.
pub(crate) fn pipeline_labels(
    session: &mut Session<'_>,
    object_type: &ObjectType,
    stages: bool,
) -> Result<Labels, ToolError> {
    let pipelines = pipeline_names(session, object_type)?;
    let several = pipelines.len() > 1;
    let names = if stages {
        pipelines
            .iter()
            .flat_map(|p| {
                p.stages.iter().map(move |(id, label)| {
                    let label = if several {
                        format!("{label} ({})", p.label)
                    } else {
                        label.clone()
                    };
                    (id.clone(), label)
                })
            })
            .enumerate()
            .map(|(rank, (id, label))| (id, (label, Some(rank))))
            .collect::<Vec<_>>()
    } else {
        pipelines
            .into_iter()
            .enumerate()
            .map(|(rank, p)| (p.id, (p.label, Some(rank))))
            .collect::<Vec<_>>()
    };
    Ok(Labels {
        names: by_text(names),
    })
}

/// Owners' names by owner id. Owners are not ranked: groups of owners sort by name.
pub(crate) fn owner_labels(session: &mut Session<'_>) -> Result<Labels, ToolError> {
    Ok(Labels {
        names: by_text(
            owner_names(session)?
                .into_iter()
                .map(|(id, name)| (id, (name, None)))
                .collect(),
        ),
    })
}
