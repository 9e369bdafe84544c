//! `cargo bench -p crm-sandbox --bench soak`: a soak and fault campaign. Several tenants, each
//! with its own broker origin, credential, component build and data, call tools concurrently
//! while the stub injects 5xx, 429, read timeouts after send, connection resets and truncated
//! bodies at random, and one tenant's component is swapped mid-run.
//!
//! One create in twenty is applied and then times out (outcome unknown), and the caller does
//! what a model would: it tries the same create again at once, and when that is refused it
//! calls `crm_resolve_change`, and creates again only when told the create failed. The org
//! answers the lookup with a full page of records that do not match before the one that does,
//! so a resolve that stopped at the first page would say "failed" and invite a duplicate.
//!
//! It prints calls per second, latency p50/p99, peak host memory, and the counts that must be
//! zero: requests carrying another tenant's credential, answers carrying another tenant's data,
//! writes sent more than once, duplicate creates, untyped failures and traps. Figures, not assertions; the
//! process exits non-zero when a must-be-zero count is not.
//!
//! `SOAK_CALLS` (default 50,000) and `SOAK_TENANTS` (default 4) change the size.

use crm_host::credential::Credential;
use crm_host::tenant_db::DbLocation;
use crm_host::{AuditLog, CallError, CallRequest, Host, HostLimits, Runtime, TenantSpec};
use crm_sandbox::stub::{Fault, Recorded, Reply, StubBackend};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Concurrent callers.
const WORKERS: usize = 16;

/// A record id of the tenant's own data: `001` + the tenant number + the call number.
fn record_id(tenant: usize, n: u64) -> String {
    format!("001{tenant:03}{:09}AAA", n % 1_000_000_000)
}

/// The marker every record of tenant `t` carries, to catch an answer from another tenant.
fn marker(tenant: usize) -> String {
    format!("soak-tenant-{tenant}")
}

/// A small deterministic generator (xorshift64*): the same campaign every run.
struct Dice(AtomicU64);

impl Dice {
    fn roll(&self) -> u64 {
        let mut x = self.0.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D) % 1000
    }
}

/// What the broker side saw that must never happen.
#[derive(Default)]
struct BrokerTally {
    foreign_credentials: AtomicU64,
    requests: AtomicU64,
    /// Each write's unique marker → times it reached the broker.
    writes: Mutex<HashMap<String, u32>>,
    /// Each create's subject → records made with it (a create the org applied: answered, or
    /// answered late or cut off; not one refused with 503 or 429 or reset before an answer).
    creates: Mutex<HashMap<String, u32>>,
    /// Each tenant's applied creates' subjects, oldest first: what its org's lookups find.
    made: Mutex<HashMap<usize, Vec<String>>>,
    /// Creates the caller made again after `crm_resolve_change` said they never were: a
    /// second write of theirs is the caller's, not a resend.
    again: Mutex<std::collections::HashSet<String>>,
}

impl BrokerTally {
    fn applied(&self, tenant: usize, subject: &str) {
        *self
            .creates
            .lock()
            .unwrap()
            .entry(subject.to_string())
            .or_default() += 1;
        self.made
            .lock()
            .unwrap()
            .entry(tenant)
            .or_default()
            .push(subject.to_string());
    }
}

