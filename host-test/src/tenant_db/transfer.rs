//! Moving one tenant from its SQLite file to the fleet's PostgreSQL database
//! (`crm-host store import-sqlite`): its mappings, created-record ids, change journal and
//! disconnects, row for row. Confirmation tokens are not moved: they last minutes, and a token
//! the new store does not know is refused, so the user previews again.

use super::rows::Rows;
use super::sqlite::SqliteRows;
use super::{DbLocation, MAX_PAGE, PgStore, StoreError, now_ms};
use std::path::Path;

/// What a move copied.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Moved {
    pub mappings: usize,
    pub created_records: usize,
    pub changes: usize,
    pub disconnected: Vec<String>,
}

/// Copies `tenant`'s rows from the SQLite file at `file` into `to`. Refused when `to` already
/// holds journal entries or created ids for the tenant (a second run would repeat them); the
/// mappings are written by key, so they are never doubled.
pub fn sqlite_to_postgres(tenant: &str, file: &Path, to: &PgStore) -> Result<Moved, StoreError> {
    if !file.is_file() {
        return Err(StoreError::NotFound(format!(
            "no SQLite store for tenant {tenant:?} at {}",
            file.display()
        )));
    }
    let from = SqliteRows::open(&DbLocation::File(file.to_path_buf()))?;
    let already = !to.list_changes(tenant, &Default::default(), 1)?.is_empty()
        || !to.created_records(tenant)?.is_empty();
    if already {
        return Err(StoreError::Invalid(format!(
            "the database already holds tenant {tenant:?}'s journal or created ids: it was \
             moved before"
        )));
    }
    let mut moved = Moved::default();
    for kind in ["user", "owner"] {
        let mut after: Option<String> = None;
        loop {
            let page = from.list_page(tenant, kind, after.as_deref(), MAX_PAGE)?;
            if page.is_empty() {
                break;
            }
            to.put(tenant, &page, now_ms())?;
            moved.mappings += page.len();
            after = page.last().map(|m| m.crm_id.clone());
        }
    }
    for row in from.created_records(tenant)? {
        to.record_created(&row)?;
        moved.created_records += 1;
    }
    let mut after = 0;
    loop {
        let page = from.changes_after(tenant, after, 500)?;
        let Some((last, _)) = page.last() else {
            break;
        };
        after = *last;
        for (_, change) in &page {
            // The SQLite host has stopped: a change it left pending has no call to settle it.
            to.insert_change(tenant, change, 0)?;
            moved.changes += 1;
        }
    }
    for crm in from.disconnected(tenant)? {
        to.set_disconnected(tenant, &crm, true, now_ms())?;
        moved.disconnected.push(crm);
    }
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenant_db::journal::{CallIdentity, Kind, NewChange, Status};
    use crate::tenant_db::{StoredMapping, TenantDb, testing};

    #[test]
    fn a_sqlite_tenant_moves_into_postgres_whole_and_only_once() {
        let Some(pg) = testing::postgres() else {
            return;
        };
        let tenant = testing::fresh_tenant("moving");
        let dir = std::env::temp_dir().join(format!("crm-move-{tenant}"));
        let file = dir.join("mappings.sqlite");
        let old = TenantDb::open(&tenant, &DbLocation::File(file.clone())).unwrap();
        let mappings: Vec<StoredMapping> = (0..1_200)
            .map(|i| StoredMapping {
                kind: if i % 3 == 0 { "user" } else { "owner" }.into(),
                crm_id: format!("{i}"),
                fields: format!(r#"{{"n":{i}}}"#),
                deleted: i % 7 == 0,
            })
            .collect();
        old.put(&mappings).unwrap();
        old.record_created("ana", "hubspot", "deals", "42").unwrap();
        let who = CallIdentity {
            user_id: "ana",
            tool: "crma_update_record",
            call_id: "c1",
        };
        let change = NewChange {
            crm: "hubspot",
            kind: Kind::Update,
            object: "deals",
            record_id: Some("42"),
            old_values: r#"{"amount":"1"}"#,
            new_values: r#"{"amount":"2"}"#,
            reverts: None,
            lease_until_ms: i64::MAX,
        };
        let first = old.journal_change(&who, &change).unwrap();
        old.settle_change(&who, &first, Status::Applied, None)
            .unwrap();
        let second = old.journal_change(&who, &change).unwrap();
        old.set_disconnected("crm-b", true).unwrap();

        let moved = sqlite_to_postgres(&tenant, &file, &pg).unwrap();
        assert_eq!(
            (moved.mappings, moved.created_records, moved.changes),
            (1_200, 1, 2)
        );
        let new = TenantDb::open(&tenant, &DbLocation::Postgres(pg.clone())).unwrap();
        for kind in ["user", "owner"] {
            assert_eq!(new.list(kind).unwrap(), old.list(kind).unwrap(), "{kind}");
        }
        assert_eq!(
            new.created_records().unwrap(),
            old.created_records().unwrap()
        );
        // The journal, newest first, ids and values kept. A change left pending by the stopped
        // SQLite host has no call left to settle it: it arrives unknown (resolvable), never
        // pending for good.
        let moved_changes = new.list_changes(None, None, None, 10).unwrap();
        let mut expected = old.list_changes(None, None, None, 10).unwrap();
        assert_eq!(expected[0].status, Status::Pending);
        expected[0].status = Status::Unknown;
        assert_eq!(moved_changes, expected);
        assert_eq!(
            new.change(&second).unwrap().unwrap().status,
            Status::Unknown
        );
        assert_eq!(new.disconnected().unwrap(), ["crm-b"]);
        let again = sqlite_to_postgres(&tenant, &file, &pg).unwrap_err();
        assert!(matches!(again, StoreError::Invalid(_)), "{again}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
