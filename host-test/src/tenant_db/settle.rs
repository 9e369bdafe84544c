//! What became of a write reaches the journal even when its call or the store fails.
//!
//! Two ways a change could otherwise stay `pending` for good, with a create then made twice:
//! - its host dies mid-write: each change is leased to its call until the call's time limit
//!   ([`super::journal::NewChange::lease_until_ms`]); once the lease has ended the change reads
//!   `unknown` (turned so before every journal read, and by a fleet-wide sweep), so the
//!   duplicate guard refuses the same create and `crm_resolve_change` can settle it;
//! - the store does not answer when the call settles it: the host keeps the outcome in memory
//!   and records it as soon as the store answers again (from `pending`, or from `unknown` when
//!   the lease ended meanwhile, and only for the call that journalled it).

use super::journal::CallIdentity;
use super::{StoreError, TenantDb, now_ms};
use crate::tenant_db::rows::Status;

/// An outcome the store did not take when its call settled it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Unsettled {
    id: String,
    call_id: String,
    status: Status,
    record_id: Option<String>,
}

/// Outcomes kept per tenant at most; past it the oldest go (their leases end, so they read
/// `unknown`, never `pending`).
const MAX_REMEMBERED: usize = 10_000;

impl TenantDb {
    /// Records what became of a change made by this call, and a created record's id. Only the
    /// call that journalled a change settles it, and only once. When the store does not answer,
    /// the outcome is kept and recorded later ([`TenantDb::settle_remembered`]).
    pub fn settle_change(
        &self,
        who: &CallIdentity<'_>,
        id: &str,
        status: Status,
        record_id: Option<&str>,
    ) -> Result<(), StoreError> {
        self.settle_remembered();
        let outcome = Unsettled {
            id: id.to_owned(),
            call_id: who.call_id.to_owned(),
            status,
            record_id: record_id.map(str::to_owned),
        };
        match self.record(&outcome) {
            Err(StoreError::Unavailable(why)) => {
                self.remember(outcome);
                Err(StoreError::Unavailable(format!(
                    "{why}; this host keeps the outcome and records it when the store answers"
                )))
            }
            other => other,
        }
    }

    /// Records the outcomes kept while the store did not answer; how many still wait.
    pub fn settle_remembered(&self) -> usize {
        let waiting = std::mem::take(&mut *self.unsettled());
        if waiting.is_empty() {
            return 0;
        }
        let mut kept = Vec::new();
        let mut away = false;
        for outcome in waiting {
            if away {
                kept.push(outcome);
                continue;
            }
            match self.record(&outcome) {
                Ok(()) => {}
                Err(StoreError::Unavailable(_)) => {
                    away = true;
                    kept.push(outcome);
                }
                // Settled by now some other way (resolved): nothing left to record.
                Err(err) => tracing::info!(
                    "tenant {}: change {}: the kept outcome was not recorded: {err}",
                    self.tenant,
                    outcome.id
                ),
            }
        }
        let mut unsettled = self.unsettled();
        kept.append(&mut unsettled);
        *unsettled = kept;
        unsettled.len()
    }

    /// Whether outcomes wait for the store.
    pub fn has_remembered(&self) -> bool {
        !self.unsettled().is_empty()
    }

    /// Turns this tenant's changes whose calls are over yet still `pending` into `unknown`.
    pub fn expire_leases(&self) -> Result<u64, StoreError> {
        self.rows.expire_leases(Some(&self.tenant), now_ms())
    }

    /// `pending` → the outcome; or `unknown` → the outcome, when the lease ended before the
    /// store took it (the call's own knowledge beats "unknown").
    fn record(&self, outcome: &Unsettled) -> Result<(), StoreError> {
        let record_id = outcome.record_id.as_deref();
        let call = Some(outcome.call_id.as_str());
        match self.set_status(
            &outcome.id,
            outcome.status,
            record_id,
            call,
            Status::Pending,
        ) {
            Err(StoreError::NotFound(_)) => self
                .set_status(
                    &outcome.id,
                    outcome.status,
                    record_id,
                    call,
                    Status::Unknown,
                )
                .map_err(|e| match e {
                    StoreError::NotFound(_) => StoreError::NotFound(format!(
                        "no pending change {:?} of this call",
                        outcome.id
                    )),
                    other => other,
                }),
            other => other,
        }
    }

