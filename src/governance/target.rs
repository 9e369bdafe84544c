//! What a write does, as each CRM's governance reads it back from the request itself at the
//! last seam before the wire (each CRM's `GovernedCrm::target`): the policy, the preview
//! and the journal judge what is actually sent, whichever tool built it.

use crate::error::Crm;
use crate::journal::ChangeKind;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ToolError;
    use crate::governance::crm::GovernedCrm;
    use crate::harness;
    use crate::http::{Request, WriteMethod};
    use crate::proxy;
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
        let governed: &dyn GovernedCrm = match request.crm() {
            Crm::Hubspot => &crate::crma::governed::Hubspot,
            Crm::Salesforce => &crate::crmb::governed::Salesforce,
        };
        governed.target(request, &harness::config(&[]))
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
