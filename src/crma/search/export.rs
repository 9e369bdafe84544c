//! `crma_search_records` with `to_file`: every match of a search, past the 10,000 results
//! HubSpot lets one search page through, written to a JSON Lines file.
//!
//! HubSpot's search (<https://developers.hubspot.com/docs/api/crm/search>) answers at most 200
//! records a request, refuses to page (`after`) past 10,000 results, and is rate-limited to
//! about 5 requests a second per account. So an export never pages with `after`: it sorts by
//! `hs_object_id` ascending and asks each next page for the records above the last id written
//! (`hs_object_id GT <last id>`, added to every filter group, whose filters are ANDed): a
//! keyset walk, with no offset to run out of. Request starts are spaced at least [`PACE`]
//! apart. Each page goes to the file as it arrives and only the last id, the count and a short
//! preview are kept, so memory stays flat whatever the number of records. The file is written
//! as a `.partial` and published only when the walk ends; any failure discards it.
//!
//! The request bodies ([`ExportPlan::body`]), the page-to-lines mapping ([`page_lines`]) and
//! the pacing ([`keyset::pause_before`](super::keyset::pause_before)) are pure; [`run`] is the loop around them.

use super::keyset::{KeysetWalk, ascending_ids};
use super::{
    Direction, Filter, FilterGroup, FoundRecord, MAX_FILTERS, MAX_FILTERS_PER_GROUP, MAX_LIMIT,
    Operator, Search, SearchOutput, Sort,
};
use crate::crma::scopes::{self, Operation};
use crate::crma::types::{ObjectType, PropertyName};
use crate::crma::wire::RecordObject;
use crate::error::{Crm, CrmProblem, ToolError};

use crate::result_file::{self, FileFormat, file_error, fingerprint};
use crate::tool::Session;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::Write;
use std::time::Duration;

/// The property an export pages by: the record id, which HubSpot sorts and compares as a number.
pub(crate) const KEY: &str = "hs_object_id";
/// Records asked for in each request: HubSpot's largest search page.
pub(crate) const PAGE_SIZE: u32 = MAX_LIMIT;
/// The least time between the starts of two search requests: 4 a second, under the search
/// API's 5 a second per account.
pub(crate) const PACE: Duration = Duration::from_millis(250);
/// Records shown in the answer as a preview of the file.
const PREVIEW_RECORDS: usize = 3;

fn key() -> PropertyName {
    PropertyName::parse(KEY).expect("a valid property name")
}

/// An export, checked: the caller's filters, free text and properties, in the export's own
/// order and page size.
#[derive(Debug)]
pub(crate) struct ExportPlan {
    search: Search,
}

impl ExportPlan {
    /// Checks everything an export cannot take; nothing is sent when this fails.
    ///
    /// - `cursor`: the export starts at the first match and goes to the last in one call.
    /// - `sorts`: the export's order is `hs_object_id` ascending; that is how it pages.
    /// - `limit`: the export writes every match, [`PAGE_SIZE`] a request.
    /// - a lower bound on `hs_object_id` (`GT`, `GTE`, `BETWEEN`): the export adds its own to
    ///   every group; other filters on `hs_object_id` (upper bounds, `EQ`, `IN`, ...) are
    ///   ANDed with it and narrow the export as they narrow a search.
    /// - filters HubSpot would refuse once the export adds its own to every group: more than
    ///   [`MAX_FILTERS_PER_GROUP`] in a group or [`MAX_FILTERS`] in all.
    pub(crate) fn new(
        object_type: ObjectType,
        filter_groups: Vec<FilterGroup>,
        sorts: &[Sort],
        query: Option<String>,
        properties: Vec<PropertyName>,
        limit: Option<u32>,
        cursor: Option<&str>,
    ) -> Result<Self, ToolError> {
        if cursor.is_some() {
            return Err(ToolError::invalid(
                "to_file writes every match, from the first to the last, in one call: it takes \
                 no cursor. Leave out cursor to export everything, or leave out to_file to go on \
                 paging inline with the cursor",
            ));
        }
        if !sorts.is_empty() {
            return Err(ToolError::invalid(format!(
                "to_file writes records in {KEY} order, ascending (that is how it pages past \
                 10,000 results), so it takes no sorts: leave out sorts, and sort the file \
                 afterwards if another order is needed"
            )));
        }
        if limit.is_some() {
            return Err(ToolError::invalid(format!(
                "to_file writes every match, {PAGE_SIZE} a request, so it takes no limit: leave \
                 out limit, or leave out to_file for one page of at most {MAX_LIMIT} records"
            )));
        }
        let search = Search {
            object_type,
            filter_groups,
            sorts: vec![Sort {
                property: key(),
                direction: Direction::Ascending,
            }],
            query,
            properties,
            limit: PAGE_SIZE,
            after: None,
            string_properties: BTreeSet::new(),
        };
        search.validate()?;
        check_key_filters(&search.filter_groups)?;
        check_room_for_the_key_filter(&search.filter_groups)?;
        Ok(ExportPlan { search })
    }

