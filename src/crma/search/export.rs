//! `crma_search_records` with `to_file`: every match of a search, past the 10,000 results
//! HubSpot lets one search page through, written to a JSON Lines file.
//!
//! HubSpot's search (<https://developers.hubspot.com/docs/api/crm/search>) answers at most 200
//! records a request, refuses to page (`after`) past 10,000 results, and is rate-limited to
//! about 5 requests a second per account. So an export never pages with `after`: it sorts by
//! `hs_object_id` ascending and asks each next page for the records above the last id written
//! (`hs_object_id GT <last id>`, added to every filter group, whose filters are ANDed): a
//! keyset walk ([`super::keyset`]), with no offset to run out of. Request starts are spaced at
//! least [`PACE`](super::plan::PACE) apart. Each page goes to the file as it arrives and only
//! the last id, the count and a short preview are kept, so memory stays flat whatever the
//! number of records. The file is written as a `.partial` and published only when the walk
//! ends; any failure discards it.
//!
//! The request bodies ([`ExportPlan::body`]), the page-to-lines mapping ([`page_lines`]) and
//! the pacing ([`pause_before`](super::keyset::pause_before)) are pure; [`run`] is the loop
//! around them.

use super::keyset::{KeysetWalk, ascending_ids};
pub(crate) use super::plan::ExportPlan;
use super::{FoundRecord, SearchOutput};
use crate::crma::scopes::{self, Operation};
use crate::crma::wire::RecordObject;
use crate::error::{Crm, CrmProblem, ToolError};
use crate::result_file::{self, FileFormat, file_error, fingerprint};
use crate::tool::Session;
use schemars::JsonSchema;
use serde::Serialize;
use std::io::Write;

/// Records shown in the answer as a preview of the file.
const PREVIEW_RECORDS: usize = 3;
/// One page of an export, mapped to the file's lines.
#[derive(Debug)]
pub(crate) struct PageLines {
    /// The records as JSON Lines, one per line, as the inline `results` give them.
    pub(crate) jsonl: Vec<u8>,
    /// How many records (lines) that is.
    pub(crate) count: u64,
    /// The last id written (the `after` given when nothing was): the next page starts above it.
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "the walk keeps its own place; tests read it")
    )]
    pub(crate) last_id: Option<u64>,
    /// The first records, up to the number asked for, for the answer's preview.
    pub(crate) preview: Vec<FoundRecord>,
}

/// Maps a page of search results (in HubSpot's answer order) to JSON Lines: at most `room`
/// records, each one line, the first `preview` of them also kept for the answer. Every id must
/// be a HubSpot record id above `after` and above the one before it, as a search sorted by
/// `hs_object_id` ascending and filtered on `hs_object_id GT after` answers; anything else
/// could repeat or skip records, so it is an error naming the ids.
pub(crate) fn page_lines(
    records: Vec<RecordObject>,
    after: Option<u64>,
    room: u64,
    preview: usize,
) -> Result<PageLines, String> {
    let kept = records
        .len()
        .min(usize::try_from(room).unwrap_or(usize::MAX));
    let last_id = ascending_ids(&records[..kept], after)?;
    let mut page = PageLines {
        jsonl: Vec::new(),
        count: 0,
        last_id,
        preview: Vec::new(),
    };
    for record in records.into_iter().take(kept) {
        let found = FoundRecord::in_file(record);
        serde_json::to_writer(&mut page.jsonl, &found).expect("a record serialises");
        page.jsonl.push(b'\n');
        if page.preview.len() < preview {
            page.preview.push(found);
        }
        page.count += 1;
    }
    Ok(page)
}

/// What `crma_search_records` answers with `to_file`: the file holding every match.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ExportFile {
    /// Where the file is, as the workspace sees it.
    file_path: String,
    /// How the file is written: each line one record (id, properties with all HubSpot sent,
    /// created_at, updated_at), in ascending id order.
    format: FileFormat,
    /// How many records the file holds.
    record_count: u64,
    /// True when the file holds every matching record; false when it stopped at the per-file
    /// record limit (the note says so).
    done: bool,
    /// The first few records, to show what the file holds.
    preview: Vec<FoundRecord>,
}