    fn remember(&self, outcome: Unsettled) {
        let mut unsettled = self.unsettled();
        if unsettled.len() >= MAX_REMEMBERED {
            unsettled.remove(0);
        }
        unsettled.push(outcome);
    }

    fn unsettled(&self) -> std::sync::MutexGuard<'_, Vec<Unsettled>> {
        self.unsettled.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenant_db::journal::{Kind, NewChange};

    fn create(lease_until_ms: i64) -> NewChange<'static> {
        NewChange {
            crm: "salesforce",
            kind: Kind::Create,
            object: "Account",
            record_id: None,
            old_values: "{}",
            new_values: r#"{"Name":"Acme"}"#,
            reverts: None,
            lease_until_ms,
        }
    }

    const WHO: CallIdentity<'static> = CallIdentity {
        user_id: "ana",
        tool: "crmb_create_record",
        call_id: "call-1",
    };

    #[test]
    fn a_change_whose_call_is_over_reads_unknown_never_pending() {
        for (kind, db) in crate::tenant_db::testing::stores("lease") {
            let live = db.journal_change(&WHO, &create(now_ms() + 60_000)).unwrap();
            let dead = db.journal_change(&WHO, &create(now_ms() - 1)).unwrap();
            let status = |id: &str| db.change(id).unwrap().unwrap().status;
            assert_eq!(
                status(&live),
                Status::Pending,
                "{kind}: its call may still settle it"
            );
            assert_eq!(status(&dead), Status::Unknown, "{kind}: its call is over");
            // Resolvable now, as any unknown create.
            db.resolve_change(&dead, Status::Applied, Some("001A"))
                .unwrap();
            assert_eq!(status(&dead), Status::Applied);
            // A live call still settles its own.
            db.settle_change(&WHO, &live, Status::Applied, Some("001B"))
                .unwrap();
            assert_eq!(status(&live), Status::Applied, "{kind}");
        }
    }

    #[test]
    fn a_call_that_outlived_its_lease_still_records_what_it_knows() {
        for (kind, db) in crate::tenant_db::testing::stores("late") {
            let id = db.journal_change(&WHO, &create(now_ms() - 1)).unwrap();
            assert_eq!(db.expire_leases().unwrap(), 1, "{kind}");
            db.settle_change(&WHO, &id, Status::Applied, Some("001C"))
                .unwrap();
            let row = db.change(&id).unwrap().unwrap();
            assert_eq!(
                (row.status, row.record_id.as_deref()),
                (Status::Applied, Some("001C"))
            );
            // Another call cannot settle it.
            let other = CallIdentity {
                call_id: "call-2",
                ..WHO
            };
            let again = db.journal_change(&WHO, &create(now_ms() - 1)).unwrap();
            assert!(
                db.settle_change(&other, &again, Status::Failed, None)
                    .is_err()
            );
        }
    }

    #[test]
    fn an_outcome_the_store_did_not_take_is_kept_and_recorded_later() {
        for (kind, db) in crate::tenant_db::testing::stores("kept") {
            let id = db.journal_change(&WHO, &create(now_ms() + 60_000)).unwrap();
            db.remember(Unsettled {
                id: id.clone(),
                call_id: WHO.call_id.into(),
                status: Status::Applied,
                record_id: Some("001D".into()),
            });
            assert!(db.has_remembered());
            assert_eq!(db.settle_remembered(), 0, "{kind}: recorded, none waits");
            let row = db.change(&id).unwrap().unwrap();
            assert_eq!(
                (row.status, row.record_id.as_deref()),
                (Status::Applied, Some("001D"))
            );
            // One already settled some other way is dropped, not retried for ever.
            db.remember(Unsettled {
                id,
                call_id: WHO.call_id.into(),
                status: Status::Failed,
                record_id: None,
            });
            assert_eq!(db.settle_remembered(), 0, "{kind}");
            assert!(!db.has_remembered());
        }
    }
}
