//! The secret that authenticates compiled-component cache entries, and when a cache directory
//! is trusted to hold it.
//!
//! The key lives in the cache directory itself (`<cache dir>/cache.key`), so every host the same
//! OS user runs shares one cache, whatever its data directory. The directory is trusted only as
//! ssh's `StrictModes` trusts `~/.ssh`: it belongs to the process's effective uid and no one
//! else may write it, and the key file belongs to that uid and no one else may read or write it.
//! Whoever could then forge an entry can already write files as this user, and so could replace
//! the host's binary itself. Anything else is refused (the caller compiles without the cache).

use ring::hmac;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The key file's name inside the cache directory.
pub const KEY_FILE: &str = "cache.key";

/// The secret that authenticates cache entries (HMAC-SHA256).
#[derive(Clone)]
pub struct CacheKey(hmac::Key);

impl std::fmt::Debug for CacheKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CacheKey(..)")
    }
}

/// Why a cache directory, or the key in it, is not trusted.
#[derive(Debug, thiserror::Error)]
pub enum UntrustedCache {
    #[error("{} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error("{} is not a regular file", .0.display())]
    NotAFile(PathBuf),
    #[error("{} belongs to uid {owner}, not to this process's uid {euid}", .path.display())]
    NotOwned {
        path: PathBuf,
        owner: u32,
        euid: u32,
    },
    #[error(
        "{} can be written by its group or others (mode {mode:03o}), who could replace its key; \
         `chmod go-w {}` to use it",
        .path.display(), .path.display()
    )]
    DirWritableByOthers { path: PathBuf, mode: u32 },
    #[error(
        "{} can be read or written by its group or others (mode {mode:03o}); it must be 0600",
        .path.display()
    )]
    KeyNotPrivate { path: PathBuf, mode: u32 },
    #[error("{} is not a 32-byte key", .0.display())]
    NotAKey(PathBuf),
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("this platform has no file owners and modes to check the cache directory by")]
    Unsupported,
}

/// What decides whether a file is trusted: its owner and mode, as `stat` gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub(crate) owner: u32,
    pub(crate) mode: u32,
}

/// A directory holding the key: this uid's, and writable by no one else.
pub(crate) fn check_dir(path: &Path, stat: Stat, euid: u32) -> Result<(), UntrustedCache> {
    check_owner(path, stat, euid)?;
    if stat.mode & 0o022 != 0 {
        return Err(UntrustedCache::DirWritableByOthers {
            path: path.into(),
            mode: stat.mode & 0o7777,
        });
    }
    Ok(())
}

/// The key file: this uid's, and neither readable nor writable by anyone else.
pub(crate) fn check_key_file(path: &Path, stat: Stat, euid: u32) -> Result<(), UntrustedCache> {
    check_owner(path, stat, euid)?;
    if stat.mode & 0o077 != 0 {
        return Err(UntrustedCache::KeyNotPrivate {
            path: path.into(),
            mode: stat.mode & 0o7777,
        });
    }
    Ok(())
}

fn check_owner(path: &Path, stat: Stat, euid: u32) -> Result<(), UntrustedCache> {
    if stat.owner != euid {
        return Err(UntrustedCache::NotOwned {
            path: path.into(),
            owner: stat.owner,
            euid,
        });
    }
    Ok(())
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> UntrustedCache + '_ {
    move |source| UntrustedCache::Io {
        path: path.into(),
        source,
    }
}

#[cfg(unix)]
fn stat_of(metadata: &std::fs::Metadata) -> Result<Stat, UntrustedCache> {
    use std::os::unix::fs::MetadataExt;
    Ok(Stat {
        owner: metadata.uid(),
        mode: metadata.mode(),
    })
}

#[cfg(not(unix))]
fn stat_of(_: &std::fs::Metadata) -> Result<Stat, UntrustedCache> {
    Err(UntrustedCache::Unsupported)
}

/// The uid files are checked against: the one this process creates them as.
fn effective_uid() -> u32 {
    #[cfg(unix)]
    {
        // SAFETY: geteuid has no preconditions and cannot fail.
        unsafe { libc::geteuid() }
    }
    #[cfg(not(unix))]
    {
        0
    }
}

impl CacheKey {
    /// A key from 32 secret bytes.
    pub fn from_bytes(bytes: &[u8; 32]) -> Self {
        CacheKey(hmac::Key::new(hmac::HMAC_SHA256, bytes))
    }

    /// A fresh random key, for a process that keeps its cache to itself.
    pub fn random() -> std::io::Result<Self> {
        Ok(Self::from_bytes(&random_bytes()?))
    }

