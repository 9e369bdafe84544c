//! [`Rows`] for the fleet's database: each method one prepared statement on a pooled
//! connection (a transaction where it must be atomic), batches as `unnest` arrays.

use super::{PgStore, StoreEvent, db_error, events};
use crate::tenant_db::rows::{
    ChangeFilter, Confirmation, JournalRow, Kind, Rows, Staged, Status, StatusMove,
};
use crate::tenant_db::{CreatedRow, StoreError, StoredMapping};
use std::collections::HashMap;

/// Columns of a mapping row, as arrays for `unnest`, the last of each key kept (as a sequence
/// of single upserts would).
struct Columns {
    kinds: Vec<String>,
    ids: Vec<String>,
    fields: Vec<String>,
    deleted: Vec<bool>,
}

fn columns(mappings: &[StoredMapping]) -> Columns {
    let mut last: HashMap<(&str, &str), usize> = HashMap::with_capacity(mappings.len());
    for (i, m) in mappings.iter().enumerate() {
        last.insert((&m.kind, &m.crm_id), i);
    }
    let mut kept: Vec<usize> = last.into_values().collect();
    kept.sort_unstable();
    let pick = |f: fn(&StoredMapping) -> String| kept.iter().map(|&i| f(&mappings[i])).collect();
    Columns {
        kinds: pick(|m| m.kind.clone()),
        ids: pick(|m| m.crm_id.clone()),
        fields: pick(|m| m.fields.clone()),
        deleted: kept.iter().map(|&i| mappings[i].deleted).collect(),
    }
}

/// How an insert replaces the stored mapping with its key: `deleted_at_ms` keeps the time of
/// the first soft delete, and clears when the mapping is restored.
const UPSERT: &str = "ON CONFLICT (tenant, kind, crm_id) DO UPDATE SET
    fields = excluded.fields,
    deleted = excluded.deleted,
    deleted_at_ms = CASE
        WHEN NOT excluded.deleted THEN NULL
        WHEN m.deleted THEN m.deleted_at_ms
        ELSE excluded.updated_at_ms END,
    updated_at_ms = excluded.updated_at_ms";

const INSERTED: &str = "INSERT INTO mappings AS m
    (tenant, kind, crm_id, fields, deleted, deleted_at_ms, created_at_ms, updated_at_ms)";

const COLUMNS: &str = "id, at_ms, user_id, tool, call_id, status, crm, kind, object, record_id, \
                       old_values, new_values, reverts";

fn mapping(row: &tokio_postgres::Row) -> StoredMapping {
    StoredMapping {
        kind: row.get(0),
        crm_id: row.get(1),
        fields: row.get(2),
        deleted: row.get(3),
    }
}

fn journal_row(r: &tokio_postgres::Row) -> JournalRow {
    JournalRow {
        id: r.get(0),
        at_ms: r.get(1),
        user_id: r.get(2),
        tool: r.get(3),
        call_id: r.get(4),
        status: Status::from_name(r.get(5)),
        crm: r.get(6),
        kind: Kind::from_name(r.get(7)),
        object: r.get(8),
        record_id: r.get(9),
        old_values: r.get(10),
        new_values: r.get(11),
        reverts: r.get(12),
    }
}

fn area(area: Staged) -> &'static str {
    match area {
        Staged::Observed => "o",
        Staged::Writes => "w",
    }
}

