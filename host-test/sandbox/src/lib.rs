//! Test support for `crm-host`, kept out of its release build: the built-in sandbox CRM (a
//! fake broker with a small, realistic data set per tenant, so a newcomer sees real answers
//! with no account anywhere), the scripted [`stub`] broker, the [`holding_proxy`] chaos tests
//! put in front of a broker, and the probe guests the end-to-end tests load.
//!
//! Like the real broker it checks `X-Proxy-Credential` on every request and serves each
//! tenant only its own data. It answers in the CRMs' own JSON shapes; creates and updates
//! change the tenant's data for later reads (until the process ends).

pub mod holding_proxy;
mod hubspot;
mod salesforce;
pub mod stub;

use bytes::Bytes;
use crm_host::backend::{Backend, BoxFuture};
use crm_host::credential::{CREDENTIAL_HEADER, Credential};
use crm_host::host::TenantSpec;
use crm_host::tenant_db::DbLocation;
use hubspot::HubSpotData;
use salesforce::SalesforceData;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use url::Url;
use wasmtime_wasi_http::Error as HttpError;

/// The hostile probe component used by the end-to-end tests.
pub const PROBE_PATH: &str = env!("CRM_PROBE_WASM");

/// A component carrying crm-plugin's egress policy that sends whatever a test asks for.
pub const EGRESS_PROBE_PATH: &str = env!("CRM_EGRESS_PROBE_WASM");

/// The sandbox broker's base URL (a reserved `.test` name: it never resolves).
pub const SANDBOX_PROXY_BASE: &str = "https://broker.sandbox.crm-plugin.test";

/// The sandbox tenants and their data sets.
const DATASETS: &[(&str, &str)] = &[
    ("acme", include_str!("../acme.json")),
    ("globex", include_str!("../globex.json")),
];

/// One tenant's data.
struct Dataset {
    salesforce: Mutex<SalesforceData>,
    hubspot: Mutex<HubSpotData>,
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
                let salesforce = Mutex::new(SalesforceData::from_json(&data["salesforce"]));
                let hubspot = Mutex::new(HubSpotData::from_json(&data["hubspot"]));
                let dataset = Dataset {
                    salesforce,
                    hubspot,
                };
                (credential_value(tenant), Arc::new(dataset))
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

    /// The sandbox tenant's Salesforce org URL (My Domain form), for record links.
    pub fn instance_url(tenant: &str) -> String {
        format!("https://{tenant}-sandbox.my.salesforce.com")
    }

    /// The credential the sandbox expects from a tenant (public: the sandbox holds only
    /// made-up data), for clients that reach it over the network (`crm-host sandbox`).
    pub fn credential(tenant: &str) -> String {
        credential_value(tenant)
    }

    /// Adds `count` contacts of `company` to a sandbox tenant's HubSpot, searchable at once,
    /// and returns their ids in ascending order: a portal past HubSpot's 10,000 search results
    /// for a test, without a create request per record. `None` for a tenant the sandbox does
    /// not know.
    pub fn seed_hubspot_contacts(
        &self,
        tenant: &str,
        count: usize,
        company: &str,
    ) -> Option<Vec<u64>> {
        let dataset = self.by_credential.get(&credential_value(tenant))?;
        let mut data = dataset.hubspot.lock().unwrap_or_else(|e| e.into_inner());
        Some(data.seed_contacts(count, company))
    }

    /// Adds `count` deals named `<label> deal <n>` to a sandbox tenant's HubSpot, searchable
    /// at once, and returns their properties: for aggregate tests that add them up by brute
    /// force. `None` for a tenant the sandbox does not know.
    pub fn seed_hubspot_deals(
        &self,
        tenant: &str,
        count: usize,
        label: &str,
    ) -> Option<Vec<Value>> {
        let dataset = self.by_credential.get(&credential_value(tenant))?;
        let mut data = dataset.hubspot.lock().unwrap_or_else(|e| e.into_inner());
        Some(data.seed_deals(count, label))
    }

    /// Sets a sandbox tenant's Salesforce query batch (rows a page before `nextRecordsUrl`;
    /// Salesforce's default is 2,000): tests of paging use small pages.
    pub fn set_salesforce_batch_size(&self, tenant: &str, rows: usize) {
        if let Some(dataset) = self.by_credential.get(&credential_value(tenant)) {
            let mut data = dataset.salesforce.lock().unwrap_or_else(|e| e.into_inner());
            data.set_batch_size(rows);
        }
    }

