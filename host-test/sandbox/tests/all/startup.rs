//! Start-up and the audit trail's shutdown: compiled components cached on disk (a second load
//! skips compiling, also in another host with its own data directory; a truncated, corrupt or
//! foreign entry is ignored and rebuilt, and the call still works), and the CLI's audit file
//! holding every line once the process has exited.

use crate::fixtures::{fixture_on, get_account, output, plugin_bytes, record_stub, temp_dir};
use crm_host::cache::{CacheKey, CacheOutcome, ComponentCache};
use crm_host::{HostLimits, PluginVersion, Runtime};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// The key the tests' caches are authenticated with (kept, as in production, outside them).
fn test_key() -> CacheKey {
    CacheKey::from_bytes(&[42; 32])
}

/// A fresh runtime: nothing loaded in memory, so a load goes to the cache.
fn fresh_runtime() -> Arc<Runtime> {
    let limits = HostLimits {
        concurrent_calls: 2,
        ..HostLimits::default()
    };
    Arc::new(Runtime::new(limits).unwrap())
}

fn load(cache: &ComponentCache) -> (Arc<Runtime>, Arc<PluginVersion>, CacheOutcome) {
    let runtime = fresh_runtime();
    let (plugin, outcome) = runtime.load_cached(&plugin_bytes(), cache).unwrap();
    (runtime, plugin, outcome)
}

/// The loaded version serves a record fetch through the whole host.
async fn assert_serves_calls(runtime: Arc<Runtime>, _plugin: &PluginVersion) {
    let fixture = fixture_on(runtime, record_stub(Duration::ZERO), &[]);
    let record = output(fixture.host.call(get_account("t1")).await);
    assert_eq!(
        record["record"]["Id"],
        crate::fixtures::ACCOUNT_ID,
        "{record}"
    );
}

