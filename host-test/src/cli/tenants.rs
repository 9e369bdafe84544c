//! `crm-host tenants import|swap|status`: the fleet's registry in the PostgreSQL store, and
//! what each host serving it reports.

use super::store::Store;
use crate::Runtime;
use crate::governance::HostPolicy;
use crate::mcp::tenants::TenantsFile;
use std::sync::Arc;

/// What `crm-host tenants` does.
#[derive(Debug, clap::Subcommand)]
pub(super) enum TenantsAction {
    /// Replace the registry with a tenants file (checked first): tenants, tokens, identity
    /// providers, policies, the operator's token. Compiles nothing.
    Import {
        #[arg(value_name = "FILE")]
        tenants_file: std::path::PathBuf,
    },
    /// Make a component the one a tenant runs on every host (calls in flight finish on the old
    /// one; listening clients are told the tool list changed).
    Swap {
        /// The tenant's id.
        #[arg(value_name = "TENANT")]
        tenant_id: String,
        /// The component (.wasm); it must load in this host first.
        #[arg(value_name = "COMPONENT")]
        wasm: std::path::PathBuf,
    },
    /// For each host serving the store: the registry version it applied, when it last
    /// reported, and the tenants it cannot serve, with why (JSON).
    Status,
}

/// Runs one `crm-host tenants` action; `runtime` starts wasmtime with the component, which
/// only a swap needs (to check that the new component loads). Returns the JSON to print.
pub(super) fn run(
    store: &Store,
    runtime: impl FnOnce() -> Result<Arc<Runtime>, String>,
    action: &TenantsAction,
) -> Result<serde_json::Value, String> {
    let fleet = store
        .postgres()
        .ok_or("the tenants registry lives in a PostgreSQL --store (or CRM_HOST_STORE)")?;
    match action {
        TenantsAction::Import { tenants_file: file } => {
            let text =
                std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
            let parsed = checked(&text).map_err(|e| format!("{}: {e}", file.display()))?;
            let version = fleet.put_registry(&text).map_err(|e| e.to_string())?;
            Ok(serde_json::json!({
                "registry_version": version,
                "tenants": parsed.tenants.iter().map(|t| t.id.clone()).collect::<Vec<_>>(),
                "tokens": parsed.tokens.len(),
                "admin": parsed.admin.is_some(),
            }))
        }
        TenantsAction::Swap {
            tenant_id: tenant,
            wasm: component,
        } => {
            let wasm =
                std::fs::read(component).map_err(|e| format!("{}: {e}", component.display()))?;
            // Only a component this host can load goes to the fleet.
            runtime()?
                .load(&wasm)
                .map_err(|e| format!("{}: {e}", component.display()))?;
            let sha256 = fleet
                .swap_component(tenant, &wasm)
                .map_err(|e| e.to_string())?;
            Ok(serde_json::json!({"tenant": tenant, "component_sha256": sha256}))
        }
        TenantsAction::Status => {
            let registry = fleet.registry().map_err(|e| e.to_string())?;
            let hosts = fleet.fleet_hosts().map_err(|e| e.to_string())?;
            Ok(serde_json::json!({
                "registry_version": registry.map(|(version, _)| version),
                "hosts": hosts,
            }))
        }
    }
}

/// A tenants file as every host would read it: its format, and each tenant's own policy
/// table. What may differ between hosts (credential variables) is each host's to check.
fn checked(text: &str) -> Result<TenantsFile, String> {
    let file = TenantsFile::parse(text)?;
    for tenant in &file.tenants {
        let settings = tenant.policy.settings();
        HostPolicy::from_settings(settings.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .map_err(|e| format!("tenant {:?}'s policy: {e}", tenant.id))?;
    }
    Ok(file)
}
