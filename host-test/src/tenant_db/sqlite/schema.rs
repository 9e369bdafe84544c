//! A SQLite store's schema: made (or brought up to date) the first time this process opens the
//! file, and only the connection's settings at every later open, so reopening a store closed
//! to save descriptors costs a file open, not a migration.

use super::StoreError;
use rusqlite::Connection;

/// Settings every connection takes: WAL, so readers never wait for the writer.
const PRAGMAS: &str = "PRAGMA journal_mode = WAL;
     PRAGMA synchronous = NORMAL;
     PRAGMA busy_timeout = 5000;";

/// The mapping, created-id and disconnect tables.
const TABLES: &str = "
    CREATE TABLE IF NOT EXISTS mappings (
        tenant        TEXT    NOT NULL,
        kind          TEXT    NOT NULL CHECK (kind IN ('user', 'owner')),
        crm_id        TEXT    NOT NULL,
        fields        TEXT    NOT NULL CHECK (json_valid(fields)),
        deleted       INTEGER NOT NULL DEFAULT 0,
        deleted_at_ms INTEGER,
        created_at_ms INTEGER NOT NULL,
        updated_at_ms INTEGER NOT NULL,
        PRIMARY KEY (tenant, kind, crm_id)
    );
    CREATE TABLE IF NOT EXISTS created_records (
        seq           INTEGER PRIMARY KEY,
        tenant        TEXT    NOT NULL,
        user_id       TEXT    NOT NULL,
        crm           TEXT    NOT NULL,
        object_type   TEXT    NOT NULL,
        record_id     TEXT    NOT NULL,
        created_at_ms INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS disconnected (
        tenant          TEXT    NOT NULL,
        crm             TEXT    NOT NULL CHECK (crm IN ('crm-a', 'crm-b')),
        disconnected_at_ms INTEGER NOT NULL,
        PRIMARY KEY (tenant, crm)
    );";

/// The change journal's table; `{name}` is filled in (a migration builds it under another
/// name first).
const CHANGES_TABLE: &str = "CREATE TABLE IF NOT EXISTS {name} (
             seq        INTEGER PRIMARY KEY,
             id         TEXT    NOT NULL UNIQUE,
             tenant     TEXT    NOT NULL,
             at_ms      INTEGER NOT NULL,
             user_id    TEXT    NOT NULL,
             tool       TEXT    NOT NULL,
             call_id    TEXT    NOT NULL,
             status     TEXT    NOT NULL
                        CHECK (status IN ('pending', 'applied', 'failed', 'unknown', 'declined')),
             crm        TEXT    NOT NULL CHECK (crm IN ('hubspot', 'salesforce')),
             kind       TEXT    NOT NULL CHECK (kind IN ('create', 'update', 'merge', 'association')),
             object     TEXT    NOT NULL,
             record_id  TEXT,
             old_values TEXT    NOT NULL CHECK (json_valid(old_values)),
             new_values TEXT    NOT NULL CHECK (json_valid(new_values)),
             reverts    TEXT,
             lease_until_ms INTEGER
         )";

/// The columns every version of the journal's table has had, in order.
const OLDEST_CHANGE_COLUMNS: &str = "seq, id, tenant, at_ms, user_id, tool, call_id, status, crm, \
                                     kind, object, record_id, old_values, new_values, reverts";

const JOURNAL_TABLES: &str = "
    CREATE INDEX IF NOT EXISTS changes_by_record ON changes (tenant, record_id);
    CREATE TABLE IF NOT EXISTS confirmations (
        id           TEXT    PRIMARY KEY,
        tenant       TEXT    NOT NULL,
        user_id      TEXT    NOT NULL,
        tool         TEXT    NOT NULL,
        input_sha256 TEXT    NOT NULL,
        values_read  TEXT    NOT NULL CHECK (json_valid(values_read)),
        expires_ms   INTEGER NOT NULL,
        used_at_ms   INTEGER
    );
    CREATE TABLE IF NOT EXISTS host_keys (
        name  TEXT PRIMARY KEY,
        value BLOB NOT NULL
    );";

