//! SOQL lexing and validation, done locally before a query is sent to Salesforce's
//! `/query?q=` endpoint.
//!
//! A language model writes the query, so this module has two jobs: make sure that only a single,
//! read-only SELECT ever leaves the component, and turn mistakes into a position plus a fix the
//! model can act on without a round trip. It is strict about structure and lenient about names:
//! fields, objects, functions and scopes are Salesforce's to judge, because only the org knows
//! its schema.

use std::fmt;

/// The longest query accepted, in characters: Salesforce's own limit on a SOQL statement.
pub const MAX_QUERY_CHARS: usize = 100_000;

/// The largest OFFSET Salesforce accepts; beyond it the query fails with
/// NUMBER_OUTSIDE_VALID_RANGE, so it is cheaper to say so here.
pub const MAX_OFFSET: u64 = 2_000;

/// Parent-to-child subqueries may nest four levels below the outer query (API 58.0 and later:
/// five levels in all).
const MAX_CHILD_DEPTH: usize = 4;

/// Deepest parenthesis nesting accepted. The parser recurses once per level (conditions,
/// function calls, subqueries), so an unbounded depth would exhaust the wasm stack and trap;
/// 32 is far beyond any real query (Salesforce itself allows 5 levels of subqueries).
pub const MAX_NESTING: usize = 32;

/// Functions whose use makes a query aggregate (its rows are groups, not records).
const AGGREGATE_FUNCTIONS: &[&str] = &["COUNT", "COUNT_DISTINCT", "SUM", "AVG", "MIN", "MAX"];

/// Statement words that change data: named in the refusal so the model knows why.
const DATA_CHANGING_WORDS: &[&str] = &["INSERT", "UPDATE", "DELETE", "UPSERT", "MERGE", "UNDELETE"];

/// SOQL's reserved words, which can never be an alias.
const RESERVED_WORDS: &[&str] = &[
    "AND", "ASC", "DESC", "EXCLUDES", "FIRST", "FROM", "GROUP", "HAVING", "IN", "INCLUDES", "LAST",
    "LIKE", "LIMIT", "NOT", "NULL", "NULLS", "OR", "SELECT", "USING", "WHERE", "WITH",
];

/// The clause order, quoted when a clause turns up in the wrong place.
const CLAUSE_ORDER: &str = "SOQL clauses go in this order, each at most once: SELECT, FROM, \
                            USING SCOPE, WHERE, WITH, GROUP BY, HAVING, ORDER BY, LIMIT, OFFSET, \
                            FOR VIEW/REFERENCE";

/// Most rows a query selecting `FIELDS(ALL)` or `FIELDS(CUSTOM)` may ask for.
const MAX_UNBOUNDED_FIELDS_ROWS: u64 = 200;

const FOR_UPDATE_REFUSED: &str =
    "FOR UPDATE locks records and is not allowed in a read-only query: remove it";

const SEMI_JOIN_ONE_FIELD: &str = "a semi-join or anti-join subquery must select exactly one Id \
                                   or reference field, e.g. WHERE Id IN (SELECT AccountId FROM \
                                   Contact)";

/// A query that passed local validation; only this type can be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatedQuery {
    text: String,
    object: String,
    subquery_relationships: Vec<String>,
    semi_join_objects: Vec<String>,
    aggregate: bool,
    limit: Option<u64>,
}

impl ValidatedQuery {
    /// The original text, unchanged: it is what gets sent.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The outer query's FROM object as written (e.g. `Opportunity`, `ns__X__c`).
    pub fn object(&self) -> &str {
        &self.object
    }

    /// FROM names of the parent-to-child subqueries in SELECT lists, as written (`Contacts`,
    /// `Account.Contacts`), nested ones included, in the order they appear.
    pub fn subquery_relationships(&self) -> &[String] {
        &self.subquery_relationships
    }

    /// FROM objects of `WHERE ... IN (SELECT ...)` semi-joins and `NOT IN` anti-joins, in the
    /// order they appear, including those inside child subqueries.
    pub fn semi_join_objects(&self) -> &[String] {
        &self.semi_join_objects
    }

