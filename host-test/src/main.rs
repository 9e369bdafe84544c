//! `crm-host`: the command-line front of the host. By default it runs the component against
//! the built-in sandbox CRM; `--proxy-base` sends real HTTPS to a broker instead.

use clap::{Args, Parser, Subcommand};
use crm_host::backend::NetworkBackend;
use crm_host::cache::ComponentCache;
use crm_host::hooks::Credential;
use crm_host::mappings::{MappingLocation, tenant_file};
use crm_host::mcp::http::{self as mcp_http, Gate, MCP_PATH};
use crm_host::mcp::tenants::TenantsFile;
use crm_host::mcp::{McpServer, Principal};
use crm_host::sandbox::SandboxCrm;
use crm_host::{
    AuditLog, Backend, CallError, CallRequest, Host, HostLimits, PluginVersion, Runtime, TenantSpec,
};
use rmcp::ServiceExt;
use serde_json::{Value, json};
use std::process::ExitCode;
use std::sync::Arc;
use url::Url;

/// Runs the crm-plugin component: against the built-in sandbox CRM by default, or a real broker.
#[derive(Debug, Parser)]
#[command(
    name = "crm-host",
    version,
    about,
    after_help = "Run with no command for the demo."
)]
struct Cli {
    #[command(flatten)]
    options: Options,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// A short tour against the sandbox CRM (the default).
    Demo,
    /// Print the tool specs as JSON.
    Tools,
    /// Run one tool and print its JSON result.
    Call {
        /// The tool's name, e.g. crmb_get_record.
        tool: String,
        /// The tool's input, a JSON object.
        input: String,
    },
    /// Serve the tools to an MCP client over stdio (one tenant and user per process). Stdout
    /// carries only protocol messages; logs and `--audit -` go to stderr.
    Mcp,
    /// Serve MCP over Streamable HTTP at /mcp for every tenant of a tenants file; each request's
    /// bearer token picks its tenant and user.
    Serve {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8765")]
        listen: std::net::SocketAddr,
        /// The tenants file (TOML): tenants, and bearer-token hashes mapped to tenant and user.
        #[arg(long)]
        tenants: std::path::PathBuf,
        /// A browser Origin allowed to call the server (repeatable); others get 403.
        #[arg(long)]
        allow_origin: Vec<String>,
    },
}

/// Who the calls act for and where they go; the same for every command.
#[derive(Debug, Clone, Args)]
struct Options {
    /// Tenant (workspace) id.
    #[arg(long, global = true, default_value = "acme")]
    tenant: String,
    /// Workspace user the calls act for.
    #[arg(long, global = true, default_value = "demo-user")]
    user: String,
    /// CRM A scopes the tenant granted, comma-separated [default: the spec's required scopes].
    #[arg(long, global = true, value_delimiter = ',', default_value = DEFAULT_SCOPES)]
    scopes: Vec<String>,
    /// Salesforce org URL for record links [sandbox: its own org].
    #[arg(long, global = true)]
    instance_url: Option<String>,
    /// Use a real broker at this https URL. The credential is read from the
    /// CRM_PROXY_CREDENTIAL environment variable; other CRM_* variables are passed to the
    /// component as configuration.
    #[arg(long, global = true)]
    proxy_base: Option<Url>,
    /// Component to load [default: the one this build made].
    #[arg(long, global = true, default_value = crm_host::COMPONENT_PATH)]
    component: String,
    /// Append audit JSON lines to a file, or '-' for stderr.
    #[arg(long, global = true)]
    audit: Option<String>,
    /// Where large query results are written as JSON Lines
    /// [default: <temp dir>/crm-host-results/<tenant>].
    #[arg(long, global = true)]
    results_dir: Option<std::path::PathBuf>,
    /// Where each tenant's mapping store (SQLite) is kept, as <dir>/<tenant>/mappings.sqlite.
    #[arg(long, global = true, default_value = "crm-host-data")]
    data_dir: std::path::PathBuf,
    /// Where compiled components are kept, so later starts skip compiling
    /// [default: $XDG_CACHE_HOME/crm-host, else ~/.cache/crm-host].
    #[arg(long, global = true)]
    cache_dir: Option<std::path::PathBuf>,
    /// Compile the component afresh, neither reading nor writing the cache.
    #[arg(long, global = true)]
    no_cache: bool,
}