    /// The key of the cache in `dir` (`<dir>/cache.key`, made when missing, as is `dir`), when
    /// `dir` and the key file pass the checks of the module's documentation.
    pub fn for_cache_dir(dir: &Path) -> Result<Self, UntrustedCache> {
        crate::private_fs::create_dir_all(dir).map_err(io_error(dir))?;
        let metadata = std::fs::metadata(dir).map_err(io_error(dir))?;
        if !metadata.is_dir() {
            return Err(UntrustedCache::NotADirectory(dir.into()));
        }
        check_dir(dir, stat_of(&metadata)?, effective_uid())?;
        Self::load_or_create(&dir.join(KEY_FILE))
    }

    /// The key in `path` (32 bytes; the file this uid's and owner-only, checked on the open
    /// file, never through a symbolic link), created there with fresh random bytes when the
    /// file does not exist yet. Concurrent first starts agree on one key.
    pub fn load_or_create(path: &Path) -> Result<Self, UntrustedCache> {
        match open_key_file(path) {
            Ok(file) => read_key(path, file),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => create_key(path),
            Err(err) => Err(io_error(path)(err)),
        }
    }

    pub(crate) fn tag(&self, name: &str, artifact: &[u8]) -> hmac::Tag {
        let mut context = hmac::Context::with_key(&self.0);
        context.update(name.as_bytes());
        context.update(&[0]);
        context.update(artifact);
        context.sign()
    }

    /// Whether `tag` is this key's over `name` and `artifact`.
    pub(crate) fn verify(&self, name: &str, artifact: &[u8], tag: &[u8]) -> bool {
        let mut message = Vec::with_capacity(name.len() + 1 + artifact.len());
        message.extend_from_slice(name.as_bytes());
        message.push(0);
        message.extend_from_slice(artifact);
        hmac::verify(&self.0, &message, tag).is_ok()
    }
}

fn open_key_file(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path)
}

/// Reads a key from the file opened at `path`, after checking that file (not the path, which
/// could be swapped in between) is this uid's alone.
fn read_key(path: &Path, file: std::fs::File) -> Result<CacheKey, UntrustedCache> {
    let metadata = file.metadata().map_err(io_error(path))?;
    if !metadata.is_file() {
        return Err(UntrustedCache::NotAFile(path.into()));
    }
    check_key_file(path, stat_of(&metadata)?, effective_uid())?;
    let mut bytes = Vec::with_capacity(33);
    file.take(33)
        .read_to_end(&mut bytes)
        .map_err(io_error(path))?;
    let bytes: [u8; 32] = bytes
        .try_into()
        .map_err(|_| UntrustedCache::NotAKey(path.into()))?;
    Ok(CacheKey::from_bytes(&bytes))
}

/// Writes fresh random bytes whole to a temporary file, then links it into place: a
/// concurrent start sees no key or a whole one, and the first link wins (a loser reads it).
fn create_key(path: &Path) -> Result<CacheKey, UntrustedCache> {
    let parent = path.parent().unwrap_or(Path::new("."));
    crate::private_fs::create_dir_all(parent).map_err(io_error(parent))?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let temp = parent.join(format!(".cache-key.{}.{nanos}.tmp", std::process::id()));
    let bytes = random_bytes().map_err(io_error(path))?;
    let written = crate::private_fs::options()
        .write(true)
        .create_new(true)
        .open(&temp)
        .and_then(|mut file| std::io::Write::write_all(&mut file, &bytes));
    let linked = written.and_then(|()| std::fs::hard_link(&temp, path));
    let _ = std::fs::remove_file(&temp);
    match linked {
        Ok(()) => Ok(CacheKey::from_bytes(&bytes)),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
            CacheKey::load_or_create(path)
        }
        Err(err) => Err(io_error(path)(err)),
    }
}

