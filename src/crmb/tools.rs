//! The `crmb_*` tools.

use super::client;
use super::describe::{FieldFilter, ObjectView, RawDescribe, compact};
use super::errors::{map_error, parse_answer};
use super::fields::FieldValues;
use super::ids::{ApiName, SalesforceId};
use super::outputs::{FetchedRecord, NewRecord, QueryResult, RecordLink, UpdatedRecord};
use super::query::{self, Layout, QueryRequest};
use super::record_url::InstanceUrl;
use super::records::{LinkStyle, Mapping, map_record_text};
use crate::error::{Crm, ToolError};
use crate::http::{Request, WriteMethod};
use crate::mapping::CreatedRecord;
use crate::policy::ReadScope;
use crate::proxy;
use crate::tool::{CrmEffect, Session, Tool, capped};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::value::RawValue;

/// Key prefixes of the standard objects the spec names, to catch an id given for the wrong
/// object before asking Salesforce.
const KNOWN_PREFIXES: &[(&str, &str)] = &[
    ("Account", "001"),
    ("Contact", "003"),
    ("Opportunity", "006"),
    ("Lead", "00Q"),
    ("Case", "500"),
    ("Task", "00T"),
    ("Event", "00U"),
    ("User", "005"),
];

/// Refuses an id whose key prefix belongs to another standard object.
fn check_prefix(object: &ApiName, id: &SalesforceId) -> Result<(), ToolError> {
    let expected = KNOWN_PREFIXES
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(object.as_str()));
    let actual = KNOWN_PREFIXES.iter().find(|(_, p)| *p == id.key_prefix());
    match (expected, actual) {
        (Some((name, _)), Some((other, prefix))) if name != other => {
            Err(ToolError::invalid(format!(
                "record id {id} starts with {prefix}, which is a {other} id, not a {name} id; use \
             object {other:?} or the {name} record's own id"
            )))
        }
        _ => Ok(()),
    }
}

/// A Salesforce record, by object API name and record id.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RecordRef {
    /// Object API name, e.g. Account, Contact, Opportunity, Invoice__c.
    pub object: ApiName,
    /// Salesforce record id (15 or 18 characters).
    pub record_id: SalesforceId,
}

/// `crmb_generate_record_url`: a link that opens the record in Salesforce, with no CRM call.
pub(crate) struct GenerateRecordUrl;

impl Tool for GenerateRecordUrl {
    const NAME: &'static str = "crmb_generate_record_url";
    const DESCRIPTION: &'static str = "Build a Salesforce link (Lightning record page) for an \
        object and record id, so the user can open the record in Salesforce. Makes no CRM call. \
        Use it when you already have a record id, e.g. from a query, and want to show a link.";
    const TITLE: &'static str = "Link to a Salesforce record";
    const EFFECT: CrmEffect = CrmEffect::Offline;
    type Input = RecordRef;
    type Output = RecordLink;

    fn run(input: RecordRef, session: &mut Session<'_>) -> Result<Self::Output, ToolError> {
        check_prefix(&input.object, &input.record_id)?;
        let instance = InstanceUrl::from_context(session.ctx.instance_url.as_deref())?;
        Ok(RecordLink {
            url: instance
                .record_url(&input.object, &input.record_id)
                .to_string(),
        })
    }
}

/// The record to fetch and, optionally, which fields to return.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetRecordInput {
    /// Object API name, e.g. Account, Contact, Opportunity, Invoice__c.
    pub object: ApiName,
    /// Salesforce record id (15 or 18 characters).
    pub record_id: SalesforceId,
    /// Field API names to return (e.g. ["Name", "Industry"]); omit for every field the user
    /// may read. Use crmb_get_object_fields to find names.
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub fields: Option<Vec<ApiName>>,
}

/// `crmb_get_record`: one record by object and id, with its link.
pub(crate) struct GetRecord;

impl Tool for GetRecord {
    const NAME: &'static str = "crmb_get_record";
    const DESCRIPTION: &'static str = "Fetch one Salesforce record by object API name and \
        record id, optionally only the listed fields. Returns the record's fields and a link \
        (record_url) to open it in Salesforce. Salesforce applies the user's own permissions: \
        fields they cannot read are absent.";
    const TITLE: &'static str = "Get a Salesforce record";
    const EFFECT: CrmEffect = CrmEffect::Reads;
    type Input = GetRecordInput;
    type Output = FetchedRecord;

