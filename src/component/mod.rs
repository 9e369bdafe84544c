//! The thin shell: generated bindings and the exports. The WASI imports are each behind one
//! of the core's seams — [`http`] (the transport and clocks), [`store`] (mappings), [`files`]
//! (the results directory) — and configuration comes from `wasi:config/store`. Nothing here
//! decides anything; it only moves data between WASI and the core.

mod files;
mod http;
mod journal;
mod store;

use crate::config::{Config, ConfigError};
use crate::context::CallContext;
use crate::error::ToolError;
use crate::registry;
use crate::tool::Session;

wit_bindgen::generate!({
    world: "plugin",
    path: "wit",
    generate_all,
});

use exports::crm::plugin::tool_metadata as wit_meta;
use exports::crm::plugin::tools as wit;
use wasi::config::store as wit_config;

/// The egress policy (`src/egress-policy.toml`): every request this build may send, by tool.
const EGRESS_POLICY: &[u8] = include_bytes!("../egress-policy.toml");

/// The same policy as a custom section, so it travels inside the component and the host can
/// read and enforce it without running any of this code.
#[used]
#[unsafe(link_section = "crm-plugin:egress-policy")]
static EGRESS_POLICY_SECTION: [u8; EGRESS_POLICY.len()] = *include_bytes!("../egress-policy.toml");

/// The tool listing (`src/schema/listing.json`, deflated by `build.rs`): what `list-tools` and
/// `list-tool-metadata` return, as a custom section the host reads to list the tools before it
/// has compiled this code. A unit test keeps the JSON equal to the exports.
const TOOL_LISTING: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/tool-listing.deflate"));

#[used]
#[unsafe(link_section = "crm-plugin:tool-listing")]
static TOOL_LISTING_SECTION: [u8; TOOL_LISTING.len()] =
    *include_bytes!(concat!(env!("OUT_DIR"), "/tool-listing.deflate"));

struct Plugin;

impl wit::Guest for Plugin {
    fn list_tools() -> Vec<wit::ToolSpec> {
        registry::list_tools()
            .into_iter()
            .map(|spec| wit::ToolSpec {
                name: spec.name.into(),
                description: spec.description.into(),
                input_schema: spec.input_schema.into(),
                read_only: spec.read_only,
            })
            .collect()
    }

    fn call_tool(
        ctx: wit::CallContext,
        name: String,
        input: String,
    ) -> Result<String, wit::ToolError> {
        let ctx = CallContext {
            granted_scopes: ctx.granted_scopes,
            instance_url: ctx.instance_url,
        };
        let config = read_config();
        let limits = config.as_ref().map(|c| c.limits).unwrap_or_default();
        let mut transport = http::WasiHttp {
            max_response_bytes: limits.max_response_bytes,
            timeout: limits.http_timeout,
        };
        let mut store = store::HostMappingStore::default();
        let mut files = files::HostFiles;
        let mut journal = journal::HostJournal;
        let mut session = Session::new(&ctx, config.as_ref(), &mut transport)
            .with_store(&mut store)
            .with_journal(&mut journal);
        if config.as_ref().is_ok_and(|c| c.results.dir.is_some()) {
            session = session.with_files(&mut files);
        }
        registry::call_tool(&name, &input, &mut session).map_err(to_wit)
    }
}

impl wit_meta::Guest for Plugin {
    fn list_tool_metadata() -> Vec<wit_meta::ToolMetadata> {
        registry::list_tools()
            .into_iter()
            .map(|spec| wit_meta::ToolMetadata {
                name: spec.name.into(),
                title: spec.title.into(),
                output_schema: spec.output_schema.into(),
                annotations: wit_meta::ToolAnnotations {
                    read_only: spec.annotations.read_only,
                    destructive: spec.annotations.destructive,
                    idempotent: spec.annotations.idempotent,
                    open_world: spec.annotations.open_world,
                },
            })
            .collect()
    }
}

export!(Plugin);

/// The tenant's settings, from the host's `wasi:config/store`.
fn read_config() -> Result<Config, ConfigError> {
    let vars = wit_config::get_all().map_err(|err| ConfigError {
        key: "wasi:config/store",
        problem: match err {
            wit_config::Error::Upstream(m) | wit_config::Error::Io(m) => m,
        },
    })?;
    Config::from_vars(vars)
}

fn to_wit(err: ToolError) -> wit::ToolError {
    match err {
        ToolError::NotConnected(m) => wit::ToolError::NotConnected(m),
        ToolError::MissingScopes(s) => wit::ToolError::MissingScopes(s),
        ToolError::Forbidden(m) => wit::ToolError::Forbidden(m),
        ToolError::InvalidInput(m) => wit::ToolError::InvalidInput(m),
        ToolError::NotFound(m) => wit::ToolError::NotFound(m),
        ToolError::RateLimited(s) => wit::ToolError::RateLimited(s),
        ToolError::Unavailable(m) => wit::ToolError::Unavailable(m),
        ToolError::OutcomeUnknown(m) => wit::ToolError::OutcomeUnknown(m),
        ToolError::CrmError(problem) => wit::ToolError::CrmError(problem.to_string()),
    }
}
