//! The registry applied tenant by tenant (issue 36): a tenant one host cannot build is out of
//! service on that host alone, named in `/readyz`, `/metrics` and `crm-host tenants status`,
//! and never stops another change (a revoked token above all); the operator's token rotates
//! with the registry; `tenants import` compiles nothing.
//!
//! The fleet test needs `CRM_TEST_POSTGRES`; without it, it prints one line and does nothing.

use crate::fixtures::{fixture, get_account, record_stub, sf_tenant, temp_dir};
use crate::fleet::fresh_database;
use crate::serve_procs::{
    Broker, Listener, Serving, admitted, client, command, read_account, tenants_file, tool,
    within_a_second,
};
use crm_host::CallError;
use crm_host::audit::AuditEvent;
use rmcp::RoleClient;
use rmcp::service::RunningService;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

#[tokio::test]
async fn a_tenant_out_of_service_is_refused_with_nothing_sent_until_it_is_added_again() {
    let fixture = fixture(record_stub(Duration::ZERO));
    let host = &fixture.host;
    let why = "T2_CREDENTIAL is not set; set it on every host";
    host.take_out_of_service("t2", why);

    let refused = host.call(get_account("t2")).await.unwrap_err();
    assert!(
        matches!(&refused, CallError::OutOfService { tenant, .. } if tenant == "t2"),
        "{refused:?}"
    );
    assert_eq!(
        refused.to_string(),
        format!("tenant t2 is out of service on this host: {why}")
    );
    assert!(fixture.stub.requests().is_empty(), "nothing was sent");
    let audited = fixture.audit.events();
    assert!(
        audited.iter().any(|e| matches!(e,
            AuditEvent::ToolCall { tenant, outcome, .. } if tenant == "t2" && outcome == "out-of-service")),
        "{audited:?}"
    );
    // The other tenant is served; the host is ready, degraded, and names the broken one.
    host.call(get_account("t1")).await.unwrap();
    let ready = host.readiness().unwrap();
    assert!(ready.is_degraded());
    assert_eq!(ready.tenants, 1);
    assert_eq!(ready.out_of_service["t2"], why);

    // Built again, it is back.
    let plugin = host.plugin_of("t1").unwrap();
    host.add_tenant(
        sf_tenant("t2", "https://broker-two.example.com", "cred-two", &[]),
        plugin,
    )
    .unwrap();
    host.call(get_account("t2")).await.unwrap();
    assert!(!host.readiness().unwrap().is_degraded());

    // Out of service, then no longer listed: unknown, like any tenant never listed.
    host.take_out_of_service("t2", why);
    host.remove_tenant("t2");
    let gone = host.call(get_account("t2")).await.unwrap_err();
    assert!(matches!(gone, CallError::UnknownTenant(_)), "{gone:?}");
    assert!(host.readiness().unwrap().out_of_service.is_empty());

    // With no tenant in service the host is not ready, and says which and why.
    host.take_out_of_service("t1", "T1_CREDENTIAL is not set; set it on every host");
    let not_ready = host.readiness().unwrap_err();
    assert!(
        not_ready.contains("tenant t1 is out of service"),
        "{not_ready}"
    );
}

/// One of globex's Salesforce accounts, read by a client of globex's.
async fn read_globex_account(
    client: &RunningService<RoleClient, Listener>,
) -> rmcp::model::CallToolResult {
    let account =
        json!({"object": "Account", "record_id": "0017kB200000001ABA", "fields": ["Name"]});
    tool(client, "crmb_get_record", account).await
}

