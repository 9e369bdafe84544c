//! Salesforce as governance sees it ([`GovernedCrm`]): which record and fields a write request
//! changes, their current values, a revert's update, and where the provenance marker goes. The
//! paths are the ones this plugin's Salesforce tools send (and its egress policy lists).

use super::client::{self as crmb_client};
use super::ids::{ApiName, SalesforceId};
use crate::config::Config;
use crate::error::{Crm, CrmProblem, ToolError};
use crate::governance::crm::{
    Candidate, CreatedWindow, CurrentValues, GovernedCrm, LOOKUP_BUDGET, LOOKUP_LIMIT,
    path_and_body, unrecognised,
};
use crate::governance::target::{WriteKind, WriteTarget};
use crate::http::{Method, Request, WriteMethod};
use crate::proxy;
use crate::tool::Session;
use serde_json::{Map, Value};

/// Salesforce, governed.
pub(crate) struct Salesforce;

/// Where a page of the creation window ended: its last row's creation time and id.
struct Keyset {
    created_ms: u64,
    /// Checked, so it goes into the query as written.
    id: SalesforceId,
}

/// One page of the records created since `since_ms`, newest first, past `past` when given: a
/// keyset on `CreatedDate, Id` rather than an OFFSET (at most 2,000) or a query locator, so
/// the window is read whole however many records it holds ("Date Formats and Date Literals"
/// for the literals, whole seconds:
/// <https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_select_dateformats.htm>).
fn created_since_soql(
    fields: &[String],
    object: &ApiName,
    since_ms: u64,
    past: Option<&Keyset>,
) -> String {
    let literal = |ms: u64| crate::time::iso_utc(ms / 1000 * 1000).replace(".000Z", "Z");
    let before = past
        .map(|k| {
            let at = literal(k.created_ms);
            format!(
                " AND (CreatedDate < {at} OR (CreatedDate = {at} AND Id < '{}'))",
                k.id.as_str()
            )
        })
        .unwrap_or_default();
    format!(
        "SELECT {} FROM {} WHERE CreatedDate >= {}{before} ORDER BY CreatedDate DESC, Id DESC \
         LIMIT {LOOKUP_LIMIT}",
        fields.join(", "),
        object.as_str(),
        literal(since_ms),
    )
}

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
    ) -> Result<CreatedWindow, ToolError> {
        let object = ApiName::parse(object).map_err(ToolError::invalid)?;
        let mut fields = vec!["Id".to_string(), "CreatedDate".to_string()];
        for name in created.keys() {
            let name = ApiName::parse(name).map_err(ToolError::invalid)?;
            if !fields.iter().any(|f| f.eq_ignore_ascii_case(name.as_str())) {
                fields.push(name.as_str().to_string());
            }
        }
        let subject = format!("{} records created since the write", object.as_str());
        let mut window = CreatedWindow::default();
        let mut past: Option<Keyset> = None;
        loop {
            let soql = created_since_soql(&fields, &object, since_ms, past.as_ref());
            let page = crmb_client::lookup(session, &soql, &subject)?;
            let full = page.records.len() >= LOOKUP_LIMIT;
            for mut record in page.records {
                let Some(Value::String(id)) = record.remove("Id") else {
                    continue;
                };
                record.remove("attributes");
                let created_ms = record
                    .get("CreatedDate")
                    .and_then(Value::as_str)
                    .and_then(crate::time::parse_iso_utc);
                past = created_ms
                    .zip(SalesforceId::parse(&id).ok())
                    .map(|(created_ms, id)| Keyset { created_ms, id });
                if !created
                    .keys()
                    .any(|k| k.eq_ignore_ascii_case("CreatedDate"))
                {
                    record.remove("CreatedDate");
                }
                window.candidates.push(Candidate { id, values: record });
            }
            if !full {
                window.complete = true;
                return Ok(window);
            }
            // A page without a readable last row cannot be continued: not read whole.
            if past.is_none() || window.candidates.len() >= LOOKUP_BUDGET {
                return Ok(window);
            }
        }
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
