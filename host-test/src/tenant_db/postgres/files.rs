//! Result files in the fleet's database: a file published on one host is read through any
//! other. Kept in 1 MiB chunks (no row near PostgreSQL's limits, and neither side holds a whole
//! large file), with the same expiry as files on disk, in one transaction per file: a host
//! that dies while keeping one leaves nothing.

use super::{PgStore, db_error};
use crate::tenant_db::StoreError;
use std::io::{Read, Write};
use std::path::Path;

/// Bytes per stored chunk.
const CHUNK: usize = 1 << 20;

/// Longest keeping or fetching one file may take (a file is at most the host's cap, 1 GiB by
/// default).
const FILE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

fn io(what: &str, e: std::io::Error) -> StoreError {
    StoreError::Unavailable(format!("{what}: {e}"))
}

impl PgStore {
    pub(super) fn keep(
        &self,
        tenant: &str,
        name: &str,
        path: &Path,
        expires_ms: i64,
    ) -> Result<(), StoreError> {
        let (tenant, name, path) = (tenant.to_owned(), name.to_owned(), path.to_owned());
        self.with_within(FILE_TIMEOUT, move |mut c| async move {
            let mut file = std::fs::File::open(&path).map_err(|e| io("reading the file", e))?;
            let tx = c.transaction().await.map_err(db_error)?;
            tx.execute(
                "DELETE FROM result_files WHERE tenant = $1 AND name = $2",
                &[&tenant, &name],
            )
            .await
            .map_err(db_error)?;
            tx.execute(
                "INSERT INTO result_files (tenant, name, bytes, created_ms, expires_ms)
                 VALUES ($1, $2, 0, $3, $4)",
                &[&tenant, &name, &super::super::now_ms(), &expires_ms],
            )
            .await
            .map_err(db_error)?;
            let insert = tx
                .prepare_cached(
                    "INSERT INTO result_file_chunks (tenant, name, seq, data)
                     VALUES ($1, $2, $3, $4)",
                )
                .await
                .map_err(db_error)?;
            let mut buf = vec![0u8; CHUNK];
            let (mut seq, mut total) = (0i32, 0i64);
            loop {
                let mut filled = 0;
                while filled < CHUNK {
                    match file.read(&mut buf[filled..]) {
                        Ok(0) => break,
                        Ok(n) => filled += n,
                        Err(e) => return Err(io("reading the file", e)),
                    }
                }
                if filled == 0 {
                    break;
                }
                tx.execute(&insert, &[&tenant, &name, &seq, &&buf[..filled]])
                    .await
                    .map_err(db_error)?;
                seq += 1;
                total += filled as i64;
            }
            tx.execute(
                "UPDATE result_files SET bytes = $3 WHERE tenant = $1 AND name = $2",
                &[&tenant, &name, &total],
            )
            .await
            .map_err(db_error)?;
            tx.commit().await.map_err(db_error)
        })
    }

    pub(super) fn fetch(&self, tenant: &str, name: &str, to: &Path) -> Result<bool, StoreError> {
        let (tenant, name, to) = (tenant.to_owned(), name.to_owned(), to.to_owned());
        self.with_within(FILE_TIMEOUT, move |c| async move {
            let kept = c
                .query_opt(
                    "SELECT created_ms, (SELECT count(*) FROM result_file_chunks k
                                          WHERE k.tenant = f.tenant AND k.name = f.name)
                     FROM result_files f
                     WHERE tenant = $1 AND name = $2 AND expires_ms > $3",
                    &[&tenant, &name, &super::super::now_ms()],
                )
                .await
                .map_err(db_error)?;
            let Some(kept) = kept else {
                return Ok(false);
            };
            let (created_ms, chunks): (i64, i64) = (kept.get(0), kept.get(1));
            let partial = to.with_extension("fetching");
            let mut out = crate::private_fs::options()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&partial)
                .map_err(|e| io("writing the file", e))?;
            // One chunk a query: memory stays at a chunk whatever the file's size.
            for seq in 0..i32::try_from(chunks).unwrap_or(i32::MAX) {
                let row = c
                    .query_one(
                        "SELECT data FROM result_file_chunks
                         WHERE tenant = $1 AND name = $2 AND seq = $3",
                        &[&tenant, &name, &seq],
                    )
                    .await
                    .map_err(db_error)?;
                out.write_all(row.get::<_, &[u8]>(0))
                    .map_err(|e| io("writing the file", e))?;
            }
            // Its age is the original's, so it expires here when it does everywhere.
            let written = std::time::UNIX_EPOCH
                + std::time::Duration::from_millis(u64::try_from(created_ms).unwrap_or(0));
            let _ = out.set_modified(written);
            drop(out);
            std::fs::rename(&partial, &to).map_err(|e| io("placing the file", e))?;
            Ok(true)
        })
    }

    pub(super) fn names(&self, tenant: &str) -> Result<Vec<String>, StoreError> {
        let tenant = tenant.to_owned();
        self.with(move |c| async move {
            let rows = c
                .query(
                    "SELECT name FROM result_files WHERE tenant = $1 AND expires_ms > $2
                     ORDER BY name",
                    &[&tenant, &super::super::now_ms()],
                )
                .await
                .map_err(db_error)?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }
}
