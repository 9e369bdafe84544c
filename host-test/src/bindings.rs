//! Host bindings for the `plugin` world; every WASI import maps to wasmtime's own.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "plugin",
    exports: { default: async },
    with: {
        "wasi:http": wasmtime_wasi_http::p2::bindings::http,
        "wasi:io": wasmtime_wasi::p2::bindings::io,
        "wasi:clocks": wasmtime_wasi::p2::bindings::clocks,
        "crm:plugin/result-files.result-file": crate::result_file::ResultFile,
        "crm:plugin/mapping-store.mapping-change": crate::tenant_db::MappingChange,
    },
    require_store_data_send: true,
});

use crate::governance::HostPolicy;
use crm_plugin::error::kinds;

pub use exports::crm::plugin::tool_metadata::{ToolAnnotations, ToolMetadata};
pub use exports::crm::plugin::tools::{CallContext, ToolError, ToolSpec};

impl ToolError {
    /// The error with what a masked field could leak taken out, as answers are masked: only a
    /// `crm-error` carries the CRM's own words (see [`HostPolicy::mask_crm_error`]); the
    /// component's own refusals name masked fields but never hold values, and are kept.
    pub fn masked_by(self, policy: &HostPolicy) -> ToolError {
        match self {
            ToolError::CrmError(payload) if policy.masks() => {
                ToolError::CrmError(policy.mask_crm_error(payload))
            }
            other => other,
        }
    }

    /// The WIT case name.
    pub fn kind(&self) -> &'static str {
        match self {
            ToolError::NotConnected(_) => kinds::NOT_CONNECTED,
            ToolError::MissingScopes(_) => kinds::MISSING_SCOPES,
            ToolError::Forbidden(_) => kinds::FORBIDDEN,
            ToolError::InvalidInput(_) => kinds::INVALID_INPUT,
            ToolError::NotFound(_) => kinds::NOT_FOUND,
            ToolError::RateLimited(_) => kinds::RATE_LIMITED,
            ToolError::Unavailable(_) => kinds::UNAVAILABLE,
            ToolError::OutcomeUnknown(_) => kinds::OUTCOME_UNKNOWN,
            ToolError::CrmError(_) => kinds::CRM_ERROR,
        }
    }

    /// The case's payload as text.
    pub fn message(&self) -> String {
        match self {
            ToolError::MissingScopes(scopes) => scopes.join(", "),
            // A rate-limited request was not carried out, whoever refused it (the CRM's 429, or
            // the host holding the account's requests): the model may say so.
            ToolError::RateLimited(Some(s)) => {
                format!("the account's request limit is reached; nothing was done. Retry in {s} s")
            }
            ToolError::RateLimited(None) => {
                "the account's request limit is reached; nothing was done. Retry later".into()
            }
            ToolError::NotConnected(m)
            | ToolError::Forbidden(m)
            | ToolError::InvalidInput(m)
            | ToolError::NotFound(m)
            | ToolError::Unavailable(m)
            | ToolError::OutcomeUnknown(m)
            | ToolError::CrmError(m) => m.clone(),
        }
    }
}
