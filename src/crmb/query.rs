//! `crmb_run_soql_query`: validated SOQL, safe paging with opaque cursors, an inline byte
//! budget, and large results streamed to a JSON Lines file page by page.

use super::client;
use super::errors::parse_answer_text;
use super::outputs::{
    FileFormat, InlineRecords, QueryResult, QueryRows, Record, ResultFile, TableRecords,
};
use super::record_url::InstanceUrl;
use super::records::{LinkStyle, Mapping, map_records};
use super::soql::{self, ValidatedQuery};
use crate::config::{ApiVersion, Config};
use crate::error::{Crm, CrmProblem, ToolError};
use crate::http::Request;
use crate::proxy;
use crate::raw_json::{Members, ObjectList, ObjectTexts};
use crate::result_file::{self, file_error, fingerprint};
use crate::tool::Session;
use serde::Deserialize;
use std::io::Write;

/// Records returned inline when the caller gives no `max_records`.
pub const DEFAULT_MAX_RECORDS: u32 = 200;
/// Most records one call returns inline.
pub const MAX_INLINE_RECORDS: u32 = 2000;
/// Records shown as a preview when results go to a file.
const PREVIEW_RECORDS: usize = 3;

/// One page of a query answer, `{"totalSize", "done", "nextRecordsUrl"?, "records"}`
/// (<https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_query.htm>),
/// its records still Salesforce's text. `nextRecordsUrl` is there only while `done` is false;
/// `records` always is, empty for `SELECT COUNT()`, so a page without it is an unexpected
/// answer, not an empty result.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePage<'a> {
    total_size: u64,
    done: bool,
    #[serde(default)]
    next_records_url: Option<String>,
    /// Each record's members, read in the page's own pass.
    #[serde(borrow)]
    records: ObjectList<'a>,
}

/// A page with its records mapped, in Salesforce's order.
#[derive(Debug)]
struct Page {
    total_size: u64,
    done: bool,
    next_records_url: Option<String>,
    records: ObjectTexts,
}

/// Where a query's rows continue: Salesforce's query locator id and the row offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locator {
    id: String,
    offset: u64,
}

impl Locator {
    /// Parses a `nextRecordsUrl`. Only this tenant's own `/services/data/vNN.0/query/{id}-{offset}`
    /// is accepted, so a hostile or corrupted answer cannot send the next request elsewhere.
    pub fn from_next_records_url(url: &str, version: ApiVersion) -> Result<Self, String> {
        let prefix = format!("/services/data/{}/query/", version.segment());
        let tail = url.strip_prefix(&prefix).ok_or_else(|| {
            format!("{url:?} is not a query path of this org's API ({prefix}...)")
        })?;
        Self::parse_segment(tail).ok_or_else(|| format!("{url:?} does not end in a query locator"))
    }

    /// `{id}-{offset}`: the id is 15 to 18 letters and digits, the offset a number.
    fn parse_segment(segment: &str) -> Option<Self> {
        let (id, offset) = segment.split_once('-')?;
        let id_ok = (15..=18).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric());
        let offset_ok =
            !offset.is_empty() && offset.len() <= 12 && offset.bytes().all(|b| b.is_ascii_digit());
        if !(id_ok && offset_ok) {
            return None;
        }
        Some(Locator {
            id: id.to_string(),
            offset: offset.parse().ok()?,
        })
    }

    fn at(&self, offset: u64) -> Locator {
        Locator {
            id: self.id.clone(),
            offset,
        }
    }

    fn segment(&self) -> String {
        format!("{}-{}", self.id, self.offset)
    }
}

/// Where a cursor continues a query's rows.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Position {
    /// At Salesforce's query locator.
    Locator(Locator),
    /// Past the first `n` rows of the query run again: Salesforce answered up to 2,000 rows in
    /// one batch with no `nextRecordsUrl` ("Execute a SOQL Query": a batch holds up to 2,000
    /// records; `nextRecordsUrl` only while `done` is false,
    /// <https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_query.htm>),
    /// so the rows this answer did not show have no locator to continue at.
    Skip(u64),
}