    /// The object type exported.
    pub(crate) fn object_type(&self) -> &ObjectType {
        &self.search.object_type
    }

    /// The caller's filter groups.
    pub(crate) fn filter_groups(&self) -> &[FilterGroup] {
        &self.search.filter_groups
    }

    /// The properties known to be strings, whose `IN` / `NOT_IN` values go lower-case.
    pub(crate) fn with_string_properties(mut self, string_properties: BTreeSet<String>) -> Self {
        self.search.string_properties = string_properties;
        self
    }

    /// The body of the request for the records above `after` (from the first match when
    /// `None`): the caller's search sorted by `hs_object_id` ascending, [`PAGE_SIZE`] records,
    /// never an `after` offset, and `hs_object_id GT after` ANDed into every filter group (or
    /// as the one group when the caller gave none).
    pub(crate) fn body(&self, after: Option<u64>) -> Result<Value, ToolError> {
        let Some(last) = after else {
            return self.search.body();
        };
        let above = Filter {
            property: key(),
            operator: Operator::Gt,
            value: Some(Value::String(last.to_string())),
            values: None,
            high_value: None,
        };
        let mut search = self.search.clone();
        if search.filter_groups.is_empty() {
            search.filter_groups.push(FilterGroup {
                filters: vec![above],
            });
        } else {
            for group in &mut search.filter_groups {
                group.filters.push(above.clone());
            }
        }
        search.body()
    }
}

/// Refuses a lower bound on `hs_object_id`: the export sets its own in every group.
fn check_key_filters(groups: &[FilterGroup]) -> Result<(), ToolError> {
    for (g, group) in groups.iter().enumerate() {
        for filter in &group.filters {
            let lower_bound = matches!(
                filter.operator,
                Operator::Gt | Operator::Gte | Operator::Between
            );
            if filter.property.as_str() == KEY && lower_bound {
                return Err(ToolError::invalid(format!(
                    "filter group {}: to_file pages by {KEY} itself (each request after the \
                     first adds {KEY} GT <the last id written> to every filter group), so a \
                     lower bound of your own on {KEY} ({}) would be a second one in the same \
                     group; the export does not send that. Remove that filter; upper bounds \
                     (LT, LTE), EQ, IN and the other operators on {KEY} are fine",
                    g + 1,
                    filter.operator.wire()
                )));
            }
        }
    }
    Ok(())
}

/// Refuses filters HubSpot would refuse once the export adds one to every group.
fn check_room_for_the_key_filter(groups: &[FilterGroup]) -> Result<(), ToolError> {
    for (g, group) in groups.iter().enumerate() {
        if group.filters.len() >= MAX_FILTERS_PER_GROUP {
            return Err(ToolError::invalid(format!(
                "filter group {} has {} filters; to_file adds one more to every group ({KEY} GT \
                 <the last id written>, how it pages past 10,000) and HubSpot allows at most \
                 {MAX_FILTERS_PER_GROUP} per group: remove a filter from that group (an IN list \
                 or a BETWEEN can stand for two)",
                g + 1,
                group.filters.len()
            )));
        }
    }
    let given: usize = groups.iter().map(|g| g.filters.len()).sum();
    let sent = given + groups.len();
    if sent > MAX_FILTERS {
        return Err(ToolError::invalid(format!(
            "{given} filters in {} groups; to_file adds one to every group ({KEY} GT <the last id \
             written>, how it pages past 10,000), {sent} in all, and HubSpot allows at most \
             {MAX_FILTERS}: remove {} filters",
            groups.len(),
            sent - MAX_FILTERS
        )));
    }
    Ok(())
}

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
        let found = FoundRecord::from(record);
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
    /// How the file is written: each line one record as results gives it (id, properties,
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
        session
            .files()?
            .publish(&partial, &name)
            .map_err(|e| file_error(&name, e))?;
        Ok(walked)
    });
    let walked = match walked {
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
        file_path: result_file::shown_path(&config.results, &name),
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
