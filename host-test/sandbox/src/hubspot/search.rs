//! The sandbox's CRM search, as strict as HubSpot's
//! (https://developers.hubspot.com/docs/api/crm/search): filters ANDed in a group and groups
//! ORed, one sort, `after` as a result offset, and the rules real portals apply that a lenient
//! fake would hide:
//! - `IN` / `NOT_IN` on a string property match only lower-case values ("When searching a string
//!   property with this operator, values must be lowercase"); on an enumeration they match the
//!   option's internal value exactly (`NOT_STARTED`).
//! - Paging past 10,000 results is a 400 ("Attempting to page beyond 10,000 will result in a
//!   400 error"), so a client that pages with `after` never sees the rest; sorting by
//!   `hs_object_id` and filtering `hs_object_id GT <last id>` (compared as numbers) reaches
//!   every record, as on a real portal.
//! - `associations.{type}` (`associations.contact`, `.company`, `.deal`) is the pseudo-property
//!   that finds records associated with another ("Search through associations": `EQ` or `IN`
//!   the other record's id), as activity timelines use it.
//! - A page holds at most 200 records ("The maximum number of supported objects per page is
//!   200"); the sandbox refuses a larger `limit` rather than quietly shortening the page, so a
//!   client that asks for more is caught here.

use super::{Answer, error};
use serde_json::{Map, Value, json};

/// HubSpot's cap on the results one search can page through.
const MAX_REACHABLE: usize = 10_000;
/// HubSpot's largest search page.
const MAX_LIMIT: u64 = 200;

