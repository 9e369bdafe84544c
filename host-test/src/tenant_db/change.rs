//! One all-or-nothing change to a tenant's mappings, built over many calls (the component's
//! `mapping-change` resource): what the CRM holds is staged with [`MappingChange::observe`] and
//! read back in key order, the writes decided from it are staged with [`MappingChange::write`],
//! and [`MappingChange::commit`] applies them in one transaction.
//!
//! Staged rows live apart from `mappings` (SQLite: the connection's temporary tables;
//! PostgreSQL: a staging table keyed by tenant and change), so nothing is visible before the
//! commit; a change dropped uncommitted (the component failed, trapped, or
//! never committed) deletes its staged rows and leaves the store as it was.

use super::rows::Staged;
use super::{MAX_PAGE, StoreError, StoredMapping, TenantDb, check_limit, check_mapping, now_ms};
use std::sync::Arc;

/// Most rows one change may stage, observed and writes together: far above the largest sync
/// (400 pages of 500 owners, twice), so a runaway component cannot fill the host's disk.
const MAX_STAGED: usize = 2_000_000;

/// An open change to one tenant's mappings.
pub struct MappingChange {
    db: Arc<TenantDb>,
    /// Random, so changes begun on different hosts of one database never share staging rows.
    id: i64,
    /// Rows staged so far.
    staged: usize,
    /// False once committed.
    open: bool,
}

impl std::fmt::Debug for MappingChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappingChange")
            .field("tenant", &self.db.tenant)
            .field("id", &self.id)
            .field("open", &self.open)
            .finish()
    }
}

impl MappingChange {
    /// Begins a change to `db`'s mappings.
    pub fn begin(db: &Arc<TenantDb>) -> Self {
        MappingChange {
            db: db.clone(),
            id: super::journal::random_i64(),
            staged: 0,
            open: true,
        }
    }

    /// Stages mappings as observed in the CRM; a key observed again replaces the earlier one.
    pub fn observe(&mut self, mappings: &[StoredMapping]) -> Result<(), StoreError> {
        self.stage(Staged::Observed, mappings)
    }