impl Rows for PgStore {
    fn list_page(
        &self,
        tenant: &str,
        kind: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredMapping>, StoreError> {
        let (tenant, kind, after) = (tenant.to_owned(), kind.to_owned(), after.map(str::to_owned));
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(
                    "SELECT kind, crm_id, fields, deleted FROM mappings
                     WHERE tenant = $1 AND kind = $2 AND ($3::text IS NULL OR crm_id > $3)
                     ORDER BY crm_id LIMIT $4",
                )
                .await
                .map_err(db_error)?;
            let rows = c
                .query(&sql, &[&tenant, &kind, &after, &(limit as i64)])
                .await
                .map_err(db_error)?;
            Ok(rows.iter().map(mapping).collect())
        })
    }

    fn get(
        &self,
        tenant: &str,
        kind: &str,
        crm_id: &str,
    ) -> Result<Option<StoredMapping>, StoreError> {
        let (tenant, kind, crm_id) = (tenant.to_owned(), kind.to_owned(), crm_id.to_owned());
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(
                    "SELECT kind, crm_id, fields, deleted FROM mappings
                     WHERE tenant = $1 AND kind = $2 AND crm_id = $3",
                )
                .await
                .map_err(db_error)?;
            let row = c
                .query_opt(&sql, &[&tenant, &kind, &crm_id])
                .await
                .map_err(db_error)?;
            Ok(row.as_ref().map(mapping))
        })
    }

    fn put(&self, tenant: &str, mappings: &[StoredMapping], now: i64) -> Result<(), StoreError> {
        let tenant = tenant.to_owned();
        let cols = columns(mappings);
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(&format!(
                    "{INSERTED} SELECT $1, k, i, f, d, CASE WHEN d THEN $6::bigint END, $6, $6
                     FROM unnest($2::text[], $3::text[], $4::text[], $5::bool[]) AS t(k, i, f, d)
                     {UPSERT}"
                ))
                .await
                .map_err(db_error)?;
            c.execute(
                &sql,
                &[
                    &tenant,
                    &cols.kinds,
                    &cols.ids,
                    &cols.fields,
                    &cols.deleted,
                    &now,
                ],
            )
            .await
            .map_err(db_error)?;
            Ok(())
        })
    }

    fn record_created(&self, row: &CreatedRow) -> Result<(), StoreError> {
        let row = row.clone();
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(
                    "INSERT INTO created_records
                         (tenant, user_id, crm, object_type, record_id, created_at_ms)
                     VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .await
                .map_err(db_error)?;
            c.execute(
                &sql,
                &[
                    &row.tenant,
                    &row.user_id,
                    &row.crm,
                    &row.object_type,
                    &row.record_id,
                    &row.created_at_ms,
                ],
            )
            .await
            .map_err(db_error)?;
            Ok(())
        })
    }

    fn created_records(&self, tenant: &str) -> Result<Vec<CreatedRow>, StoreError> {
        let tenant = tenant.to_owned();
        self.with(move |c| async move {
            let rows = c
                .query(
                    "SELECT tenant, user_id, crm, object_type, record_id, created_at_ms
                     FROM created_records WHERE tenant = $1 ORDER BY seq",
                    &[&tenant],
                )
                .await
                .map_err(db_error)?;
            Ok(rows
                .iter()
                .map(|r| CreatedRow {
                    tenant: r.get(0),
                    user_id: r.get(1),
                    crm: r.get(2),
                    object_type: r.get(3),
                    record_id: r.get(4),
                    created_at_ms: r.get(5),
                })
                .collect())
        })
    }

    fn disconnected(&self, tenant: &str) -> Result<Vec<String>, StoreError> {
        let tenant = tenant.to_owned();
        self.with(move |c| async move {
            let sql = c
                .prepare_cached("SELECT crm FROM disconnected WHERE tenant = $1 ORDER BY crm")
                .await
                .map_err(db_error)?;
            let rows = c.query(&sql, &[&tenant]).await.map_err(db_error)?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    /// The change and its announcement commit together: other hosts hear of it only if it
    /// holds.
    fn set_disconnected(
        &self,
        tenant: &str,
        crm: &str,
        disconnected: bool,
        now: i64,
    ) -> Result<(), StoreError> {
        let (tenant, crm) = (tenant.to_owned(), crm.to_owned());
        let event = serde_json::to_string(&StoreEvent::Connection {
            tenant: tenant.clone(),
            crm: crm.clone(),
            connected: !disconnected,
        })
        .map_err(|e| StoreError::Invalid(e.to_string()))?;
        self.with(move |mut c| async move {
            let tx = c.transaction().await.map_err(db_error)?;
            if disconnected {
                tx.execute(
                    "INSERT INTO disconnected (tenant, crm, disconnected_at_ms)
                     VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                    &[&tenant, &crm, &now],
                )
                .await
            } else {
                tx.execute(
                    "DELETE FROM disconnected WHERE tenant = $1 AND crm = $2",
                    &[&tenant, &crm],
                )
                .await
            }
            .map_err(db_error)?;
            tx.execute("SELECT pg_notify($1, $2)", &[&events::CHANNEL, &event])
                .await
                .map_err(db_error)?;
            tx.commit().await.map_err(db_error)
        })
    }

    fn stage(
        &self,
        tenant: &str,
        change: i64,
        staged: Staged,
        mappings: &[StoredMapping],
    ) -> Result<(), StoreError> {
        let tenant = tenant.to_owned();
        let cols = columns(mappings);
        let now = crate::tenant_db::now_ms();
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(
                    "INSERT INTO mapping_stage
                         (tenant, change, area, kind, crm_id, fields, deleted, staged_at_ms)
                     SELECT $1, $2, $3, k, i, f, d, $8
                     FROM unnest($4::text[], $5::text[], $6::text[], $7::bool[]) AS t(k, i, f, d)
                     ON CONFLICT (tenant, change, area, kind, crm_id) DO UPDATE SET
                         fields = excluded.fields, deleted = excluded.deleted",
                )
                .await
                .map_err(db_error)?;
            c.execute(
                &sql,
                &[
                    &tenant,
                    &change,
                    &area(staged),
                    &cols.kinds,
                    &cols.ids,
                    &cols.fields,
                    &cols.deleted,
                    &now,
                ],
            )
            .await
            .map_err(db_error)?;
            Ok(())
        })
    }

    fn observed(
        &self,
        tenant: &str,
        change: i64,
        kind: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredMapping>, StoreError> {
        let (tenant, kind, after) = (tenant.to_owned(), kind.to_owned(), after.map(str::to_owned));
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(
                    "SELECT kind, crm_id, fields, deleted FROM mapping_stage
                     WHERE tenant = $1 AND change = $2 AND area = 'o' AND kind = $3
                       AND ($4::text IS NULL OR crm_id > $4)
                     ORDER BY crm_id LIMIT $5",
                )
                .await
                .map_err(db_error)?;
            let rows = c
                .query(&sql, &[&tenant, &change, &kind, &after, &(limit as i64)])
                .await
                .map_err(db_error)?;
            Ok(rows.iter().map(mapping).collect())
        })
    }

    fn commit_change(
        &self,
        tenant: &str,
        change: i64,
        now: i64,
        unless_disconnected: Option<&str>,
    ) -> Result<bool, StoreError> {
        let tenant = tenant.to_owned();
        let guard = unless_disconnected.map(str::to_owned);
        self.with(move |mut c| async move {
            let tx = c.transaction().await.map_err(db_error)?;
            if let Some(crm) = guard {
                // FOR SHARE waits for a disconnect being committed, then sees it.
                let off = tx
                    .query_opt(
                        "SELECT 1 FROM disconnected WHERE tenant = $1 AND crm = $2 FOR SHARE",
                        &[&tenant, &crm],
                    )
                    .await
                    .map_err(db_error)?;
                if off.is_some() {
                    return Ok(false);
                }
            }
            tx.execute(
                &format!(
                    "{INSERTED} SELECT tenant, kind, crm_id, fields, deleted,
                         CASE WHEN deleted THEN $3::bigint END, $3, $3
                     FROM mapping_stage WHERE tenant = $1 AND change = $2 AND area = 'w'
                     {UPSERT}"
                ),
                &[&tenant, &change, &now],
            )
            .await
            .map_err(db_error)?;
            tx.execute(
                "DELETE FROM mapping_stage WHERE tenant = $1 AND change = $2",
                &[&tenant, &change],
            )
            .await
            .map_err(db_error)?;
            tx.commit().await.map_err(db_error)?;
            Ok(true)
        })
    }

    fn discard_change(&self, tenant: &str, change: i64) -> Result<(), StoreError> {
        let tenant = tenant.to_owned();
        self.with(move |c| async move {
            c.execute(
                "DELETE FROM mapping_stage WHERE tenant = $1 AND change = $2",
                &[&tenant, &change],
            )
            .await
            .map_err(db_error)?;
            Ok(())
        })
    }

    fn insert_change(
        &self,
        tenant: &str,
        row: &JournalRow,
        lease_until_ms: i64,
    ) -> Result<(), StoreError> {
        let (tenant, row) = (tenant.to_owned(), row.clone());
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(
                    "INSERT INTO changes (id, tenant, at_ms, user_id, tool, call_id, status, crm,
                         kind, object, record_id, old_values, new_values, reverts, lease_until_ms)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
                )
                .await
                .map_err(db_error)?;
            c.execute(
                &sql,
                &[
                    &row.id,
                    &tenant,
                    &row.at_ms,
                    &row.user_id,
                    &row.tool,
                    &row.call_id,
                    &row.status.name(),
                    &row.crm,
                    &row.kind.name(),
                    &row.object,
                    &row.record_id,
                    &row.old_values,
                    &row.new_values,
                    &row.reverts,
                    &lease_until_ms,
                ],
            )
            .await
            .map_err(db_error)?;
            Ok(())
        })
    }

    fn expire_leases(&self, tenant: Option<&str>, now_ms: i64) -> Result<u64, StoreError> {
        let tenant = tenant.map(str::to_owned);
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(
                    "UPDATE changes SET status = 'unknown'
                     WHERE status = 'pending' AND ($1::text IS NULL OR tenant = $1)
                       AND coalesce(lease_until_ms, at_ms + 600000) < $2",
                )
                .await
                .map_err(db_error)?;
            c.execute(&sql, &[&tenant, &now_ms]).await.map_err(db_error)
        })
    }

    fn move_status(&self, tenant: &str, step: &StatusMove<'_>) -> Result<bool, StoreError> {
        let tenant = tenant.to_owned();
        let (id, record_id, call_id) = (
            step.id.to_owned(),
            step.record_id.map(str::to_owned),
            step.call_id.map(str::to_owned),
        );
        let (status, from) = (step.status.name(), step.from.name());
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(
                    "UPDATE changes SET status = $1, record_id = coalesce(record_id, $2)
                     WHERE tenant = $3 AND id = $4 AND ($5::text IS NULL OR call_id = $5)
                       AND status = $6",
                )
                .await
                .map_err(db_error)?;
            let changed = c
                .execute(&sql, &[&status, &record_id, &tenant, &id, &call_id, &from])
                .await
                .map_err(db_error)?;
            Ok(changed == 1)
        })
    }

    fn list_changes(
        &self,
        tenant: &str,
        filter: &ChangeFilter<'_>,
        limit: u32,
    ) -> Result<Vec<JournalRow>, StoreError> {
        let tenant = tenant.to_owned();
        let user = filter.user_id.map(str::to_owned);
        let record = filter.record_id.map(str::to_owned);
        let object = filter.object.map(str::to_owned);
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM changes WHERE tenant = $1
                       AND ($2::text IS NULL OR user_id = $2)
                       AND ($3::text IS NULL OR record_id = $3)
                       AND ($4::text IS NULL OR lower(object) = lower($4))
                     ORDER BY seq DESC LIMIT $5"
                ))
                .await
                .map_err(db_error)?;
            let rows = c
                .query(&sql, &[&tenant, &user, &record, &object, &i64::from(limit)])
                .await
                .map_err(db_error)?;
            Ok(rows.iter().map(journal_row).collect())
        })
    }

    fn change(&self, tenant: &str, id: &str) -> Result<Option<JournalRow>, StoreError> {
        let (tenant, id) = (tenant.to_owned(), id.to_owned());
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM changes WHERE tenant = $1 AND id = $2"
                ))
                .await
                .map_err(db_error)?;
            let row = c.query_opt(&sql, &[&tenant, &id]).await.map_err(db_error)?;
            Ok(row.as_ref().map(journal_row))
        })
    }

    /// One key per tenant; the first host to make one wins and every other reads it.
    fn signing_key(&self, tenant: &str, candidate: &[u8]) -> Result<Vec<u8>, StoreError> {
        let (tenant, candidate) = (tenant.to_owned(), candidate.to_vec());
        self.with(move |c| async move {
            let row = c
                .query_one(
                    "WITH made AS (
                         INSERT INTO host_keys (tenant, name, value)
                         VALUES ($1, 'confirmations', $2)
                         ON CONFLICT DO NOTHING RETURNING value)
                     SELECT value FROM made
                     UNION ALL
                     SELECT value FROM host_keys WHERE tenant = $1 AND name = 'confirmations'
                     LIMIT 1",
                    &[&tenant, &candidate],
                )
                .await
                .map_err(db_error)?;
            Ok(row.get(0))
        })
    }

    fn insert_confirmation(&self, tenant: &str, row: &Confirmation) -> Result<(), StoreError> {
        let (tenant, row) = (tenant.to_owned(), row.clone());
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(
                    "INSERT INTO confirmations
                         (tenant, id, user_id, tool, input_sha256, values_read, expires_ms)
                     VALUES ($1, $2, $3, $4, $5, $6, $7)",
                )
                .await
                .map_err(db_error)?;
            c.execute(
                &sql,
                &[
                    &tenant,
                    &row.id,
                    &row.user_id,
                    &row.tool,
                    &row.input_sha256,
                    &row.values_read,
                    &row.expires_ms,
                ],
            )
            .await
            .map_err(db_error)?;
            Ok(())
        })
    }

    fn confirmation(&self, tenant: &str, id: &str) -> Result<Option<Confirmation>, StoreError> {
        let (tenant, id) = (tenant.to_owned(), id.to_owned());
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(
                    "SELECT id, user_id, tool, input_sha256, values_read, expires_ms,
                            used_at_ms IS NOT NULL
                     FROM confirmations WHERE tenant = $1 AND id = $2",
                )
                .await
                .map_err(db_error)?;
            let row = c.query_opt(&sql, &[&tenant, &id]).await.map_err(db_error)?;
            Ok(row.map(|r| Confirmation {
                id: r.get(0),
                user_id: r.get(1),
                tool: r.get(2),
                input_sha256: r.get(3),
                values_read: r.get(4),
                expires_ms: r.get(5),
                used: r.get(6),
            }))
        })
    }

    /// Under READ COMMITTED a racing update waits for the first to commit, then finds the
    /// token used: exactly one host claims it.
    fn claim_confirmation(&self, tenant: &str, id: &str, now: i64) -> Result<bool, StoreError> {
        let (tenant, id) = (tenant.to_owned(), id.to_owned());
        self.with(move |c| async move {
            let sql = c
                .prepare_cached(
                    "UPDATE confirmations SET used_at_ms = $3
                     WHERE tenant = $1 AND id = $2 AND used_at_ms IS NULL",
                )
                .await
                .map_err(db_error)?;
            let claimed = c
                .execute(&sql, &[&tenant, &id, &now])
                .await
                .map_err(db_error)?;
            Ok(claimed == 1)
        })
    }

    fn staged_rows(&self, tenant: &str) -> Result<i64, StoreError> {
        let tenant = tenant.to_owned();
        self.with(move |c| async move {
            let row = c
                .query_one(
                    "SELECT count(*) FROM mapping_stage WHERE tenant = $1",
                    &[&tenant],
                )
                .await
                .map_err(db_error)?;
            Ok(row.get(0))
        })
    }

    fn keep_file(
        &self,
        tenant: &str,
        name: &str,
        path: &std::path::Path,
        expires_ms: i64,
    ) -> Result<bool, StoreError> {
        self.keep(tenant, name, path, expires_ms).map(|()| true)
    }

    fn fetch_file(
        &self,
        tenant: &str,
        name: &str,
        to: &std::path::Path,
    ) -> Result<bool, StoreError> {
        self.fetch(tenant, name, to)
    }

    fn file_names(&self, tenant: &str) -> Result<Vec<String>, StoreError> {
        self.names(tenant)
    }

    fn ping(&self) -> Result<(), StoreError> {
        self.with(|c| async move {
            c.simple_query("SELECT 1").await.map_err(db_error)?;
            Ok(())
        })
    }
}
