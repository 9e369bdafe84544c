//! [`Rows`] in SQLite: the embedded default, one file per tenant (or memory), opened in WAL
//! mode so readers never wait for the writer. A change's staging lives in the connection's
//! temporary tables, seen by no other connection.

use super::rows::{ChangeFilter, Confirmation, JournalRow, Kind, Rows, Staged, Status, StatusMove};
use super::{CreatedRow, DbLocation, StoreError, StoredMapping};
use rusqlite::{Connection, OptionalExtension, params};

pub mod open_stores;
mod schema;

/// One SQLite connection, for one tenant's store.
pub struct SqliteRows {
    store: open_stores::Store,
}

/// When a pending change's lease ends: a row journalled before leases existed gets ten minutes
/// from its journalling, longer than any call may run.
const LEASE_END: &str = "COALESCE(lease_until_ms, at_ms + 600000)";

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

const COLUMNS: &str = "id, at_ms, user_id, tool, call_id, status, crm, kind, object, record_id, \
                       old_values, new_values, reverts";

impl SqliteRows {
    /// Opens (creating when missing) the database at `location`, with its tables. A file
    /// store counts against the process's limit of open stores ([`open_stores`]): closed when
    /// idle past it, opened again by its next query.
    pub fn open(location: &DbLocation) -> Result<Self, StoreError> {
        let path = match location {
            DbLocation::File(path) => Some(path.clone()),
            DbLocation::Memory => None,
            DbLocation::Postgres(_) => {
                return Err(StoreError::Invalid("not a SQLite location".into()));
            }
        };
        Self::open_counted(path, open_stores::OpenStores::process())
    }

    /// Opens the store at `path` (in memory when `None`), counted against `budget`.
    fn open_counted(
        path: Option<std::path::PathBuf>,
        budget: std::sync::Arc<open_stores::OpenStores>,
    ) -> Result<Self, StoreError> {
        Ok(SqliteRows {
            store: open_stores::Store::open(path, budget)?,
        })
    }

    fn conn(&self) -> Result<open_stores::Open<'_>, StoreError> {
        self.store.conn()
    }

    /// The connection, with the staging tables a change reads and writes.
    fn staging(&self) -> Result<open_stores::Open<'_>, StoreError> {
        self.store.conn()?.with_staging()
    }
}

