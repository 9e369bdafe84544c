//! `crm-host serve`'s tenants: read from a tenants file, or from the fleet's registry in the
//! database, and applied to the host, the token gate and the operator's credential sources.
//! With a registry, every change another host imports (a new tenant, a revoked token, a
//! policy) is applied here within a second, without a restart; a tenant whose entry did not
//! change keeps its entry (and its calls in flight, connections and component) untouched.

use super::store::Store;
use super::{BuiltInCrm, NO_BUILT_IN_CRM, Options, env_settings, tenant_results_dir};
use crate::backend::Backend;
use crate::credential::Credential;
use crate::mcp::admin::{CredentialSource, Credentials};
use crate::mcp::tenants::{SharedTokens, TenantEntry, TenantsFile};
use crate::tenant_db::postgres::StoreEvent;
use crate::tenant_db::{DbLocation, PgStore};
use crate::{Host, PluginVersion, TenantSpec};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast::error::RecvError;

/// The tenants a server runs, and what it needs to run more.
pub(super) struct Tenants {
    pub(super) options: Options,
    pub(super) store: Store,
    pub(super) built_in: Option<Arc<dyn BuiltInCrm>>,
    pub(super) host: Arc<Host>,
    /// The component a tenant runs until one is swapped in for it.
    pub(super) plugin: Arc<PluginVersion>,
    pub(super) jwks_backend: Arc<dyn Backend>,
    pub(super) tokens: SharedTokens,
    pub(super) credentials: Credentials,
    /// The registry version applied last, and each tenant's entry as applied.
    pub(super) applied: Mutex<(i64, HashMap<String, TenantEntry>)>,
}

impl Tenants {
    /// Applies a tenants file (registry `version`): adds new tenants, registers changed ones
    /// again (keeping the component each runs), stops serving those no longer listed, and
    /// replaces the tokens and credential sources. Nothing changes when a tenant is refused.
    pub(super) fn apply(&self, version: i64, file: &TenantsFile) -> Result<(), String> {
        let built_in = self.built_in.as_deref();
        let specs: Vec<(TenantEntry, TenantSpec, CredentialSource)> = file
            .tenants
            .iter()
            .map(|t| {
                let (spec, source) = tenant_spec(&self.options, &self.store, built_in, t)?;
                Ok((t.clone(), spec, source))
            })
            .collect::<Result<_, String>>()?;
        let instance_url = |t: &TenantEntry| {
            t.instance_url.clone().or_else(|| {
                t.proxy_base
                    .is_none()
                    .then(|| built_in.map(|b| b.instance_url(&t.id)))
                    .flatten()
            })
        };
        let tokens = file.tokens_with_jwks(
            &self.options.scopes,
            instance_url,
            Some(self.jwks_backend.clone()),
        )?;
        let mut applied = self.applied.lock().unwrap_or_else(|e| e.into_inner());
        let mut sources = HashMap::new();
        let mut now = HashMap::new();
        for (entry, spec, source) in specs {
            if applied.1.get(&entry.id) != Some(&entry) {
                let plugin = self
                    .host
                    .plugin_of(&entry.id)
                    .unwrap_or_else(|| self.plugin.clone());
                self.host
                    .add_tenant(spec, plugin)
                    .map_err(|e| e.to_string())?;
            }
            sources.insert(entry.id.clone(), source);
            now.insert(entry.id.clone(), entry);
        }
        for gone in applied.1.keys().filter(|id| !now.contains_key(*id)) {
            self.host.remove_tenant(gone);
        }
        self.tokens.replace(tokens);
        self.credentials.replace(sources);
        *applied = (version, now);
        Ok(())
    }

    /// Applies the registry whenever another host imports a new one (and after this host's
    /// listener reconnects, when it may have missed one).
    pub(super) fn follow(self: Arc<Self>, store: Arc<PgStore>) {
        let mut events = store.events();
        tokio::spawn(async move {
            loop {
                let reload = match events.recv().await {
                    Ok(StoreEvent::Registry { .. } | StoreEvent::Resync) => true,
                    Ok(_) => false,
                    Err(RecvError::Lagged(_)) => true,
                    Err(RecvError::Closed) => return,
                };
                if !reload {
                    continue;
                }
                let (tenants, store) = (self.clone(), store.clone());
                let _ = tokio::task::spawn_blocking(move || tenants.reload(&store)).await;
            }
        });
    }