    /// A tenant registration pointing at the sandbox, with the sandbox's credential for it.
    pub fn tenant_spec(tenant: &str) -> TenantSpec {
        TenantSpec {
            tenant_id: tenant.into(),
            proxy_base: Url::parse(SANDBOX_PROXY_BASE).expect("constant URL"),
            credential: Credential::new(credential_value(tenant)),
            settings: Vec::new(),
            results_dir: None,
            mappings: DbLocation::Memory,
        }
    }

    fn answer(&self, request: &http::Request<Bytes>) -> (u16, Value) {
        let credential = request
            .headers()
            .get(CREDENTIAL_HEADER)
            .and_then(|v| v.to_str().ok());
        let segments: Vec<&str> = request
            .uri()
            .path()
            .split('/')
            .filter(|s| !s.is_empty())
            .collect();
        let Some(dataset) = credential.and_then(|c| self.by_credential.get(c)) else {
            return match segments.as_slice() {
                ["sdk", "proxy", "hubspot", ..] => hubspot::error(
                    401,
                    "INVALID_AUTHENTICATION",
                    "Authentication credentials not found.",
                ),
                _ => salesforce_error(401, "INVALID_SESSION_ID", "Session expired or invalid"),
            };
        };
        let uri_bytes =
            request.uri().path().len() + request.uri().query().map_or(0, |q| q.len() + 1);
        match segments.as_slice() {
            // Salesforce: "414: The length of the URI exceeds the 16,384 byte limit."
            // (https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/errorcodes.htm)
            ["sdk", "proxy", "salesforce", ..] if uri_bytes > SALESFORCE_MAX_URI_BYTES => {
                (414, Value::Null)
            }
            ["sdk", "proxy", "salesforce", "services", "data"] => (200, salesforce::versions()),
            ["sdk", "proxy", "hubspot", rest @ ..] => {
                let mut data = dataset.hubspot.lock().unwrap_or_else(|e| e.into_inner());
                data.answer(
                    request.method().as_str(),
                    rest,
                    request.uri().query(),
                    request.body(),
                )
            }
            [
                "sdk",
                "proxy",
                "salesforce",
                "services",
                "data",
                version,
                rest @ ..,
            ] if salesforce::serves(version) => {
                let mut data = dataset.salesforce.lock().unwrap_or_else(|e| e.into_inner());
                data.answer(
                    request.method().as_str(),
                    version,
                    rest,
                    request.uri().query(),
                    request.body(),
                )
            }
            _ => salesforce_error(404, "NOT_FOUND", "The requested resource does not exist"),
        }
    }
}

/// The longest URI Salesforce accepts, in bytes.
const SALESFORCE_MAX_URI_BYTES: usize = 16_384;

/// The credential the sandbox expects for a tenant.
fn credential_value(tenant: &str) -> String {
    format!("sandbox-credential-{tenant}")
}

fn salesforce_error(status: u16, code: &str, message: &str) -> (u16, Value) {
    (status, json!([{"message": message, "errorCode": code}]))
}

impl Backend for SandboxCrm {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<Result<http::Response<Bytes>, HttpError>> {
        let (status, body) = self.answer(&request);
        let body = if body.is_null() {
            Bytes::new()
        } else {
            Bytes::from(body.to_string())
        };
        Box::pin(async move {
            http::Response::builder()
                .status(status)
                .header("content-type", "application/json;charset=UTF-8")
                .header("x-request-id", "sandbox")
                .body(body)
                .map_err(|e| HttpError::InternalError(Some(e.to_string())))
        })
    }
}

/// Milliseconds since the Unix epoch: when a record the sandbox creates is created.
pub(crate) fn now_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The sandbox as the command line's built-in CRM (the `crm-sandbox` binary).
impl crm_host::cli::BuiltInCrm for SandboxCrm {
    fn backend(&self) -> Arc<dyn Backend> {
        Arc::new(self.clone())
    }

    fn tenants(&self) -> Vec<String> {
        SandboxCrm::tenants().map(str::to_owned).collect()
    }

    fn tenant_spec(&self, tenant: &str) -> TenantSpec {
        SandboxCrm::tenant_spec(tenant)
    }

    fn credential(&self, tenant: &str) -> String {
        SandboxCrm::credential(tenant)
    }

    fn instance_url(&self, tenant: &str) -> String {
        SandboxCrm::instance_url(tenant)
    }
}
