//! What a write request does, read back from the request itself at the last seam before the
//! wire: the policy, the preview and the journal judge what is actually sent, whichever tool
//! built it. A write this module does not recognise is refused, never let through.

use super::journal::ChangeKind;
use crate::config::Config;
use crate::error::{Crm, ToolError};
use crate::http::{Method, Request};
use crate::proxy;
use serde_json::{Map, Value};

/// What kind of change a write makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteKind {
    /// A new record or activity.
    Create,
    /// New values for fields of an existing record.
    Update {
        /// The record changed.
        record_id: String,
    },
    /// HubSpot's merge of one company into another.
    Merge {
        /// The company that remains.
        record_id: String,
        /// The company merged into it.
        merged_id: String,
    },
    /// A link between two existing records.
    Associate {
        /// The record linked from.
        record_id: String,
        /// The type of the record linked to.
        to_object: String,
        /// The record linked to.
        to_record_id: String,
    },
}

impl WriteKind {
    /// The kind of change the journal keeps it as.
    pub fn change_kind(&self) -> ChangeKind {
        match self {
            WriteKind::Create => ChangeKind::Create,
            WriteKind::Update { .. } => ChangeKind::Update,
            WriteKind::Merge { .. } => ChangeKind::Merge,
            WriteKind::Associate { .. } => ChangeKind::Association,
        }
    }

    /// The existing record the change is to, when there is one.
    pub fn record_id(&self) -> Option<&str> {
        match self {
            WriteKind::Create => None,
            WriteKind::Update { record_id }
            | WriteKind::Merge { record_id, .. }
            | WriteKind::Associate { record_id, .. } => Some(record_id),
        }
    }
}

/// One write, as the request says it.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteTarget {
    /// The CRM written to.
    pub crm: Crm,
    /// What the write does.
    pub kind: WriteKind,
    /// The object type written (`contacts`, `Account`); for a link, the type linked from.
    pub object: String,
    /// The field values the request sends (HubSpot's `properties`, Salesforce's body).
    pub fields: Map<String, Value>,
}

impl WriteTarget {
    /// Reads a write request: its path below the tenant's integration root, and its body.
    pub fn of(request: &Request, config: &Config) -> Result<Self, ToolError> {
        let root = match request.crm() {
            Crm::Hubspot => proxy::crm_a(config, &[], &[])?,
            Crm::Salesforce => proxy::crm_b(config, &[], &[])?,
        };
        let root = root.path().trim_end_matches('/');
        let rest: Vec<&str> = request
            .url()
            .path()
            .strip_prefix(root)
            .and_then(|p| p.strip_prefix('/'))
            .map(|p| p.split('/').collect())
            .unwrap_or_default();
        let body: Value = match request.body() {
            Some(bytes) => serde_json::from_slice(bytes).unwrap_or(Value::Null),
            None => Value::Null,
        };
        let text = |v: &Value| match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        let fields_at = |v: &Value| v.as_object().cloned().unwrap_or_default();
        let (kind, object, fields) = match (request.crm(), request.method(), rest.as_slice()) {
            (Crm::Hubspot, Method::Post, ["crm", "v3", "objects", "companies", "merge"]) => {
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
            (Crm::Hubspot, Method::Post, ["crm", "v3", "objects", object]) => {
                (WriteKind::Create, *object, fields_at(&body["properties"]))
            }
            (Crm::Hubspot, Method::Patch, ["crm", "v3", "objects", object, id]) => (
                WriteKind::Update {
                    record_id: id.to_string(),
                },
                *object,
                fields_at(&body["properties"]),
            ),
            (
                Crm::Hubspot,
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
            (Crm::Salesforce, Method::Post, ["sobjects", object]) => {
                (WriteKind::Create, *object, fields_at(&body))
            }
            (Crm::Salesforce, Method::Patch, ["sobjects", object, id]) => (
                WriteKind::Update {
                    record_id: id.to_string(),
                },
                *object,
                fields_at(&body),
            ),
            _ => return Err(unrecognised(request)),
        };
        Ok(WriteTarget {
            crm: request.crm(),
            kind,
            object: object.to_string(),
            fields,
        })
    }
}

fn unrecognised(request: &Request) -> ToolError {
    ToolError::Forbidden(format!(
        "a {} to {} is not a write this plugin knows how to govern, so it was not sent",
        request.method().as_str(),
        request.url().path()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness;
    use crate::http::WriteMethod;
    use serde_json::json;

    fn write(crm: Crm, method: WriteMethod, path: &[&str], body: Value) -> Request {
        let config = harness::config(&[]);
        let url = match crm {
            Crm::Hubspot => proxy::crm_a(&config, path, &[]),
            Crm::Salesforce => proxy::crm_b(&config, path, &[]),
        }
        .unwrap();
        Request::write(crm, method, url, Some(&body))
    }

    fn target(request: &Request) -> Result<WriteTarget, ToolError> {
        WriteTarget::of(request, &harness::config(&[]))
    }

    #[test]
    fn every_write_the_tools_send_is_recognised() {
        let t = target(&write(
            Crm::Hubspot,
            WriteMethod::Patch,
            &["crm", "v3", "objects", "deals", "42"],
            json!({"properties": {"amount": "10"}}),
        ))
        .unwrap();
        assert_eq!(
            t.kind,
            WriteKind::Update {
                record_id: "42".into()
            }
        );
        assert_eq!(
            (t.object.as_str(), t.fields["amount"].clone()),
            ("deals", json!("10"))
        );
        let t = target(&write(
            Crm::Hubspot,
            WriteMethod::Post,
            &["crm", "v3", "objects", "companies", "merge"],
            json!({"primaryObjectId": "1", "objectIdToMerge": "2"}),
        ))
        .unwrap();
        assert_eq!(t.kind.record_id(), Some("1"));
        let t = target(&write(
            Crm::Hubspot,
            WriteMethod::Put,
            &[
                "crm",
                "v4",
                "objects",
                "contacts",
                "5",
                "associations",
                "default",
                "companies",
                "6",
            ],
            Value::Null,
        ))
        .unwrap();
        assert_eq!(
            (t.kind.change_kind(), t.object.as_str()),
            (ChangeKind::Association, "contacts")
        );
        let t = target(&write(
            Crm::Salesforce,
            WriteMethod::Post,
            &["sobjects", "Task"],
            json!({"Subject": "Call"}),
        ))
        .unwrap();
        assert_eq!((t.kind, t.object.as_str()), (WriteKind::Create, "Task"));
    }

    #[test]
    fn an_unknown_write_is_refused_not_let_through() {
        for request in [
            write(
                Crm::Hubspot,
                WriteMethod::Post,
                &["crm", "v3", "objects", "contacts", "batch", "archive"],
                json!({}),
            ),
            write(
                Crm::Salesforce,
                WriteMethod::Post,
                &["composite"],
                json!({}),
            ),
            write(
                Crm::Hubspot,
                WriteMethod::Post,
                &["crm", "v3", "objects", "companies", "merge"],
                json!({}),
            ),
        ] {
            assert!(
                matches!(target(&request), Err(ToolError::Forbidden(_))),
                "{request:?}"
            );
        }
    }
}
