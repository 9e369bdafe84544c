//! The built-in sandbox CRM: a fake broker with a small, realistic data set per tenant, so a
//! newcomer sees real answers with no account anywhere.
//!
//! Like the real broker it checks `X-Proxy-Credential` on every request and serves each
//! tenant only its own data. It answers in the CRMs' own JSON shapes.

use crate::backend::{Backend, BoxFuture};
use crate::hooks::{CREDENTIAL_HEADER, Credential};
use crate::host::TenantSpec;
use bytes::Bytes;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use url::Url;
use wasmtime_wasi_http::Error as HttpError;

/// The sandbox broker's base URL (a reserved `.test` name: it never resolves).
pub const SANDBOX_PROXY_BASE: &str = "https://broker.sandbox.crm-plugin.test";
/// The Salesforce org URL of the sandbox tenants, for record links.
pub const SANDBOX_INSTANCE_URL: &str = "https://acme-sandbox.my.salesforce.com";

/// The sandbox tenants and their data sets.
const DATASETS: &[(&str, &str)] = &[
    ("acme", include_str!("../sandbox/acme.json")),
    ("globex", include_str!("../sandbox/globex.json")),
];

/// One tenant's data.
struct Dataset {
    salesforce: HashMap<String, Vec<Value>>,
}

/// The sandbox broker.
#[derive(Clone)]
pub struct SandboxCrm {
    /// Data sets by the credential that unlocks them.
    by_credential: Arc<HashMap<String, Arc<Dataset>>>,
}

impl Default for SandboxCrm {
    fn default() -> Self {
        Self::new()
    }
}

impl SandboxCrm {
    pub fn new() -> Self {
        let by_credential = DATASETS
            .iter()
            .map(|(tenant, text)| {
                let data: Value = serde_json::from_str(text).expect("sandbox data is JSON");
                let salesforce = data["salesforce"]
                    .as_object()
                    .map(|objects| {
                        objects
                            .iter()
                            .map(|(name, rows)| {
                                (name.clone(), rows.as_array().cloned().unwrap_or_default())
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                (credential_value(tenant), Arc::new(Dataset { salesforce }))
            })
            .collect();
        SandboxCrm {
            by_credential: Arc::new(by_credential),
        }
    }

    /// The tenants the sandbox knows.
    pub fn tenants() -> impl Iterator<Item = &'static str> {
        DATASETS.iter().map(|(tenant, _)| *tenant)
    }

    /// A tenant registration pointing at the sandbox, with the sandbox's credential for it.
    pub fn tenant_spec(tenant: &str) -> TenantSpec {
        TenantSpec {
            tenant_id: tenant.into(),
            proxy_base: Url::parse(SANDBOX_PROXY_BASE).expect("constant URL"),
            credential: Credential::new(credential_value(tenant)),
            settings: Vec::new(),
            results_dir: None,
        }
    }

    fn answer(&self, request: &http::Request<Bytes>) -> (u16, Value) {
        let credential = request
            .headers()
            .get(CREDENTIAL_HEADER)
            .and_then(|v| v.to_str().ok());
        let Some(dataset) = credential.and_then(|c| self.by_credential.get(c)) else {
            return salesforce_error(401, "INVALID_SESSION_ID", "Session expired or invalid");
        };
        let segments: Vec<&str> = request
            .uri()
            .path()
            .split('/')
            .filter(|s| !s.is_empty())
            .collect();
        match segments.as_slice() {
            [
                "sdk",
                "proxy",
                "salesforce",
                "services",
                "data",
                version,
                rest @ ..,
            ] if version.starts_with('v') => salesforce(dataset, request, version, rest),
            _ => salesforce_error(404, "NOT_FOUND", "The requested resource does not exist"),
        }
    }
}

/// The credential the sandbox expects for a tenant.
fn credential_value(tenant: &str) -> String {
    format!("sandbox-credential-{tenant}")
}

fn salesforce_error(status: u16, code: &str, message: &str) -> (u16, Value) {
    (status, json!([{"message": message, "errorCode": code}]))
}

fn salesforce(
    dataset: &Dataset,
    request: &http::Request<Bytes>,
    version: &str,
    path: &[&str],
) -> (u16, Value) {
    match (request.method(), path) {
        (&http::Method::GET, ["sobjects", object, id]) => {
            let Some(rows) = dataset.salesforce.get(*object) else {
                return salesforce_error(404, "NOT_FOUND", "The requested resource does not exist");
            };
            let wanted = id.get(..15).unwrap_or(id);
            let Some(row) = rows
                .iter()
                .find(|r| r["Id"].as_str().and_then(|i| i.get(..15)) == Some(wanted))
            else {
                return salesforce_error(404, "NOT_FOUND", "The requested resource does not exist");
            };
            let fields = query_param(request.uri(), "fields");
            (
                200,
                with_attributes(row, object, version, fields.as_deref()),
            )
        }
        _ => salesforce_error(404, "NOT_FOUND", "The requested resource does not exist"),
    }
}

/// A record as Salesforce returns it: `attributes` first, then the asked-for fields.
fn with_attributes(row: &Value, object: &str, version: &str, fields: Option<&str>) -> Value {
    let id = row["Id"].as_str().unwrap_or_default();
    let mut out = serde_json::Map::new();
    out.insert(
        "attributes".into(),
        json!({"type": object, "url": format!("/services/data/{version}/sobjects/{object}/{id}")}),
    );
    for (key, value) in row.as_object().into_iter().flatten() {
        let wanted = match fields {
            Some(list) => key == "Id" || list.split(',').any(|f| f.eq_ignore_ascii_case(key)),
            None => true,
        };
        if key != "attributes" && wanted {
            out.insert(key.clone(), value.clone());
        }
    }
    Value::Object(out)
}

fn query_param(uri: &http::Uri, name: &str) -> Option<String> {
    let url = Url::parse(&format!("https://x{}", uri.path_and_query()?.as_str())).ok()?;
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

impl Backend for SandboxCrm {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<Result<http::Response<Bytes>, HttpError>> {
        let (status, body) = self.answer(&request);
        Box::pin(async move {
            http::Response::builder()
                .status(status)
                .header("content-type", "application/json;charset=UTF-8")
                .header("x-request-id", "sandbox")
                .body(Bytes::from(body.to_string()))
                .map_err(|e| HttpError::InternalError(Some(e.to_string())))
        })
    }
}