/// The CRM A scopes the spec lists as required, granted by default in the sandbox.
const DEFAULT_SCOPES: &str = "crm.objects.companies.read,crm.objects.companies.write,\
crm.objects.contacts.read,crm.objects.contacts.write,crm.objects.deals.read,\
crm.objects.deals.write,crm.objects.owners.read,crm.objects.users.read,crm.schemas.custom.read,\
oauth,sales-email-read,settings.users.read,settings.users.teams.read";

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Logs go to stderr: stdout belongs to the results, and to MCP's stdio transport.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing::Level::WARN)
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match runtime.block_on(run(cli.options, cli.command.unwrap_or(Command::Demo))) {
        Ok(code) => code,
        Err(problem) => {
            print_json(&json!({"error": {"kind": "host-error", "message": problem}}));
            ExitCode::FAILURE
        }
    }
}

async fn run(options: Options, command: Command) -> Result<ExitCode, String> {
    if let Command::Serve {
        listen,
        tenants,
        allow_origin,
    } = &command
    {
        return serve_http(&options, *listen, tenants, allow_origin.clone()).await;
    }
    let audit = audit_log(&options)?;
    let (runtime, plugin) = load_component(&options)?;

    let results_dir = options.results_dir.clone().unwrap_or_else(|| {
        std::env::temp_dir()
            .join("crm-host-results")
            .join(&options.tenant)
    });
    let mappings = MappingLocation::File(tenant_file(&options.data_dir, &options.tenant)?);
    let (backend, spec, instance_url): (Arc<dyn Backend>, TenantSpec, Option<String>) =
        match &options.proxy_base {
            Some(proxy_base) => {
                let credential = std::env::var("CRM_PROXY_CREDENTIAL").map_err(|_| {
                    "real-broker mode needs CRM_PROXY_CREDENTIAL in the environment".to_string()
                })?;
                let limits = runtime.limits();
                let backend = NetworkBackend {
                    max_response_bytes: 64 << 20,
                    timeout: limits.http_timeout,
                };
                let settings = env_settings();
                let spec = TenantSpec {
                    tenant_id: options.tenant.clone(),
                    proxy_base: proxy_base.clone(),
                    credential: Credential::new(credential),
                    settings,
                    results_dir: Some(results_dir),
                    mappings,
                };
                (Arc::new(backend), spec, options.instance_url.clone())
            }
            None => {
                if !SandboxCrm::tenants().any(|t| t == options.tenant) {
                    let known: Vec<_> = SandboxCrm::tenants().collect();
                    return Err(format!(
                        "the sandbox has tenants {}; not {:?}",
                        known.join(", "),
                        options.tenant
                    ));
                }
                let instance = options
                    .instance_url
                    .clone()
                    .unwrap_or_else(|| SandboxCrm::instance_url(&options.tenant));
                let mut spec = SandboxCrm::tenant_spec(&options.tenant);
                spec.settings = env_settings();
                spec.results_dir = Some(results_dir);
                spec.mappings = mappings;
                (Arc::new(SandboxCrm::new()), spec, Some(instance))
            }
        };
    let sandbox = options.proxy_base.is_none();
    let host = Arc::new(Host::new(runtime, backend, audit));
    host.add_tenant(spec, plugin).map_err(|e| e.to_string())?;
    if let Command::Mcp = command {
        let principal = Principal {
            tenant_id: options.tenant.clone(),
            user_id: options.user.clone(),
            granted_scopes: options.scopes.clone(),
            instance_url,
        };
        return serve_stdio(host, principal).await;
    }
    let request = |tool: &str, input: &str| CallRequest {
        tenant_id: options.tenant.clone(),
        user_id: options.user.clone(),
        granted_scopes: options.scopes.clone(),
        instance_url: instance_url.clone(),
        tool: tool.into(),
        input: input.into(),
    };

    match command {
        Command::Tools => {
            let specs = host
                .list_tools(&options.tenant)
                .await
                .map_err(|e| e.to_string())?;
            let specs: Vec<Value> = specs
                .into_iter()
                .map(|s| {
                    json!({
                        "name": s.name,
                        "description": s.description,
                        "input_schema": serde_json::from_str::<Value>(&s.input_schema).unwrap_or(Value::String(s.input_schema)),
                        "read_only": s.read_only,
                    })
                })
                .collect();
            print_json(&Value::Array(specs));
            Ok(ExitCode::SUCCESS)
        }
        Command::Call { tool, input } => Ok(report(host.call(request(&tool, &input)).await)),
        Command::Demo if sandbox => demo(&host, &request).await,
        Command::Demo => Err("the demo runs against the sandbox only; drop --proxy-base".into()),
        Command::Mcp | Command::Serve { .. } => unreachable!("served above"),
    }
}

