//! `cargo bench -p crm-sandbox --bench plugin -- fleet`: what the fleet's PostgreSQL store
//! costs. Needs `CRM_TEST_POSTGRES` (a server the bench may create a database on); without it
//! it prints one line and measures nothing.
//!
//! - A read and a journalled write (journalled before it is sent, settled after), one at a
//!   time, on a host with SQLite in memory and on one with PostgreSQL: p50/p99, and the
//!   journal's own two statements alone.
//! - Reads and writes with 8 concurrent clients on one host, then split over two hosts on one
//!   database: calls/s, p50/p99 (two hosts in this one process share its two cores: the figure
//!   shows the database is not what limits them).

use crm_host::tenant_db::journal::{CallIdentity, Kind, NewChange, Status};
use crm_host::tenant_db::postgres::Migrate;
use crm_host::tenant_db::{DbLocation, PgStore, TenantDb};
use crm_host::{AuditLog, CallRequest, Host, HostLimits, PluginVersion, Runtime};
use crm_sandbox::SandboxCrm;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SEQUENTIAL: usize = 500;
const CLIENTS: usize = 8;
const RUN: Duration = Duration::from_secs(5);

fn write(i: usize) -> CallRequest {
    CallRequest {
        tenant_id: "acme".into(),
        user_id: "bench".into(),
        granted_scopes: crm_plugin::crma::REQUIRED_SCOPES
            .iter()
            .map(|s| s.to_string())
            .collect(),
        instance_url: None,
        tool: "crma_update_record".into(),
        input: json!({"object_type": "deals", "record_id": "357300",
                      "properties": {"amount": (1000 + i).to_string()}})
        .to_string(),
    }
}

fn read(_: usize) -> CallRequest {
    CallRequest {
        tool: "crma_get_record".into(),
        input: json!({"object_type": "deals", "record_id": "357300", "properties": ["amount"]})
            .to_string(),
        ..write(0)
    }
}

/// A call of the bench, the `i`th.
type MakeCall = fn(usize) -> CallRequest;

fn host(
    runtime: &Arc<Runtime>,
    plugin: &Arc<PluginVersion>,
    sandbox: &Arc<SandboxCrm>,
    mappings: DbLocation,
) -> Arc<Host> {
    let host = Host::new(runtime.clone(), sandbox.clone(), AuditLog::discard());
    let mut spec = SandboxCrm::tenant_spec("acme");
    spec.mappings = mappings;
    host.add_tenant(spec, plugin.clone()).unwrap();
    Arc::new(host)
}

fn percentiles(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    (at(0.50), at(0.99))
}

async fn sequential(host: &Host, make: MakeCall) -> (Duration, Duration) {
    let mut times = Vec::with_capacity(SEQUENTIAL);
    for i in 0..SEQUENTIAL {
        let started = Instant::now();
        host.call(make(i)).await.expect("the call succeeds");
        times.push(started.elapsed());
    }
    percentiles(times)
}

/// `CLIENTS` clients, spread over `hosts`, writing for `RUN`: calls/s, p50, p99.
async fn concurrent(hosts: &[Arc<Host>], make: MakeCall) -> (f64, Duration, Duration) {
    let until = Instant::now() + RUN;
    let started = Instant::now();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let host = hosts[c % hosts.len()].clone();
            tokio::spawn(async move {
                let mut times = Vec::new();
                let mut i = c * 1_000_000;
                while Instant::now() < until {
                    let began = Instant::now();
                    host.call(make(i)).await.expect("the call succeeds");
                    times.push(began.elapsed());
                    i += 1;
                }
                times
            })
        })
        .collect();
    let mut all = Vec::new();
    for client in clients {
        all.extend(client.await.unwrap());
    }
    let rate = all.len() as f64 / started.elapsed().as_secs_f64();
    let (p50, p99) = percentiles(all);
    (rate, p50, p99)
}

pub async fn figures(wasm: &[u8]) {
    let Ok(server) = std::env::var("CRM_TEST_POSTGRES") else {
        println!("fleet: skipped, CRM_TEST_POSTGRES is not set (a postgres:// server URL)");
        return;
    };
    let database = format!("bench_fleet_{}", std::process::id());
    let (admin, connection) = tokio_postgres::connect(&server, tokio_postgres::NoTls)
        .await
        .expect("CRM_TEST_POSTGRES answers");
    tokio::spawn(connection);
    admin
        .batch_execute(&format!("CREATE DATABASE {database}"))
        .await
        .unwrap();
    let mut url = url::Url::parse(&server).unwrap();
    url.set_path(&format!("/{database}"));

    let runtime = Arc::new(Runtime::new(HostLimits::default()).unwrap());
    let plugin = runtime.load(wasm).unwrap();
    let sandbox = Arc::new(SandboxCrm::new());
    let stores = [0, 1].map(|_| PgStore::open(url.as_str(), Migrate::Apply).unwrap());
    let on_sqlite = host(&runtime, &plugin, &sandbox, DbLocation::Memory);
    let on_postgres = [0, 1].map(|i| {
        host(
            &runtime,
            &plugin,
            &sandbox,
            DbLocation::Postgres(stores[i].clone()),
        )
    });
    // Warm both (compiled code, pools, prepared statements).
    sequential(&on_sqlite, write).await;
    sequential(&on_postgres[0], write).await;

    for (what, make) in [("read", read as MakeCall), ("journalled write", write)] {
        let (sqlite_p50, sqlite_p99) = sequential(&on_sqlite, make).await;
        let (pg_p50, pg_p99) = sequential(&on_postgres[0], make).await;
        println!(
            "fleet: a {what}, {SEQUENTIAL} in a row: SQLite (memory) p50 {sqlite_p50:?} p99 \
             {sqlite_p99:?}; PostgreSQL p50 {pg_p50:?} p99 {pg_p99:?}; the store adds {:?} at p50",
            pg_p50.saturating_sub(sqlite_p50)
        );
    }
    let db = TenantDb::open("acme", &DbLocation::Postgres(stores[0].clone())).unwrap();
    let who = CallIdentity {
        user_id: "bench",
        tool: "crma_update_record",
        call_id: "bench",
    };
    let change = NewChange {
        crm: "hubspot",
        kind: Kind::Update,
        object: "deals",
        record_id: Some("357300"),
        old_values: "{}",
        new_values: "{}",
        reverts: None,
        lease_until_ms: i64::MAX,
    };
    let times: Vec<Duration> = (0..SEQUENTIAL)
        .map(|_| {
            let started = Instant::now();
            let id = db.journal_change(&who, &change).unwrap();
            db.settle_change(&who, &id, Status::Applied, None).unwrap();
            started.elapsed()
        })
        .collect();
    let (p50, p99) = percentiles(times);
    println!("fleet: journal entry + settle on PostgreSQL (loopback): p50 {p50:?} p99 {p99:?}");

    for (what, make) in [("reads", read as MakeCall), ("journalled writes", write)] {
        let (rate, p50, p99) = concurrent(&on_postgres[..1], make).await;
        println!(
            "fleet: {what}, one host, {CLIENTS} clients for {RUN:?}: {rate:.0} calls/s, p50 \
             {p50:?} p99 {p99:?}"
        );
        let (rate, p50, p99) = concurrent(&on_postgres, make).await;
        println!(
            "fleet: {what}, two hosts on one database, {CLIENTS} clients: {rate:.0} calls/s, \
             p50 {p50:?} p99 {p99:?}"
        );
    }
    drop(on_postgres);
    drop(stores);
    let _ = admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)"))
        .await;
}
