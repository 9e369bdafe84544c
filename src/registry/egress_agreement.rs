//! The three descriptions of every write endpoint checked against each other: the egress
//! policy (`src/egress-policy.toml`, what the host lets out), each CRM's governance (which
//! record and fields a write request changes, `GovernedCrm::target`), and the tools (which
//! tools the policy says send each write). What the tools actually send is checked against the
//! policy end to end by the host's egress tests.

use super::Crms;
use crate::error::Crm;
use crate::governance::WriteKind;
use crate::governance::crm::CrmDirectory;
use crate::harness;
use crate::http::{Request, WriteMethod};
use crate::proxy;
use serde_json::{Value, json};

/// One `[[endpoint]]` of the policy file, as far as these tests read it.
#[derive(Debug, Default)]
struct Endpoint {
    crm: String,
    method: String,
    path: String,
    tools: Vec<String>,
}

/// The policy's endpoints, read with a line reader (the file's format is a few flat keys).
fn endpoints() -> Vec<Endpoint> {
    let text = include_str!("../egress-policy.toml");
    let mut all: Vec<Endpoint> = Vec::new();
    for line in text.lines().map(str::trim) {
        if line == "[[endpoint]]" {
            all.push(Endpoint::default());
            continue;
        }
        let (Some(endpoint), Some((key, value))) = (all.last_mut(), line.split_once(" = ")) else {
            continue;
        };
        let unquote = |v: &str| v.trim().trim_matches('"').to_string();
        match key {
            "crm" => endpoint.crm = unquote(value),
            "method" => endpoint.method = unquote(value),
            "path" => endpoint.path = unquote(value),
            "tools" => {
                endpoint.tools = value
                    .trim_matches(|c| c == '[' || c == ']')
                    .split(',')
                    .map(unquote)
                    .filter(|t| !t.is_empty())
                    .collect()
            }
            _ => {}
        }
    }
    all
}

fn crm_of(endpoint: &Endpoint) -> Crm {
    Crm::from_integration(&endpoint.crm).expect("crm-a or crm-b")
}

fn write_method(method: &str) -> Option<WriteMethod> {
    match method {
        "POST" => Some(WriteMethod::Post),
        "PATCH" => Some(WriteMethod::Patch),
        "PUT" => Some(WriteMethod::Put),
        _ => None,
    }
}

/// Whether an endpoint changes data: a POST, PATCH or PUT that is not a search.
fn is_write(endpoint: &Endpoint) -> bool {
    write_method(&endpoint.method).is_some() && !endpoint.path.ends_with("/search")
}

/// The endpoint's path with each variable filled with a sample value, below the integration
/// root the component's URL builders add (for Salesforce, `services/data/{version}`).
fn sample_path(endpoint: &Endpoint) -> Vec<String> {
    let crm = crm_of(endpoint);
    let path = match crm {
        Crm::Hubspot => endpoint.path.as_str(),
        Crm::Salesforce => endpoint
            .path
            .strip_prefix("/services/data/{version}")
            .expect("a Salesforce endpoint below services/data/{version}"),
    };
    path.trim_start_matches('/')
        .split('/')
        .map(|segment| match (segment, crm) {
            ("{object}", Crm::Hubspot) => "contacts".into(),
            ("{object}", Crm::Salesforce) => "Account".into(),
            ("{record}", _) => "512".into(),
            ("{sf_id}", _) => "001000000000001AAA".into(),
            (other, _) => {
                assert!(
                    !other.starts_with('{'),
                    "a variable this test cannot fill: {other}"
                );
                other.into()
            }
        })
        .collect()
}

/// A body of the shape the tools send to this endpoint.
fn sample_body(endpoint: &Endpoint) -> Option<Value> {
    match (crm_of(endpoint), endpoint.method.as_str()) {
        (_, "PUT") => None,
        (Crm::Hubspot, _) if endpoint.path.ends_with("/merge") => {
            Some(json!({"primaryObjectId": "512", "objectIdToMerge": "513"}))
        }
        (Crm::Hubspot, _) => Some(json!({"properties": {"firstname": "Maria"}})),
        (Crm::Salesforce, _) => Some(json!({"Name": "Acme"})),
    }
}

