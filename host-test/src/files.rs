//! `result-files`: the calling tenant's results directory, the one place a component writes.
//!
//! The component names files, never paths: a name is 1 to 128 characters of letters, digits,
//! `.`, `-` and `_`, not starting with a dot, so no name can leave the directory or hide a file.
//! Each call's store holds only its own user's directory inside its tenant's: a result belongs
//! to the user who made it ([`ResultOwner`]), and `publish` answers where that user finds it.

use crate::bindings::crm::plugin::result_files::{self, FileError};
use crate::governance::HostPolicy;
use crate::result_file::{AppendError, ResultFile};
use crate::tenant_db::ResultOwner;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use wasmtime::component::{HasData, Resource, ResourceTable};

/// How long a result file is served after it was written; an older one is deleted when next
/// listed or asked for. A day covers a conversation, and a file never outlives its use by much.
pub const RESULT_FILE_TTL: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

/// Longest file name a component may use.
const MAX_NAME_LEN: usize = 128;

/// One user's results directory with the per-file size ceiling, as a call's store holds it.
#[derive(Debug)]
pub(crate) struct ResultsDir {
    /// The calling user's directory inside the tenant's, made when the first file is.
    pub(crate) dir: PathBuf,
    /// Whose files these are: the key they are kept under in a fleet's store.
    pub(crate) owner: ResultOwner,
    pub(crate) max_file_bytes: u64,
    /// Files this call created and has not published or discarded yet.
    pub(crate) unpublished: Unpublished,
}

/// The files a call created and did not publish. They are removed when the call's store goes,
/// however the call ended (an error, the host's timeout, a client's cancel), so nothing
/// half-written stays in the tenant's directory.
#[derive(Debug, Default)]
pub(crate) struct Unpublished(Vec<PathBuf>);

impl Unpublished {
    fn forget(&mut self, path: &Path) {
        self.0.retain(|p| p != path);
    }
}

impl Drop for Unpublished {
    fn drop(&mut self) {
        for path in self.0.drain(..) {
            let _ = fs::remove_file(&path);
            remove_if_empty(&path);
        }
    }
}

/// Removes the user's folder a file was in when nothing is left in it (a call that made no
/// result leaves no trace; `remove_dir` refuses a folder that holds anything).
fn remove_if_empty(file: &Path) {
    if let Some(folder) = file.parent() {
        let _ = fs::remove_dir(folder);
    }
}

/// The directory's path for a plain file name, or why the name is refused.
pub(crate) fn path_in(dir: &Path, name: &str) -> Result<PathBuf, FileError> {
    let plain = (1..=MAX_NAME_LEN).contains(&name.len())
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if plain {
        Ok(dir.join(name))
    } else {
        Err(FileError::InvalidName(name.to_owned()))
    }
}

/// `result-files` as one call sees it: its tenant's directory, the call's resource table, and
/// the tenant's policy (which masks each line written).
pub(crate) struct FilesView<'a> {
    pub(crate) results: Option<&'a mut ResultsDir>,
    pub(crate) table: &'a mut ResourceTable,
    pub(crate) policy: &'a Arc<HostPolicy>,
    /// The tenant's store: a fleet's keeps each published file, so every host can serve it.
    pub(crate) store: &'a crate::tenant_db::TenantDb,
}

/// The `result-files` capability, for the linker: its host data is a [`FilesView`].
pub(crate) struct ResultFiles;

impl HasData for ResultFiles {
    type Data<'a> = FilesView<'a>;
}

impl FilesView<'_> {
    fn results_dir(&self) -> Result<&ResultsDir, FileError> {
        self.results.as_deref().ok_or(FileError::NoDirectory)
    }

    fn unpublished(&mut self) -> Option<&mut Unpublished> {
        self.results.as_mut().map(|r| &mut r.unpublished)
    }
}

impl result_files::Host for FilesView<'_> {
    fn create(&mut self, name: String) -> Result<Resource<ResultFile>, FileError> {
        let dir = &self.results_dir()?.dir;
        let path = path_in(dir, &name)?;
        let open = || {
            crate::private_fs::create_dir_all(dir)?;
            crate::private_fs::options()
                .write(true)
                .create_new(true)
                .open(&path)
        };
        // Once more if another call of this user removed the emptied folder in between.
        let file = open()
            .or_else(|e| match e.kind() {
                std::io::ErrorKind::NotFound => open(),
                _ => Err(e),
            })
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => FileError::Exists(name.clone()),
                _ => FileError::Io(format!("creating {name}: {e}")),
            })?;
        if let Some(unpublished) = self.unpublished() {
            unpublished.0.push(path);
        }
        let mask = self.policy.masks().then(|| self.policy.clone());
        self.table
            .push(ResultFile::new(file, mask))
            .map_err(|e| FileError::Io(e.to_string()))
    }

    fn publish(&mut self, partial: String, final_: String) -> Result<String, FileError> {
        let results = self.results_dir()?;
        let (from, to) = (
            path_in(&results.dir, &partial)?,
            path_in(&results.dir, &final_)?,
        );
        // Kept for the fleet first: a file another host cannot serve is not published.
        self.store
            .keep_result_file(&results.owner, &final_, &from, RESULT_FILE_TTL)
            .map_err(|e| FileError::Io(format!("keeping {final_} for every host: {e}")))?;
        fs::rename(&from, &to).map_err(|e| FileError::Io(format!("publishing {final_}: {e}")))?;
        if let Some(unpublished) = self.unpublished() {
            unpublished.forget(&from);
        }
        Ok(to.display().to_string())
    }

    fn discard(&mut self, name: String) {
        if let Ok(path) = self.results_dir().and_then(|r| path_in(&r.dir, &name)) {
            let _ = fs::remove_file(&path);
            remove_if_empty(&path);
            if let Some(unpublished) = self.unpublished() {
                unpublished.forget(&path);
            }
        }
    }
}

impl result_files::HostResultFile for FilesView<'_> {
    fn write(&mut self, file: Resource<ResultFile>, bytes: Vec<u8>) -> Result<(), FileError> {
        let max = self.results_dir()?.max_file_bytes;
        let file = self
            .table
            .get_mut(&file)
            .map_err(|e| FileError::Io(e.to_string()))?;
        file.append(&bytes, max).map_err(|e| match e {
            AppendError::TooLarge(limit) => FileError::TooLarge(limit),
            AppendError::Io(m) => FileError::Io(m),
        })
    }

    fn drop(&mut self, file: Resource<ResultFile>) -> wasmtime::Result<()> {
        let file = self.table.delete(file)?;
        file.finish()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names_reach_the_directory() {
        let dir = Path::new("/tenant");
        assert_eq!(
            path_in(dir, "query-1a2b.jsonl").unwrap(),
            dir.join("query-1a2b.jsonl")
        );
        for bad in [
            "",
            ".",
            "..",
            "../x",
            "a/b",
            "/etc/passwd",
            ".hidden",
            "a\\b",
            "a b",
            "%2e%2e",
        ] {
            assert!(path_in(dir, bad).is_err(), "{bad:?}");
        }
        assert!(path_in(dir, &"a".repeat(129)).is_err());
    }
}