    /// Reads the registry and applies it if it is newer than what this host applied.
    fn reload(&self, store: &PgStore) {
        let current = self.applied.lock().unwrap_or_else(|e| e.into_inner()).0;
        match store.registry() {
            Ok(Some((version, text))) if version > current => {
                let applied = TenantsFile::parse(&text).and_then(|file| self.apply(version, &file));
                if let Err(e) = applied {
                    tracing::warn!("tenants registry version {version} not applied: {e}");
                }
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("reading the tenants registry: {e}"),
        }
    }
}

/// What the host needs to serve one tenant of the file, and where an operator's reconnect
/// takes its credential from.
pub(super) fn tenant_spec(
    options: &Options,
    store: &Store,
    built_in: Option<&dyn BuiltInCrm>,
    tenant: &TenantEntry,
) -> Result<(TenantSpec, CredentialSource), String> {
    let source = match &tenant.credential_env {
        Some(var) if tenant.proxy_base.is_some() => CredentialSource::Env(var.clone()),
        _ => CredentialSource::Fixed(
            built_in
                .ok_or(NO_BUILT_IN_CRM)?
                .tenant_spec(&tenant.id)
                .credential,
        ),
    };
    let mut spec = match &tenant.proxy_base {
        None if built_in.is_some_and(|b| b.tenants().contains(&tenant.id)) => {
            built_in.ok_or(NO_BUILT_IN_CRM)?.tenant_spec(&tenant.id)
        }
        None => {
            return Err(format!(
                "{:?} is not a sandbox tenant; give it a proxy_base",
                tenant.id
            ));
        }
        Some(proxy_base) => {
            let var = tenant.credential_env.as_deref().ok_or_else(|| {
                format!("tenant {:?} needs credential_env for its broker", tenant.id)
            })?;
            let credential = std::env::var(var)
                .map_err(|_| format!("tenant {:?}: {var} is not set", tenant.id))?;
            TenantSpec {
                tenant_id: tenant.id.clone(),
                proxy_base: proxy_base.clone(),
                credential: Credential::new(credential),
                settings: Vec::new(),
                results_dir: None,
                mappings: DbLocation::Memory,
            }
        }
    };
    spec.settings.extend(env_settings());
    // The tenant's own policy table wins over the process-wide environment.
    spec.settings.extend(tenant.policy.settings());
    spec.results_dir = Some(match &options.results_dir {
        Some(root) => root.join(&tenant.id),
        None => tenant_results_dir(&options.data_dir, &tenant.id)?,
    });
    spec.mappings = store.location(&tenant.id)?;
    Ok((spec, source))
}

/// `crm-host tenants import|swap`: prints one JSON line saying what the fleet now runs.
pub(super) fn run(
    store: &Store,
    runtime: &crate::Runtime,
    action: &super::TenantsAction,
) -> Result<serde_json::Value, String> {
    let fleet = store
        .postgres()
        .ok_or("the tenants registry lives in a PostgreSQL --store (or CRM_HOST_STORE)")?;
    match action {
        super::TenantsAction::Import { tenants_file: file } => {
            let text =
                std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
            let parsed =
                TenantsFile::parse(&text).map_err(|e| format!("{}: {e}", file.display()))?;
            let version = fleet.put_registry(&text).map_err(|e| e.to_string())?;
            Ok(serde_json::json!({
                "registry_version": version,
                "tenants": parsed.tenants.iter().map(|t| t.id.clone()).collect::<Vec<_>>(),
                "tokens": parsed.tokens.len(),
            }))
        }
        super::TenantsAction::Swap {
            tenant_id: tenant,
            wasm: component,
        } => {
            let wasm =
                std::fs::read(component).map_err(|e| format!("{}: {e}", component.display()))?;
            // Only a component this host can load goes to the fleet.
            runtime
                .load(&wasm)
                .map_err(|e| format!("{}: {e}", component.display()))?;
            let sha256 = fleet
                .swap_component(tenant, &wasm)
                .map_err(|e| e.to_string())?;
            Ok(serde_json::json!({"tenant": tenant, "component_sha256": sha256}))
        }
    }
}
