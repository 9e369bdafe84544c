//! Salesforce record ids and API names, validated before anything is sent.

use crate::schema::string_schema;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use std::borrow::Cow;
use std::fmt;

/// A Salesforce record id: 15 characters (case-sensitive) or 18 (with a checksum that encodes
/// the case of the first 15, so it survives case-folding).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SalesforceId(String);

/// The alphabet of the 18-character checksum suffix.
const CHECKSUM_ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ012345";

impl SalesforceId {
    /// Parses a 15- or 18-character id. An 18-character id must carry a matching checksum; one
    /// whose letters were all upper- or lower-cased is restored from its checksum.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if !text.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(format!(
                "{text:?} is not a Salesforce record id: ids are letters and digits only"
            ));
        }
        match text.len() {
            15 => Ok(SalesforceId(text.to_string())),
            18 => Self::parse_18(text),
            n => Err(format!(
                "{text:?} is not a Salesforce record id: ids are 15 or 18 characters, this one has {n}"
            )),
        }
    }

    fn parse_18(text: &str) -> Result<Self, String> {
        let (body, suffix) = text.split_at(15);
        if checksum(body).eq_ignore_ascii_case(suffix.as_bytes()) {
            return Ok(SalesforceId(format!(
                "{body}{}",
                suffix.to_ascii_uppercase()
            )));
        }
        // The id may have been case-folded (18-character ids are meant to survive that):
        // restore the case the checksum records and check again.
        let folded = body == body.to_ascii_lowercase() || body == body.to_ascii_uppercase();
        let suffix = suffix.to_ascii_uppercase();
        if folded
            && let Some(restored) = restore_case(body, &suffix)
            && checksum(&restored) == suffix.as_bytes()
        {
            return Ok(SalesforceId(format!("{restored}{suffix}")));
        }
        Err(format!(
            "{text:?} is not a valid Salesforce record id: its last 3 characters do not match the \
             checksum of the first 15, so it is probably mistyped or truncated"
        ))
    }

    /// `text` as the id it already is in canonical form, borrowed: 15 characters, or 18 whose
    /// checksum matches in upper case, as Salesforce itself writes ids. Checked without
    /// allocating, for the id of every row of a query page; any other spelling (a case-folded
    /// id, spaces around it) is `None` and goes through [`SalesforceId::parse`].
    pub fn canonical(text: &str) -> Option<CanonicalId<'_>> {
        let bytes = text.as_bytes();
        if !bytes.iter().all(u8::is_ascii_alphanumeric) {
            return None;
        }
        match bytes.len() {
            15 => Some(CanonicalId(text)),
            18 => (checksum(&text[..15]) == bytes[15..]).then_some(CanonicalId(text)),
            _ => None,
        }
    }

    /// The id borrowed, as [`SalesforceId::canonical`] gives it.
    pub fn borrowed(&self) -> CanonicalId<'_> {
        CanonicalId(&self.0)
    }

    /// The id as text, 15 or 18 characters, a case-folded one already re-cased.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The 18-character form, which survives case-insensitive systems (spreadsheets, some
    /// databases): the 15-character id plus its checksum; an 18-character id is itself.
    pub fn to_18(&self) -> SalesforceId {
        match self.0.len() {
            15 => {
                let mut id = self.0.clone();
                id.extend(checksum(&self.0).map(char::from));
                SalesforceId(id)
            }
            _ => self.clone(),
        }
    }

    /// The three-character key prefix that names the object type (001 Account, 003 Contact...).
    pub fn key_prefix(&self) -> &str {
        &self.0[..3]
    }
}

/// A valid Salesforce record id borrowed from text, in the form Salesforce writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CanonicalId<'a>(&'a str);

impl<'a> CanonicalId<'a> {
    /// The id as text, 15 or 18 characters.
    pub fn as_str(&self) -> &'a str {
        self.0
    }
}

/// The 3-character checksum of a 15-character id: one character per 5-character chunk, whose
/// bits mark the upper-case letters.
fn checksum(body: &str) -> [u8; 3] {
    let mut sum = [0; 3];
    for (mark, chunk) in sum.iter_mut().zip(body.as_bytes().chunks(5)) {
        let bits = chunk
            .iter()
            .enumerate()
            .filter(|(_, b)| b.is_ascii_uppercase())
            .fold(0usize, |acc, (i, _)| acc | (1 << i));
        *mark = CHECKSUM_ALPHABET[bits];
    }
    sum
}

/// Re-cases a folded 15-character body from its checksum; `None` when a bit marks a digit.
fn restore_case(body: &str, suffix: &str) -> Option<String> {
    let mut out = String::with_capacity(15);
    for (chunk, mark) in body.as_bytes().chunks(5).zip(suffix.bytes()) {
        let bits = CHECKSUM_ALPHABET.iter().position(|&c| c == mark)?;
        for (i, &b) in chunk.iter().enumerate() {
            let upper = bits & (1 << i) != 0;
            if upper && !b.is_ascii_alphabetic() {
                return None;
            }
            out.push(if upper {
                b.to_ascii_uppercase()
            } else {
                b.to_ascii_lowercase()
            } as char);
        }
    }
    Some(out)
}

impl TryFrom<String> for SalesforceId {
    type Error = String;
    fn try_from(value: String) -> Result<Self, String> {
        SalesforceId::parse(&value)
    }
}

impl From<SalesforceId> for String {
    fn from(id: SalesforceId) -> String {
        id.0
    }
}

impl fmt::Display for SalesforceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl JsonSchema for SalesforceId {
    fn schema_name() -> Cow<'static, str> {
        "SalesforceId".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        string_schema(
            "^[a-zA-Z0-9]{15}([a-zA-Z0-9]{3})?$",
            "Salesforce record id, 15 or 18 characters (e.g. 0015g00000XyZabAAB).",
        )
    }
}

