//! The store's interface: the rows a tenant's database keeps, read and written by tenant, with
//! nothing else. [`super::TenantDb`] checks every value and keeps the rules (what a token binds,
//! who may settle a change); an implementation only stores rows, atomically where a method says
//! so. Two implement it: SQLite (`sqlite.rs`: one file per tenant, the embedded default) and
//! PostgreSQL (`postgres.rs`: one database for a fleet of hosts).
//!
//! Every method names its tenant, and every row an implementation keeps carries it, so one
//! database can hold many tenants and no query can reach across them.

use super::StoreError;
use super::{CreatedRow, StoredMapping};

/// What a change does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Create,
    Update,
    Merge,
    Association,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Create => "create",
            Kind::Update => "update",
            Kind::Merge => "merge",
            Kind::Association => "association",
        }
    }

    /// The kind a journal row or a preview's `action` names.
    pub fn from_name(name: &str) -> Kind {
        match name {
            "create" => Kind::Create,
            "update" => Kind::Update,
            "merge" => Kind::Merge,
            _ => Kind::Association,
        }
    }
}

/// What became of a change's write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Pending,
    Applied,
    Failed,
    Unknown,
    /// The person declined it when asked: nothing was sent.
    Declined,
}

impl Status {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Applied => "applied",
            Status::Failed => "failed",
            Status::Unknown => "unknown",
            Status::Declined => "declined",
        }
    }

    pub(crate) fn from_name(name: &str) -> Status {
        match name {
            "applied" => Status::Applied,
            "failed" => Status::Failed,
            "unknown" => Status::Unknown,
            "declined" => Status::Declined,
            _ => Status::Pending,
        }
    }
}

/// One journalled change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalRow {
    pub id: String,
    pub at_ms: i64,
    pub user_id: String,
    pub tool: String,
    pub call_id: String,
    pub status: Status,
    pub crm: String,
    pub kind: Kind,
    pub object: String,
    pub record_id: Option<String>,
    /// JSON objects.
    pub old_values: String,
    pub new_values: String,
    pub reverts: Option<String>,
}

/// Which of a change's two staging areas a batch goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Staged {
    /// What the CRM holds, read back in key order while deciding the writes.
    Observed,
    /// The writes applied at commit.
    Writes,
}

/// A confirmation token's row (the token itself is never kept: only its id and what it binds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirmation {
    pub id: String,
    pub user_id: String,
    pub tool: String,
    pub input_sha256: String,
    pub values_read: String,
    pub expires_ms: i64,
    pub used: bool,
}

/// Filters of a journal listing; `None` matches all.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChangeFilter<'a> {
    pub user_id: Option<&'a str>,
    pub record_id: Option<&'a str>,
    /// Compared without case (`deals` finds `Deals`).
    pub object: Option<&'a str>,
}

/// A settled change's new state: `from` → `status`, by `call_id` when given.
#[derive(Debug, Clone, Copy)]
pub struct StatusMove<'a> {
    pub id: &'a str,
    pub from: Status,
    pub status: Status,
    /// Kept only where the row has none yet.
    pub record_id: Option<&'a str>,
    pub call_id: Option<&'a str>,
}

