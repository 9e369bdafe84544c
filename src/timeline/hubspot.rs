//! A HubSpot record's activities: one search per activity type, filtered on the
//! `associations.{type}` pseudo-property (HubSpot's search guide, "Search through
//! associations": `{"propertyName": "associations.contact", "operator": "EQ", "value": "51"}`)
//! and on `hs_timestamp` at or before the cursor, sorted by `hs_timestamp` descending. The
//! searches are spaced as the export spaces them, under the search API's per-second limit.

use super::{Cursor, Fetched, Item, LeftOut, Markup, preview};
use crate::crma::client::{self, Call};
use crate::crma::metadata::account::RecordLinks;
use crate::crma::owner_names;
use crate::crma::scopes::{self, Operation};
use crate::crma::search::SearchAnswer;
use crate::crma::search::keyset::pause_before;
use crate::crma::types::{ObjectType, RecordId};
use crate::error::ToolError;
use crate::tool::Session;
use serde_json::{Value, json};

/// An activity type: its object, its name on the timeline, its title and body properties.
struct Kind {
    object: ObjectType,
    name: &'static str,
    title: Option<&'static str>,
    body: &'static str,
    /// How the body is written: HTML for rich-text bodies, plain for `hs_email_text`.
    markup: Markup,
    status: Option<&'static str>,
}

/// HubSpot's activity types, with the properties its engagement guides name.
fn kinds() -> [Kind; 5] {
    let kind = |object, name, title, body, status| Kind {
        object,
        name,
        title,
        body,
        markup: if body == "hs_email_text" {
            Markup::Plain
        } else {
            Markup::Html
        },
        status,
    };
    [
        kind(ObjectType::Notes, "note", None, "hs_note_body", None),
        kind(
            ObjectType::Calls,
            "call",
            Some("hs_call_title"),
            "hs_call_body",
            None,
        ),
        kind(
            ObjectType::Meetings,
            "meeting",
            Some("hs_meeting_title"),
            "hs_meeting_body",
            None,
        ),
        kind(
            ObjectType::Emails,
            "email",
            Some("hs_email_subject"),
            "hs_email_text",
            None,
        ),
        kind(
            ObjectType::Tasks,
            "task",
            Some("hs_task_subject"),
            "hs_task_body",
            Some("hs_task_status"),
        ),
    ]
}

/// The pseudo-property naming associations with `parent`'s type.
fn association(parent: &ObjectType) -> &'static str {
    match parent {
        ObjectType::Companies => "associations.company",
        ObjectType::Deals => "associations.deal",
        _ => "associations.contact",
    }
}

/// The search body for one type's activities of the record `id`, newest first, at most
/// `want`, asking for the `shown` properties.
fn body(
    parent: &ObjectType,
    id: &RecordId,
    cursor: Option<&Cursor>,
    want: usize,
    shown: &[&str],
) -> Value {
    let mut filters = vec![
        json!({"propertyName": association(parent), "operator": "EQ", "value": id.to_string()}),
    ];
    if let Some(cursor) = cursor {
        filters.push(json!({"propertyName": "hs_timestamp", "operator": "LTE", "value": cursor.before.to_string()}));
    }
    json!({
        "filterGroups": [{"filters": filters}],
        "sorts": [{"propertyName": "hs_timestamp", "direction": "DESCENDING"}],
        "properties": shown,
        "limit": want,
    })
}

/// Every activity type's newest items before the cursor, and the types left out for want of
/// a scope. Without the `timeline` scope nothing is sent.
pub(super) fn fetch(
    session: &mut Session<'_>,
    parent: &ObjectType,
    id: &RecordId,
    cursor: Option<&Cursor>,
    want: usize,
) -> Result<(Vec<Fetched>, Vec<LeftOut>), ToolError> {
    let granted = session.ctx.granted_scopes.clone();
    scopes::check(&granted, &Operation::ReadTimeline)?;
    let policy = &session.config()?.policy;
    let mut left_out = Vec::new();
    let mut readable = Vec::new();
    for kind in kinds() {
        match scopes::check(&granted, &Operation::Read(kind.object.clone())) {
            Ok(()) => readable.push(kind),
            Err(ToolError::MissingScopes(missing)) => left_out.push(LeftOut {
                kind: kind.name,
                reason: format!(
                    "reading {} needs a scope this connection lacks: re-authorize it with {}",
                    kind.object,
                    missing.join(" or ")
                ),
            }),
            Err(err) => return Err(err),
        }
    }
    // Masked properties are never asked for, so never shown.
    let masked = |name: &str| policy.is_masked(name);
    let link = RecordLinks::known_or_read(session)
        .ok()
        .and_then(|links| links.url(parent, &id.to_string()));
    let owners = if masked("hubspot_owner_id") {
        None
    } else {
        owner_names(session).ok()
    };
    let mut sources = Vec::new();
    let mut last_start = None;
    for kind in &readable {
        let shown: Vec<&str> = ["hs_timestamp", "hubspot_owner_id"]
            .into_iter()
            .chain(kind.title)
            .chain([kind.body])
            .chain(kind.status)
            .filter(|name| !masked(name))
            .collect();
        let now = session.now_unix_millis();
        let pause = pause_before(last_start, now);
        if !pause.is_zero() {
            session.sleep(pause);
        }
        last_start = Some(
            session
                .now_unix_millis()
                .max(now + pause.as_millis() as u64),
        );
        let object = kind.object.as_str().to_string();
        let call = Call::get(
            Operation::Read(kind.object.clone()),
            vec!["crm", "v3", "objects", &object, "search"],
            format!("{object} of {parent} {id}"),
        )
        .searching(body(parent, id, cursor, want, &shown));
        let answer: SearchAnswer = client::send_for(session, call)?;
        let full = answer.page.results.len() >= want;
        let items = answer
            .page
            .results
            .into_iter()
            .filter_map(|record| {
                let text = |name: &str| {
                    record
                        .properties
                        .get(name)
                        .and_then(Value::as_str)
                        .filter(|v| !v.is_empty() && !masked(name))
                        .map(str::to_string)
                };
                let time = text("hs_timestamp")?;
                let millis = crate::time::parse_iso_utc(&time).or_else(|| time.parse().ok())?;
                let owner = text("hubspot_owner_id").map(|owner| {
                    owners
                        .as_ref()
                        .and_then(|names| names.get(&owner).cloned())
                        .unwrap_or(owner)
                });
                Some(Item {
                    kind: kind.name,
                    id: record.id.clone(),
                    time: crate::time::iso_utc(millis),
                    subject: kind.title.and_then(&text),
                    preview: text(kind.body).and_then(|b| preview(&b, kind.markup)),
                    owner,
                    status: kind.status.and_then(&text),
                    url: link.clone(),
                    millis,
                })
            })
            .collect();
        sources.push(Fetched { items, full });
    }
    Ok((sources, left_out))
}
