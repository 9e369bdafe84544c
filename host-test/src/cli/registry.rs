//! `crm-host serve`'s tenants: read from a tenants file, or from the fleet's registry in the
//! database, and applied to the host, the token gate, the operator's token and the operator's
//! credential sources. With a registry, every change another host imports (a new tenant, a
//! revoked token, a policy, a rotated operator token) is applied here within a second, without
//! a restart; a tenant whose entry did not change keeps its entry (and its calls in flight,
//! connections and component) untouched.
//!
//! A version is applied tenant by tenant ([`plan`]): a tenant that cannot be built on this host
//! is taken out of service here, and every other change, token changes and revocations above
//! all, still applies. What this host could not serve is named in `/readyz`, `/metrics` and, for
//! the whole fleet, `crm-host tenants status` ([`Tenants::report`]).

/// Following the registry's rows: each change applied by the rows it changed.
pub(super) mod follow;
/// Deciding what a version changes, apart from doing it.
mod plan;
/// The registry's rows: a tenants file split into them, and read back as a change.
pub(super) mod rows;

use super::store::Store;
use super::{BuiltInCrm, NO_BUILT_IN_CRM, Options, env_settings, tenant_results_dir};
use crate::backend::Backend;
use crate::credential::Credential;
use crate::mcp::admin::{CredentialSource, Credentials, OperatorToken};
use crate::mcp::tenants::{SharedTokens, TenantEntry, TenantsFile, TokenTable};
use crate::metrics::Metrics;
use crate::tenant_db::postgres::{HostReport, OutOfService};
use crate::tenant_db::{DbLocation, PgStore};
use crate::{Host, PluginVersion, TenantSpec};
use foldhash::HashMap;
use plan::{Applied, Effects};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often a host reports itself to the fleet and tries its out-of-service tenants again.
pub(super) const HEARTBEAT: Duration = Duration::from_secs(3);

/// Why a listed tenant cannot be served on this host: what the operator must fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Unbuildable {
    #[error(
        "{var} is not set; set it on every host (each host needs every tenant's credential \
         variable), then restart this one"
    )]
    CredentialNotSet { var: String },
    #[error(
        "it has a proxy_base but no credential_env: name the variable holding its broker \
         credential and import the registry again"
    )]
    NoCredentialEnv,
    #[error("it is not a sandbox tenant: give it a proxy_base and import the registry again")]
    NotSandbox,
    #[error("{NO_BUILT_IN_CRM}")]
    NoBuiltInCrm,
    #[error(
        "this host serves {serves} tenants and this is a {is} tenant: serve it from hosts of its \
         own kind"
    )]
    OtherKind {
        serves: &'static str,
        is: &'static str,
    },
    #[error("{0} (this host tries again every few seconds)")]
    Here(String),
}

/// The tenants a server runs, and what it needs to run more.
pub(super) struct Tenants {
    pub(super) options: Options,
    pub(super) store: Store,
    pub(super) built_in: Option<Arc<dyn BuiltInCrm>>,
    pub(super) host: Arc<Host>,
    /// The component a tenant runs until one is swapped in for it.
    pub(super) plugin: Arc<PluginVersion>,
    pub(super) jwks_backend: Arc<dyn Backend>,
    /// Whether this host reaches its tenants through brokers (else through the built-in CRM).
    pub(super) on_broker: bool,
    pub(super) tokens: SharedTokens,
    pub(super) credentials: Credentials,
    pub(super) operator: OperatorToken,
    pub(super) metrics: Arc<Metrics>,
    /// This host's name in the fleet's reports.
    pub(super) host_id: String,
    pub(super) applied: Mutex<AppliedRegistry>,
    /// Whether the last report reached the store (a failure is logged once, not every beat).
    pub(super) reported: AtomicBool,
    /// Whether this host follows the fleet's registry (else its tenants file).
    pub(super) follows: AtomicBool,
}

/// The registry as this host applied it.
#[derive(Default)]
pub(super) struct AppliedRegistry {
    version: i64,
    tenants: HashMap<String, Applied>,
    /// The tenants out of service here, with why: kept as tenants change, never recounted.
    out: BTreeMap<String, String>,
}

/// [`Effects`] on this host, with what one application reads once for all its tenants: the
/// environment's settings and, on the fleet's store, every tenant's swapped-in component.
struct OnHost<'a> {
    tenants: &'a Tenants,
    env: Environment,
    swapped: Swapped,
}

/// The process's environment, read once per application instead of once per tenant (a
/// lookup walks the whole environment under a lock): the `CRM_*` settings every tenant gets,
/// and each variable by name, for the tenants' credential variables.
pub(super) struct Environment {
    settings: Vec<(String, String)>,
    /// Shared: every tenant whose credential is in one variable holds the same value.
    vars: HashMap<String, Arc<str>>,
}