/// Starts wasmtime and loads the component `--component` names.
fn load_component(options: &Options) -> Result<(Arc<Runtime>, Arc<PluginVersion>), String> {
    let runtime = Arc::new(
        Runtime::new(HostLimits::default()).map_err(|e| format!("starting wasmtime: {e}"))?,
    );
    let wasm = std::fs::read(&options.component)
        .map_err(|e| format!("reading {}: {e}", options.component))?;
    let cache = match (&options.cache_dir, options.no_cache) {
        (_, true) => None,
        (Some(dir), false) => Some(ComponentCache::new(dir)),
        (None, false) => ComponentCache::default_dir().map(ComponentCache::new),
    };
    let plugin = match &cache {
        Some(cache) => runtime.load_cached(&wasm, cache).map(|(plugin, _)| plugin),
        None => runtime.load(&wasm),
    }
    .map_err(|e| format!("loading {}: {e}", options.component))?;
    Ok((runtime, plugin))
}

/// The `CRM_*` settings in the environment, for every tenant this process serves. The host
/// keeps only `CRM_*` names and drops the credential and the broker base whatever it is given.
fn env_settings() -> Vec<(String, String)> {
    std::env::vars()
        .filter(|(k, _)| k.starts_with("CRM_"))
        .collect()
}

/// Where `--audit` sends audit lines: nowhere, stderr (`-`) or a file; never stdout.
fn audit_log(options: &Options) -> Result<AuditLog, String> {
    Ok(match options.audit.as_deref() {
        None => AuditLog::discard(),
        Some("-") => AuditLog::to_writer(Box::new(std::io::stderr())),
        Some(path) => {
            AuditLog::to_file(path.as_ref()).map_err(|e| format!("--audit {path}: {e}"))?
        }
    })
}

