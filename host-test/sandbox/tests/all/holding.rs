//! The holding proxy (`crm_sandbox::holding_proxy`) in front of the sandbox broker: a host
//! reaches the CRM through it over plain HTTP on loopback, and a create held at the proxy while
//! its host is killed with SIGKILL is applied by the CRM when the proxy releases it (what the
//! fleet's chaos tests build on).

use crate::fixtures::{cache_home, temp_dir};
use crate::serve_procs::Broker;
use crm_sandbox::holding_proxy::{Fate, HoldingProxy, RequestHead};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

/// A guard against a hang when the behaviour is broken; nothing depends on how long it is.
const HANG: Duration = Duration::from_secs(120);

/// `crm-sandbox call <tool> <input>` as tenant acme, through `proxy`.
fn call(
    dir: &Path,
    broker: &Broker,
    proxy: &HoldingProxy,
    tool: &str,
    input: Value,
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_crm-sandbox"));
    command
        .env("XDG_CACHE_HOME", cache_home())
        .env(
            "CRM_PROXY_CREDENTIAL",
            broker.credentials["acme"].as_str().unwrap(),
        )
        .arg("--proxy-base")
        .arg(proxy.url())
        .arg("--data-dir")
        .arg(dir.join("data"))
        .args(["call", tool, &input.to_string()])
        .kill_on_drop(true);
    command
}

async fn answer(mut command: tokio::process::Command) -> Value {
    let out = tokio::time::timeout(HANG, command.output())
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_held_while_its_host_is_killed_is_applied_when_released() {
    let dir = temp_dir("holding-proxy");
    std::fs::create_dir_all(&dir).unwrap();
    let broker = Broker::start(&dir);
    let proxy = HoldingProxy::to_https(&broker.url, &broker.cert)
        .await
        .unwrap();
    proxy.hold(RequestHead::is_create);

    let read = json!({"object": "Account", "record_id": "0015gA000000001ABA", "fields": ["Name"]});
    let record = answer(call(&dir, &broker, &proxy, "crmb_get_record", read)).await;
    assert!(
        record["record"]["Name"].is_string(),
        "a read passes: {record}"
    );

    let create = json!({"object": "Account", "fields": {"Name": "Orphaned Create Co"}});
    let mut host = call(&dir, &broker, &proxy, "crmb_create_record", create)
        .spawn()
        .unwrap();
    let held = tokio::time::timeout(HANG, proxy.wait_held(1))
        .await
        .unwrap()
        .remove(0);
    assert!(held.head.path.ends_with("/sobjects/Account"), "{held:?}");

    host.kill().await.unwrap(); // SIGKILL: the host never hears of its create again
    let gone = tokio::time::timeout(HANG, proxy.wait_until(held.id, |s| s.client_gone))
        .await
        .unwrap();
    assert_eq!(gone.fate, Fate::Held);
    assert!(proxy.release(held.id));
    let settled = tokio::time::timeout(HANG, proxy.settled(held.id))
        .await
        .unwrap();
    assert_eq!(settled.fate, Fate::Delivered { status: 201 });

    let query = json!({"query": "SELECT Id, Name FROM Account WHERE Name = 'Orphaned Create Co'"});
    let found = answer(call(&dir, &broker, &proxy, "crmb_run_soql_query", query)).await;
    let rows = found["records"].as_array().expect("rows");
    assert_eq!(
        rows.len(),
        1,
        "the CRM applied the orphaned create: {found}"
    );
    assert_eq!(rows[0]["Name"], "Orphaned Create Co");
    let creates = proxy
        .requests()
        .into_iter()
        .filter(|s| s.head.is_create())
        .count();
    assert_eq!(creates, 1, "sent once: {:?}", proxy.requests());
    let _ = std::fs::remove_dir_all(&dir);
}