/// Checks, before anything is created or sent, what the export needs from the session: the
/// type's read scope, the configuration and a results directory.
pub(crate) fn check_before_sending(
    session: &mut Session<'_>,
    plan: &ExportPlan,
) -> Result<(), ToolError> {
    scopes::check(
        &session.ctx.granted_scopes,
        &Operation::Read(plan.object_type().clone()),
    )?;
    session.config()?;
    session.files().map(|_| ())
}

/// Runs the export: every page to a new result file, published when the walk ends.
pub(crate) fn run(session: &mut Session<'_>, plan: ExportPlan) -> Result<SearchOutput, ToolError> {
    let first = plan.body(None)?;
    let stamp = session.now_unix_millis();
    let stem = format!(
        "crma-{}-{:016x}",
        plan.object_type().as_str(),
        fingerprint(&first.to_string())
    );
    let (name, file) = result_file::create(session, &stem, stamp)?;
    let partial = result_file::partial(&name);
    let walked = walk(session, &plan, file, &partial).and_then(|walked| {
        let file_path = session
            .files()?
            .publish(&partial, &name)
            .map_err(|e| file_error(&name, e))?;
        Ok((walked, file_path))
    });
    let (walked, file_path) = match walked {
        Ok(walked) => walked,
        Err(err) => {
            // Nothing half-written is left behind for someone to mistake for the result.
            session.files()?.discard(&partial);
            return Err(err);
        }
    };
    let Walked {
        total,
        count,
        preview,
        done,
    } = walked;
    let config = session.config()?;
    let note = if !done {
        Some(format!(
            "the file holds the first {count} of {total} matching records: {} records is the \
             per-file limit (CRM_FILE_MAX_RECORDS). Narrow the filters, for example by createdate \
             windows, to export the others",
            config.results.file_max_records
        ))
    } else if count != total {
        Some(format!(
            "HubSpot counted {total} matches when the export began and {count} were written: \
             records were added, changed or removed while it ran"
        ))
    } else {
        None
    };
    let file = ExportFile {
        file_path,
        format: FileFormat::Jsonl,
        record_count: count,
        done,
        preview,
    };
    Ok(SearchOutput::file(total, file, note))
}

/// What a finished walk wrote.
struct Walked {
    /// Matches HubSpot counted on the first page.
    total: u64,
    /// Records written.
    count: u64,
    preview: Vec<FoundRecord>,
    /// False when the walk stopped at the per-file limit.
    done: bool,
}

/// Pages through every match into `file`, flushing at the end; `path` names it in errors.
fn walk(
    session: &mut Session<'_>,
    plan: &ExportPlan,
    file: Box<dyn Write>,
    path: &str,
) -> Result<Walked, ToolError> {
    let limit = session.config()?.results.file_max_records;
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, file);
    let mut pages = KeysetWalk::new(plan);
    let mut count = 0u64;
    let mut preview = Vec::new();
    let mut done = true;
    while let Some(page) = pages.next_page(session)? {
        let fetched = page.records.len() as u64;
        let lines = page_lines(
            page.records,
            page.after,
            limit - count,
            PREVIEW_RECORDS - preview.len(),
        )
        .map_err(|why| ToolError::from(CrmProblem::unexpected_answer(Crm::Hubspot, 200, why)))?;
        out.write_all(&lines.jsonl)
            .map_err(|e| file_error(path, e))?;
        count += lines.count;
        preview.extend(lines.preview);
        session.progress(count, Some(pages.total().min(limit)));
        if lines.count < fetched {
            done = false;
            break;
        }
    }
    out.flush().map_err(|e| file_error(path, e))?;
    Ok(Walked {
        total: pages.total(),
        count,
        preview,
        done,
    })
}

#[cfg(test)]
mod tests;
