//! The fleet's database going away mid-run (issue 23): a host reaches PostgreSQL through a
//! loopback proxy the test cuts and restores, as a database restart or a network partition
//! would. Calls that need the store fail typed with nothing sent; calls that do not go on;
//! readiness says so; when the database is back the host carries on by itself.
//!
//! Needs `CRM_TEST_POSTGRES`; without it the test prints one line and does nothing.

use crate::fixtures::{output, plugin, runtime, tool_error};
use crate::fleet::{fresh_database, request};
use crm_host::audit::AuditEvent;
use crm_host::tenant_db::postgres::Migrate;
use crm_host::tenant_db::{DbLocation, PgStore};
use crm_host::{AuditLog, Host};
use crm_sandbox::SandboxCrm;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A TCP proxy to the database that can be cut (every connection dropped, new ones refused)
/// and restored.
struct Cuttable {
    addr: std::net::SocketAddr,
    up: Arc<AtomicBool>,
    links: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Cuttable {
    async fn to(target: String) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let up = Arc::new(AtomicBool::new(true));
        let links: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>> = Arc::default();
        let (gate, tasks) = (up.clone(), links.clone());
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if !gate.load(Ordering::SeqCst) {
                    continue; // dropped: refused
                }
                let target = target.clone();
                tasks.lock().unwrap().push(tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                }));
            }
        });
        Cuttable { addr, up, links }
    }

    fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        for link in self.links.lock().unwrap().drain(..) {
            link.abort();
        }
    }

    fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

fn writes(audit: &AuditLog) -> usize {
    audit
        .events()
        .iter()
        .filter(|e| matches!(e, AuditEvent::Request { method, .. } if method != "GET"))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_database_gone_store_calls_fail_typed_nothing_is_sent_and_the_host_recovers() {
    let Some(url) = fresh_database("faults").await else {
        return;
    };
    let parsed = url::Url::parse(&url).unwrap();
    let proxy = Cuttable::to(format!(
        "{}:{}",
        parsed.host_str().unwrap(),
        parsed.port().unwrap()
    ))
    .await;
    let mut through = parsed.clone();
    through.set_port(Some(proxy.addr.port())).unwrap();
    let store = PgStore::open(through.as_str(), Migrate::Apply).unwrap();
    let audit = AuditLog::in_memory();
    let host = Arc::new(Host::new(
        runtime(),
        Arc::new(SandboxCrm::new()),
        audit.clone(),
    ));
    let mut spec = SandboxCrm::tenant_spec("acme");
    spec.mappings = DbLocation::Postgres(store.clone());
    host.add_tenant(spec, plugin()).unwrap();
    host.follow_store(&store);
    let update = |amount: &str| {
        request(
            "crma_update_record",
            json!({"object_type": "deals", "record_id": "357300", "properties": {"amount": amount}}),
        )
    };
    let read = || {
        request(
            "crmb_get_record",
            json!({"object": "Account", "record_id": "0015gA000000001ABA", "fields": ["Name"]}),
        )
    };
    output(host.call(update("1000")).await);
    assert_eq!(writes(&audit), 1);
    assert!(host.readiness().is_ok());

    proxy.cut();
    // A write needs its journal entry first: refused, typed, and not sent.
    let began = Instant::now();
    let (kind, message) = tool_error(host.call(update("2000")).await);
    eprintln!(
        "the write was refused after {:?}: {kind}: {message}",
        began.elapsed()
    );
    assert_eq!(kind, "unavailable", "{message}");
    assert!(message.contains("try again"), "{message}");
    assert_eq!(writes(&audit), 1, "no write without its journal entry");
    // A sync cannot stage or commit: it fails and no mapping is written.
    let (kind, _) = tool_error(host.call(request("crma_sync_users", json!({}))).await);
    assert_eq!(kind, "unavailable");
    // A read needs no store and goes on.
    output(host.call(read()).await);
    let not_ready = host.readiness().unwrap_err();
    assert!(not_ready.contains("store"), "{not_ready}");

    proxy.restore();
    // The pool and the listener reconnect by themselves.
    let began = Instant::now();
    loop {
        match host.call(update("3000")).await {
            Ok(_) => break,
            Err(e) => {
                assert!(
                    began.elapsed() < Duration::from_secs(15),
                    "not recovered: {e}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    eprintln!(
        "recovered {:?} after the database came back",
        began.elapsed()
    );
    assert!(host.readiness().is_ok());
    assert_eq!(writes(&audit), 2);
    let journal = host.mappings("acme").unwrap();
    let settled = journal.list_changes(None, None, None, 10).unwrap();
    assert_eq!(
        settled.len(),
        2,
        "one entry per write sent, none for the refused one"
    );
    let sync = output(host.call(request("crma_sync_users", json!({}))).await);
    assert!(sync["created"].as_u64().unwrap() > 0, "{sync}");
}