    /// The fields asked for, of this object (a compound and its parts go together).
    fn reads(input: &GetRecordInput) -> ReadScope<'_> {
        ReadScope {
            fields: input.fields.iter().flatten().map(ApiName::as_str).collect(),
            salesforce_object: Some(input.object.as_str()),
            ..ReadScope::default()
        }
    }

    fn run(input: GetRecordInput, session: &mut Session<'_>) -> Result<Self::Output, ToolError> {
        check_prefix(&input.object, &input.record_id)?;
        let fields = match &input.fields {
            Some(list) if list.is_empty() || list.len() > 200 => {
                return Err(ToolError::invalid(
                    "fields must list 1 to 200 field names; omit it to get every readable field",
                ));
            }
            Some(list) => Some(
                list.iter()
                    .map(ApiName::as_str)
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            None => None,
        };
        let instance = InstanceUrl::if_known(session.ctx.instance_url.as_deref())?;
        let config = session.config()?;
        let query: Vec<(&str, &str)> = fields.iter().map(|f| ("fields", f.as_str())).collect();
        let url = proxy::crm_b(
            config,
            &["sobjects", input.object.as_str(), input.record_id.as_str()],
            &query,
        )?;
        let subject = format!("{} record {}", input.object, input.record_id);
        let response = client::send(session, &Request::read(Crm::Salesforce, url), &subject)?;
        let body: &RawValue = parse_answer(&response, "the record")?;
        let mapping = Mapping {
            instance: instance.as_ref(),
            masked: &config.policy.masked,
            links: LinkStyle::Lightning,
        };
        let record = map_record_text(body, &mapping)?;
        let record_url =
            instance.map(|i| i.record_url(&input.object, &input.record_id).to_string());
        Ok(FetchedRecord { record, record_url })
    }
}

/// A read-only SOQL query and how much of its result to return in this call.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunQueryInput {
    /// One SOQL SELECT statement, e.g. "SELECT Id, Name, Amount, CloseDate FROM Opportunity
    /// WHERE IsClosed = false AND CloseDate = THIS_MONTH ORDER BY Amount DESC". Read-only: no
    /// DML, no FOR UPDATE, no SELECT * (use FIELDS(STANDARD) or list fields).
    #[schemars(length(min = 1, max = 100000))]
    pub query: String,
    /// Most records to return in this call (1-2000, default 200). More are reachable with
    /// next_cursor.
    #[serde(default)]
    #[schemars(range(min = 1, max = 2000))]
    pub max_records: Option<u32>,
    /// next_cursor from a previous result of the same query, to get the following records.
    #[serde(default)]
    pub cursor: Option<String>,
    /// "objects" (default): records, each a JSON object of its fields. "table": fields (the
    /// column names, once) and rows (each record's values in that order, record_url
    /// included), about a third fewer tokens for many records.
    #[serde(default)]
    pub layout: Layout,
    /// true writes every row to a JSON Lines file in the workspace's results directory and
    /// answers with file_path, record_count and a preview instead of records, however many
    /// rows there are. Not with cursor. Default false (results over 5,000 rows go to a file
    /// anyway).
    #[serde(default)]
    pub to_file: bool,
}

/// `crmb_run_soql_query`.
pub(crate) struct RunSoqlQuery;

impl Tool for RunSoqlQuery {
    const NAME: &'static str = "crmb_run_soql_query";
    const DESCRIPTION: &'static str = "Run a read-only SOQL SELECT query in Salesforce, as the \
        connected user (records they cannot see are simply absent). Use it for pipeline, \
        forecast and risk questions, e.g. open opportunities closing this month. Returns \
        records with a record_url each, total_size and done; when more records remain it \
        returns next_cursor (pass it back with the same query) and says how many are left. For \
        many records, layout table answers fields (column names, once) and rows (values in \
        that order) instead of records, with about a third fewer tokens. Very \
        large results (or any, with to_file) are written to a JSON Lines file instead: then file_path, record_count, \
        columns and a short preview come back, and no records. Use crmb_get_object_fields first \
        when unsure of field names.";
    const TITLE: &'static str = "Run a Salesforce SOQL query";
    const EFFECT: CrmEffect = CrmEffect::Reads;
    type Input = RunQueryInput;
    type Output = QueryResult;

