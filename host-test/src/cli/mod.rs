//! The command line of `crm-host` (and of `crm-sandbox`, the same commands with the sandbox
//! CRM built in): flags, subcommands, and starting the host for each.
//!
//! `crm-host` sends real HTTPS to a broker (`--proxy-base`, or each tenant's `proxy_base` for
//! `serve`). A test-support binary passes a [`BuiltInCrm`], which then answers when no broker
//! is given; the release build of `crm-host` has none, so it holds no test double.

/// Starting wasmtime and loading the component (through the compiled-component cache).
mod component;
/// `--data-dir` and its per-user default, made before anything starts.
mod data_dir;
/// The demo's tour, kept apart from the command plumbing.
mod demo;
/// Start-up errors: one line on stderr, and for `mcp` the answer to the client's first request.
mod failure;
/// `serve`'s tenants, from a file or the fleet's registry; `crm-host tenants`.
mod registry;
/// `crm-sandbox sandbox`: the built-in CRM as an HTTPS broker.
mod sandbox;
/// `crm-host serve`: the HTTP server's flags and start-up.
mod serve;
/// `--store` and `crm-host store`.
mod store;
/// `crm-host tenants import|swap|status`.
mod tenants;

use component::{CodeNeeded, load_component};
use failure::{one_line, refuse_arguments, tell_the_client};
use sandbox::serve_sandbox;
use serve::{ServeCommand, ServeLimits, serve_http};
use tenants::TenantsAction;

use crate::backend::tls::read_certificates;
use crate::backend::{NetworkBackend, NetworkOptions};
use crate::credential::Credential;
use crate::mcp::{Authority, McpServer, Principal};
use crate::{AuditLog, Backend, CallError, CallRequest, Host, Runtime, TenantSpec};
use clap::{Args, Parser, Subcommand};
use rmcp::ServiceExt;
use serde_json::{Value, json};
use std::process::ExitCode;
use std::sync::Arc;
use url::Url;

/// A CRM compiled into the binary that answers when no broker is given: the sandbox, in the
/// test-support crate's `crm-sandbox` binary. Production `crm-host` has none.
pub trait BuiltInCrm: Send + Sync {
    /// The backend answering its tenants' requests.
    fn backend(&self) -> Arc<dyn Backend>;
    /// The tenants it has data for.
    fn tenants(&self) -> Vec<String>;
    /// How the host reaches a tenant's data (broker base and credential).
    fn tenant_spec(&self, tenant: &str) -> TenantSpec;
    /// The credential that unlocks a tenant's data, for clients of `sandbox`'s HTTPS broker.
    fn credential(&self, tenant: &str) -> String;
    /// The Salesforce org URL its record links use.
    fn instance_url(&self, tenant: &str) -> String;
}

/// What production `crm-host` says when a command needs the built-in CRM.
const NO_BUILT_IN_CRM: &str = "this crm-host has no built-in CRM: give a broker with \
                               --proxy-base (or proxy_base per tenant for serve); the demo and \
                               the sandbox CRM are in the test-support binary (cargo run -p \
                               crm-sandbox)";

