//! Why a call produced no tool result, typed, each case saying what to do next.

use crate::bindings::ToolError;

/// Why a call produced no tool result.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The tool ran and returned a `tool-error`.
    #[error("{}: {}", .0.kind(), .0.message())]
    Tool(ToolError),
    #[error("unknown tenant {0:?}")]
    UnknownTenant(String),
    #[error("tenant {0:?}: {1}")]
    BadTenant(String, String),
    /// The tenant is listed, but its entry cannot be built on this host (a credential variable
    /// missing here, say): its calls are refused with nothing sent until the operator fixes
    /// what `why` names. Other hosts of the fleet may serve it.
    #[error("tenant {tenant} is out of service on this host: {why}")]
    OutOfService { tenant: String, why: String },
    /// The component trapped, ran out of memory or time, or could not be instantiated.
    #[error("the plugin failed: {0}")]
    Plugin(String),
    /// The caller cancelled the call before it finished.
    #[error("{}", if *write_sent {
        "cancelled after a write was sent: its outcome is unknown; check the record before redoing it"
    } else {
        "cancelled before any write was sent"
    })]
    Cancelled { write_sent: bool },
}

impl CallError {
    /// The outcome name used in audit lines and command-line errors.
    pub fn kind(&self) -> &'static str {
        match self {
            CallError::Tool(e) => e.kind(),
            CallError::Cancelled { write_sent: true } => "outcome-unknown",
            CallError::Cancelled { write_sent: false } => "cancelled",
            CallError::OutOfService { .. } => "out-of-service",
            _ => "host-error",
        }
    }
}

/// What a client is told of a trap: its kind in one line, and the call id under which the
/// operator's log and audit trail hold the rest (never the wasm backtrace, which names the
/// component's functions and offsets).
pub(super) fn trap_summary(trap: &wasmtime::Error, call_id: &str) -> String {
    let what = match trap.downcast_ref::<wasmtime::Trap>() {
        Some(code) => code.to_string(),
        None => trap
            .root_cause()
            .to_string()
            .lines()
            .next()
            .unwrap_or("an error")
            .to_string(),
    };
    format!("{what} (call {call_id}; the operator's log has the details)")
}
