//! Salesforce as governance sees it ([`GovernedCrm`]): which record and fields a write request
//! changes, their current values, a revert's update, and where the provenance marker goes. The
//! paths are the ones this plugin's Salesforce tools send (and its egress policy lists).

use super::client::{self as crmb_client};
use super::ids::ApiName;
use crate::config::Config;
use crate::error::{Crm, CrmProblem, ToolError};
use crate::governance::crm::{
    Candidate, CurrentValues, GovernedCrm, LOOKUP_LIMIT, path_and_body, unrecognised,
};
use crate::governance::target::{WriteKind, WriteTarget};
use crate::http::{Method, Request, WriteMethod};
use crate::proxy;
use crate::tool::Session;
use serde_json::{Map, Value};

/// Salesforce, governed.
pub(crate) struct Salesforce;

/// Salesforce's field holding the user who last changed a record.
const SALESFORCE_UPDATED_BY: &str = "LastModifiedById";

impl GovernedCrm for Salesforce {
    fn crm(&self) -> Crm {
        Crm::Salesforce
    }

    fn target(&self, request: &Request, config: &Config) -> Result<WriteTarget, ToolError> {
        let root = proxy::crm_b(config, &[], &[])?;
        let (rest, body) = path_and_body(request, &root);
        let fields = body.as_object().cloned().unwrap_or_default();
        let (kind, object) = match (request.method(), rest.as_slice()) {
            (Method::Post, ["sobjects", object]) => (WriteKind::Create, *object),
            (Method::Patch, ["sobjects", object, id]) => (
                WriteKind::Update {
                    record_id: id.to_string(),
                },
                *object,
            ),
            _ => return Err(unrecognised(request)),
        };
        Ok(WriteTarget {
            crm: Crm::Salesforce,
            kind,
            object: object.to_string(),
            fields,
        })
    }

    fn current(
        &self,
        session: &mut Session<'_>,
        object: &str,
        record_id: &str,
        fields: &[&str],
    ) -> Result<CurrentValues, ToolError> {
        let mut asked: Vec<&str> = fields.to_vec();
        asked.push(SALESFORCE_UPDATED_BY);
        let list = asked.join(",");
        let url = proxy::crm_b(
            session.config()?,
            &["sobjects", object, record_id],
            &[("fields", &list)],
        )?;
        let subject = format!("{object} record {record_id}");
        let response = crmb_client::send(session, &Request::read(Crm::Salesforce, url), &subject)?;
        let record: Map<String, Value> = serde_json::from_slice(&response.body).map_err(|e| {
            CrmProblem::unexpected_answer(
                Crm::Salesforce,
                response.status,
                format!("the answer about {subject} was not a record: {e}"),
            )
        })?;
        Ok(CurrentValues::pick(&record, fields, SALESFORCE_UPDATED_BY))
    }

    /// Salesforce's object and field permissions are checked by Salesforce itself on the write.
    fn check_update_scope(&self, _session: &Session<'_>, _object: &str) -> Result<(), ToolError> {
        Ok(())
    }

    fn update(
        &self,
        session: &mut Session<'_>,
        object: &str,
        record_id: &str,
        values: &Map<String, Value>,
    ) -> Result<(), ToolError> {
        let url = proxy::crm_b(session.config()?, &["sobjects", object, record_id], &[])?;
        let request = Request::write(
            Crm::Salesforce,
            WriteMethod::Patch,
            url,
            Some(&Value::Object(values.clone())),
        );
        crmb_client::send(session, &request, &format!("{object} record {record_id}")).map(drop)
    }

    fn created_since(
        &self,
        session: &mut Session<'_>,
        object: &str,
        created: &Map<String, Value>,
        since_ms: u64,
    ) -> Result<Vec<Candidate>, ToolError> {
        let object = ApiName::parse(object).map_err(ToolError::invalid)?;
        let mut fields = vec!["Id".to_string()];
        for name in created.keys() {
            let name = ApiName::parse(name).map_err(ToolError::invalid)?;
            if !name.as_str().eq_ignore_ascii_case("Id") {
                fields.push(name.as_str().to_string());
            }
        }
        // Whole seconds: SOQL's datetime literal (Date Formats and Date Literals).
        let since = crate::time::iso_utc(since_ms / 1000 * 1000).replace(".000Z", "Z");
        let soql = format!(
            "SELECT {} FROM {} WHERE CreatedDate >= {since} ORDER BY CreatedDate DESC LIMIT {}",
            fields.join(", "),
            object.as_str(),
            LOOKUP_LIMIT
        );
        let subject = format!("{} records created since the write", object.as_str());
        let page = crmb_client::lookup(session, &soql, &subject)?;
        Ok(page
            .records
            .into_iter()
            .filter_map(|mut record| {
                let id = match record.remove("Id") {
                    Some(Value::String(id)) => id,
                    _ => return None,
                };
                record.remove("attributes");
                Some(Candidate { id, values: record })
            })
            .collect())
    }

    fn lookup_lag_ms(&self) -> u64 {
        // A SOQL query sees every committed record at once.
        0
    }

    fn default_marker(&self) -> Value {
        Value::Bool(true)
    }

    fn created_fields<'b>(&self, body: &'b mut Value) -> &'b mut Value {
        body
    }
}