/// Runs the crm-plugin component against a real broker, or against a built-in CRM.
#[derive(Debug, Parser)]
#[command(
    name = "crm-host",
    version,
    about,
    after_help = "Run with no command for the demo (crm-sandbox only)."
)]
struct Cli {
    #[command(flatten)]
    options: Options,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// A short tour against the built-in sandbox CRM (the default; crm-sandbox only).
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
    /// Compile the component into the compiled-component cache, so no client's first call
    /// waits on the compiler (an install step: run it after installing or updating). Prints
    /// the cache entry and how long the compile took.
    Precompile,
    /// Serve the tools to an MCP client over stdio (one tenant and user per process). Stdout
    /// carries only protocol messages; logs and `--audit -` go to stderr.
    Mcp,
    /// Disconnect or reconnect one CRM for the tenant (operators only; kept in the tenant's
    /// store, so every later start, and every server started after, honours it).
    Connection {
        #[arg(value_enum)]
        action: ConnectionAction,
        /// crm-a (HubSpot) or crm-b (Salesforce).
        #[arg(long, value_parser = ["crm-a", "crm-b"])]
        crm: String,
    },
    /// Serve MCP over Streamable HTTP at /mcp for every tenant of a tenants file; each request's
    /// bearer token picks its tenant and user.
    Serve {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8765")]
        listen: std::net::SocketAddr,
        /// The tenants file (TOML): tenants, and bearer-token hashes mapped to tenant and user.
        /// Without it, the tenants registry of the PostgreSQL --store, followed as it changes.
        #[arg(long)]
        tenants: Option<std::path::PathBuf>,
        /// A browser Origin allowed to call the server (repeatable); others get 403.
        #[arg(long)]
        allow_origin: Vec<String>,
        /// The MCP endpoint as clients reach it, e.g. https://crm.example.com/mcp behind a
        /// reverse proxy: the allowed Host, the metadata's resource and the 401 challenge
        /// follow it. Required unless listening on loopback.
        #[arg(long)]
        public_url: Option<Url>,
        // Boxed: the limits are most of the variant, which would make every command as large.
        #[command(flatten)]
        limits: Box<ServeLimits>,
    },
    /// The fleet's tenants registry in the PostgreSQL --store: every host serving it applies a
    /// change within a second; `status` shows what each host applied and cannot serve.
    Tenants {
        #[command(subcommand)]
        action: TenantsAction,
    },
    /// Apply or check the fleet database's schema (`--store postgres://...`).
    Store {
        #[arg(value_enum)]
        action: store::StoreAction,
    },
    /// Serve the built-in sandbox CRM as a real HTTPS broker on loopback (crm-sandbox only),
    /// with a self-signed certificate made at start-up. Prints one JSON line: the URL, the certificate's path and each
    /// tenant's credential; then use `--proxy-base URL --ca-cert FILE` with
    /// CRM_PROXY_CREDENTIAL set to a tenant's credential.
    Sandbox {
        /// Address to listen on (port 0 picks a free port).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: std::net::SocketAddr,
        /// Where to write the certificate (PEM) [default: <temp dir>/crm-host-sandbox-<port>.pem].
        #[arg(long)]
        cert_out: Option<std::path::PathBuf>,
    },
}

/// What `crm-host connection` does.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ConnectionAction {
    Disconnect,
    Connect,
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
    /// CRM A scopes the tenant granted, comma-separated (by default the spec's required scopes).
    #[arg(long, global = true, value_delimiter = ',', default_values = crm_plugin::crma::REQUIRED_SCOPES)]
    scopes: Vec<String>,
    /// Salesforce org URL for record links [sandbox: its own org].
    #[arg(long, global = true)]
    instance_url: Option<String>,
    /// Use a real broker at this https URL. The credential is read from the
    /// CRM_PROXY_CREDENTIAL environment variable; other CRM_* variables are passed to the
    /// component as configuration.
    #[arg(long, global = true)]
    proxy_base: Option<Url>,
    /// Trust this PEM certificate for the broker besides the public roots, e.g. the one
    /// `crm-sandbox sandbox` writes.
    #[arg(long, global = true)]
    ca_cert: Option<std::path::PathBuf>,
    /// Component to load [default: the one this build made].
    #[arg(long, global = true, default_value = crate::COMPONENT_PATH)]
    component: String,
    /// Append audit JSON lines to a file, or '-' for stderr.
    #[arg(long, global = true)]
    audit: Option<String>,
    /// Where large query results are written as JSON Lines (for `serve`, the root of one
    /// folder per tenant) [default: <data dir>/<tenant>/results].
    #[arg(long, global = true)]
    results_dir: Option<std::path::PathBuf>,
    /// Where each tenant's state is kept: its SQLite store as <dir>/<tenant>/mappings.sqlite,
    /// and its result files unless --results-dir says otherwise. Made (0700) at start-up if
    /// missing [default: $XDG_DATA_HOME/crm-host, else ~/.local/share/crm-host].
    #[arg(long = "data-dir", global = true, value_name = "DATA_DIR")]
    data_dir_flag: Option<std::path::PathBuf>,
    /// `--data-dir`, or the default: set by [`run`] before anything uses it.
    #[arg(skip)]
    data_dir: std::path::PathBuf,
    /// Where every tenant's state lives: `sqlite` (one file per tenant under --data-dir), or a
    /// PostgreSQL URL (postgres://user:password@host:5432/db?sslmode=require) that a fleet of
    /// hosts shares. Its schema is migrated at start.
    #[arg(
        long,
        global = true,
        env = "CRM_HOST_STORE",
        default_value = "sqlite",
        hide_env_values = true
    )]
    store: String,
    /// Where compiled components are kept, so later starts skip compiling; shared by every
    /// host this OS user runs (its key is <dir>/cache.key), and used only when that directory is
    /// this user's and no one else may write it, and the key is mode 0600 (else a warning and
    /// no cache) [default: $XDG_CACHE_HOME/crm-host, else ~/.cache/crm-host].
    #[arg(long, global = true)]
    cache_dir: Option<std::path::PathBuf>,
    /// Compile the component afresh, neither reading nor writing the cache.
    #[arg(long, global = true)]
    no_cache: bool,
    /// Without a cache entry, wait for Cranelift's code instead of serving the first calls on
    /// Winch's (wasmtime's baseline compiler: ready about 20x sooner, slower to run) while
    /// Cranelift's is built.
    #[arg(long, global = true)]
    no_baseline_compiler: bool,
    /// Longest one tool call may run, host waits included. A write's journal entry is leased to
    /// its call until then (plus 5 s): one still pending after that had its host die mid-write,
    /// and turns `unknown` so the same create is refused until `crm_resolve_change` settles it.
    #[arg(
        long,
        global = true,
        env = "CRM_HOST_CALL_TIMEOUT_SECONDS",
        default_value_t = 120
    )]
    call_timeout_seconds: u64,
    #[command(flatten)]
    pace: store::PaceArgs,
    /// How `mcp` and `serve` give each tool answer: `text` (the JSON as text alone, no output
    /// schemas: what clients pass to the model, one copy on the wire) or `structured`
    /// (structuredContent and the same JSON as text, with output schemas, for clients that
    /// read typed results: twice the bytes).
    #[arg(
        long,
        global = true,
        value_enum,
        env = "CRM_HOST_ANSWERS",
        default_value = "text"
    )]
    answers: crate::answer_form::AnswerForm,
}

