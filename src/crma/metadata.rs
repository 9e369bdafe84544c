//! HubSpot metadata tools: roles, pipeline stages, property definitions, account details, and
//! record links built from the account's portal id and UI domain.

use super::client::{self, Call, results};
use super::scopes::Operation;
use super::types::{ObjectType, RecordId};
use crate::error::{Crm, CrmProblem, ToolError};
use crate::schema::string_schema;
use crate::tool::{NoInput, Session, Tool};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{Value, json};
use std::borrow::Cow;

/// `crma_list_roles`.
pub struct ListRoles;

impl Tool for ListRoles {
    const NAME: &'static str = "crma_list_roles";
    const DESCRIPTION: &'static str = "List the HubSpot account's user roles (id and name), to \
        read the role_ids that crma_list_users returns.";
    const READ_ONLY: bool = true;
    type Input = NoInput;
    type Output = Value;

    fn run(_: NoInput, session: &mut Session<'_>) -> Result<Self::Output, ToolError> {
        let answer = client::send(
            session,
            Call::get(
                Operation::ListRoles,
                vec!["settings", "v3", "users", "roles"],
                "roles",
            ),
        )?;
        let roles: Vec<Value> = results(&answer, "roles")?
            .iter()
            .map(|r| json!({"id": r["id"], "name": r["name"]}))
            .collect();
        Ok(json!({"results": roles}))
    }
}

/// A pipeline id: `default` or HubSpot's digits, or a custom id of letters, digits, `-`, `_`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct PipelineId(String);

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
pub struct PipelineStagesInput {
    /// deals, or a custom object type with pipelines.
    pub object_type: ObjectType,
    /// The pipeline; omit it to list every pipeline of the type with its stages.
    #[serde(default)]
    pub pipeline_id: Option<PipelineId>,
}

/// A stage, with HubSpot's string metadata (`"isClosed": "true"`, `"probability": "0.2"`)
/// read as a boolean and a number.
fn map_stage(stage: &Value) -> Value {
    let metadata = &stage["metadata"];
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let probability = text(&metadata["probability"]).parse::<f64>().ok();
    let is_closed = match &metadata["isClosed"] {
        Value::Null => Value::Null,
        v => (text(v) == "true").into(),
    };
    json!({
        "id": stage["id"], "label": stage["label"], "display_order": stage["displayOrder"],
        "probability": probability, "is_closed": is_closed, "archived": stage["archived"],
    })
}

/// `crma_get_pipeline_stages`.
pub struct GetPipelineStages;

impl Tool for GetPipelineStages {
    const NAME: &'static str = "crma_get_pipeline_stages";
    const DESCRIPTION: &'static str = "Get the stages of a HubSpot pipeline (deals or a custom \
        object): id, label, order, win probability, closed or not. Deal stages are stored by \
        id (e.g. closedwon); use this to read or set dealstage. Without pipeline_id, lists every \
        pipeline of the type with its stages.";
    const READ_ONLY: bool = true;
    type Input = PipelineStagesInput;
    type Output = Value;

    fn run(
        input: PipelineStagesInput,
        session: &mut Session<'_>,
    ) -> Result<Self::Output, ToolError> {
        if !matches!(input.object_type, ObjectType::Deals | ObjectType::Custom(_)) {
            return Err(ToolError::invalid(format!(
                "{} have no pipelines: pipelines exist for deals and custom object types",
                input.object_type
            )));
        }
        let object = input.object_type.as_str().to_string();
        let operation = Operation::ReadPipelines(input.object_type.clone());
        match input.pipeline_id {
            Some(pipeline) => {
                let call = Call::get(
                    operation,
                    vec!["crm", "v3", "pipelines", &object, &pipeline.0, "stages"],
                    format!("{object} pipeline {}", pipeline.0),
                );
                let answer = client::send(session, call)?;
                let stages: Vec<Value> =
                    results(&answer, "stages")?.iter().map(map_stage).collect();
                Ok(json!({"object_type": object, "pipeline_id": pipeline.0, "stages": stages}))
            }
            None => {
                let call = Call::get(
                    operation,
                    vec!["crm", "v3", "pipelines", &object],
                    format!("{object} pipelines"),
                );
                let answer = client::send(session, call)?;
                let pipelines: Vec<Value> = results(&answer, "pipelines")?
                    .iter()
                    .map(|p| {
                        let stages: Vec<Value> = p["stages"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(map_stage)
                            .collect();
                        json!({"id": p["id"], "label": p["label"], "display_order": p["displayOrder"], "stages": stages})
                    })
                    .collect();
                Ok(json!({"object_type": object, "pipelines": pipelines}))
            }
        }
    }
}

/// Input of `crma_get_properties`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PropertiesInput {
    pub object_type: ObjectType,
    /// Only properties whose name or label contains this text (case-insensitive).
    #[serde(default)]
    pub name_contains: Option<String>,
}