/// The stub broker: tenant `t` lives at `broker-t{t}.example.com` with credential `cred-t{t}`.
fn broker(tally: Arc<BrokerTally>, dice: Arc<Dice>) -> StubBackend {
    StubBackend::with_handler(move |request: &Recorded| {
        tally.requests.fetch_add(1, Ordering::Relaxed);
        let host = request.uri.host().unwrap_or_default().to_string();
        let tenant: usize = host
            .strip_prefix("broker-t")
            .and_then(|rest| rest.split('.').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(usize::MAX);
        let expected = format!("cred-t{tenant}");
        if request.header("x-proxy-credential") != Some(expected.as_str()) {
            tally.foreign_credentials.fetch_add(1, Ordering::Relaxed);
        }
        let method = request.method.as_str();
        let mut created = None;
        if method == "POST" || method == "PATCH" {
            let body = request.body_json();
            let key = body["Subject"]
                .as_str()
                .or(body["Description"].as_str())
                .unwrap_or("?")
                .to_string();
            if method == "POST" {
                created = Some(key.clone());
            }
            *tally.writes.lock().unwrap().entry(key).or_default() += 1;
        }
        let answer = match created_lookup(request) {
            Some(past) => lookup_answer(&tally, tenant, past),
            None => honest_answer(tenant, request),
        };
        let roll = dice.roll();
        let applied = |tally: &BrokerTally| {
            if let Some(subject) = &created {
                tally.applied(tenant, subject);
            }
        };
        if method == "POST" && roll % 20 == 7 {
            // Applied, then no answer within the tenant's timeout: the outcome is unknown.
            applied(&tally);
            return Reply::Delay(Duration::from_millis(400), Box::new(answer));
        }
        if !(0..=69).contains(&roll) {
            // Answered (late or cut off included): the org made the record.
            applied(&tally);
        }
        match roll {
            0..=29 => Reply::json(
                503,
                json!([{"message": "Service Unavailable", "errorCode": "SERVER_UNAVAILABLE"}]),
            ),
            30..=49 => Reply::json(
                429,
                json!([{"message": "slow down", "errorCode": "REQUEST_LIMIT_EXCEEDED"}]),
            )
            .with_header("retry-after", "0"),
            50..=69 => Reply::Fault(Fault::ConnectionReset),
            70..=89 => truncated(answer),
            // No answer within the tenant's timeout: the request was sent and may have landed.
            90..=92 => Reply::Delay(Duration::from_millis(400), Box::new(answer)),
            _ => answer,
        }
    })
}

/// A `crm_resolve_change` lookup (records created since a write, newest first, keyset-paged):
/// `Some(false)` for its first page, `Some(true)` for a page past a keyset.
fn created_lookup(request: &Recorded) -> Option<bool> {
    let query = request
        .uri
        .query()
        .and_then(|q| url::form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "q"))
        .map(|(_, v)| v.into_owned())?;
    query
        .contains("WHERE CreatedDate >=")
        .then(|| query.contains(" AND Id < '"))
}

/// The org's answer to a lookup: a full first page of Tasks that match no create, then the
/// tenant's created Tasks (the newest 99), as an org busy with other users' work answers.
fn lookup_answer(tally: &BrokerTally, tenant: usize, past: bool) -> Reply {
    let row = |i: usize, subject: &str, second: u64| {
        let at = format!(
            "2026-11-21T09:{:02}:{:02}.000+0000",
            59 - second / 60 % 60,
            59 - second % 60
        );
        json!({"attributes": {"type": "Task", "url": "/x"}, "Id": format!("00T{tenant:03}{i:09}AAA"),
               "CreatedDate": at, "Subject": subject})
    };
    let records: Vec<Value> = if past {
        let made = tally.made.lock().unwrap();
        let subjects = made.get(&tenant).map(Vec::as_slice).unwrap_or_default();
        subjects
            .iter()
            .rev()
            .take(99)
            .enumerate()
            .map(|(i, s)| row(500_000 + i, s, 200 + i as u64))
            .collect()
    } else {
        (0..100)
            .map(|i| row(i, &format!("another user's task {i}"), i as u64))
            .collect()
    };
    Reply::json(
        200,
        json!({"totalSize": records.len(), "done": true, "records": records}),
    )
}

/// Half the body of a good answer.
fn truncated(reply: Reply) -> Reply {
    match reply {
        Reply::Respond {
            status,
            headers,
            body,
        } => Reply::Respond {
            status,
            headers,
            body: body.slice(..body.len() / 2),
        },
        other => other,
    }
}

