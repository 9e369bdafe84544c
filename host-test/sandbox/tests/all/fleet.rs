//! Two hosts on one PostgreSQL database and one CRM (issue 23): any host serves any request.
//! Each host has its own store handle (pool and listener), audit trail and memory, as two
//! processes would; only the database and the sandbox CRM are shared.
//!
//! Needs `CRM_TEST_POSTGRES` (CI starts PostgreSQL 15 and sets it); without it each test
//! prints one line and does nothing. Each test makes its own database, so tests never meet.

use crate::fixtures::{ALL_SCOPES, output, plugin, runtime, tool_error};
use crate::mcp::answer;
use crm_host::audit::AuditEvent;
use crm_host::backend::BoxFuture;
use crm_host::egress::Crm;
use crm_host::pacing::{Pacer, PacingLimits, Window};
use crm_host::tenant_db::postgres::Migrate;
use crm_host::tenant_db::{DbLocation, PgStore};
use crm_host::{AuditLog, Backend, CallRequest, Host};
use crm_sandbox::SandboxCrm;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

const DEAL: &str = "357300";

/// A fresh database on the test server, or `None` (with one printed line) without one.
pub(crate) async fn fresh_database(test: &str) -> Option<String> {
    let Ok(server) = std::env::var("CRM_TEST_POSTGRES") else {
        eprintln!("{test}: skipped, CRM_TEST_POSTGRES is not set (CI runs it on PostgreSQL 15)");
        return None;
    };
    let (client, connection) = tokio_postgres::connect(&server, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("CRM_TEST_POSTGRES={server}: {e}"));
    tokio::spawn(connection);
    let name = format!(
        "fleet_{test}_{}_{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos() % 1000
    );
    client
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))
        .await
        .unwrap();
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    let mut url = url::Url::parse(&server).unwrap();
    url.set_path(&format!("/{name}"));
    Some(url.to_string())
}

/// One host of the fleet.
pub(crate) struct Member {
    pub(crate) host: Arc<Host>,
    pub(crate) audit: AuditLog,
}

/// Two hosts serving the sandbox tenant `acme` from the database at `url`, over `backend`.
pub(crate) fn two_hosts(
    url: &str,
    backend: Arc<dyn Backend>,
    settings: &[(&str, &str)],
) -> [Member; 2] {
    paced_hosts(url, backend, settings, None)
}

/// The same, each host pacing through the database with `pacing` when given.
pub(crate) fn paced_hosts(
    url: &str,
    backend: Arc<dyn Backend>,
    settings: &[(&str, &str)],
    pacing: Option<PacingLimits>,
) -> [Member; 2] {
    [0, 1].map(|i| {
        let store = PgStore::open(url, Migrate::Apply).unwrap();
        let audit = AuditLog::in_memory();
        let mut host = Host::new(runtime(), backend.clone(), audit.clone());
        if let Some(limits) = pacing {
            host = host.with_pacer(Pacer::new(store.clone(), limits));
        }
        let host = Arc::new(host);
        let mut spec = SandboxCrm::tenant_spec("acme");
        spec.settings = settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        spec.mappings = DbLocation::Postgres(store.clone());
        // Each host's own disk: only the database is shared.
        spec.results_dir = Some(crate::fixtures::temp_dir(&format!(
            "fleet-{}-{i}",
            url.rsplit('/').next().unwrap_or_default()
        )));
        host.add_tenant(spec, plugin()).unwrap();
        host.follow_store(&store);
        Member { host, audit }
    })
}

/// A call by ana of the sandbox tenant acme, with every scope the spec asks for.
pub(crate) fn request(tool: &str, input: Value) -> CallRequest {
    CallRequest {
        tenant_id: "acme".into(),
        user_id: "ana".into(),
        granted_scopes: ALL_SCOPES.iter().map(|s| s.to_string()).collect(),
        instance_url: Some(SandboxCrm::instance_url("acme")),
        tool: tool.into(),
        input: input.to_string(),
    }
}

/// Requests this host sent to the CRM (`METHOD path`), reads and writes.
fn sent(audit: &AuditLog) -> Vec<String> {
    audit
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AuditEvent::Request { method, path, .. } => Some(format!("{method} {path}")),
            _ => None,
        })
        .collect()
}

fn patches(audit: &AuditLog) -> usize {
    sent(audit)
        .iter()
        .filter(|r| r.starts_with("PATCH"))
        .count()
}

