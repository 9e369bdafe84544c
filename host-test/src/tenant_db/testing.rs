//! The stores every store test runs against: SQLite in memory always, and PostgreSQL when
//! `CRM_TEST_POSTGRES` names a database (CI starts one); without it the PostgreSQL half is
//! skipped with one printed line, never silently.

use super::{DbLocation, PgStore, TenantDb};
use std::sync::{Arc, OnceLock};

/// The test database, opened (and migrated) once per test process.
pub(crate) fn postgres() -> Option<Arc<PgStore>> {
    static STORE: OnceLock<Option<Arc<PgStore>>> = OnceLock::new();
    STORE
        .get_or_init(|| match std::env::var("CRM_TEST_POSTGRES") {
            Ok(url) if !url.is_empty() => Some(
                PgStore::open(&url, super::postgres::Migrate::Apply)
                    .unwrap_or_else(|e| panic!("CRM_TEST_POSTGRES={url}: {e}")),
            ),
            _ => {
                eprintln!(
                    "CRM_TEST_POSTGRES is not set: the store tests run on SQLite only \
                     (set it to a postgres:// URL to run them on PostgreSQL too)"
                );
                None
            }
        })
        .clone()
}

/// A tenant id no earlier run used, so runs sharing one database never meet.
pub(crate) fn fresh_tenant(name: &str) -> String {
    format!(
        "{name}-{}",
        super::journal::random_hex(6).unwrap_or_default()
    )
}

/// Each store kind's location, named for failure messages.
pub(crate) fn locations() -> Vec<(&'static str, DbLocation)> {
    let mut all = vec![("sqlite", DbLocation::Memory)];
    if let Some(store) = postgres() {
        all.push(("postgres", DbLocation::Postgres(store)));
    }
    all
}

/// A fresh tenant's store on each kind.
pub(crate) fn stores(name: &str) -> Vec<(&'static str, Arc<TenantDb>)> {
    locations()
        .into_iter()
        .map(|(kind, location)| {
            let db = TenantDb::open(&fresh_tenant(name), &location)
                .unwrap_or_else(|e| panic!("{kind}: {e}"));
            (kind, Arc::new(db))
        })
        .collect()
}
