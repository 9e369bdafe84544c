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
    /// Any other CRM error, in one JSON shape for both CRMs (see [`CrmProblem`]); boxed, as it
    /// is much larger than the other cases.
    #[error("CRM error: {0}")]
    CrmError(Box<CrmProblem>),
}

impl ToolError {
    /// The WIT case name, used in audit lines and the command-line output.
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

    /// Shorthand for input errors, which are the most common.
    pub fn invalid(message: impl Into<String>) -> Self {
        ToolError::InvalidInput(message.into())
    }
}

/// The WIT `tool-error` case names, as the host and its clients read them (one spelling, used
/// by the component and the host alike).
pub mod kinds {
    /// Reconnect the CRM.
    pub const NOT_CONNECTED: &str = "not-connected";
    /// Re-authorize with the named scopes.
    pub const MISSING_SCOPES: &str = "missing-scopes";
    /// The CRM or the workspace policy refused.
    pub const FORBIDDEN: &str = "forbidden";
    /// Fix the input; nothing was sent.
    pub const INVALID_INPUT: &str = "invalid-input";
    /// No such record or object.
    pub const NOT_FOUND: &str = "not-found";
    /// Retry later.
    pub const RATE_LIMITED: &str = "rate-limited";
    /// The CRM or broker kept failing; retry later.
    pub const UNAVAILABLE: &str = "unavailable";
    /// A write was sent and its outcome is unknown.
    pub const OUTCOME_UNKNOWN: &str = "outcome-unknown";
    /// Any other CRM error, as JSON.
    pub const CRM_ERROR: &str = "crm-error";
}

/// Which CRM a problem comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Crm {
    /// CRM A.
    Hubspot,
    /// CRM B.
    Salesforce,
}

impl Crm {
    /// The CRM's id as answers and the journal spell it (`hubspot`), the same as its JSON form.
    pub fn id(self) -> &'static str {
        match self {
            Crm::Hubspot => "hubspot",
            Crm::Salesforce => "salesforce",
        }
    }

    /// The CRM whose id is `id`.
    pub fn from_id(id: &str) -> Option<Crm> {
        [Crm::Hubspot, Crm::Salesforce]
            .into_iter()
            .find(|c| c.id() == id)
    }

    /// The name the spec, the egress policy and the operator's commands give the CRM's
    /// connection: `crm-a` (HubSpot) or `crm-b` (Salesforce).
    pub fn integration(self) -> &'static str {
        match self {
            Crm::Hubspot => "crm-a",
            Crm::Salesforce => "crm-b",
        }
    }

    /// The CRM whose connection is named `name` (`crm-a`, `crm-b`).
    pub fn from_integration(name: &str) -> Option<Crm> {
        [Crm::Hubspot, Crm::Salesforce]
            .into_iter()
            .find(|c| c.integration() == name)
    }

    /// The product's name, for messages (`HubSpot`).
    pub fn product(self) -> &'static str {
        match self {
            Crm::Hubspot => "HubSpot",
            Crm::Salesforce => "Salesforce",
        }
    }
}

/// A CRM error the assistant can act on, in one JSON shape for both CRMs, so a client reads
/// `codes`, `messages`, `fields` and `hint` the same way whichever CRM answered.
///
/// `codes` are the CRM's own (`INVALID_FIELD`, `VALIDATION_ERROR`) or, when the problem is
/// the answer itself, ours in the same style (`UNEXPECTED_ANSWER`, `RESPONSE_TOO_LARGE`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CrmProblem {
    /// The CRM that answered (or whose answer could not be read).
    pub crm: Crm,
    /// The HTTP status, when the CRM answered.
    pub status: Option<u16>,
    /// Error codes: the CRM's own, or ours in the same style when its answer was the problem.
    pub codes: Vec<String>,
    /// The CRM's error messages as it wrote them; may be empty.
    pub messages: Vec<String>,
    /// Field or property names the CRM blamed.
    pub fields: Vec<String>,
    /// What to do next, written for the assistant.
    pub hint: String,
    /// The id the CRM's support asks for (HubSpot's `correlationId`).
    pub correlation_id: Option<String>,
    /// The record that already holds a unique value (HubSpot `CONFLICT` on create).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub existing_id: Option<String>,
}

impl CrmProblem {
    /// A problem with one code and a hint; the rest is added with the `with_*` methods.
    pub fn new(crm: Crm, code: impl Into<String>, hint: impl Into<String>) -> Self {
        CrmProblem {
            crm,
            status: None,
            codes: vec![code.into()],
            messages: Vec::new(),
            fields: Vec::new(),
            hint: hint.into(),
            correlation_id: None,
            existing_id: None,
        }
    }

    /// Sets the HTTP status the CRM answered with.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// Adds one message; an empty one is skipped.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        let message = message.into();
        if !message.is_empty() {
            self.messages.push(message);
        }
        self
    }

    /// The answer was not what the CRM documents (not JSON, or a missing list).
    pub fn unexpected_answer(crm: Crm, status: u16, what: impl Into<String>) -> Self {
        CrmProblem::new(
            crm,
            "UNEXPECTED_ANSWER",
            "The CRM sent an answer this tool could not read; try again, and report it if it \
             persists.",
        )
        .with_status(status)
        .with_message(what)
    }
}

impl std::fmt::Display for CrmProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let json = serde_json::to_string(self).map_err(|_| std::fmt::Error)?;
        f.write_str(&json)
    }
}

impl From<CrmProblem> for ToolError {
    fn from(problem: CrmProblem) -> Self {
        ToolError::CrmError(Box::new(problem))
    }
}

/// A setting that is missing or malformed; names the variable so an admin can fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("plugin configuration {key}: {problem}")]
pub struct ConfigError {
    /// The variable at fault, a `CRM_*` setting.
    pub key: &'static str,
    /// What is wrong with it, for the admin.
    pub problem: String,
}
