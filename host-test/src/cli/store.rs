//! `--store`: where every tenant's state lives (SQLite files under `--data-dir`, the default,
//! or one PostgreSQL database a fleet of hosts shares), and `crm-host store migrate|check`.

use crate::pacing::{Pacer, PacingLimits, Window};
use crate::tenant_db::postgres::{Migrate, schema};
use crate::tenant_db::{DbLocation, PgStore, StoreError, TenantDb, tenant_file};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How the host paces what it sends to each CRM account (`--pace`).
#[derive(Debug, Clone, clap::Args)]
pub(super) struct PaceArgs {
    /// Hold requests until their account has room: `auto` does so on a PostgreSQL store (the
    /// fleet shares each account's room), `on` on any store, `off` leaves it to the CRM's 429s.
    #[arg(long, global = true, value_enum, default_value = "auto")]
    pace: Pace,
    /// HubSpot requests per account in any 10 seconds (HubSpot gives a public app 110).
    #[arg(long, global = true, default_value_t = 100)]
    hubspot_per_10s: u32,
    /// HubSpot search requests per account in any second (HubSpot allows about 5).
    #[arg(long, global = true, default_value_t = 5)]
    hubspot_searches_per_second: u32,
    /// Salesforce requests one org may have running at once.
    #[arg(long, global = true, default_value_t = 25)]
    salesforce_concurrent: u32,
    /// While the fleet's database does not answer, each host paces reads on its own to
    /// 1/N of every limit above (N hosts doing so stay within the account's limit); writes are
    /// refused then, with nothing sent, as nothing can be journalled. Give the most hosts that
    /// serve one tenant.
    #[arg(long, global = true, default_value_t = 4)]
    pace_fallback_hosts: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Pace {
    Auto,
    On,
    Off,
}

/// What `crm-host store` does.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(super) enum StoreAction {
    /// Apply the schema's missing migrations (safe while other hosts start or run).
    Migrate,
    /// Report the schema's version against this host's, changing nothing; exit 1 if they
    /// differ or the database does not answer.
    Check,
    /// Move --tenant's SQLite store (under --data-dir) into the PostgreSQL --store: mappings,
    /// created ids, change journal, disconnects.
    ImportSqlite,
}

/// The store this process uses for every tenant.
#[derive(Clone)]
pub(super) enum Store {
    /// One SQLite file per tenant, `<dir>/<tenant>/mappings.sqlite`.
    Sqlite(PathBuf),
    /// One PostgreSQL database for every tenant and every host.
    Postgres(Arc<PgStore>),
}

/// Whether `--store` names PostgreSQL.
pub(super) fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

impl Store {
    /// The store `--store` names (`sqlite`, the default, or a `postgres://` URL), opened and
    /// migrated.
    pub(super) fn open(store: &str, data_dir: &Path) -> Result<Store, String> {
        match store {
            "sqlite" | "" => Ok(Store::Sqlite(data_dir.to_path_buf())),
            url if is_postgres(url) => PgStore::open(url, Migrate::Apply)
                .map(Store::Postgres)
                .map_err(|e| format!("--store: {e}")),
            other => Err(format!(
                "--store {other:?}: give `sqlite` or a postgres:// URL"
            )),
        }
    }

    /// Where `tenant`'s state lives.
    pub(super) fn location(&self, tenant: &str) -> Result<DbLocation, String> {
        match self {
            Store::Sqlite(dir) => Ok(DbLocation::File(tenant_file(dir, tenant)?)),
            Store::Postgres(store) => Ok(DbLocation::Postgres(store.clone())),
        }
    }

    /// `tenant`'s store.
    pub(super) fn tenant(&self, tenant: &str) -> Result<TenantDb, String> {
        TenantDb::open(tenant, &self.location(tenant)?).map_err(|e: StoreError| e.to_string())
    }

    /// The pacer `--pace` asks for: over the fleet's database, or this host's memory.
    pub(super) fn pacer(&self, args: &PaceArgs) -> Option<Pacer> {
        let limits = PacingLimits {
            hubspot: Window {
                requests: args.hubspot_per_10s.max(1),
                per: Duration::from_secs(10),
            },
            hubspot_search: Window {
                requests: args.hubspot_searches_per_second.max(1),
                per: Duration::from_secs(1),
            },
            salesforce_concurrent: args.salesforce_concurrent.max(1),
            ..PacingLimits::default()
        };
        match (args.pace, self) {
            (Pace::Off, _) | (Pace::Auto, Store::Sqlite(_)) => None,
            (_, Store::Postgres(store)) => Some(
                Pacer::new(store.clone(), limits).with_local_fallback(args.pace_fallback_hosts),
            ),
            (Pace::On, Store::Sqlite(_)) => Some(Pacer::local(limits)),
        }
    }

    /// The fleet's database, when there is one (hosts follow its events).
    pub(super) fn postgres(&self) -> Option<&Arc<PgStore>> {
        match self {
            Store::Postgres(store) => Some(store),
            Store::Sqlite(_) => None,
        }
    }
}

/// `crm-host store migrate|check|import-sqlite`: prints one JSON line with what it found or
/// did.
pub(super) fn run(
    store: &str,
    data_dir: &Path,
    tenant: &str,
    action: StoreAction,
) -> Result<serde_json::Value, String> {
    if let StoreAction::ImportSqlite = action {
        if !is_postgres(store) {
            return Err("import-sqlite moves a tenant into a PostgreSQL --store".into());
        }
        let to = PgStore::open(store, Migrate::Apply).map_err(|e| e.to_string())?;
        let file = tenant_file(data_dir, tenant)?;
        let moved = crate::tenant_db::transfer::sqlite_to_postgres(tenant, &file, &to)
            .map_err(|e| e.to_string())?;
        return Ok(json!({"tenant": tenant, "from": file.display().to_string(),
                         "store": to.url(), "moved": moved}));
    }
    if !is_postgres(store) {
        // SQLite files are made and brought up to date when a tenant's store is opened.
        return Ok(json!({"store": "sqlite", "ok": true,
            "note": "SQLite stores are migrated when opened; nothing to do"}));
    }
    let migrate = match action {
        StoreAction::Check => Migrate::Check,
        StoreAction::Migrate | StoreAction::ImportSqlite => Migrate::Apply,
    };
    let opened = PgStore::open(store, migrate).map_err(|e| e.to_string())?;
    let schema::SchemaState { applied, expected } =
        opened.schema_state().map_err(|e| e.to_string())?;
    Ok(json!({
        "store": opened.url(),
        "schema_version": applied,
        "host_schema_version": expected,
        "ok": applied == expected,
    }))
}