/// What the tenant's own org answers, every record marked as the tenant's.
fn honest_answer(tenant: usize, request: &Recorded) -> Reply {
    let path = request.uri.path();
    let name = marker(tenant);
    match request.method.as_str() {
        "POST" => Reply::json(
            201,
            json!({"id": record_id(tenant, 1), "success": true, "errors": []}),
        ),
        "PATCH" => Reply::json(204, Value::Null),
        _ if path.ends_with("/query") => {
            let records: Vec<Value> = (0..5)
                .map(|i| json!({"attributes": {"type": "Account", "url": "/x"}, "Id": record_id(tenant, i), "Name": name}))
                .collect();
            Reply::json(
                200,
                json!({"totalSize": 5, "done": true, "records": records}),
            )
        }
        _ => {
            let id = path.rsplit('/').next().unwrap_or_default();
            Reply::json(
                200,
                json!({"attributes": {"type": "Account", "url": "/x"}, "Id": id, "Name": name}),
            )
        }
    }
}

/// The component with a custom section appended: a distinct build that behaves alike.
fn relabelled(wasm: &[u8], label: &str) -> Vec<u8> {
    let mut bytes = wasm.to_vec();
    let name = b"crm-plugin-build";
    let mut payload = vec![name.len() as u8];
    payload.extend_from_slice(name);
    payload.extend_from_slice(label.as_bytes());
    bytes.push(0);
    bytes.push(payload.len() as u8);
    bytes.extend(payload);
    bytes
}

/// What the callers saw.
#[derive(Default)]
struct CallerTally {
    ok: AtomicU64,
    typed_errors: AtomicU64,
    foreign_data: AtomicU64,
    untyped: AtomicU64,
    traps: AtomicU64,
    /// Creates whose outcome was unknown, each tried again at once.
    unknown_creates: AtomicU64,
    /// Of those second tries, the ones refused before anything was sent.
    retries_refused: AtomicU64,
    /// `crm_resolve_change` then: found the record, said it was never made (and the create
    /// was made again), or could not tell (a fault, or still unknown).
    resolved_applied: AtomicU64,
    resolved_failed: AtomicU64,
    unresolved: AtomicU64,
    latencies_us: Mutex<Vec<u64>>,
}

/// One call: which tool, by the call number.
fn request(tenant: usize, n: u64) -> CallRequest {
    let id = record_id(tenant, n);
    let (tool, input) = match n % 10 {
        0 => (
            "crmb_create_record",
            json!({"object": "Task", "fields": {"Subject": format!("soak-{tenant}-{n}")}}),
        ),
        1 => (
            "crmb_update_record",
            json!({"object": "Account", "record_id": id, "fields": {"Description": format!("soak-{tenant}-{n}")}}),
        ),
        2 | 3 => (
            "crmb_run_soql_query",
            json!({"query": "SELECT Id, Name FROM Account LIMIT 5"}),
        ),
        4 => (
            "crmb_generate_record_url",
            json!({"object": "Account", "record_id": id}),
        ),
        _ => (
            "crmb_get_record",
            json!({"object": "Account", "record_id": id}),
        ),
    };
    CallRequest {
        tenant_id: format!("t{tenant}"),
        user_id: format!("user-{tenant}"),
        granted_scopes: vec![],
        instance_url: Some(format!("https://tenant{tenant}.my.salesforce.com")),
        tool: tool.into(),
        input: input.to_string(),
    }
}

