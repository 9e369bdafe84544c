//! The quarantined system layer: the one place the component reaches the filesystem. The
//! shell hands it to the core through the [`ResultFiles`] seam; native tests use the same.

use crate::tool::ResultFiles;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::PathBuf;

/// A results directory on the filesystem (the component's preopened, per-tenant directory).
#[derive(Debug, Clone)]
pub struct DirFiles {
    dir: PathBuf,
}

impl DirFiles {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        DirFiles { dir: dir.into() }
    }
}

impl ResultFiles for DirFiles {
    fn create(&mut self, name: &str) -> io::Result<Box<dyn Write>> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.dir.join(name))?;
        Ok(Box::new(file))
    }

    fn publish(&mut self, from: &str, to: &str) -> io::Result<()> {
        fs::rename(self.dir.join(from), self.dir.join(to))
    }

    fn discard(&mut self, name: &str) {
        let _ = fs::remove_file(self.dir.join(name));
    }
}
