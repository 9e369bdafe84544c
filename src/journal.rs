//! The host's change journal and write confirmations for the calling tenant (the WIT import
//! `change-journal`). The host adds the tenant, the user, the time and the audit correlation,
//! so a component can neither forge nor reach another tenant's entries; nothing here removes
//! an entry.

use crate::error::Crm;
use serde::Serialize;
use serde_json::{Map, Value};

/// What a change does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// A new record or activity.
    Create,
    /// New values for fields of an existing record: the only kind a revert can undo.
    Update,
    /// HubSpot's merge of two companies.
    Merge,
    /// A link between two records.
    Association,
}

impl ChangeKind {
    /// The kind as the journal and answers spell it.
    pub fn name(self) -> &'static str {
        match self {
            ChangeKind::Create => "create",
            ChangeKind::Update => "update",
            ChangeKind::Merge => "merge",
            ChangeKind::Association => "association",
        }
    }
}

/// What happened to a journalled change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeStatus {
    /// Journalled; the write was about to be sent.
    Pending,
    /// The CRM accepted the write.
    Applied,
    /// The CRM refused it, or it was never sent: nothing changed.
    Failed,
    /// Sent, but whether it was applied is unknown.
    Unknown,
    /// The person declined it when asked: nothing was sent.
    Declined,
}

/// One change as the component journals it, before the write is sent.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeEntry {
    /// The CRM written to.
    pub crm: Crm,
    /// The tool that made it (the host records the call's own tool).
    pub tool: String,
    /// What the change does.
    pub kind: ChangeKind,
    /// The object type written.
    pub object: String,
    /// The record changed; for a create, filled in once the CRM gives the new id.
    pub record_id: Option<String>,
    /// The values the write overwrites (an update), as read just before it.
    pub old_values: Map<String, Value>,
    /// The values the write sends.
    pub new_values: Map<String, Value>,
    /// The change this one reverts.
    pub reverts: Option<String>,
}

/// A journalled change as the host keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The journal's id for it.
    pub id: String,
    /// When it was journalled, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The workspace user the assistant acted for.
    pub user_id: String,
    /// The audit trail's id of the call that made it.
    pub call_id: String,
    /// What happened to it.
    pub status: ChangeStatus,
    /// The change itself.
    pub entry: ChangeEntry,
}

/// Which changes to list; every part given must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeFilter {
    /// Made for this workspace user.
    pub user_id: Option<String>,
    /// To this record.
    pub record_id: Option<String>,
    /// To this object type.
    pub object: Option<String>,
}

/// A confirmation token the host signed for a preview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirmation {
    /// The token to pass back as `confirmation_token`.
    pub token: String,
    /// When it stops being good, in milliseconds since the Unix epoch.
    pub expires_at_ms: u64,
}

/// Why the host would not redeem a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenRefusal {
    /// Not a token the host issued for this workspace (or altered since).
    #[error("this confirmation token was not issued for this workspace")]
    Unknown,
    /// Already used for a write.
    #[error("this confirmation token was already used; a token is good for one write")]
    Used,
    /// Past its time.
    #[error("this confirmation token has expired")]
    Expired,
    /// Issued for another user.
    #[error("this confirmation token was issued for another user")]
    OtherUser,
    /// Issued for another tool.
    #[error("this confirmation token was issued for another tool")]
    OtherTool,
    /// Issued for a different input.
    #[error("this confirmation token was issued for a different input")]
    OtherInput,
    /// The host's store failed.
    #[error("the confirmation could not be checked: {0}")]
    Store(String),
}

/// The journal failed; the message comes from the host.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the change journal failed: {0}")]
pub struct JournalError(pub String);

/// The host's journal and confirmations for the calling tenant and user.
pub trait Journal {
    /// Keeps a change before its write is sent; returns its id.
    fn begin(&mut self, entry: &ChangeEntry) -> Result<String, JournalError>;
    /// Records what happened to the write, and a created record's new id.
    fn settle(
        &mut self,
        id: &str,
        status: ChangeStatus,
        record_id: Option<&str>,
    ) -> Result<(), JournalError>;
    /// Settles a change of this tenant whose outcome was unknown: `Applied` with the record
    /// the write made, or `Failed` when it provably never happened.
    fn resolve(
        &mut self,
        id: &str,
        status: ChangeStatus,
        record_id: Option<&str>,
    ) -> Result<(), JournalError>;
    /// The most recent changes matching `filter`, newest first.
    fn list(&mut self, filter: &ChangeFilter, limit: u32) -> Result<Vec<Change>, JournalError>;
    /// One change by id.
    fn get(&mut self, id: &str) -> Result<Option<Change>, JournalError>;
    /// Signs a confirmation for this tenant, user and tool (the host knows all three), bound
    /// to the canonical `input` and the values read for the preview.
    fn issue(
        &mut self,
        input: &str,
        values_read: &Map<String, Value>,
    ) -> Result<Confirmation, JournalError>;
    /// Uses up a token, once: returns the values read for its preview when the token was
    /// issued for this tenant, user, tool and input and is still good.
    fn redeem(&mut self, token: &str, input: &str) -> Result<Map<String, Value>, TokenRefusal>;
}
