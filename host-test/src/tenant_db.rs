//! Each tenant's store: its mappings and created ids (the `mapping-store` import), its change
//! journal, its confirmation tokens and their HMAC key (the `change-journal` import, in
//! `journal`), and its disconnects.
//!
//! [`TenantDb`] is the one door to it: it checks every value and keeps the rules, then hands
//! rows to a [`rows::Rows`] implementation: SQLite ([`sqlite`], one file per tenant by default,
//! so mappings survive a restart) or PostgreSQL ([`postgres`], one database that a fleet of hosts
//! shares). Every row carries the tenant id, which every query filters on: a call can reach only
//! the store of the tenant the host is serving. Rows are never deleted; soft deletes set
//! `deleted` and keep the row.
//!
//! A sync's many mappings go through a [`MappingChange`]: staged a batch at a time, read back in
//! key order, and applied in one transaction at commit. No call moves more than [`MAX_PAGE`]
//! mappings, so neither side holds a large listing whole.

mod change;
mod error;
pub mod journal;
pub mod postgres;
pub mod rows;
mod settle;
mod sqlite;
#[cfg(test)]
pub(crate) mod testing;
pub mod transfer;

pub use change::MappingChange;
pub use error::StoreError;
pub use postgres::PgStore;
pub use sqlite::open_stores;

use rows::Rows;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// Largest `fields` JSON the host accepts for one mapping.
const MAX_FIELDS_BYTES: usize = 64 << 10;
/// Largest id, object type or key the host accepts.
const MAX_KEY_BYTES: usize = 128;
/// Most mappings one write may carry.
const MAX_BATCH: usize = 200_000;
/// Most mappings one page read or one staged batch carries.
pub const MAX_PAGE: usize = 500;

/// Where a tenant's store lives.
#[derive(Clone)]
pub enum DbLocation {
    /// A SQLite file, created when missing: survives restarts.
    File(PathBuf),
    /// Memory only, gone when the host stops (tests, throwaway runs).
    Memory,
    /// A PostgreSQL database shared by every host of a fleet.
    Postgres(Arc<PgStore>),
}

impl std::fmt::Debug for DbLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DbLocation::File(path) => f.debug_tuple("File").field(path).finish(),
            DbLocation::Memory => f.write_str("Memory"),
            DbLocation::Postgres(store) => f.debug_tuple("Postgres").field(store).finish(),
        }
    }
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

/// One tenant's store.
pub struct TenantDb {
    tenant: Arc<str>,
    rows: Arc<dyn Rows>,
    /// The confirmation-signing key, read (or made) once.
    signing_key: OnceLock<ring::hmac::Key>,
    /// Outcomes of this tenant's writes the store did not take when they were settled.
    unsettled: std::sync::Mutex<Vec<settle::Unsettled>>,
}

impl std::fmt::Debug for TenantDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenantDb")
            .field("tenant", &self.tenant)
            .finish()
    }
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

impl TenantDb {
    pub fn open(tenant: &str, location: &DbLocation) -> Result<Self, StoreError> {
        let rows: Arc<dyn Rows> = match location {
            DbLocation::Postgres(store) => store.clone(),
            local => Arc::new(sqlite::SqliteRows::open(local)?),
        };
        Ok(TenantDb {
            tenant: tenant.into(),
            rows,
            signing_key: OnceLock::new(),
            unsettled: Default::default(),
        })
    }

    /// The tenant this store serves.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// Every mapping of one kind for this tenant, deleted ones included, in key order.
    pub fn list(&self, kind: &str) -> Result<Vec<StoredMapping>, StoreError> {
        let mut all = Vec::new();
        loop {
            let after = all.last().map(|m: &StoredMapping| m.crm_id.clone());
            let page = self.list_page(kind, after.as_deref(), MAX_PAGE)?;
            let done = page.len() < MAX_PAGE;
            all.extend(page);
            if done {
                return Ok(all);
            }
        }
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
        self.rows.list_page(&self.tenant, kind, after, limit)
    }

    /// One mapping by key.
    pub fn get(&self, kind: &str, crm_id: &str) -> Result<Option<StoredMapping>, StoreError> {
        self.rows.get(&self.tenant, kind, crm_id)
    }

    /// Inserts or replaces each mapping by key in one transaction: all or none.
    pub fn put(&self, mappings: &[StoredMapping]) -> Result<(), StoreError> {
        if mappings.len() > MAX_BATCH {
            return Err(StoreError::Invalid(format!(
                "at most {MAX_BATCH} mappings per write"
            )));
        }
        mappings.iter().try_for_each(check_mapping)?;
        self.rows.put(&self.tenant, mappings, now_ms())
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
        self.rows.record_created(&CreatedRow {
            tenant: self.tenant.to_string(),
            user_id: user_id.into(),
            crm: crm.into(),
            object_type: object_type.into(),
            record_id: record_id.into(),
            created_at_ms: now_ms(),
        })
    }

