//! What every end-to-end test shares: one wasmtime runtime, the built component and the
//! probe guest, tenants on the stub or the sandbox, and readers for results and tool errors.

use crm_host::cache::ComponentCache;
use crm_host::credential::Credential;
use crm_host::tenant_db::DbLocation;
use crm_host::{
    AuditLog, Backend, CallError, CallRequest, Host, HostLimits, PluginVersion, Runtime, TenantSpec,
};
use crm_sandbox::SandboxCrm;
use crm_sandbox::stub::{Recorded, Reply, StubBackend};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use url::Url;

pub(crate) const ACCOUNT_ID: &str = "001000000000001AAA";

/// One compiled-component cache for the whole run, under `target/tmp` (kept between runs: an
/// entry is named by the component's bytes, so a rebuilt component gets a new one). Every
/// `crm-sandbox` process the tests start takes it as its `XDG_CACHE_HOME`, and the in-process
/// runtimes load from it too, instead of each compiling the component (8 s, 15 s of CPU, in a
/// debug build). It is filled by one process before any other starts, so parallel tests do not
/// all compile at once. Tests of the cache itself use caches of their own.
pub(crate) fn cache_home() -> &'static Path {
    static HOME: OnceLock<PathBuf> = OnceLock::new();
    HOME.get_or_init(|| {
        let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("crm-e2e-cache");
        let data = temp_dir("cache-fill");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_crm-sandbox"))
            .env("XDG_CACHE_HOME", &home)
            .arg("--data-dir")
            .arg(&data)
            .arg("precompile")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(!stderr.contains("compiled-component cache"), "{stderr}");
        let _ = std::fs::remove_dir_all(&data);
        home
    })
}

/// The cache of [`cache_home`], as the in-process runtimes open it.
fn shared_cache() -> &'static ComponentCache {
    static CACHE: OnceLock<ComponentCache> = OnceLock::new();
    CACHE.get_or_init(|| ComponentCache::shared(cache_home().join("crm-host")).unwrap())
}

/// The runtime most tests share, and the component loaded in it once for the whole run (held
/// here, so the runtime never compiles it again when no test happens to hold it).
fn shared() -> &'static (Arc<Runtime>, Arc<PluginVersion>) {
    static SHARED: OnceLock<(Arc<Runtime>, Arc<PluginVersion>)> = OnceLock::new();
    SHARED.get_or_init(|| {
        let limits = HostLimits {
            concurrent_calls: 128,
            ..HostLimits::default()
        };
        let runtime = Arc::new(Runtime::new(limits).unwrap());
        let plugin = load(&runtime);
        (runtime, plugin)
    })
}

pub(crate) fn runtime() -> Arc<Runtime> {
    shared().0.clone()
}

pub(crate) fn plugin_bytes() -> Vec<u8> {
    std::fs::read(crm_host::COMPONENT_PATH).unwrap()
}

pub(crate) fn plugin() -> Arc<PluginVersion> {
    shared().1.clone()
}

/// The component in `runtime`: already loaded there, or from the run's shared cache (a runtime
/// of a test's own, with other limits, deserializes it rather than compiling it).
pub(crate) fn load(runtime: &Runtime) -> Arc<PluginVersion> {
    runtime
        .load_cached(&plugin_bytes(), shared_cache())
        .unwrap()
        .0
}

pub(crate) fn probe(runtime: &Runtime) -> Arc<PluginVersion> {
    runtime
        .load(&std::fs::read(crm_sandbox::PROBE_PATH).unwrap())
        .unwrap()
}

/// The same component with a custom section appended: a distinct version that behaves alike.
pub(crate) fn relabelled_plugin(label: &str) -> Vec<u8> {
    let mut bytes = plugin_bytes();
    let name = b"crm-plugin-build";
    let mut payload = vec![name.len() as u8];
    payload.extend_from_slice(name);
    payload.extend_from_slice(label.as_bytes());
    bytes.push(0); // custom section id
    bytes.push(payload.len() as u8); // fits one LEB128 byte for short labels
    bytes.extend(payload);
    bytes
}

