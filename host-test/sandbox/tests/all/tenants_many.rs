//! A host listing more tenants than its open-files limit could hold stores for (issue 43): it
//! used to open every tenant's SQLite store at start and keep it open (three descriptors each),
//! so past about a third of the limit it did not start at all. Stores now open at a tenant's
//! first call and the least recently used idle ones close past the budget.

use crate::serve_procs::{BINARY, Broker, Serving, client, read_account};
use crm_host::mcp::tenants::token_hash;
use serde_json::Value;

/// Tenants listed: 300 stores of three files each would need 900 descriptors.
const TENANTS: usize = 300;
/// The server's open-files limit, as a small container's might be.
const OPEN_FILES: usize = 256;

/// `TENANTS` broker tenants, each reading acme's sandbox account, and one token each: a JSON
/// tenants file, as a platform's own program would write one this large.
fn tenants_file(broker: &Broker) -> String {
    let tenants: Vec<Value> = (0..TENANTS)
        .map(|i| {
            serde_json::json!({
                "id": format!("t{i:03}"),
                "proxy_base": broker.url,
                "credential_env": "ACME_CREDENTIAL",
                "instance_url": crm_sandbox::SandboxCrm::instance_url("acme"),
            })
        })
        .collect();
    let tokens: Vec<Value> = (0..TENANTS)
        .map(|i| {
            serde_json::json!({
                "sha256": token_hash(&format!("token-{i}")),
                "tenant": format!("t{i:03}"),
                "user": format!("u{i}"),
            })
        })
        .collect();
    serde_json::json!({"tenants": tenants, "tokens": tokens}).to_string()
}

/// `/readyz` once the component's code is there (503 while it compiles).
async fn compiled(host: &Serving) -> Value {
    for _ in 0..1200 {
        let (status, body) = host.get("/readyz", None).await;
        let ready: Value = serde_json::from_str(&body).unwrap();
        if status != 503 || !ready["why"].as_str().unwrap_or("").contains("compiled") {
            return ready;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the component was not compiled within two minutes");
}

fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_with_more_tenants_than_open_files_serves_each_of_them_one_after_another() {
    let dir = crate::fixtures::temp_dir("tenants-many");
    std::fs::create_dir_all(&dir).unwrap();
    let broker = Broker::start(&dir);
    let tenants = dir.join("tenants.json");
    std::fs::write(&tenants, tenants_file(&broker)).unwrap();
    let mut command = std::process::Command::new("sh");
    command
        .arg("-c")
        .arg(format!("ulimit -n {OPEN_FILES} && exec \"$0\" \"$@\""))
        .arg(BINARY)
        .env("XDG_CACHE_HOME", crate::fixtures::cache_home())
        .env("ACME_CREDENTIAL", broker.credential("acme"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--ca-cert")
        .arg(&broker.cert)
        .args(["serve", "--listen", "127.0.0.1:0", "--tenants"])
        .arg(&tenants);
    let host = Serving::spawn(command);
    let ready = compiled(&host).await;
    assert_eq!(ready["tenants"], TENANTS, "{ready}");
    assert_eq!(ready["loaded"], 0, "listing opens no store: {ready}");
    let limit = ready["open_stores_limit"].as_u64().unwrap() as usize;
    assert!(limit * 3 < OPEN_FILES, "{ready}");

    // Every tenant, one after another, then the first ten again (their stores closed since).
    for i in (0..TENANTS).chain(0..10) {
        let tenant = client(&host.url, &format!("token-{i}")).await;
        let answer = read_account(&tenant).await;
        assert_ne!(answer.is_error, Some(true), "t{i:03}: {answer:?}");
        let text = serde_json::to_string(&answer.content).unwrap();
        assert!(text.contains("Acme"), "t{i:03}: {text}");
        tenant.cancel().await.unwrap();
        assert!(
            open_files(host.pid()) < OPEN_FILES,
            "t{i:03}: descriptors near the limit"
        );
    }
    let (status, ready) = host.get("/readyz", None).await;
    let ready: Value = serde_json::from_str(&ready).unwrap();
    assert_eq!(status, 200, "{ready}");
    assert_eq!(ready["status"], "ok", "{ready}");
    assert_eq!(ready["loaded"], TENANTS, "{ready}");
    assert!(
        ready["open_stores"].as_u64().unwrap() as usize <= limit,
        "{ready}"
    );
    // Each tenant's store is its own file, made at its first call.
    let stores = (0..TENANTS)
        .filter(|i| {
            dir.join("data")
                .join(format!("t{i:03}"))
                .read_dir()
                .is_ok_and(|mut d| d.any(|e| e.unwrap().file_name() == "mappings.sqlite"))
        })
        .count();
    assert_eq!(stores, TENANTS);
    drop(host);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A listed tenant whose store cannot be opened is found out at its first call: refused with
/// nothing sent, out of service and named in readiness (the host stays ready for the others),
/// and served once the store can be opened, at a call after the retry wait.
#[tokio::test]
async fn a_store_that_cannot_be_opened_takes_its_tenant_out_of_service_at_its_first_call() {
    use crate::fixtures::{fixture, get_account, record_stub, sf_tenant};
    use crm_host::CallError;
    use crm_host::tenant_db::DbLocation;
    let dir = crate::fixtures::temp_dir("tenants-broken-store");
    std::fs::create_dir_all(&dir).unwrap();
    // A file where the store's folder should be: nothing can be made under it.
    let blocker = dir.join("t3");
    std::fs::write(&blocker, "not a folder").unwrap();
    let fixture = fixture(record_stub(std::time::Duration::ZERO));
    let host = &fixture.host;
    let mut spec = sf_tenant("t3", "https://broker-three.example.com", "cred-three", &[]);
    spec.mappings = DbLocation::File(blocker.join("mappings.sqlite"));
    host.list_tenant(spec, host.plugin_of("t1").unwrap())
        .expect("listing opens nothing, so it cannot fail on the store");
    let ready = host.readiness().unwrap();
    assert_eq!(
        ready.loaded, 2,
        "t1 and t2, added with their stores open; t3 not"
    );
    assert!(!ready.is_degraded());

    let refused = host.call(get_account("t3")).await.unwrap_err();
    assert!(
        matches!(&refused, CallError::OutOfService { tenant, why }
            if tenant == "t3" && why.contains("mapping store")),
        "{refused:?}"
    );
    assert!(fixture.stub.requests().is_empty(), "nothing was sent");
    let ready = host.readiness().unwrap();
    assert!(ready.is_degraded());
    assert!(
        ready.out_of_service["t3"].contains("mapping store"),
        "{ready:?}"
    );
    host.call(get_account("t1")).await.unwrap();

    // Fixed on disk: still refused within the retry wait, served after it.
    std::fs::remove_file(&blocker).unwrap();
    assert!(host.call(get_account("t3")).await.is_err());
    tokio::time::sleep(std::time::Duration::from_millis(3100)).await;
    host.call(get_account("t3")).await.unwrap();
    assert!(!host.readiness().unwrap().is_degraded());
    let _ = std::fs::remove_dir_all(&dir);
}
