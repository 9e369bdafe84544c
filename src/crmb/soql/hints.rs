//! The fixes shown for words models borrow from SQL (`JOIN`, `IS NULL`, `AS`, `DISTINCT`,
//! `TOP`...), instead of a generic "expected ..." message.

use super::lexer::{Kind, Token};

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
