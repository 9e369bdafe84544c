//! `crm_record_timeline`: what happened with one record, newest first, across activity types:
//! HubSpot notes, calls, meetings, emails and tasks associated with a contact, company or deal;
//! Salesforce Tasks and Events whose `WhoId` or `WhatId` is the record. Each source is asked
//! for its newest items before the cursor and the answers are merged; the cursor carries the
//! time of the last item shown and the ids shown at exactly that time, so a page never repeats
//! or skips an item, whichever source it came from.
//!
//! - `hubspot`: the association searches, one per activity type, paced.
//! - `salesforce`: two SOQL queries, Task and Event.
//! - here: the input, the merge, the cursor and the preview text (pure).

mod hubspot;
mod preview;
mod salesforce;

use preview::{Markup, preview};

use crate::crma::types::{ObjectType, RecordId};
use crate::crmb::ids::SalesforceId;
use crate::error::ToolError;
use crate::policy::ReadScope;
use crate::tool::{CrmEffect, Session, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Items per page when the input gives no limit.
const DEFAULT_LIMIT: u32 = 20;
/// Most items per page: also bounds the ids a cursor carries.
const MAX_LIMIT: u32 = 50;
/// Most ids a cursor carries of items shown at its exact time: with a page of at most
/// [`MAX_LIMIT`], a source is asked for at most 200, HubSpot's largest search page.
const MAX_SEEN: usize = 150;

/// Which CRM the record is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs, reason = "variant docs would change the input schema")]
pub(crate) enum Which {
    Hubspot,
    Salesforce,
}

/// Input of `crm_record_timeline`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TimelineInput {
    /// hubspot or salesforce.
    crm: Which,
    /// HubSpot: the record's id (digits). Salesforce: the 15- or 18-character id of a
    /// Contact, Lead, Account, Opportunity or any record activities relate to.
    record_id: String,
    /// HubSpot only: contacts, companies or deals.
    #[serde(default)]
    object_type: Option<ObjectType>,
    /// 1-50 items, default 20.
    #[serde(default)]
    limit: Option<u32>,
    /// next_cursor from the previous page.
    #[serde(default)]
    cursor: Option<String>,
}

/// The record whose timeline is read, checked.
#[derive(Debug)]
enum Subject {
    Hubspot(ObjectType, RecordId),
    Salesforce(SalesforceId),
}

impl TimelineInput {
    fn subject(&self) -> Result<Subject, ToolError> {
        match self.crm {
            Which::Hubspot => {
                let object_type = match &self.object_type {
                    Some(
                        t @ (ObjectType::Contacts | ObjectType::Companies | ObjectType::Deals),
                    ) => t.clone(),
                    Some(other) => {
                        return Err(ToolError::invalid(format!(
                            "HubSpot timelines are read for contacts, companies and deals, not {other}"
                        )));
                    }
                    None => {
                        return Err(ToolError::invalid(
                            "give object_type (contacts, companies or deals) for a HubSpot record",
                        ));
                    }
                };
                let id = RecordId::parse(&self.record_id).map_err(ToolError::invalid)?;
                Ok(Subject::Hubspot(object_type, id))
            }
            Which::Salesforce => {
                if self.object_type.is_some() {
                    return Err(ToolError::invalid(
                        "object_type is for HubSpot records: a Salesforce id says its object itself",
                    ));
                }
                let id = SalesforceId::parse(&self.record_id).map_err(ToolError::invalid)?;
                Ok(Subject::Salesforce(id))
            }
        }
    }

    fn limit(&self) -> Result<usize, ToolError> {
        let limit = self.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ToolError::invalid(format!(
                "limit must be from 1 to {MAX_LIMIT}"
            )));
        }
        Ok(limit as usize)
    }
}

/// One activity on the timeline.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct Item {
    /// note, call, meeting, email or task (HubSpot); task or event (Salesforce).
    #[serde(rename = "type")]
    kind: &'static str,
    /// The activity's id in its CRM.
    id: String,
    /// When it happened (ISO 8601, UTC): HubSpot's hs_timestamp; a Salesforce Task's
    /// creation, an Event's start.
    time: String,
    /// Its title or subject, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    subject: Option<String>,
    /// The start of its body as plain text.
    #[serde(skip_serializing_if = "Option::is_none")]
    preview: Option<String>,
    /// Who owns it, by name when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    owner: Option<String>,
    /// A task's status.
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<String>,
    /// Opens it (Salesforce) or the record's timeline (HubSpot).
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    /// `time` in milliseconds, the sort key.
    #[serde(skip)]
    millis: u64,
}

/// An activity type the timeline does not show, and why.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct LeftOut {
    /// The activity type.
    #[serde(rename = "type")]
    kind: &'static str,
    /// Why it is left out and what would bring it in.
    reason: String,
}

/// What `crm_record_timeline` answers.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct TimelineOutput {
    /// The activities, newest first.
    items: Vec<Item>,
    /// Pass it back as cursor for older items; absent when there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
    /// Activity types not shown, each with the reason (a scope the connection lacks).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    left_out: Vec<LeftOut>,
    /// Present when the pages had to step over activities: more than 150 share one time.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

/// Where a page starts: items at or before `before` (milliseconds), except the ones already
/// shown at exactly that time.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Cursor {
    before: u64,
    seen: Vec<String>,
}

impl Cursor {
    /// `<millis>` then `~<id>` for each id shown at that time: URL-safe text.
    fn encode(&self) -> String {
        let mut text = self.before.to_string();
        for id in &self.seen {
            text.push('~');
            text.push_str(id);
        }
        text
    }

