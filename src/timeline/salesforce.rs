//! A Salesforce record's activities: the Tasks and Events whose `WhoId` (a Contact or Lead) or
//! `WhatId` (an Account, Opportunity or other record) is the record, by SOQL ("Task" and
//! "Event" in the Object Reference). A Task's time is its creation (`ActivityDate` is only a
//! due date, often empty); an Event's is its start. Each query asks for the newest items at
//! or before the cursor, `want` at most.

use super::{Cursor, Fetched, Item, Markup, preview};
use crate::crmb::client::{self as crmb_client};
use crate::crmb::compound::MASKED;
use crate::crmb::ids::{ApiName, SalesforceId};
use crate::crmb::record_url::InstanceUrl;
use crate::error::ToolError;
use crate::masking;
use crate::tool::Session;
use serde_json::{Map, Value};

/// One object's query: its name on the timeline, its time field, the fields shown.
struct Source {
    object: &'static str,
    name: &'static str,
    time: &'static str,
    status: Option<&'static str>,
}

const SOURCES: [Source; 2] = [
    Source {
        object: "Task",
        name: "task",
        time: "CreatedDate",
        status: Some("Status"),
    },
    Source {
        object: "Event",
        name: "event",
        time: "StartDateTime",
        status: None,
    },
];

/// The SOQL for `source`'s activities of `id`: ids are checked Salesforce ids and the time is
/// a literal this module writes, so nothing in it comes from the caller unchecked.
fn soql(
    source: &Source,
    id: &SalesforceId,
    cursor: Option<&Cursor>,
    want: usize,
    shown: &[&str],
) -> String {
    let id = id.as_str();
    let before = cursor
        .map(|c| {
            format!(
                " AND {} <= {}",
                source.time,
                crate::time::iso_utc(c.before - c.before % 1000).replace(".000Z", "Z")
            )
        })
        .unwrap_or_default();
    format!(
        "SELECT {} FROM {} WHERE (WhoId = '{id}' OR WhatId = '{id}') AND IsDeleted = false{before} ORDER BY {} DESC LIMIT {want}",
        shown.join(", "),
        source.object,
        source.time
    )
}

/// Both objects' newest items before the cursor.
pub(super) fn fetch(
    session: &mut Session<'_>,
    id: &SalesforceId,
    cursor: Option<&Cursor>,
    want: usize,
) -> Result<Vec<Fetched>, ToolError> {
    let config = session.config()?;
    let masked = |name: &str| config.policy.is_masked(name);
    // The owner's name shows who the owner is (masked with OwnerId), and it is a compound of
    // the owner's name parts: masked with any of them (`LastName`), as `Name` itself is.
    let owner_masked = masked("OwnerId") || masking::person_name_masked(&config.policy.masked);
    let instance = InstanceUrl::if_known(session.ctx.instance_url.as_deref())?;
    let mut fetched = Vec::new();
    for source in &SOURCES {
        let shown: Vec<&str> = ["Id", source.time, "Subject", "Description", "Owner.Name"]
            .into_iter()
            .chain(source.status)
            .filter(|name| !(masked(name) || name.starts_with("Owner.") && owner_masked))
            .collect();
        let query = soql(source, id, cursor, want, &shown);
        let subject = format!("the {}s of {}", source.object, id.as_str());
        // Archived activities (older than about a year) are the record's history too.
        let page = crmb_client::lookup_all(session, &query, &subject)?;
        let full = page.records.len() >= want;
        let object = ApiName::parse(source.object).map_err(ToolError::invalid)?;
        let items = page
            .records
            .into_iter()
            .filter_map(|row| item(source, &row, instance.as_ref(), &object, owner_masked))
            .collect();
        fetched.push(Fetched { items, full });
    }
    Ok(fetched)
}

/// One row as a timeline item; `None` for a row without an id or a readable time.
fn item(
    source: &Source,
    row: &Map<String, Value>,
    instance: Option<&InstanceUrl>,
    object: &ApiName,
    owner_masked: bool,
) -> Option<Item> {
    let text = |name: &str| {
        row.get(name)
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let id = text("Id")?;
    let millis = crate::time::parse_iso_utc(&text(source.time)?)?;
    let owner = if owner_masked {
        Some(MASKED.to_string())
    } else {
        row.get("Owner")
            .and_then(|o| o.get("Name"))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let url = match (instance, SalesforceId::parse(&id)) {
        (Some(instance), Ok(sf_id)) => Some(instance.record_url(object, &sf_id).to_string()),
        _ => None,
    };
    Some(Item {
        kind: source.name,
        time: crate::time::iso_utc(millis),
        subject: text("Subject"),
        // A Task's and an Event's Description is plain text: its `<` and `>` are words.
        preview: text("Description").and_then(|d| preview(&d, Markup::Plain)),
        owner,
        status: source.status.and_then(text),
        url,
        millis,
        id,
    })
}
