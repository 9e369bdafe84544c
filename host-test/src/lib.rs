//! The wasmtime host for crm-plugin.
//!
//! One [`Runtime`] (engine, pooling allocator, epoch ticker, linker) loads components once and
//! pre-instantiates them. A [`Host`] keeps a registry of tenants, each with its component
//! version, configuration and credential, and runs every tool call in a fresh store. Outgoing
//! HTTP goes through [`hooks::BrokerHooks`], which adds the tenant's credential, allows only the
//! tenant's broker and refuses DELETE, and then to a [`backend::Backend`]: the real network here;
//! the sandbox CRM and the scripted stub live in the test-support crate `crm-sandbox`. An [`audit::AuditLog`] records every call
//! and request.

pub mod answer_form;
pub mod audit;
pub mod backend;
pub mod bindings;
pub mod cache;
pub mod cli;
pub mod connections;
pub mod credential;
pub mod egress;
pub mod files;
pub mod governance;
pub mod hooks;
pub mod host;
mod journal;
pub mod listing;
mod mapping_store;
pub mod mcp;
pub mod metrics;
pub mod pacing;
pub mod private_fs;
pub mod progress;
pub mod refusal;
pub mod result_file;
pub mod runtime;
pub mod tasks;
pub mod tenant_db;

pub use audit::AuditLog;
pub use backend::Backend;
pub use host::{CallError, CallOptions, CallRequest, Host, TenantSpec};
pub use runtime::{HostLimits, PluginVersion, Runtime};

/// The component built by this crate's build script.
pub const COMPONENT_PATH: &str = env!("CRM_PLUGIN_WASM");