/// Searches `records` (those the index has caught up with); `definitions` are the type's
/// property definitions, which decide how `IN` compares.
pub(super) fn search<'r>(
    records: impl Iterator<Item = &'r Value>,
    definitions: &[Value],
    associated: &dyn Fn(&str, u64, &Value) -> bool,
    body: &Value,
) -> Answer {
    let groups = body["filterGroups"].as_array().cloned().unwrap_or_default();
    let text = body["query"].as_str().map(str::to_lowercase);
    let type_of = |name: &str| {
        definitions
            .iter()
            .find(|p| p["name"] == name)
            .and_then(|p| p["type"].as_str())
            .unwrap_or("string")
            .to_string()
    };
    let mut hits: Vec<&Value> =
        records
            .filter(|r| {
                groups.is_empty()
                    || groups.iter().any(|g| {
                        g["filters"].as_array().into_iter().flatten().all(|f| {
                            match association_filter(f) {
                                Some((to, ids)) => ids.iter().any(|id| associated(to, *id, r)),
                                None => matches(&r["properties"], f, &type_of),
                            }
                        })
                    })
            })
            .filter(|r| match &text {
                None => true,
                Some(t) => r["properties"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .any(|(_, v)| {
                        v.as_str()
                            .is_some_and(|s| s.to_lowercase().contains(t.as_str()))
                    }),
            })
            .collect();
    if let Some(sort) = body["sorts"].get(0) {
        let name = sort["propertyName"].as_str().unwrap_or_default();
        hits.sort_by(|a, b| compare(&a["properties"][name], &b["properties"][name]));
        if sort["direction"] == "DESCENDING" {
            hits.reverse();
        }
    }
    let total = hits.len();
    let limit = body["limit"].as_u64().unwrap_or(10);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return error(
            400,
            "VALIDATION_ERROR",
            &format!("limit must be from 1 to {MAX_LIMIT}, got {limit}"),
        );
    }
    let limit = limit as usize;
    let after: usize = body["after"]
        .as_str()
        .and_then(|a| a.parse().ok())
        .unwrap_or(0);
    if after + limit > MAX_REACHABLE {
        return error(
            400,
            "VALIDATION_ERROR",
            "Paging beyond 10000 results is not supported: after + limit must not exceed 10000",
        );
    }
    let wanted: Vec<&str> = body["properties"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let results: Vec<Value> = hits
        .iter()
        .skip(after)
        .take(limit)
        .map(|r| project(r, &wanted))
        .collect();
    let mut answer = json!({"total": total, "results": results});
    if after + limit < total {
        let next = (after + limit).to_string();
        answer["paging"] = json!({"next": {"after": next, "link": "?after=".to_string() + &next}});
    }
    (200, answer)
}

/// A record with the properties asked for (and HubSpot's three defaults), or all of them.
pub(super) fn project(record: &Value, wanted: &[&str]) -> Value {
    let all = &record["properties"];
    let mut props = Map::new();
    let defaults = ["hs_object_id", "createdate", "hs_lastmodifieddate"];
    let names: Vec<&str> = if wanted.is_empty() {
        all.as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default()
    } else {
        wanted.iter().copied().chain(defaults).collect()
    };
    for name in names {
        props.insert(name.into(), all.get(name).cloned().unwrap_or(Value::Null));
    }
    let mut out = json!({"id": record["id"], "properties": props, "createdAt": record["createdAt"],
                         "updatedAt": record["updatedAt"], "archived": record["archived"] == true});
    if record["archived"] == true {
        out["archivedAt"] = record["archivedAt"].clone();
    }
    out
}

/// An `associations.{type}` filter: the other type (singular, as HubSpot spells it) and the
/// ids it names.
fn association_filter(filter: &Value) -> Option<(&str, Vec<u64>)> {
    let to = filter["propertyName"]
        .as_str()?
        .strip_prefix("associations.")?;
    let ids = match filter["operator"].as_str()? {
        "EQ" => vec![filter["value"].as_str()?.parse().ok()?],
        "IN" => filter["values"]
            .as_array()?
            .iter()
            .filter_map(|v| v.as_str()?.parse().ok())
            .collect(),
        _ => return None,
    };
    Some((to, ids))
}

/// One search filter against a record's properties; `type_of` names a property's type.
fn matches(properties: &Value, filter: &Value, type_of: &dyn Fn(&str) -> String) -> bool {
    let name = filter["propertyName"].as_str().unwrap_or_default();
    let value = &properties[name];
    let has = value.as_str().is_some_and(|s| !s.is_empty());
    let given = filter["value"].as_str().unwrap_or_default();
    let cmp = || compare(value, &Value::String(given.into()));
    use std::cmp::Ordering::*;
    match filter["operator"].as_str().unwrap_or_default() {
        "EQ" => has && cmp() == Equal,
        "NEQ" => !has || cmp() != Equal,
        "LT" => has && cmp() == Less,
        "LTE" => has && cmp() != Greater,
        "GT" => has && cmp() == Greater,
        "GTE" => has && cmp() != Less,
        "BETWEEN" => {
            let high = Value::String(filter["highValue"].as_str().unwrap_or_default().into());
            has && cmp() != Less && compare(value, &high) != Greater
        }
        "IN" | "NOT_IN" => {
            let string = type_of(name) == "string";
            let stored = value.as_str().unwrap_or_default();
            let inside = filter["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .any(|v| {
                    if string {
                        v == stored.to_lowercase()
                    } else {
                        v == stored
                    }
                });
            (filter["operator"] == "IN") == (has && inside)
        }
        "HAS_PROPERTY" => has,
        "NOT_HAS_PROPERTY" => !has,
        "CONTAINS_TOKEN" | "NOT_CONTAINS_TOKEN" => {
            let token = given.trim_matches('*').to_lowercase();
            let contains = value
                .as_str()
                .is_some_and(|s| s.to_lowercase().contains(&token));
            (filter["operator"] == "CONTAINS_TOKEN") == contains
        }
        _ => false,
    }
}

/// Numbers compare as numbers, ISO dates and epoch milliseconds as instants, text without case.
fn compare(a: &Value, b: &Value) -> std::cmp::Ordering {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let (a, b) = (text(a), text(b));
    // A datetime filter's value is epoch milliseconds; stored datetimes read as ISO 8601.
    let millis = |s: &str| crm_plugin::time::parse_iso_utc(s).map(|ms| ms.to_string());
    let (a, b) = match (millis(&a), millis(&b)) {
        (Some(a), None) if b.bytes().all(|c| c.is_ascii_digit()) => (a, b),
        (None, Some(b)) if a.bytes().all(|c| c.is_ascii_digit()) => (a, b),
        _ => (a, b),
    };
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal),
        _ => a.to_lowercase().cmp(&b.to_lowercase()),
    }
}
