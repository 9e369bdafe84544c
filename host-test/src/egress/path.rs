//! Paths as the egress policy sees them: whole, percent-decoded segments, and the templates
//! they are matched against.
//!
//! A request path is split on `/` first and each piece decoded after, so an encoded slash
//! (`%2F`) stays inside its segment, where no template variable accepts it. Anything that could
//! make a broker or CRM read the path differently from us (`.`, `..`, empty segments, `?`, `;`,
//! `#`, `\`, control characters, bad percent-escapes) makes the whole path unreadable, and an
//! unreadable path is never admitted.

use std::fmt;

/// Why a path cannot be read as plain segments.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathProblem {
    #[error("the path does not start with '/'")]
    NotAbsolute,
    #[error("the path has an empty segment ('//')")]
    EmptySegment,
    #[error("the path has a '.' or '..' segment")]
    DotSegment,
    #[error("segment {0:?} has a bad percent-escape or is not UTF-8")]
    BadEscape(String),
    #[error("segment {0:?} holds '/', '?', ';', '#', '\\' or a control character once decoded")]
    Reserved(String),
}

/// A request path as decoded segments. A trailing `/` is kept as a final empty segment, so
/// `/services/data/` and `/services/data` differ, as they do to Salesforce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segments(Vec<String>);

impl Segments {
    /// Splits and decodes `path` (no query string), refusing anything ambiguous.
    pub fn parse(path: &str) -> Result<Self, PathProblem> {
        let rest = path.strip_prefix('/').ok_or(PathProblem::NotAbsolute)?;
        let pieces: Vec<&str> = rest.split('/').collect();
        let last = pieces.len() - 1;
        let mut segments = Vec::with_capacity(pieces.len());
        for (i, raw) in pieces.into_iter().enumerate() {
            if raw.is_empty() {
                if i == last && i > 0 {
                    segments.push(String::new());
                    continue;
                }
                return Err(PathProblem::EmptySegment);
            }
            let decoded = percent_encoding::percent_decode_str(raw)
                .decode_utf8()
                .map_err(|_| PathProblem::BadEscape(raw.into()))?;
            if !valid_escapes(raw) {
                return Err(PathProblem::BadEscape(raw.into()));
            }
            if decoded == "." || decoded == ".." {
                return Err(PathProblem::DotSegment);
            }
            if decoded
                .chars()
                .any(|c| matches!(c, '/' | '?' | ';' | '#' | '\\') || c.is_control())
            {
                return Err(PathProblem::Reserved(raw.into()));
            }
            segments.push(decoded.into_owned());
        }
        Ok(Segments(segments))
    }

    /// The segments after `prefix`, when the path starts with it.
    pub fn strip_prefix(&self, prefix: &[String]) -> Option<&[String]> {
        self.0.strip_prefix(prefix)
    }
}

/// `percent_decode` passes a `%` not followed by two hex digits through unchanged; a broker
/// might not, so such a path is refused.
fn valid_escapes(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    bytes.iter().enumerate().all(|(i, b)| {
        *b != b'%'
            || (bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    })
}

/// Words that name deletes or worse on one CRM or the other (HubSpot's batch archive and
/// GDPR delete; Salesforce's composite, tooling and anonymous Apex). No template may spell one,
/// and no variable ever matches one, whatever its character class allows.
pub const RESERVED_WORDS: &[&str] = &[
    "archive",
    "gdpr-delete",
    "purge",
    "batch",
    "composite",
    "tooling",
    "apex",
    "executeanonymous",
    "delete",
];

/// Whether a segment is one of [`RESERVED_WORDS`], in any case.
pub fn is_reserved(segment: &str) -> bool {
    RESERVED_WORDS
        .iter()
        .any(|w| segment.eq_ignore_ascii_case(w))
}

/// What a template variable accepts: each is as narrow as the values the component sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Var {
    /// A HubSpot object type (`contacts`, `0-1`, `p123_thing`) or a Salesforce API name.
    Object,
    /// A HubSpot record id: digits.
    Record,
    /// A Salesforce record id: 15 or 18 letters and digits.
    SalesforceId,
    /// A property name or pipeline id: letters, digits, `_` and `-`.
    Name,
    /// A Salesforce REST version segment, `v65.0`.
    Version,
    /// A Salesforce query locator, `01gD0000002HU6KIAW-2000`.
    Locator,
}

impl Var {
    fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "object" => Var::Object,
            "record" => Var::Record,
            "sf_id" => Var::SalesforceId,
            "name" => Var::Name,
            "version" => Var::Version,
            "locator" => Var::Locator,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Var::Object => "object",
            Var::Record => "record",
            Var::SalesforceId => "sf_id",
            Var::Name => "name",
            Var::Version => "version",
            Var::Locator => "locator",
        }
    }

    /// Whether `segment` is a value of this variable.
    pub fn accepts(self, segment: &str) -> bool {
        let word = |s: &str, extra: &[u8], max: usize| {
            !s.is_empty()
                && s.len() <= max
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || extra.contains(&b))
        };
        if is_reserved(segment) {
            return false;
        }
        match self {
            Var::Object => {
                word(segment, b"_-", 100) && segment.as_bytes()[0].is_ascii_alphanumeric()
            }
            Var::Record => word(segment, b"", 20) && segment.bytes().all(|b| b.is_ascii_digit()),
            Var::SalesforceId => matches!(segment.len(), 15 | 18) && word(segment, b"", 18),
            Var::Name => word(segment, b"_-", 200),
            Var::Version => segment.strip_prefix('v').is_some_and(|v| {
                v.split_once('.').is_some_and(|(major, minor)| {
                    (1..=3).contains(&major.len())
                        && (1..=2).contains(&minor.len())
                        && major
                            .bytes()
                            .chain(minor.bytes())
                            .all(|b| b.is_ascii_digit())
                })
            }),
            Var::Locator => word(segment, b"-", 100),
        }
    }
}

