//! The errors every tool returns, one case per thing the assistant can tell the user to do.
//!
//! The cases mirror the WIT `tool-error` variant one to one, so the shell maps them without
//! losing anything.

/// Why a tool call failed. Each message is written for the assistant: what happened and what to
/// do next.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// No connection, or it expired or was revoked: reconnect in integration settings.
    #[error("not connected: {0}")]
    NotConnected(String),
    /// The granted scopes do not cover the call; these scopes would.
    #[error("missing scopes: re-authorize the connection and approve {}", .0.join(" or "))]
    MissingScopes(Vec<String>),
    /// The CRM refused: object or field permission, marketplace access, API access.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// The input is wrong; nothing was sent.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// No such record or object.
    #[error("not found: {0}")]
    NotFound(String),
    /// Rate limited after the allowed retries; seconds to wait when known.
    #[error("rate limited{}", .0.map(|s| format!(": retry in {s} s")).unwrap_or_default())]
    RateLimited(Option<u32>),
    /// The CRM or broker kept failing on a call that is safe to retry later.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// A write was sent but its outcome is unknown; it was not retried.
    #[error("outcome unknown: {0}")]
    OutcomeUnknown(String),
    /// Any other CRM error, as JSON with the status, codes and messages.
    #[error("CRM error: {0}")]
    CrmError(String),
}

impl ToolError {
    /// The WIT case name, used in audit lines and the command-line output.
    pub fn kind(&self) -> &'static str {
        match self {
            ToolError::NotConnected(_) => "not-connected",
            ToolError::MissingScopes(_) => "missing-scopes",
            ToolError::Forbidden(_) => "forbidden",
            ToolError::InvalidInput(_) => "invalid-input",
            ToolError::NotFound(_) => "not-found",
            ToolError::RateLimited(_) => "rate-limited",
            ToolError::Unavailable(_) => "unavailable",
            ToolError::OutcomeUnknown(_) => "outcome-unknown",
            ToolError::CrmError(_) => "crm-error",
        }
    }

    /// Shorthand for input errors, which are the most common.
    pub fn invalid(message: impl Into<String>) -> Self {
        ToolError::InvalidInput(message.into())
    }
}