    fn run(input: RunQueryInput, session: &mut Session<'_>) -> Result<Self::Output, ToolError> {
        let request = QueryRequest::new(
            &input.query,
            input.max_records,
            input.cursor.as_deref(),
            input.layout,
        )?
        .writing_to_file(input.to_file)?;
        query::run(request, session)
    }

    /// A masked field is never named in a query: not selected, filtered, grouped or sorted on,
    /// so its values cannot be probed through WHERE clauses either.
    fn reads(input: &RunQueryInput) -> ReadScope<'_> {
        ReadScope {
            soql: Some(&input.query),
            records: input.max_records.map(Into::into),
            ..ReadScope::default()
        }
    }

    /// The cap binds the rows inline (a `LIMIT` in the query text asks Salesforce, not this
    /// call), every page after a cursor, and a file through its record limit.
    fn cap_records(input: &mut RunQueryInput, cap: u32) {
        input.max_records = capped(input.max_records, query::DEFAULT_MAX_RECORDS, cap);
    }
}

/// The object to describe and optional filters to keep the answer short.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ObjectFieldsInput {
    /// Object API name, e.g. Account, Opportunity, Invoice__c.
    pub object: ApiName,
    /// Only fields whose API name or label contains this text (case-insensitive).
    #[serde(default)]
    pub name_contains: Option<String>,
    /// Only custom fields (API names ending in __c).
    #[serde(default)]
    pub custom_only: bool,
    /// Only fields that can be set when creating a record.
    #[serde(default)]
    pub createable_only: bool,
    /// Also list child relationship names, for subqueries such as (SELECT Id FROM Contacts).
    #[serde(default)]
    pub include_child_relationships: bool,
}

/// `crmb_get_object_fields`.
pub(crate) struct GetObjectFields;

impl Tool for GetObjectFields {
    const NAME: &'static str = "crmb_get_object_fields";
    const DESCRIPTION: &'static str = "Describe a Salesforce object: its fields' API names, \
        labels, types, active picklist values, lookups (reference_to, relationship_name), which \
        fields are required on create, createable and updateable, and custom fields. Use it to \
        discover schema and custom fields before writing SOQL or creating and updating records. \
        Filters (name_contains, custom_only, createable_only) keep the answer short.";
    const TITLE: &'static str = "Describe a Salesforce object's fields";
    const EFFECT: CrmEffect = CrmEffect::Reads;
    type Input = ObjectFieldsInput;
    type Output = ObjectView;

    fn run(input: ObjectFieldsInput, session: &mut Session<'_>) -> Result<Self::Output, ToolError> {
        let config = session.config()?;
        let url = proxy::crm_b(
            config,
            &["sobjects", input.object.as_str(), "describe"],
            &[],
        )?;
        let subject = format!("object {}", input.object);
        let response = client::send(session, &Request::read(Crm::Salesforce, url), &subject)?;
        let raw: RawDescribe = parse_answer(&response, "the describe answer")?;
        let filter = FieldFilter {
            name_contains: input.name_contains.filter(|s| !s.trim().is_empty()),
            custom_only: input.custom_only,
            createable_only: input.createable_only,
        };
        Ok(compact(raw, &filter, input.include_child_relationships))
    }
}

/// The object to create a record of and its field values.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateRecordInput {
    /// Object API name, e.g. Account, Contact, Opportunity, Task, Invoice__c.
    pub object: ApiName,
    /// Field API name → value (string, number, boolean or null), e.g. {"Name": "Acme",
    /// "Industry": "Energy"}. Dates as "2026-11-30"; lookups as record ids.
    pub fields: FieldValues,
}

/// Salesforce's answer to a create:
/// `{"id": "001D000000IqhSLIAZ", "errors": [], "success": true}`
/// (<https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_sobject_create.htm>).
/// A refused create answers an error list instead ([`map_error`]), so `errors` is not read.
#[derive(Debug, Deserialize)]
struct CreateAnswer {
    id: SalesforceId,
    /// An answer carrying an id but no `success` still names a record that exists: it is taken
    /// as created rather than reported as unknown.
    #[serde(default = "yes")]
    success: bool,
}