fn request_for(endpoint: &Endpoint) -> Request {
    let config = harness::config(&[]);
    let segments = sample_path(endpoint);
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    let crm = crm_of(endpoint);
    let url = match crm {
        Crm::Hubspot => proxy::crm_a(&config, &segments, &[]),
        Crm::Salesforce => proxy::crm_b(&config, &segments, &[]),
    }
    .expect("a URL");
    let method = write_method(&endpoint.method).expect("a write method");
    Request::write(crm, method, url, sample_body(endpoint).as_ref())
}

#[test]
fn every_write_the_policy_admits_is_one_its_crms_governance_reads() {
    let config = harness::config(&[]);
    let writes: Vec<Endpoint> = endpoints().into_iter().filter(is_write).collect();
    assert!(writes.len() >= 6, "only {} write endpoints", writes.len());
    for endpoint in &writes {
        let request = request_for(endpoint);
        let target = Crms::governed(crm_of(endpoint))
            .target(&request, &config)
            .unwrap_or_else(|e| {
                panic!(
                    "the policy admits {} {} but governance does not read it: {e}",
                    endpoint.method, endpoint.path
                )
            });
        let expected = match (endpoint.method.as_str(), endpoint.path.as_str()) {
            ("PUT", _) => "associate",
            (_, p) if p.ends_with("/merge") => "merge",
            ("PATCH", _) => "update",
            _ => "create",
        };
        let kind = match target.kind {
            WriteKind::Create => "create",
            WriteKind::Update { .. } => "update",
            WriteKind::Merge { .. } => "merge",
            WriteKind::Associate { .. } => "associate",
        };
        assert_eq!(kind, expected, "{} {}", endpoint.method, endpoint.path);
    }
}

#[test]
fn every_write_governance_reads_is_one_the_policy_admits() {
    // What each CRM's governance recognises, one request per kind (the forms its `target`
    // reads), must each match a write endpoint of the policy, segment by segment.
    let writes: Vec<Endpoint> = endpoints().into_iter().filter(is_write).collect();
    let governed: [(Crm, &str, &str); 6] = [
        (Crm::Hubspot, "POST", "/crm/v3/objects/deals"),
        (Crm::Hubspot, "PATCH", "/crm/v3/objects/deals/512"),
        (Crm::Hubspot, "POST", "/crm/v3/objects/companies/merge"),
        (
            Crm::Hubspot,
            "PUT",
            "/crm/v4/objects/contacts/512/associations/default/companies/513",
        ),
        (
            Crm::Salesforce,
            "POST",
            "/services/data/{version}/sobjects/Task",
        ),
        (
            Crm::Salesforce,
            "PATCH",
            "/services/data/{version}/sobjects/Task/00T000000000001AAA",
        ),
    ];
    let matches = |template: &str, path: &str| {
        let (t, p): (Vec<&str>, Vec<&str>) =
            (template.split('/').collect(), path.split('/').collect());
        t.len() == p.len()
            && t.iter()
                .zip(&p)
                .all(|(t, p)| t == p || (t.starts_with('{') && !p.is_empty() && *p != "merge"))
    };
    for (crm, method, path) in governed {
        assert!(
            writes
                .iter()
                .any(|e| crm_of(e) == crm && e.method == method && matches(&e.path, path)),
            "governance reads {method} {path} ({crm:?}) but the policy admits no such write"
        );
    }
}

#[test]
fn the_policy_names_only_write_tools_on_writes_and_every_write_tool_has_one() {
    let write_tools: Vec<&str> = super::entries()
        .filter(|e| !e.read_only)
        .map(|e| e.name)
        .collect();
    let writes: Vec<Endpoint> = endpoints().into_iter().filter(is_write).collect();
    for endpoint in &writes {
        for tool in &endpoint.tools {
            assert!(
                write_tools.contains(&tool.as_str()),
                "{tool} is a read tool, yet the policy lets it send {} {}",
                endpoint.method,
                endpoint.path
            );
        }
    }
    for tool in write_tools {
        assert!(
            writes.iter().any(|e| e.tools.iter().any(|t| t == tool)),
            "write tool {tool} has no write endpoint in the policy"
        );
    }
}
