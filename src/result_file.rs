//! What the tools that write result files share: the file's name, its creation as a
//! `.partial` in the tenant's results directory (through [`Session::files`]), the path the
//! user is shown, and the error a failed write becomes. `crmb_run_soql_query` and
//! `crma_search_records` with `to_file` both write through it: a partial file, published when
//! complete and discarded on any failure, so nothing half-written is ever a result.

use crate::error::ToolError;
use crate::tool::Session;
use schemars::JsonSchema;
use serde::Serialize;
use std::io::Write;

/// The format of a result file.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum FileFormat {
    /// JSON Lines: one record, as a JSON object, per line.
    Jsonl,
}

/// FNV-1a of a text: names a result file after what produced it, and ties cursors to queries.
pub(crate) fn fingerprint(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// A failed write to (or publish of) the result file `path`.
pub(crate) fn file_error(path: &str, err: std::io::Error) -> ToolError {
    ToolError::Unavailable(format!(
        "could not write the result file {path}: {err}; the query can be run again, or with a smaller result"
    ))
}

/// A new result file `{stem}-{time}[-n].jsonl` (its `.partial` is what is created and
/// written), numbered when the same stem already wrote one in the same millisecond. Returns
/// the published name and the open partial file.
pub(crate) fn create(
    session: &mut Session<'_>,
    stem: &str,
    stamp: u64,
) -> Result<(String, Box<dyn Write>), ToolError> {
    for n in 0..100u32 {
        let suffix = if n == 0 {
            String::new()
        } else {
            format!("-{n}")
        };
        let name = format!("{stem}-{stamp:x}{suffix}.jsonl");
        match session.files()?.create(&partial(&name)) {
            Ok(file) => return Ok((name, file)),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(file_error(&name, err)),
        }
    }
    Err(ToolError::Unavailable(
        "too many result files of this query at once; run it again in a moment".into(),
    ))
}

/// The name a result file is written under until it is complete.
pub(crate) fn partial(name: &str) -> String {
    format!("{name}.partial")
}