/// The opaque continuation token: `sfq1.{locator id}.{offset}.{query fingerprint}`, or
/// `sfq1.skip.{rows}.{query fingerprint}`. The fingerprint ties it to the query text, so a
/// cursor cannot be replayed on another query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    position: Position,
    fingerprint: u64,
}

impl Cursor {
    fn new(locator: Locator, query: &ValidatedQuery) -> Self {
        Cursor {
            position: Position::Locator(locator),
            fingerprint: fingerprint(query.text()),
        }
    }

    fn skipping(rows: u64, query: &ValidatedQuery) -> Self {
        Cursor {
            position: Position::Skip(rows),
            fingerprint: fingerprint(query.text()),
        }
    }

    /// The token given to the caller as `next_cursor`; [`Cursor::parse`] reads it back.
    pub fn encode(&self) -> String {
        match &self.position {
            Position::Locator(locator) => format!(
                "sfq1.{}.{}.{:016x}",
                locator.id, locator.offset, self.fingerprint
            ),
            Position::Skip(rows) => format!("sfq1.skip.{rows}.{:016x}", self.fingerprint),
        }
    }

    /// Parses a cursor given back by the caller, for the same query.
    pub fn parse(text: &str, query: &ValidatedQuery) -> Result<Self, ToolError> {
        let malformed = || {
            ToolError::invalid(
                "cursor is not one this tool returned: pass next_cursor from the previous result \
                 unchanged, or omit it to start the query again",
            )
        };
        let parts: Vec<&str> = text.trim().split('.').collect();
        let ["sfq1", id, offset, hash] = parts.as_slice() else {
            return Err(malformed());
        };
        let position = match *id {
            "skip" => Position::Skip(
                offset
                    .parse()
                    .ok()
                    .filter(|n| *n <= u64::from(MAX_INLINE_RECORDS))
                    .ok_or_else(malformed)?,
            ),
            _ => Position::Locator(
                Locator::parse_segment(&format!("{id}-{offset}")).ok_or_else(malformed)?,
            ),
        };
        let fingerprint = u64::from_str_radix(hash, 16).map_err(|_| malformed())?;
        let cursor = Cursor {
            position,
            fingerprint,
        };
        // Only the exact text `encode` wrote: `from_str_radix` and the offset parser also take
        // a `+` sign, leading zeros or a short hash, which no returned cursor has.
        if cursor.encode() != text.trim() {
            return Err(malformed());
        }
        if cursor.fingerprint != self::fingerprint(query.text()) {
            return Err(ToolError::invalid(
                "this cursor belongs to a different query: send the same query text with it, or \
                 omit the cursor to start this query from the beginning",
            ));
        }
        Ok(cursor)
    }
}

/// What the caller asked for, validated.
pub(crate) struct QueryRequest {
    query: ValidatedQuery,
    max_records: u32,
    cursor: Option<Cursor>,
    layout: Layout,
    /// Every row to a result file, however few.
    to_file: bool,
}

/// How inline records are laid out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Layout {
    /// Each record a JSON object of its fields: `records`.
    #[default]
    Objects,
    /// The field names once in `fields`, each record a row of values: `rows`.
    Table,
}

impl QueryRequest {
    /// Checks the query text, the page size (default [`DEFAULT_MAX_RECORDS`]) and the cursor;
    /// nothing is sent when this fails.
    pub(crate) fn new(
        text: &str,
        max_records: Option<u32>,
        cursor: Option<&str>,
        layout: Layout,
    ) -> Result<Self, ToolError> {
        let query = soql::validate(text).map_err(|e| ToolError::invalid(e.to_string()))?;
        let max_records = max_records.unwrap_or(DEFAULT_MAX_RECORDS);
        if !(1..=MAX_INLINE_RECORDS).contains(&max_records) {
            return Err(ToolError::invalid(format!(
                "max_records must be from 1 to {MAX_INLINE_RECORDS}; larger results are paged with \
                 next_cursor or written to a file"
            )));
        }
        let cursor = cursor.map(|c| Cursor::parse(c, &query)).transpose()?;
        Ok(QueryRequest {
            query,
            max_records,
            cursor,
            layout,
            to_file: false,
        })
    }

