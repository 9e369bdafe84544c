//! HubSpot object types, record ids and property names, validated before anything is sent;
//! and the reading of HubSpot's answers into typed wire structs ([`decode`], [`Collection`],
//! [`AnswerId`]), so a renamed or missing field is an error, never a silent null.

use super::wire::Paging;
use crate::error::{Crm, CrmProblem, ToolError};
use crate::schema::string_schema;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use std::borrow::Cow;
use std::fmt;

/// A HubSpot object type: the eight standard types the product covers, or a custom type.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(try_from = "String")]
pub enum ObjectType {
    /// `contacts`, type id `0-1`.
    Contacts,
    /// `companies`, type id `0-2`.
    Companies,
    /// `deals`, type id `0-3`.
    Deals,
    /// `tasks`, type id `0-27` (an activity).
    Tasks,
    /// `notes`, type id `0-46` (an activity).
    Notes,
    /// `emails`, type id `0-49` (an activity).
    Emails,
    /// `meetings`, type id `0-47` (an activity).
    Meetings,
    /// `calls`, type id `0-48` (an activity).
    Calls,
    /// `2-<n>` (type id) or `p_<name>` (fully qualified name).
    Custom(String),
}

/// Standard types: API name, type id.
const STANDARD: &[(ObjectType, &str, &str)] = &[
    (ObjectType::Contacts, "contacts", "0-1"),
    (ObjectType::Companies, "companies", "0-2"),
    (ObjectType::Deals, "deals", "0-3"),
    (ObjectType::Tasks, "tasks", "0-27"),
    (ObjectType::Notes, "notes", "0-46"),
    (ObjectType::Meetings, "meetings", "0-47"),
    (ObjectType::Calls, "calls", "0-48"),
    (ObjectType::Emails, "emails", "0-49"),
];

impl ObjectType {
    /// Reads a type as a model may write it: the API name in any case, the type id, the
    /// singular, or a custom type; the error lists the accepted forms.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let lower = text.to_ascii_lowercase();
        if let Some((t, _, _)) = STANDARD
            .iter()
            .find(|(_, name, id)| *name == lower || *id == lower)
        {
            return Ok(t.clone());
        }
        // Models often write the singular ("company", "deal").
        let singular = STANDARD.iter().find(|(_, name, _)| {
            let stem = name
                .strip_suffix("ies")
                .map(|s| format!("{s}y"))
                .unwrap_or_else(|| name.trim_end_matches('s').to_string());
            stem == lower
        });
        let custom_id = lower.strip_prefix("2-").is_some_and(|n| {
            !n.is_empty() && n.len() <= 12 && n.bytes().all(|b| b.is_ascii_digit())
        });
        let custom_name = custom_name(&lower).is_some_and(|n| {
            !n.is_empty()
                && n.len() <= 100
                && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        });
        match singular {
            _ if custom_id || custom_name => Ok(ObjectType::Custom(lower)),
            Some((t, _, _)) => Ok(t.clone()),
            None => Err(format!(
                "{text:?} is not a HubSpot object type: use contacts, companies, deals, tasks, notes, \
                 emails, meetings, calls, or a custom type as 2-<id>, p_<name> or \
                 p<portal id>_<name>"
            )),
        }
    }

    /// The path segment HubSpot's v3/v4 APIs take.
    pub fn as_str(&self) -> &str {
        match self {
            ObjectType::Custom(name) => name,
            standard => STANDARD
                .iter()
                .find(|(t, _, _)| t == standard)
                .map(|(_, name, _)| *name)
                .expect("every standard type is in the table"),
        }
    }

    /// The object type id used in record URLs (`0-1`, or the custom `2-<n>`).
    pub fn type_id(&self) -> Option<&str> {
        match self {
            ObjectType::Custom(name) => name.starts_with("2-").then_some(name.as_str()),
            standard => STANDARD
                .iter()
                .find(|(t, _, _)| t == standard)
                .map(|(_, _, id)| *id),
        }
    }

    /// Engagement (activity) types: notes, calls, meetings, emails, tasks.
    pub fn is_activity(&self) -> bool {
        matches!(
            self,
            ObjectType::Tasks
                | ObjectType::Notes
                | ObjectType::Emails
                | ObjectType::Meetings
                | ObjectType::Calls
        )
    }
}

/// The object name in a custom type's name: `p_<name>`, or the fully qualified
/// `p<portal id>_<name>` ("fullyQualifiedName is derived from p{portal_id}_{object_name}",
/// HubSpot custom objects guide).
fn custom_name(lower: &str) -> Option<&str> {
    let rest = lower.strip_prefix('p')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    (digits <= 12).then(|| rest[digits..].strip_prefix('_'))?
}

