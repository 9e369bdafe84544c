//! The fleet database's schema, as numbered migrations applied in order at start.
//!
//! Every host runs [`migrate`] when it starts; the first takes a transaction-scoped advisory
//! lock, so two hosts starting at once apply each migration exactly once (the second waits, then
//! finds nothing to do). DDL is transactional in PostgreSQL: a migration that fails leaves the
//! schema as it was. A database migrated by a newer host is refused rather than used.

use super::super::StoreError;
use deadpool_postgres::GenericClient;

/// One schema step.
pub struct Migration {
    pub version: i32,
    pub name: &'static str,
    pub sql: &'static str,
}

/// The advisory lock every host takes to migrate ("crm-host" in ASCII).
const MIGRATION_LOCK: i64 = 0x63_72_6d_2d_68_6f_73_74;

/// Keys are compared byte by byte (`COLLATE "C"`), as the component compares them and as
/// SQLite does, whatever the database's own collation.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "mappings, created ids, disconnects, staging, journal, confirmations, keys",
        sql: r#"
        CREATE TABLE mappings (
            tenant        text    NOT NULL,
            kind          text    NOT NULL CHECK (kind IN ('user', 'owner')),
            crm_id        text    COLLATE "C" NOT NULL,
            fields        text    NOT NULL,
            deleted       boolean NOT NULL DEFAULT false,
            deleted_at_ms bigint,
            created_at_ms bigint  NOT NULL,
            updated_at_ms bigint  NOT NULL,
            PRIMARY KEY (tenant, kind, crm_id)
        );
        CREATE TABLE created_records (
            seq           bigserial PRIMARY KEY,
            tenant        text   NOT NULL,
            user_id       text   NOT NULL,
            crm           text   NOT NULL CHECK (crm IN ('hubspot', 'salesforce')),
            object_type   text   NOT NULL,
            record_id     text   NOT NULL,
            created_at_ms bigint NOT NULL
        );
        CREATE INDEX created_records_by_tenant ON created_records (tenant, seq);
        CREATE TABLE disconnected (
            tenant             text   NOT NULL,
            crm                text   NOT NULL CHECK (crm IN ('crm-a', 'crm-b')),
            disconnected_at_ms bigint NOT NULL,
            PRIMARY KEY (tenant, crm)
        );
        CREATE TABLE mapping_stage (
            tenant       text     NOT NULL,
            change       bigint   NOT NULL,
            area         text     NOT NULL CHECK (area IN ('o', 'w')),
            kind         text     NOT NULL,
            crm_id       text     COLLATE "C" NOT NULL,
            fields       text     NOT NULL,
            deleted      boolean  NOT NULL,
            staged_at_ms bigint   NOT NULL,
            PRIMARY KEY (tenant, change, area, kind, crm_id)
        );
        CREATE TABLE changes (
            seq        bigserial PRIMARY KEY,
            id         text   NOT NULL UNIQUE,
            tenant     text   NOT NULL,
            at_ms      bigint NOT NULL,
            user_id    text   NOT NULL,
            tool       text   NOT NULL,
            call_id    text   NOT NULL,
            status     text   NOT NULL
                       CHECK (status IN ('pending', 'applied', 'failed', 'unknown', 'declined')),
            crm        text   NOT NULL CHECK (crm IN ('hubspot', 'salesforce')),
            kind       text   NOT NULL CHECK (kind IN ('create', 'update', 'merge', 'association')),
            object     text   NOT NULL,
            record_id  text,
            old_values text   NOT NULL,
            new_values text   NOT NULL,
            reverts    text
        );
        CREATE INDEX changes_by_tenant ON changes (tenant, seq);
        CREATE INDEX changes_by_record ON changes (tenant, record_id);
        CREATE TABLE confirmations (
            tenant       text   NOT NULL,
            id           text   NOT NULL,
            user_id      text   NOT NULL,
            tool         text   NOT NULL,
            input_sha256 text   NOT NULL,
            values_read  text   NOT NULL,
            expires_ms   bigint NOT NULL,
            used_at_ms   bigint,
            PRIMARY KEY (tenant, id)
        );
        CREATE TABLE host_keys (
            tenant text  NOT NULL,
            name   text  NOT NULL,
            value  bytea NOT NULL,
            PRIMARY KEY (tenant, name)
        );
    "#,
    },
    Migration {
        version: 2,
        name: "pace lanes shared by the fleet's hosts",
        sql: r#"
        CREATE TABLE pace_lanes (
            key             text     PRIMARY KEY,
            sends           bigint[] NOT NULL DEFAULT '{}',
            leases          bigint[] NOT NULL DEFAULT '{}',
            paused_until_ms bigint   NOT NULL DEFAULT 0
        );
    "#,
    },
    Migration {
        version: 3,
        name: "result files, chunked, with an expiry",
        sql: r#"
        CREATE TABLE result_files (
            tenant     text   NOT NULL,
            name       text   NOT NULL,
            bytes      bigint NOT NULL,
            created_ms bigint NOT NULL,
            expires_ms bigint NOT NULL,
            PRIMARY KEY (tenant, name)
        );
        CREATE TABLE result_file_chunks (
            tenant text    NOT NULL,
            name   text    NOT NULL,
            seq    integer NOT NULL,
            data   bytea   NOT NULL,
            PRIMARY KEY (tenant, name, seq),
            FOREIGN KEY (tenant, name) REFERENCES result_files ON DELETE CASCADE
        );
    "#,
    },
    Migration {
        version: 4,
        name: "the tenants registry and the component each tenant runs",
        sql: r#"
        CREATE TABLE registry (
            name       text   PRIMARY KEY,
            document   text   NOT NULL,
            version    bigint NOT NULL,
            updated_ms bigint NOT NULL
        );
        CREATE TABLE components (
            sha256   text   PRIMARY KEY,
            wasm     bytea  NOT NULL,
            added_ms bigint NOT NULL
        );
        CREATE TABLE tenant_components (
            tenant     text   PRIMARY KEY,
            sha256     text   NOT NULL REFERENCES components,
            swapped_ms bigint NOT NULL
        );
    "#,
    },
    Migration {
        version: 5,
        name: "what each host of the fleet last reported: registry version, broken tenants",
        sql: r#"
        CREATE TABLE IF NOT EXISTS fleet_hosts (
            host_id text   PRIMARY KEY,
            version bigint NOT NULL,
            broken  jsonb  NOT NULL DEFAULT '[]',
            seen_ms bigint NOT NULL
        );
        CREATE INDEX IF NOT EXISTS fleet_hosts_by_seen ON fleet_hosts (seen_ms);
    "#,
    },
    Migration {
        version: 6,
        name: "each pending change leased to its call, so a dead host's turn unknown",
        sql: r#"
        ALTER TABLE changes ADD COLUMN lease_until_ms bigint;
        CREATE INDEX changes_pending ON changes (lease_until_ms) WHERE status = 'pending';
    "#,
    },
    Migration {
        version: 7,
        name: "the tenants registry as rows, each stamped with the version that last changed it",
        sql: r#"
        CREATE TABLE registry_head (
            id      boolean PRIMARY KEY DEFAULT true CHECK (id),
            version bigint  NOT NULL
        );
        CREATE TABLE registry_rows (
            kind     text   NOT NULL,
            key      text   NOT NULL,
            document text,
            version  bigint NOT NULL,
            PRIMARY KEY (kind, key)
        );
        CREATE INDEX registry_rows_by_version ON registry_rows (version);
    "#,
    },
];