    /// The CRMs an operator disconnected for this tenant (`crm-a`, `crm-b`), so a disconnect
    /// outlives the process that made it.
    pub fn disconnected(&self) -> Result<Vec<String>, StoreError> {
        self.rows.disconnected(&self.tenant)
    }

    /// Records that `crm` is disconnected (or connected again) for this tenant. In PostgreSQL
    /// every other host hears of it at once.
    pub fn set_disconnected(&self, crm: &str, disconnected: bool) -> Result<(), StoreError> {
        if !matches!(crm, "crm-a" | "crm-b") {
            return Err(StoreError::Invalid(format!("unknown CRM {crm:?}")));
        }
        self.rows
            .set_disconnected(&self.tenant, crm, disconnected, now_ms())
    }

    /// Every created-record id kept for this tenant, oldest first.
    pub fn created_records(&self) -> Result<Vec<CreatedRow>, StoreError> {
        self.rows.created_records(&self.tenant)
    }

    /// How many rows this tenant's open changes have staged (none once every change has
    /// committed or been dropped).
    pub fn staged_rows(&self) -> Result<i64, StoreError> {
        self.rows.staged_rows(&self.tenant)
    }

    /// Keeps `owner`'s published result file where every host of the store can read it (a
    /// fleet's database) for `ttl`, as long as files are served; nothing to do on SQLite.
    /// A file is kept under its owner's key, so no other user's listing or fetch finds it.
    pub fn keep_result_file(
        &self,
        owner: &ResultOwner,
        name: &str,
        path: &Path,
        ttl: std::time::Duration,
    ) -> Result<(), StoreError> {
        let ttl = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        self.rows
            .keep_file(
                &self.tenant,
                &owner.key_of(name),
                path,
                now_ms().saturating_add(ttl),
            )
            .map(drop)
    }

    /// Brings `owner`'s result file another host published into `dir` (this host's copy of
    /// the owner's results directory); `false` when the store has no such file of theirs.
    pub fn fetch_result_file(
        &self,
        owner: &ResultOwner,
        name: &str,
        dir: &Path,
    ) -> Result<bool, StoreError> {
        self.rows
            .fetch_file(&self.tenant, &owner.key_of(name), &dir.join(name))
    }

    /// `owner`'s result files the store keeps (none on SQLite: they are on disk).
    pub fn result_file_names(&self, owner: &ResultOwner) -> Result<Vec<String>, StoreError> {
        let names = self.rows.file_names(&self.tenant)?;
        Ok(names
            .into_iter()
            .filter_map(|key| owner.name_in(&key).map(str::to_owned))
            .collect())
    }

    /// Whether the store answers.
    pub fn ping(&self) -> Result<(), StoreError> {
        self.rows.ping()
    }

    /// Whether the store answers, if it is open now; `None` for a file store closed to save
    /// descriptors (it opens again at its tenant's next call, not for a probe).
    pub fn ping_if_open(&self) -> Option<Result<(), StoreError>> {
        self.rows.is_open().then(|| self.rows.ping())
    }

    /// Which store this is: tenants of one shared store (PostgreSQL) answer the same.
    pub fn store_identity(&self) -> usize {
        Arc::as_ptr(&self.rows) as *const () as usize
    }
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
    plain_tenant(tenant)?;
    Ok(tenant_path(data_dir, tenant, "mappings.sqlite"))
}

/// Refuses a tenant id that is not a plain name, which could name another's folder.
pub(crate) fn plain_tenant(tenant: &str) -> Result<(), StoreError> {
    let plain = !tenant.is_empty()
        && tenant.len() <= 64
        && tenant
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && !tenant.starts_with('-');
    if plain {
        Ok(())
    } else {
        Err(StoreError::Invalid(format!(
            "tenant id {tenant:?} cannot name a data directory: use letters, digits, - and _"
        )))
    }
}

/// `{dir}/{tenant}/{name}`, built at its exact size: a host lists a hundred thousand tenants,
/// and `join` after `join` grows (and keeps) a buffer of twice the size.
pub(crate) fn tenant_path(dir: &Path, tenant: &str, name: &str) -> PathBuf {
    let mut path = PathBuf::with_capacity(dir.as_os_str().len() + tenant.len() + name.len() + 2);
    path.push(dir);
    path.push(tenant);
    path.push(name);
    path
}

/// Who a result (a file, a task, a session) belongs to: the user of the tenant who made it, in
/// the namespace of whoever vouched for the user. Only that user lists, reads or pages through
/// it; another user of the same tenant is told there is no such result, as a stranger would
/// be. The operator's users (the CLI, stdio, the tenants file's tokens) share one namespace;
/// each identity provider's subjects are its own, so a JWT whose `sub` is `alice` is not the
/// operator's `alice`. Kept as a digest, so it names a directory and a store key whatever the
/// id's characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResultOwner(String);