impl TryFrom<String> for ObjectType {
    type Error = String;
    fn try_from(value: String) -> Result<Self, String> {
        ObjectType::parse(&value)
    }
}

impl fmt::Display for ObjectType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl JsonSchema for ObjectType {
    fn schema_name() -> Cow<'static, str> {
        "HubSpotObjectType".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        string_schema(
            "^(contacts|companies|deals|tasks|notes|emails|meetings|calls|2-[0-9]+|p[0-9]*_[a-z0-9_]+)$",
            "HubSpot object type: contacts, companies, deals, tasks, notes, emails, meetings, calls, or a custom type (2-<id>, p_<name> or p<portal id>_<name>).",
        )
    }
}

/// A HubSpot record id: a decimal number that fits in u64, kept as HubSpot writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Deserialize)]
#[serde(try_from = "serde_json::Value")]
pub struct RecordId(u64);

impl RecordId {
    /// Reads an id from text: digits only (surrounding spaces ignored), at most `u64::MAX`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.is_empty() || text.len() > 20 || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "{text:?} is not a HubSpot record id: ids are digits only, e.g. \"51\" or \"18234567890\""
            ));
        }
        text.parse()
            .map(RecordId)
            .map_err(|_| format!("{text:?} is too large for a HubSpot record id"))
    }

    #[cfg(test)]
    fn get(self) -> u64 {
        self.0
    }
}

/// An id in a HubSpot answer (record, owner, user, role or team id), which HubSpot writes as a
/// number or a digit string, as text; `None` for anything else.
pub fn id_text(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::Number(n) => n.as_u64().map(|n| n.to_string()),
        serde_json::Value::String(s)
            if !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit()) =>
        {
            Some(s.clone())
        }
        _ => None,
    }
}

/// An id in a HubSpot answer that HubSpot writes as a number in some answers and as a digit
/// string in others (a v4 association row's `toObjectId`, an owner's `userId`): read either
/// way, and kept as the text paths and outputs use.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "serde_json::Value")]
pub(crate) struct AnswerId(String);

impl AnswerId {
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<AnswerId> for String {
    fn from(id: AnswerId) -> String {
        id.0
    }
}

impl TryFrom<serde_json::Value> for AnswerId {
    type Error = String;
    fn try_from(value: serde_json::Value) -> Result<Self, String> {
        id_text(&value)
            .map(AnswerId)
            .ok_or_else(|| format!("{value} is not a HubSpot id"))
    }
}

/// A HubSpot collection answer: `{"results": [...], "paging": {"next": {"after": "..."}}}`.
/// Every collection these tools read documents `results` as required, so, unlike
/// [`super::wire::Page`], an answer without the list is an unexpected answer, not an empty one;
/// `paging` is there only when another page follows.
#[derive(Debug, Deserialize)]
pub(crate) struct Collection<T> {
    pub(crate) results: Vec<T>,
    #[serde(default)]
    paging: Option<Paging>,
}

impl<T> Collection<T> {
    /// HubSpot's `paging.next.after`, as it came.
    pub(crate) fn next_after(&self) -> Option<&str> {
        self.paging
            .as_ref()
            .and_then(|p| p.next.as_ref())
            .map(|n| n.after.as_str())
    }
}

/// Reads HubSpot's answer about `what` as the wire type `T`. An answer HubSpot's reference does
/// not allow (a required field missing, a field of another type) is an unexpected answer that
/// names the field, never a silent null.
pub(crate) fn decode<T: DeserializeOwned>(
    answer: serde_json::Value,
    what: &str,
) -> Result<T, ToolError> {
    serde_json::from_value(answer).map_err(|err| {
        CrmProblem::unexpected_answer(Crm::Hubspot, 200, format!("the {what} answer: {err}")).into()
    })
}

/// Ids arrive as strings (HubSpot's form) or, from a model, as numbers.
impl TryFrom<serde_json::Value> for RecordId {
    type Error = String;
    fn try_from(value: serde_json::Value) -> Result<Self, String> {
        match value {
            serde_json::Value::String(s) => RecordId::parse(&s),
            serde_json::Value::Number(n) => n
                .as_u64()
                .map(RecordId)
                .ok_or_else(|| format!("{n} is not a HubSpot record id")),
            other => Err(format!(
                "{other} is not a HubSpot record id: give the id as a string of digits"
            )),
        }
    }
}

impl fmt::Display for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl JsonSchema for RecordId {
    fn schema_name() -> Cow<'static, str> {
        "HubSpotRecordId".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        string_schema("^[0-9]{1,20}$", "HubSpot record id (digits), e.g. \"51\".")
    }
}

/// A HubSpot property internal name (`firstname`, `hs_timestamp`, `dealstage`).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct PropertyName(String);

