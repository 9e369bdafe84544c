//! Start-up and audit figures: loading the component cold (compile and store in the cache)
//! and warm (from the cache), the wall and CPU time of whole `crm-host tools` and
//! `crm-host precompile` runs, and the cost of an audit line, the old unbuffered way and now.

use crm_host::audit::AuditEvent;
use crm_host::cache::{CacheKey, CacheOutcome, ComponentCache};
use crm_host::{AuditLog, HostLimits, Runtime};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const RUNS: usize = 5;

pub fn figures(wasm: &[u8]) {
    let dir = std::env::temp_dir().join(format!("crm-bench-startup-{}", std::process::id()));
    load_figures(wasm, &dir.join("in-process"));
    cli_figures(&dir);
    audit_figures(&dir);
    let _ = std::fs::remove_dir_all(&dir);
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// In-process: a fresh runtime each time, so only the cache can spare the compile.
fn load_figures(wasm: &[u8], dir: &Path) {
    let mut engine = Vec::new();
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    for _ in 0..RUNS {
        let _ = std::fs::remove_dir_all(dir);
        let cache = ComponentCache::new(dir, CacheKey::from_bytes(&[9; 32]));
        let started = Instant::now();
        let runtime = Runtime::new(HostLimits::default()).unwrap();
        engine.push(started.elapsed());
        let started = Instant::now();
        let (_, outcome) = runtime.load_cached(wasm, &cache).unwrap();
        cold.push(started.elapsed());
        assert_eq!(outcome, CacheOutcome::Compiled);
        let runtime = Runtime::new(HostLimits::default()).unwrap();
        let started = Instant::now();
        let (_, outcome) = runtime.load_cached(wasm, &cache).unwrap();
        warm.push(started.elapsed());
        assert_eq!(outcome, CacheOutcome::Hit);
    }
    let entry = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.len())
        .sum::<u64>();
    println!(
        "start-up in process: engine + linker {:?}; load cold (compile, store {:.1} MiB entry) {:?}; \
         load warm (read, verify, deserialize, pre-instantiate) {:?} (medians of {RUNS})",
        median(engine),
        entry as f64 / (1024.0 * 1024.0),
        median(cold),
        median(warm)
    );
}

/// Children's user+system CPU time so far, from `/proc/self/stat` (clock ticks of 10 ms).
fn children_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // After the command name (which ends with ')') come fields 3 onwards; cutime and cstime
    // are fields 16 and 17.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let field = |n: usize| -> u64 { fields.get(n - 3).and_then(|f| f.parse().ok()).unwrap_or(0) };
    Duration::from_millis((field(16) + field(17)) * 10)
}

/// Wall and CPU time of one `crm-host <command>` run.
fn crm_host(dir: &Path, cache: &[&str], command: &str) -> (Duration, Duration) {
    let cpu = children_cpu();
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_crm-sandbox"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--results-dir")
        .arg(dir.join("results"))
        .args(cache)
        .arg(command)
        .output()
        .unwrap();
    let wall = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (wall, children_cpu().saturating_sub(cpu))
}

fn cli_figures(dir: &Path) {
    let cache: PathBuf = dir.join("cli-cache");
    let cache_args = ["--cache-dir", cache.to_str().unwrap()];
    let report = |label: &str, runs: Vec<(Duration, Duration)>| {
        let (wall, cpu): (Vec<_>, Vec<_>) = runs.into_iter().unzip();
        println!(
            "crm-host {label}: wall {:?}, CPU {:?} (medians of {RUNS})",
            median(wall),
            median(cpu)
        );
    };
    let listed = (0..RUNS)
        .map(|_| crm_host(dir, &["--no-cache"], "tools"))
        .collect();
    report(
        "tools, no cache (listed from the component's listing section)",
        listed,
    );
    let cold = (0..RUNS)
        .map(|_| {
            let _ = std::fs::remove_dir_all(&cache);
            crm_host(dir, &cache_args, "precompile")
        })
        .collect();
    report("precompile, empty cache (compiles, stores)", cold);
    let warm = (0..RUNS)
        .map(|_| crm_host(dir, &cache_args, "precompile"))
        .collect();
    report(
        "precompile, warm cache (reads and verifies the entry)",
        warm,
    );
}

fn audit_event(n: usize) -> AuditEvent {
    AuditEvent::Request {
        tenant: "bench".into(),
        method: "GET".into(),
        path: format!("/services/data/v62.0/sobjects/Account/001000000000{n:03}AAA"),
        status: Some(200),
        outcome: "ok".into(),
        correlation_id: Some("corr-123".into()),
        duration_ms: 3,
    }
}

/// The audit line as the host wrote it before: a JSON value formatted straight into an
/// unbuffered file under a lock, then flushed (dozens of `write` calls a line).
fn old_record(sink: &Mutex<std::fs::File>, event: &AuditEvent) {
    let mut line = serde_json::to_value(event).unwrap();
    line["at_ms"] = 1_700_000_000_000u64.into();
    let mut file = sink.lock().unwrap();
    writeln!(file, "{line}")
        .and_then(|()| file.flush())
        .unwrap();
}

fn audit_figures(dir: &Path) {
    const LINES: usize = 20_000;
    std::fs::create_dir_all(dir).unwrap();
    let events: Vec<AuditEvent> = (0..LINES).map(audit_event).collect();

    let old_path = dir.join("audit-old.jsonl");
    let file = std::fs::File::create(&old_path).unwrap();
    let sink = Mutex::new(file);
    let started = Instant::now();
    for event in &events {
        old_record(&sink, event);
    }
    let old = started.elapsed();

    let new_path = dir.join("audit-new.jsonl");
    let log = AuditLog::to_file(&new_path).unwrap();
    let started = Instant::now();
    for event in &events {
        log.record(event.clone());
    }
    let recorded = started.elapsed();
    drop(log);
    let total = started.elapsed();
    let lines = std::fs::read_to_string(&new_path).unwrap().lines().count();
    assert_eq!(lines, LINES, "every line written");
    let per_line = |d: Duration| d / LINES as u32;
    println!(
        "audit line to a file: before (unbuffered) {:?} a line; after {:?} a line on the \
         calling thread, {:?} a line with the final write-out ({LINES} lines)",
        per_line(old),
        per_line(recorded),
        per_line(total)
    );
}
