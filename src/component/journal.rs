//! The host's `change-journal` import as the core's [`Journal`], for this call's tenant, user
//! and tool (the host binds all three; the component names none).

use super::crm::plugin::change_journal as wit;
use crate::error::Crm;
use crate::governance::{
    Change, ChangeEntry, ChangeFilter, ChangeKind, ChangeStatus, Confirmation, Journal,
    JournalError, TokenRefusal,
};
use serde_json::{Map, Value};

/// The host's journal for this call.
pub(super) struct HostJournal;

fn object(text: &str) -> Result<Map<String, Value>, JournalError> {
    serde_json::from_slice(text.as_bytes())
        .map_err(|e| JournalError(format!("a journalled value set is not a JSON object: {e}")))
}

fn text(values: &Map<String, Value>) -> String {
    serde_json::to_string(values).unwrap_or_else(|_| unreachable!("a JSON map serialises"))
}

fn to_status(status: ChangeStatus) -> wit::ChangeStatus {
    match status {
        ChangeStatus::Pending => wit::ChangeStatus::Pending,
        ChangeStatus::Applied => wit::ChangeStatus::Applied,
        ChangeStatus::Failed => wit::ChangeStatus::Failed,
        ChangeStatus::Unknown => wit::ChangeStatus::Unknown,
        ChangeStatus::Declined => wit::ChangeStatus::Declined,
    }
}

fn from_wit(change: wit::Change) -> Result<Change, JournalError> {
    let e = change.entry;
    Ok(Change {
        id: change.id,
        at_ms: change.at_ms,
        user_id: change.user_id,
        call_id: change.call_id,
        status: match change.status {
            wit::ChangeStatus::Pending => ChangeStatus::Pending,
            wit::ChangeStatus::Applied => ChangeStatus::Applied,
            wit::ChangeStatus::Failed => ChangeStatus::Failed,
            wit::ChangeStatus::Unknown => ChangeStatus::Unknown,
            wit::ChangeStatus::Declined => ChangeStatus::Declined,
        },
        entry: ChangeEntry {
            crm: Crm::from_id(&e.crm).ok_or_else(|| {
                JournalError(format!("a change names an unknown CRM {:?}", e.crm))
            })?,
            tool: change.tool,
            kind: match e.kind {
                wit::ChangeKind::Create => ChangeKind::Create,
                wit::ChangeKind::Update => ChangeKind::Update,
                wit::ChangeKind::Merge => ChangeKind::Merge,
                wit::ChangeKind::Association => ChangeKind::Association,
            },
            object: e.object,
            record_id: e.record_id,
            old_values: object(&e.old_values)?,
            new_values: object(&e.new_values)?,
            reverts: e.reverts,
        },
    })
}

impl Journal for HostJournal {
    fn begin(&mut self, entry: &ChangeEntry) -> Result<String, JournalError> {
        let kind = match entry.kind {
            ChangeKind::Create => wit::ChangeKind::Create,
            ChangeKind::Update => wit::ChangeKind::Update,
            ChangeKind::Merge => wit::ChangeKind::Merge,
            ChangeKind::Association => wit::ChangeKind::Association,
        };
        wit::journal_change(&wit::ChangeEntry {
            crm: entry.crm.id().into(),
            kind,
            object: entry.object.clone(),
            record_id: entry.record_id.clone(),
            old_values: text(&entry.old_values),
            new_values: text(&entry.new_values),
            reverts: entry.reverts.clone(),
        })
        .map_err(|e| JournalError(super::store::from_wit_error(e).0))
    }

    fn settle(
        &mut self,
        id: &str,
        status: ChangeStatus,
        record_id: Option<&str>,
    ) -> Result<(), JournalError> {
        wit::settle_change(id, to_status(status), record_id)
            .map_err(|e| JournalError(super::store::from_wit_error(e).0))
    }

    fn resolve(
        &mut self,
        id: &str,
        status: ChangeStatus,
        record_id: Option<&str>,
    ) -> Result<(), JournalError> {
        wit::resolve_change(id, to_status(status), record_id)
            .map_err(|e| JournalError(super::store::from_wit_error(e).0))
    }

    fn list(&mut self, filter: &ChangeFilter, limit: u32) -> Result<Vec<Change>, JournalError> {
        let filter = wit::ChangeFilter {
            user_id: filter.user_id.clone(),
            record_id: filter.record_id.clone(),
            object: filter.object.clone(),
        };
        wit::list_changes(&filter, limit)
            .map_err(|e| JournalError(super::store::from_wit_error(e).0))?
            .into_iter()
            .map(from_wit)
            .collect()
    }

    fn get(&mut self, id: &str) -> Result<Option<Change>, JournalError> {
        wit::get_change(id)
            .map_err(|e| JournalError(super::store::from_wit_error(e).0))?
            .map(from_wit)
            .transpose()
    }

    fn issue(
        &mut self,
        input: &str,
        values_read: &Map<String, Value>,
    ) -> Result<Confirmation, JournalError> {
        let c = wit::issue_confirmation(input, &text(values_read))
            .map_err(|e| JournalError(super::store::from_wit_error(e).0))?;
        Ok(Confirmation {
            token: c.token,
            expires_at_ms: c.expires_at_ms,
        })
    }

    fn redeem(&mut self, token: &str, input: &str) -> Result<Map<String, Value>, TokenRefusal> {
        let values = wit::redeem_confirmation(token, input).map_err(|refusal| match refusal {
            wit::TokenRefusal::Unknown => TokenRefusal::Unknown,
            wit::TokenRefusal::Used => TokenRefusal::Used,
            wit::TokenRefusal::Expired => TokenRefusal::Expired,
            wit::TokenRefusal::OtherUser => TokenRefusal::OtherUser,
            wit::TokenRefusal::OtherTool => TokenRefusal::OtherTool,
            wit::TokenRefusal::OtherInput => TokenRefusal::OtherInput,
            wit::TokenRefusal::Store(m) => TokenRefusal::Store(m),
        })?;
        object(&values).map_err(|e| TokenRefusal::Store(e.0))
    }
}
