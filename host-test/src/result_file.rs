//! A result file being written: the component's `result-file` resource. Size-capped, and
//! masked line by line when the tenant masks fields, so a masked value never reaches the disk.

use crate::governance::HostPolicy;
use std::fs::File;
use std::io::Write;
use std::sync::Arc;

/// Why a write to a result file failed (the `result-files` capability names it to the
/// component as its WIT `file-error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AppendError {
    /// The file would pass the host's size limit, in bytes.
    TooLarge(u64),
    /// The file system failed.
    Io(String),
}

/// A result file being written, as the component's `result-file` resource.
pub struct ResultFile {
    file: File,
    written: u64,
    /// The tenant's policy when it masks fields: each line is masked before it is written.
    mask: Option<Arc<HostPolicy>>,
    /// The end of the last write, not yet a whole line.
    partial: Vec<u8>,
}

impl ResultFile {
    pub(crate) fn new(file: File, mask: Option<Arc<HostPolicy>>) -> Self {
        ResultFile {
            file,
            written: 0,
            mask,
            partial: Vec::new(),
        }
    }

    /// Writes `bytes` (masked by whole lines when the policy masks), refusing to pass `max`.
    pub(crate) fn append(&mut self, bytes: &[u8], max: u64) -> Result<(), AppendError> {
        if self.written + bytes.len() as u64 > max {
            return Err(AppendError::TooLarge(max));
        }
        self.written += bytes.len() as u64;
        let Some(policy) = self.mask.clone() else {
            return self
                .file
                .write_all(bytes)
                .map_err(|e| AppendError::Io(e.to_string()));
        };
        self.partial.extend_from_slice(bytes);
        let Some(end) = self.partial.iter().rposition(|b| *b == b'\n') else {
            return Ok(());
        };
        let whole: Vec<u8> = self.partial.drain(..=end).collect();
        let mut masked = Vec::with_capacity(whole.len());
        for line in whole.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            masked.extend(policy.mask_line(line).unwrap_or_default());
            masked.push(b'\n');
        }
        self.file
            .write_all(&masked)
            .map_err(|e| AppendError::Io(e.to_string()))
    }

    /// Writes what is left: a last line without its newline is masked like the others.
    pub(crate) fn finish(mut self) -> std::io::Result<()> {
        if let Some(policy) = self.mask.clone()
            && !self.partial.is_empty()
            && let Some(line) = policy.mask_line(&self.partial)
        {
            self.file.write_all(&line)?;
        }
        Ok(())
    }
}
