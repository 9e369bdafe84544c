//! The `crmb_*` tools.

use super::errors::map_error;
use super::ids::{ApiName, SalesforceId};
use super::record_url::InstanceUrl;
use super::records::map_record;
use crate::error::ToolError;
use crate::http::Request;
use crate::proxy;
use crate::tools::{Session, Tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

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

/// Input of `crmb_generate_record_url`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordRef {
    /// Object API name, e.g. Account, Contact, Opportunity, Invoice__c.
    pub object: ApiName,
    /// Salesforce record id (15 or 18 characters).
    pub record_id: SalesforceId,
}

/// `crmb_generate_record_url`: a link that opens the record in Salesforce, with no CRM call.
pub struct GenerateRecordUrl;

impl Tool for GenerateRecordUrl {
    const NAME: &'static str = "crmb_generate_record_url";
    const DESCRIPTION: &'static str = "Build a Salesforce link (Lightning record page) for an \
        object and record id, so the user can open the record in Salesforce. Makes no CRM call. \
        Use it when you already have a record id, e.g. from a query, and want to show a link.";
    const READ_ONLY: bool = true;
    type Input = RecordRef;

    fn run(input: RecordRef, session: &mut Session<'_>) -> Result<Value, ToolError> {
        check_prefix(&input.object, &input.record_id)?;
        let instance = InstanceUrl::from_context(session.ctx.instance_url.as_deref())?;
        Ok(json!({"url": instance.record_url(&input.object, &input.record_id).as_str()}))
    }
}

/// Input of `crmb_get_record`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetRecordInput {
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
pub struct GetRecord;

impl Tool for GetRecord {
    const NAME: &'static str = "crmb_get_record";
    const DESCRIPTION: &'static str = "Fetch one Salesforce record by object API name and \
        record id, optionally only the listed fields. Returns the record's fields and a link \
        (record_url) to open it in Salesforce. Salesforce applies the user's own permissions: \
        fields they cannot read are absent.";
    const READ_ONLY: bool = true;
    type Input = GetRecordInput;