/// A change's staging: the connection's own temporary tables, seen by no other connection.
const TEMP_TABLES: &str = "
    CREATE TEMP TABLE IF NOT EXISTS change_observed (
        change  INTEGER NOT NULL,
        kind    TEXT    NOT NULL,
        crm_id  TEXT    NOT NULL,
        fields  TEXT    NOT NULL,
        deleted INTEGER NOT NULL,
        PRIMARY KEY (change, kind, crm_id)
    ) WITHOUT ROWID;
    CREATE TEMP TABLE IF NOT EXISTS change_writes (
        change  INTEGER NOT NULL,
        kind    TEXT    NOT NULL,
        crm_id  TEXT    NOT NULL,
        fields  TEXT    NOT NULL,
        deleted INTEGER NOT NULL,
        PRIMARY KEY (change, kind, crm_id)
    ) WITHOUT ROWID;";

/// Makes a newly opened connection ready: its settings and, when `migrate`, the store's
/// tables and their migrations.
pub(super) fn prepare(conn: &Connection, migrate: bool) -> Result<(), StoreError> {
    // No lookaside: its 48 KB is a third of an open idle connection's memory, and a host
    // keeps up to --max-open-stores of them; a store answers a few queries per call.
    // SAFETY: the handle is this open connection's, no statement has run on it yet (so no
    // lookaside memory is in use), and a null buffer with zero slots is the documented way
    // to turn lookaside off (https://sqlite.org/c3ref/c_dbconfig_defensive.html).
    unsafe {
        rusqlite::ffi::sqlite3_db_config(
            conn.handle(),
            rusqlite::ffi::SQLITE_DBCONFIG_LOOKASIDE,
            std::ptr::null_mut::<std::ffi::c_void>(),
            0i32,
            0i32,
        );
    }
    conn.execute_batch(PRAGMAS)?;
    if migrate {
        conn.execute_batch(TABLES)?;
        conn.execute_batch(&CHANGES_TABLE.replace("{name}", "changes"))?;
        allow_declined(conn)?;
        add_leases(conn)?;
        conn.execute_batch(JOURNAL_TABLES)?;
    }
    Ok(())
}

/// Makes the connection's staging tables, when a change first stages or reads staged rows:
/// a temporary database costs a connection about a third of its memory, and most calls
/// never stage.
pub(super) fn create_staging(conn: &Connection) -> Result<(), StoreError> {
    Ok(conn.execute_batch(TEMP_TABLES)?)
}

/// A journal made before writes could be declined checks its status against the four older
/// values; SQLite cannot change a CHECK in place, so the table is rebuilt with every row, in
/// one transaction.
fn allow_declined(conn: &Connection) -> Result<(), StoreError> {
    let sql: String = conn.query_row(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'changes'",
        [],
        |row| row.get(0),
    )?;
    if sql.contains("'declined'") {
        return Ok(());
    }
    // Rolled back on any failure: the old table stays as it was.
    let tx = conn.unchecked_transaction()?;
    tx.execute_batch(&format!(
        "{};
         INSERT INTO changes_declinable ({OLDEST_CHANGE_COLUMNS})
             SELECT {OLDEST_CHANGE_COLUMNS} FROM changes;
         DROP TABLE changes;
         ALTER TABLE changes_declinable RENAME TO changes;",
        CHANGES_TABLE.replace("{name}", "changes_declinable")
    ))?;
    Ok(tx.commit()?)
}

/// A journal made before changes were leased to their calls gets the lease column (empty for
/// its rows: see [`super::LEASE_END`]).
fn add_leases(conn: &Connection) -> Result<(), StoreError> {
    let has_lease: bool = conn.query_row(
        "SELECT count(*) > 0 FROM pragma_table_info('changes') WHERE name = 'lease_until_ms'",
        [],
        |row| row.get(0),
    )?;
    if !has_lease {
        conn.execute_batch("ALTER TABLE changes ADD COLUMN lease_until_ms INTEGER")?;
    }
    Ok(())
}