fn entry_path(runtime: &Runtime, cache: &ComponentCache) -> std::path::PathBuf {
    cache.entry_path(runtime.engine(), &plugin_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_load_takes_the_compiled_component_from_the_cache() {
    let cache = ComponentCache::new(temp_dir("cache-hit"), test_key());
    let (first, plugin, outcome) = load(&cache);
    assert_eq!(outcome, CacheOutcome::Compiled);
    assert!(entry_path(&first, &cache).is_file());
    assert_eq!(
        first.load_cached(&plugin_bytes(), &cache).unwrap().1,
        CacheOutcome::AlreadyLoaded
    );
    drop(plugin);

    let (second, plugin, outcome) = load(&cache);
    assert_eq!(outcome, CacheOutcome::Hit);
    assert_serves_calls(second, &plugin).await;
    let _ = std::fs::remove_dir_all(cache.dir());
}

/// A cache of a test's own holding a good entry for the component, without compiling it: the
/// run's shared entry (`fixtures::cache_home`), copied, with the key that tagged it.
fn seeded_cache(name: &str) -> (ComponentCache, std::path::PathBuf) {
    let runtime = fresh_runtime();
    crate::fixtures::load(&runtime); // the shared entry is there for this engine's settings
    let shared_dir = crate::fixtures::cache_home().join("crm-host");
    let key = CacheKey::for_cache_dir(&shared_dir).unwrap();
    let shared = ComponentCache::new(&shared_dir, key.clone());
    let cache = ComponentCache::new(temp_dir(name), key);
    let entry = entry_path(&runtime, &cache);
    std::fs::create_dir_all(cache.dir()).unwrap();
    std::fs::copy(entry_path(&runtime, &shared), &entry).unwrap();
    (cache, entry)
}

/// Damages a good entry with `damage`, then checks the next load ignores it, compiles, serves
/// calls, and leaves a good entry behind.
async fn a_damaged_entry_is_rebuilt(name: &str, damage: impl Fn(&Path), reason: &str) {
    let (cache, entry) = seeded_cache(name);
    assert_eq!(
        load(&cache).2,
        CacheOutcome::Hit,
        "the seeded entry is good"
    );
    damage(&entry);

    let (runtime, plugin, outcome) = load(&cache);
    match outcome {
        CacheOutcome::Replaced(why) => assert!(why.contains(reason), "{why}"),
        other => panic!("the damaged entry was used: {other:?}"),
    }
    assert_serves_calls(runtime, &plugin).await;
    assert_eq!(load(&cache).2, CacheOutcome::Hit, "the entry was rewritten");
    let _ = std::fs::remove_dir_all(cache.dir());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_cache_entry_is_ignored_and_rebuilt() {
    let flip_a_byte = |path: &Path| {
        let mut bytes = std::fs::read(path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x40;
        std::fs::write(path, bytes).unwrap();
    };
    a_damaged_entry_is_rebuilt("cache-corrupt", flip_a_byte, "does not verify").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_cache_entry_is_ignored_and_rebuilt() {
    let halve = |path: &Path| {
        let bytes = std::fs::read(path).unwrap();
        std::fs::write(path, &bytes[..bytes.len() / 2]).unwrap();
    };
    a_damaged_entry_is_rebuilt("cache-truncated", halve, "does not verify").await;
    let header_only = |path: &Path| {
        let bytes = std::fs::read(path).unwrap();
        std::fs::write(path, &bytes[..20]).unwrap();
    };
    a_damaged_entry_is_rebuilt("cache-short", header_only, "shorter").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_compiled_with_other_engine_settings_is_ignored_and_rebuilt() {
    // A well-formed entry, but compiled by an engine without the host's settings (no epoch
    // interruption, no pooling), put where the host's entry belongs: its tag covers the name it
    // was written under, so it is refused before wasmtime sees it.
    let other_engine = wasmtime::Engine::default();
    let foreign = ComponentCache::new(temp_dir("cache-foreign-source"), test_key());
    let (_, outcome) = foreign.component(&other_engine, &plugin_bytes()).unwrap();
    assert_eq!(outcome, CacheOutcome::Compiled);
    let copy_foreign = |path: &Path| {
        let source = foreign.entry_path(&other_engine, &plugin_bytes());
        assert_ne!(
            source.file_name(),
            path.file_name(),
            "settings are part of the key"
        );
        std::fs::copy(source, path).unwrap();
    };
    a_damaged_entry_is_rebuilt("cache-foreign", copy_foreign, "does not verify").await;
    let _ = std::fs::remove_dir_all(foreign.dir());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_forged_without_the_key_is_never_loaded() {
    // A well-formed entry for the host's own engine and component, made by someone who can
    // write the cache directory but holds another key: wasmtime would load it, the tag stops it.
    let forger_runtime = fresh_runtime();
    let forger = ComponentCache::new(temp_dir("cache-forger"), CacheKey::from_bytes(&[7; 32]));
    let (_, outcome) = forger
        .component(forger_runtime.engine(), &plugin_bytes())
        .unwrap();
    assert_eq!(outcome, CacheOutcome::Compiled);
    let plant_forgery = |path: &Path| {
        let forged = forger.entry_path(forger_runtime.engine(), &plugin_bytes());
        assert_eq!(
            forged.file_name(),
            path.file_name(),
            "same engine, same name"
        );
        std::fs::copy(forged, path).unwrap();
    };
    a_damaged_entry_is_rebuilt("cache-forged", plant_forgery, "forged").await;
    let _ = std::fs::remove_dir_all(forger.dir());
}

fn crm_host(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_crm-sandbox"))
        .env("XDG_CACHE_HOME", crate::fixtures::cache_home())
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--results-dir")
        .arg(dir.join("results"))
        .args(args)
        .output()
        .unwrap()
}

/// The compiled components in a cache directory (its key file left out).
fn cache_entries(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let paths = entries.filter_map(|e| e.ok()).map(|e| e.path());
    paths
        .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .collect()
}

/// `crm-sandbox --data-dir <dir>/<data> --cache-dir <cache> [extra] <command>`: its JSON
/// answer and what it said on stderr.
fn run_json(
    dir: &Path,
    data: &str,
    cache: &Path,
    extra: &[&str],
    command: &str,
) -> (Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_crm-sandbox"))
        .arg("--data-dir")
        .arg(dir.join(data))
        .arg("--cache-dir")
        .arg(cache)
        .args(extra)
        .arg(command)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    (
        serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        stderr,
    )
}

/// `precompile`: how it went; it must say nothing about the cache (a refused, rejected or
/// rewritten entry is a warning, a hit or a first compile is silent).
fn precompiled(dir: &Path, data: &str, cache: &Path) -> String {
    let (answer, stderr) = run_json(dir, data, cache, &[], "precompile");
    assert!(!stderr.contains("compiled-component cache"), "{stderr}");
    answer["outcome"].as_str().unwrap().to_string()
}

#[cfg(unix)]
#[test]
fn precompiling_fills_the_cache_every_host_reads_and_survives_a_corrupt_entry() {
    use std::os::unix::fs::MetadataExt;
    let dir = temp_dir("cli-cache");
    let cache = dir.join("cache");
    assert_eq!(precompiled(&dir, "host-a", &cache), "compiled");
    let entries = cache_entries(&cache);
    assert_eq!(entries.len(), 1, "{entries:?}");
    let entry = &entries[0];
    let compiled = std::fs::metadata(entry).unwrap();

    // Another host, with a data directory of its own, reads that entry: an entry is only
    // ever replaced by renaming a new file over it, so the same inode is the same entry.
    assert_eq!(precompiled(&dir, "host-b", &cache), "already compiled");
    assert_eq!(cache_entries(&cache), entries);
    let read = std::fs::metadata(entry).unwrap();
    assert_eq!((read.dev(), read.ino()), (compiled.dev(), compiled.ino()));
    assert!(
        !dir.join("host-a/cache.key").exists() && cache.join("cache.key").is_file(),
        "the key is the cache's, not a data directory's"
    );

    std::fs::write(entry, b"not a compiled component").unwrap();
    let (answer, warned) = run_json(&dir, "host-a", &cache, &[], "precompile");
    assert!(warned.contains("compiling afresh"), "{warned}");
    assert_eq!(answer["outcome"], "compiled, replacing an unusable entry");
    assert!(std::fs::read(entry).unwrap().len() > 1000, "and replaced");

    // Listing the tools needs no compiled code, with or without the cache.
    std::fs::remove_dir_all(&cache).unwrap();
    let (listed, _) = run_json(&dir, "host-a", &cache, &["--no-cache"], "tools");
    let carried = crm_host::listing::ToolListing::from_component(&plugin_bytes()).unwrap();
    assert_eq!(
        listed.as_array().unwrap().len(),
        carried.unwrap().specs.len()
    );
    assert!(!cache.exists(), "--no-cache writes nothing");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_cli_audit_file_holds_every_line_after_the_process_exits() {
    let dir = temp_dir("cli-audit");
    std::fs::create_dir_all(&dir).unwrap();
    let audit = dir.join("audit.jsonl");
    let call = |record_id: &str| {
        let input = format!(r#"{{"object":"Account","record_id":"{record_id}"}}"#);
        let out = crm_host(
            &dir,
            &[
                "--audit",
                audit.to_str().unwrap(),
                "call",
                "crmb_get_record",
                &input,
            ],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    };
    call("0015gA000000001ABA");
    call("0015gA000000001ABA");
    let lines: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let events: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(
        events,
        ["request", "tool_call", "request", "tool_call"],
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .all(|l| l["tenant"] == "acme" && l["at_ms"].is_u64())
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_on_a_reused_slot_starts_from_pristine_memory() {
    // Memory stays mapped between calls on a slot (only dirtied pages are reset): nothing one
    // call leaves in its data segment or zeroed memory reaches the next.
    let f = fixture_on(crate::fixtures::runtime(), record_stub(Duration::ZERO), &[]);
    f.host
        .swap_version("t1", crate::fixtures::probe(f.host.runtime()))
        .unwrap();
    let leftovers = || crate::fixtures::call("t1", "leftovers", serde_json::json!(null));
    for _ in 0..5 {
        let report = crate::fixtures::probe_report(f.host.call(leftovers()).await);
        assert_eq!(report, serde_json::json!({"data": 7, "zeros_dirty": false}));
    }
    let concurrent: Vec<_> = (0..8)
        .map(|_| {
            let host = f.host.clone();
            let request = leftovers();
            tokio::spawn(async move { host.call(request).await })
        })
        .collect();
    for call in concurrent {
        let report = crate::fixtures::probe_report(call.await.unwrap());
        assert_eq!(report, serde_json::json!({"data": 7, "zeros_dirty": false}));
    }
}