impl Environment {
    pub(super) fn now() -> Self {
        Environment {
            settings: env_settings(),
            // As `std::env::var` would: a value that is not Unicode is not set.
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?.into())))
                .collect(),
        }
    }
}

impl<'a> OnHost<'a> {
    fn new(tenants: &'a Tenants) -> Self {
        OnHost {
            tenants,
            env: Environment::now(),
            swapped: Swapped::default(),
        }
    }
}

/// The fleet store's swapped-in components, read at the first tenant that needs them (one
/// query for every tenant), each loaded once however many tenants run it.
#[derive(Default)]
struct Swapped {
    by_tenant: Option<std::collections::HashMap<String, String>>,
    loaded: HashMap<String, Option<Arc<PluginVersion>>>,
}

impl Effects for OnHost<'_> {
    fn build(&mut self, entry: &TenantEntry) -> Result<(), String> {
        self.tenants
            .build(entry, &self.env, &mut self.swapped)
            .map_err(|e| e.to_string())
    }
    fn take_out(&mut self, tenant: &str, why: &str) {
        self.tenants.host.take_out_of_service(tenant, why);
    }
    fn remove(&mut self, tenant: &str) {
        self.tenants.host.remove_tenant(tenant);
    }
}

impl Tenants {
    /// Applies a tenants file (registry `version`), tenant by tenant: adds new tenants,
    /// registers changed ones again (keeping the component each runs), tries those out of
    /// service again, stops serving those no longer listed, takes out of service those that
    /// cannot be built here; and replaces the tokens, the operator's token and the credential
    /// sources, whatever becomes of the tenants. Returns the tenants out of service, with why.
    pub(super) fn apply(&self, version: i64, file: Arc<TenantsFile>) -> BTreeMap<String, String> {
        let mut applied = self.applied.lock().unwrap_or_else(|e| e.into_inner());
        // Who may call is set on a thread of its own while the tenants are built: neither
        // reads the other, a hundred thousand tenants take half the time on two cores, and a
        // revocation never waits on a tenant's build (loading a swapped component takes
        // seconds).
        std::thread::scope(|scope| {
            scope.spawn(|| self.apply_access(version, &file));
            self.apply_tenants(&mut applied, version, file.clone())
        })
    }

    /// The tokens, the operator's token and the credential sources of `file`.
    fn apply_access(&self, version: i64, file: &TenantsFile) {
        let tokens = self.token_table(file).unwrap_or_else(|e| {
            // `tenants import` checks what could fail here; a registry written otherwise
            // admits nobody rather than tokens it may have revoked.
            tracing::error!("tenants registry version {version}: no token is accepted: {e}");
            TokenTable::default()
        });
        let mut var = None;
        self.credentials.replace(
            file.tenants
                .iter()
                .filter_map(|t| Some((t.id.clone(), self.credential_source(t, &mut var).ok()?)))
                .collect(),
        );
        self.tokens.replace(tokens);
        self.operator
            .replace(file.admin.as_ref().map(|a| a.sha256.clone()));
    }

    /// The tenants' part of [`Tenants::apply`] (all a retry needs: the tokens are as they were).
    fn apply_tenants(
        &self,
        applied: &mut AppliedRegistry,
        version: i64,
        file: Arc<TenantsFile>,
    ) -> BTreeMap<String, String> {
        let steps = plan::plan(&applied.tenants, &file.tenants);
        self.host.reserve_tenants(steps.len());
        let tenants: HashMap<String, Applied> =
            plan::carry_out(&applied.tenants, steps, &mut OnHost::new(self))
                .into_iter()
                .collect();
        let out = plan::out_of_service(&tenants);
        self.settle(
            applied,
            AppliedRegistry {
                version,
                tenants,
                out,
            },
        )
    }

    /// Records what was applied, logs what changed for the operator, and sets the metrics.
    fn settle(
        &self,
        applied: &mut AppliedRegistry,
        now: AppliedRegistry,
    ) -> BTreeMap<String, String> {
        let (newly_out, back) = plan::changes(&applied.tenants, &now.tenants);
        for (tenant, why) in &newly_out {
            tracing::warn!("tenant {tenant} is out of service on this host: {why}");
        }
        for tenant in &back {
            tracing::warn!("tenant {tenant} is back in service on this host");
        }
        self.metrics.registry_version.set(now.version);
        self.metrics
            .tenants_out_of_service
            .set(now.out.len() as i64);
        *applied = now;
        applied.out.clone()
    }