fn update(amount: &str) -> Value {
    json!({"object_type": "deals", "record_id": DEAL, "properties": {"amount": amount}})
}

async fn preview(host: &Host, amount: &str) -> Value {
    let mut input = update(amount);
    input["preview"] = json!(true);
    let out = output(host.call(request("crma_update_record", input)).await);
    out["preview"]["confirmation_token"].clone()
}

async fn apply(host: &Host, amount: &str, token: &Value) -> Result<String, crm_host::CallError> {
    let mut input = update(amount);
    input["confirmation_token"] = token.clone();
    host.call(request("crma_update_record", input)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_on_one_host_is_applied_on_the_other_and_a_raced_token_writes_once() {
    let Some(url) = fresh_database("preview").await else {
        return;
    };
    let sandbox = Arc::new(SandboxCrm::new());
    let [a, b] = two_hosts(&url, sandbox, &[("CRM_POLICY_CONFIRM_WRITES", "true")]);

    // Previewed on A, applied on B: B knows the token A signed.
    let token = preview(&a.host, "250000").await;
    let applied = output(apply(&b.host, "250000", &token).await);
    assert!(applied["change_id"].as_str().unwrap().starts_with("chg_"));
    assert_eq!((patches(&a.audit), patches(&b.audit)), (0, 1));
    // And A sees the change B journalled.
    let journal = a.host.mappings("acme").unwrap();
    let change = journal
        .change(applied["change_id"].as_str().unwrap())
        .unwrap()
        .expect("the change is in the shared journal");
    assert_eq!(change.tool, "crma_update_record");

    // One token redeemed on both hosts at once: exactly one write.
    let token = preview(&a.host, "260000").await;
    let (on_a, on_b) = tokio::join!(
        apply(&a.host, "260000", &token),
        apply(&b.host, "260000", &token)
    );
    let wins = [&on_a, &on_b].iter().filter(|r| r.is_ok()).count();
    assert_eq!(wins, 1, "a: {on_a:?}\nb: {on_b:?}");
    let loser = if on_a.is_ok() { on_b } else { on_a };
    let (kind, message) = tool_error(loser);
    assert_eq!(kind, "invalid-input");
    assert!(message.contains("already used"), "{message}");
    assert_eq!(
        patches(&a.audit) + patches(&b.audit),
        2,
        "one write per token"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disconnect_on_one_host_stops_the_other_within_a_second_with_nothing_sent() {
    let Some(url) = fresh_database("disconnect").await else {
        return;
    };
    let [a, b] = two_hosts(&url, Arc::new(SandboxCrm::new()), &[]);
    let read = || {
        request(
            "crma_get_record",
            json!({"object_type": "deals", "record_id": DEAL}),
        )
    };
    output(b.host.call(read()).await);

    let began = Instant::now();
    a.host.disconnect("acme", Crm::Hubspot).unwrap();
    while b.host.is_connected("acme", Crm::Hubspot).unwrap() {
        assert!(
            began.elapsed() < Duration::from_secs(1),
            "host B still connected a second after host A's disconnect"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let heard_after = began.elapsed();
    let before = sent(&b.audit).len();
    let (kind, _) = tool_error(b.host.call(read()).await);
    assert_eq!(kind, "not-connected");
    assert_eq!(
        sent(&b.audit).len(),
        before,
        "nothing sent after the disconnect"
    );
    eprintln!("host B heard host A's disconnect after {heard_after:?}");

    // Salesforce was not touched; reconnecting on A restores B too.
    assert!(b.host.is_connected("acme", Crm::Salesforce).unwrap());
    a.host
        .reconnect(
            "acme",
            Crm::Hubspot,
            SandboxCrm::tenant_spec("acme").credential,
        )
        .unwrap();
    let began = Instant::now();
    while !b.host.is_connected("acme", Crm::Hubspot).unwrap() {
        assert!(began.elapsed() < Duration::from_secs(1));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    output(b.host.call(read()).await);
}

/// The sandbox, holding back the last owners page (archived owners, read just before a sync
/// commits) until told, and saying when it got there.
struct HeldSync {
    sandbox: Arc<SandboxCrm>,
    reached: Arc<tokio::sync::Notify>,
    hold: Duration,
}

impl Backend for HeldSync {
    fn send(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> BoxFuture<Result<http::Response<bytes::Bytes>, wasmtime_wasi_http::Error>> {
        let held = request.uri().path().ends_with("/crm/v3/owners")
            && request
                .uri()
                .query()
                .unwrap_or_default()
                .contains("archived=true");
        let (reached, hold) = (self.reached.clone(), self.hold);
        let answer = self.sandbox.send(request);
        Box::pin(async move {
            if held {
                reached.notify_one();
                tokio::time::sleep(hold).await;
            }
            answer.await
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_stopped_mid_sync_leaves_no_partial_mappings_and_the_other_completes_it() {
    let Some(url) = fresh_database("sync").await else {
        return;
    };
    let reached = Arc::new(tokio::sync::Notify::new());
    let held = Arc::new(HeldSync {
        sandbox: Arc::new(SandboxCrm::new()),
        reached: reached.clone(),
        hold: Duration::from_secs(30),
    });
    let [a, b] = two_hosts(&url, held, &[]);
    let sync = || request("crma_sync_users", json!({}));

    // Host B dies while its sync reads the last page: its staged rows are written, the
    // mappings are not.
    let host_b = b.host.clone();
    let running = tokio::spawn(async move { host_b.call(sync()).await });
    reached.notified().await;
    let store = a.host.mappings("acme").unwrap();
    assert!(store.staged_rows().unwrap() > 0, "the sync had staged rows");
    running.abort();
    let _ = running.await;
    drop(b);
    for kind in ["user", "owner"] {
        assert!(store.list(kind).unwrap().is_empty(), "no {kind} mapping");
    }

    // Host A runs the same sync to the end (its own last page held only briefly).
    let quick = Arc::new(HeldSync {
        sandbox: Arc::new(SandboxCrm::new()),
        reached: Arc::new(tokio::sync::Notify::new()),
        hold: Duration::ZERO,
    });
    let [a2, _] = two_hosts(&url, quick, &[]);
    drop(a);
    let out = output(a2.host.call(sync()).await);
    assert!(out["created"].as_u64().unwrap() > 0, "{out}");
    let users = store.list("user").unwrap().len() + store.list("owner").unwrap().len();
    assert_eq!(users as u64, out["created"].as_u64().unwrap(), "{out}");
}

/// The sandbox, noting when each HubSpot request reaches it; optionally answering the first
/// one itself with `429` and `Retry-After: 1`.
struct Counting {
    sandbox: Arc<SandboxCrm>,
    arrivals: Arc<std::sync::Mutex<Vec<Instant>>>,
    refuse_first: Arc<std::sync::atomic::AtomicBool>,
    refused: Arc<tokio::sync::Notify>,
}

impl Counting {
    fn new(refuse_first: bool) -> Arc<Self> {
        Arc::new(Counting {
            sandbox: Arc::new(SandboxCrm::new()),
            arrivals: Arc::default(),
            refuse_first: Arc::new(refuse_first.into()),
            refused: Arc::default(),
        })
    }

    fn arrivals(&self) -> Vec<Instant> {
        self.arrivals.lock().unwrap().clone()
    }
}

impl Backend for Counting {
    fn send(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> BoxFuture<Result<http::Response<bytes::Bytes>, wasmtime_wasi_http::Error>> {
        if request.uri().path().contains("/hubspot/") {
            self.arrivals.lock().unwrap().push(Instant::now());
            if self
                .refuse_first
                .swap(false, std::sync::atomic::Ordering::SeqCst)
            {
                let refused = self.refused.clone();
                return Box::pin(async move {
                    refused.notify_one();
                    Ok(http::Response::builder()
                        .status(429)
                        .header("retry-after", "1")
                        .header("content-type", "application/json")
                        .body(bytes::Bytes::from_static(
                            br#"{"status":"error","category":"RATE_LIMITS","message":"slow down"}"#,
                        ))
                        .unwrap())
                });
            }
        }
        self.sandbox.send(request)
    }
}

/// The most arrivals in any span of `per`.
fn busiest(mut arrivals: Vec<Instant>, per: Duration) -> usize {
    arrivals.sort();
    let mut first = 0;
    let mut most = 0;
    for last in 0..arrivals.len() {
        while arrivals[last].duration_since(arrivals[first]) >= per {
            first += 1;
        }
        most = most.max(last - first + 1);
    }
    most
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_clients_on_each_of_two_hosts_never_exceed_the_accounts_limit() {
    let Some(url) = fresh_database("pace").await else {
        return;
    };
    let window = Window {
        requests: 20,
        per: Duration::from_secs(2),
    };
    let limits = PacingLimits {
        hubspot: window,
        max_wait: Duration::from_secs(60),
        ..PacingLimits::default()
    };
    let counting = Counting::new(false);
    let hosts = paced_hosts(&url, counting.clone(), &[], Some(limits));
    let until = Instant::now() + Duration::from_secs(5);
    let clients: Vec<_> = (0..16)
        .map(|i| {
            let host = hosts[i % 2].host.clone();
            tokio::spawn(async move {
                let mut done = 0;
                while Instant::now() < until {
                    let read = request(
                        "crma_get_record",
                        json!({"object_type": "deals", "record_id": DEAL}),
                    );
                    output(host.call(read).await);
                    done += 1;
                }
                done
            })
        })
        .collect();
    let mut calls = 0;
    for client in clients {
        calls += client.await.unwrap();
    }
    let arrivals = counting.arrivals();
    let most = busiest(arrivals.clone(), window.per);
    eprintln!(
        "{calls} calls from 16 clients on 2 hosts: {} HubSpot requests, at most {most} in any {:?}",
        arrivals.len(),
        window.per
    );
    assert!(
        most <= window.requests as usize,
        "{most} requests in one window"
    );
    assert!(
        arrivals.len() >= 2 * window.requests as usize,
        "the account's room is used: {} requests",
        arrivals.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_seen_by_one_host_holds_the_other() {
    let Some(url) = fresh_database("retry_after").await else {
        return;
    };
    let counting = Counting::new(true);
    let [a, b] = paced_hosts(&url, counting.clone(), &[], Some(PacingLimits::default()));
    let read = || {
        request(
            "crma_get_record",
            json!({"object_type": "deals", "record_id": DEAL}),
        )
    };
    let host_a = a.host.clone();
    let on_a = tokio::spawn(async move { host_a.call(read()).await });
    counting.refused.notified().await;
    let refused_at = Instant::now();
    tokio::time::sleep(Duration::from_millis(100)).await;
    output(b.host.call(read()).await);
    let after: Vec<_> = counting
        .arrivals()
        .into_iter()
        .filter(|t| *t > refused_at)
        .collect();
    let first = after.first().expect("host B's request arrived");
    assert!(
        first.duration_since(refused_at) >= Duration::from_millis(900),
        "host B sent {:?} after host A's 429 with Retry-After: 1",
        first.duration_since(refused_at)
    );
    let _ = on_a.await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_file_written_through_one_host_is_read_through_the_other() {
    let Some(url) = fresh_database("files").await else {
        return;
    };
    let sandbox = Arc::new(SandboxCrm::new());
    let seeded = sandbox
        .seed_hubspot_contacts("acme", 1_500, "Fleet Files Co")
        .unwrap();
    let [a, b] = two_hosts(&url, sandbox, &[]);
    let export = request(
        "crma_search_records",
        json!({"object_type": "contacts", "to_file": true, "properties": ["email"],
               "filter_groups": [{"filters": [{"property": "company", "operator": "EQ",
                                               "value": "Fleet Files Co"}]}]}),
    );
    let out = output(a.host.call(export).await);
    assert_eq!(out["record_count"], 1_500, "{out}");
    let name = out["file_path"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();

    let principal = crm_host::mcp::Principal {
        tenant_id: "acme".into(),
        user_id: "ana".into(),
        granted_scopes: vec![],
        instance_url: None,
        authority: crm_host::mcp::Authority::Process,
    };
    let listed = crm_host::mcp::files::list(&b.host, &principal).unwrap();
    assert!(listed.iter().any(|r| r.name == name), "host B lists {name}");
    let mut ids = Vec::new();
    let mut offset = 0;
    loop {
        let page = crm_host::mcp::files::read_tool_call(
            &b.host,
            &principal,
            &json!({"file": name, "offset": offset, "limit": 1000}),
        )
        .unwrap();
        let page = answer(&page);
        for record in page["records"].as_array().unwrap() {
            ids.push(record["id"].as_str().unwrap().parse::<u64>().unwrap());
        }
        if page["done"] == true {
            break;
        }
        offset = page["next_offset"].as_u64().unwrap();
    }
    assert_eq!(
        ids, seeded,
        "host B reads every record host A wrote, in order"
    );
}