    /// Up to `limit` (1 to [`MAX_PAGE`]) observed mappings of one kind in key order after the
    /// key `after`.
    pub fn observed(
        &self,
        kind: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredMapping>, StoreError> {
        self.check_open()?;
        check_limit(limit)?;
        self.db
            .rows
            .observed(&self.db.tenant, self.id, kind, after, limit)
    }

    /// Stages writes, each inserting or replacing the stored mapping with its key at commit.
    pub fn write(&mut self, mappings: &[StoredMapping]) -> Result<(), StoreError> {
        self.stage(Staged::Writes, mappings)
    }

    /// Applies every staged write in one transaction, all or none, and ends the change.
    pub fn commit(&mut self) -> Result<(), StoreError> {
        self.commit_unless_disconnected(None)
    }

    /// As [`MappingChange::commit`], but writes nothing when the store says `crm` (`crm-a`,
    /// `crm-b`) was disconnected, by this host or any other: `Disconnected`, and the change
    /// stays open (dropping it discards it).
    pub fn commit_unless_disconnected(&mut self, crm: Option<&str>) -> Result<(), StoreError> {
        self.check_open()?;
        if !self
            .db
            .rows
            .commit_change(&self.db.tenant, self.id, now_ms(), crm)?
        {
            return Err(StoreError::Disconnected(
                "HubSpot was disconnected during the call; no mapping was written. Reconnect \
                 HubSpot in the workspace's integration settings, then sync again."
                    .into(),
            ));
        }
        self.open = false;
        Ok(())
    }

    fn check_open(&self) -> Result<(), StoreError> {
        if self.open {
            Ok(())
        } else {
            Err(StoreError::Invalid(
                "this change was committed; begin another".into(),
            ))
        }
    }

    /// Adds a batch to a staging area, in one transaction: the whole batch or none of it.
    fn stage(&mut self, area: Staged, mappings: &[StoredMapping]) -> Result<(), StoreError> {
        self.check_open()?;
        if mappings.len() > MAX_PAGE {
            return Err(StoreError::Invalid(format!(
                "at most {MAX_PAGE} mappings per call"
            )));
        }
        if self.staged + mappings.len() > MAX_STAGED {
            return Err(StoreError::Invalid(format!(
                "at most {MAX_STAGED} mappings per change"
            )));
        }
        mappings.iter().try_for_each(check_mapping)?;
        self.db
            .rows
            .stage(&self.db.tenant, self.id, area, mappings)?;
        self.staged += mappings.len();
        Ok(())
    }
}

impl Drop for MappingChange {
    /// An uncommitted change is discarded: its staged rows go, the store stays as it was.
    fn drop(&mut self) {
        if self.open {
            let _ = self.db.rows.discard_change(&self.db.tenant, self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::StoredMapping;
    use super::*;

    fn mapping(kind: &str, id: &str, fields: &str, deleted: bool) -> StoredMapping {
        StoredMapping {
            kind: kind.into(),
            crm_id: id.into(),
            fields: fields.into(),
            deleted,
        }
    }

    #[test]
    fn nothing_is_visible_before_the_commit_and_everything_after() {
        for (kind, db) in crate::tenant_db::testing::stores("t1") {
            eprintln!("store: {kind}");
            db.put(&[mapping("owner", "1", r#"{"v":1}"#, false)])
                .unwrap();
            let mut change = MappingChange::begin(&db);
            change
                .write(&[
                    mapping("owner", "1", r#"{"v":1}"#, true),
                    mapping("owner", "2", r#"{"v":2}"#, false),
                ])
                .unwrap();
            assert_eq!(
                db.list("owner").unwrap(),
                [mapping("owner", "1", r#"{"v":1}"#, false)]
            );
            change.commit().unwrap();
            assert_eq!(
                db.list("owner").unwrap(),
                [
                    mapping("owner", "1", r#"{"v":1}"#, true),
                    mapping("owner", "2", r#"{"v":2}"#, false)
                ]
            );
            assert!(change.write(&[]).is_err(), "a committed change is spent");
        }
    }

    #[test]
    fn a_disconnect_in_the_store_stops_the_commit_whoever_made_it() {
        for (kind, db) in crate::tenant_db::testing::stores("cut") {
            let mut change = MappingChange::begin(&db);
            change.write(&[mapping("owner", "1", "{}", false)]).unwrap();
            // As another host (or `crm-host connection`) would: in the store only.
            db.set_disconnected("crm-a", true).unwrap();
            let err = change
                .commit_unless_disconnected(Some("crm-a"))
                .unwrap_err();
            assert!(matches!(err, StoreError::Disconnected(_)), "{kind}: {err}");
            assert!(db.list("owner").unwrap().is_empty(), "{kind}");
            drop(change);
            assert_eq!(db.staged_rows().unwrap(), 0, "{kind}");
            db.set_disconnected("crm-a", false).unwrap();
            let mut again = MappingChange::begin(&db);
            again.write(&[mapping("owner", "1", "{}", false)]).unwrap();
            again.commit_unless_disconnected(Some("crm-a")).unwrap();
            assert_eq!(db.list("owner").unwrap().len(), 1, "{kind}");
        }
    }

    #[test]
    fn a_dropped_change_leaves_the_store_and_the_staging_as_they_were() {
        for (kind, db) in crate::tenant_db::testing::stores("t1") {
            eprintln!("store: {kind}");
            let mut change = MappingChange::begin(&db);
            change
                .observe(&[mapping("user", "1", "{}", false)])
                .unwrap();
            change.write(&[mapping("user", "1", "{}", false)]).unwrap();
            drop(change);
            assert!(db.list("user").unwrap().is_empty());
            assert_eq!(db.staged_rows().unwrap(), 0);
        }
    }

    #[test]
    fn observed_mappings_come_back_in_key_order_a_page_at_a_time_the_last_observation_winning() {
        for (kind, db) in crate::tenant_db::testing::stores("t1") {
            eprintln!("store: {kind}");
            let mut change = MappingChange::begin(&db);
            let other = MappingChange::begin(&db);
            change
                .observe(&[
                    mapping("owner", "3", "{}", false),
                    mapping("owner", "10", "{}", false),
                    mapping("user", "2", "{}", false),
                    mapping("owner", "1", "{}", false),
                ])
                .unwrap();
            change
                .observe(&[mapping("owner", "3", "{}", true)])
                .unwrap();
            let ids = |page: Vec<StoredMapping>| -> Vec<(String, bool)> {
                page.into_iter().map(|m| (m.crm_id, m.deleted)).collect()
            };
            let first = change.observed("owner", None, 2).unwrap();
            assert_eq!(
                ids(first),
                [("1".into(), false), ("10".into(), false)],
                "byte order, as the component compares keys"
            );
            let rest = change.observed("owner", Some("10"), 2).unwrap();
            assert_eq!(ids(rest), [("3".into(), true)]);
            assert!(change.observed("owner", Some("3"), 2).unwrap().is_empty());
            assert!(other.observed("owner", None, 2).unwrap().is_empty());
        }
    }

    #[test]
    fn batches_and_pages_are_bounded_and_checked() {
        for (kind, db) in crate::tenant_db::testing::stores("t1") {
            eprintln!("store: {kind}");
            let mut change = MappingChange::begin(&db);
            let many: Vec<_> = (0..=MAX_PAGE)
                .map(|i| mapping("owner", &i.to_string(), "{}", false))
                .collect();
            assert!(change.observe(&many).is_err());
            assert!(change.observed("owner", None, MAX_PAGE + 1).is_err());
            assert!(change.observed("owner", None, 0).is_err());
            let err = change
                .write(&[
                    mapping("owner", "1", "{}", false),
                    mapping("owner", "2", "not json", false),
                ])
                .unwrap_err();
            assert!(
                matches!(&err, StoreError::Invalid(m) if m.contains("JSON object")),
                "{err}"
            );
            change.commit().unwrap();
            assert!(
                db.list("owner").unwrap().is_empty(),
                "the bad batch staged nothing"
            );
            assert!(db.list_page("owner", None, MAX_PAGE + 1).is_err());
        }
    }
}