impl SqliteRows {
    /// Up to `limit` of the tenant's journal rows after sequence number `after`, oldest first,
    /// with their sequence numbers (for moving a tenant to another store).
    pub(crate) fn changes_after(
        &self,
        tenant: &str,
        after: i64,
        limit: u32,
    ) -> Result<Vec<(i64, JournalRow)>, StoreError> {
        let conn = self.conn()?;
        let mut statement = conn.prepare_cached(&format!(
            "SELECT {COLUMNS}, seq FROM changes WHERE tenant = ?1 AND seq > ?2
             ORDER BY seq LIMIT ?3"
        ))?;
        // The journal's columns first, as every listing reads them; the sequence number last.
        let rows = statement.query_map(params![tenant, after, limit], |r| {
            Ok((r.get(13)?, journal_row(r)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

/// A row of `kind, crm_id, fields, deleted`.
fn stored_mapping(row: &rusqlite::Row<'_>) -> rusqlite::Result<StoredMapping> {
    Ok(StoredMapping {
        kind: row.get(0)?,
        crm_id: row.get(1)?,
        fields: row.get(2)?,
        deleted: row.get(3)?,
    })
}

fn journal_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<JournalRow> {
    Ok(JournalRow {
        id: r.get(0)?,
        at_ms: r.get(1)?,
        user_id: r.get(2)?,
        tool: r.get(3)?,
        call_id: r.get(4)?,
        status: Status::from_name(&r.get::<_, String>(5)?),
        crm: r.get(6)?,
        kind: Kind::from_name(&r.get::<_, String>(7)?),
        object: r.get(8)?,
        record_id: r.get(9)?,
        old_values: r.get(10)?,
        new_values: r.get(11)?,
        reverts: r.get(12)?,
    })
}

fn table(area: Staged) -> &'static str {
    match area {
        Staged::Observed => "change_observed",
        Staged::Writes => "change_writes",
    }
}

impl Rows for SqliteRows {
    fn list_page(
        &self,
        tenant: &str,
        kind: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredMapping>, StoreError> {
        let conn = self.conn()?;
        let mut statement = conn.prepare_cached(
            "SELECT kind, crm_id, fields, deleted FROM mappings
             WHERE tenant = ?1 AND kind = ?2 AND (?3 IS NULL OR crm_id > ?3)
             ORDER BY crm_id LIMIT ?4",
        )?;
        let rows =
            statement.query_map(params![tenant, kind, after, limit as i64], stored_mapping)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn get(
        &self,
        tenant: &str,
        kind: &str,
        crm_id: &str,
    ) -> Result<Option<StoredMapping>, StoreError> {
        Ok(self
            .conn()?
            .query_row(
                "SELECT kind, crm_id, fields, deleted FROM mappings
                 WHERE tenant = ?1 AND kind = ?2 AND crm_id = ?3",
                params![tenant, kind, crm_id],
                stored_mapping,
            )
            .optional()?)
    }

    fn put(&self, tenant: &str, mappings: &[StoredMapping], now: i64) -> Result<(), StoreError> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        {
            let mut upsert = tx.prepare_cached(&format!(
                "INSERT INTO mappings {INSERTED}
                     VALUES (?1, ?2, ?3, ?4, ?5, CASE WHEN ?5 THEN ?6 END, ?6, ?6) {UPSERT}"
            ))?;
            for m in mappings {
                upsert.execute(params![tenant, m.kind, m.crm_id, m.fields, m.deleted, now])?;
            }
        }
        Ok(tx.commit()?)
    }

    fn record_created(&self, row: &CreatedRow) -> Result<(), StoreError> {
        self.conn()?.execute(
            "INSERT INTO created_records (tenant, user_id, crm, object_type, record_id, created_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                row.tenant,
                row.user_id,
                row.crm,
                row.object_type,
                row.record_id,
                row.created_at_ms
            ],
        )?;
        Ok(())
    }

    fn created_records(&self, tenant: &str) -> Result<Vec<CreatedRow>, StoreError> {
        let conn = self.conn()?;
        let mut statement = conn.prepare_cached(
            "SELECT tenant, user_id, crm, object_type, record_id, created_at_ms
             FROM created_records WHERE tenant = ?1 ORDER BY seq",
        )?;
        let rows = statement.query_map(params![tenant], |row| {
            Ok(CreatedRow {
                tenant: row.get(0)?,
                user_id: row.get(1)?,
                crm: row.get(2)?,
                object_type: row.get(3)?,
                record_id: row.get(4)?,
                created_at_ms: row.get(5)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn disconnected(&self, tenant: &str) -> Result<Vec<String>, StoreError> {
        let conn = self.conn()?;
        let mut statement =
            conn.prepare_cached("SELECT crm FROM disconnected WHERE tenant = ?1 ORDER BY crm")?;
        let rows = statement.query_map(params![tenant], |row| row.get::<_, String>(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn set_disconnected(
        &self,
        tenant: &str,
        crm: &str,
        disconnected: bool,
        now: i64,
    ) -> Result<(), StoreError> {
        let conn = self.conn()?;
        if disconnected {
            conn.execute(
                "INSERT OR IGNORE INTO disconnected (tenant, crm, disconnected_at_ms) VALUES (?1, ?2, ?3)",
                params![tenant, crm, now],
            )?;
        } else {
            conn.execute(
                "DELETE FROM disconnected WHERE tenant = ?1 AND crm = ?2",
                params![tenant, crm],
            )?;
        }
        Ok(())
    }

    fn stage(
        &self,
        _tenant: &str,
        change: i64,
        area: Staged,
        mappings: &[StoredMapping],
    ) -> Result<(), StoreError> {
        let mut conn = self.staging()?;
        let tx = conn.transaction()?;
        {
            let mut insert = tx.prepare_cached(&format!(
                "INSERT OR REPLACE INTO temp.{} (change, kind, crm_id, fields, deleted)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                table(area)
            ))?;
            for m in mappings {
                insert.execute(params![change, m.kind, m.crm_id, m.fields, m.deleted])?;
            }
        }
        tx.commit()?;
        conn.staging(change);
        Ok(())
    }

    fn observed(
        &self,
        _tenant: &str,
        change: i64,
        kind: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredMapping>, StoreError> {
        let conn = self.staging()?;
        let mut statement = conn.prepare_cached(
            "SELECT kind, crm_id, fields, deleted FROM temp.change_observed
             WHERE change = ?1 AND kind = ?2 AND (?3 IS NULL OR crm_id > ?3)
             ORDER BY crm_id LIMIT ?4",
        )?;
        let rows =
            statement.query_map(params![change, kind, after, limit as i64], stored_mapping)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn commit_change(
        &self,
        tenant: &str,
        change: i64,
        now: i64,
        unless_disconnected: Option<&str>,
    ) -> Result<bool, StoreError> {
        let mut conn = self.staging()?;
        // IMMEDIATE: the write lock first, so no disconnect lands between the check and the
        // commit, whichever process makes it.
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        if let Some(crm) = unless_disconnected {
            let off: bool = tx.query_row(
                "SELECT EXISTS (SELECT 1 FROM disconnected WHERE tenant = ?1 AND crm = ?2)",
                params![tenant, crm],
                |row| row.get(0),
            )?;
            if off {
                return Ok(false);
            }
        }
        // `WHERE` before `ON CONFLICT` also tells SQLite's parser the upsert from a join.
        tx.execute(
            &format!(
                "INSERT INTO mappings {INSERTED}
                 SELECT ?1, kind, crm_id, fields, deleted, CASE WHEN deleted THEN ?2 END, ?2, ?2
                 FROM temp.change_writes WHERE change = ?3 {UPSERT}"
            ),
            params![tenant, now, change],
        )?;
        delete_staged(&tx, change)?;
        tx.commit()?;
        conn.staged_none(change);
        Ok(true)
    }

    fn discard_change(&self, _tenant: &str, change: i64) -> Result<(), StoreError> {
        let mut conn = self.staging()?;
        delete_staged(&conn, change)?;
        conn.staged_none(change);
        Ok(())
    }

    fn insert_change(
        &self,
        tenant: &str,
        row: &JournalRow,
        lease_until_ms: i64,
    ) -> Result<(), StoreError> {
        self.conn()?.execute(
            "INSERT INTO changes (id, tenant, at_ms, user_id, tool, call_id, status, crm, kind,
                 object, record_id, old_values, new_values, reverts, lease_until_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            params![
                row.id,
                tenant,
                row.at_ms,
                row.user_id,
                row.tool,
                row.call_id,
                row.status.name(),
                row.crm,
                row.kind.name(),
                row.object,
                row.record_id,
                row.old_values,
                row.new_values,
                row.reverts,
                lease_until_ms
            ],
        )?;
        Ok(())
    }

    fn expire_leases(&self, tenant: Option<&str>, now_ms: i64) -> Result<u64, StoreError> {
        let changed = self.conn()?.execute(
            &format!(
                "UPDATE changes SET status = 'unknown'
                 WHERE status = 'pending' AND (?1 IS NULL OR tenant = ?1)
                   AND {LEASE_END} < ?2"
            ),
            params![tenant, now_ms],
        )?;
        Ok(changed as u64)
    }

    fn move_status(&self, tenant: &str, step: &StatusMove<'_>) -> Result<bool, StoreError> {
        let changed = self.conn()?.execute(
            "UPDATE changes SET status = ?1, record_id = COALESCE(record_id, ?2)
             WHERE tenant = ?3 AND id = ?4 AND (?5 IS NULL OR call_id = ?5) AND status = ?6",
            params![
                step.status.name(),
                step.record_id,
                tenant,
                step.id,
                step.call_id,
                step.from.name()
            ],
        )?;
        Ok(changed == 1)
    }

    fn list_changes(
        &self,
        tenant: &str,
        filter: &ChangeFilter<'_>,
        limit: u32,
    ) -> Result<Vec<JournalRow>, StoreError> {
        let conn = self.conn()?;
        let mut statement = conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM changes WHERE tenant = ?1
               AND (?2 IS NULL OR user_id = ?2)
               AND (?3 IS NULL OR record_id = ?3)
               AND (?4 IS NULL OR object = ?4 COLLATE NOCASE)
             ORDER BY seq DESC LIMIT ?5"
        ))?;
        let rows = statement.query_map(
            params![
                tenant,
                filter.user_id,
                filter.record_id,
                filter.object,
                limit
            ],
            journal_row,
        )?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn change(&self, tenant: &str, id: &str) -> Result<Option<JournalRow>, StoreError> {
        Ok(self
            .conn()?
            .query_row(
                &format!("SELECT {COLUMNS} FROM changes WHERE tenant = ?1 AND id = ?2"),
                params![tenant, id],
                journal_row,
            )
            .optional()?)
    }

    /// One key per file (tenants sharing a file share it; the MAC covers the tenant).
    fn signing_key(&self, _tenant: &str, candidate: &[u8]) -> Result<Vec<u8>, StoreError> {
        let conn = self.conn()?;
        // Another host on the file may have made one meanwhile: theirs wins.
        conn.execute(
            "INSERT OR IGNORE INTO host_keys (name, value) VALUES ('confirmations', ?1)",
            params![candidate],
        )?;
        Ok(conn.query_row(
            "SELECT value FROM host_keys WHERE name = 'confirmations'",
            [],
            |r| r.get(0),
        )?)
    }

    fn insert_confirmation(&self, tenant: &str, row: &Confirmation) -> Result<(), StoreError> {
        self.conn()?.execute(
            "INSERT INTO confirmations (id, tenant, user_id, tool, input_sha256, values_read, expires_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                row.id,
                tenant,
                row.user_id,
                row.tool,
                row.input_sha256,
                row.values_read,
                row.expires_ms
            ],
        )?;
        Ok(())
    }

    fn confirmation(&self, tenant: &str, id: &str) -> Result<Option<Confirmation>, StoreError> {
        Ok(self
            .conn()?
            .query_row(
                "SELECT id, user_id, tool, input_sha256, values_read, expires_ms, used_at_ms
                 FROM confirmations WHERE tenant = ?1 AND id = ?2",
                params![tenant, id],
                |r| {
                    Ok(Confirmation {
                        id: r.get(0)?,
                        user_id: r.get(1)?,
                        tool: r.get(2)?,
                        input_sha256: r.get(3)?,
                        values_read: r.get(4)?,
                        expires_ms: r.get(5)?,
                        used: r.get::<_, Option<i64>>(6)?.is_some(),
                    })
                },
            )
            .optional()?)
    }

    fn claim_confirmation(&self, tenant: &str, id: &str, now: i64) -> Result<bool, StoreError> {
        // Only one update finds it unused, even between two hosts on the file.
        let claimed = self.conn()?.execute(
            "UPDATE confirmations SET used_at_ms = ?1
             WHERE tenant = ?2 AND id = ?3 AND used_at_ms IS NULL",
            params![now, tenant, id],
        )?;
        Ok(claimed == 1)
    }

    /// The temporary tables are this connection's, which serves one tenant.
    fn staged_rows(&self, _tenant: &str) -> Result<i64, StoreError> {
        Ok(self.staging()?.query_row(
            "SELECT (SELECT count(*) FROM temp.change_observed)
                  + (SELECT count(*) FROM temp.change_writes)",
            [],
            |row| row.get(0),
        )?)
    }

    fn ping(&self) -> Result<(), StoreError> {
        self.conn()?.query_row("SELECT 1", [], |_| Ok(()))?;
        Ok(())
    }

    fn is_open(&self) -> bool {
        self.store.is_open()
    }
}

/// Deletes a change's staged rows.
fn delete_staged(conn: &Connection, change: i64) -> Result<(), StoreError> {
    conn.execute(
        "DELETE FROM temp.change_observed WHERE change = ?1",
        [change],
    )?;
    conn.execute("DELETE FROM temp.change_writes WHERE change = ?1", [change])?;
    Ok(())
}
