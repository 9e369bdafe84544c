//! Two `crm-sandbox serve` processes on one PostgreSQL registry (issue 23): tenants, tokens and
//! components come from the database, and a change made through either host (or the command
//! line) reaches both without a restart. Both reach one CRM, the sandbox served as an HTTPS
//! broker by a third process; each host has its own disk and memory.
//!
//! Needs `CRM_TEST_POSTGRES`; without it the test prints one line and does nothing.

use crate::fixtures::{relabelled_plugin, temp_dir};
use crate::fleet::fresh_database;
use crate::mcp::answer;
use crate::serve_procs::{
    Broker, Listener, Serving, admitted, client, command, read_account, tenants_file, tool,
    within_a_second,
};
use rmcp::RoleClient;
use rmcp::service::RunningService;
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

fn deal_update(amount: &str, extra: Value) -> Value {
    let mut input = json!({"object_type": "deals", "record_id": "357300",
                           "properties": {"amount": amount}});
    input
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    input
}

async fn preview_token(client: &RunningService<RoleClient, Listener>, amount: &str) -> Value {
    let previewed = tool(
        client,
        "crma_update_record",
        deal_update(amount, json!({"preview": true})),
    )
    .await;
    answer(&previewed)["preview"]["confirmation_token"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_serve_processes_share_the_registry_its_changes_and_the_disconnects() {
    let Some(store) = fresh_database("serve").await else {
        return;
    };
    let dir = temp_dir("fleet-serve");
    std::fs::create_dir_all(&dir).unwrap();
    let broker = Broker::start(&dir);
    let alice = ("acme-token", "acme", "alice");
    let bob = ("globex-token", "globex", "bob");
    let carol = ("acme-carol-token", "acme", "carol");
    // First only acme (its writes confirmed with a token), with alice's and carol's tokens.
    let acme_only = broker.tenants_file(&["acme"], &[alice, carol]);
    let imported = command(
        &store,
        &dir,
        &[
            "tenants",
            "import",
            tenants_file(&dir, "one.toml", &acme_only).to_str().unwrap(),
        ],
    );
    assert_eq!(imported["registry_version"], 1);

    let a = Serving::start(&store, &dir, "host-a", &broker);
    let b = Serving::start(&store, &dir, "host-b", &broker);
    // One user, alternating between the hosts.
    let on_a = client(&a.url, "acme-token").await;
    let on_b = client(&b.url, "acme-token").await;
    for session in [&on_a, &on_b, &on_a] {
        assert_eq!(read_account(session).await.is_error, Some(false));
    }
    assert!(!admitted(&b.url, "globex-token").await);

    // A write previewed on host A is applied on host B with A's token; a token raced on both
    // hosts writes once.
    let token = preview_token(&on_a, "250000").await;
    let applied = tool(
        &on_b,
        "crma_update_record",
        deal_update("250000", json!({"confirmation_token": token})),
    )
    .await;
    assert_eq!(applied.is_error, Some(false), "{applied:?}");
    let token = preview_token(&on_a, "260000").await;
    let (first, second) = tokio::join!(
        tool(
            &on_a,
            "crma_update_record",
            deal_update("260000", json!({"confirmation_token": token.clone()})),
        ),
        tool(
            &on_b,
            "crma_update_record",
            deal_update("260000", json!({"confirmation_token": token})),
        )
    );
    let oks = [&first, &second]
        .iter()
        .filter(|r| r.is_error == Some(false))
        .count();
    assert_eq!(oks, 1, "{first:?}\n{second:?}");

    // A result file written through host A is read through host B.
    let export = tool(
        &on_a,
        "crma_search_records",
        json!({"object_type": "contacts", "to_file": true, "properties": ["email"]}),
    )
    .await;
    let written = answer(&export);
    let uri = written["file_path"].as_str().unwrap().to_string();
    assert!(uri.starts_with("crm-results://files/"), "{written}");
    let read = tool(
        &on_b,
        "crm_read_result_file",
        json!({"file": uri, "offset": 0, "limit": 1000}),
    )
    .await;
    let page = answer(&read);
    assert_eq!(
        page["records"].as_array().unwrap().len() as u64,
        written["record_count"].as_u64().unwrap(),
        "{page}"
    );
    // It is alice's: carol, of the same tenant, finds it on neither host (issue 35).
    for host in [&a.url, &b.url] {
        let carol = client(host, "acme-carol-token").await;
        let read = tool(
            &carol,
            "crm_read_result_file",
            json!({"file": uri, "offset": 0, "limit": 10}),
        )
        .await;
        assert_eq!(read.is_error, Some(true), "{read:?}");
        let listed = carol.peer().list_all_resources().await.unwrap();
        assert!(listed.iter().all(|r| r.uri != uri), "{listed:?}");
    }

    // A tenant added to the registry is served by both hosts, without a restart; then the
    // acme token is revoked and neither host lets it in.
    let both = broker.tenants_file(&["acme", "globex"], &[alice, bob]);
    command(
        &store,
        &dir,
        &[
            "tenants",
            "import",
            tenants_file(&dir, "two.toml", &both).to_str().unwrap(),
        ],
    );
    // Polled on /readyz: every refused token counts against the address's 30 failed
    // authentications a minute, which a slow apply could use up.
    let took = within_a_second("globex on host B", async || {
        let (_, ready) = b.get("/readyz", None).await;
        serde_json::from_str::<Value>(&ready).unwrap()["tenants"] == 2
    })
    .await;
    eprintln!("host B served the new tenant after {took:?}");
    assert!(admitted(&b.url, "globex-token").await);
    let globex_only = broker.tenants_file(&["acme", "globex"], &[bob]);
    command(
        &store,
        &dir,
        &[
            "tenants",
            "import",
            tenants_file(&dir, "three.toml", &globex_only)
                .to_str()
                .unwrap(),
        ],
    );
    for host in [&a, &b] {
        within_a_second("the revoked token refused", async || {
            !admitted(&host.url, "acme-token").await
        })
        .await;
    }
    command(
        &store,
        &dir,
        &[
            "tenants",
            "import",
            tenants_file(&dir, "four.toml", &both).to_str().unwrap(),
        ],
    );
    within_a_second("the token back", async || {
        admitted(&a.url, "acme-token").await
    })
    .await;

    // The operator disconnects Salesforce through host A: host B refuses the next call.
    let on_b = client(&b.url, "acme-token").await;
    assert_eq!(
        a.admin("/admin/tenants/acme/connections/crm-b/disconnect"),
        200
    );
    within_a_second("host B refuses", async || {
        read_account(&on_b).await.is_error == Some(true)
    })
    .await;
    let refused = read_account(&on_b).await;
    let text = serde_json::to_string(&refused).unwrap();
    assert!(text.contains("not-connected"), "{text}");
    assert_eq!(
        a.admin("/admin/tenants/acme/connections/crm-b/connect"),
        200
    );
    within_a_second("host B reconnected", async || {
        read_account(&on_b).await.is_error == Some(false)
    })
    .await;

    // A component swapped through host A's admin route is served and announced by host B;
    // one swapped from the command line reaches both the same way. Calls go on.
    let heard = on_b.service().0.clone();
    let v2 = dir.join("v2.wasm");
    std::fs::write(&v2, relabelled_plugin("fleet-v2")).unwrap();
    assert_eq!(
        a.admin_with("/admin/tenants/acme/component", Some(&v2)),
        200
    );
    let announced = async |count: usize| {
        let began = Instant::now();
        while heard.load(Ordering::SeqCst) < count {
            // Loading the new component takes a moment on each host.
            assert!(
                began.elapsed() < Duration::from_secs(60),
                "host B announced swap {count}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    announced(1).await;
    assert_eq!(read_account(&on_b).await.is_error, Some(false));
    let v3 = dir.join("v3.wasm");
    std::fs::write(&v3, relabelled_plugin("fleet-v3")).unwrap();
    let swapped = command(
        &store,
        &dir,
        &["tenants", "swap", "acme", v3.to_str().unwrap()],
    );
    assert_eq!(swapped["tenant"], "acme");
    announced(2).await;
    assert_eq!(read_account(&on_a).await.is_error, Some(false));
    assert_eq!(read_account(&on_b).await.is_error, Some(false));
    let _ = std::fs::remove_dir_all(&dir);
}
