//! The host's `result-files` import as the core's [`ResultFiles`]: the tenant's results
//! directory, reached by plain file names only.

use super::crm::plugin::result_files as wit_files;
use crate::tool::ResultFiles;
use std::io::{self, Write};

/// The calling tenant's results directory, as the host binds it.
pub(super) struct HostFiles;

impl ResultFiles for HostFiles {
    fn create(&mut self, name: &str) -> io::Result<Box<dyn Write>> {
        let file = wit_files::create(name).map_err(io::Error::other)?;
        Ok(Box::new(HostFile(file)))
    }

    fn publish(&mut self, from: &str, to: &str) -> io::Result<()> {
        wit_files::publish(from, to).map_err(io::Error::other)
    }

    fn discard(&mut self, name: &str) {
        wit_files::discard(name);
    }
}

/// One file being written; the core buffers before writing, so each write is one host call.
struct HostFile(wit_files::ResultFile);

impl Write for HostFile {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.write(bytes).map_err(io::Error::other)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
