//! The host's `result-files` import as the core's [`ResultFiles`]: the tenant's results
//! directory, reached by plain file names only.

use super::crm::plugin::result_files as wit_files;
use crate::tool::ResultFiles;
use std::io::{self, Write};

/// The calling tenant's results directory, as the host binds it.
pub(super) struct HostFiles;

impl ResultFiles for HostFiles {
    fn create(&mut self, name: &str) -> io::Result<Box<dyn Write>> {
        let file = wit_files::create(name).map_err(io_error)?;
        Ok(Box::new(HostFile(file)))
    }

    fn publish(&mut self, from: &str, to: &str) -> io::Result<String> {
        wit_files::publish(from, to).map_err(io_error)
    }

    fn discard(&mut self, name: &str) {
        wit_files::discard(name);
    }
}

/// One file being written; the core buffers before writing, so each write is one host call.
struct HostFile(wit_files::ResultFile);

impl Write for HostFile {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.write(bytes).map_err(io_error)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The host's typed file error as an I/O error of the matching kind.
fn io_error(error: wit_files::FileError) -> io::Error {
    let (kind, message) = match error {
        wit_files::FileError::NoDirectory => (
            io::ErrorKind::NotFound,
            "this workspace has no results directory".to_string(),
        ),
        wit_files::FileError::InvalidName(name) => (
            io::ErrorKind::InvalidInput,
            format!("{name:?} is not a plain file name"),
        ),
        wit_files::FileError::Exists(name) => {
            (io::ErrorKind::AlreadyExists, format!("{name} exists"))
        }
        wit_files::FileError::TooLarge(limit) => (
            io::ErrorKind::FileTooLarge,
            format!("the result file would pass the host's limit of {limit} bytes"),
        ),
        wit_files::FileError::Io(m) => (io::ErrorKind::Other, m),
    };
    io::Error::new(kind, message)
}