/// Parses the command line and runs it; `built_in` answers when no broker is given.
///
/// Every error that stops a command from starting is one line on stderr (stdout carries only
/// results, and MCP's messages for `mcp`), saying what to do, and the exit code is non-zero.
/// `mcp` also answers its client's first request with that line as a JSON-RPC error, so that
/// the client shows it rather than only that the connection closed.
pub fn main(built_in: Option<Arc<dyn BuiltInCrm>>) -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(refused) => return refuse_arguments(refused),
    };
    // Logs go to stderr: stdout belongs to the results, and to MCP's stdio transport.
    // `CRM_HOST_LOG=info` (or debug, error) says more or less than warnings and errors, e.g.
    // when the component's code is ready and which compiler made it.
    let level = std::env::var("CRM_HOST_LOG")
        .ok()
        .and_then(|level| level.parse::<tracing::Level>().ok())
        .unwrap_or(tracing::Level::WARN);
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .init();
    let command = cli.command.unwrap_or(Command::Demo);
    let stdio = matches!(command, Command::Mcp);
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    // MCP over stdio serves one client: one worker answers it without waking a second thread
    // at every step of a call (0.58 against 0.70 ms for a 100-contact search). Calls still run
    // concurrently, sharing the thread while they wait on a CRM. `TOKIO_WORKER_THREADS` (read
    // by tokio when nothing is set here) lets an operator have more.
    if matches!(command, Command::Mcp) && std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        builder.worker_threads(1);
    }
    let runtime = builder.enable_all().build().expect("tokio runtime");
    let outcome = runtime.block_on(run(cli.options, command, built_in));
    let code = match outcome {
        Ok(code) => code,
        // `run` returns an error only when the command could not start (see the `mcp` branch).
        Err(problem) => {
            let line = one_line(&problem);
            eprintln!("{line}");
            if stdio {
                runtime.block_on(tell_the_client(&line));
            }
            ExitCode::FAILURE
        }
    };
    // Drops every task (and the audit log clones they hold, which write out their lines), but
    // does not wait on a thread still blocked reading stdin after a stop signal.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    code
}

