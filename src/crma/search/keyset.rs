//! The keyset walk over every match of a HubSpot search, shared by `to_file` exports and
//! `crma_aggregate_records`: pages of [`PAGE_SIZE`] sorted by `hs_object_id`, each next page
//! asked for the records above the last id seen (never an `after` offset, so nothing stops at
//! 10,000), request starts spaced [`PACE`] apart. Each page is handed on as it arrives, so the
//! caller's memory stays flat.

use super::SearchAnswer;
use super::plan::{ExportPlan, PACE};
use crate::crma::client::{self, Call};
use crate::crma::scopes::Operation;
use crate::crma::types::ObjectType;
use crate::crma::wire::RecordObject;
use crate::error::{Crm, CrmProblem, ToolError};
use crate::tool::Session;
use serde_json::Value;
use std::time::Duration;

/// One page of a walk, its ids checked to be ascending and above the previous page's.
#[derive(Debug)]
pub(crate) struct KeysetPage {
    /// The page's records, in ascending id order.
    pub(crate) records: Vec<RecordObject>,
    /// The last id of the page before this one (`None` for the first page).
    pub(crate) after: Option<u64>,
}

/// A walk in progress: where the next page starts and when the last request started.
#[derive(Debug)]
pub(crate) struct KeysetWalk<'p> {
    plan: &'p ExportPlan,
    after: Option<u64>,
    last_start: Option<u64>,
    total: Option<u64>,
    ended: bool,
}

impl<'p> KeysetWalk<'p> {
    /// A walk from the first match of `plan`.
    pub(crate) fn new(plan: &'p ExportPlan) -> Self {
        KeysetWalk {
            plan,
            after: None,
            last_start: None,
            total: None,
            ended: false,
        }
    }

    /// The matches HubSpot counted on the first page.
    pub(crate) fn total(&self) -> u64 {
        self.total.unwrap_or_default()
    }

    /// The next page, or `None` once the last has been handed out. A page out of id order
    /// (which could repeat or skip records) is an error naming the ids.
    pub(crate) fn next_page(
        &mut self,
        session: &mut Session<'_>,
    ) -> Result<Option<KeysetPage>, ToolError> {
        if self.ended {
            return Ok(None);
        }
        let body = self.plan.body(self.after)?;
        let now = session.now_unix_millis();
        let pause = pause_before(self.last_start, now);
        if !pause.is_zero() {
            session.sleep(pause);
        }
        // The clock read again after the pause, but never earlier than the pause's end.
        let started = now.saturating_add(pause.as_millis() as u64);
        self.last_start = Some(session.now_unix_millis().max(started));
        let answer = search(session, self.plan.object_type(), body)?;
        self.total.get_or_insert(answer.total);
        let more = answer.page.next_after().is_some();
        let records = answer.page.results;
        let last = ascending_ids(&records, self.after).map_err(|why| {
            ToolError::from(CrmProblem::unexpected_answer(Crm::Hubspot, 200, why))
        })?;
        let page = KeysetPage {
            records,
            after: self.after,
        };
        self.ended = page.records.is_empty() || !more;
        self.after = last;
        Ok(Some(page))
    }
}

/// The last id of `records` (`after` when there are none), checking every id is a HubSpot
/// record id above `after` and above the one before it, as a search sorted by `hs_object_id`
/// ascending and filtered on `hs_object_id GT after` answers.
pub(crate) fn ascending_ids(
    records: &[RecordObject],
    after: Option<u64>,
) -> Result<Option<u64>, String> {
    let mut last = after;
    for record in records {
        let id = record_id(&record.id)
            .ok_or_else(|| format!("a record's id {:?} is not a HubSpot record id", record.id))?;
        if let Some(before) = last.filter(|before| id <= *before) {
            return Err(format!(
                "record {id} came after record {before}: the answer was not in ascending \
                 hs_object_id order, so the walk could not page without repeating or skipping \
                 records"
            ));
        }
        last = Some(id);
    }
    Ok(last)
}

/// A record id as HubSpot gives it: digits that fit in a u64.
fn record_id(text: &str) -> Option<u64> {
    let digits = !text.is_empty() && text.len() <= 20 && text.bytes().all(|b| b.is_ascii_digit());
    digits.then(|| text.parse().ok()).flatten()
}

/// How long to wait, at `now` (milliseconds), before starting a request when the last one
/// started at `last_start`: whatever is left of [`PACE`].
pub(crate) fn pause_before(last_start: Option<u64>, now: u64) -> Duration {
    match last_start {
        None => Duration::ZERO,
        Some(last) => PACE.saturating_sub(Duration::from_millis(now.saturating_sub(last))),
    }
}

/// One search request with this body.
fn search(
    session: &mut Session<'_>,
    object_type: &ObjectType,
    body: Value,
) -> Result<SearchAnswer, ToolError> {
    let object = object_type.as_str().to_string();
    let call = Call::get(
        Operation::Read(object_type.clone()),
        vec!["crm", "v3", "objects", &object, "search"],
        format!("{object} search"),
    )
    // A search is a POST that only reads: safe to retry.
    .searching(body);
    client::send_for(session, call)
}