    /// Asks for every row in a result file; a file starts at the first row, so not with a
    /// cursor.
    pub(crate) fn writing_to_file(mut self, to_file: bool) -> Result<Self, ToolError> {
        if to_file && self.cursor.is_some() {
            return Err(ToolError::invalid(
                "to_file writes the whole result from its first row: leave out cursor",
            ));
        }
        self.to_file = to_file;
        Ok(self)
    }
}

/// Runs the query and shapes the answer.
pub(crate) fn run(
    request: QueryRequest,
    session: &mut Session<'_>,
) -> Result<QueryResult, ToolError> {
    let config = session.config()?;
    let instance = InstanceUrl::if_known(session.ctx.instance_url.as_deref())?;
    let pager = Pager {
        config,
        query: &request.query,
        instance: instance.as_ref(),
        layout: request.layout,
    };
    let (mut first, start, skipped) = match request.cursor.as_ref().map(|c| &c.position) {
        Some(Position::Locator(locator)) => (
            pager.fetch(session, Some(locator))?,
            Some(locator.clone()),
            0,
        ),
        Some(Position::Skip(rows)) => (pager.fetch(session, None)?, None, *rows),
        None => (pager.fetch(session, None)?, None, 0),
    };
    // A cursor past rows Salesforce gave in one batch: the same query again, those rows left
    // out. Had the query since grown a locator, its first page is read as usual.
    if skipped > 0 {
        first.records.skip(skipped as usize);
    }
    if request.to_file && config.results.dir.is_none() {
        return Err(ToolError::Unavailable(
            "this workspace keeps no result files: leave out to_file and page through the rows \
             with max_records and next_cursor"
                .into(),
        ));
    }
    let to_file = request.cursor.is_none()
        && config.results.dir.is_some()
        && (request.to_file || first.total_size > config.results.file_threshold_records)
        && !first.records.is_empty();
    if to_file {
        pager.write_to_file(session, first)
    } else {
        pager.inline(session, first, start, skipped, request.max_records)
    }
}

/// Salesforce refuses a request whose URI and headers pass 16,384 bytes (414 URI Too Long,
/// 431 Request Header Fields Too Large: REST API Developer Guide, "Status Codes and Error
/// Responses"). The broker adds its own headers, so the URL may use this much.
pub const MAX_QUERY_URL_BYTES: usize = 16_384 - 2_048;

/// Refuses, before sending, a query whose encoded URL would be too long for Salesforce.
fn check_uri_length(url: &url::Url) -> Result<(), ToolError> {
    let bytes = url.path().len() + url.query().map_or(0, |q| q.len() + 1);
    if bytes <= MAX_QUERY_URL_BYTES {
        return Ok(());
    }
    Err(ToolError::invalid(format!(
        "the query is too long to send: encoded in the URL it takes {bytes} bytes, and Salesforce \
         accepts at most 16,384 bytes of URL and headers (this tool allows {MAX_QUERY_URL_BYTES} \
         for the URL). Shorten it: select fewer fields, or split long IN lists across several \
         calls and combine the results"
    )))
}

/// Walks the pages of one query.
struct Pager<'a> {
    config: &'a Config,
    query: &'a ValidatedQuery,
    instance: Option<&'a InstanceUrl>,
    layout: Layout,
}