/// One property definition, compact: what a model needs to write a filter or a value.
fn compact_property(p: &Value) -> Value {
    let mut out = json!({
        "name": p["name"], "label": p["label"], "type": p["type"], "field_type": p["fieldType"],
    });
    if let Some(options) = p["options"].as_array().filter(|o| !o.is_empty()) {
        out["options"] = options
            .iter()
            .filter(|o| o["hidden"] != true)
            .map(|o| json!({"label": o["label"], "value": o["value"]}))
            .collect::<Vec<_>>()
            .into();
    }
    if p["modificationMetadata"]["readOnlyValue"] == true || p["calculated"] == true {
        out["read_only"] = true.into();
    }
    if p["hasUniqueValue"] == true {
        out["unique"] = true.into();
    }
    out
}

/// `crma_get_properties`.
pub struct GetProperties;

impl Tool for GetProperties {
    const NAME: &'static str = "crma_get_properties";
    const DESCRIPTION: &'static str = "List the property definitions of a HubSpot object type, \
        compact: internal name, label, type, field type, and the allowed options of enumeration \
        properties (write the option's value). Use it before searching, creating or updating to \
        get property names and values right.";
    const READ_ONLY: bool = true;
    type Input = PropertiesInput;
    type Output = Value;

    fn run(input: PropertiesInput, session: &mut Session<'_>) -> Result<Self::Output, ToolError> {
        let object = input.object_type.as_str().to_string();
        let call = Call::get(
            Operation::ReadProperties(input.object_type.clone()),
            vec!["crm", "v3", "properties", &object],
            format!("{object} properties"),
        );
        let answer = client::send(session, call)?;
        let needle = input
            .name_contains
            .as_deref()
            .map(|n| n.trim().to_lowercase())
            .filter(|n| !n.is_empty());
        let matches = |p: &Value| match &needle {
            None => true,
            Some(n) => [&p["name"], &p["label"]]
                .iter()
                .any(|v| v.as_str().is_some_and(|s| s.to_lowercase().contains(n))),
        };
        let properties: Vec<Value> = results(&answer, "properties")?
            .iter()
            .filter(|p| p["archived"] != true && matches(p))
            .map(compact_property)
            .collect();
        Ok(json!({"object_type": object, "count": properties.len(), "properties": properties}))
    }
}

/// The account facts record links need, read from `/account-info/v3/details`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub portal_id: u64,
    /// A bare host under hubspot.com, e.g. `app-eu1.hubspot.com`.
    pub ui_domain: String,
}

impl Account {
    /// Reads and checks the answer: a record link must point at HubSpot, whatever the answer says.
    pub fn from_answer(answer: &Value) -> Result<Self, ToolError> {
        let bad = |why: &str| {
            ToolError::from(CrmProblem::unexpected_answer(
                Crm::Hubspot,
                200,
                format!("account details: {why}"),
            ))
        };
        let portal_id = answer["portalId"]
            .as_u64()
            .ok_or_else(|| bad("no numeric portalId"))?;
        let ui_domain = answer["uiDomain"]
            .as_str()
            .ok_or_else(|| bad("no uiDomain"))?
            .to_ascii_lowercase();
        let is_host = !ui_domain.is_empty()
            && ui_domain.len() <= 253
            && ui_domain.split('.').all(|l| {
                !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            });
        if !is_host || !(ui_domain == "hubspot.com" || ui_domain.ends_with(".hubspot.com")) {
            return Err(bad("uiDomain is not a hubspot.com host"));
        }
        Ok(Account {
            portal_id,
            ui_domain,
        })
    }