impl ResultOwner {
    /// The operator's user `user_id` (of the tenant whose store or directory it is used in).
    pub fn of(user_id: &str) -> Self {
        Self::digest(user_id.as_bytes())
    }

    /// The subject `user_id` of the identity provider `issuer`.
    pub fn vouched_by(issuer: &str, user_id: &str) -> Self {
        // A NUL cannot be in an issuer URL, so no issuer and subject run into another pair.
        Self::digest(format!("{issuer}\0{user_id}").as_bytes())
    }

    fn digest(bytes: &[u8]) -> Self {
        let digest = journal::sha256_hex(bytes);
        ResultOwner(format!("u-{}", &digest[..32]))
    }

    /// The owner's directory inside the tenant's results directory.
    pub fn dir_in(&self, tenant_dir: &Path) -> std::path::PathBuf {
        tenant_dir.join(&self.0)
    }

    /// The store's key of the owner's file `name`.
    fn key_of(&self, name: &str) -> String {
        format!("{}/{name}", self.0)
    }

    /// The file name a store key holds when the key is this owner's.
    fn name_in<'k>(&self, key: &'k str) -> Option<&'k str> {
        key.strip_prefix(self.0.as_str())?.strip_prefix('/')
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
        for (kind, db) in testing::stores("t1") {
            db.put(&[mapping("owner", "7", r#"{"email":"a@x.com"}"#, false)])
                .unwrap();
            db.put(&[mapping("owner", "7", r#"{"email":"a@x.com"}"#, true)])
                .unwrap();
            let all = db.list("owner").unwrap();
            assert_eq!(
                all,
                vec![mapping("owner", "7", r#"{"email":"a@x.com"}"#, true)],
                "{kind}"
            );
            assert!(db.list("user").unwrap().is_empty(), "{kind}");
        }
    }

    #[test]
    fn a_bad_mapping_rolls_back_the_whole_write() {
        for (kind, db) in testing::stores("t1") {
            let err = db
                .put(&[
                    mapping("owner", "1", "{}", false),
                    mapping("owner", "2", "not json", false),
                ])
                .unwrap_err();
            assert!(
                matches!(&err, StoreError::Invalid(m) if m.contains("JSON object")),
                "{kind}: {err}"
            );
            assert!(db.list("owner").unwrap().is_empty(), "{kind}");
        }
    }

    #[test]
    fn pages_follow_byte_order_and_a_batch_repeating_a_key_keeps_the_last() {
        for (kind, db) in testing::stores("order") {
            let ids = ["b", "B", "10", "3", "a-1", "a_1", "é"];
            let batch: Vec<_> = ids
                .iter()
                .map(|id| mapping("user", id, "{}", false))
                .chain([mapping("user", "3", r#"{"v":2}"#, true)])
                .collect();
            db.put(&batch).unwrap();
            let mut sorted = ids.to_vec();
            sorted.sort_unstable();
            let first = db.list_page("user", None, 4).unwrap();
            let rest = db.list_page("user", Some(&first[3].crm_id), 4).unwrap();
            let seen: Vec<_> = first
                .iter()
                .chain(&rest)
                .map(|m| m.crm_id.as_str())
                .collect();
            assert_eq!(
                seen, sorted,
                "{kind}: byte order, as the component compares keys"
            );
            assert_eq!(
                db.get("user", "3").unwrap(),
                Some(mapping("user", "3", r#"{"v":2}"#, true)),
                "{kind}"
            );
        }
    }

    #[test]
    fn tenants_of_one_database_never_see_each_other() {
        for (kind, location) in testing::locations() {
            if matches!(location, DbLocation::Memory) {
                continue; // one memory database per tenant: the file case below covers SQLite
            }
            let a = TenantDb::open(&testing::fresh_tenant("a"), &location).unwrap();
            let b = TenantDb::open(&testing::fresh_tenant("b"), &location).unwrap();
            a.put(&[mapping("user", "1", "{}", false)]).unwrap();
            a.record_created("u", "hubspot", "deals", "5").unwrap();
            a.set_disconnected("crm-a", true).unwrap();
            assert!(b.list("user").unwrap().is_empty(), "{kind}");
            assert!(b.created_records().unwrap().is_empty(), "{kind}");
            assert!(b.disconnected().unwrap().is_empty(), "{kind}");
            assert_eq!(a.created_records().unwrap()[0].record_id, "5", "{kind}");
            assert_eq!(a.disconnected().unwrap(), ["crm-a"], "{kind}");
        }
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
