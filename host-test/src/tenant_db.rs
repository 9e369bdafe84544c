//! Each tenant's database: one SQLite database per tenant, holding its mappings and created
//! ids (the `mapping-store` import), its change journal, its confirmation tokens and their
//! HMAC key (the `change-journal` import, in `journal`), and its disconnects.
//!
//! Each tenant gets its own database (its own file by default, so mappings survive a restart),
//! and every row also carries the tenant id, which every query filters on: a call can reach
//! only the store of the tenant the host is serving. Rows are never deleted; soft deletes set
//! `deleted` and keep the row.
//!
//! A sync's many mappings go through a [`MappingChange`]: staged in the connection's temporary
//! tables a batch at a time, read back in key order, and applied in one transaction at commit.
//! No call moves more than [`MAX_PAGE`] mappings, so neither side holds a large listing whole.

mod change;
mod error;
pub mod journal;

pub use change::MappingChange;
pub use error::StoreError;

use rusqlite::{Connection, OptionalExtension, params};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// Largest `fields` JSON the host accepts for one mapping.
const MAX_FIELDS_BYTES: usize = 64 << 10;
/// Largest id, object type or key the host accepts.
const MAX_KEY_BYTES: usize = 128;
/// Most mappings one write may carry.
const MAX_BATCH: usize = 200_000;
/// Most mappings one page read or one staged batch carries.
pub const MAX_PAGE: usize = 500;

/// Where a tenant's mappings live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbLocation {
    /// A SQLite file, created when missing: survives restarts.
    File(PathBuf),
    /// Memory only, gone when the host stops (tests, throwaway runs).
    Memory,
}

/// A mapping as stored (the WIT record plus bookkeeping).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMapping {
    /// `user` or `owner`.
    pub kind: String,
    pub crm_id: String,
    /// A JSON object.
    pub fields: String,
    pub deleted: bool,
}

/// A created record's id, as the host kept it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedRow {
    pub tenant: String,
    pub user_id: String,
    pub crm: String,
    pub object_type: String,
    pub record_id: String,
    pub created_at_ms: i64,
}

