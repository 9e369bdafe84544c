//! The fleet's tenants registry and components, kept in the database so that a tenant added,
//! a token revoked, a policy changed or a component swapped reaches every host without a
//! restart: each change is announced ([`StoreEvent`]) in the transaction that makes it.
//!
//! The registry is one document, the tenants file's TOML (it holds token hashes and the names
//! of credential variables, never a secret), replaced whole and versioned, so every host
//! applies the same state. Components are kept by their SHA-256.

use super::{PgStore, StoreEvent, db_error, events};
use crate::tenant_db::{StoreError, now_ms};

/// The one registry document's name.
const TENANTS: &str = "tenants";

fn announce(event: &StoreEvent) -> Result<String, StoreError> {
    serde_json::to_string(event).map_err(|e| StoreError::Invalid(e.to_string()))
}

impl PgStore {
    /// Replaces the tenants registry with `document` (a checked tenants file); returns its new
    /// version. Every host applies it within a second.
    pub fn put_registry(&self, document: &str) -> Result<i64, StoreError> {
        let document = document.to_owned();
        self.with(move |mut c| async move {
            let tx = c.transaction().await.map_err(db_error)?;
            let row = tx
                .query_one(
                    "INSERT INTO registry (name, document, version, updated_ms)
                     VALUES ($1, $2, 1, $3)
                     ON CONFLICT (name) DO UPDATE SET document = excluded.document,
                         version = registry.version + 1, updated_ms = excluded.updated_ms
                     RETURNING version",
                    &[&TENANTS, &document, &now_ms()],
                )
                .await
                .map_err(db_error)?;
            let version: i64 = row.get(0);
            let event = announce(&StoreEvent::Registry { version })?;
            tx.execute("SELECT pg_notify($1, $2)", &[&events::CHANNEL, &event])
                .await
                .map_err(db_error)?;
            tx.commit().await.map_err(db_error)?;
            Ok(version)
        })
    }

    /// The registry's version and document, if one was imported.
    pub fn registry(&self) -> Result<Option<(i64, String)>, StoreError> {
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
