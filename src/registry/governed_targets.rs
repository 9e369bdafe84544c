//! Each CRM's governance reading writes back from the requests the tools send
//! (`GovernedCrm::target`), through the registry's directory of CRMs.

use super::Crms;
use crate::error::{Crm, ToolError};
use crate::governance::crm::CrmDirectory;
use crate::governance::{WriteKind, WriteTarget};
use crate::harness;
use crate::http::{Request, WriteMethod};
use crate::journal::ChangeKind;
use crate::proxy;
use serde_json::{Value, json};

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
    Crms::governed(request.crm()).target(request, &harness::config(&[]))
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
