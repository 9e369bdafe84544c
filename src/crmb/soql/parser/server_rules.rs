//! Rules Salesforce's server applies to a query that its ANTLR grammar does not check (issue 37,
//! point 5): each is stated on the SOQL and SOSL Reference page cited beside it, and each
//! refusal says what to write instead. Also the one documented form the grammar refuses that is
//! accepted here: `FORMULA('field - field') > n` in WHERE (beta).

use super::super::lexer::{Kind, Token};
use super::super::*;
use super::{Parser, QueryKind};

/// Which clause a condition belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in super::super) enum Clause {
    Where,
    Having,
}

/// A dotted field path deeper than [`MAX_PARENT_LEVELS`] segments, kept until its query's FROM
/// names are known.
#[derive(Debug, Clone)]
pub(in super::super) struct FieldPath<'a> {
    start: Token<'a>,
    path: String,
}

/// "You can't use more than two IN or NOT IN statements per WHERE clause", and in the note on
/// multiple semi-joins: "You can use at most two subqueries in a single semi-join or anti-join
/// query." Comparison Operators, Considerations for Semi-Join and Anti-Join Queries:
/// <https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_select_comparisonoperators.htm>
/// Counted per WHERE clause (a child subquery's WHERE counts on its own), semi-joins and
/// anti-joins only: IN with a list of values is not a semi-join.
const MAX_SEMI_JOINS_PER_WHERE: usize = 2;

/// "No more than 20 parent-to-child relationships can be specified in a query."
/// Understanding Relationship Query Limitations:
/// <https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_relationships_query_limits.htm>
/// Counted over the whole query, nested subqueries included.
const MAX_CHILD_SUBQUERIES: usize = 20;

/// "In each specified relationship, no more than five levels can be specified in a
/// child-to-parent relationship. For example, Contact.Account.Owner.FirstName (three levels)."
/// Same page as [`MAX_CHILD_SUBQUERIES`]. Counted as that example counts: the segments of the
/// path after the queried object, so `Account.Owner.FirstName` (or `Contact.Account.Owner.
/// FirstName` in a query FROM Contact) is three levels and five levels reach four relationships
/// up.
const MAX_PARENT_LEVELS: usize = 5;

/// "Strings in WHERE clauses can't exceed 4,000 characters. This limit doesn't apply to SOQL
/// queries in Apex if the WHERE clause includes the IN operator" (queries sent to /query are
/// not Apex). WHERE:
/// <https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_select_conditionexpression.htm>
/// Counted in characters of the string's value: an escape such as `\n` or `\u00e9` is one.
const MAX_WHERE_STRING_CHARS: usize = 4_000;

/// FORMULA() (Beta): "Use the FORMULA() function in a WHERE clause to filter records based on
/// arithmetic operations on two field values. The FORMULA() function is not supported in the
/// SELECT clause." Syntax `WHERE FORMULA('fieldName op fieldName') comparisonOperator
/// literalValue`, op `+` or `-`:
/// <https://developer.salesforce.com/docs/platform/salesforce-soql-sosl/guide/sforce-api-calls-soql-select-formula.html>
pub(super) const FORMULA_ONLY_IN_WHERE: &str = "FORMULA() (beta) works only on the left \
                                                of a WHERE condition, e.g. WHERE \
                                                FORMULA('Amount - ExpectedRevenue') > 100: it \
                                                isn't supported in SELECT, HAVING, GROUP BY or \
                                                ORDER BY, or inside another function";

const FORMULA_EXAMPLE: &str = "FORMULA('Amount - ExpectedRevenue') > 100";

impl<'a> Parser<'a> {
    // --- semi-joins and anti-joins -------------------------------------------------------------

    /// "You can't use subqueries with OR." Comparison Operators (Subquery limits), the page of
    /// [`MAX_SEMI_JOINS_PER_WHERE`]; the server answers "Semi join sub-selects are not allowed
    /// with the 'OR' operator".
    pub(super) fn semi_join_with_or(&self, or: Token<'_>) -> SoqlError {
        self.error_at(
            or,
            "Salesforce refuses a semi-join or anti-join (IN or NOT IN (SELECT ...)) combined with \
             OR: run one query per OR branch and merge the results, or join the conditions with \
             AND if all of them must hold",
        )
    }

