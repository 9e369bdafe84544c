//! Word classes and hints the lexer and parser share.

use super::lexer::{Kind, Token};
use super::*;

pub(super) const MALFORMED_DATE: &str = "malformed date or datetime: write dates as YYYY-MM-DD \
                              (2024-01-31) and datetimes as YYYY-MM-DDThh:mm:ssZ or with an \
                              offset (2024-01-31T09:00:00+05:30), without quotes";

pub(super) fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `LAST_N_DAYS`, `N_WEEKS_AGO`, `NEXT_N_FISCAL_QUARTERS`...: the date literals taking `:n`.
pub(super) fn is_n_date_literal(word: &str) -> bool {
    let upper = word.to_ascii_uppercase();
    upper.starts_with("N_") || upper.contains("_N_")
}

/// `TODAY`, `LAST_90_DAYS`, `THIS_FISCAL_QUARTER`, `N_DAYS_AGO`...: checked by shape, not
/// against a list, so date literals Salesforce adds later still pass.
pub(super) fn is_date_literal(word: &str) -> bool {
    let upper = word.to_ascii_uppercase();
    matches!(upper.as_str(), "YESTERDAY" | "TODAY" | "TOMORROW")
        || ["LAST_", "THIS_", "NEXT_"]
            .iter()
            .any(|prefix| upper.starts_with(prefix))
        || (upper.starts_with("N_") && upper.ends_with("_AGO"))
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

/// How many arguments SOQL's own functions take (least, most); `None` for names it does not
/// define (Salesforce judges those). From the SOQL and SOSL Reference: Aggregate Functions,
/// Date Functions, FORMAT(), convertCurrency(), toLabel(), GROUPING(), FIELDS(), Location-Based
/// SOQL Queries (DISTANCE, GEOLOCATION).
pub(super) fn function_arity(name: &str) -> Option<(usize, usize)> {
    let upper = name.to_ascii_uppercase();
    let arity = match upper.as_str() {
        "COUNT" => (0, 1),
        "COUNT_DISTINCT" | "SUM" | "AVG" | "MIN" | "MAX" | "FORMAT" | "CONVERTCURRENCY"
        | "TOLABEL" | "GROUPING" | "FIELDS" | "DAY_ONLY" | "CONVERTTIMEZONE" => (1, 1),
        "GEOLOCATION" => (2, 2),
        "DISTANCE" => (3, 3),
        "ROLLUP" | "CUBE" => (1, usize::MAX),
        _ if upper.starts_with("CALENDAR_")
            || upper.starts_with("FISCAL_")
            || upper.starts_with("DAY_IN_")
            || upper.starts_with("WEEK_IN_")
            || upper == "HOUR_IN_DAY" =>
        {
            (1, 1)
        }
        _ => return None,
    };
    Some(arity)
}

/// Words Salesforce's SOQL parser takes only as keywords, though the reserved-word page does
/// not list them: no field, object, scope or alias may be named so.
pub(super) const GRAMMAR_KEYWORDS: &[&str] = &[
    "BY", "FOR", "ELSE", "CUBE", "ROLLUP", "TRUE", "FALSE", "BIND", "LOOKUP", "UPDATE",
];

/// Whether a function takes literal values as arguments: the location functions
/// (`GEOLOCATION(37.7, -122.4)`, `DISTANCE(f, GEOLOCATION(...), 'mi')`) and functions SOQL does
/// not define (Salesforce judges those); SOQL's own others take fields.
pub(super) fn takes_literals(name: &str) -> bool {
    name.eq_ignore_ascii_case("GEOLOCATION")
        || name.eq_ignore_ascii_case("DISTANCE")
        || function_arity(name).is_none()
}

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

/// Fixes for words models borrow from SQL, shown instead of a generic "expected ..." message.
pub(super) fn sql_habit_hint(token: &Token<'_>) -> Option<&'static str> {
    const JOIN: &str = "SOQL has no JOIN: follow relationships with dot paths (SELECT \
                        Account.Name FROM Contact) or child subqueries (SELECT Name, (SELECT \
                        LastName FROM Contacts) FROM Account)";
    if token.kind != Kind::Ident {
        return None;
    }
    let hint = match token.text.to_ascii_uppercase().as_str() {
        "JOIN" | "INNER" | "LEFT" | "RIGHT" | "OUTER" | "CROSS" | "ON" => JOIN,
        "IS" => "SOQL has no IS NULL: write Field = null or Field != null",
        "BETWEEN" => "SOQL has no BETWEEN: write Field >= low AND Field <= high",
        "AS" => {
            "SOQL aliases don't use AS: put the alias right after the field, e.g. COUNT(Id) \
                 total"
        }
        "DISTINCT" => "SOQL has no DISTINCT: use GROUP BY Field, or COUNT_DISTINCT(Field)",
        "TOP" => "SOQL has no TOP: end the query with LIMIT n",
        "UNION" => "SOQL has no UNION: run separate queries",
        _ => return None,
    };
    Some(hint)
}
