//! `crm-host tenants import|export|revoke|swap|status`: the fleet's registry in the PostgreSQL
//! store, and what each host serving it reports. The registry is rows: an import writes only the
//! rows that differ from the file, a revocation one row per token, and every host applies just
//! those.

use super::registry::rows::{FileFormat, file_of, rows_of, text_of};
use super::store::Store;
use crate::Runtime;
use crate::governance::HostPolicy;
use crate::mcp::tenants::TenantsFile;
use std::sync::Arc;

/// What `crm-host tenants` does.
#[derive(Debug, clap::Subcommand)]
pub(super) enum TenantsAction {
    /// Make the registry what a tenants file (checked first) says: tenants, tokens, identity
    /// providers, policies, the operator's token. Only the rows that differ are written, and
    /// hosts apply only those; a file equal to the registry changes nothing. Compiles nothing.
    Import {
        #[arg(value_name = "FILE")]
        tenants_file: std::path::PathBuf,
    },
    /// Write the registry as a tenants file (which `import` reads back unchanged): JSON when
    /// its name ends in `.json`, TOML otherwise.
    Export {
        #[arg(value_name = "FILE")]
        tenants_file: std::path::PathBuf,
    },
    /// Revoke bearer tokens by their hex SHA-256, as the tenants file lists them: every host
    /// refuses them within a second. Nothing is revoked if one is not listed.
    Revoke {
        #[arg(value_name = "SHA256", required = true)]
        sha256: Vec<String>,
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
            let written = fleet
                .replace_registry(rows_of(&parsed))
                .map_err(|e| e.to_string())?;
            Ok(serde_json::json!({
                "registry_version": written.version,
                "rows_changed": written.changed,
                "unchanged": written.changed == 0,
                "tenants": parsed.tenants.len(),
                "tokens": parsed.tokens.len(),
                "admin": parsed.admin.is_some(),
            }))
        }
        TenantsAction::Export { tenants_file: file } => {
            let read = fleet
                .registry_rows(0)
                .map_err(|e| e.to_string())?
                .ok_or("the store has no tenants registry yet: nothing to export")?;
            let version = read.version;
            let parsed = file_of(read)?;
            std::fs::write(file, text_of(&parsed, FileFormat::of_path(file))?)
                .map_err(|e| format!("{}: {e}", file.display()))?;
            Ok(serde_json::json!({
                "registry_version": version,
                "written": file.display().to_string(),
                "tenants": parsed.tenants.len(),
                "tokens": parsed.tokens.len(),
                "admin": parsed.admin.is_some(),
            }))
        }
        TenantsAction::Revoke { sha256 } => {
            let hashes = sha256
                .iter()
                .map(|h| {
                    let hex = h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit());
                    hex.then(|| h.to_ascii_lowercase()).ok_or_else(|| {
                        format!("{h:?} is not a hex SHA-256 (64 digits, as the tenants file lists tokens)")
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let written = fleet.revoke_tokens(hashes).map_err(|e| e.to_string())?;
            Ok(serde_json::json!({
                "registry_version": written.version,
                "revoked": written.changed,
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
            let version = fleet.registry_version().map_err(|e| e.to_string())?;
            let hosts = fleet.fleet_hosts().map_err(|e| e.to_string())?;
            Ok(serde_json::json!({
                "registry_version": version,
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