fn random_bytes() -> std::io::Result<[u8; 32]> {
    let mut bytes = [0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .map_err(|_| std::io::Error::other("no system randomness for the cache key"))?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("crm-cache-key-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn same_key(a: &CacheKey, b: &CacheKey) -> bool {
        a.tag("n", b"a").as_ref() == b.tag("n", b"a").as_ref()
    }

    #[test]
    fn only_a_directory_of_this_uid_that_no_one_else_may_write_holds_the_key() {
        let path = Path::new("/cache");
        let stat = |owner, mode| Stat { owner, mode };
        assert!(check_dir(path, stat(1000, 0o40700), 1000).is_ok());
        assert!(check_dir(path, stat(1000, 0o40755), 1000).is_ok());
        assert!(matches!(
            check_dir(path, stat(1001, 0o40700), 1000),
            Err(UntrustedCache::NotOwned {
                owner: 1001,
                euid: 1000,
                ..
            })
        ));
        for mode in [0o40775, 0o40757, 0o41777] {
            assert!(matches!(
                check_dir(path, stat(1000, mode), 1000),
                Err(UntrustedCache::DirWritableByOthers { .. })
            ));
        }
    }

    #[test]
    fn only_a_key_file_of_this_uid_that_no_one_else_may_read_is_used() {
        let path = Path::new("/cache/cache.key");
        let stat = |owner, mode| Stat { owner, mode };
        assert!(check_key_file(path, stat(1000, 0o100600), 1000).is_ok());
        assert!(check_key_file(path, stat(1000, 0o100400), 1000).is_ok());
        assert!(matches!(
            check_key_file(path, stat(0, 0o100600), 1000),
            Err(UntrustedCache::NotOwned { .. })
        ));
        for mode in [0o100640, 0o100604, 0o100660, 0o100644] {
            let refused = check_key_file(path, stat(1000, mode), 1000).unwrap_err();
            assert!(matches!(refused, UntrustedCache::KeyNotPrivate { .. }));
            assert!(refused.to_string().contains("must be 0600"), "{refused}");
        }
    }

    #[test]
    fn the_key_file_is_made_once_in_the_cache_directory_owner_only_and_then_reused() {
        let dir = temp_dir("reuse");
        let first = CacheKey::for_cache_dir(&dir).unwrap();
        let second = CacheKey::for_cache_dir(&dir).unwrap();
        assert!(same_key(&first, &second));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&dir.join(KEY_FILE)), 0o600);
            assert_eq!(mode(&dir), 0o700, "a directory the host makes is private");
        }
        std::fs::write(dir.join(KEY_FILE), b"short").unwrap();
        assert!(matches!(
            CacheKey::for_cache_dir(&dir),
            Err(UntrustedCache::NotAKey(_))
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn concurrent_first_starts_agree_on_one_key() {
        let dir = temp_dir("race");
        let keys: Vec<CacheKey> = std::thread::scope(|scope| {
            let starts: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| CacheKey::for_cache_dir(&dir).unwrap()))
                .collect();
            starts.into_iter().map(|s| s.join().unwrap()).collect()
        });
        assert!(keys.iter().all(|key| same_key(key, &keys[0])));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_directory_others_may_write_or_a_key_others_may_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let chmod = |p: &Path, mode| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        let dir = temp_dir("loose");
        CacheKey::for_cache_dir(&dir).unwrap();

        chmod(&dir, 0o777);
        let refused = CacheKey::for_cache_dir(&dir).unwrap_err();
        assert!(
            matches!(
                refused,
                UntrustedCache::DirWritableByOthers { mode: 0o777, .. }
            ),
            "{refused}"
        );
        assert!(refused.to_string().contains("chmod go-w"), "{refused}");
        chmod(&dir, 0o770);
        assert!(CacheKey::for_cache_dir(&dir).is_err(), "group-writable");
        chmod(&dir, 0o755);
        CacheKey::for_cache_dir(&dir).unwrap();

        chmod(&dir.join(KEY_FILE), 0o644);
        assert!(matches!(
            CacheKey::for_cache_dir(&dir),
            Err(UntrustedCache::KeyNotPrivate { mode: 0o644, .. })
        ));
        chmod(&dir.join(KEY_FILE), 0o600);

        // A key file that is a link to some other file of this uid is not followed.
        let elsewhere = dir.join("elsewhere");
        std::fs::rename(dir.join(KEY_FILE), &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.join(KEY_FILE)).unwrap();
        assert!(matches!(
            CacheKey::for_cache_dir(&dir),
            Err(UntrustedCache::Io { .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_key_file_of_another_uid_is_refused() {
        // Only root can give a file away; elsewhere the check itself is tested above.
        if effective_uid() != 0 {
            return;
        }
        let dir = temp_dir("owner");
        CacheKey::for_cache_dir(&dir).unwrap();
        std::os::unix::fs::chown(dir.join(KEY_FILE), Some(65534), None).unwrap();
        assert!(matches!(
            CacheKey::for_cache_dir(&dir),
            Err(UntrustedCache::NotOwned { owner: 65534, .. })
        ));
        std::os::unix::fs::chown(&dir, Some(65534), None).unwrap();
        assert!(matches!(
            CacheKey::for_cache_dir(&dir),
            Err(UntrustedCache::NotOwned { owner: 65534, .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