    /// True when the outer SELECT uses an aggregate function (COUNT, COUNT_DISTINCT, SUM, AVG,
    /// MIN, MAX, also inside FORMAT() and the like) or the query has a GROUP BY: its rows are
    /// then groups, not records.
    pub fn is_aggregate(&self) -> bool {
        self.aggregate
    }

    /// The outer LIMIT, if the query has one (a LIMIT inside a subquery does not count).
    pub fn has_limit(&self) -> Option<u64> {
        self.limit
    }
}

/// Why a query was refused, and where: shown to a language model, so it says what to change.
/// Line and column are 1-based and count characters (a tab is one column).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SoqlError {
    /// The line of the offending text, from 1.
    pub line: usize,
    /// The column within that line, from 1, in characters.
    pub column: usize,
    /// What is wrong and what to write instead.
    pub reason: String,
}

impl SoqlError {
    fn at(pos: Pos, reason: impl Into<String>) -> Self {
        SoqlError {
            line: pos.line,
            column: pos.column,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for SoqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SOQL error at line {}, column {}: {}",
            self.line, self.column, self.reason
        )
    }
}

impl std::error::Error for SoqlError {}

/// Checks `text` as one read-only SOQL SELECT and, if it passes, wraps it for sending.
pub fn validate(text: &str) -> Result<ValidatedQuery, SoqlError> {
    check_size(text)?;
    let (tokens, lex_error) = Lexer::new(text).tokenize();
    let mut parser = Parser::new(tokens, lex_error);
    let outer = parser.parse_statement()?;
    Ok(ValidatedQuery {
        text: text.to_owned(),
        object: outer.object,
        subquery_relationships: parser.subquery_relationships,
        semi_join_objects: parser.semi_join_objects,
        aggregate: outer.aggregate,
        limit: outer.limit,
    })
}

/// Every name in a query, each part of a dotted path on its own (`Account.Name` gives
/// `Account` and `Name`), for checking it against the workspace's masked fields.
pub fn identifiers(text: &str) -> Vec<&str> {
    let (tokens, _) = Lexer::new(text).tokenize();
    tokens
        .into_iter()
        .filter(|t| t.kind == lexer::Kind::Ident)
        .map(|t| t.text)
        .collect()
}

/// Every dotted name in a query as its segments (`Owner.Name` gives `["Owner", "Name"]`, a
/// plain `Name` gives `["Name"]`), for masking by meaning: the last segment is the field, the
/// one before it the relationship it is read through.
pub fn paths(text: &str) -> Vec<Vec<&str>> {
    let (tokens, _) = Lexer::new(text).tokenize();
    let mut paths: Vec<Vec<&str>> = Vec::new();
    let mut after_dot = false;
    for token in tokens {
        match token.kind {
            lexer::Kind::Ident if after_dot => {
                if let Some(last) = paths.last_mut() {
                    last.push(token.text);
                }
                after_dot = false;
            }
            lexer::Kind::Ident => paths.push(vec![token.text]),
            lexer::Kind::Dot => after_dot = true,
            _ => after_dot = false,
        }
    }
    paths
}

/// Refuses empty text and text over [`MAX_QUERY_CHARS`] before any lexing work is done.
fn check_size(text: &str) -> Result<(), SoqlError> {
    if text.trim().is_empty() {
        return Err(SoqlError::at(
            Pos::START,
            "the query is empty: send one SELECT statement, e.g. SELECT Id, Name FROM Account \
             LIMIT 10",
        ));
    }
    let count = text.chars().count();
    if count > MAX_QUERY_CHARS {
        return Err(SoqlError::at(
            position_of_char(text, MAX_QUERY_CHARS),
            format!(
                "the query is {count} characters long and the limit is {MAX_QUERY_CHARS}: select \
                 fewer fields, shorten IN lists, or split it into several queries"
            ),
        ));
    }
    Ok(())
}

/// The line and column of the character at `index` (0-based), for errors found by counting.
fn position_of_char(text: &str, index: usize) -> Pos {
    let mut pos = Pos::START;
    let mut chars = text.chars().take(index).peekable();
    while let Some(c) = chars.next() {
        pos.advance(c, chars.peek().copied());
    }
    pos
}

mod hints;
mod lexer;
mod parser;
mod words;

use lexer::{Lexer, Pos};
use parser::Parser;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;

#[cfg(test)]
mod server_rules_tests;