/// `crm-host serve`: one Streamable HTTP server for every tenant in the tenants file.
async fn serve_http(
    options: &Options,
    listen: std::net::SocketAddr,
    tenants_path: &std::path::Path,
    allowed_origins: Vec<String>,
) -> Result<ExitCode, String> {
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
        0 => Arc::new(SandboxCrm::new()),
        n if n == file.tenants.len() => Arc::new(NetworkBackend {
            max_response_bytes: 64 << 20,
            timeout: runtime.limits().http_timeout,
        }),
        _ => return Err("serve either sandbox tenants or broker tenants, not both".into()),
    };
    let host = Arc::new(Host::new(runtime, backend, audit_log(options)?));
    let results_root = options
        .results_dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("crm-host-results"));
    for tenant in &file.tenants {
        let mut spec = match &tenant.proxy_base {
            None if SandboxCrm::tenants().any(|t| t == tenant.id) => {
                SandboxCrm::tenant_spec(&tenant.id)
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
                    mappings: MappingLocation::Memory,
                }
            }
        };
        spec.settings.extend(env_settings());
        spec.results_dir = Some(results_root.join(&tenant.id));
        spec.mappings = MappingLocation::File(tenant_file(&options.data_dir, &tenant.id)?);
        host.add_tenant(spec, plugin.clone())
            .map_err(|e| e.to_string())?;
    }
    let tokens = file.tokens(&options.scopes, |t| {
        t.instance_url.clone().or_else(|| {
            t.proxy_base
                .is_none()
                .then(|| SandboxCrm::instance_url(&t.id))
        })
    })?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| format!("--listen {listen}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    // The one line on stdout: where the server is (port 0 picks a free one).
    println!(
        "{}",
        json!({"listening": format!("http://{local}{MCP_PATH}")})
    );
    let gate = Gate {
        tokens,
        allowed_origins,
        base_url: format!("http://{local}"),
    };
    mcp_http::serve(host, gate, listener)
        .await
        .map_err(|e| format!("serving: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

/// `crm-host mcp`: MCP over stdin/stdout until the client closes stdin.
async fn serve_stdio(host: Arc<Host>, principal: Principal) -> Result<ExitCode, String> {
    let server = McpServer::for_principal(host, principal);
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("starting the MCP session: {e}"))?;
    running
        .waiting()
        .await
        .map_err(|e| format!("the MCP session failed: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

/// Prints a call's result, or `{"error": {...}}`, and picks the exit code.
fn report(result: Result<String, CallError>) -> ExitCode {
    match result {
        Ok(output) => {
            print_json(&serde_json::from_str(&output).unwrap_or(Value::String(output)));
            ExitCode::SUCCESS
        }
        Err(err) => {
            let message = match &err {
                CallError::Tool(e) => e.message(),
                other => other.to_string(),
            };
            print_json(&json!({"error": {"kind": err.kind(), "message": message}}));
            ExitCode::FAILURE
        }
    }
}

fn print_json(value: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("JSON prints")
    );
}

/// A short tour: what a newcomer should see the plugin do.
async fn demo(
    host: &Host,
    request: &dyn Fn(&str, &str) -> CallRequest,
) -> Result<ExitCode, String> {
    let tools = host.list_tools("acme").await.map_err(|e| e.to_string())?;
    println!("# crm-plugin against the sandbox CRM (tenant acme)\n");
    println!("## Tools this build offers");
    for tool in &tools {
        println!(
            "- {}{}",
            tool.name,
            if tool.read_only { " (read-only)" } else { "" }
        );
    }
    let steps: &[(&str, &str, &str)] = &[
        (
            "Open opportunities closing this month, biggest first",
            "crmb_run_soql_query",
            r#"{"query":"SELECT Id, Name, StageName, Amount, CloseDate, Account.Name FROM Opportunity WHERE IsClosed = false AND CloseDate = THIS_MONTH ORDER BY Amount DESC","max_records":5}"#,
        ),
        (
            "What can be set on an opportunity's stage?",
            "crmb_get_object_fields",
            r#"{"object":"Opportunity","name_contains":"stage"}"#,
        ),
        (
            "Fetch an account with chosen fields",
            "crmb_get_record",
            r#"{"object":"Account","record_id":"0015gA000000001ABA","fields":["Name","Industry","AnnualRevenue"]}"#,
        ),
        (
            "Log a follow-up task on the biggest deal",
            "crmb_create_record",
            r#"{"object":"Task","fields":{"Subject":"Send the renewal quote","WhatId":"0065gA000000004ABA","Status":"Not Started"}}"#,
        ),
        (
            "Move that deal forward",
            "crmb_update_record",
            r#"{"object":"Opportunity","record_id":"0065gA000000004ABA","fields":{"StageName":"Negotiation/Review"}}"#,
        ),
        (
            "Build a link to an opportunity",
            "crmb_generate_record_url",
            r#"{"object":"Opportunity","record_id":"0065gA000000001ABA"}"#,
        ),
        (
            "A locking query is refused before anything is sent",
            "crmb_run_soql_query",
            r#"{"query":"SELECT Id FROM Opportunity FOR UPDATE"}"#,
        ),
        (
            "A mistyped id is refused before anything is sent",
            "crmb_get_record",
            r#"{"object":"Account","record_id":"0015gA000000001ABX"}"#,
        ),
        (
            "A field name Salesforce does not know",
            "crmb_run_soql_query",
            r#"{"query":"SELECT Nmae FROM Account"}"#,
        ),
        (
            "HubSpot: open deals over $40,000, biggest first",
            "crma_search_records",
            r#"{"object_type":"deals","filter_groups":[{"filters":[{"property":"amount","operator":"GT","value":40000},{"property":"dealstage","operator":"NOT_IN","values":["closedwon","closedlost"]}]}],"sorts":[{"property":"amount","direction":"DESCENDING"}],"properties":["dealname","amount","dealstage","closedate"],"limit":3}"#,
        ),
        (
            "HubSpot: which stages can a deal be in?",
            "crma_get_pipeline_stages",
            r#"{"object_type":"deals","pipeline_id":"default"}"#,
        ),
        (
            "HubSpot: log the call about the biggest renewal, on the deal and its contact",
            "crma_log_activity",
            r#"{"activity_type":"call","properties":{"hs_call_title":"Renewal check-in","hs_call_body":"Agreed to send the quote by Friday","hs_call_direction":"OUTBOUND","hs_call_status":"COMPLETED"},"associations":[{"to_object_type":"deals","to_record_id":"357300"},{"to_object_type":"contacts","to_record_id":"357200"}]}"#,
        ),
        (
            "HubSpot: the deal's calls now include it",
            "crma_get_associations",
            r#"{"object_type":"deals","record_id":"357300","to_object_type":"calls"}"#,
        ),
        (
            "HubSpot: sync users and owners into the local mappings (run the demo twice: all unchanged)",
            "crma_sync_users",
            "{}",
        ),
        (
            "HubSpot: a link to the deal",
            "crma_generate_record_url",
            r#"{"object_type":"deals","record_id":"357300"}"#,
        ),
    ];
    for (title, tool, input) in steps {
        println!("\n## {title}\n$ crm-host call {tool} '{input}'");
        report(host.call(request(tool, input)).await);
    }
    let read_only = "crm.objects.deals.read";
    let tool = "crma_create_record";
    let input = r#"{"object_type":"deals","properties":{"dealname":"Expansion"}}"#;
    println!(
        "\n## HubSpot: with only {read_only} granted, a create is refused before anything is sent\n\
         $ crm-host --scopes {read_only} call {tool} '{input}'"
    );
    let mut limited = request(tool, input);
    limited.granted_scopes = vec![read_only.into()];
    report(host.call(limited).await);
    println!("\nRun `crm-host --help` for more; `--audit -` shows the audit trail.");
    Ok(ExitCode::SUCCESS)
}
