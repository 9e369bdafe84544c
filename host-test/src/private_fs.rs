//! Files only the server's own user may read: a tenant's store (HMAC keys, journal, mappings)
//! and its result files hold CRM data and secrets, so they are created 0600 in 0700 folders
//! whatever the process's umask.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

/// Creates `dir` and its missing parents; the folders it creates are 0700.
pub fn create_dir_all(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Open options that create a file 0600.
pub fn options() -> OpenOptions {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

/// Creates `path` empty and 0600 if it does not exist (SQLite then gives its `-wal` and `-shm`
/// files the same mode); an existing file is left as it is.
pub fn touch(path: &Path) -> io::Result<File> {
    options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn folders_and_files_are_private_whatever_the_umask() {
        let root = std::env::temp_dir().join(format!("crm-private-{}", std::process::id()));
        let dir = root.join("a/b");
        create_dir_all(&dir).unwrap();
        let file = dir.join("store.sqlite");
        touch(&file).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&root.join("a")), 0o700);
        assert_eq!(mode(&file), 0o600);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