/// The change id an outcome-unknown create's error names ("Its change_id is chg-...").
fn change_id(message: &str) -> Option<String> {
    let at = message.find("change_id is ")? + "change_id is ".len();
    let id: String = message[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
        .collect();
    (!id.is_empty()).then_some(id)
}

/// `crm_resolve_change` for a tenant's change.
fn resolve(tenant: usize, change: &str) -> CallRequest {
    CallRequest {
        tool: "crm_resolve_change".into(),
        input: json!({"change_id": change}).to_string(),
        ..request(tenant, 0)
    }
}

/// Peak resident memory of this process (Linux `VmHWM`), in KiB.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let calls: u64 = std::env::var("SOAK_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    let tenants: usize = std::env::var("SOAK_TENANTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    let wasm = std::fs::read(crm_host::COMPONENT_PATH).expect("the component is built");
    let runtime = Arc::new(Runtime::new(HostLimits::default()).unwrap());
    let broker_tally = Arc::new(BrokerTally::default());
    let dice = Arc::new(Dice(AtomicU64::new(0x5EED)));
    let stub = broker(broker_tally.clone(), dice);
    let host = Arc::new(Host::new(
        runtime.clone(),
        Arc::new(stub),
        AuditLog::discard(),
    ));
    for t in 0..tenants {
        let plugin = runtime
            .load(&relabelled(&wasm, &format!("tenant-{t}")))
            .unwrap();
        host.add_tenant(
            TenantSpec {
                tenant_id: format!("t{t}"),
                proxy_base: format!("https://broker-t{t}.example.com").parse().unwrap(),
                credential: Credential::new(format!("cred-t{t}").as_str()),
                settings: vec![
                    ("CRM_RETRY_BASE_MS".into(), "1".into()),
                    ("CRM_MAX_RETRY_WAIT_MS".into(), "20".into()),
                    ("CRM_READ_ATTEMPTS".into(), "3".into()),
                    ("CRM_HTTP_TIMEOUT_MS".into(), "200".into()),
                ],
                results_dir: None,
                mappings: DbLocation::Memory,
            },
            plugin,
        )
        .unwrap();
    }

    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tally = Arc::new(CallerTally::default());
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    tokio.block_on(async {
        let mut workers = Vec::new();
        for _ in 0..WORKERS {
            let (host, tally, next, wasm, broker_tally) = (
                host.clone(),
                tally.clone(),
                next.clone(),
                wasm.clone(),
                broker_tally.clone(),
            );
            workers.push(tokio::spawn(async move {
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= calls {
                        break;
                    }
                    if n == calls / 2 {
                        // Mid-run: tenant 0 moves to a new build while calls are in flight.
                        host.swap("t0", &relabelled(&wasm, "tenant-0-v2")).unwrap();
                    }
                    let tenant = (n as usize) % tenants;
                    let at = Instant::now();
                    let result = host.call(request(tenant, n)).await;
                    let took = at.elapsed().as_micros() as u64;
                    tally.latencies_us.lock().unwrap().push(took);
                    if matches!(&result, Err(CallError::Tool(e)) if e.kind() == "outcome-unknown")
                        && request(tenant, n).tool == "crmb_create_record"
                    {
                        // What a model does next: the same create again.
                        tally.unknown_creates.fetch_add(1, Ordering::Relaxed);
                        let again = host.call(request(tenant, n)).await;
                        match &again {
                            Err(CallError::Tool(e))
                                if e.kind() == "invalid-input"
                                    && e.message().contains("crm_resolve_change") =>
                            {
                                tally.retries_refused.fetch_add(1, Ordering::Relaxed);
                                // As the refusal says: resolve it, and create again only if
                                // the create failed.
                                let change = match &result {
                                    Err(CallError::Tool(e)) => change_id(&e.message()),
                                    _ => None,
                                };
                                if let Some(change) = change {
                                    let resolved = host
                                        .call(resolve(tenant, &change))
                                        .await
                                        .ok()
                                        .and_then(|o| serde_json::from_str::<Value>(&o).ok());
                                    match resolved.as_ref().and_then(|o| o["outcome"].as_str()) {
                                        Some("applied") => {
                                            tally.resolved_applied.fetch_add(1, Ordering::Relaxed);
                                        }
                                        Some("failed") => {
                                            tally.resolved_failed.fetch_add(1, Ordering::Relaxed);
                                            // Sent again on purpose, not by a retry.
                                            broker_tally
                                                .again
                                                .lock()
                                                .unwrap()
                                                .insert(format!("soak-{tenant}-{n}"));
                                            let _ = host.call(request(tenant, n)).await;
                                        }
                                        _ => {
                                            tally.unresolved.fetch_add(1, Ordering::Relaxed);
                                        }
                                    }
                                }
                            }
                            other => {
                                if std::env::var_os("SOAK_DEBUG").is_some() {
                                    eprintln!(
                                        "retry of t{tenant} #{n} went on: {other:?}; first: {result:?}"
                                    );
                                }
                            }
                        }
                    }
                    match result {
                        Ok(out) => {
                            tally.ok.fetch_add(1, Ordering::Relaxed);
                            let foreign = (0..tenants)
                                .filter(|other| *other != tenant)
                                .any(|other| out.contains(&marker(other)));
                            if foreign {
                                tally.foreign_data.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        Err(CallError::Tool(e)) => {
                            tally.typed_errors.fetch_add(1, Ordering::Relaxed);
                            if (0..tenants).any(|o| o != tenant && e.message().contains(&marker(o)))
                            {
                                tally.foreign_data.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        Err(CallError::Plugin(why)) => {
                            if why.contains("trap") || why.contains("wasm") {
                                tally.traps.fetch_add(1, Ordering::Relaxed);
                            } else {
                                tally.untyped.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        Err(_) => {
                            tally.untyped.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }));
        }
        for worker in workers {
            worker.await.unwrap();
        }
    });
    let elapsed = started.elapsed();

    let mut latencies = std::mem::take(&mut *tally.latencies_us.lock().unwrap());
    latencies.sort_unstable();
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    let again = broker_tally.again.lock().unwrap().clone();
    let resent_writes = broker_tally
        .writes
        .lock()
        .unwrap()
        .iter()
        .filter(|(subject, count)| **count > 1 + u32::from(again.contains(*subject)))
        .count() as u64;
    let duplicates = broker_tally
        .creates
        .lock()
        .unwrap()
        .values()
        .filter(|count| **count > 1)
        .count() as u64;
    let foreign_credentials = broker_tally.foreign_credentials.load(Ordering::Relaxed);
    let foreign_data = tally.foreign_data.load(Ordering::Relaxed);
    let untyped = tally.untyped.load(Ordering::Relaxed);
    let traps = tally.traps.load(Ordering::Relaxed);

    println!(
        "soak: {calls} calls by {WORKERS} workers over {tenants} tenants in {:.1} s: {:.0} calls/s; \
         {} requests reached the broker",
        elapsed.as_secs_f64(),
        calls as f64 / elapsed.as_secs_f64(),
        broker_tally.requests.load(Ordering::Relaxed)
    );
    println!(
        "soak: latency p50 {} us, p99 {} us; peak host memory {} KiB",
        pct(0.50),
        pct(0.99),
        peak_rss_kib().map_or("unknown".into(), |k| k.to_string())
    );
    println!(
        "soak: outcomes: {} ok, {} typed tool errors (faults injected on 9.3% of requests)",
        tally.ok.load(Ordering::Relaxed),
        tally.typed_errors.load(Ordering::Relaxed)
    );
    println!(
        "soak: {} creates ended outcome-unknown (applied then timed out, answers cut off, 5xx \
         after sending) and were tried again at once: {} of the second tries refused until \
         resolved",
        tally.unknown_creates.load(Ordering::Relaxed),
        tally.retries_refused.load(Ordering::Relaxed)
    );
    println!(
        "soak: crm_resolve_change after each refusal, the org answering a page of other records \
         first: {} found the record, {} said it was never made (and it was created again), {} \
         could not tell yet",
        tally.resolved_applied.load(Ordering::Relaxed),
        tally.resolved_failed.load(Ordering::Relaxed),
        tally.unresolved.load(Ordering::Relaxed)
    );
    println!(
        "soak: must be zero: foreign credentials {foreign_credentials}, foreign data {foreign_data}, \
         writes sent more than once {resent_writes}, duplicates {duplicates}, untyped failures \
         {untyped}, traps {traps}"
    );
    if foreign_credentials + foreign_data + resent_writes + duplicates + untyped + traps > 0 {
        std::process::exit(1);
    }
}
