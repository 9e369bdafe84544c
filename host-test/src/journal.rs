//! `change-journal`, bound to this call's tenant, user, tool and audit call id: the component
//! names none of them, so it can neither journal in another's name nor read another tenant's
//! changes or redeem its tokens.

use crate::bindings::crm::plugin::change_journal as wit;
use crate::governance::HostPolicy;
use crate::tenant_db::TenantDb;
use crate::tenant_db::journal::{CallIdentity, Kind, NewChange, Refusal, Status};
use wasmtime::component::HasData;

/// `change-journal` as one call sees it: its tenant's journal, and the identity (user, tool,
/// audit call id) every entry and token is bound to.
pub(crate) struct JournalView<'a> {
    pub(crate) db: &'a TenantDb,
    pub(crate) identity: CallIdentity<'a>,
    pub(crate) policy: &'a HostPolicy,
    /// When the call will have ended, its time limit passed: each change it journals is
    /// leased to it until then.
    pub(crate) lease_until_ms: i64,
}

/// The `change-journal` capability, for the linker: its host data is a [`JournalView`].
pub(crate) struct ChangeJournal;

impl HasData for ChangeJournal {
    type Data<'a> = JournalView<'a>;
}

fn status(status: wit::ChangeStatus) -> Status {
    match status {
        wit::ChangeStatus::Pending => Status::Pending,
        wit::ChangeStatus::Applied => Status::Applied,
        wit::ChangeStatus::Failed => Status::Failed,
        wit::ChangeStatus::Unknown => Status::Unknown,
        wit::ChangeStatus::Declined => Status::Declined,
    }
}

fn to_wit(row: crate::tenant_db::journal::JournalRow) -> wit::Change {
    wit::Change {
        id: row.id,
        at_ms: row.at_ms.max(0) as u64,
        user_id: row.user_id,
        tool: row.tool,
        call_id: row.call_id,
        status: match row.status {
            Status::Pending => wit::ChangeStatus::Pending,
            Status::Applied => wit::ChangeStatus::Applied,
            Status::Failed => wit::ChangeStatus::Failed,
            Status::Unknown => wit::ChangeStatus::Unknown,
            Status::Declined => wit::ChangeStatus::Declined,
        },
        entry: wit::ChangeEntry {
            crm: row.crm,
            kind: match row.kind {
                Kind::Create => wit::ChangeKind::Create,
                Kind::Update => wit::ChangeKind::Update,
                Kind::Merge => wit::ChangeKind::Merge,
                Kind::Association => wit::ChangeKind::Association,
            },
            object: row.object,
            record_id: row.record_id,
            old_values: row.old_values,
            new_values: row.new_values,
            reverts: row.reverts,
        },
    }
}

impl wit::Host for JournalView<'_> {
    fn journal_change(&mut self, entry: wit::ChangeEntry) -> Result<String, wit::StoreError> {
        let change = NewChange {
            crm: &entry.crm,
            kind: match entry.kind {
                wit::ChangeKind::Create => Kind::Create,
                wit::ChangeKind::Update => Kind::Update,
                wit::ChangeKind::Merge => Kind::Merge,
                wit::ChangeKind::Association => Kind::Association,
            },
            object: &entry.object,
            record_id: entry.record_id.as_deref(),
            old_values: &entry.old_values,
            new_values: &entry.new_values,
            reverts: entry.reverts.as_deref(),
            lease_until_ms: self.lease_until_ms,
        };
        Ok(self.db.journal_change(&self.identity, &change)?)
    }

    fn settle_change(
        &mut self,
        id: String,
        outcome: wit::ChangeStatus,
        record_id: Option<String>,
    ) -> Result<(), wit::StoreError> {
        Ok(self
            .db
            .settle_change(&self.identity, &id, status(outcome), record_id.as_deref())?)
    }

    fn resolve_change(
        &mut self,
        id: String,
        outcome: wit::ChangeStatus,
        record_id: Option<String>,
    ) -> Result<(), wit::StoreError> {
        Ok(self
            .db
            .resolve_change(&id, status(outcome), record_id.as_deref())?)
    }

    fn list_changes(
        &mut self,
        filter: wit::ChangeFilter,
        limit: u32,
    ) -> Result<Vec<wit::Change>, wit::StoreError> {
        let rows = self.db.list_changes(
            filter.user_id.as_deref(),
            filter.record_id.as_deref(),
            filter.object.as_deref(),
            limit,
        )?;
        Ok(rows.into_iter().map(to_wit).collect())
    }

    fn get_change(&mut self, id: String) -> Result<Option<wit::Change>, wit::StoreError> {
        Ok(self.db.change(&id)?.map(to_wit))
    }

    fn issue_confirmation(
        &mut self,
        input: String,
        values_read: String,
    ) -> Result<wit::Confirmation, wit::StoreError> {
        let ttl = self.policy.confirm_ttl_ms();
        let (token, expires) =
            self.db
                .issue_confirmation(&self.identity, &input, &values_read, ttl)?;
        Ok(wit::Confirmation {
            token,
            expires_at_ms: expires.max(0) as u64,
        })
    }

    fn redeem_confirmation(
        &mut self,
        token: String,
        input: String,
    ) -> Result<String, wit::TokenRefusal> {
        self.db
            .redeem_confirmation(&self.identity, &token, &input)
            .map_err(|refusal| match refusal {
                Refusal::Unknown => wit::TokenRefusal::Unknown,
                Refusal::Used => wit::TokenRefusal::Used,
                Refusal::Expired => wit::TokenRefusal::Expired,
                Refusal::OtherUser => wit::TokenRefusal::OtherUser,
                Refusal::OtherTool => wit::TokenRefusal::OtherTool,
                Refusal::OtherInput => wit::TokenRefusal::OtherInput,
                Refusal::Store(m) => wit::TokenRefusal::Store(m),
            })
    }
}