/// `/readyz` of a host, as JSON, with its status, once its component's code is there (503
/// "still being compiled" before: it is taken from the cache on the compile thread).
async fn readyz(host: &Serving) -> (u16, Value) {
    let began = std::time::Instant::now();
    let (status, body) = loop {
        let (status, body) = host.get("/readyz", None).await;
        if !(status == 503 && body.contains("still being compiled"))
            || began.elapsed() > std::time::Duration::from_secs(60)
        {
            break (status, body);
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    (status, serde_json::from_str(&body).unwrap())
}

/// The fleet as `crm-host tenants status` reports it: the host listening at `url`'s entry.
fn status_of(store: &str, dir: &Path, url: &str) -> Value {
    let port = url::Url::parse(url).unwrap().port().unwrap();
    let status = command(store, dir, &["tenants", "status"]);
    status["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| {
            h["host_id"]
                .as_str()
                .unwrap()
                .ends_with(&format!(":{port}"))
        })
        .cloned()
        .unwrap_or_else(|| panic!("no host on port {port} in {status}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_one_host_cannot_build_blocks_no_revocation_and_the_operator_token_rotates() {
    let Some(store) = fresh_database("registry").await else {
        return;
    };
    let dir = temp_dir("fleet-registry");
    std::fs::create_dir_all(&dir).unwrap();
    let broker = Broker::start(&dir);
    let alice = ("acme-token", "acme", "alice");
    let carol = ("acme-carol-token", "acme", "carol");
    let bob = ("globex-token", "globex", "bob");
    // `--component` names no file: an import that compiled the component would fail.
    let import = |name: &str, text: &str| {
        let path = tenants_file(&dir, name, text);
        let args = [
            "--component",
            "/nonexistent/crm-plugin.wasm",
            "tenants",
            "import",
        ];
        let imported = command(
            &store,
            &dir,
            &[&args[..], &[path.to_str().unwrap()]].concat(),
        );
        imported["registry_version"].as_i64().unwrap()
    };
    let registry = |globex_var: &str, tokens: &[(&str, &str, &str)], operator: Option<&str>| {
        broker.tenants_file_with(
            &[("acme", "ACME_CREDENTIAL"), ("globex", globex_var)],
            tokens,
            operator,
        )
    };
    assert_eq!(
        import(
            "v1.toml",
            &registry(
                "GLOBEX_CREDENTIAL",
                &[alice, carol, bob],
                Some("operator-token")
            )
        ),
        1
    );

    // Host A has every variable a version below names; host B lacks GLOBEX_NEW_CREDENTIAL.
    let (acme, globex) = (broker.credential("acme"), broker.credential("globex"));
    let env_a = [
        ("ACME_CREDENTIAL", acme),
        ("GLOBEX_CREDENTIAL", globex),
        ("GLOBEX_NEW_CREDENTIAL", globex),
    ];
    let env_b = [("ACME_CREDENTIAL", acme), ("GLOBEX_CREDENTIAL", globex)];
    // Started side by side: each compiles the component.
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| Serving::start_with(&store, &dir, "host-a", &broker, &env_a));
        let b = s.spawn(|| Serving::start_with(&store, &dir, "host-b", &broker, &env_b));
        (a.join().unwrap(), b.join().unwrap())
    });
    let bob_on_b = client(&b.url, "globex-token").await;
    let read = read_globex_account(&bob_on_b).await;
    assert_eq!(read.is_error, Some(false), "{read:?}");
    let (status, ready) = readyz(&b).await;
    assert_eq!(
        (status, &ready["status"]),
        (200, &Value::from("ok")),
        "{ready}"
    );

    // Version 2 moves globex's credential to a variable host B lacks, and revokes carol.
    assert_eq!(
        import(
            "v2.toml",
            &registry(
                "GLOBEX_NEW_CREDENTIAL",
                &[alice, bob],
                Some("operator-token")
            )
        ),
        2
    );
    for (name, host) in [("A", &a), ("B", &b)] {
        let took = within_a_second(
            &format!("carol's revoked token refused on {name}"),
            async || !admitted(&host.url, "acme-carol-token").await,
        )
        .await;
        eprintln!("host {name} refused the revoked token after {took:?}");
    }
    let took = within_a_second("host B's /readyz names globex", async || {
        readyz(&b).await.1["status"] == "degraded"
    })
    .await;
    eprintln!("host B's /readyz said degraded after {took:?}");
    let (status, ready) = readyz(&b).await;
    assert_eq!(
        status, 200,
        "one broken tenant keeps the host in the load balancer"
    );
    assert_eq!(ready["out_of_service"][0]["tenant"], "globex", "{ready}");
    let why = ready["out_of_service"][0]["why"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        why.starts_with("GLOBEX_NEW_CREDENTIAL is not set; set it on every host"),
        "{why}"
    );
    assert_eq!(readyz(&a).await.1["status"], "ok");

    // On host B globex's calls are refused, saying what to fix; acme's go on; host A serves
    // globex on its new credential.
    let refused = read_globex_account(&bob_on_b).await;
    assert_eq!(refused.is_error, Some(true));
    let text: Value = serde_json::from_str(&refused.content[0].as_text().unwrap().text).unwrap();
    assert_eq!(text["error"]["kind"], "out-of-service", "{text}");
    assert_eq!(
        text["error"]["message"],
        format!("tenant globex is out of service on this host: {why}")
    );
    let alice_on_b = client(&b.url, "acme-token").await;
    assert_eq!(read_account(&alice_on_b).await.is_error, Some(false));
    let bob_on_a = client(&a.url, "globex-token").await;
    assert_eq!(read_globex_account(&bob_on_a).await.is_error, Some(false));

    // The metrics and the fleet's status say the same.
    let (_, metrics) = b.get("/metrics", Some("operator-token")).await;
    for line in [
        "crm_host_tenants_out_of_service 1",
        "crm_host_registry_version 2",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    }
    let (_, metrics) = a.get("/metrics", Some("operator-token")).await;
    assert!(
        metrics
            .lines()
            .any(|l| l == "crm_host_tenants_out_of_service 0")
    );
    // Each host reports right after it applies a version.
    within_a_second("host B's report", async || {
        status_of(&store, &dir, &b.url)["registry_version"] == 2
    })
    .await;
    let on_b = status_of(&store, &dir, &b.url);
    assert_eq!(on_b["out_of_service"][0]["tenant"], "globex", "{on_b}");
    assert_eq!(on_b["out_of_service"][0]["reason"], why.as_str());
    assert!(on_b["seen_seconds_ago"].as_f64().unwrap() < 10.0, "{on_b}");
    within_a_second("host A's report", async || {
        status_of(&store, &dir, &a.url)["registry_version"] == 2
    })
    .await;
    let on_a = status_of(&store, &dir, &a.url);
    assert_eq!(on_a["out_of_service"], Value::Array(vec![]), "{on_a}");

    // Version 3 rotates the operator's token: the old one stops and the new one works on both
    // hosts, without a restart.
    import(
        "v3.toml",
        &registry(
            "GLOBEX_NEW_CREDENTIAL",
            &[alice, bob],
            Some("operator-token-2"),
        ),
    );
    for (name, host) in [("A", &a), ("B", &b)] {
        let took = within_a_second(
            &format!("the old operator token refused on {name}"),
            async || host.get("/metrics", Some("operator-token")).await.0 == 401,
        )
        .await;
        eprintln!("host {name} took the rotated operator token after {took:?}");
        assert_eq!(host.get("/metrics", Some("operator-token-2")).await.0, 200);
    }
    // Without [admin] the operator's routes are off.
    import(
        "v4.toml",
        &registry("GLOBEX_NEW_CREDENTIAL", &[alice, bob], None),
    );
    for (name, host) in [("A", &a), ("B", &b)] {
        within_a_second(&format!("no operator on {name}"), async || {
            host.get("/metrics", Some("operator-token-2")).await.0 == 404
        })
        .await;
    }

    // Once a version host B can build comes, globex is back there.
    import(
        "v5.toml",
        &registry("GLOBEX_CREDENTIAL", &[alice, bob], Some("operator-token-2")),
    );
    within_a_second("globex back on host B", async || {
        read_globex_account(&bob_on_b).await.is_error == Some(false)
    })
    .await;
    assert_eq!(readyz(&b).await.1["status"], "ok");
    within_a_second("host B's report of version 5", async || {
        status_of(&store, &dir, &b.url)["registry_version"] == 5
    })
    .await;
    let on_b = status_of(&store, &dir, &b.url);
    assert_eq!(on_b["out_of_service"], Value::Array(vec![]), "{on_b}");
    drop((a, b));
    let _ = std::fs::remove_dir_all(&dir);
}
