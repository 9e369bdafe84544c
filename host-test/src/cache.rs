//! Compiled components kept on disk, so a later start of `crm-host` loads the component in
//! milliseconds instead of compiling it again; one cache serves every host the same OS user
//! runs on the machine, whatever their data directories.
//!
//! An entry is named by a key over the component's bytes, the wasmtime version and the
//! engine's compilation settings, so a different component, wasmtime or configuration never
//! finds another's entry. Loading compiled code is unsafe (wasmtime takes the bytes as machine
//! code), so an entry carries an HMAC-SHA256 tag over its name and artifact, made with the
//! cache's key ([`CacheKey`], `<cache dir>/cache.key`), and the directory is used only when no
//! other user can read that key or write the directory (see [`key`]): whoever cannot read the
//! key cannot make an entry the host will load. An entry whose tag does not verify is never
//! deserialized; wasmtime checks the artifact's version and settings once more. A missing,
//! truncated, corrupt, forged or foreign entry is compiled afresh and replaced; a cache that
//! cannot be trusted, read or written is a warning, never a failed load. What this does not
//! defend against: the host's own user can forge entries, as they could replace the binary.
//! (Hosts before this kept the key in each data directory, so hosts with different data
//! directories rejected each other's entries; that old `<data dir>/cache.key` is not used.)

pub mod key;

pub use key::{CacheKey, UntrustedCache};
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use wasmtime::Engine;
use wasmtime::component::Component;

/// The wasmtime the host is built with (`host-test/Cargo.toml` pins it exactly); part of every
/// key, and checked against `Cargo.lock` by a test.
pub const WASMTIME_VERSION: &str = "48.0.8";

/// The first bytes of every entry; the last byte is the entry format's version (2: HMAC tag).
const MAGIC: &[u8; 16] = b"crm-host-cwasm\0\x02";

/// Magic, then the HMAC-SHA256 tag, then the artifact.
const HEADER_LEN: usize = MAGIC.len() + 32;

/// Entries kept; older ones (by last use) are removed when a new one is written.
const KEEP_ENTRIES: usize = 8;

/// A directory of compiled components.
#[derive(Debug, Clone)]
pub struct ComponentCache {
    dir: PathBuf,
    key: CacheKey,
}

/// How a component was obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheOutcome {
    /// The runtime had loaded the same bytes already; the cache was not consulted.
    AlreadyLoaded,
    /// Loaded from a valid entry, without compiling.
    Hit,
    /// No entry: compiled, and stored when the directory allowed it.
    Compiled,
    /// An entry was there but unusable (the reason): compiled and replaced.
    Replaced(String),
}

/// What a cache holds for a component.
enum Lookup {
    Hit(Component),
    Missing,
    /// An entry that cannot be used, and why.
    Unusable(String),
}

/// Why an entry was not used.
#[derive(Debug, thiserror::Error)]
enum EntryError {
    #[error("shorter than its header")]
    Truncated,
    #[error("not a crm-host cache entry")]
    NotAnEntry,
    #[error(
        "the entry's tag does not verify: not written with this cache's key (forged or damaged)"
    )]
    NotAuthentic,
    #[error("wasmtime refused it: {0}")]
    Refused(wasmtime::Error),
}

impl ComponentCache {
    /// The cache in `dir` shared by every host of this OS user, its entries authenticated by
    /// `<dir>/cache.key` (both made when missing); refused unless the directory and key pass
    /// [`key`]'s ownership and permission checks.
    pub fn shared(dir: impl Into<PathBuf>) -> Result<Self, UntrustedCache> {
        let dir = dir.into();
        let key = CacheKey::for_cache_dir(&dir)?;
        Ok(Self::new(dir, key))
    }

    /// A cache in `dir` whose entries `key` authenticates, for a caller that keeps its own key
    /// (tests, benches, an embedder with a secret store).
    pub fn new(dir: impl Into<PathBuf>, key: CacheKey) -> Self {
        ComponentCache {
            dir: dir.into(),
            key,
        }
    }

