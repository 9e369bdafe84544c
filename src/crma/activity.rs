//! `crma_log_activity`: notes, calls, meetings, emails and tasks as HubSpot engagement records,
//! with `hs_timestamp`, an optional owner and associations under the pinned default type ids.
//!
//! Property names checked against HubSpot's engagement API guides (Notes, Calls, Meetings,
//! Email, Tasks on developers.hubspot.com); they match `crm-a-api-facts.md`.

use super::associations::AssociationInput;
use super::tools::{PropertyValues, create_record};
use super::types::{ObjectType, RecordId};
use crate::error::ToolError;
use crate::schema::string_schema;
use crate::tool::{CrmEffect, Session, Tool};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;

/// The kinds of activity HubSpot logs as engagement records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum ActivityType {
    #[serde(alias = "notes")]
    Note,
    #[serde(alias = "calls")]
    Call,
    #[serde(alias = "meetings")]
    Meeting,
    #[serde(alias = "emails")]
    Email,
    #[serde(alias = "tasks")]
    Task,
}

impl ActivityType {
    fn object_type(self) -> ObjectType {
        match self {
            ActivityType::Note => ObjectType::Notes,
            ActivityType::Call => ObjectType::Calls,
            ActivityType::Meeting => ObjectType::Meetings,
            ActivityType::Email => ObjectType::Emails,
            ActivityType::Task => ObjectType::Tasks,
        }
    }

    /// The type's main properties; at least one must be given so the activity says something.
    fn main_properties(self) -> &'static [&'static str] {
        match self {
            ActivityType::Note => &["hs_note_body"],
            ActivityType::Call => &["hs_call_title", "hs_call_body"],
            ActivityType::Meeting => &["hs_meeting_title", "hs_meeting_body"],
            ActivityType::Email => &["hs_email_subject", "hs_email_text"],
            ActivityType::Task => &["hs_task_subject", "hs_task_body"],
        }
    }
}

/// When the activity happened: ISO 8601 (`2026-11-21T09:30:00Z`) or epoch milliseconds, both
/// accepted by HubSpot for `hs_timestamp`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "Value")]
struct Timestamp(String);

impl Timestamp {
    fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if !text.is_empty() && text.len() <= 16 && text.bytes().all(|b| b.is_ascii_digit()) {
            return Ok(Timestamp(text.to_string()));
        }
        if is_iso_8601(text) {
            return Ok(Timestamp(text.to_string()));
        }
        Err(format!(
            "{text:?} is not a timestamp: use ISO 8601 such as 2026-11-21T09:30:00Z (with Z or an \
             offset) or epoch milliseconds"
        ))
    }

    /// Epoch milliseconds as an ISO 8601 UTC instant.
    fn from_unix_millis(millis: u64) -> Self {
        Timestamp(crate::time::iso_utc(millis))
    }

    fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<Value> for Timestamp {
    type Error = String;
    fn try_from(value: Value) -> Result<Self, String> {
        match value {
            Value::String(s) => Timestamp::parse(&s),
            Value::Number(n) if n.is_u64() => Timestamp::parse(&n.to_string()),
            other => Err(format!("{other} is not a timestamp")),
        }
    }
}

impl JsonSchema for Timestamp {
    fn schema_name() -> Cow<'static, str> {
        "Timestamp".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        string_schema(
            "^([0-9]{1,16}|[0-9]{4}-[0-9]{2}-[0-9]{2}T.+)$",
            "When it happened: ISO 8601 with Z or an offset (2026-11-21T09:30:00Z), or epoch milliseconds. Default: now.",
        )
    }
}

/// `YYYY-MM-DDTHH:MM[:SS[.fff]](Z|±HH:MM)`.
fn is_iso_8601(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| {
        b.get(range.clone())
            .is_some_and(|s| s.iter().all(u8::is_ascii_digit))
    };
    let date = b.len() >= 17
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16);
    if !date {
        return false;
    }
    let number = |range: std::ops::Range<usize>| text[range].parse::<u32>().unwrap_or(99);
    if !(1..=12).contains(&number(5..7))
        || !(1..=31).contains(&number(8..10))
        || number(11..13) > 23
        || number(14..16) > 59
    {
        return false;
    }
    let mut rest = &text[16..];
    if let Some(after) = rest.strip_prefix(':') {
        if after.len() < 2 || !after[..2].bytes().all(|c| c.is_ascii_digit()) {
            return false;
        }
        rest = &after[2..];
        if let Some(fraction) = rest.strip_prefix('.') {
            let n = fraction.bytes().take_while(u8::is_ascii_digit).count();
            if n == 0 || n > 9 {
                return false;
            }
            rest = &fraction[n..];
        }
    }
    match rest.as_bytes() {
        [b'Z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit()),
        _ => false,
    }
}

/// Input of `crma_log_activity`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LogActivityInput {
    /// note, call, meeting, email or task.
    activity_type: ActivityType,
    /// The activity's properties. Main ones: note hs_note_body; call hs_call_title,
    /// hs_call_body, hs_call_duration (ms), hs_call_direction (INBOUND/OUTBOUND), hs_call_status;
    /// meeting hs_meeting_title, hs_meeting_body, hs_meeting_start_time, hs_meeting_end_time,
    /// hs_meeting_outcome; email hs_email_subject, hs_email_text, hs_email_direction
    /// (EMAIL, INCOMING_EMAIL, FORWARDED_EMAIL), hs_email_status; task hs_task_subject,
    /// hs_task_body, hs_task_status (NOT_STARTED, COMPLETED, ...), hs_task_priority (LOW,
    /// MEDIUM, HIGH), hs_task_type (TODO, CALL, EMAIL).
    #[serde(default)]
    properties: PropertyValues,
    /// Sets hs_timestamp (for a task, its due date). Default: now.
    #[serde(default)]
    timestamp: Option<Timestamp>,
    /// Owner id (see crma_list_owners) to assign; sets hubspot_owner_id.
    #[serde(default)]
    owner_id: Option<RecordId>,
    /// Contacts, companies and deals to attach the activity to.
    #[serde(default)]
    associations: Vec<AssociationInput>,
}