    /// "You can't use the NOT operator as a conjunction with semi-joins and anti-joins. Using it
    /// converts a semi-join to an anti-join, and the reverse. Instead of using the NOT operator,
    /// write the query in the appropriate semi-join or anti-join form." Comparison Operators
    /// (Basic limits), the page of [`MAX_SEMI_JOINS_PER_WHERE`].
    pub(super) fn negated_semi_join(&self, not: Token<'_>) -> SoqlError {
        self.error_at(
            not,
            "NOT can't be applied to a semi-join or anti-join: write the other form instead, Id \
             NOT IN (SELECT ...) for NOT Id IN (SELECT ...) and Id IN (SELECT ...) for NOT Id NOT \
             IN (SELECT ...), with the NOT kept off any other condition",
        )
    }

    /// At most [`MAX_SEMI_JOINS_PER_WHERE`] semi-joins and anti-joins in the WHERE clause whose
    /// first one, if any, is `semi_join_tokens[first]`.
    pub(super) fn check_semi_join_count(&self, first: usize) -> Result<(), SoqlError> {
        match self.semi_join_tokens.get(first + MAX_SEMI_JOINS_PER_WHERE) {
            Some(&extra) => Err(self.error_at(
                extra,
                format!(
                    "a WHERE clause can hold at most {MAX_SEMI_JOINS_PER_WHERE} semi-joins or \
                     anti-joins (IN or NOT IN (SELECT ...)) and this is one more: keep two and run \
                     a second query for the rest, then combine the Ids"
                ),
            )),
            None => Ok(()),
        }
    }

    // --- WHERE operands and values -------------------------------------------------------------

    /// The left operand of a WHERE comparison, `tokens[from..index]`, may hold neither an
    /// aggregate function nor convertCurrency().
    ///
    /// Aggregates: "you can include aggregate functions in a HAVING clause, but not in a WHERE
    /// clause." HAVING:
    /// <https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_select_having.htm>
    ///
    /// convertCurrency(): "You can't use the convertCurrency() function in a WHERE clause. If you
    /// do, an error is returned. Use the following syntax to convert a numeric value to the
    /// user's currency from any active currency in your org: WHERE Object_name Operator
    /// ISO_CODEvalue". convertCurrency():
    /// <https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_querying_currency_fields.htm>
    pub(super) fn check_where_operand(&self, from: usize) -> Result<(), SoqlError> {
        let operand = &self.tokens[from..self.index];
        let calls = operand
            .windows(2)
            .filter(|pair| pair[0].kind == Kind::Ident && pair[1].kind == Kind::LParen)
            .map(|pair| pair[0]);
        for name in calls {
            if name.is_any_word(AGGREGATE_FUNCTIONS) {
                let function = name.text.to_ascii_uppercase();
                return Err(self.error_at(
                    name,
                    format!(
                        "aggregate functions such as {function}() can't be used in WHERE: filter \
                         groups with HAVING after GROUP BY (e.g. GROUP BY AccountId HAVING \
                         {function}(Amount) > 10000), or compare the field itself in WHERE (e.g. \
                         Amount > 10000)"
                    ),
                ));
            }
            if name.is_word("convertCurrency") {
                return Err(self.error_at(
                    name,
                    "convertCurrency() can't be used in WHERE: compare the field with an amount \
                     in a currency instead, e.g. WHERE Amount > USD5000 (Salesforce converts \
                     from that ISO code)",
                ));
            }
        }
        Ok(())
    }

