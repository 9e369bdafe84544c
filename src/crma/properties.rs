//! What a property's type changes on the wire, read from its definition only when it matters.
//!
//! Two HubSpot rules depend on a property's type, and a value alone cannot tell it:
//! - search `IN` / `NOT_IN`: "When searching a string property with this operator, values must
//!   be lowercase" — but an enumeration matches its option's internal value exactly
//!   (`NOT_STARTED`), so lower-casing it finds nothing (CRM search guide);
//! - `date` properties "will only store the date, and must be set to midnight UTC" (HubSpot
//!   FAQ, "How should timestamps be formatted for HubSpot's APIs?"), while `datetime` ones take
//!   any instant.
//!
//! So the definitions (`GET /crm/v3/properties/{type}/{name}`) are read for just the
//! properties whose values could go wrong: upper-case `IN` values and date-like write values.

use super::client::{self, Call};
use super::scopes::Operation;
use super::types::{ObjectType, PropertyName};
use crate::error::{Crm, CrmProblem, ToolError};
use crate::tool::Session;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// A property's type, as far as it changes what is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `string`: `IN` values go lower-case.
    Text,
    /// `date`: midnight UTC only.
    Date,
    /// `enumeration`, `datetime`, `number`, `bool` and the rest: values go as given.
    Other,
}

/// The part of a property definition used here.
#[derive(Debug, Deserialize)]
struct Definition {
    #[serde(rename = "type")]
    kind: String,
}

/// HubSpot's own timestamp properties, known to be `datetime`: no need to ask.
const KNOWN_DATETIMES: &[&str] = &[
    "hs_timestamp",
    "createdate",
    "closedate",
    "hs_lastmodifieddate",
    "lastmodifieddate",
    "hs_meeting_start_time",
    "hs_meeting_end_time",
];

/// The definition of `name` on `object_type`, read as `T`
/// (`GET /crm/v3/properties/{objectType}/{propertyName}`); an unknown property is an input
/// error naming the tool that lists the names.
pub(crate) fn definition<T: serde::de::DeserializeOwned>(
    session: &mut Session<'_>,
    object_type: &ObjectType,
    name: &PropertyName,
) -> Result<T, ToolError> {
    let object = object_type.as_str().to_string();
    let call = Call::get(
        Operation::ReadProperties(object_type.clone()),
        vec!["crm", "v3", "properties", &object, name.as_str()],
        format!("property {name} of {object}", name = name.as_str()),
    );
    let answer = client::send(session, call).map_err(|err| match err {
        ToolError::NotFound(_) => ToolError::invalid(format!(
            "{object} has no property named {}: crma_get_properties lists the names",
            name.as_str()
        )),
        other => other,
    })?;
    serde_json::from_value(answer).map_err(|err| {
        ToolError::from(CrmProblem::unexpected_answer(
            Crm::Hubspot,
            200,
            format!("the definition of {}: {err}", name.as_str()),
        ))
    })
}

/// Reads the type of each named property of `object_type`, one small request each.
pub(crate) fn kinds(
    session: &mut Session<'_>,
    object_type: &ObjectType,
    names: &BTreeSet<&PropertyName>,
) -> Result<BTreeMap<String, Kind>, ToolError> {
    let mut kinds = BTreeMap::new();
    for name in names {
        let definition: Definition = definition(session, object_type, name)?;
        let kind = match definition.kind.as_str() {
            "string" => Kind::Text,
            "date" => Kind::Date,
            _ => Kind::Other,
        };
        kinds.insert(name.as_str().to_string(), kind);
    }
    Ok(kinds)
}

/// Writes `date` property values as HubSpot stores them, reading the definitions of the
/// properties whose values look like dates. Without the scope to read definitions the values
/// go as given (HubSpot then judges them itself).
pub(crate) fn normalise_dates(
    session: &mut Session<'_>,
    object_type: &ObjectType,
    wire: &mut Map<String, Value>,
) -> Result<(), ToolError> {
    let names: Vec<PropertyName> = wire
        .iter()
        .filter(|(name, value)| {
            !KNOWN_DATETIMES.contains(&name.as_str()) && value.as_str().is_some_and(looks_like_date)
        })
        .filter_map(|(name, _)| PropertyName::parse(name).ok())
        .collect();
    if names.is_empty() {
        return Ok(());
    }
    let kinds = match kinds(session, object_type, &names.iter().collect()) {
        Ok(kinds) => kinds,
        Err(ToolError::MissingScopes(_)) => return Ok(()),
        Err(err) => return Err(err),
    };
    for (name, kind) in kinds {
        if kind != Kind::Date {
            continue;
        }
        if let Some(Value::String(text)) = wire.get_mut(&name) {
            *text = date_value(&name, text)?;
        }
    }
    Ok(())
}