impl Pager<'_> {
    /// The first page (no locator) or the page at a locator, its records mapped as they are
    /// read: each goes from Salesforce's text to the answer's in one pass.
    fn fetch(&self, session: &mut Session<'_>, at: Option<&Locator>) -> Result<Page, ToolError> {
        let url = match at {
            Some(locator) => proxy::crm_b(self.config, &["query", &locator.segment()], &[])?,
            None => proxy::crm_b(self.config, &["query"], &[("q", self.query.text())])?,
        };
        if at.is_none() {
            check_uri_length(&url)?;
        }
        let subject = format!("result for the query on {}", self.query.object());
        let response = client::send(session, &Request::read(Crm::Salesforce, url), &subject)?;
        let (text, page): (_, WirePage<'_>) = parse_answer_text(&response, "the query answer")?;
        let mapping = Mapping {
            instance: self.instance,
            masked: &self.config.policy.masked,
            links: LinkStyle::Short,
        };
        let records = map_records(&page.records, text, &mapping)?;
        Ok(Page {
            total_size: page.total_size,
            done: page.done,
            next_records_url: page.next_records_url,
            records,
        })
    }

    /// The page's continuation, refusing an unsafe `nextRecordsUrl`.
    fn next_of(&self, page: &Page) -> Result<Option<Locator>, ToolError> {
        match (&page.next_records_url, page.done) {
            (Some(url), false) => {
                Locator::from_next_records_url(url, self.config.crm_b_api_version)
                    .map(Some)
                    .map_err(|why| {
                        CrmProblem::new(
                        Crm::Salesforce,
                        "UNSAFE_NEXT_RECORDS_URL",
                        "The answer pointed somewhere other than this org's query API; it was not \
                         followed. Run the query again; report it if it persists.",
                    )
                    .with_message(why)
                    .into()
                    })
            }
            _ => Ok(None),
        }
    }

    /// Records inline, up to `max_records` and the byte budget; a cursor for the rest.
    fn inline(
        &self,
        session: &mut Session<'_>,
        mut page: Page,
        mut current: Option<Locator>,
        skipped: u64,
        max_records: u32,
    ) -> Result<QueryResult, ToolError> {
        let total = page.total_size;
        let budget = self.config.results.inline_max_bytes;
        let mut records = ObjectTexts::default();
        let mut bytes = 0usize;
        loop {
            let start = current.as_ref().map_or(skipped, |l| l.offset);
            let next = self.next_of(&page)?;
            let count = page.records.len();
            // How many of this page's records fit, and where the answer stops if not all do.
            let mut fit = 0;
            let mut stop = None;
            for record in page.records.iter() {
                // The record's text and the comma after it.
                let size = record.len() + 1;
                let held = records.len() + fit;
                if held >= max_records as usize || (bytes + size > budget && held > 0) {
                    stop = Some(fit);
                    break;
                }
                bytes += size;
                fit += 1;
            }
            if records.is_empty() {
                records = page.records;
                records.truncate(fit);
            } else {
                records.extend_from(&page.records, fit);
            }
            if let Some(i) = stop {
                let resume = next
                    .as_ref()
                    .or(current.as_ref())
                    .map(|l| l.at(start + i as u64));
                let reason = if records.len() >= max_records as usize {
                    "max_records"
                } else {
                    "the inline size budget"
                };
                return self.inline_answer(records, total, start + i as u64, resume, reason);
            }
            match next {
                // Salesforce has nothing more: whatever total_size says, the result is complete.
                None => {
                    return self.inline_answer(
                        records,
                        total,
                        total.max(start + count as u64),
                        None,
                        "",
                    );
                }
                Some(locator) if records.len() >= max_records as usize => {
                    return self.inline_answer(
                        records,
                        total,
                        locator.offset,
                        Some(locator),
                        "max_records",
                    );
                }
                Some(locator) => {
                    page = self.fetch(session, Some(&locator))?;
                    current = Some(locator);
                }
            }
        }
    }

    /// The inline answer; `through` is the row offset after the last record returned.
    fn inline_answer(
        &self,
        records: ObjectTexts,
        total: u64,
        through: u64,
        resume: Option<Locator>,
        reason: &str,
    ) -> Result<QueryResult, ToolError> {
        let remaining = total.saturating_sub(through);
        let done = remaining == 0;
        // A cursor and advice only for a result that goes on: at Salesforce's locator, or,
        // when Salesforce gave the rows in one batch without one, past the rows shown.
        let next_cursor = (!done).then(|| match resume {
            Some(locator) => Cursor::new(locator, self.query).encode(),
            None => Cursor::skipping(through, self.query).encode(),
        });
        let how_to_get_the_rest = (!done).then(|| {
            format!(
                "stopped at {reason}: call again with the same query and next_cursor to get the \
                 next records, or run it again with to_file to have every row written to a file"
            )
        });
        let inline = InlineRecords {
            returned: records.len(),
            records,
            remaining_records: (!done).then_some(remaining),
            next_cursor,
        };
        let rows = match self.layout {
            Layout::Objects => QueryRows::Inline(inline),
            Layout::Table => QueryRows::Table(TableRecords::of(inline).map_err(|err| {
                CrmProblem::unexpected_answer(Crm::Salesforce, 200, err.to_string())
            })?),
        };
        Ok(QueryResult {
            object: self.query.object().to_string(),
            total_size: total,
            done,
            rows,
            how_to_get_the_rest,
        })
    }

    /// Every record to a JSON Lines file, page by page so memory stays flat.
    fn write_to_file(
        &self,
        session: &mut Session<'_>,
        first: Page,
    ) -> Result<QueryResult, ToolError> {
        let stamp = session.now_unix_millis();
        let stem = format!("soql-{:016x}", fingerprint(self.query.text()));
        let (name, file) = result_file::create(session, &stem, stamp)?;
        let partial = result_file::partial(&name);
        let written = self.write_pages(session, first, file, &partial);
        let (count, total, columns, preview, complete) = match written {
            Ok(summary) => summary,
            Err(err) => {
                // Nothing half-written is left behind for someone to mistake for the result.
                session.files()?.discard(&partial);
                return Err(err);
            }
        };
        let file_path = session
            .files()?
            .publish(&partial, &name)
            .map_err(|e| file_error(&name, e))?;
        Ok(QueryResult {
            object: self.query.object().to_string(),
            total_size: total,
            done: complete,
            rows: QueryRows::File(ResultFile {
                file_path,
                format: FileFormat::Jsonl,
                record_count: count,
                columns,
                preview,
            }),
            how_to_get_the_rest: (!complete).then(|| format!(
                "the file holds the first {count} records (the per-file limit); narrow the query with WHERE to get the others"
            )),
        })
    }

    #[allow(clippy::type_complexity)]
    fn write_pages(
        &self,
        session: &mut Session<'_>,
        mut page: Page,
        file: Box<dyn Write>,
        path: &str,
    ) -> Result<(u64, u64, Vec<String>, Vec<Record>, bool), ToolError> {
        let limit = self.config.results.file_max_records;
        let mut out = std::io::BufWriter::with_capacity(64 * 1024, file);
        let total = page.total_size;
        let mut count = 0u64;
        let mut columns: Vec<String> = Vec::new();
        let mut preview = Vec::new();
        loop {
            let next = self.next_of(&page)?;
            for record in page.records.iter() {
                if count >= limit {
                    out.flush().map_err(|e| file_error(path, e))?;
                    return Ok((count, total, columns, preview, false));
                }
                let members: Members<'_> =
                    serde_json::from_str(record).map_err(|e| file_error(path, e.into()))?;
                for (key, _) in &members.0 {
                    if !columns.iter().any(|c| c == key) {
                        columns.push(key.to_string());
                    }
                }
                out.write_all(record.as_bytes())
                    .and_then(|()| out.write_all(b"\n"))
                    .map_err(|e| file_error(path, e))?;
                if preview.len() < PREVIEW_RECORDS {
                    preview.push(
                        Record::new(record.to_string()).map_err(|e| file_error(path, e.into()))?,
                    );
                }
                count += 1;
            }
            session.progress(count, Some(total.min(limit)));
            match next {
                Some(locator) => page = self.fetch(session, Some(&locator))?,
                None => break,
            }
        }
        out.flush().map_err(|e| file_error(path, e))?;
        Ok((count, total, columns, preview, true))
    }
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