    /// A string value in a WHERE clause is at most [`MAX_WHERE_STRING_CHARS`] characters long.
    pub(super) fn check_where_string(&self, token: Token<'_>) -> Result<(), SoqlError> {
        if self.condition != Some(Clause::Where) {
            return Ok(());
        }
        let length = string_value_chars(token.text);
        if length <= MAX_WHERE_STRING_CHARS {
            return Ok(());
        }
        Err(self.error_at(
            token,
            format!(
                "this string is {length} characters long and Salesforce allows at most 4,000 in \
                 a WHERE clause: match its start with LIKE instead (e.g. Description LIKE 'the \
                 first few hundred characters%'), or filter on another field"
            ),
        ))
    }

    /// `FORMULA('field op field') operator value`, the one place FORMULA() works (see
    /// [`FORMULA_ONLY_IN_WHERE`]); the grammar refuses it, the server takes it (beta).
    pub(super) fn parse_formula_comparison(&mut self) -> Result<(), SoqlError> {
        let name = self.peek();
        if self.condition != Some(Clause::Where) {
            return Err(self.error_at(name, FORMULA_ONLY_IN_WHERE));
        }
        self.advance();
        let open = self.advance();
        let expression = self.peek();
        if expression.kind != Kind::Str || !is_formula_expression(expression.text) {
            return Err(self.error_at(
                expression,
                format!(
                    "FORMULA() takes one quoted expression of two fields joined by + or -, e.g. \
                     {FORMULA_EXAMPLE}"
                ),
            ));
        }
        self.advance();
        self.expect_close(open)?;
        let operator = self.peek();
        if operator.kind != Kind::Op {
            return Err(self.error_at(
                operator,
                format!(
                    "FORMULA('...') is compared with =, !=, <, <=, > or >= and one value, e.g. \
                     {FORMULA_EXAMPLE}"
                ),
            ));
        }
        self.advance();
        if matches!(operator.text, "<" | ">")
            && self.peek().kind == Kind::Op
            && self.peek().text == "="
        {
            self.advance();
        }
        self.parse_value()
    }

    // --- SELECT lists ----------------------------------------------------------------------------

    /// "TYPEOF can't be used in queries with functions in the SELECT clause. The following
    /// example is not valid because the TYPEOF includes the FORMAT function." TYPEOF:
    /// <https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_select_typeof.htm>
    /// This one is a function after THEN or ELSE.
    pub(super) fn typeof_with_function(&self, function: Token<'_>) -> SoqlError {
        self.error_at(function, typeof_reason(function.text))
    }

    /// The same rule for a function elsewhere in the SELECT list of a query with TYPEOF:
    /// `at` is whichever of the two came second.
    pub(super) fn typeof_beside_function(&self, at: Token<'_>, function: Token<'_>) -> SoqlError {
        self.error_at(at, typeof_reason(function.text))
    }

    /// Counts a child subquery, refusing the one past [`MAX_CHILD_SUBQUERIES`].
    pub(super) fn count_child_subquery(&mut self, open: Token<'_>) -> Result<(), SoqlError> {
        if self.child_subqueries == MAX_CHILD_SUBQUERIES {
            return Err(self.error_at(
                open,
                format!(
                    "a query can name at most {MAX_CHILD_SUBQUERIES} parent-to-child relationships \
                     (child subqueries, nested ones included) and this is one more: query the \
                     other child objects in a second query, e.g. SELECT Id, Subject FROM Task \
                     WHERE WhatId IN (...)"
                ),
            ));
        }
        self.child_subqueries += 1;
        Ok(())
    }

    // --- child-to-parent paths -------------------------------------------------------------------

    /// A field's dotted path, kept for [`Self::check_parent_levels`] when it is long enough to
    /// pass the limit.
    pub(in super::super) fn parse_field_path(
        &mut self,
        expected: &str,
    ) -> Result<String, SoqlError> {
        let start = self.peek();
        let path = self.parse_path(expected)?;
        if path.split('.').count() > MAX_PARENT_LEVELS {
            self.field_paths.push(FieldPath {
                start,
                path: path.clone(),
            });
        }
        Ok(path)
    }