impl PropertyName {
    /// Checks an internal name: an ASCII letter, then letters, digits and underscores, at most
    /// 100 characters (surrounding spaces ignored).
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let ok = !text.is_empty()
            && text.len() <= 100
            && text.starts_with(|c: char| c.is_ascii_alphabetic())
            && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if ok {
            Ok(PropertyName(text.to_string()))
        } else {
            Err(format!(
                "{text:?} is not a HubSpot property name: internal names are letters, digits and \
                 underscores, e.g. firstname or hs_lead_status (crma_get_properties lists them)"
            ))
        }
    }

    /// The name as HubSpot takes it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for PropertyName {
    type Error = String;
    fn try_from(value: String) -> Result<Self, String> {
        PropertyName::parse(&value)
    }
}

impl From<PropertyName> for String {
    fn from(name: PropertyName) -> String {
        name.0
    }
}

impl JsonSchema for PropertyName {
    fn schema_name() -> Cow<'static, str> {
        "HubSpotPropertyName".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        string_schema(
            "^[A-Za-z][A-Za-z0-9_]*$",
            "HubSpot property internal name, e.g. firstname, dealstage.",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn object_types_by_name_id_and_custom_forms() {
        assert_eq!(ObjectType::parse("contacts").unwrap(), ObjectType::Contacts);
        assert_eq!(ObjectType::parse("0-3").unwrap(), ObjectType::Deals);
        assert_eq!(ObjectType::parse("Company").unwrap(), ObjectType::Companies);
        assert_eq!(ObjectType::parse("2-12345").unwrap().as_str(), "2-12345");
        assert_eq!(
            ObjectType::parse("p_invoices").unwrap().as_str(),
            "p_invoices"
        );
        assert_eq!(ObjectType::Deals.type_id(), Some("0-3"));
        // The fully qualified name of HubSpot's schema examples: "p7878787_my_object".
        assert_eq!(
            ObjectType::parse("p7878787_my_object").unwrap(),
            ObjectType::Custom("p7878787_my_object".into())
        );
        for bad in [
            "",
            "leads",
            "2-",
            "2-12a",
            "p_",
            "p_../x",
            "p12x_cars",
            "p1234567890123_cars",
            "contacts/1",
            "0-999",
        ] {
            assert!(ObjectType::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn record_ids_are_digits() {
        assert_eq!(RecordId::parse("51").unwrap().get(), 51);
        let from_number: RecordId = serde_json::from_str("1234").unwrap();
        assert_eq!(from_number.get(), 1234);
        for bad in ["", "-1", "12a", "1 2", "99999999999999999999999", "../1"] {
            assert!(RecordId::parse(bad).is_err(), "{bad}");
        }
        assert!(serde_json::from_str::<RecordId>("-5").is_err());
        assert!(serde_json::from_str::<RecordId>("1.5").is_err());
    }

    #[test]
    fn answer_ids_are_numbers_or_digit_strings() {
        for (given, text) in [(json!(101), "101"), (json!("102"), "102")] {
            let id: AnswerId = serde_json::from_value(given).unwrap();
            assert_eq!(id.as_str(), text);
        }
        for bad in [json!("abc"), json!(-1), json!(null), json!("")] {
            assert!(
                serde_json::from_value::<AnswerId>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn collections_need_their_results_list() {
        // The shape of GET /settings/v3/users/roles, which documents `results` as required.
        let roles: Collection<serde_json::Value> = decode(
            json!({"results": [{"id": "100", "name": "Sales rep"}]}),
            "roles",
        )
        .unwrap();
        assert_eq!((roles.results.len(), roles.next_after()), (1, None));
        let page: Collection<serde_json::Value> = decode(
            json!({"results": [], "paging": {"next": {"after": "MTAx", "link": "?after=MTAx"}}}),
            "associations",
        )
        .unwrap();
        assert_eq!(page.next_after(), Some("MTAx"));
        let err =
            decode::<Collection<serde_json::Value>>(json!({"total": 0}), "roles").unwrap_err();
        let ToolError::CrmError(problem) = err else {
            panic!("{err:?}")
        };
        assert_eq!(problem.codes, ["UNEXPECTED_ANSWER"]);
        assert_eq!(
            problem.messages,
            ["the roles answer: missing field `results`"]
        );
    }

    #[test]
    fn property_names() {
        for good in ["firstname", "hs_timestamp", "Custom_Prop_2"] {
            assert!(PropertyName::parse(good).is_ok());
        }
        for bad in ["", "_x", "first name", "a.b", "a-b", "x;drop"] {
            assert!(PropertyName::parse(bad).is_err(), "{bad}");
        }
    }
}