    /// The per-user default: `$XDG_CACHE_HOME/crm-host`, else `~/.cache/crm-host`.
    pub fn default_dir() -> Option<PathBuf> {
        let non_empty = |var| std::env::var_os(var).filter(|v| !v.is_empty());
        non_empty("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| non_empty("HOME").map(|home| PathBuf::from(home).join(".cache")))
            .map(|base| base.join("crm-host"))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the entry for `wasm` compiled by `engine` is (whether or not it exists).
    pub fn entry_path(&self, engine: &Engine, wasm: &[u8]) -> PathBuf {
        self.path_of(&key(engine, wasm))
    }

    /// The entry named `name` (a [`key`]): the key hashes the whole component, so it is made
    /// once per lookup, not once per use.
    fn path_of(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.cwasm"))
    }

    /// The component compiled from `wasm` for `engine`: from its entry when a valid one is
    /// there, else compiled and stored.
    pub fn component(
        &self,
        engine: &Engine,
        wasm: &[u8],
    ) -> wasmtime::Result<(Component, CacheOutcome)> {
        let outcome = match self.lookup(engine, wasm) {
            Lookup::Hit(component) => return Ok((component, CacheOutcome::Hit)),
            Lookup::Missing => CacheOutcome::Compiled,
            Lookup::Unusable(why) => CacheOutcome::Replaced(why),
        };
        Ok((self.compile_and_store(engine, wasm)?, outcome))
    }

    /// The component from its entry, when a valid one is there; nothing is compiled.
    pub fn cached(&self, engine: &Engine, wasm: &[u8]) -> Option<Component> {
        match self.lookup(engine, wasm) {
            Lookup::Hit(component) => Some(component),
            Lookup::Missing | Lookup::Unusable(_) => None,
        }
    }

    /// What the entry for `wasm` holds; an unusable one is a warning.
    fn lookup(&self, engine: &Engine, wasm: &[u8]) -> Lookup {
        let name = key(engine, wasm);
        let path = self.path_of(&name);
        match std::fs::read(&path) {
            Ok(entry) => match load_entry(engine, &self.key, &name, &entry) {
                Ok(component) => {
                    touch(&path);
                    Lookup::Hit(component)
                }
                Err(err) => {
                    tracing::warn!(
                        "compiled-component cache: {}: {err}; compiling afresh",
                        path.display()
                    );
                    Lookup::Unusable(err.to_string())
                }
            },
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Lookup::Missing,
            Err(err) => {
                tracing::warn!(
                    "compiled-component cache: reading {}: {err}",
                    path.display()
                );
                Lookup::Missing
            }
        }
    }

    /// Compiles `wasm` and stores the result (a store that fails is a warning).
    pub fn compile_and_store(&self, engine: &Engine, wasm: &[u8]) -> wasmtime::Result<Component> {
        let name = key(engine, wasm);
        let path = self.path_of(&name);
        let artifact = engine.precompile_component(wasm)?;
        // SAFETY: the artifact was produced just now by this engine, from these bytes.
        let component = unsafe { Component::deserialize(engine, &artifact)? };
        if let Err(err) = self.store(&path, &name, &artifact) {
            tracing::warn!(
                "compiled-component cache: writing {}: {err}",
                path.display()
            );
        }
        Ok(component)
    }

    /// Writes an entry atomically (a temporary file renamed into place, so a reader sees a
    /// whole entry or none), then trims the directory to the most recently used entries.
    fn store(&self, path: &Path, name: &str, artifact: &[u8]) -> std::io::Result<()> {
        crate::private_fs::create_dir_all(&self.dir)?;
        let mut entry = Vec::with_capacity(HEADER_LEN + artifact.len());
        entry.extend_from_slice(MAGIC);
        entry.extend_from_slice(self.key.tag(name, artifact).as_ref());
        entry.extend_from_slice(artifact);
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        let temp = self.dir.join(format!(
            ".{}.{}.{nanos}.tmp",
            std::process::id(),
            entry.len()
        ));
        let written = std::fs::write(&temp, &entry).and_then(|()| std::fs::rename(&temp, path));
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        written?;
        self.trim();
        Ok(())
    }

    /// Removes all but the [`KEEP_ENTRIES`] most recently used entries (best effort).
    fn trim(&self) {
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut entries: Vec<(SystemTime, PathBuf)> = dir
            .filter_map(|e| e.ok())
            .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .collect();
        entries.sort_by_key(|entry| std::cmp::Reverse(entry.0));
        for (_, old) in entries.into_iter().skip(KEEP_ENTRIES) {
            let _ = std::fs::remove_file(old);
        }
    }
}

/// Checks an entry's header and tag, then hands the artifact to wasmtime.
fn load_entry(
    engine: &Engine,
    cache_key: &CacheKey,
    name: &str,
    entry: &[u8],
) -> Result<Component, EntryError> {
    if entry.len() < HEADER_LEN {
        return Err(EntryError::Truncated);
    }
    let (header, artifact) = entry.split_at(HEADER_LEN);
    let (magic, tag) = header.split_at(MAGIC.len());
    if magic != MAGIC {
        return Err(EntryError::NotAnEntry);
    }
    if !cache_key.verify(name, artifact, tag) {
        return Err(EntryError::NotAuthentic);
    }
    // SAFETY: the artifact is byte for byte what `store` wrote from `precompile_component`'s
    // output under this name (its HMAC tag, made with a key only this uid can read, verifies);
    // wasmtime still checks its version and settings.
    unsafe { Component::deserialize(engine, artifact) }.map_err(EntryError::Refused)
}

/// Marks an entry as just used, so trimming keeps it (best effort).
fn touch(path: &Path) {
    if let Ok(file) = std::fs::File::options().write(true).open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

/// Hex SHA-256 over the key's parts: the component's digest, the wasmtime version and the
/// engine's compilation settings (as wasmtime hashes them for this purpose).
fn key(engine: &Engine, wasm: &[u8]) -> String {
    let mut hasher = ShaHasher(Sha256::new());
    hasher.0.update(b"crm-host compiled component\0");
    hasher.0.update(WASMTIME_VERSION.as_bytes());
    hasher.0.update([0]);
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hasher.0.update(Sha256::digest(wasm));
    hasher
        .0
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A [`Hasher`] feeding SHA-256, so the engine's settings hash is the same from run to run
/// (std's hashers make no such promise).
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        let digest = self.0.clone().finalize();
        u64::from_le_bytes(digest[..8].try_into().expect("8 bytes"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pinned_wasmtime_version_is_the_one_in_the_lock_file() {
        let lock = include_str!("../../Cargo.lock");
        let pinned = format!("name = \"wasmtime\"\nversion = \"{WASMTIME_VERSION}\"");
        assert!(lock.contains(&pinned), "Cargo.lock has no {pinned:?}");
    }

    #[test]
    fn keys_differ_by_component_and_by_engine_settings() {
        let engine = Engine::default();
        let mut epochs = wasmtime::Config::new();
        epochs.epoch_interruption(true);
        let other = Engine::new(&epochs).unwrap();
        assert_eq!(key(&engine, b"a"), key(&engine, b"a"));
        assert_ne!(key(&engine, b"a"), key(&engine, b"b"));
        assert_ne!(key(&engine, b"a"), key(&other, b"a"));
    }

    #[test]
    fn entries_that_are_short_foreign_altered_or_forged_are_refused_before_wasmtime_sees_them() {
        let engine = Engine::default();
        let cache_key = CacheKey::from_bytes(&[1; 32]);
        let load = |entry: &[u8]| load_entry(&engine, &cache_key, "name", entry);
        assert!(matches!(load(b"crm"), Err(EntryError::Truncated)));
        let foreign = [7u8; HEADER_LEN + 10];
        assert!(matches!(load(&foreign), Err(EntryError::NotAnEntry)));
        let entry = |key: &CacheKey, name: &str, artifact: &[u8]| {
            let mut entry = MAGIC.to_vec();
            entry.extend_from_slice(key.tag(name, artifact).as_ref());
            entry.extend_from_slice(artifact);
            entry
        };
        let mut altered = entry(&cache_key, "name", b"artifact");
        *altered.last_mut().unwrap() = b'T';
        assert!(matches!(load(&altered), Err(EntryError::NotAuthentic)));
        // A forger who can write the cache directory but does not hold the key.
        let forged = entry(&CacheKey::from_bytes(&[2; 32]), "name", b"artifact");
        assert!(matches!(load(&forged), Err(EntryError::NotAuthentic)));
        // A genuine entry moved under another entry's name.
        let moved = entry(&cache_key, "other name", b"artifact");
        assert!(matches!(load(&moved), Err(EntryError::NotAuthentic)));
        // The old format: an unkeyed SHA-256 anyone can compute.
        let mut old = b"crm-host-cwasm\0\x01".to_vec();
        old.extend_from_slice(&Sha256::digest(b"artifact"));
        old.extend_from_slice(b"artifact");
        assert!(matches!(load(&old), Err(EntryError::NotAnEntry)));
    }

    /// The smallest component: a header and nothing else.
    const EMPTY_COMPONENT: &[u8] = b"\0asm\x0d\0\x01\0";

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("crm-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn hosts_with_different_data_directories_share_one_cache_directory() {
        // Each host opens the cache as `crm-host` does, knowing nothing but the directory.
        let dir = temp_dir("shared");
        let first_host = ComponentCache::shared(&dir).unwrap();
        let (_, outcome) = first_host
            .component(&Engine::default(), EMPTY_COMPONENT)
            .unwrap();
        assert_eq!(outcome, CacheOutcome::Compiled);

        let second_host = ComponentCache::shared(&dir).unwrap();
        let (_, outcome) = second_host
            .component(&Engine::default(), EMPTY_COMPONENT)
            .unwrap();
        assert_eq!(outcome, CacheOutcome::Hit);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_tampered_entry_in_a_shared_cache_is_still_refused_and_replaced() {
        let dir = temp_dir("tampered");
        let engine = Engine::default();
        let cache = ComponentCache::shared(&dir).unwrap();
        cache.component(&engine, EMPTY_COMPONENT).unwrap();
        let entry = cache.entry_path(&engine, EMPTY_COMPONENT);
        let mut bytes = std::fs::read(&entry).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        std::fs::write(&entry, bytes).unwrap();

        let other_host = ComponentCache::shared(&dir).unwrap();
        let (_, outcome) = other_host.component(&engine, EMPTY_COMPONENT).unwrap();
        match outcome {
            CacheOutcome::Replaced(why) => assert!(why.contains("does not verify"), "{why}"),
            other => panic!("the tampered entry was used: {other:?}"),
        }
        assert_eq!(
            other_host.component(&engine, EMPTY_COMPONENT).unwrap().1,
            CacheOutcome::Hit
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_cache_directory_others_may_write_is_not_used_at_all() {
        use std::os::unix::fs::PermissionsExt;
        let dir = temp_dir("open");
        crate::private_fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(matches!(
            ComponentCache::shared(&dir),
            Err(UntrustedCache::DirWritableByOthers { .. })
        ));
        assert!(!dir.join(key::KEY_FILE).exists(), "no key is made there");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