    /// Refuses a path of more than [`MAX_PARENT_LEVELS`] levels in one query, given its FROM
    /// object names and aliases. A path may start with one of those (`Contact.Account.Name` in a
    /// query FROM Contact), which is no level. In a child subquery it may also start with the
    /// child object's type (`SELECT Contact.LastName FROM Account.Contacts`), which the
    /// validator can't tell from a relationship, so there the first segment is never counted.
    pub(super) fn check_parent_levels(
        &self,
        kind: QueryKind,
        paths: &[FieldPath<'_>],
        from_names: &[&str],
    ) -> Result<(), SoqlError> {
        for FieldPath { start, path } in paths {
            let segments: Vec<&str> = path.split('.').collect();
            let prefixed = kind == QueryKind::Child
                || from_names
                    .iter()
                    .any(|name| name.eq_ignore_ascii_case(segments[0]));
            let skip = usize::from(prefixed);
            let levels = segments.len() - skip;
            if levels <= MAX_PARENT_LEVELS {
                continue;
            }
            let shallower = segments[..skip + MAX_PARENT_LEVELS - 1].join(".");
            return Err(self.error_at(
                *start,
                format!(
                    "{path} goes {levels} levels through child-to-parent relationships and \
                     Salesforce allows at most {MAX_PARENT_LEVELS} (Account.Owner.FirstName is \
                     three): select {shallower}.Id instead, then query the rest from that object \
                     in a second query"
                ),
            ));
        }
        Ok(())
    }
}

fn typeof_reason(function: &str) -> String {
    format!(
        "TYPEOF can't be used in a query with functions in its SELECT list ({function}() here): \
         select plain fields (e.g. TYPEOF What WHEN Account THEN Id, LastModifiedDate END), then \
         apply the function in a second query on the Ids it returns"
    )
}

/// The characters of a string literal's value, quotes excluded and each escape counted once.
fn string_value_chars(literal: &str) -> usize {
    let inner = literal
        .strip_prefix('\'')
        .and_then(|rest| rest.strip_suffix('\''))
        .unwrap_or(literal);
    let mut chars = inner.chars();
    let mut count = 0;
    while let Some(c) = chars.next() {
        if c == '\\' {
            // The lexer let only valid escapes through: \uXXXX takes four more characters.
            if matches!(chars.next(), Some('u' | 'U')) {
                chars.by_ref().take(4).for_each(drop);
            }
        }
        count += 1;
    }
    count
}

/// Whether a quoted FORMULA() argument is `field + field` or `field - field` (fields may be
/// dotted paths; spaces around the operator are optional).
fn is_formula_expression(literal: &str) -> bool {
    let Some(inner) = literal
        .strip_prefix('\'')
        .and_then(|rest| rest.strip_suffix('\''))
    else {
        return false;
    };
    let Some(at) = inner.find(['+', '-']) else {
        return false;
    };
    let (left, right) = (&inner[..at], &inner[at + 1..]);
    is_field_path(left.trim()) && is_field_path(right.trim())
}

fn is_field_path(text: &str) -> bool {
    !text.is_empty()
        && text.split('.').all(|segment| {
            segment.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && segment
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_values_count_escapes_once() {
        assert_eq!(string_value_chars("'abc'"), 3);
        assert_eq!(string_value_chars("''"), 0);
        assert_eq!(string_value_chars(r"'a\nb\'c\u00e9'"), 6);
        assert_eq!(string_value_chars(r"'\\'"), 1);
    }

    #[test]
    fn formula_expressions_are_two_fields_and_plus_or_minus() {
        for ok in [
            "'Amount - ExpectedRevenue'",
            "'Amount+ExpectedRevenue'",
            "' CloseDate - Account.LastActivityDate '",
            "'ns__A__c - ns__B__c'",
        ] {
            assert!(is_formula_expression(ok), "{ok}");
        }
        for bad in [
            "'Amount'",
            "'Amount * Probability'",
            "'Amount - 100'",
            "'Amount - '",
            "'Amount - B - C'",
            "''",
            "'Amount -- B'",
        ] {
            assert!(!is_formula_expression(bad), "{bad}");
        }
    }
}
