//! The fleet's tenants registry and components, kept in the database so that a tenant added,
//! a token revoked, a policy changed or a component swapped reaches every host without a
//! restart: each change is announced ([`StoreEvent`]) in the transaction that makes it.
//!
//! The registry is rows, one per tenant, token, and for the identity providers and the
//! operator, each a small document (it holds token hashes and the names of credential
//! variables, never a secret) stamped with the registry version that last changed it. A change
//! writes only the rows it changes, under one new version, so a host applies a revocation by
//! reading one row, whether the registry lists ten tenants or a hundred thousand. A removed
//! row stays as a tombstone (no document) so that hosts learn of the removal. Components are
//! kept by their SHA-256.

use super::{PgStore, StoreEvent, db_error, events};
use crate::tenant_db::{StoreError, now_ms};

/// The registry document of schema version 4, read only to convert it into rows.
const TENANTS: &str = "tenants";

/// The longest list of changed rows a notification carries (`NOTIFY` takes under 8,000
/// bytes); a longer change is announced by its version alone.
const MAX_ANNOUNCED_BYTES: usize = 6_000;

/// What a registry row describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RowKind {
    /// A tenant, keyed by its id.
    Tenant,
    /// A bearer token, keyed by its hex SHA-256.
    Token,
    /// The identity providers, one row (key `""`).
    Jwt,
    /// The operator's token, one row (key `""`).
    Admin,
}

impl RowKind {
    fn as_str(self) -> &'static str {
        match self {
            RowKind::Tenant => "tenant",
            RowKind::Token => "token",
            RowKind::Jwt => "jwt",
            RowKind::Admin => "admin",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        [
            RowKind::Tenant,
            RowKind::Token,
            RowKind::Jwt,
            RowKind::Admin,
        ]
        .into_iter()
        .find(|k| k.as_str() == text)
    }
}

/// One registry row: its document, or none when it was removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryRow {
    pub kind: RowKind,
    pub key: String,
    pub document: Option<String>,
}

/// Rows read at one version of the registry.
#[derive(Debug)]
pub struct RegistryRead {
    /// The registry's version: every change up to it is in `rows`.
    pub version: i64,
    pub rows: Vec<RegistryRow>,
}

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// The registry's version after it (unchanged when nothing changed).
    pub version: i64,
    /// How many rows it changed (0: nothing, and no version was spent).
    pub changed: usize,
}

fn announce(event: &StoreEvent) -> Result<String, StoreError> {
    serde_json::to_string(event).map_err(|e| StoreError::Invalid(e.to_string()))
}

/// Takes the registry's next version, holding its head row until the transaction ends: writers
/// commit in version order, so a host that read version V has every change up to V.
async fn next_version(tx: &tokio_postgres::Transaction<'_>) -> Result<i64, StoreError> {
    let row = tx
        .query_one(
            "INSERT INTO registry_head (id, version)
             VALUES (true, coalesce((SELECT max(version) FROM registry), 0) + 1)
             ON CONFLICT (id) DO UPDATE SET version = registry_head.version + 1
             RETURNING version",
            &[],
        )
        .await
        .map_err(db_error)?;
    Ok(row.get(0))
}

/// Writes `changes` at `version` and announces them, in `tx`.
async fn write_rows(
    tx: &tokio_postgres::Transaction<'_>,
    version: i64,
    changes: &[RegistryRow],
) -> Result<(), StoreError> {
    let kinds: Vec<&str> = changes.iter().map(|c| c.kind.as_str()).collect();
    let keys: Vec<&str> = changes.iter().map(|c| c.key.as_str()).collect();
    let documents: Vec<Option<&str>> = changes.iter().map(|c| c.document.as_deref()).collect();
    tx.execute(
        "INSERT INTO registry_rows (kind, key, document, version)
         SELECT kind, key, document, $4
           FROM unnest($1::text[], $2::text[], $3::text[]) AS u(kind, key, document)
         ON CONFLICT (kind, key) DO UPDATE
            SET document = excluded.document, version = excluded.version",
        &[&kinds, &keys, &documents, &version],
    )
    .await
    .map_err(db_error)?;
    let named: Vec<String> = changes
        .iter()
        .map(|c| match c.kind {
            RowKind::Jwt | RowKind::Admin => c.kind.as_str().to_owned(),
            kind => format!("{}:{}", kind.as_str(), c.key),
        })
        .collect();
    let short = named.iter().map(|n| n.len() + 3).sum::<usize>() <= MAX_ANNOUNCED_BYTES;
    let event = announce(&StoreEvent::Registry {
        version,
        changed: short.then_some(named),
    })?;
    tx.execute("SELECT pg_notify($1, $2)", &[&events::CHANNEL, &event])
        .await
        .map_err(db_error)?;
    Ok(())
}

