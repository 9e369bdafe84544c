//! Word classes and hints the lexer and parser share.

use super::*;

pub(super) const MALFORMED_DATE: &str = "malformed date or datetime: write dates as YYYY-MM-DD \
                              (2024-01-31) and datetimes as YYYY-MM-DDThh:mm:ssZ or with an \
                              offset (2024-01-31T09:00:00+05:30), without quotes";

pub(super) fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The date literals that take no number, as the SOQL reference lists them ("Date Formats
/// and Date Literals"); Salesforce's grammar knows exactly these.
const FIXED_DATE_LITERALS: &[&str] = &[
    "YESTERDAY",
    "TODAY",
    "TOMORROW",
    "LAST_WEEK",
    "THIS_WEEK",
    "NEXT_WEEK",
    "LAST_MONTH",
    "THIS_MONTH",
    "NEXT_MONTH",
    "LAST_90_DAYS",
    "NEXT_90_DAYS",
    "THIS_QUARTER",
    "LAST_QUARTER",
    "NEXT_QUARTER",
    "THIS_YEAR",
    "LAST_YEAR",
    "NEXT_YEAR",
    "THIS_FISCAL_QUARTER",
    "LAST_FISCAL_QUARTER",
    "NEXT_FISCAL_QUARTER",
    "THIS_FISCAL_YEAR",
    "LAST_FISCAL_YEAR",
    "NEXT_FISCAL_YEAR",
];

/// The date literals written with `:n`, from the same page.
const N_DATE_LITERALS: &[&str] = &[
    "LAST_N_DAYS",
    "NEXT_N_DAYS",
    "N_DAYS_AGO",
    "LAST_N_WEEKS",
    "NEXT_N_WEEKS",
    "N_WEEKS_AGO",
    "LAST_N_MONTHS",
    "NEXT_N_MONTHS",
    "N_MONTHS_AGO",
    "LAST_N_QUARTERS",
    "NEXT_N_QUARTERS",
    "N_QUARTERS_AGO",
    "LAST_N_YEARS",
    "NEXT_N_YEARS",
    "N_YEARS_AGO",
    "LAST_N_FISCAL_QUARTERS",
    "NEXT_N_FISCAL_QUARTERS",
    "N_FISCAL_QUARTERS_AGO",
    "LAST_N_FISCAL_YEARS",
    "NEXT_N_FISCAL_YEARS",
    "N_FISCAL_YEARS_AGO",
];

fn listed(word: &str, list: &[&str]) -> bool {
    list.iter().any(|w| word.eq_ignore_ascii_case(w))
}

/// `LAST_N_DAYS`, `N_WEEKS_AGO`, `NEXT_N_FISCAL_QUARTERS`...: the date literals taking `:n`.
pub(super) fn is_n_date_literal(word: &str) -> bool {
    listed(word, N_DATE_LITERALS)
}

/// `TODAY`, `LAST_90_DAYS`, `THIS_FISCAL_QUARTER`...: the date literals taking no number.
pub(super) fn is_fixed_date_literal(word: &str) -> bool {
    listed(word, FIXED_DATE_LITERALS)
}

pub(super) fn is_date_literal(word: &str) -> bool {
    is_fixed_date_literal(word) || is_n_date_literal(word)
}

/// A word shaped like a date literal (`LAST_5_DAYS`, `LAST_N_HOURS`) that SOQL does not define:
/// worth its own message, since the model meant a date.
pub(super) fn looks_like_date_literal(word: &str) -> bool {
    let upper = word.to_ascii_uppercase();
    ["LAST_", "THIS_", "NEXT_"]
        .iter()
        .any(|prefix| upper.starts_with(prefix))
        || (upper.starts_with("N_") && upper.ends_with("_AGO"))
}

/// Why a date-shaped word is refused, with the nearest valid spellings.
pub(super) fn unknown_date_literal(word: &str) -> String {
    format!(
        "{} is not a SOQL date literal: use one Salesforce defines, e.g. TODAY, LAST_WEEK, \
         THIS_MONTH, LAST_90_DAYS, THIS_FISCAL_QUARTER, or an N literal with its number such as \
         LAST_N_DAYS:5, NEXT_N_MONTHS:3 or N_YEARS_AGO:2",
        word.to_ascii_uppercase()
    )
}

/// An ISO currency code followed by a whole amount, e.g. `USD5000`.
pub(super) fn is_currency_amount(word: &str) -> bool {
    let bytes = word.as_bytes();
    bytes.len() > 3
        && bytes[..3].iter().all(u8::is_ascii_alphabetic)
        && bytes[3..].iter().all(u8::is_ascii_digit)
}

/// Words that may stand alone as a value: booleans, null, date literals and currency amounts.
pub(super) fn is_value_word(word: &str) -> bool {
    ["TRUE", "FALSE", "NULL"]
        .iter()
        .any(|w| word.eq_ignore_ascii_case(w))
        || is_date_literal(word)
        || is_currency_amount(word)
}

/// Words Salesforce's SOQL parser takes only as keywords, though the reserved-word page does
/// not list them: no simple field, object, scope, function or alias may be named so (inside a
/// dotted path the grammar reads them as names: `Owner.By__c` and `Owner.BY` alike).
pub(super) const GRAMMAR_KEYWORDS: &[&str] = &[
    "AS", "BY", "FOR", "ELSE", "CUBE", "ROLLUP", "TRUE", "FALSE", "BIND", "LOOKUP", "UPDATE",
];

/// Words the grammar also takes as keywords yet lets stand as names in most places (an object
/// called `Offset`, a field `Data`): only a USING SCOPE name, a plain identifier in the grammar,
/// may be none of them.
pub(super) const SOFT_KEYWORDS: &[&str] = &[
    "DATA",
    "CATEGORY",
    "AT",
    "ABOVE",
    "BELOW",
    "ABOVE_OR_BELOW",
    "OFFSET",
    "VIEW",
    "REFERENCE",
    "TYPEOF",
    "WHEN",
    "THEN",
    "END",
    "DISTANCE",
    "GEOLOCATION",
    "GROUP",
    "ORDER",
    "CASE",
    "FIELDS",
    "COUNT",
    "SCOPE",
    "FLAT",
    "HIERARCHICAL",
];

/// Whether a string literal (quotes included) holds a `\%` or `\_` escape.
pub(super) fn has_like_escape(literal: &str) -> bool {
    let mut chars = literal.chars();
    while let Some(c) = chars.next() {
        if c == '\\' && matches!(chars.next(), Some('%' | '_')) {
            return true;
        }
    }
    false
}

pub(super) fn is_aggregate_function(name: &str) -> bool {
    AGGREGATE_FUNCTIONS
        .iter()
        .any(|f| name.eq_ignore_ascii_case(f))
}

/// Explains a character SOQL has no use for (`next` is the one after it), naming the likely
/// intent where there is one.
pub(super) fn unexpected_char_reason(next: Option<char>, c: char) -> String {
    let reason = match c {
        ';' => {
            "';' is not allowed: send exactly one SELECT statement, with no semicolon \
                after it"
        }
        '"' => "SOQL strings use single quotes: write 'text' instead of \"text\"",
        '`' => {
            "backticks are not SOQL: write field and object names bare, e.g. SELECT Name \
                FROM Account"
        }
        '{' | '}' => {
            "braces are not SOQL: FIND {...} is a SOSL search, which this tool does \
                      not run; write a SELECT ... FROM ... query instead"
        }
        '[' | ']' => {
            "square brackets are Apex syntax: send the bare query, e.g. SELECT Id \
                      FROM Account"
        }
        ':' => {
            "bind variables (:name) only work inside Apex: write the value itself, e.g. \
                'Acme' or 2024-01-31 (a colon is only allowed in date literals such as \
                LAST_N_DAYS:30)"
        }
        '-' if next == Some('-') => "comments (--) are not allowed in SOQL: remove them",
        '-' => "'-' is only allowed as the sign of a number, e.g. -5: SOQL has no arithmetic",
        '/' if matches!(next, Some('*' | '/')) => {
            "comments (/* */ or //) are not allowed in SOQL: remove them"
        }
        '&' | '|' => "'&' and '|' are not SOQL: combine conditions with AND and OR",
        '?' => "'?' placeholders are not supported: write the value itself",
        '\\' => "a backslash is only allowed inside a quoted string, e.g. 'Bob\\'s BBQ'",
        c if c.is_whitespace() => {
            return format!(
                "unexpected whitespace character U+{:04X}: separate words with plain \
                 spaces, tabs or line breaks",
                u32::from(c)
            );
        }
        c => {
            return format!(
                "unexpected character '{}' (U+{:04X}): outside quoted strings SOQL uses only \
                 names, numbers, dates, commas, dots, parentheses and comparison operators",
                c.escape_debug(),
                u32::from(c)
            );
        }
    };
    reason.to_owned()
}