/// A tenant's rows, in one store.
pub trait Rows: Send + Sync {
    /// Up to `limit` mappings of `kind`, deleted ones included, in byte order of key after
    /// `after`.
    fn list_page(
        &self,
        tenant: &str,
        kind: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredMapping>, StoreError>;

    fn get(
        &self,
        tenant: &str,
        kind: &str,
        crm_id: &str,
    ) -> Result<Option<StoredMapping>, StoreError>;

    /// Inserts or replaces each mapping by key, all or none. A soft delete keeps the time of
    /// the first delete; a restore clears it.
    fn put(&self, tenant: &str, mappings: &[StoredMapping], now_ms: i64) -> Result<(), StoreError>;

    fn record_created(&self, row: &CreatedRow) -> Result<(), StoreError>;

    /// Oldest first.
    fn created_records(&self, tenant: &str) -> Result<Vec<CreatedRow>, StoreError>;

    /// The integrations (`crm-a`, `crm-b`) disconnected, in name order.
    fn disconnected(&self, tenant: &str) -> Result<Vec<String>, StoreError>;

    fn set_disconnected(
        &self,
        tenant: &str,
        crm: &str,
        disconnected: bool,
        now_ms: i64,
    ) -> Result<(), StoreError>;

    /// Adds a batch to a change's staging area, all or none; a key staged again replaces it.
    fn stage(
        &self,
        tenant: &str,
        change: i64,
        area: Staged,
        mappings: &[StoredMapping],
    ) -> Result<(), StoreError>;

    /// Up to `limit` observed mappings of `kind` in byte order of key after `after`.
    fn observed(
        &self,
        tenant: &str,
        change: i64,
        kind: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredMapping>, StoreError>;

    /// Applies a change's staged writes and drops its staging, in one transaction, unless the
    /// store says `unless_disconnected` (`crm-a`, `crm-b`) is disconnected for the tenant (then
    /// `Ok(false)` and nothing is written): a disconnect made on any host stops the commit.
    fn commit_change(
        &self,
        tenant: &str,
        change: i64,
        now_ms: i64,
        unless_disconnected: Option<&str>,
    ) -> Result<bool, StoreError>;

    /// Drops a change's staging; the mappings stay as they were.
    fn discard_change(&self, tenant: &str, change: i64) -> Result<(), StoreError>;

    /// Journals a new change (its status is `row.status`), leased to its call until
    /// `lease_until_ms`: still `pending` after that, its call died with it (see
    /// [`Rows::expire_leases`]).
    fn insert_change(
        &self,
        tenant: &str,
        row: &JournalRow,
        lease_until_ms: i64,
    ) -> Result<(), StoreError>;

    /// Turns every `pending` change whose lease ended before `now_ms` into `unknown`: its call
    /// can no longer settle it (the call's time is up, or its host died), and its write may or
    /// may not have reached the CRM. One tenant's, or every tenant's (`None`). Returns how many.
    fn expire_leases(&self, tenant: Option<&str>, now_ms: i64) -> Result<u64, StoreError>;

    /// Moves one change's status atomically; false when no change was in the `from` state.
    fn move_status(&self, tenant: &str, step: &StatusMove<'_>) -> Result<bool, StoreError>;

    /// Up to `limit` changes, newest first.
    fn list_changes(
        &self,
        tenant: &str,
        filter: &ChangeFilter<'_>,
        limit: u32,
    ) -> Result<Vec<JournalRow>, StoreError>;

    fn change(&self, tenant: &str, id: &str) -> Result<Option<JournalRow>, StoreError>;

    /// The tenant's confirmation-signing key: `candidate` is kept if none is yet, and the key
    /// kept is returned, so hosts racing to make one agree on the first.
    fn signing_key(&self, tenant: &str, candidate: &[u8]) -> Result<Vec<u8>, StoreError>;

    fn insert_confirmation(&self, tenant: &str, row: &Confirmation) -> Result<(), StoreError>;

    fn confirmation(&self, tenant: &str, id: &str) -> Result<Option<Confirmation>, StoreError>;

    /// Marks an unused token used; true for exactly one caller, however many hosts race.
    fn claim_confirmation(&self, tenant: &str, id: &str, now_ms: i64) -> Result<bool, StoreError>;

    /// How many rows the tenant's open changes have staged.
    fn staged_rows(&self, tenant: &str) -> Result<i64, StoreError>;

    /// Keeps a published result file (JSON Lines, at most the host's file cap) until
    /// `expires_ms`, for hosts that share no disk; `false` where files stay on this host's disk
    /// (SQLite: one host).
    fn keep_file(
        &self,
        _tenant: &str,
        _name: &str,
        _path: &std::path::Path,
        _expires_ms: i64,
    ) -> Result<bool, StoreError> {
        Ok(false)
    }

    /// Writes a kept, unexpired file to `to`, replacing it whole; `false` when there is none.
    fn fetch_file(
        &self,
        _tenant: &str,
        _name: &str,
        _to: &std::path::Path,
    ) -> Result<bool, StoreError> {
        Ok(false)
    }

    /// The names of the tenant's kept, unexpired files.
    fn file_names(&self, _tenant: &str) -> Result<Vec<String>, StoreError> {
        Ok(Vec::new())
    }

    /// A cheap query, for readiness.
    fn ping(&self) -> Result<(), StoreError>;

    /// Whether the store is open now: a store closed to save descriptors is not opened again
    /// only to be pinged.
    fn is_open(&self) -> bool {
        true
    }
}