/// `YYYY-MM-DD...` or 13-digit epoch milliseconds.
fn looks_like_date(text: &str) -> bool {
    let b = text.as_bytes();
    let iso =
        b.len() >= 10 && b[4] == b'-' && b[7] == b'-' && b[..4].iter().all(u8::is_ascii_digit);
    let epoch_ms = b.len() == 13 && b.iter().all(u8::is_ascii_digit);
    iso || epoch_ms
}

/// A `date` property's value as HubSpot takes it: `YYYY-MM-DD` as is, an ISO 8601 midnight
/// (any offset: the calendar date as written), epoch milliseconds at midnight UTC. A time of
/// day cannot become a date without guessing, so it is refused.
pub(crate) fn date_value(name: &str, text: &str) -> Result<String, ToolError> {
    let refuse = |why: &str| {
        ToolError::invalid(format!(
            "property {name} is a date (no time of day): {text:?} {why}; give the date as \
             YYYY-MM-DD, e.g. \"2026-11-30\""
        ))
    };
    if let Ok(ms) = text.parse::<u64>() {
        return if ms % 86_400_000 == 0 {
            Ok(text.to_string())
        } else {
            Err(refuse("is not midnight UTC"))
        };
    }
    let (Some(date), Some(time)) = (text.get(..10), text.get(10..)) else {
        return Err(refuse("is not a date"));
    };
    if !is_calendar_date(date) {
        return Err(refuse("is not a date"));
    }
    if time.is_empty() {
        return Ok(date.to_string());
    }
    let clock = time
        .strip_prefix('T')
        .ok_or_else(|| refuse("is not an ISO 8601 date"))?;
    let digits_end = clock.find(['Z', '+', '-']).unwrap_or(clock.len());
    let (clock, zone) = clock.split_at(digits_end);
    let midnight = !clock.is_empty() && clock.chars().all(|c| matches!(c, '0' | ':' | '.'));
    let zone_ok = zone.is_empty()
        || zone == "Z"
        || (zone.len() == 6 && zone[1..].chars().all(|c| c.is_ascii_digit() || c == ':'));
    match (midnight, zone_ok) {
        (true, true) => Ok(date.to_string()),
        (false, true) => Err(refuse("has a time of day")),
        _ => Err(refuse("is not an ISO 8601 date")),
    }
}

/// `YYYY-MM-DD` with a month 01-12 and a day 01-31.
fn is_calendar_date(text: &str) -> bool {
    let b = text.as_bytes();
    let two = |i: usize| -> Option<u8> {
        let (x, y) = (b.get(i)?, b.get(i + 1)?);
        (x.is_ascii_digit() && y.is_ascii_digit()).then(|| (x - b'0') * 10 + (y - b'0'))
    };
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b[..4].iter().all(u8::is_ascii_digit)
        && two(5).is_some_and(|m| (1..=12).contains(&m))
        && two(8).is_some_and(|d| (1..=31).contains(&d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_values_become_what_hubspot_stores_or_are_refused() {
        for (given, sent) in [
            ("2026-11-20", "2026-11-20"),
            ("2026-11-20T00:00:00Z", "2026-11-20"),
            ("2026-11-20T00:00:00.000Z", "2026-11-20"),
            ("2026-11-20T00:00:00-05:00", "2026-11-20"),
            ("2026-11-20T00:00", "2026-11-20"),
            // May 1 2015, HubSpot's own example of a midnight-UTC date.
            ("1430438400000", "1430438400000"),
        ] {
            assert_eq!(date_value("renewal_date", given).unwrap(), sent, "{given}");
        }
        for bad in [
            "2026-11-20T15:30:00Z",
            "1430438400001",
            "2026-13-01",
            "2026-11-20 00:00",
            "2026-11-20Tnoon",
        ] {
            let err = date_value("renewal_date", bad).unwrap_err();
            assert!(
                matches!(&err, ToolError::InvalidInput(m) if m.contains("renewal_date") && m.contains("YYYY-MM-DD")),
                "{bad}: {err:?}"
            );
        }
    }

    #[test]
    fn only_date_like_values_are_looked_up() {
        assert!(looks_like_date("2026-11-20"));
        assert!(looks_like_date("2026-11-20T10:00:00Z"));
        assert!(looks_like_date("1430438400000"));
        assert!(!looks_like_date("Acme"));
        assert!(!looks_like_date("12345"));
    }
}