    /// Records what `steps` did to the tenants they name (those `now` holds, and those
    /// `removed`), leaving every other tenant as it was applied; logs what changed for the
    /// operator and sets the metrics.
    fn settle_steps(
        &self,
        applied: &mut AppliedRegistry,
        version: i64,
        now: Vec<(String, Applied)>,
        removed: Vec<String>,
    ) {
        for id in removed {
            applied.tenants.remove(&id);
            if applied.out.remove(&id).is_some() {
                tracing::warn!("tenant {id} is no longer listed (it was out of service here)");
            }
        }
        applied.tenants.reserve(now.len());
        for (id, state) in now {
            let why = match &state {
                Applied::OutOfService(_, why) | Applied::Unreadable(why) => Some(why.clone()),
                Applied::Serving(_) => None,
            };
            match why {
                Some(why) => {
                    if applied.out.get(&id) != Some(&why) {
                        tracing::warn!("tenant {id} is out of service on this host: {why}");
                    }
                    applied.out.insert(id.clone(), why);
                }
                None => {
                    if applied.out.remove(&id).is_some() {
                        tracing::warn!("tenant {id} is back in service on this host");
                    }
                }
            }
            applied.tenants.insert(id, state);
        }
        applied.version = applied.version.max(version);
        self.metrics.registry_version.set(applied.version);
        self.metrics
            .tenants_out_of_service
            .set(applied.out.len() as i64);
    }

    /// The token table of `file`, each token's principal completed from its tenant.
    fn token_table(&self, file: &TenantsFile) -> Result<TokenTable, String> {
        file.tokens_with_jwks(
            &self.options.scopes,
            |t| self.instance_url(t),
            Some(self.jwks_backend.clone()),
        )
    }

    /// The Salesforce org URL of a tenant's principals: its own, else the built-in CRM's.
    fn instance_url(&self, tenant: &TenantEntry) -> Option<String> {
        tenant.instance_url.clone().or_else(|| {
            tenant
                .proxy_base
                .is_none()
                .then(|| self.built_in.as_deref().map(|b| b.instance_url(&tenant.id)))
                .flatten()
        })
    }

    /// Registers one tenant on the host, on the component it runs (the one swapped in for it
    /// in the fleet's store, else this host's).
    fn build(
        &self,
        entry: &TenantEntry,
        env: &Environment,
        swapped: &mut Swapped,
    ) -> Result<(), Unbuildable> {
        if entry.proxy_base.is_some() != self.on_broker {
            let kind = |broker| if broker { "broker" } else { "sandbox" };
            return Err(Unbuildable::OtherKind {
                serves: kind(self.on_broker),
                is: kind(entry.proxy_base.is_some()),
            });
        }
        let spec = tenant_spec(
            &self.options,
            &self.store,
            self.built_in.as_deref(),
            entry,
            env,
        )?;
        let plugin = self
            .host
            .plugin_of(&entry.id)
            .or_else(|| self.swapped_component(&entry.id, swapped))
            .unwrap_or_else(|| self.plugin.clone());
        // Its store and results directory open at its first call: listing costs no file.
        self.host
            .list_tenant(spec, plugin)
            .map_err(|e| Unbuildable::Here(e.to_string()))
    }

    /// The component the fleet's store says `tenant` runs, loaded, for a tenant this host is
    /// (again) adding; none without one (or when it does not load: the host's own is used).
    fn swapped_component(&self, tenant: &str, swapped: &mut Swapped) -> Option<Arc<PluginVersion>> {
        let store = self.store.postgres()?;
        let by_tenant = swapped.by_tenant.get_or_insert_with(|| {
            store
                .tenant_components()
                .inspect_err(|e| tracing::warn!("the swapped components: {e}"))
                .unwrap_or_default()
        });
        let sha256 = by_tenant.get(tenant)?.clone();
        let loaded = swapped.loaded.entry(sha256.clone()).or_insert_with(|| {
            store
                .component(&sha256)
                .map_err(|e| e.to_string())
                .and_then(|wasm| wasm.ok_or_else(|| "not in the store".to_string()))
                .and_then(|wasm| self.host.runtime().load(&wasm).map_err(|e| e.to_string()))
                .inspect_err(|e| tracing::warn!("the swapped component {sha256}: {e}"))
                .ok()
        });
        loaded.clone()
    }

    /// Where an operator's reconnect takes `tenant`'s credential from.
    /// `last` is the variable name the previous tenant's source held, shared with this one
    /// when it is the same (a hundred thousand tenants may name one variable).
    pub(super) fn credential_source(
        &self,
        tenant: &TenantEntry,
        last: &mut Option<Arc<str>>,
    ) -> Result<CredentialSource, Unbuildable> {
        credential_source(self.built_in.as_deref(), tenant, last)
    }