pub(crate) fn sf_tenant(
    id: &str,
    broker: &str,
    credential: &str,
    settings: &[(&str, &str)],
) -> TenantSpec {
    TenantSpec {
        tenant_id: id.into(),
        proxy_base: Url::parse(broker).unwrap(),
        credential: Credential::new(credential),
        settings: settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        results_dir: None,
        mappings: crm_host::tenant_db::DbLocation::Memory,
    }
}

pub(crate) struct Fixture {
    pub(crate) host: Arc<Host>,
    pub(crate) stub: StubBackend,
    pub(crate) audit: AuditLog,
}

/// Two tenants on different brokers with different credentials and settings.
pub(crate) fn fixture_on(
    runtime: Arc<Runtime>,
    stub: StubBackend,
    settings: &[(&str, &str)],
) -> Fixture {
    let audit = AuditLog::in_memory();
    let host = Host::new(runtime.clone(), Arc::new(stub.clone()), audit.clone());
    let plugin = load(&runtime);
    host.add_tenant(
        sf_tenant("t1", "https://broker-one.example.com", "cred-one", settings),
        plugin.clone(),
    )
    .unwrap();
    host.add_tenant(
        sf_tenant(
            "t2",
            "https://broker-two.example.com",
            "cred-two",
            &[("CRM_B_API_VERSION", "61.0")],
        ),
        plugin,
    )
    .unwrap();
    Fixture {
        host: Arc::new(host),
        stub,
        audit,
    }
}

pub(crate) fn fixture(stub: StubBackend) -> Fixture {
    fixture_on(runtime(), stub, &[])
}

pub(crate) fn call(tenant: &str, tool: &str, input: Value) -> CallRequest {
    CallRequest {
        tenant_id: tenant.into(),
        user_id: "user-7".into(),
        granted_scopes: vec![],
        instance_url: Some("https://acme.my.salesforce.com".into()),
        tool: tool.into(),
        input: input.to_string(),
    }
}

pub(crate) fn get_account(tenant: &str) -> CallRequest {
    call(
        tenant,
        "crmb_get_record",
        json!({"object": "Account", "record_id": ACCOUNT_ID}),
    )
}

/// A stub that answers every record fetch with the id it was asked for.
pub(crate) fn record_stub(delay: Duration) -> StubBackend {
    StubBackend::with_handler(move |request: &Recorded| {
        let id = request
            .uri
            .path()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string();
        let reply = Reply::json(
            200,
            json!({"attributes": {"type": "Account", "url": "/x"}, "Id": id, "Name": "Acme Energy"}),
        )
        .with_header("x-request-id", "corr-123");
        if delay.is_zero() {
            reply
        } else {
            Reply::Delay(delay, Box::new(reply))
        }
    })
}

pub(crate) fn tool_error(result: Result<String, CallError>) -> (String, String) {
    match result {
        Err(CallError::Tool(e)) => (e.kind().to_string(), e.message()),
        other => panic!("expected a tool error, got {other:?}"),
    }
}

pub(crate) fn probe_report(result: Result<String, CallError>) -> Value {
    serde_json::from_str(&result.expect("the probe reports")).unwrap()
}

pub(crate) fn output(result: Result<String, CallError>) -> Value {
    serde_json::from_str(&result.expect("the call succeeds")).unwrap()
}

/// The CRM A scopes the spec lists as required.
pub(crate) const ALL_SCOPES: &[&str] = crm_plugin::crma::REQUIRED_SCOPES;

pub(crate) const BROKER: &str = "https://broker.example.com";
pub(crate) const CREDENTIAL: &str = "signed-credential-t1";