/// Runs `command`; an error is one that kept it from starting (`mcp` reports its session's own
/// failures itself, as stdin is no longer free to answer on).
async fn run(
    mut options: Options,
    command: Command,
    built_in_arc: Option<Arc<dyn BuiltInCrm>>,
) -> Result<ExitCode, String> {
    let built_in = built_in_arc.as_deref();
    let given = options.data_dir_flag.as_deref();
    options.data_dir = if needs_data_dir(&options, &command) {
        data_dir::prepare(given).map_err(|e| e.to_string())?
    } else {
        data_dir::resolve(given).unwrap_or_default()
    };
    if let Command::Store { action } = &command {
        print_json(&store::run(
            &options.store,
            &options.data_dir,
            &options.tenant,
            *action,
        )?);
        return Ok(ExitCode::SUCCESS);
    }
    if let Command::Precompile = command {
        print_json(&component::precompile(&options)?);
        return Ok(ExitCode::SUCCESS);
    }
    let stores = store::Store::open(&options.store, &options.data_dir)?;
    if let Command::Tenants { action } = &command {
        // Only a swap compiles (to check the component loads); an import stores a document.
        let runtime = || load_component(&options, CodeNeeded::Now).map(|(runtime, _)| runtime);
        print_json(&tenants::run(&stores, runtime, action)?);
        return Ok(ExitCode::SUCCESS);
    }
    if let Command::Serve {
        listen,
        tenants,
        allow_origin,
        public_url,
        limits,
    } = &command
    {
        let serve = ServeCommand {
            listen: *listen,
            tenants_path: tenants.clone(),
            allowed_origins: allow_origin.clone(),
            public_url: public_url.clone(),
            limits: limits.limits(),
            store_idle: limits.store_idle(),
        };
        return serve_http(&options, &stores, serve, built_in_arc.clone()).await;
    }
    if let Command::Connection { action, crm } = &command {
        let store = stores.tenant(&options.tenant)?;
        let disconnect = matches!(action, ConnectionAction::Disconnect);
        store.set_disconnected(crm, disconnect)?;
        print_json(&json!({"tenant": options.tenant, "crm": crm, "connected": !disconnect}));
        return Ok(ExitCode::SUCCESS);
    }
    if let Command::Sandbox { listen, cert_out } = &command {
        let built_in = built_in.ok_or(NO_BUILT_IN_CRM)?;
        return serve_sandbox(built_in, *listen, cert_out.clone()).await;
    }
    let audit = audit_log(&options)?;
    // Listing the tools needs no code (the MCP server lists them while the code compiles);
    // the other commands call a tool at once.
    let needed = match command {
        Command::Mcp | Command::Tools => CodeNeeded::ByFirstCall,
        _ => CodeNeeded::Now,
    };
    let (runtime, plugin) = load_component(&options, needed)?;

    let results_dir = match &options.results_dir {
        Some(dir) => dir.clone(),
        None => tenant_results_dir(&options.data_dir, &options.tenant)?,
    };
    let mappings = stores.location(&options.tenant)?;
    let (backend, spec, instance_url): (Arc<dyn Backend>, TenantSpec, Option<String>) =
        match &options.proxy_base {
            Some(proxy_base) => {
                let credential = std::env::var("CRM_PROXY_CREDENTIAL").map_err(|_| {
                    "real-broker mode needs CRM_PROXY_CREDENTIAL in the environment".to_string()
                })?;
                let backend = network_backend(&options, &runtime)?;
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
                let built_in = built_in.ok_or(NO_BUILT_IN_CRM)?;
                let known = built_in.tenants();
                if !known.contains(&options.tenant) {
                    return Err(format!(
                        "the sandbox has tenants {}; not {:?}",
                        known.join(", "),
                        options.tenant
                    ));
                }
                let instance = options
                    .instance_url
                    .clone()
                    .unwrap_or_else(|| built_in.instance_url(&options.tenant));
                let mut spec = built_in.tenant_spec(&options.tenant);
                spec.settings = env_settings();
                spec.results_dir = Some(results_dir);
                spec.mappings = mappings;
                (built_in.backend(), spec, Some(instance))
            }
        };
    let sandbox = options.proxy_base.is_none();
    let mut host = Host::new(runtime, backend, audit.clone()).with_answer_form(options.answers);
    if let Some(pacer) = stores.pacer(&options.pace) {
        host = host.with_pacer(pacer);
    }
    let host = Arc::new(host);
    host.add_tenant(spec, plugin).map_err(|e| e.to_string())?;
    if let Some(fleet) = stores.postgres() {
        host.follow_store(fleet);
    }
    if let Command::Mcp = command {
        let principal = Principal {
            tenant_id: options.tenant.clone(),
            user_id: options.user.clone(),
            granted_scopes: options.scopes.clone(),
            instance_url,
            authority: Authority::Process,
        };
        let served = tokio::select! {
            served = serve_stdio(host, principal) => served,
            () = stop_signal() => Ok(ExitCode::SUCCESS),
        };
        let flushed = audit
            .flush()
            .map_err(|e| format!("writing the audit trail: {e}"));
        // The session began: stdin is the session's, so a failure now is only said on stderr.
        return Ok(served
            .and_then(|code| flushed.map(|()| code))
            .unwrap_or_else(|problem| {
                eprintln!("{}", one_line(&problem));
                ExitCode::FAILURE
            }));
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
        Command::Demo if sandbox => demo::demo(&host, &request).await,
        Command::Demo => Err("the demo runs against the sandbox only; drop --proxy-base".into()),
        Command::Mcp
        | Command::Serve { .. }
        | Command::Connection { .. }
        | Command::Store { .. }
        | Command::Tenants { .. }
        | Command::Precompile
        | Command::Sandbox { .. } => {
            unreachable!("handled above")
        }
    }
}