fn row_of(row: &tokio_postgres::Row) -> Result<RegistryRow, StoreError> {
    let kind: &str = row.get(0);
    Ok(RegistryRow {
        kind: RowKind::parse(kind).ok_or_else(|| {
            StoreError::Invalid(format!(
                "a registry row of kind {kind:?}, which this host does not know: upgrade it"
            ))
        })?,
        key: row.get(1),
        document: row.get(2),
    })
}

impl PgStore {
    /// The registry's version, if it has rows (none before the first import).
    pub fn registry_version(&self) -> Result<Option<i64>, StoreError> {
        self.with(|c| async move {
            let row = c
                .query_opt("SELECT version FROM registry_head", &[])
                .await
                .map_err(db_error)?;
            Ok(row.map(|r| r.get(0)))
        })
    }

    /// The rows changed after version `since` (removed ones included, without a document);
    /// with `since` 0, every row there is. None before the first import.
    pub fn registry_rows(&self, since: i64) -> Result<Option<RegistryRead>, StoreError> {
        self.with(move |c| async move {
            let Some(head) = c
                .query_opt("SELECT version FROM registry_head", &[])
                .await
                .map_err(db_error)?
            else {
                return Ok(None);
            };
            let version: i64 = head.get(0);
            // Writers commit in version order, so every row up to `version` is visible now;
            // a row of a later version is read with that version.
            let rows = c
                .query(
                    "SELECT kind, key, document FROM registry_rows
                      WHERE version > $1 AND version <= $2
                        AND ($1 > 0 OR document IS NOT NULL)",
                    &[&since, &version],
                )
                .await
                .map_err(db_error)?;
            let rows = rows.iter().map(row_of).collect::<Result<_, _>>()?;
            Ok(Some(RegistryRead { version, rows }))
        })
    }

    /// Makes the registry's rows exactly `rows` (each with a document): writes those that
    /// differ, removes those not among them, under one new version; spends no version and
    /// announces nothing when nothing differs.
    pub fn replace_registry(&self, rows: Vec<RegistryRow>) -> Result<Written, StoreError> {
        self.with(move |mut c| async move {
            let tx = c.transaction().await.map_err(db_error)?;
            let version = next_version(&tx).await?;
            let live = tx
                .query(
                    "SELECT kind, key, document FROM registry_rows WHERE document IS NOT NULL",
                    &[],
                )
                .await
                .map_err(db_error)?;
            let mut live: std::collections::HashMap<(RowKind, String), Option<String>> = live
                .iter()
                .map(|r| row_of(r).map(|r| ((r.kind, r.key), r.document)))
                .collect::<Result<_, _>>()?;
            let mut changes: Vec<RegistryRow> = rows
                .into_iter()
                .filter(|row| {
                    live.remove(&(row.kind, row.key.clone())).as_ref() != Some(&row.document)
                })
                .collect();
            changes.extend(live.into_keys().map(|(kind, key)| RegistryRow {
                kind,
                key,
                document: None,
            }));
            if changes.is_empty() {
                tx.rollback().await.map_err(db_error)?;
                let version = version - 1;
                return Ok(Written {
                    version,
                    changed: 0,
                });
            }
            write_rows(&tx, version, &changes).await?;
            tx.commit().await.map_err(db_error)?;
            Ok(Written {
                version,
                changed: changes.len(),
            })
        })
    }

