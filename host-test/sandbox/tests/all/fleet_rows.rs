//! The registry as rows (issue 43): a registry kept as one document is converted at a host's
//! start; a revocation is one row, refused on every host within a second; an export imports
//! back unchanged; a row a host cannot read takes only its own tenant out of service; a change
//! whose announcement was lost is applied at the next heartbeat.
//!
//! Needs `CRM_TEST_POSTGRES`; without it the test prints one line and does nothing.

use crate::fixtures::temp_dir;
use crate::fleet::fresh_database;
use crate::serve_procs::{
    BINARY, Broker, Serving, admitted, client, command, read_account, tenants_file, within_a_second,
};
use crm_host::mcp::tenants::token_hash;
use serde_json::Value;

/// The store's database, to write as a crm-host of schema 4 did, or as a hand would.
async fn database(store: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(store, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_is_one_row_an_export_imports_unchanged_and_a_bad_row_spoils_itself() {
    let Some(store) = fresh_database("rows").await else {
        return;
    };
    let dir = temp_dir("fleet-rows");
    std::fs::create_dir_all(&dir).unwrap();
    let broker = Broker::start(&dir);
    let alice = ("acme-token", "acme", "alice");
    let carol = ("acme-carol-token", "acme", "carol");
    let bob = ("globex-token", "globex", "bob");
    let file = broker.tenants_file(&["acme", "globex"], &[alice, carol, bob]);

    // A registry as schema 4 kept it, one document: the first host converts it into rows.
    let status = command(&store, &dir, &["tenants", "status"]);
    assert_eq!(
        status["registry_version"],
        Value::Null,
        "no registry yet: {status}"
    );
    let db = database(&store).await;
    db.execute(
        "INSERT INTO registry (name, document, version, updated_ms) VALUES ('tenants', $1, 4, 0)",
        &[&file],
    )
    .await
    .unwrap();
    let a = Serving::start(&store, &dir, "host-a", &broker);
    let b = Serving::start(&store, &dir, "host-b", &broker);
    let status = command(&store, &dir, &["tenants", "status"]);
    assert_eq!(
        status["registry_version"], 5,
        "rows after the document's version: {status}"
    );
    for host in [&a, &b] {
        for token in ["acme-token", "acme-carol-token", "globex-token"] {
            assert!(admitted(&host.url, token).await, "{token} on {}", host.url);
        }
    }
    let on_b = client(&b.url, "acme-carol-token").await;
    assert_eq!(read_account(&on_b).await.is_error, Some(false));

    // Revoking alice's token writes one row; both hosts refuse it within a second, and carol
    // (same tenant) and bob go on, carol in the session she had open.
    let revoked = command(
        &store,
        &dir,
        &[
            "tenants",
            "revoke",
            &token_hash("acme-token").to_uppercase(),
        ],
    );
    assert_eq!(revoked["revoked"], 1, "{revoked}");
    assert_eq!(revoked["registry_version"], 6, "{revoked}");
    for host in [&a, &b] {
        within_a_second("the revoked token refused", async || {
            !admitted(&host.url, "acme-token").await
        })
        .await;
        assert!(admitted(&host.url, "globex-token").await);
    }
    assert_eq!(read_account(&on_b).await.is_error, Some(false));

    // A hash no token has revokes nothing, and says so.
    let unknown = std::process::Command::new(BINARY)
        .env("XDG_CACHE_HOME", crate::fixtures::cache_home())
        .args(["--store", &store, "--data-dir"])
        .arg(dir.join("cli"))
        .args([
            "tenants",
            "revoke",
            &token_hash("acme-carol-token"),
            &token_hash("nobody"),
        ])
        .output()
        .unwrap();
    assert!(!unknown.status.success());
    let said = String::from_utf8_lossy(&unknown.stderr);
    assert!(said.contains(&token_hash("nobody")), "{said}");
    assert!(
        admitted(&a.url, "acme-carol-token").await,
        "carol's token was not revoked"
    );

    // An export is the registry as a file: imported back, it changes nothing.
    let exported = dir.join("exported.toml");
    let export = command(
        &store,
        &dir,
        &["tenants", "export", exported.to_str().unwrap()],
    );
    assert_eq!(
        (export["tenants"].clone(), export["tokens"].clone()),
        (2.into(), 2.into())
    );
    let again = command(
        &store,
        &dir,
        &["tenants", "import", exported.to_str().unwrap()],
    );
    assert_eq!(again["unchanged"], true, "{again}");
    assert_eq!(again["registry_version"], 6, "no version spent: {again}");
    // The original file again: alice's row is the one change.
    let back = command(
        &store,
        &dir,
        &[
            "tenants",
            "import",
            tenants_file(&dir, "all.toml", &file).to_str().unwrap(),
        ],
    );
    assert_eq!(
        (
            back["rows_changed"].clone(),
            back["registry_version"].clone()
        ),
        (1.into(), 7.into())
    );
    within_a_second("alice's token back", async || {
        admitted(&b.url, "acme-token").await
    })
    .await;

    // A row this crm-host cannot read (a newer host's, or a hand's) takes its tenant out of
    // service on every host; the other tenant, and every token, are untouched.
    db.batch_execute(
        r#"WITH v AS (UPDATE registry_head SET version = version + 1 RETURNING version)
           UPDATE registry_rows SET document = '{"id":"globex","colour":"blue"}',
                  version = (SELECT version FROM v)
            WHERE kind = 'tenant' AND key = 'globex';
           SELECT pg_notify('crm_host_events', '{"event":"registry","version":8}');"#,
    )
    .await
    .unwrap();
    for host in [&a, &b] {
        within_a_second("globex out of service", async || {
            let (_, ready) = host.get("/readyz", None).await;
            ready.contains("colour")
        })
        .await;
        let globex = client(&host.url, "globex-token").await;
        let refused = serde_json::to_string(&read_account(&globex).await).unwrap();
        assert!(refused.contains("out-of-service"), "{refused}");
        let acme = client(&host.url, "acme-token").await;
        assert_eq!(read_account(&acme).await.is_error, Some(false));
    }
    let status = command(&store, &dir, &["tenants", "status"]);
    assert!(
        status.to_string().contains("colour"),
        "named in the fleet's status: {status}"
    );

    // A change whose announcement never came (a listener that died unnoticed) is read at a
    // host's next heartbeat, every 3 seconds.
    db.execute(
        "WITH v AS (UPDATE registry_head SET version = version + 1 RETURNING version)
         UPDATE registry_rows SET document = NULL, version = (SELECT version FROM v)
          WHERE kind = 'token' AND key = $1",
        &[&token_hash("acme-carol-token")],
    )
    .await
    .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    for host in [&a, &b] {
        while admitted(&host.url, "acme-carol-token").await {
            assert!(
                std::time::Instant::now() < deadline,
                "an unannounced revocation was never applied on {}",
                host.url
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
    assert!(admitted(&a.url, "acme-token").await);
}
