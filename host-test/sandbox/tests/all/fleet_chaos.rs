//! The fleet under faults (issue 36): two `crm-sandbox serve` hosts on a PostgreSQL server of
//! this test's own (so it can stop it), reaching the sandbox CRM through a proxy that holds and
//! counts requests (`crm_sandbox::holding_proxy`).
//!
//! - A host killed with `kill -9` while its create is held at the proxy, the proxy then
//!   delivering it: the same create on the other host is refused until the change is resolved,
//!   and `crm_resolve_change` finds exactly one record.
//! - The database stopped for 10 s under a stream of reads and writes on both hosts: no write
//!   told "done" is lost, none is made twice, none is told "sent" that never reached the proxy,
//!   no journal entry is still `pending` a minute after the database is back, and reads are
//!   served throughout.
//!
//! Needs `CRM_TEST_PG_BIN` (the server's `initdb`/`pg_ctl` directory, exported by
//! `.ci/postgres.sh`); without it the test prints one line and does nothing.

use crate::fixtures::temp_dir;
use crate::mcp::{answer, tool_error};
use crate::serve_procs::{Broker, Serving};
use crm_host::mcp::tenants::token_hash;
use crm_sandbox::holding_proxy::{HoldingProxy, RequestHead};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const BINARY: &str = env!("CARGO_BIN_EXE_crm-sandbox");

/// A call's time limit on the hosts: a write's journal entry is leased to its call for this
/// plus 5 s, so a dead host's entry turns `unknown` within about 11 s.
const CALL_TIMEOUT_SECONDS: &str = "6";

/// A PostgreSQL server of the test's own, started as `.ci/postgres.sh` starts CI's.
struct OwnPostgres {
    bin: PathBuf,
    base: PathBuf,
    port: u16,
}

/// `command` as the `postgres` OS user when we are root (initdb and the server refuse root).
fn as_postgres(program: &Path) -> Command {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let mut command = if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    command.current_dir("/");
    command
}

impl OwnPostgres {
    fn start(name: &str) -> Option<Self> {
        let Some(bin) = std::env::var_os("CRM_TEST_PG_BIN") else {
            eprintln!("{name}: skipped, CRM_TEST_PG_BIN is not set (.ci/postgres.sh sets it)");
            return None;
        };
        let base = temp_dir(name);
        std::fs::create_dir_all(&base).unwrap();
        let _ = Command::new("chown").arg("postgres:").arg(&base).status();
        let bin = PathBuf::from(bin);
        let initdb = as_postgres(&bin.join("initdb"))
            .arg("-D")
            .arg(base.join("data"))
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C"])
            .arg("--no-sync")
            .output()
            .unwrap();
        assert!(initdb.status.success(), "initdb: {initdb:?}");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = OwnPostgres { bin, base, port };
        server.run();
        let created = Command::new(server.bin.join("psql"))
            .args([
                "-X",
                "-q",
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                "-d",
                "postgres",
            ])
            .arg("-p")
            .arg(port.to_string())
            .args(["-c", "create database crm_chaos"])
            .output()
            .unwrap();
        assert!(created.status.success(), "{created:?}");
        Some(server)
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/crm_chaos", self.port)
    }

    fn pg_ctl(&self, args: &[&str]) {
        let done = as_postgres(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.base.join("data"))
            .args(args)
            .output()
            .unwrap();
        assert!(done.status.success(), "pg_ctl {args:?}: {done:?}");
    }

