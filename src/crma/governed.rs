//! HubSpot as governance sees it ([`GovernedCrm`]): which record and properties a write
//! request changes, their current values, a revert's update, and where the provenance marker
//! goes. The paths are the ones this plugin's HubSpot tools send (and its egress policy lists).

use super::client::{self as crma_client, Call};
use super::scopes::{self, Operation};
use super::types::ObjectType;
use super::wire::{Page, RecordObject};
use crate::config::Config;
use crate::error::{Crm, ToolError};
use crate::governance::crm::{
    Candidate, CreatedWindow, CurrentValues, GovernedCrm, LOOKUP_BUDGET, LOOKUP_LIMIT,
    path_and_body, text, unrecognised,
};
use crate::governance::target::{WriteKind, WriteTarget};
use crate::http::{Method, Request, WriteMethod};
use crate::proxy;
use crate::tool::Session;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// HubSpot, governed.
pub(crate) struct Hubspot;

/// HubSpot's record answer, `GET /crm/v3/objects/{type}/{id}` ("Retrieve records" on
/// <https://developers.hubspot.com/docs/api/crm/objects>): only `properties` is read.
#[derive(Debug, Deserialize)]
struct HubspotRecord {
    properties: Map<String, Value>,
}

/// HubSpot's property holding the user who last changed a record.
const HUBSPOT_UPDATED_BY: &str = "hs_updated_by_user_id";

impl GovernedCrm for Hubspot {
    fn crm(&self) -> Crm {
        Crm::Hubspot
    }