/// What `crma_log_activity` answers.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct LoggedActivity {
    /// The new activity record's id.
    id: String,
    /// Its HubSpot object type: notes, calls, meetings, emails or tasks.
    object_type: String,
    /// The kind of activity logged.
    activity_type: ActivityType,
    /// hs_timestamp as sent: when it happened (a task's due date).
    timestamp: String,
    /// How many records it was associated with.
    associations: usize,
    /// Present when the activity was logged but its id could not be kept locally.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    warning: Option<String>,
}

/// `crma_log_activity`.
pub(crate) struct LogActivity;

impl Tool for LogActivity {
    const NAME: &'static str = "crma_log_activity";
    const DESCRIPTION: &'static str = "Log an activity in HubSpot: a note, call, meeting, email \
        or task, with its properties (e.g. hs_note_body, hs_call_title, hs_meeting_title, \
        hs_email_subject, hs_task_subject), when it happened (default now), an optional owner, \
        and the contacts, companies and deals it belongs to. Sent once, never retried: an \
        unknown outcome is reported, so check the record's activities before logging again.";
    const TITLE: &'static str = "Log an activity in HubSpot";
    const EFFECT: CrmEffect = CrmEffect::Adds { idempotent: false };
    type Input = LogActivityInput;
    type Output = LoggedActivity;

    fn run(
        input: LogActivityInput,
        session: &mut Session<'_>,
    ) -> Result<LoggedActivity, ToolError> {
        let object_type = input.activity_type.object_type();
        let mut properties = input.properties.to_wire()?;
        let main = input.activity_type.main_properties();
        if !main.iter().any(|name| {
            properties
                .get(*name)
                .and_then(Value::as_str)
                .is_some_and(|v| !v.trim().is_empty())
        }) {
            return Err(ToolError::invalid(format!(
                "a {} needs {} in properties",
                object_type.as_str().trim_end_matches('s'),
                main.join(" or ")
            )));
        }
        let timestamp = match (input.timestamp, properties.get("hs_timestamp")) {
            (Some(_), Some(_)) => {
                return Err(ToolError::invalid(
                    "give the time once: either timestamp or properties.hs_timestamp",
                ));
            }
            (Some(t), None) => t,
            (None, Some(Value::String(t))) => Timestamp::parse(t).map_err(ToolError::invalid)?,
            (None, _) => Timestamp::from_unix_millis(session.now_unix_millis()),
        };
        properties.insert("hs_timestamp".into(), timestamp.as_str().into());
        if let Some(owner) = input.owner_id {
            let owner = owner.to_string();
            match properties.get("hubspot_owner_id").and_then(Value::as_str) {
                Some(other) if !other.is_empty() && other != owner => {
                    return Err(ToolError::invalid(
                        "owner_id and properties.hubspot_owner_id differ: give the owner once",
                    ));
                }
                _ => {
                    properties.insert("hubspot_owner_id".into(), owner.into());
                }
            }
        }
        let created = create_record(
            session,
            &object_type,
            properties,
            &input.associations,
            "look for it on the associated records before logging it again",
        )?;
        Ok(LoggedActivity {
            id: created.id,
            object_type: object_type.as_str().to_string(),
            activity_type: input.activity_type,
            timestamp: timestamp.as_str().to_string(),
            associations: input.associations.len(),
            warning: created.warning,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn timestamps_accept_iso_and_epoch_millis_only() {
        for ok in [
            "2026-11-21T09:30:00Z",
            "2026-11-21T09:30Z",
            "2026-11-21T09:30:00.123Z",
            "2026-11-21T09:30:00+01:00",
            "1795253400000",
        ] {
            assert!(Timestamp::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "yesterday",
            "2026-11-21",
            "2026-11-21T09:30:00",
            "2026-13-01T00:00:00Z",
            "2026-11-21T25:00:00Z",
            "2026-11-21T09:30:00Z; DROP",
            "-5",
        ] {
            assert!(Timestamp::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn now_is_written_as_an_iso_instant() {
        assert_eq!(
            Timestamp::from_unix_millis(1_795_253_400_123).as_str(),
            "2026-11-21T09:30:00.123Z"
        );
        assert_eq!(
            Timestamp::from_unix_millis(951_782_400_000).as_str(),
            "2000-02-29T00:00:00.000Z"
        );
        assert_eq!(
            Timestamp::from_unix_millis(0).as_str(),
            "1970-01-01T00:00:00.000Z"
        );
    }

    #[test]
    fn activity_types_accept_singular_and_plural() {
        let t: ActivityType = serde_json::from_value(json!("meetings")).unwrap();
        assert_eq!(t, ActivityType::Meeting);
        assert_eq!(t.object_type(), ObjectType::Meetings);
        assert!(serde_json::from_value::<ActivityType>(json!("sms")).is_err());
    }
}