/// Whether `command` keeps anything under the data directory (a SQLite store, or result
/// files by default), so that it is made, and found writable, before anything starts.
fn needs_data_dir(options: &Options, command: &Command) -> bool {
    match command {
        // `store import-sqlite` reads a store that is there already; the others keep nothing.
        Command::Sandbox { .. }
        | Command::Tenants { .. }
        | Command::Store { .. }
        | Command::Precompile => false,
        _ => !store::is_postgres(&options.store) || options.results_dir.is_none(),
    }
}

/// The `CRM_*` settings in the environment, for every tenant this process serves. The host
/// keeps only `CRM_*` names and drops the credential and the broker base whatever it is given.
fn env_settings() -> Vec<(String, String)> {
    // `CRM_HOST_*` is the host's own (the store URL and its password among them).
    std::env::vars()
        .filter(|(k, _)| k.starts_with("CRM_") && !k.starts_with("CRM_HOST_"))
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

/// A tenant's result files by default: beside its store, under the data directory (private
/// folders), never in a shared temporary directory.
fn tenant_results_dir(
    data_dir: &std::path::Path,
    tenant: &str,
) -> Result<std::path::PathBuf, String> {
    crate::tenant_db::plain_tenant(tenant).map_err(|e| e.to_string())?;
    Ok(crate::tenant_db::tenant_path(data_dir, tenant, "results"))
}

/// The real broker's backend: one pooled client, trusting `--ca-cert` besides the public roots.
fn network_backend(options: &Options, runtime: &Runtime) -> Result<NetworkBackend, String> {
    let mut network = NetworkOptions::new(64 << 20, runtime.limits().http_timeout);
    if let Some(path) = &options.ca_cert {
        network.extra_roots = read_certificates(path).map_err(|e| format!("--ca-cert: {e}"))?;
    }
    NetworkBackend::new(network).map_err(|e| e.to_string())
}

/// `crm-host mcp`: MCP over stdin/stdout until the client closes stdin.
async fn serve_stdio(host: Arc<Host>, principal: Principal) -> Result<ExitCode, String> {
    let server = McpServer::for_principal(host, principal);
    let running = match server.serve(crate::mcp::stdio::streams()).await {
        Ok(running) => running,
        // The client closed its end before a session began (a probe, an era check): nothing
        // went wrong on this side.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => {
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Err(format!("starting the MCP session: {e}")),
    };
    running
        .waiting()
        .await
        .map_err(|e| format!("the MCP session failed: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

/// Resolves when the process is asked to stop: Ctrl-C, or SIGTERM where there is one.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            },
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Prints a call's result, or `{"error": {...}}`, and picks the exit code.
pub(crate) fn report(result: Result<String, CallError>) -> ExitCode {
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