/// The newest schema this host knows.
pub fn expected_version() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// What `crm-host store check` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaState {
    /// The newest migration applied to the database (0 for none).
    pub applied: i32,
    /// The newest this host knows.
    pub expected: i32,
}

impl SchemaState {
    /// Whether this host can use the database as it is.
    pub fn check(&self) -> Result<(), StoreError> {
        match self.applied.cmp(&self.expected) {
            std::cmp::Ordering::Equal => Ok(()),
            std::cmp::Ordering::Less => Err(StoreError::Unavailable(format!(
                "the database's schema is at version {} and this crm-host needs {}: run \
                 `crm-host store migrate` (or start a host, which migrates)",
                self.applied, self.expected
            ))),
            std::cmp::Ordering::Greater => Err(StoreError::Unavailable(format!(
                "the database's schema is at version {}, newer than this crm-host knows ({}): \
                 upgrade this host",
                self.applied, self.expected
            ))),
        }
    }
}

const LEDGER: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)";

async fn applied(client: &impl GenericClient) -> Result<i32, tokio_postgres::Error> {
    let exists: bool = client
        .query_one("SELECT to_regclass('schema_migrations') IS NOT NULL", &[])
        .await?
        .get(0);
    if !exists {
        return Ok(0);
    }
    client
        .query_one(
            "SELECT coalesce(max(version), 0) FROM schema_migrations",
            &[],
        )
        .await
        .map(|row| row.get(0))
}

/// The schema's state, changing nothing.
pub async fn state(client: &impl GenericClient) -> Result<SchemaState, tokio_postgres::Error> {
    Ok(SchemaState {
        applied: applied(client).await?,
        expected: expected_version(),
    })
}

/// Applies every migration the database lacks, under the advisory lock; returns the versions
/// it applied (none when another host got there first).
pub async fn migrate(
    client: &mut deadpool_postgres::Client,
) -> Result<Vec<i32>, tokio_postgres::Error> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute(LEDGER).await?;
    let from = applied(&tx).await?;
    let mut done = Vec::new();
    for migration in MIGRATIONS.iter().filter(|m| m.version > from) {
        tx.batch_execute(migration.sql).await?;
        tx.execute(
            "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
            &[&migration.version, &migration.name],
        )
        .await?;
        done.push(migration.version);
    }
    tx.commit().await?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::super::{Migrate, PgStore};
    use super::*;

    #[test]
    fn hosts_starting_at_once_apply_each_migration_once() {
        let Ok(server) = std::env::var("CRM_TEST_POSTGRES") else {
            eprintln!("CRM_TEST_POSTGRES is not set: the migration race is not run");
            return;
        };
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let name = format!(
            "migrate_{}",
            crate::tenant_db::journal::random_hex(6).unwrap()
        );
        let admin = runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(&server, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            client
                .batch_execute(&format!("CREATE DATABASE {name}"))
                .await
                .unwrap();
            client
        });
        let mut url = url::Url::parse(&server).unwrap();
        url.set_path(&format!("/{name}"));
        let url = url.to_string();
        let hosts: Vec<_> = std::thread::scope(|scope| {
            let starting: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| PgStore::open(&url, Migrate::Apply)))
                .collect();
            starting.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for host in &hosts {
            let host = host.as_ref().expect("every host starts");
            assert_eq!(host.schema_state().unwrap().applied, expected_version());
        }
        let applied: i64 = runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            client
                .query_one("SELECT count(*) FROM schema_migrations", &[])
                .await
                .unwrap()
                .get(0)
        });
        assert_eq!(applied, MIGRATIONS.len() as i64, "each migration once");
        drop(hosts);
        runtime.block_on(async {
            let _ = admin
                .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .await;
        });
    }
}