    /// Starts the server (again).
    fn run(&self) {
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {} -c unix_socket_directories={} -c fsync=off \
             -c max_connections=100",
            self.port,
            self.base.display()
        );
        let log = self.base.join("log");
        self.pg_ctl(&["-l", log.to_str().unwrap(), "-w", "-o", &options, "start"]);
    }

    /// Stops the server, cutting every connection.
    fn stop(&self) {
        self.pg_ctl(&["-m", "fast", "-w", "stop"]);
    }

    async fn pending_entries(&self) -> i64 {
        let (client, connection) = tokio_postgres::connect(&self.url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
            .query_one("SELECT count(*) FROM changes WHERE status = 'pending'", &[])
            .await
            .unwrap()
            .get(0)
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        let _ = as_postgres(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.base.join("data"))
            .args(["-m", "immediate", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// A `serve` host on the store with acme's credential and a short call time limit.
fn serve(store: &str, dir: &Path, name: &str, broker: &Broker) -> Serving {
    Serving::start_with(
        store,
        dir,
        name,
        broker,
        &[
            ("ACME_CREDENTIAL", broker.credential("acme")),
            ("CRM_HOST_CALL_TIMEOUT_SECONDS", CALL_TIMEOUT_SECONDS),
        ],
    )
}

type Client = RunningService<RoleClient, ()>;

async fn client(url: &str, token: &str) -> Client {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

/// A tool call; `Err` when the protocol failed (the host died), else the tool's result.
async fn call(
    client: &Client,
    name: &str,
    arguments: Value,
) -> Result<rmcp::model::CallToolResult, String> {
    let params: CallToolRequestParams =
        serde_json::from_value(json!({"name": name, "arguments": arguments})).unwrap();
    client.call_tool(params).await.map_err(|e| e.to_string())
}

fn create(name: &str) -> Value {
    json!({"object": "Account", "fields": {"Name": name}})
}

/// How many Accounts the CRM holds by each name starting with `prefix`.
async fn accounts(client: &Client, prefix: &str) -> HashMap<String, usize> {
    let listed = call(
        client,
        "crmb_run_soql_query",
        json!({"query": format!("SELECT Id, Name FROM Account WHERE Name LIKE '{prefix}%' LIMIT 2000")}),
    )
    .await
    .unwrap();
    let mut names = HashMap::new();
    for record in answer(&listed)["records"].as_array().unwrap() {
        *names
            .entry(record["Name"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    names
}

fn tenants_file(proxy: &str) -> String {
    format!(
        "[[tenants]]\nid = \"acme\"\nproxy_base = \"{proxy}\"\ncredential_env = \
         \"ACME_CREDENTIAL\"\ninstance_url = \"{}\"\n\
         [[tokens]]\nsha256 = \"{}\"\ntenant = \"acme\"\nuser = \"ana\"\n\
         [[tokens]]\nsha256 = \"{}\"\ntenant = \"acme\"\nuser = \"rita\"\n\
         [[tokens]]\nsha256 = \"{}\"\ntenant = \"acme\"\nuser = \"will\"\n",
        crm_sandbox::SandboxCrm::instance_url("acme"),
        token_hash("ana-token"),
        token_hash("reader-token"),
        token_hash("writer-token"),
    )
}

/// A tool result as (kind, message): `ok`, or the error's kind and message.
fn told_by(result: &rmcp::model::CallToolResult) -> (String, String) {
    if result.is_error != Some(true) {
        return ("ok".into(), String::new());
    }
    let error = tool_error(result);
    (
        error["error"]["kind"].as_str().unwrap().to_string(),
        error["error"]["message"].as_str().unwrap().to_string(),
    )
}

/// What a writer was told about one create.
#[derive(Debug)]
struct Told {
    name: String,
    kind: String,
    message: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_under_kill_and_database_outage_never_duplicates_loses_or_lies() {
    let Some(database) = OwnPostgres::start("fleet-chaos") else {
        return;
    };
    let store = database.url();
    let dir = temp_dir("fleet-chaos-hosts");
    std::fs::create_dir_all(&dir).unwrap();
    let broker = Broker::start(&dir);
    let proxy = HoldingProxy::to_https(&broker.url, &broker.cert)
        .await
        .unwrap();
    let file = dir.join("tenants.toml");
    std::fs::write(&file, tenants_file(&proxy.url())).unwrap();
    let imported = Command::new(BINARY)
        .arg("--store")
        .arg(&store)
        .arg("--data-dir")
        .arg(dir.join("cli"))
        .args(["tenants", "import"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(imported.status.success(), "{imported:?}");
    let first = serve(&store, &dir, "h1", &broker);
    let second = serve(&store, &dir, "h2", &broker);
    let (first_url, second_url) = (first.url.clone(), second.url.clone());

    // 1. kill -9 with a create held at the proxy.
    proxy.hold(RequestHead::is_create);
    let on_first = client(&first_url, "ana-token").await;
    let dying = tokio::spawn(async move {
        call(&on_first, "crmb_create_record", create("Chaos Kill Co")).await
    });
    let held = match tokio::time::timeout(Duration::from_secs(60), proxy.wait_held(1)).await {
        Ok(mut held) => held.remove(0),
        Err(_) => panic!(
            "no create reached the proxy: the call said {:?}; the proxy saw {:?}",
            tokio::time::timeout(Duration::from_secs(1), dying).await,
            proxy.requests()
        ),
    };
    drop(first); // SIGKILL: `kill -9`
    // Its client never hears back (an MCP client may keep trying to reach the dead host).
    match tokio::time::timeout(Duration::from_secs(5), dying).await {
        Ok(answer) => assert!(answer.unwrap().is_err(), "its client lost the host"),
        Err(_) => eprintln!("chaos: the killed host's client is still waiting, as it may"),
    }
    proxy.hold_nothing();
    assert!(proxy.release(held.id));
    assert!(
        proxy.settled(held.id).await.fate.delivered(),
        "the CRM made the record of a host that died"
    );
    let creates = |proxy: &HoldingProxy| {
        proxy
            .requests()
            .iter()
            .filter(|r| r.head.is_create())
            .count()
    };
    let sent_before = creates(&proxy);
    let on_second = client(&second_url, "ana-token").await;
    let refused = call(&on_second, "crmb_create_record", create("Chaos Kill Co"))
        .await
        .unwrap();
    let refusal = tool_error(&refused);
    eprintln!("the same create on the other host: {refusal}");
    assert_eq!(refusal["error"]["kind"], "invalid-input", "{refusal}");
    let change_id = refusal["error"]["message"]
        .as_str()
        .unwrap()
        .split(['(', ')', ' ', '"'])
        .find(|word| word.starts_with("chg_"))
        .expect("the refusal names the change")
        .to_string();
    assert_eq!(creates(&proxy), sent_before, "nothing was sent");
    // Its lease ends with the dead call's time limit: then it is unknown, and resolvable.
    let began = Instant::now();
    let resolved = loop {
        let result = call(
            &on_second,
            "crm_resolve_change",
            json!({"change_id": change_id}),
        )
        .await
        .unwrap();
        if result.is_error != Some(true) {
            break answer(&result);
        }
        let error = tool_error(&result);
        assert!(
            began.elapsed() < Duration::from_secs(40),
            "not resolvable in time: {error}"
        );
        // Pending until the lease ends; "try again" while the CRM's lookup may miss it.
        let still = call(&on_second, "crmb_create_record", create("Chaos Kill Co"))
            .await
            .unwrap();
        assert_eq!(tool_error(&still)["error"]["kind"], "invalid-input");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    eprintln!("resolved {:?} after the kill: {resolved}", began.elapsed());
    assert_eq!(resolved["outcome"], "applied", "{resolved}");
    assert_eq!(
        creates(&proxy),
        sent_before,
        "refused until resolved: nothing sent"
    );
    let made = accounts(&on_second, "Chaos Kill").await;
    assert_eq!(
        made.get("Chaos Kill Co"),
        Some(&1),
        "exactly one record: {made:?}"
    );

    // 2. The database stopped for 10 s under reads and writes on both hosts.
    let third = serve(&store, &dir, "h3", &broker);
    let third_url = third.url.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    let mut writers = Vec::new();
    for (h, url) in [(2, second_url.clone()), (3, third_url.clone())] {
        // A reader and a writer of their own each, within a principal's request rate.
        let reader = client(&url, "reader-token").await;
        let stop_reading = stop.clone();
        readers.push(tokio::spawn(async move {
            let mut served = Vec::new();
            while !stop_reading.load(Ordering::SeqCst) {
                let read = call(
                    &reader,
                    "crmb_get_record",
                    json!({"object": "Account", "record_id": "0015gA000000001ABA", "fields": ["Name"]}),
                )
                .await;
                served.push((Instant::now(), read.is_ok_and(|r| r.is_error != Some(true))));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            served
        }));
        let writer = client(&url, "writer-token").await;
        let stop_writing = stop.clone();
        writers.push(tokio::spawn(async move {
            let mut told = Vec::new();
            for n in 0.. {
                if stop_writing.load(Ordering::SeqCst) {
                    break;
                }
                let name = format!("chaos-{h}-{n}");
                let (kind, message) = match call(&writer, "crmb_create_record", create(&name)).await
                {
                    // The host answered nothing the client could read: it was told nothing.
                    Err(protocol) => ("protocol-error".to_string(), protocol),
                    Ok(result) => told_by(&result),
                };
                told.push(Told {
                    name,
                    kind,
                    message,
                });
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            told
        }));
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let stopped = Instant::now();
    database.stop();
    tokio::time::sleep(Duration::from_secs(10)).await;
    database.run();
    let back = Instant::now();
    tokio::time::sleep(Duration::from_secs(5)).await;
    stop.store(true, Ordering::SeqCst);
    let mut told = Vec::new();
    for writer in writers {
        told.extend(writer.await.unwrap());
    }
    let mut reads = Vec::new();
    for reader in readers {
        reads.extend(reader.await.unwrap());
    }

    // No entry pending a minute after the database is back.
    let pending = loop {
        let pending = database.pending_entries().await;
        if pending == 0 || back.elapsed() > Duration::from_secs(60) {
            break pending;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let settled_after = back.elapsed();

    let in_crm = accounts(&on_second, "chaos-").await;
    let mut by_kind: HashMap<&str, usize> = HashMap::new();
    let (mut lost, mut duplicated, mut told_sent_never_sent, mut told_not_sent_but_made) =
        (0, 0, 0, 0);
    for t in &told {
        *by_kind.entry(t.kind.as_str()).or_default() += 1;
        let made = in_crm.get(&t.name).copied().unwrap_or(0);
        duplicated += usize::from(made > 1);
        match t.kind.as_str() {
            "ok" => lost += usize::from(made == 0),
            // "Sent, outcome unknown": the proxy delivers everything in this phase, so a
            // write told so that the CRM never saw was never sent.
            "outcome-unknown" => told_sent_never_sent += usize::from(made == 0),
            "protocol-error" => {}
            _ => {
                assert!(
                    t.message.contains("not sent") || t.message.contains("nothing was"),
                    "a refusal that does not say nothing was sent: {t:?}"
                );
                told_not_sent_but_made += usize::from(made > 0);
            }
        }
    }
    let during = |at: &Instant| *at >= stopped && *at <= back;
    let reads_in_outage = reads.iter().filter(|(at, _)| during(at)).count();
    let served_in_outage = reads.iter().filter(|(at, ok)| during(at) && *ok).count();
    eprintln!(
        "database stopped {:?}: {} writes told {by_kind:?}; lost {lost}, duplicated \
         {duplicated}, told sent but never sent {told_sent_never_sent}, told not sent but made \
         {told_not_sent_but_made}; {pending} pending {settled_after:?} after it came back; \
         reads {} in all, {served_in_outage} of {reads_in_outage} served during the outage",
        back - stopped,
        told.len(),
        reads.len()
    );
    assert!(
        by_kind.get("ok").copied().unwrap_or(0) > 0 && told.len() > by_kind["ok"],
        "writes went through before and after, and some were refused during: {by_kind:?}"
    );
    assert_eq!(
        (
            lost,
            duplicated,
            told_sent_never_sent,
            told_not_sent_but_made
        ),
        (0, 0, 0, 0)
    );
    assert_eq!(
        pending, 0,
        "no entry pending a minute after the database came back"
    );
    assert!(reads_in_outage > 0);
    assert_eq!(
        served_in_outage, reads_in_outage,
        "every read during the outage was served"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