/// A Salesforce API name of an object or field: letters, digits and single underscores,
/// starting with a letter, with `__` only between a namespace, the name and a suffix
/// (`Account`, `Invoice__c`, `ns__Invoice__c`, `Region__mdt`).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct ApiName(String);

/// Longest API name accepted (Salesforce's own names stay well below this).
const MAX_API_NAME_LEN: usize = 120;

impl ApiName {
    /// Checks a name as the type describes (surrounding spaces ignored), at most 120 characters;
    /// the error gives examples of valid names.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let parts: Vec<&str> = text.split("__").collect();
        let part_ok = |p: &&str| {
            p.starts_with(|c: char| c.is_ascii_alphabetic())
                && !p.ends_with('_')
                && !p.contains("__")
                && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        };
        if text.is_empty()
            || text.len() > MAX_API_NAME_LEN
            || parts.len() > 3
            || !parts.iter().all(part_ok)
        {
            return Err(format!(
                "{text:?} is not a Salesforce API name: use letters, digits and underscores, \
                 starting with a letter (e.g. Account, Invoice__c, ns__Invoice__c)"
            ));
        }
        Ok(ApiName(text.to_string()))
    }

    /// The name as Salesforce takes it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for ApiName {
    type Error = String;
    fn try_from(value: String) -> Result<Self, String> {
        ApiName::parse(&value)
    }
}

impl From<ApiName> for String {
    fn from(name: ApiName) -> String {
        name.0
    }
}

impl fmt::Display for ApiName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl JsonSchema for ApiName {
    fn schema_name() -> Cow<'static, str> {
        "ApiName".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        string_schema(
            "^[A-Za-z][A-Za-z0-9_]*$",
            "Salesforce API name, e.g. Account, Opportunity, Invoice__c.",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifteen_character_ids_are_taken_as_given() {
        let id = SalesforceId::parse("001000000000001").unwrap();
        assert_eq!(id.as_str(), "001000000000001");
        assert_eq!(id.key_prefix(), "001");
    }

    #[test]
    fn eighteen_character_checksum_is_checked() {
        // Checksums worked by hand: chunks with no upper-case letter give 'A'.
        assert_eq!(&checksum("001000000000001"), b"AAA");
        // "0015g00000XyZab": chunk 3 'XyZab' has upper at 0 and 2 -> 0b101 = 5 -> 'F'.
        assert_eq!(&checksum("0015g00000XyZab"), b"AAF");
        assert!(SalesforceId::parse("001000000000001AAA").is_ok());
        assert!(SalesforceId::parse("0015g00000XyZabAAF").is_ok());
        let err = SalesforceId::parse("0015g00000XyZabAAB").unwrap_err();
        assert!(err.contains("checksum"), "{err}");
    }

    #[test]
    fn case_folded_eighteen_character_ids_are_restored() {
        let id = SalesforceId::parse("0015g00000xyzabaaf").unwrap();
        assert_eq!(id.as_str(), "0015g00000XyZabAAF");
        let id = SalesforceId::parse("0015G00000XYZABAAF").unwrap();
        assert_eq!(id.as_str(), "0015g00000XyZabAAF");
    }

    #[test]
    fn canonical_ids_are_borrowed_and_every_other_spelling_is_parsed() {
        for canonical in [
            "001000000000001",
            "001000000000001AAA",
            "0015g00000XyZabAAF",
        ] {
            let id = SalesforceId::canonical(canonical).expect(canonical);
            assert_eq!(id.as_str(), canonical);
            assert_eq!(SalesforceId::parse(canonical).unwrap().as_str(), canonical);
        }
        // Valid ids, but not as Salesforce writes them: parse re-cases or trims them.
        for other in [
            "0015g00000xyzabaaf",
            "0015g00000XyZabaaf",
            " 001000000000001",
        ] {
            assert_eq!(SalesforceId::canonical(other), None, "{other}");
            assert!(SalesforceId::parse(other).is_ok(), "{other}");
        }
        // Not ids at all.
        for bad in [
            "0015g00000XyZabAAB",
            "00100000000001",
            "001000000000001AA",
            "0010000-0000001",
        ] {
            assert_eq!(SalesforceId::canonical(bad), None, "{bad}");
            assert!(SalesforceId::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn malformed_ids_say_what_is_wrong() {
        for (bad, hint) in [
            ("", "15 or 18"),
            ("001", "15 or 18"),
            ("0010000000000010", "has 16"),
            ("001/00000000001", "letters and digits"),
            ("../../sobjects/", "letters and digits"),
            ("001000000000001 AA", "letters and digits"),
        ] {
            let err = SalesforceId::parse(bad).unwrap_err();
            assert!(err.contains(hint), "{bad:?}: {err}");
        }
    }

    #[test]
    fn api_names() {
        for good in [
            "Account",
            "Invoice__c",
            "ns__Invoice__c",
            "Region__mdt",
            "My_Object_2__c",
            "AccountHistory",
        ] {
            assert!(ApiName::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "1Account",
            "_Account",
            "Account_",
            "Acc ount",
            "Acc-ount",
            "a___c",
            "x__y__z__c",
            "Account/../x",
            "Account;",
            "..",
            "Ünïcode",
        ] {
            assert!(ApiName::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn serde_refuses_invalid_values() {
        let err = serde_json::from_str::<SalesforceId>("\"0015g00000XyZabAAB\"").unwrap_err();
        assert!(err.to_string().contains("checksum"));
        let name: ApiName = serde_json::from_str("\"Invoice__c\"").unwrap();
        assert_eq!(name.as_str(), "Invoice__c");
    }
}