    /// Until `stop`: every [`HEARTBEAT`], tries the tenants out of service again (a store that
    /// was away, a directory made since) and reports this host to the fleet's store, if any.
    pub(super) fn heartbeat(self: Arc<Self>, stop: CancellationToken) {
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(HEARTBEAT) => {}
                }
                let tenants = self.clone();
                let _ = tokio::task::spawn_blocking(move || {
                    tenants.retry_out_of_service();
                    if let Some(store) = tenants.store.postgres() {
                        if tenants.follows.load(Ordering::SeqCst) {
                            // A change whose announcement was lost (a listener that died
                            // unnoticed) is read here, a beat later at worst.
                            tenants.catch_up(store);
                        }
                        tenants.report(store);
                    }
                })
                .await;
            }
        });
    }

    /// Builds the out-of-service tenants again (tokens stay as they are; a tenant whose row
    /// this host cannot read waits for the row to change).
    fn retry_out_of_service(&self) {
        let mut applied = self.applied.lock().unwrap_or_else(|e| e.into_inner());
        let entries: Vec<Arc<TenantEntry>> = applied
            .out
            .keys()
            .filter_map(|id| match applied.tenants.get(id) {
                Some(Applied::OutOfService(entry, _)) => Some(entry.clone()),
                _ => None,
            })
            .collect();
        if entries.is_empty() {
            return;
        }
        let steps = entries
            .iter()
            .map(|entry| (entry.id.clone(), plan::Step::Build(entry)))
            .collect();
        let now = plan::carry_out(&applied.tenants, steps, &mut OnHost::new(self));
        let version = applied.version;
        self.settle_steps(&mut applied, version, now, Vec::new());
    }

    /// What this host tells the fleet of itself now.
    fn host_report(&self) -> HostReport {
        let applied = self.applied.lock().unwrap_or_else(|e| e.into_inner());
        HostReport {
            host_id: self.host_id.clone(),
            registry_version: applied.version,
            out_of_service: applied
                .out
                .iter()
                .map(|(tenant, reason)| OutOfService {
                    tenant: tenant.clone(),
                    reason: reason.clone(),
                })
                .collect(),
        }
    }

    /// Writes this host's report into the fleet's store (at start, after every version it
    /// applies, and at every heartbeat).
    pub(super) fn report(&self, store: &PgStore) {
        let reported = store.report_host(&self.host_report());
        let was = self.reported.swap(reported.is_ok(), Ordering::SeqCst);
        if let (Err(e), true) = (reported, was) {
            tracing::warn!("reporting this host to the fleet's store: {e}");
        }
    }
}

/// Where an operator's reconnect takes a tenant's credential from.
fn credential_source(
    built_in: Option<&dyn BuiltInCrm>,
    tenant: &TenantEntry,
    last: &mut Option<Arc<str>>,
) -> Result<CredentialSource, Unbuildable> {
    Ok(match &tenant.credential_env {
        Some(var) if tenant.proxy_base.is_some() => CredentialSource::Env(match last {
            Some(shared) if **shared == **var => shared.clone(),
            _ => last.insert(Arc::from(var.as_str())).clone(),
        }),
        _ => CredentialSource::Fixed(
            built_in
                .ok_or(Unbuildable::NoBuiltInCrm)?
                .tenant_spec(&tenant.id)
                .credential,
        ),
    })
}

/// What the host needs to serve one tenant of the file, or why it cannot here.
pub(super) fn tenant_spec(
    options: &Options,
    store: &Store,
    built_in: Option<&dyn BuiltInCrm>,
    tenant: &TenantEntry,
    env: &Environment,
) -> Result<TenantSpec, Unbuildable> {
    let mut spec = match &tenant.proxy_base {
        None => {
            let built_in = built_in.ok_or(Unbuildable::NoBuiltInCrm)?;
            if !built_in.tenants().contains(&tenant.id) {
                return Err(Unbuildable::NotSandbox);
            }
            built_in.tenant_spec(&tenant.id)
        }
        Some(proxy_base) => {
            let var = tenant
                .credential_env
                .as_deref()
                .ok_or(Unbuildable::NoCredentialEnv)?;
            let credential =
                env.vars
                    .get(var)
                    .cloned()
                    .ok_or_else(|| Unbuildable::CredentialNotSet {
                        var: var.to_owned(),
                    })?;
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
    spec.settings.extend(env.settings.iter().cloned());
    // The tenant's own policy table wins over the process-wide environment.
    spec.settings.extend(tenant.policy.settings());
    spec.results_dir = Some(match &options.results_dir {
        Some(root) => root.join(&tenant.id),
        None => tenant_results_dir(&options.data_dir, &tenant.id).map_err(Unbuildable::Here)?,
    });
    spec.mappings = store.location(&tenant.id).map_err(Unbuildable::Here)?;
    Ok(spec)
}