    fn run(input: GetRecordInput, session: &mut Session<'_>) -> Result<Value, ToolError> {
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
        let instance = session
            .ctx
            .instance_url
            .as_deref()
            .map(InstanceUrl::parse)
            .transpose()?;
        let config = session.config()?;
        let query: Vec<(&str, &str)> = fields.iter().map(|f| ("fields", f.as_str())).collect();
        let url = proxy::crm_b(
            config,
            &["sobjects", input.object.as_str(), input.record_id.as_str()],
            &query,
        );
        let response = session.send(&Request::get(url))?;
        if !response.is_success() {
            let subject = format!("{} record {}", input.object, input.record_id);
            return Err(map_error(&response, &subject));
        }
        let mut record: Value = serde_json::from_slice(&response.body).map_err(|err| {
            ToolError::CrmError(
                json!({"crm": "salesforce", "status": response.status, "error": format!("the record was not valid JSON: {err}")})
                    .to_string(),
            )
        })?;
        if !record.is_object() {
            return Err(ToolError::CrmError(
                json!({"crm": "salesforce", "status": response.status, "error": "the record was not a JSON object"}).to_string(),
            ));
        }
        map_record(&mut record, instance.as_ref());
        let record_url =
            instance.map(|i| i.record_url(&input.object, &input.record_id).to_string());
        Ok(json!({"record": record, "record_url": record_url}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::tests::{ScriptedTransport, response};
    use crate::config::{Config, keys};
    use crate::context::CallContext;
    use crate::http::Method;
    use crate::tools::call_tool;

    fn ctx() -> CallContext {
        CallContext {
            tenant_id: "t1".into(),
            user_id: "u1".into(),
            granted_scopes: vec![],
            instance_url: Some("https://acme.my.salesforce.com".into()),
        }
    }

    fn config() -> Config {
        Config::from_vars([(keys::PROXY_BASE, "https://broker.example.com")]).unwrap()
    }

    fn run(
        transport: &mut ScriptedTransport,
        ctx: &CallContext,
        tool: &str,
        input: Value,
    ) -> Result<Value, ToolError> {
        let config = config();
        let mut session = Session::new(ctx, Ok(&config), transport);
        call_tool(tool, &input.to_string(), &mut session)
            .map(|out| serde_json::from_str(&out).unwrap())
    }

    #[test]
    fn generate_record_url_needs_no_request() {
        let mut t = ScriptedTransport::default();
        let out = run(
            &mut t,
            &ctx(),
            "crmb_generate_record_url",
            json!({"object": "Account", "record_id": "001000000000001AAA"}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"url": "https://acme.lightning.force.com/lightning/r/Account/001000000000001AAA/view"})
        );
        assert!(t.sent.is_empty());
    }

    #[test]
    fn an_id_of_another_object_is_refused_before_sending() {
        let mut t = ScriptedTransport::default();
        let err = run(
            &mut t,
            &ctx(),
            "crmb_get_record",
            json!({"object": "Account", "record_id": "003000000000001AAA"}),
        )
        .unwrap_err();
        assert!(
            matches!(&err, ToolError::InvalidInput(m) if m.contains("Contact id")),
            "{err:?}"
        );
        assert!(t.sent.is_empty());
    }

    #[test]
    fn get_record_builds_the_request_and_maps_the_record() {
        let body = json!({
            "attributes": {"type": "Account", "url": "/services/data/v65.0/sobjects/Account/001000000000001AAA"},
            "Id": "001000000000001AAA", "Name": "Acme", "Industry": "Energy"
        });
        let mut t = ScriptedTransport::new([response(200, &body.to_string())]);
        let out = run(&mut t, &ctx(), "crmb_get_record", json!({"object": "Account", "record_id": "001000000000001AAA", "fields": ["Name", "Industry"]})).unwrap();
        let sent = &t.sent[0];
        assert_eq!(sent.method, Method::Get);
        assert_eq!(
            sent.url.path(),
            "/sdk/proxy/salesforce/services/data/v65.0/sobjects/Account/001000000000001AAA"
        );
        assert_eq!(sent.url.query(), Some("fields=Name%2CIndustry"));
        assert_eq!(out["record"]["Name"], "Acme");
        assert!(out["record"].get("attributes").is_none());
        assert_eq!(
            out["record_url"],
            "https://acme.lightning.force.com/lightning/r/Account/001000000000001AAA/view"
        );
    }

    #[test]
    fn get_record_errors_are_mapped() {
        let mut t = ScriptedTransport::new([response(
            404,
            r#"[{"errorCode":"NOT_FOUND","message":"The requested resource does not exist"}]"#,
        )]);
        let err = run(
            &mut t,
            &ctx(),
            "crmb_get_record",
            json!({"object": "Account", "record_id": "001000000000001AAA"}),
        )
        .unwrap_err();
        assert!(
            matches!(&err, ToolError::NotFound(m) if m.contains("Account record 001000000000001AAA")),
            "{err:?}"
        );
        let mut t = ScriptedTransport::new([response(200, "[1,2]")]);
        let err = run(
            &mut t,
            &ctx(),
            "crmb_get_record",
            json!({"object": "Account", "record_id": "001000000000001AAA"}),
        )
        .unwrap_err();
        assert!(matches!(err, ToolError::CrmError(_)));
    }

    #[test]
    fn bad_ids_names_and_fields_send_nothing() {
        for input in [
            json!({"object": "Account", "record_id": "001000000000001AAB"}),
            json!({"object": "Account/../User", "record_id": "001000000000001AAA"}),
            json!({"object": "Account", "record_id": "001000000000001AAA", "fields": ["Name; DROP"]}),
            json!({"object": "Account", "record_id": "001000000000001AAA", "fields": []}),
            json!({"object": "Account"}),
        ] {
            let mut t = ScriptedTransport::default();
            let err = run(&mut t, &ctx(), "crmb_get_record", input.clone()).unwrap_err();
            assert!(
                matches!(err, ToolError::InvalidInput(_)),
                "{input}: {err:?}"
            );
            assert!(t.sent.is_empty());
        }
    }
}
