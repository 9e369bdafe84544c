//! `crm-host serve`: its limits as flags, and starting the Streamable HTTP server for every
//! tenant of a tenants file.

use super::{
    BuiltInCrm, NO_BUILT_IN_CRM, Options, audit_log, env_settings, load_component, network_backend,
    stop_signal, tenant_results_dir,
};
use crate::backend::Backend;
use crate::credential::Credential;
use crate::mcp::admin::{Admin, CredentialSource};
use crate::mcp::http::{self as mcp_http, Gate, MCP_PATH};
use crate::mcp::tenants::TenantsFile;
use crate::metrics::Metrics;
use crate::tenant_db::DbLocation;
use crate::{Host, TenantSpec};
use clap::Args;
use serde_json::json;
use std::process::ExitCode;
use std::sync::Arc;
use url::Url;

/// What `crm-host serve` bounds, so that no client can stop it for the others.
#[derive(Debug, Clone, Args)]
pub(super) struct ServeLimits {
    /// Most connections open at once (lowered to fit the open-files limit).
    #[arg(long, default_value_t = 1024)]
    max_connections: usize,
    /// Seconds a new connection has to send its first request's headers.
    #[arg(long, default_value_t = 10)]
    header_timeout_seconds: u64,
    /// Seconds a connection may sit with no request in flight.
    #[arg(long, default_value_t = 60)]
    idle_timeout_seconds: u64,
    /// Seconds an MCP session may sit unused before it is closed.
    #[arg(long, default_value_t = 600)]
    session_idle_seconds: u64,
    /// Sessions one principal (tenant, user, token issuer) may hold; past it, its least
    /// recently used session is closed.
    #[arg(long, default_value_t = 32)]
    max_sessions_per_principal: usize,
    /// Requests a second one principal may send, sustained.
    #[arg(long, default_value_t = 20.0)]
    rate_per_second: f64,
    /// Requests one principal may send in a burst.
    #[arg(long, default_value_t = 100.0)]
    rate_burst: f64,
}

impl ServeLimits {
    pub(super) fn limits(&self) -> mcp_http::ServerLimits {
        use std::time::Duration;
        let open_files = mcp_http::listener::open_files_limit();
        mcp_http::ServerLimits {
            connections: mcp_http::ConnectionLimits {
                max_connections: mcp_http::listener::fitting_cap(self.max_connections, open_files),
                header_read_timeout: Duration::from_secs(self.header_timeout_seconds.max(1)),
                idle_timeout: Duration::from_secs(self.idle_timeout_seconds.max(1)),
            },
            sessions: mcp_http::SessionLimits {
                max_per_principal: self.max_sessions_per_principal.max(1),
                idle: Duration::from_secs(self.session_idle_seconds.max(1)),
            },
            rate: mcp_http::RateLimit {
                per_second: self.rate_per_second.max(0.01),
                burst: self.rate_burst.max(1.0),
            },
            ..mcp_http::ServerLimits::default()
        }
    }
}

/// `crm-host serve`'s own arguments.
pub(super) struct ServeCommand {
    pub(super) listen: std::net::SocketAddr,
    pub(super) tenants_path: std::path::PathBuf,
    pub(super) allowed_origins: Vec<String>,
    pub(super) public_url: Option<Url>,
    pub(super) limits: mcp_http::ServerLimits,
}

/// `crm-host serve`: one Streamable HTTP server for every tenant in the tenants file.
pub(super) async fn serve_http(
    options: &Options,
    stores: &super::store::Store,
    serve: ServeCommand,
    built_in: Option<&dyn BuiltInCrm>,
) -> Result<ExitCode, String> {
    let ServeCommand {
        listen,
        tenants_path,
        allowed_origins,
        public_url,
        limits,
    } = serve;
    if public_url.is_none() && !listen.ip().is_loopback() {
        return Err(format!(
            "--listen {listen} is reachable from other machines: give --public-url, the URL \
             clients use (e.g. https://crm.example.com/mcp)"
        ));
    }
    let tenants_path = tenants_path.as_path();
    let text = std::fs::read_to_string(tenants_path)
        .map_err(|e| format!("--tenants {}: {e}", tenants_path.display()))?;
    let file = TenantsFile::parse(&text).map_err(|e| format!("{}: {e}", tenants_path.display()))?;
    let (runtime, plugin) = load_component(options)?;
    let on_broker = file
        .tenants
        .iter()
        .filter(|t| t.proxy_base.is_some())
        .count();
    let backend: Arc<dyn Backend> = match on_broker {
        0 => built_in.ok_or(NO_BUILT_IN_CRM)?.backend(),
        n if n == file.tenants.len() => Arc::new(network_backend(options, &runtime)?),
        _ => return Err("serve either sandbox tenants or broker tenants, not both".into()),
    };
    let metrics = Arc::new(Metrics::default());
    let audit = audit_log(options)?.observed_by(metrics.clone());
    let jwks_backend: Arc<dyn Backend> = Arc::new(network_backend(options, &runtime)?);
    let mut host = Host::new(runtime, backend, audit.clone());
    if let Some(pacer) = stores.pacer(&options.pace) {
        host = host.with_pacer(pacer);
    }
    let host = Arc::new(host);
    let mut credentials = std::collections::HashMap::new();
    for tenant in &file.tenants {
        let source = match &tenant.credential_env {
            Some(var) if tenant.proxy_base.is_some() => CredentialSource::Env(var.clone()),
            _ => CredentialSource::Fixed(
                built_in
                    .ok_or(NO_BUILT_IN_CRM)?
                    .tenant_spec(&tenant.id)
                    .credential,
            ),
        };
        credentials.insert(tenant.id.clone(), source);
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
        spec.mappings = stores.location(&tenant.id)?;
        host.add_tenant(spec, plugin.clone())
            .map_err(|e| e.to_string())?;
    }
    if let Some(fleet) = stores.postgres() {
        host.follow_store(fleet);
    }
    let instance_url = |t: &crate::mcp::tenants::TenantEntry| {
        t.instance_url.clone().or_else(|| {
            t.proxy_base
                .is_none()
                .then(|| built_in.map(|b| b.instance_url(&t.id)))
                .flatten()
        })
    };
    let tokens = file.tokens_with_jwks(&options.scopes, instance_url, Some(jwks_backend))?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| format!("--listen {listen}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let local_url = format!("http://{local}{MCP_PATH}");
    let public_url = match public_url {
        Some(url) => url,
        None => Url::parse(&local_url).map_err(|e| e.to_string())?,
    };
    // The one line on stdout: where the server is (port 0 picks a free one).
    println!(
        "{}",
        json!({"listening": local_url, "public_url": public_url.as_str()})
    );
    let gate = Gate {
        tokens,
        allowed_origins,
        public_url,
    };
    let admin = file.admin.as_ref().map(|a| Admin {
        token_sha256: a.sha256.clone(),
        credentials,
    });
    let stop = tokio_util::sync::CancellationToken::new();
    let serve_options = mcp_http::ServeOptions {
        gate,
        admin,
        limits,
        metrics,
        stop: stop.clone(),
    };
    // Until the operator stops the server; every audit line recorded so far is written before
    // the process exits.
    let served = tokio::select! {
        served = mcp_http::serve_with(host, serve_options, listener) => {
            served.map_err(|e| format!("serving: {e}"))
        }
        () = stop_signal() => {
            stop.cancel();
            Ok(())
        }
    };
    let flushed = audit
        .flush()
        .map_err(|e| format!("writing the audit trail: {e}"));
    served.and(flushed)?;
    Ok(ExitCode::SUCCESS)
}