    /// Removes the token rows of these hex SHA-256s under one new version; fails, changing
    /// nothing, when one is not a listed token.
    pub fn revoke_tokens(&self, sha256s: Vec<String>) -> Result<Written, StoreError> {
        self.with(move |mut c| async move {
            let tx = c.transaction().await.map_err(db_error)?;
            let version = next_version(&tx).await?;
            let listed = tx
                .query(
                    "SELECT key FROM registry_rows
                      WHERE kind = 'token' AND key = ANY($1) AND document IS NOT NULL
                      FOR UPDATE",
                    &[&sha256s],
                )
                .await
                .map_err(db_error)?;
            let listed: std::collections::HashSet<String> =
                listed.iter().map(|r| r.get(0)).collect();
            if let Some(unknown) = sha256s.iter().find(|s| !listed.contains(*s)) {
                return Err(StoreError::Invalid(format!(
                    "no listed token has the SHA-256 {unknown}: nothing was revoked"
                )));
            }
            let changes: Vec<RegistryRow> = listed
                .into_iter()
                .map(|key| RegistryRow {
                    kind: RowKind::Token,
                    key,
                    document: None,
                })
                .collect();
            write_rows(&tx, version, &changes).await?;
            tx.commit().await.map_err(db_error)?;
            Ok(Written {
                version,
                changed: changes.len(),
            })
        })
    }

    /// The registry's version and document as schema version 4 kept it (one TOML document),
    /// if one was imported then: read once, to convert it into rows.
    pub fn registry_document(&self) -> Result<Option<(i64, String)>, StoreError> {
        self.with(|c| async move {
            let row = c
                .query_opt(
                    "SELECT version, document FROM registry WHERE name = $1",
                    &[&TENANTS],
                )
                .await
                .map_err(db_error)?;
            Ok(row.map(|r| (r.get(0), r.get(1))))
        })
    }

    /// Makes `wasm` the component `tenant` runs on every host; returns its SHA-256. Calls in
    /// flight finish on the component they started with.
    pub fn swap_component(&self, tenant: &str, wasm: &[u8]) -> Result<String, StoreError> {
        let sha256 = crate::tenant_db::journal::sha256_hex(wasm);
        let (tenant, wasm, sha) = (tenant.to_owned(), wasm.to_vec(), sha256.clone());
        self.with(move |mut c| async move {
            let tx = c.transaction().await.map_err(db_error)?;
            let now = now_ms();
            tx.execute(
                "INSERT INTO components (sha256, wasm, added_ms) VALUES ($1, $2, $3)
                 ON CONFLICT DO NOTHING",
                &[&sha, &wasm, &now],
            )
            .await
            .map_err(db_error)?;
            tx.execute(
                "INSERT INTO tenant_components (tenant, sha256, swapped_ms) VALUES ($1, $2, $3)
                 ON CONFLICT (tenant) DO UPDATE SET sha256 = excluded.sha256,
                     swapped_ms = excluded.swapped_ms",
                &[&tenant, &sha, &now],
            )
            .await
            .map_err(db_error)?;
            let event = announce(&StoreEvent::Swap {
                tenant: tenant.clone(),
                sha256: sha.clone(),
            })?;
            tx.execute("SELECT pg_notify($1, $2)", &[&events::CHANNEL, &event])
                .await
                .map_err(db_error)?;
            tx.commit().await.map_err(db_error)
        })?;
        Ok(sha256)
    }

    /// The component `tenant` runs, by SHA-256, when one was swapped in.
    pub fn tenant_component(&self, tenant: &str) -> Result<Option<String>, StoreError> {
        let tenant = tenant.to_owned();
        self.with(move |c| async move {
            let row = c
                .query_opt(
                    "SELECT sha256 FROM tenant_components WHERE tenant = $1",
                    &[&tenant],
                )
                .await
                .map_err(db_error)?;
            Ok(row.map(|r| r.get(0)))
        })
    }

    /// Every tenant's swapped-in component, by tenant: one query, whatever the tenant count
    /// (a host starting or resyncing reads them all at once).
    pub fn tenant_components(
        &self,
    ) -> Result<std::collections::HashMap<String, String>, StoreError> {
        self.with(|c| async move {
            let rows = c
                .query("SELECT tenant, sha256 FROM tenant_components", &[])
                .await
                .map_err(db_error)?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    /// A kept component's bytes.
    pub fn component(&self, sha256: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let sha = sha256.to_owned();
        self.with(move |c| async move {
            let row = c
                .query_opt("SELECT wasm FROM components WHERE sha256 = $1", &[&sha])
                .await
                .map_err(db_error)?;
            Ok(row.map(|r| r.get(0)))
        })
    }
}