    /// `https://{uiDomain}/contacts/{portalId}/record/{typeId}/{id}`.
    pub fn record_url(&self, type_id: &str, id: RecordId) -> String {
        format!(
            "https://{}/contacts/{}/record/{type_id}/{id}",
            self.ui_domain, self.portal_id
        )
    }
}

fn account_details(session: &mut Session<'_>) -> Result<Value, ToolError> {
    client::send(
        session,
        Call::get(
            Operation::AccountDetails,
            vec!["account-info", "v3", "details"],
            "account details",
        ),
    )
}

/// `crma_get_account_details`.
pub struct GetAccountDetails;

impl Tool for GetAccountDetails {
    const NAME: &'static str = "crma_get_account_details";
    const DESCRIPTION: &'static str = "Get the connected HubSpot account's details: portal id, \
        account type, time zone, company currency, UI domain and data hosting location. Use the \
        time zone to read dates and the currency to read amounts.";
    const READ_ONLY: bool = true;
    type Input = NoInput;
    type Output = Value;

    fn run(_: NoInput, session: &mut Session<'_>) -> Result<Self::Output, ToolError> {
        let a = account_details(session)?;
        Ok(json!({
            "portal_id": a["portalId"], "account_type": a["accountType"], "time_zone": a["timeZone"],
            "company_currency": a["companyCurrency"], "additional_currencies": a["additionalCurrencies"],
            "utc_offset": a["utcOffset"], "ui_domain": a["uiDomain"],
            "data_hosting_location": a["dataHostingLocation"],
        }))
    }
}

/// Input of `crma_generate_record_url`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordUrlInput {
    /// A standard type, or a custom type as 2-<id>.
    pub object_type: ObjectType,
    pub record_id: RecordId,
}

/// `crma_generate_record_url`.
pub struct GenerateRecordUrl;

impl Tool for GenerateRecordUrl {
    const NAME: &'static str = "crma_generate_record_url";
    const DESCRIPTION: &'static str = "Build the link that opens a HubSpot record in the \
        browser, from the account's portal id and UI domain. Give it to the user next to any \
        record you mention.";
    const READ_ONLY: bool = true;
    type Input = RecordUrlInput;
    type Output = Value;

    fn run(input: RecordUrlInput, session: &mut Session<'_>) -> Result<Self::Output, ToolError> {
        let type_id = input.object_type.type_id().ok_or_else(|| {
            ToolError::invalid(format!(
                "record links need the custom type's id (2-<id>), not {}",
                input.object_type
            ))
        })?;
        let account = Account::from_answer(&account_details(session)?)?;
        Ok(json!({"url": account.record_url(type_id, input.record_id)}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_links_only_point_at_hubspot() {
        let account = Account::from_answer(
            &json!({"portalId": 12345678, "uiDomain": "app-eu1.hubspot.com", "timeZone": "Europe/Berlin"}),
        )
        .unwrap();
        assert_eq!(
            account.record_url("0-3", RecordId::parse("987").unwrap()),
            "https://app-eu1.hubspot.com/contacts/12345678/record/0-3/987"
        );
        for hostile in [
            "evil.example.com",
            "hubspot.com.evil.example",
            "app.hubspot.com/phish",
            "app.hubspot.com:8080",
            "user@app.hubspot.com",
            "",
        ] {
            assert!(
                Account::from_answer(&json!({"portalId": 1, "uiDomain": hostile})).is_err(),
                "{hostile}"
            );
        }
        assert!(
            Account::from_answer(&json!({"portalId": "1", "uiDomain": "app.hubspot.com"})).is_err()
        );
    }

    #[test]
    fn properties_are_compacted_with_visible_options() {
        let p = compact_property(&json!({
            "name": "dealstage", "label": "Deal Stage", "type": "enumeration", "fieldType": "select",
            "description": "long text", "groupName": "dealinformation",
            "options": [{"label": "Won", "value": "closedwon", "displayOrder": 1, "hidden": false},
                        {"label": "Old", "value": "old", "displayOrder": 2, "hidden": true}],
            "modificationMetadata": {"readOnlyValue": false}
        }));
        assert_eq!(
            p,
            json!({"name": "dealstage", "label": "Deal Stage", "type": "enumeration", "field_type": "select",
                   "options": [{"label": "Won", "value": "closedwon"}]})
        );
    }
}