fn yes() -> bool {
    true
}

/// `crmb_create_record`.
pub(crate) struct CreateRecord;

impl Tool for CreateRecord {
    const NAME: &'static str = "crmb_create_record";
    const DESCRIPTION: &'static str = "Create one Salesforce record (e.g. a Task to log an \
        activity, a Contact, an Opportunity) from a map of field API names to values. Returns \
        the new id and record_url. Sent exactly once: if the outcome is unknown it says so \
        instead of retrying, so check with crmb_run_soql_query before creating again. Use \
        crmb_get_object_fields to see required fields.";
    const TITLE: &'static str = "Create a Salesforce record";
    const EFFECT: CrmEffect = CrmEffect::Adds { idempotent: false };
    type Input = CreateRecordInput;
    type Output = NewRecord;

    fn run(input: CreateRecordInput, session: &mut Session<'_>) -> Result<Self::Output, ToolError> {
        let body = input.fields.to_body()?;
        let instance = InstanceUrl::if_known(session.ctx.instance_url.as_deref())?;
        let config = session.config()?;
        let url = proxy::crm_b(config, &["sobjects", input.object.as_str()], &[])?;
        let request = Request::write(Crm::Salesforce, WriteMethod::Post, url, Some(&body));
        let response = client::send(session, &request, &format!("object {}", input.object))?;
        let answer: CreateAnswer = serde_json::from_slice(&response.body).map_err(|why| {
            ToolError::OutcomeUnknown(format!(
                "Salesforce answered {} to the create of a {} but without a readable record id \
                 ({why}); check with crmb_run_soql_query whether it exists before creating it \
                 again",
                response.status, input.object
            ))
        })?;
        if !answer.success {
            return Err(map_error(
                &response,
                None,
                &format!("object {}", input.object),
            ));
        }
        let record_url = instance.map(|i| i.record_url(&input.object, &answer.id).to_string());
        let warning = session.remember_created(CreatedRecord {
            crm: "salesforce",
            object_type: input.object.as_str().into(),
            record_id: answer.id.as_str().into(),
        });
        Ok(NewRecord {
            id: answer.id,
            object: input.object,
            record_url,
            warning,
        })
    }
}

/// The record to change and the new field values.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpdateRecordInput {
    /// Object API name, e.g. Opportunity.
    pub object: ApiName,
    /// Id of the record to change (15 or 18 characters).
    pub record_id: SalesforceId,
    /// Field API name → new value (string, number, boolean or null), e.g. {"StageName":
    /// "Negotiation/Review"}. Only these fields change.
    pub fields: FieldValues,
}

/// `crmb_update_record`.
pub(crate) struct UpdateRecord;

impl Tool for UpdateRecord {
    const NAME: &'static str = "crmb_update_record";
    const DESCRIPTION: &'static str = "Update fields of one Salesforce record by object and \
        record id (e.g. move an opportunity's stage, change a close date). Only the given fields \
        change. Returns the record_url. Sent exactly once; an unknown outcome is reported, not \
        retried.";
    const TITLE: &'static str = "Update a Salesforce record";
    const EFFECT: CrmEffect = CrmEffect::Changes { idempotent: true };
    type Input = UpdateRecordInput;
    type Output = UpdatedRecord;

    fn run(input: UpdateRecordInput, session: &mut Session<'_>) -> Result<Self::Output, ToolError> {
        check_prefix(&input.object, &input.record_id)?;
        let body = input.fields.to_body()?;
        let instance = InstanceUrl::if_known(session.ctx.instance_url.as_deref())?;
        let config = session.config()?;
        let url = proxy::crm_b(
            config,
            &["sobjects", input.object.as_str(), input.record_id.as_str()],
            &[],
        )?;
        let request = Request::write(Crm::Salesforce, WriteMethod::Patch, url, Some(&body));
        let subject = format!("{} record {}", input.object, input.record_id);
        client::send(session, &request, &subject)?;
        let record_url =
            instance.map(|i| i.record_url(&input.object, &input.record_id).to_string());
        Ok(UpdatedRecord {
            id: input.record_id,
            object: input.object,
            record_url,
            updated: true,
        })
    }
}

#[cfg(test)]
mod tests;