    fn target(&self, request: &Request, config: &Config) -> Result<WriteTarget, ToolError> {
        let root = proxy::crm_a(config, &[], &[])?;
        let (rest, body) = path_and_body(request, &root);
        let fields_at = |v: &Value| v.as_object().cloned().unwrap_or_default();
        let (kind, object, fields) = match (request.method(), rest.as_slice()) {
            (Method::Post, ["crm", "v3", "objects", "companies", "merge"]) => {
                let (Some(primary), Some(merged)) = (
                    text(&body["primaryObjectId"]),
                    text(&body["objectIdToMerge"]),
                ) else {
                    return Err(unrecognised(request));
                };
                let kind = WriteKind::Merge {
                    record_id: primary,
                    merged_id: merged,
                };
                (kind, "companies", Map::new())
            }
            (Method::Post, ["crm", "v3", "objects", object]) => {
                (WriteKind::Create, *object, fields_at(&body["properties"]))
            }
            (Method::Patch, ["crm", "v3", "objects", object, id]) => (
                WriteKind::Update {
                    record_id: id.to_string(),
                },
                *object,
                fields_at(&body["properties"]),
            ),
            (
                Method::Put,
                [
                    "crm",
                    "v4",
                    "objects",
                    from,
                    id,
                    "associations",
                    "default",
                    to,
                    to_id,
                ],
            ) => (
                WriteKind::Associate {
                    record_id: id.to_string(),
                    to_object: to.to_string(),
                    to_record_id: to_id.to_string(),
                },
                *from,
                Map::new(),
            ),
            _ => return Err(unrecognised(request)),
        };
        Ok(WriteTarget {
            crm: Crm::Hubspot,
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
        let object_type = ObjectType::parse(object).map_err(ToolError::invalid)?;
        let mut asked: Vec<&str> = fields.to_vec();
        asked.push(HUBSPOT_UPDATED_BY);
        let call = Call::get(
            Operation::Read(object_type),
            vec!["crm", "v3", "objects", object, record_id],
            format!("{object} record {record_id}"),
        )
        .with_query(vec![("properties", asked.join(","))]);
        let record: HubspotRecord = crma_client::send_for(session, call)?;
        Ok(CurrentValues::pick(
            &record.properties,
            fields,
            HUBSPOT_UPDATED_BY,
        ))
    }

    fn check_update_scope(&self, session: &Session<'_>, object: &str) -> Result<(), ToolError> {
        let object_type = ObjectType::parse(object).map_err(ToolError::invalid)?;
        scopes::check(&session.ctx.granted_scopes, &Operation::Write(object_type))
    }

    fn update(
        &self,
        session: &mut Session<'_>,
        object: &str,
        record_id: &str,
        values: &Map<String, Value>,
    ) -> Result<(), ToolError> {
        let object_type = ObjectType::parse(object).map_err(ToolError::invalid)?;
        // HubSpot clears a property set to empty text.
        let properties = crate::sorted_map::json_object(
            values
                .iter()
                .map(|(k, v)| (k.clone(), if v.is_null() { json!("") } else { v.clone() }))
                .collect(),
        );
        let call = Call::get(
            Operation::Write(object_type),
            vec!["crm", "v3", "objects", object, record_id],
            format!("{object} record {record_id}"),
        )
        .writing(WriteMethod::Patch, Some(json!({"properties": properties})));
        crma_client::send(session, call).map(drop)
    }

    fn created_since(
        &self,
        session: &mut Session<'_>,
        object: &str,
        created: &Map<String, Value>,
        since_ms: u64,
    ) -> Result<CreatedWindow, ToolError> {
        let object_type = ObjectType::parse(object).map_err(ToolError::invalid)?;
        // HubSpot takes datetime filters as epoch milliseconds ("Search", CRM API guide).
        let mut filters = vec![json!({
            "propertyName": "createdate", "operator": "GTE", "value": since_ms.to_string()
        })];
        let policy = &session.config()?.policy;
        // Never a filter on a masked property: the values sent are compared after the answer.
        let mut narrow_by = |property: &str| {
            if let Some(value) = created.get(property).and_then(text)
                && !policy.is_masked(property)
            {
                filters.push(json!({"propertyName": property, "operator": "EQ", "value": value}));
            }
        };
        // A contact is one per e-mail; the provenance marker sets apart what the assistant made.
        if object == "contacts" {
            narrow_by("email");
        }
        if let Some(marker) = policy.marker(Crm::Hubspot) {
            narrow_by(&marker.field);
        }
        let properties: Vec<&String> = created.keys().collect();
        let mut window = CreatedWindow::default();
        let mut after: Option<String> = None;
        // Every page until HubSpot's `paging` ends ("Search", paging with `after`:
        // <https://developers.hubspot.com/docs/api-reference/search/guide>), as far as the
        // budget goes.
        loop {
            let mut body = json!({
                "filterGroups": [{"filters": filters}],
                "sorts": [{"propertyName": "createdate", "direction": "DESCENDING"}],
                "properties": properties,
                "limit": LOOKUP_LIMIT,
            });
            if let Some(after) = &after {
                body["after"] = json!(after);
            }
            let call = Call::get(
                Operation::Read(object_type.clone()),
                vec!["crm", "v3", "objects", object, "search"],
                format!("{object} created since the write"),
            )
            .searching(body);
            let answer: Page<RecordObject> = crma_client::send_for(session, call)?;
            let next = answer.next_after().map(str::to_string);
            window
                .candidates
                .extend(answer.results.into_iter().map(|r| Candidate {
                    id: r.id,
                    values: r.properties,
                }));
            match next {
                None => {
                    window.complete = true;
                    return Ok(window);
                }
                // A cursor that does not move would read the same page for ever.
                Some(next) if after.as_deref() == Some(next.as_str()) => return Ok(window),
                Some(_) if window.candidates.len() >= LOOKUP_BUDGET => return Ok(window),
                Some(next) => after = Some(next),
            }
        }
    }

    fn lookup_lag_ms(&self) -> u64 {
        // HubSpot documents that a new record reaches search after a short delay; a minute
        // leaves room to spare.
        60_000
    }

    fn default_marker(&self) -> Value {
        Value::String("true".into())
    }

    fn created_fields<'b>(&self, body: &'b mut Value) -> &'b mut Value {
        &mut body["properties"]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness;
    use crate::policy::keys;
    use crate::retry::tests::{ScriptedTransport, response};
    use crate::tool::Session;

    #[test]
    fn a_create_lookup_never_filters_on_a_masked_property() {
        let created = json!({"email": "x@acme.example", "firstname": "X"});
        let lookup = |masked: &str| {
            let config = harness::config(&[(keys::MASKED_FIELDS, masked)]);
            let ctx = harness::ctx(&["crm.objects.contacts.read"], None);
            let mut t = ScriptedTransport::new([response(200, r#"{"results": []}"#)]);
            let mut session = Session::new(&ctx, Ok(&config), &mut t);
            Hubspot
                .created_since(&mut session, "contacts", created.as_object().unwrap(), 0)
                .unwrap();
            let body = harness::body(&t.sent[0]);
            body["filterGroups"][0]["filters"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["propertyName"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(lookup("phone"), ["createdate", "email"]);
        assert_eq!(
            lookup("email"),
            ["createdate"],
            "the masked e-mail is no filter"
        );
    }
}