/// One template segment: a literal or a variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Literal(String),
    Var(Var),
}

/// A path template such as `/crm/v3/objects/{object}/{record}`, relative to an integration's
/// root on the broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    text: String,
    parts: Vec<Part>,
}

/// Why a template is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateProblem {
    #[error("{0}")]
    Path(#[from] PathProblem),
    #[error("unknown variable {{{0}}}: use object, record, sf_id, name, version or locator")]
    UnknownVariable(String),
    #[error("segment {0:?} names a delete or an unrestricted endpoint")]
    ReservedWord(String),
}

impl Template {
    /// Parses and vets a template: readable segments, known variables, no reserved word.
    pub fn parse(text: &str) -> Result<Self, TemplateProblem> {
        let Segments(segments) = Segments::parse(text)?;
        let parts = segments
            .into_iter()
            .map(
                |s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    Some(var) => Var::from_name(var)
                        .map(Part::Var)
                        .ok_or_else(|| TemplateProblem::UnknownVariable(var.into())),
                    None if is_reserved(&s) => Err(TemplateProblem::ReservedWord(s)),
                    None => Ok(Part::Literal(s)),
                },
            )
            .collect::<Result<_, _>>()?;
        Ok(Template {
            text: text.into(),
            parts,
        })
    }

    /// Whether the segments match this template, each whole.
    pub fn matches(&self, segments: &[String]) -> bool {
        self.parts.len() == segments.len()
            && self.parts.iter().zip(segments).all(|(part, s)| match part {
                Part::Literal(l) => l == s,
                Part::Var(v) => v.accepts(s),
            })
    }

    /// The template as written in the policy.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for part in &self.parts {
            match part {
                Part::Literal(l) => write!(f, "/{l}")?,
                Part::Var(v) => write!(f, "/{{{}}}", v.name())?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segs(path: &str) -> Vec<String> {
        Segments::parse(path).unwrap().0
    }

    #[test]
    fn segments_are_split_before_they_are_decoded() {
        assert_eq!(segs("/a/b%20c/"), vec!["a", "b c", ""]);
        for (path, problem) in [
            ("a/b", PathProblem::NotAbsolute),
            ("/a//b", PathProblem::EmptySegment),
            ("//a", PathProblem::EmptySegment),
            ("/a/../b", PathProblem::DotSegment),
            ("/a/%2e%2E/b", PathProblem::DotSegment),
            ("/a/./b", PathProblem::DotSegment),
            ("/a/b%2Fc", PathProblem::Reserved("b%2Fc".into())),
            ("/a/b%3Fc", PathProblem::Reserved("b%3Fc".into())),
            ("/a/b;c", PathProblem::Reserved("b;c".into())),
            ("/a/b%5Cc", PathProblem::Reserved("b%5Cc".into())),
            ("/a/b%0Ac", PathProblem::Reserved("b%0Ac".into())),
            ("/a/b%zz", PathProblem::BadEscape("b%zz".into())),
            ("/a/%ff", PathProblem::BadEscape("%ff".into())),
        ] {
            assert_eq!(Segments::parse(path), Err(problem), "{path}");
        }
    }

    #[test]
    fn variables_accept_only_their_own_values() {
        assert!(Var::Object.accepts("contacts") && Var::Object.accepts("0-1"));
        assert!(Var::Object.accepts("Custom__c") && !Var::Object.accepts("-x"));
        assert!(Var::Record.accepts("51") && !Var::Record.accepts("5a"));
        assert!(Var::SalesforceId.accepts("001000000000001AAA"));
        assert!(!Var::SalesforceId.accepts("0010000000001"));
        assert!(Var::Version.accepts("v65.0") && !Var::Version.accepts("65.0"));
        assert!(!Var::Version.accepts("v65") && !Var::Version.accepts("v6a.0"));
        assert!(Var::Locator.accepts("01gD0000002HU6KIAW-2000"));
        for word in ["batch", "Archive", "gdpr-delete", "COMPOSITE", "tooling"] {
            assert!(
                !Var::Object.accepts(word) && !Var::Name.accepts(word),
                "{word}"
            );
        }
    }

    #[test]
    fn templates_match_whole_segments_and_refuse_reserved_words() {
        let t = Template::parse("/crm/v3/objects/{object}/{record}").unwrap();
        assert!(t.matches(&segs("/crm/v3/objects/contacts/51")));
        assert!(!t.matches(&segs("/crm/v3/objects/contacts/51/x")));
        assert!(!t.matches(&segs("/crm/v3/objects/contacts/batch")));
        assert!(!t.matches(&segs("/crm/v3/objects/contacts")));
        assert_eq!(t.to_string(), "/crm/v3/objects/{object}/{record}");
        let trailing = Template::parse("/services/data/").unwrap();
        assert!(trailing.matches(&segs("/services/data/")));
        assert!(!trailing.matches(&segs("/services/data")));
        assert_eq!(
            Template::parse("/crm/v3/objects/{object}/batch/archive"),
            Err(TemplateProblem::ReservedWord("batch".into()))
        );
        assert_eq!(
            Template::parse("/services/data/{version}/Tooling/executeAnonymous"),
            Err(TemplateProblem::ReservedWord("Tooling".into()))
        );
        assert_eq!(
            Template::parse("/x/{id}"),
            Err(TemplateProblem::UnknownVariable("id".into()))
        );
        assert!(matches!(
            Template::parse("/../other"),
            Err(TemplateProblem::Path(PathProblem::DotSegment))
        ));
    }
}