/// One tenant's mapping database.
pub struct TenantDb {
    tenant: Arc<str>,
    conn: Mutex<Connection>,
    /// The id the next change's staged rows carry.
    next_change: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for TenantDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenantDb")
            .field("tenant", &self.tenant)
            .finish()
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

impl TenantDb {
    pub fn open(tenant: &str, location: &DbLocation) -> Result<Self, StoreError> {
        let conn = match location {
            DbLocation::File(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    crate::private_fs::create_dir_all(dir)
                        .map_err(|e| StoreError::Unavailable(format!("{}: {e}", dir.display())))?;
                }
                crate::private_fs::touch(path)
                    .map_err(|e| StoreError::Unavailable(format!("{}: {e}", path.display())))?;
                Connection::open(path)
                    .map_err(|e| StoreError::Unavailable(format!("{}: {e}", path.display())))?
            }
            DbLocation::Memory => Connection::open_in_memory().map_err(StoreError::from)?,
        };
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             PRAGMA busy_timeout = 5000;
             CREATE TABLE IF NOT EXISTS mappings (
                 tenant        TEXT    NOT NULL,
                 kind          TEXT    NOT NULL CHECK (kind IN ('user', 'owner')),
                 crm_id        TEXT    NOT NULL,
                 fields        TEXT    NOT NULL CHECK (json_valid(fields)),
                 deleted       INTEGER NOT NULL DEFAULT 0,
                 deleted_at_ms INTEGER,
                 created_at_ms INTEGER NOT NULL,
                 updated_at_ms INTEGER NOT NULL,
                 PRIMARY KEY (tenant, kind, crm_id)
             );
             CREATE TABLE IF NOT EXISTS created_records (
                 seq           INTEGER PRIMARY KEY,
                 tenant        TEXT    NOT NULL,
                 user_id       TEXT    NOT NULL,
                 crm           TEXT    NOT NULL,
                 object_type   TEXT    NOT NULL,
                 record_id     TEXT    NOT NULL,
                 created_at_ms INTEGER NOT NULL
             );
             CREATE TABLE IF NOT EXISTS disconnected (
                 tenant          TEXT    NOT NULL,
                 crm             TEXT    NOT NULL CHECK (crm IN ('crm-a', 'crm-b')),
                 disconnected_at_ms INTEGER NOT NULL,
                 PRIMARY KEY (tenant, crm)
             );",
        )
        .map_err(StoreError::from)?;
        change::create_staging(&conn)?;
        journal::create_tables(&conn)?;
        Ok(TenantDb {
            tenant: tenant.into(),
            conn: Mutex::new(conn),
            next_change: std::sync::atomic::AtomicU64::new(1),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every mapping of one kind for this tenant, deleted ones included, in key order.
    pub fn list(&self, kind: &str) -> Result<Vec<StoredMapping>, StoreError> {
        let conn = self.conn();
        let mut statement = conn
            .prepare_cached(
                "SELECT kind, crm_id, fields, deleted FROM mappings
                 WHERE tenant = ?1 AND kind = ?2 ORDER BY crm_id",
            )
            .map_err(StoreError::from)?;
        let rows = statement
            .query_map(params![&*self.tenant, kind], stored_mapping)
            .map_err(StoreError::from)?;
        rows.collect::<Result<_, _>>().map_err(StoreError::from)
    }

    /// Up to `limit` (1 to [`MAX_PAGE`]) mappings of one kind for this tenant, deleted ones
    /// included, in key order after the key `after` (from the first when `None`).
    pub fn list_page(
        &self,
        kind: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredMapping>, StoreError> {
        check_limit(limit)?;
        let conn = self.conn();
        let mut statement = conn
            .prepare_cached(
                "SELECT kind, crm_id, fields, deleted FROM mappings
                 WHERE tenant = ?1 AND kind = ?2 AND (?3 IS NULL OR crm_id > ?3)
                 ORDER BY crm_id LIMIT ?4",
            )
            .map_err(StoreError::from)?;
        let rows = statement
            .query_map(
                params![&*self.tenant, kind, after, limit as i64],
                stored_mapping,
            )
            .map_err(StoreError::from)?;
        rows.collect::<Result<_, _>>().map_err(StoreError::from)
    }

    /// One mapping by key.
    pub fn get(&self, kind: &str, crm_id: &str) -> Result<Option<StoredMapping>, StoreError> {
        self.conn()
            .query_row(
                "SELECT kind, crm_id, fields, deleted FROM mappings
                 WHERE tenant = ?1 AND kind = ?2 AND crm_id = ?3",
                params![&*self.tenant, kind, crm_id],
                stored_mapping,
            )
            .optional()
            .map_err(StoreError::from)
    }

    /// Inserts or replaces each mapping by key in one transaction: all or none.
    pub fn put(&self, mappings: &[StoredMapping]) -> Result<(), StoreError> {
        if mappings.len() > MAX_BATCH {
            return Err(StoreError::Invalid(format!(
                "at most {MAX_BATCH} mappings per write"
            )));
        }
        mappings.iter().try_for_each(check_mapping)?;
        let now = now_ms();
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(StoreError::from)?;
        {
            let mut upsert = tx
                .prepare_cached(&format!(
                    "INSERT INTO mappings {INSERTED}
                         VALUES (?1, ?2, ?3, ?4, ?5, CASE WHEN ?5 THEN ?6 END, ?6, ?6) {UPSERT}"
                ))
                .map_err(StoreError::from)?;
            for m in mappings {
                upsert
                    .execute(params![
                        &*self.tenant,
                        m.kind,
                        m.crm_id,
                        m.fields,
                        m.deleted,
                        now
                    ])
                    .map_err(StoreError::from)?;
            }
        }
        tx.commit().map_err(StoreError::from)
    }

    /// Keeps a created record's id with the tenant, the acting user and the time.
    pub fn record_created(
        &self,
        user_id: &str,
        crm: &str,
        object_type: &str,
        record_id: &str,
    ) -> Result<(), StoreError> {
        if !matches!(crm, "hubspot" | "salesforce") {
            return Err(StoreError::Invalid(format!("unknown CRM {crm:?}")));
        }
        check_key("object type", object_type)?;
        check_key("record id", record_id)?;
        self.conn()
            .execute(
                "INSERT INTO created_records (tenant, user_id, crm, object_type, record_id, created_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![&*self.tenant, user_id, crm, object_type, record_id, now_ms()],
            )
            .map(drop)
            .map_err(StoreError::from)
    }

    /// The CRMs an operator disconnected for this tenant (`crm-a`, `crm-b`), so a disconnect
    /// outlives the process that made it.
    pub fn disconnected(&self) -> Result<Vec<String>, StoreError> {
        let conn = self.conn();
        let mut statement = conn
            .prepare_cached("SELECT crm FROM disconnected WHERE tenant = ?1 ORDER BY crm")
            .map_err(StoreError::from)?;
        let rows = statement
            .query_map(params![&*self.tenant], |row| row.get::<_, String>(0))
            .map_err(StoreError::from)?;
        rows.collect::<Result<_, _>>().map_err(StoreError::from)
    }

    /// Records that `crm` is disconnected (or connected again) for this tenant.
    pub fn set_disconnected(&self, crm: &str, disconnected: bool) -> Result<(), StoreError> {
        if !matches!(crm, "crm-a" | "crm-b") {
            return Err(StoreError::Invalid(format!("unknown CRM {crm:?}")));
        }
        let conn = self.conn();
        let changed = if disconnected {
            conn.execute(
                "INSERT OR IGNORE INTO disconnected (tenant, crm, disconnected_at_ms) VALUES (?1, ?2, ?3)",
                params![&*self.tenant, crm, now_ms()],
            )
        } else {
            conn.execute(
                "DELETE FROM disconnected WHERE tenant = ?1 AND crm = ?2",
                params![&*self.tenant, crm],
            )
        };
        changed.map(drop).map_err(StoreError::from)
    }

    /// Every created-record id kept for this tenant, oldest first.
    pub fn created_records(&self) -> Result<Vec<CreatedRow>, StoreError> {
        let conn = self.conn();
        let mut statement = conn
            .prepare_cached(
                "SELECT tenant, user_id, crm, object_type, record_id, created_at_ms
                 FROM created_records WHERE tenant = ?1 ORDER BY seq",
            )
            .map_err(StoreError::from)?;
        let rows = statement
            .query_map(params![&*self.tenant], |row| {
                Ok(CreatedRow {
                    tenant: row.get(0)?,
                    user_id: row.get(1)?,
                    crm: row.get(2)?,
                    object_type: row.get(3)?,
                    record_id: row.get(4)?,
                    created_at_ms: row.get(5)?,
                })
            })
            .map_err(StoreError::from)?;
        rows.collect::<Result<_, _>>().map_err(StoreError::from)
    }
}

/// The columns an insert names, in order.
const INSERTED: &str =
    "(tenant, kind, crm_id, fields, deleted, deleted_at_ms, created_at_ms, updated_at_ms)";

/// How an insert replaces the stored mapping with its key: `deleted_at_ms` keeps the time of
/// the first soft delete, and clears when the mapping is restored.
const UPSERT: &str = "ON CONFLICT (tenant, kind, crm_id) DO UPDATE SET
    fields = excluded.fields,
    deleted = excluded.deleted,
    deleted_at_ms = CASE
        WHEN excluded.deleted = 0 THEN NULL
        WHEN mappings.deleted = 1 THEN mappings.deleted_at_ms
        ELSE excluded.updated_at_ms END,
    updated_at_ms = excluded.updated_at_ms";

/// A row of `kind, crm_id, fields, deleted`.
fn stored_mapping(row: &rusqlite::Row<'_>) -> rusqlite::Result<StoredMapping> {
    Ok(StoredMapping {
        kind: row.get(0)?,
        crm_id: row.get(1)?,
        fields: row.get(2)?,
        deleted: row.get(3)?,
    })
}

/// A mapping the host accepts: a plain key and a bounded JSON object.
fn check_mapping(m: &StoredMapping) -> Result<(), StoreError> {
    if !matches!(m.kind.as_str(), "user" | "owner") {
        return Err(StoreError::Invalid(format!(
            "mapping {}: unknown kind {:?}",
            m.crm_id, m.kind
        )));
    }
    check_key("crm id", &m.crm_id)?;
    if m.fields.len() > MAX_FIELDS_BYTES {
        return Err(StoreError::Invalid(format!(
            "mapping {}: fields over {MAX_FIELDS_BYTES} bytes",
            m.crm_id
        )));
    }
    match serde_json::from_str::<serde_json::Value>(&m.fields) {
        Ok(serde_json::Value::Object(_)) => Ok(()),
        _ => Err(StoreError::Invalid(format!(
            "mapping {}: fields must be a JSON object",
            m.crm_id
        ))),
    }
}

/// A page size the host serves: 1 to [`MAX_PAGE`].
fn check_limit(limit: usize) -> Result<(), StoreError> {
    if (1..=MAX_PAGE).contains(&limit) {
        Ok(())
    } else {
        Err(StoreError::Invalid(format!(
            "a page holds 1 to {MAX_PAGE} mappings"
        )))
    }
}

fn check_key(what: &str, value: &str) -> Result<(), StoreError> {
    if value.is_empty() || value.len() > MAX_KEY_BYTES || value.chars().any(char::is_control) {
        Err(StoreError::Invalid(format!(
            "{what} must be 1-{MAX_KEY_BYTES} printable bytes"
        )))
    } else {
        Ok(())
    }
}

/// The database file for a tenant under a data directory: `{dir}/{tenant}/mappings.sqlite`.
/// Tenant ids that are not plain names are refused, so no tenant can point at another's file.
pub fn tenant_file(data_dir: &Path, tenant: &str) -> Result<PathBuf, StoreError> {
    let plain = !tenant.is_empty()
        && tenant.len() <= 64
        && tenant
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && !tenant.starts_with('-');
    if plain {
        Ok(data_dir.join(tenant).join("mappings.sqlite"))
    } else {
        Err(StoreError::Invalid(format!(
            "tenant id {tenant:?} cannot name a data directory: use letters, digits, - and _"
        )))
    }
}

#[cfg(test)]
mod tests {
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
    fn mappings_upsert_by_key_and_soft_delete_keeps_the_row() {
        let db = TenantDb::open("t1", &DbLocation::Memory).unwrap();
        db.put(&[mapping("owner", "7", r#"{"email":"a@x.com"}"#, false)])
            .unwrap();
        db.put(&[mapping("owner", "7", r#"{"email":"a@x.com"}"#, true)])
            .unwrap();
        let all = db.list("owner").unwrap();
        assert_eq!(
            all,
            vec![mapping("owner", "7", r#"{"email":"a@x.com"}"#, true)]
        );
        assert!(db.list("user").unwrap().is_empty());
    }

    #[test]
    fn a_bad_mapping_rolls_back_the_whole_write() {
        let db = TenantDb::open("t1", &DbLocation::Memory).unwrap();
        let err = db
            .put(&[
                mapping("owner", "1", "{}", false),
                mapping("owner", "2", "not json", false),
            ])
            .unwrap_err();
        assert!(
            matches!(&err, StoreError::Invalid(m) if m.contains("JSON object")),
            "{err}"
        );
        assert!(db.list("owner").unwrap().is_empty());
    }

    #[test]
    fn tenants_sharing_a_file_never_see_each_other() {
        let dir = std::env::temp_dir().join(format!("crm-host-map-{}", std::process::id()));
        let file = DbLocation::File(dir.join("shared.sqlite"));
        let a = TenantDb::open("a", &file).unwrap();
        let b = TenantDb::open("b", &file).unwrap();
        a.put(&[mapping("user", "1", "{}", false)]).unwrap();
        a.record_created("u", "hubspot", "deals", "5").unwrap();
        assert!(b.list("user").unwrap().is_empty());
        assert!(b.created_records().unwrap().is_empty());
        assert_eq!(a.created_records().unwrap()[0].record_id, "5");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn tenant_files_are_plain_names_only() {
        assert!(tenant_file(Path::new("/d"), "acme").is_ok());
        for bad in ["", "../x", "a/b", ".", "-rf", "a b"] {
            assert!(tenant_file(Path::new("/d"), bad).is_err(), "{bad}");
        }
    }
}