pub(crate) fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("crm-e2e-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

pub(crate) fn hs_tenant(id: &str, mappings: DbLocation) -> TenantSpec {
    TenantSpec {
        tenant_id: id.into(),
        proxy_base: Url::parse(BROKER).unwrap(),
        credential: Credential::new(CREDENTIAL),
        // Fast retries so the rate-limit and failure tests stay quick.
        settings: vec![
            ("CRM_RETRY_BASE_MS".into(), "1".into()),
            ("CRM_READ_ATTEMPTS".into(), "3".into()),
        ],
        results_dir: None,
        mappings,
    }
}

pub(crate) fn host_with(backend: Arc<dyn Backend>, tenants: &[(&str, DbLocation)]) -> Host {
    let runtime = runtime();
    let plugin = plugin();
    let host = Host::new(runtime, backend, AuditLog::discard());
    for (id, location) in tenants {
        host.add_tenant(hs_tenant(id, location.clone()), plugin.clone())
            .unwrap();
    }
    host
}

pub(crate) fn host(stub: &StubBackend) -> Host {
    host_with(Arc::new(stub.clone()), &[("t1", DbLocation::Memory)])
}

pub(crate) fn hs_call(tool: &str, input: Value, scopes: &[&str]) -> CallRequest {
    CallRequest {
        tenant_id: "t1".into(),
        user_id: "user-7".into(),
        granted_scopes: scopes.iter().map(|s| s.to_string()).collect(),
        instance_url: None,
        tool: tool.into(),
        input: input.to_string(),
    }
}

pub(crate) async fn run(
    host: &Host,
    tool: &str,
    input: Value,
    scopes: &[&str],
) -> Result<Value, CallError> {
    let out = host.call(hs_call(tool, input, scopes)).await?;
    Ok(serde_json::from_str(&out).unwrap())
}

pub(crate) fn path_of(r: &Recorded) -> String {
    r.uri
        .path()
        .trim_start_matches("/sdk/proxy/hubspot")
        .to_string()
}

/// HubSpot-shaped answers for every endpoint the tools use.
pub(crate) fn hubspot_stub() -> StubBackend {
    StubBackend::with_handler(|r: &Recorded| {
        let path = path_of(r);
        let body = match (r.method.as_str(), path.as_str()) {
            ("POST", p) if p.ends_with("/search") => {
                json!({"total": 1, "results": [{"id": "51", "properties": {"email": "ana@example.com", "hs_object_id": "51"}, "createdAt": "2025-01-01T00:00:00Z", "updatedAt": "2025-01-02T00:00:00Z", "archived": false}]})
            }
            ("POST", "/crm/v3/objects/companies/merge") => json!({"id": "1", "properties": {}}),
            ("GET", p) if p.starts_with("/crm/v3/objects/") => {
                let id = p.rsplit('/').next().unwrap_or_default();
                json!({"id": id, "properties": {"email": "ana@example.com", "hs_object_id": id}, "createdAt": "2025-01-01T00:00:00Z", "updatedAt": "2025-01-02T00:00:00Z", "archived": false})
            }
            ("POST", _) => {
                return Reply::json(
                    201,
                    json!({"id": "901", "properties": {}, "createdAt": "2026-11-21T09:30:00Z"}),
                );
            }
            ("PATCH", _) => json!({"id": "7", "properties": {}}),
            ("PUT", _) => {
                json!({"status": "COMPLETE", "results": [{"from": {"id": "5"}, "to": {"id": "6"}, "associationSpec": {"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": 279}}]})
            }
            ("GET", p) if p.starts_with("/crm/v4/") => {
                json!({"results": [{"toObjectId": 6, "associationTypes": [{"category": "HUBSPOT_DEFINED", "typeId": 3, "label": null}]}]})
            }
            ("GET", "/account-info/v3/details") => {
                json!({"portalId": 12345678, "timeZone": "US/Eastern", "companyCurrency": "USD", "uiDomain": "app.hubspot.com", "dataHostingLocation": "na1"})
            }
            ("GET", _) => json!({"results": []}),
            _ => return Reply::json(405, json!({"status": "error", "message": "no"})),
        };
        Reply::json(200, body)
    })
}

pub(crate) fn hubspot_error(status: u16, body: Value) -> Reply {
    Reply::json(status, body)
}

/// The sandbox tenant `acme` with every required scope, on a fresh sandbox.
pub(crate) fn acme_sandbox() -> (Host, impl Fn(&str, Value) -> CallRequest) {
    let host = host_with(Arc::new(SandboxCrm::new()), &[]);
    let mut spec = SandboxCrm::tenant_spec("acme");
    spec.mappings = DbLocation::Memory;
    host.add_tenant(spec, plugin()).unwrap();
    let acme = |tool: &str, input: Value| CallRequest {
        tenant_id: "acme".into(),
        user_id: "demo-user".into(),
        granted_scopes: ALL_SCOPES.iter().map(|s| s.to_string()).collect(),
        instance_url: None,
        tool: tool.into(),
        input: input.to_string(),
    };
    (host, acme)
}

pub(crate) fn ok(out: Result<String, CallError>) -> Value {
    serde_json::from_str(&out.unwrap_or_else(|e| panic!("{e}"))).unwrap()
}

/// A component with nothing but a custom section carrying `policy`: enough for the host to
/// read it (and, when it is acceptable, to go on to linking).
pub(crate) fn component_with_policy(policy: Option<&str>) -> Vec<u8> {
    let mut wasm = b"\0asm\x0d\0\x01\0".to_vec();
    if let Some(text) = policy {
        wasm.extend(policy_section(text));
    }
    wasm
}

/// A custom section holding an egress policy, to append to a component's bytes.
pub(crate) fn policy_section(text: &str) -> Vec<u8> {
    let name = crm_host::egress::SECTION.as_bytes();
    let mut payload = vec![name.len() as u8];
    payload.extend_from_slice(name);
    payload.extend_from_slice(text.as_bytes());
    let mut section = vec![0];
    let mut len = payload.len();
    loop {
        let byte = (len & 0x7f) as u8;
        len >>= 7;
        section.push(if len == 0 { byte } else { byte | 0x80 });
        if len == 0 {
            break;
        }
    }
    section.extend(payload);
    section
}

/// The smallest acceptable policy: nothing may be sent.
pub(crate) const EMPTY_POLICY: &str = "version = 1\nheaders = []\nendpoint = []";

/// Both sandbox tenants (acme and globex) in one host, each with its result files under
/// `dir/<tenant>` and `settings` added.
pub(crate) fn sandbox_tenants(dir: &std::path::Path, settings: &[(&str, &str)]) -> Arc<Host> {
    let host = Arc::new(host_with(Arc::new(SandboxCrm::new()), &[]));
    for tenant in ["acme", "globex"] {
        let mut spec = SandboxCrm::tenant_spec(tenant);
        spec.mappings = DbLocation::Memory;
        spec.results_dir = Some(dir.join(tenant));
        spec.settings
            .extend(settings.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        host.add_tenant(spec, plugin()).unwrap();
    }
    host
}

/// A tenants file for both sandbox tenants: `acme-token` acts for acme/alice and
/// `globex-token` for globex/bob; `extra` is appended.
pub(crate) fn two_tenants_file(extra: &str) -> String {
    let hash = crm_host::mcp::tenants::token_hash;
    format!(
        "[[tenants]]\nid = \"acme\"\n[[tenants]]\nid = \"globex\"\n\
         [[tokens]]\nsha256 = \"{}\"\ntenant = \"acme\"\nuser = \"alice\"\n\
         [[tokens]]\nsha256 = \"{}\"\ntenant = \"globex\"\nuser = \"bob\"\n{extra}",
        hash("acme-token"),
        hash("globex-token"),
    )
}

/// The token table of a tenants file, every token granted the spec's scopes and each sandbox
/// tenant's org for record links.
pub(crate) fn sandbox_tokens(file: &str) -> crm_host::mcp::tenants::TokenTable {
    let scopes: Vec<String> = ALL_SCOPES.iter().map(|s| s.to_string()).collect();
    crm_host::mcp::tenants::TenantsFile::parse(file)
        .unwrap()
        .tokens(&scopes, |t| Some(SandboxCrm::instance_url(&t.id)))
        .unwrap()
}

/// The component's peak linear memory in the last call audited.
pub(crate) fn last_peak(audit: &crm_host::AuditLog) -> u64 {
    audit
        .events()
        .iter()
        .rev()
        .find_map(|e| match e {
            crm_host::audit::AuditEvent::ToolCall {
                peak_memory_bytes, ..
            } => Some(*peak_memory_bytes),
            _ => None,
        })
        .expect("the call is audited")
}