    fn decode(text: &str) -> Result<Cursor, ToolError> {
        let refuse = || {
            ToolError::invalid("cursor is not one this tool returned: pass next_cursor unchanged")
        };
        let mut parts = text.split('~');
        let before = parts
            .next()
            .and_then(|t| t.parse().ok())
            .ok_or_else(refuse)?;
        let seen: Vec<String> = parts.map(str::to_string).collect();
        let fits = seen.len() <= MAX_SEEN
            && seen.iter().all(|id| {
                (1..=20).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric())
            });
        if !fits {
            return Err(refuse());
        }
        Ok(Cursor { before, seen })
    }
}

/// What one source answered: its newest items before the cursor, and whether it had as many
/// as it was asked for (so it may have more).
#[derive(Debug, Default)]
struct Fetched {
    items: Vec<Item>,
    full: bool,
}

/// The page: the newest `limit` items of every source (none already seen), and the cursor
/// for the rest when any source may have more.
fn merge(
    sources: Vec<Fetched>,
    cursor: Option<&Cursor>,
    limit: usize,
) -> (Vec<Item>, Option<Cursor>) {
    let may_have_more = sources.iter().any(|s| s.full);
    let mut items: Vec<Item> = sources
        .into_iter()
        .flat_map(|s| s.items)
        .filter(|item| match cursor {
            Some(c) => {
                item.millis < c.before || (item.millis == c.before && !c.seen.contains(&item.id))
            }
            None => true,
        })
        .collect();
    items.sort_by(|a, b| {
        b.millis
            .cmp(&a.millis)
            .then_with(|| a.kind.cmp(b.kind))
            .then_with(|| b.id.cmp(&a.id))
    });
    let more = may_have_more || items.len() > limit;
    items.truncate(limit);
    let next = match items.last() {
        Some(last) if more => {
            let mut seen: Vec<String> = items
                .iter()
                .filter(|i| i.millis == last.millis)
                .map(|i| i.id.clone())
                .collect();
            // Items at the same time shown on earlier pages stay seen.
            if let Some(c) = cursor.filter(|c| c.before == last.millis) {
                seen.extend(c.seen.iter().cloned());
            }
            if seen.len() > MAX_SEEN {
                // More items share this time than a cursor can name: the next page starts
                // just before it (see `stepped_over`).
                Some(Cursor {
                    before: last.millis.saturating_sub(1),
                    seen: Vec::new(),
                })
            } else {
                Some(Cursor {
                    before: last.millis,
                    seen,
                })
            }
        }
        _ => None,
    };
    (items, next)
}

/// Says so when the next page steps over the rest of the items at the last item's time.
fn stepped_over(items: &[Item], next: Option<&Cursor>) -> Option<String> {
    let (last, next) = (items.last()?, next?);
    (next.before < last.millis).then(|| {
        format!(
            "more than {MAX_SEEN} activities share the time {}: the next page starts just \
             before it, so the ones of that time not shown yet are skipped",
            last.time
        )
    })
}

/// `crm_record_timeline`.
pub(crate) struct RecordTimeline;

impl Tool for RecordTimeline {
    const NAME: &'static str = "crm_record_timeline";
    const DESCRIPTION: &'static str = "Show the activities of one record, newest first: for a \
        HubSpot contact, company or deal its notes, calls, meetings, emails and tasks; for a \
        Salesforce record the Tasks and Events whose WhoId or WhatId it is, archived ones \
        included. Each item has its \
        type, time, subject, a body preview, owner and a link; limit and cursor page back in \
        time. Activity types the connection may not read are left out and named.";
    const TITLE: &'static str = "Read a record's activity timeline";
    const EFFECT: CrmEffect = CrmEffect::Reads;
    type Input = TimelineInput;
    type Output = TimelineOutput;

    /// The fields the timeline filters and sorts on; shown fields that are masked are left
    /// out of the items instead.
    fn reads(input: &TimelineInput) -> ReadScope<'_> {
        let fields = match input.crm {
            Which::Hubspot => vec!["hs_timestamp"],
            Which::Salesforce => vec!["WhoId", "WhatId", "CreatedDate", "StartDateTime"],
        };
        ReadScope {
            fields,
            records: input.limit.map(Into::into),
            ..ReadScope::default()
        }
    }

    fn cap_records(input: &mut TimelineInput, cap: u32) {
        input.limit = crate::tool::capped(input.limit, DEFAULT_LIMIT, cap);
    }

    fn run(input: TimelineInput, session: &mut Session<'_>) -> Result<TimelineOutput, ToolError> {
        let subject = input.subject()?;
        let limit = input.limit()?;
        let cursor = input.cursor.as_deref().map(Cursor::decode).transpose()?;
        // Each source is asked for enough that, after the items already seen are dropped, a
        // full page remains.
        let want = limit + cursor.as_ref().map_or(0, |c| c.seen.len());
        let (sources, left_out) = match &subject {
            Subject::Hubspot(object_type, id) => {
                hubspot::fetch(session, object_type, id, cursor.as_ref(), want)?
            }
            Subject::Salesforce(id) => (
                salesforce::fetch(session, id, cursor.as_ref(), want)?,
                Vec::new(),
            ),
        };
        let (items, next) = merge(sources, cursor.as_ref(), limit);
        let note = stepped_over(&items, next.as_ref());
        Ok(TimelineOutput {
            items,
            next_cursor: next.map(|c| c.encode()),
            left_out,
            note,
        })
    }
}

#[cfg(test)]
mod tests;
