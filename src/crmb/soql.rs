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

/// Longest run of `NOT NOT ...` before one condition: each NOT is a level of the condition
/// grammar, bounded like parentheses; real queries use one.
pub const MAX_NOT_CHAIN: usize = 32;

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
    pub line: usize,
    pub column: usize,
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

// ---------------------------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------------------------

/// A 1-based line and column, in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pos {
    line: usize,
    column: usize,
}

impl Pos {
    const START: Pos = Pos { line: 1, column: 1 };

    /// Moves past `c`; `\r\n`, `\n` and a lone `\r` each end a line.
    fn advance(&mut self, c: char, next: Option<char>) {
        let ends_line = c == '\n' || (c == '\r' && next != Some('\n'));
        if ends_line {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A name or keyword: `Account`, `ns__X__c`, `SELECT`, `TODAY`, `USD5000`.
    Ident,
    /// A single-quoted string, quotes included.
    Str,
    /// An integer or decimal, possibly negative.
    Number,
    /// `2024-01-31`
    Date,
    /// `2024-01-31T09:00:00Z`, `2024-01-31T09:00:00.000+05:30`
    DateTime,
    /// `LAST_N_DAYS:30` and the other `:n` date literals.
    DateLiteralN,
    /// A currency amount with decimals, `EUR100.50` (whole amounts lex as `Ident`).
    Currency,
    LParen,
    RParen,
    Comma,
    Dot,
    /// Lexed only to refuse it with a useful message (`SELECT *`, `COUNT(*)`).
    Star,
    /// `=`, `!=`, `<>`, `<`, `<=`, `>`, `>=`
    Op,
    Eof,
    /// Where lexing stopped; the parser reports the lexer's error when it gets here.
    Invalid,
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    kind: Kind,
    text: &'a str,
    pos: Pos,
}

impl Token<'_> {
    /// Whether this is the keyword `word` (keywords are case-insensitive).
    fn is_word(&self, word: &str) -> bool {
        self.kind == Kind::Ident && self.text.eq_ignore_ascii_case(word)
    }

    fn is_any_word(&self, words: &[&str]) -> bool {
        words.iter().any(|word| self.is_word(word))
    }

    /// How the token is named in an error message.
    fn describe(&self) -> String {
        const SHOWN: usize = 40;
        let shown: String = self.text.chars().take(SHOWN).collect();
        let ellipsis = if self.text.chars().count() > SHOWN {
            "..."
        } else {
            ""
        };
        match self.kind {
            Kind::Eof => "the end of the query".to_owned(),
            Kind::Str => format!("the string {shown}{ellipsis}"),
            _ => format!("'{shown}{ellipsis}'"),
        }
    }
}

struct Lexer<'a> {
    src: &'a str,
    chars: Vec<(usize, char)>,
    index: usize,
    pos: Pos,
}

impl<'a> Lexer<'a> {
    fn new(src: &'a str) -> Self {
        Lexer {
            src,
            chars: src.char_indices().collect(),
            index: 0,
            pos: Pos::START,
        }
    }

    /// Splits the text into tokens, ending with `Eof`, or with `Invalid` plus the error if a
    /// character or literal is malformed (the parser decides which error to show first).
    fn tokenize(mut self) -> (Vec<Token<'a>>, Option<SoqlError>) {
        let mut tokens = Vec::new();
        loop {
            self.skip_whitespace();
            let (start, start_byte) = (self.pos, self.byte_offset());
            if self.peek(0).is_none() {
                tokens.push(Token {
                    kind: Kind::Eof,
                    text: "",
                    pos: start,
                });
                return (tokens, None);
            }
            match self.lex_token() {
                Ok(kind) => {
                    let text = &self.src[start_byte..self.byte_offset()];
                    tokens.push(Token {
                        kind,
                        text,
                        pos: start,
                    });
                }
                Err(error) => {
                    tokens.push(Token {
                        kind: Kind::Invalid,
                        text: "",
                        pos: start,
                    });
                    return (tokens, Some(error));
                }
            }
        }
    }

    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.index + ahead).map(|&(_, c)| c)
    }

    fn peek_is(&self, ahead: usize, test: impl Fn(char) -> bool) -> bool {
        self.peek(ahead).is_some_and(test)
    }

    fn bump(&mut self) {
        if let Some(c) = self.peek(0) {
            let next = self.peek(1);
            self.pos.advance(c, next);
            self.index += 1;
        }
    }

    fn eat(&mut self, expected: char) -> bool {
        let found = self.peek(0) == Some(expected);
        if found {
            self.bump();
        }
        found
    }

    fn byte_offset(&self) -> usize {
        self.chars
            .get(self.index)
            .map_or(self.src.len(), |&(offset, _)| offset)
    }

    /// Only plain ASCII whitespace separates tokens; anything fancier is reported, because
    /// Salesforce would choke on it too.
    fn skip_whitespace(&mut self) {
        while self.peek_is(0, |c| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0C')) {
            self.bump();
        }
    }

    fn skip_while(&mut self, test: impl Fn(char) -> bool) -> usize {
        let mut count = 0;
        while self.peek_is(0, &test) {
            self.bump();
            count += 1;
        }
        count
    }

    fn lex_token(&mut self) -> Result<Kind, SoqlError> {
        let start = self.pos;
        let c = self.peek(0).unwrap_or(' ');
        let single = match c {
            '(' => Some(Kind::LParen),
            ')' => Some(Kind::RParen),
            ',' => Some(Kind::Comma),
            '.' => Some(Kind::Dot),
            '*' => Some(Kind::Star),
            _ => None,
        };
        if let Some(kind) = single {
            self.bump();
            return Ok(kind);
        }
        match c {
            c if c.is_ascii_alphabetic() || c == '_' => self.lex_word(),
            c if c.is_ascii_digit() => self.lex_number_or_date(),
            '-' if self.peek_is(1, |c| c.is_ascii_digit()) => self.lex_number_or_date(),
            '\'' => self.lex_string(),
            '=' | '!' | '<' | '>' => self.lex_operator(),
            _ => Err(SoqlError::at(start, self.unexpected_char_reason(c))),
        }
    }

    /// Names, keywords, date literals (`LAST_N_DAYS:30`) and currency amounts (`EUR100.50`).
    fn lex_word(&mut self) -> Result<Kind, SoqlError> {
        let start_byte = self.byte_offset();
        self.skip_while(is_word_char);
        let word = &self.src[start_byte..self.byte_offset()];
        if self.peek(0) == Some(':') {
            return self.lex_date_literal_n(word);
        }
        if is_currency_amount(word)
            && self.peek(0) == Some('.')
            && self.peek_is(1, |c| c.is_ascii_digit())
        {
            self.bump();
            self.skip_while(|c| c.is_ascii_digit());
            return Ok(Kind::Currency);
        }
        Ok(Kind::Ident)
    }

    /// The `:n` after an N date literal; any other colon would be an Apex bind variable.
    fn lex_date_literal_n(&mut self, word: &str) -> Result<Kind, SoqlError> {
        let colon = self.pos;
        if !is_n_date_literal(word) {
            return Err(SoqlError::at(colon, self.unexpected_char_reason(':')));
        }
        self.bump();
        let digits_at = self.pos;
        if self.skip_while(|c| c.is_ascii_digit()) == 0 {
            return Err(SoqlError::at(
                digits_at,
                format!("{word}: needs a whole number right after the colon, e.g. {word}:30"),
            ));
        }
        if self.peek_is(0, is_word_char) {
            return Err(SoqlError::at(
                digits_at,
                format!("{word}: takes a whole number of units, e.g. {word}:30"),
            ));
        }
        Ok(Kind::DateLiteralN)
    }

    /// Numbers (`42`, `-7`, `3.14`), dates and datetimes, all unquoted in SOQL.
    fn lex_number_or_date(&mut self) -> Result<Kind, SoqlError> {
        let start = self.pos;
        let negative = self.eat('-');
        let digits = self.skip_while(|c| c.is_ascii_digit());
        let kind = if !negative && digits == 4 && self.peek(0) == Some('-') {
            self.lex_date_after_year(start)?
        } else {
            if self.peek(0) == Some('.') && self.peek_is(1, |c| c.is_ascii_digit()) {
                self.bump();
                self.skip_while(|c| c.is_ascii_digit());
            }
            Kind::Number
        };
        if self.peek_is(0, is_word_char) {
            let reason = match kind {
                Kind::Number => {
                    "malformed number: write numbers like 42, 3.14 or -7, and \
                                 currency amounts with the ISO code first, like USD5000"
                }
                _ => MALFORMED_DATE,
            };
            return Err(SoqlError::at(start, reason));
        }
        Ok(kind)
    }

    /// The rest of `YYYY-MM-DD[Thh:mm:ss[.fff](Z|+hh:mm|-hh:mm)]`, ranges checked.
    fn lex_date_after_year(&mut self, start: Pos) -> Result<Kind, SoqlError> {
        let malformed = || SoqlError::at(start, MALFORMED_DATE);
        let month = self.dash_then_digits(2).ok_or_else(malformed)?;
        let day = self.dash_then_digits(2).ok_or_else(malformed)?;
        if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
            return Err(malformed());
        }
        if !(self.peek(0) == Some('T') && self.peek_is(1, |c| c.is_ascii_digit())) {
            return Ok(Kind::Date);
        }
        self.bump();
        let hour = self.digits(2).ok_or_else(malformed)?;
        let minute = self.colon_then_digits(2).ok_or_else(malformed)?;
        let second = self.colon_then_digits(2).ok_or_else(malformed)?;
        if hour > 23 || minute > 59 || second > 59 {
            return Err(malformed());
        }
        if self.eat('.') && self.skip_while(|c| c.is_ascii_digit()) == 0 {
            return Err(malformed());
        }
        self.lex_time_zone(start)?;
        Ok(Kind::DateTime)
    }

    /// `Z`, or an offset `+hh:mm` / `-hh:mm`, which Salesforce requires on every datetime.
    fn lex_time_zone(&mut self, start: Pos) -> Result<(), SoqlError> {
        if self.eat('Z') {
            return Ok(());
        }
        if !(self.eat('+') || self.eat('-')) {
            return Err(SoqlError::at(
                start,
                "a datetime needs a time zone: end it with Z for UTC or an offset like +05:30, \
                 e.g. 2024-01-31T09:00:00Z",
            ));
        }
        let hours = self.digits(2);
        let minutes = self.colon_then_digits(2);
        match (hours, minutes) {
            (Some(h), Some(m)) if h <= 23 && m <= 59 => Ok(()),
            _ => Err(SoqlError::at(start, MALFORMED_DATE)),
        }
    }

    /// Exactly `count` digits, as a number.
    fn digits(&mut self, count: usize) -> Option<u32> {
        let mut value = 0;
        for _ in 0..count {
            let digit = self.peek(0)?.to_digit(10)?;
            self.bump();
            value = value * 10 + digit;
        }
        Some(value)
    }

    fn dash_then_digits(&mut self, count: usize) -> Option<u32> {
        if self.eat('-') {
            self.digits(count)
        } else {
            None
        }
    }

    fn colon_then_digits(&mut self, count: usize) -> Option<u32> {
        if self.eat(':') {
            self.digits(count)
        } else {
            None
        }
    }

    /// A single-quoted string; only the escapes Salesforce documents are allowed, since any
    /// other backslash is an error there too.
    fn lex_string(&mut self) -> Result<Kind, SoqlError> {
        let start = self.pos;
        self.bump();
        loop {
            let escape_at = self.pos;
            match self.peek(0) {
                None => {
                    return Err(SoqlError::at(
                        start,
                        "unterminated string: close it with a single quote ('), and write a \
                         quote inside a string as \\'",
                    ));
                }
                Some('\'') => {
                    self.bump();
                    return Ok(Kind::Str);
                }
                Some('\\') => {
                    self.bump();
                    self.lex_escape(escape_at)?;
                }
                Some(_) => self.bump(),
            }
        }
    }

    /// The character(s) after a backslash inside a string.
    fn lex_escape(&mut self, escape_at: Pos) -> Result<(), SoqlError> {
        match self.peek(0) {
            Some('n' | 'N' | 'r' | 'R' | 't' | 'T' | 'b' | 'B' | 'f' | 'F' | '"' | '\'' | '\\')
            | Some('_' | '%') => {
                self.bump();
                Ok(())
            }
            Some('u') => {
                self.bump();
                for _ in 0..4 {
                    if !self.peek_is(0, |c| c.is_ascii_hexdigit()) {
                        return Err(SoqlError::at(
                            escape_at,
                            "invalid \\u escape: write exactly four hex digits, e.g. \\u00e9 \
                             for é",
                        ));
                    }
                    self.bump();
                }
                Ok(())
            }
            // End of text: the string is unterminated, which the caller reports.
            None => Ok(()),
            Some(other) => Err(SoqlError::at(
                escape_at,
                format!(
                    "invalid escape sequence \\{other} in a string: the valid escapes are \\' \
                     \\\" \\\\ \\n \\r \\t \\b \\f \\uXXXX, plus \\% and \\_ in LIKE patterns; \
                     write a literal backslash as \\\\"
                ),
            )),
        }
    }

    fn lex_operator(&mut self) -> Result<Kind, SoqlError> {
        let start = self.pos;
        let first = self.peek(0).unwrap_or(' ');
        self.bump();
        match first {
            '=' if self.peek(0) == Some('=') => Err(SoqlError::at(
                start,
                "'==' is not SOQL: compare with a single '='",
            )),
            '!' if !self.eat('=') => Err(SoqlError::at(
                start,
                "'!' alone is not SOQL: write != for not-equal, or NOT before a condition",
            )),
            '<' => {
                let _ = self.eat('=') || self.eat('>');
                Ok(Kind::Op)
            }
            '>' => {
                self.eat('=');
                Ok(Kind::Op)
            }
            _ => Ok(Kind::Op),
        }
    }

    /// Explains a character SOQL has no use for, naming the likely intent where there is one.
    fn unexpected_char_reason(&self, c: char) -> String {
        let next = self.peek(1);
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
}

const MALFORMED_DATE: &str = "malformed date or datetime: write dates as YYYY-MM-DD \
                              (2024-01-31) and datetimes as YYYY-MM-DDThh:mm:ssZ or with an \
                              offset (2024-01-31T09:00:00+05:30), without quotes";

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `LAST_N_DAYS`, `N_WEEKS_AGO`, `NEXT_N_FISCAL_QUARTERS`...: the date literals taking `:n`.
fn is_n_date_literal(word: &str) -> bool {
    let upper = word.to_ascii_uppercase();
    upper.starts_with("N_") || upper.contains("_N_")
}

/// `TODAY`, `LAST_90_DAYS`, `THIS_FISCAL_QUARTER`, `N_DAYS_AGO`...: checked by shape, not
/// against a list, so date literals Salesforce adds later still pass.
fn is_date_literal(word: &str) -> bool {
    let upper = word.to_ascii_uppercase();
    matches!(upper.as_str(), "YESTERDAY" | "TODAY" | "TOMORROW")
        || ["LAST_", "THIS_", "NEXT_"]
            .iter()
            .any(|prefix| upper.starts_with(prefix))
        || (upper.starts_with("N_") && upper.ends_with("_AGO"))
}

/// An ISO currency code followed by a whole amount, e.g. `USD5000`.
fn is_currency_amount(word: &str) -> bool {
    let bytes = word.as_bytes();
    bytes.len() > 3
        && bytes[..3].iter().all(u8::is_ascii_alphabetic)
        && bytes[3..].iter().all(u8::is_ascii_digit)
}

/// Words that may stand alone as a value: booleans, null, date literals and currency amounts.
fn is_value_word(word: &str) -> bool {
    ["TRUE", "FALSE", "NULL"]
        .iter()
        .any(|w| word.eq_ignore_ascii_case(w))
        || is_date_literal(word)
        || is_currency_amount(word)
}

fn is_aggregate_function(name: &str) -> bool {
    AGGREGATE_FUNCTIONS
        .iter()
        .any(|f| name.eq_ignore_ascii_case(f))
}

/// Fixes for words models borrow from SQL, shown instead of a generic "expected ..." message.
fn sql_habit_hint(token: &Token<'_>) -> Option<&'static str> {
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

// ---------------------------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------------------------

/// Where a SELECT sits: each place allows a little less than the outer query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QueryKind {
    Outer,
    /// A parent-to-child subquery in a SELECT list: `(SELECT LastName FROM Contacts)`.
    Child,
    /// A subquery after IN / NOT IN in a condition.
    SemiJoin,
}

/// What the caller needs to know about one parsed SELECT.
struct QueryInfo {
    object: String,
    aggregate: bool,
    limit: Option<u64>,
}

/// What one SELECT-list entry turned out to be.
struct SelectItem {
    aggregate: bool,
    plain_field: bool,
    /// `FIELDS(ALL)` or `FIELDS(CUSTOM)`: an unbounded field set, which needs LIMIT <= 200.
    unbounded_fields: bool,
}

/// A recursive-descent parser over the SELECT grammar; it records what [`ValidatedQuery`]
/// reports as it goes.
struct Parser<'a> {
    tokens: Vec<Token<'a>>,
    index: usize,
    lex_error: Option<SoqlError>,
    child_depth: usize,
    in_semi_join: bool,
    subquery_relationships: Vec<String>,
    semi_join_objects: Vec<String>,
}

impl<'a> Parser<'a> {
    fn new(tokens: Vec<Token<'a>>, lex_error: Option<SoqlError>) -> Self {
        Parser {
            tokens,
            index: 0,
            lex_error,
            child_depth: 0,
            in_semi_join: false,
            subquery_relationships: Vec::new(),
            semi_join_objects: Vec::new(),
        }
    }

    // --- token access ----------------------------------------------------------------------

    /// The current token; the last token (Eof or Invalid) repeats forever.
    fn peek(&self) -> Token<'a> {
        self.peek_at(0)
    }

    fn peek_at(&self, ahead: usize) -> Token<'a> {
        let last = self.tokens.len() - 1;
        self.tokens[(self.index + ahead).min(last)]
    }

    fn advance(&mut self) -> Token<'a> {
        let token = self.peek();
        if self.index < self.tokens.len() - 1 {
            self.index += 1;
        }
        token
    }

    fn at(&self, kind: Kind) -> bool {
        self.peek().kind == kind
    }

    fn at_word(&self, word: &str) -> bool {
        self.peek().is_word(word)
    }

    fn eat(&mut self, kind: Kind) -> bool {
        let found = self.at(kind);
        if found {
            self.advance();
        }
        found
    }

    fn eat_word(&mut self, word: &str) -> bool {
        let found = self.at_word(word);
        if found {
            self.advance();
        }
        found
    }

    /// Whether the token `ahead` starts a clause (or FROM), which ends whatever came before.
    fn is_clause_start(&self, ahead: usize) -> bool {
        let token = self.peek_at(ahead);
        token.is_any_word(&[
            "FROM", "WHERE", "WITH", "USING", "HAVING", "LIMIT", "OFFSET", "FOR", "UPDATE",
        ]) || (token.is_any_word(&["GROUP", "ORDER"]) && self.peek_at(ahead + 1).is_word("BY"))
    }

    // --- errors ------------------------------------------------------------------------------

    /// An error at `token`, unless lexing stopped there: then the lexer's error is the real one.
    fn error_at(&self, token: Token<'_>, reason: impl Into<String>) -> SoqlError {
        match (&self.lex_error, token.kind) {
            (Some(error), Kind::Invalid) => error.clone(),
            _ => SoqlError::at(token.pos, reason),
        }
    }

    /// "expected X but found Y", or a targeted fix when Y is a SQL habit.
    fn unexpected(&self, token: Token<'_>, expected: &str) -> SoqlError {
        match sql_habit_hint(&token) {
            Some(hint) => self.error_at(token, hint),
            None => self.error_at(
                token,
                format!("expected {expected} but found {}", token.describe()),
            ),
        }
    }

    fn expect_word(&mut self, word: &str, expected: &str) -> Result<(), SoqlError> {
        if self.eat_word(word) {
            Ok(())
        } else {
            Err(self.unexpected(self.peek(), expected))
        }
    }

    /// The `)` matching `open`; a clause found instead is reported as out of order.
    fn expect_close(&mut self, open: Token<'_>) -> Result<(), SoqlError> {
        if self.eat(Kind::RParen) {
            return Ok(());
        }
        let found = self.peek();
        if self.is_clause_start(0) && !found.is_word("FROM") {
            return Err(self.out_of_order(found));
        }
        Err(self.unexpected(
            found,
            &format!(
                "')' to close the '(' at line {}, column {}",
                open.pos.line, open.pos.column
            ),
        ))
    }

    /// A clause in the wrong place; a stray FOR UPDATE still gets its own refusal.
    fn out_of_order(&self, token: Token<'_>) -> SoqlError {
        if token.is_word("FOR") && self.peek_at(1).is_word("UPDATE") {
            return self.error_at(token, FOR_UPDATE_REFUSED);
        }
        self.error_at(
            token,
            format!(
                "{} is out of place: {CLAUSE_ORDER}",
                token.text.to_ascii_uppercase()
            ),
        )
    }

    // --- statement ---------------------------------------------------------------------------

    /// The whole text: one SELECT and nothing after it.
    fn parse_statement(&mut self) -> Result<QueryInfo, SoqlError> {
        self.check_statement_start()?;
        self.check_parentheses()?;
        let outer = self.parse_query(QueryKind::Outer)?;
        let rest = self.peek();
        match rest.kind {
            Kind::Eof => Ok(outer),
            Kind::RParen => Err(self.error_at(rest, "this ')' has no matching '('")),
            _ if self.is_clause_start(0) => Err(self.out_of_order(rest)),
            _ => Err(match sql_habit_hint(&rest) {
                Some(hint) => self.error_at(rest, hint),
                None => self.error_at(
                    rest,
                    format!(
                        "unexpected {} after the end of the query: remove it, or join extra \
                         conditions to WHERE with AND or OR",
                        rest.describe()
                    ),
                ),
            }),
        }
    }

    /// Refuses data-changing statements and SOSL by name, before anything else is judged.
    fn check_statement_start(&self) -> Result<(), SoqlError> {
        let first = self.peek();
        if first.is_word("SELECT") {
            return Ok(());
        }
        let reason = if first.is_any_word(DATA_CHANGING_WORDS) {
            format!(
                "{} changes data and is not allowed: this tool runs read-only SELECT queries only",
                first.text.to_ascii_uppercase()
            )
        } else if first.is_word("FIND") {
            "FIND is a SOSL search, not SOQL: this tool runs SELECT ... FROM ... queries only"
                .to_owned()
        } else {
            "a query must start with SELECT, e.g. SELECT Id, Name FROM Account LIMIT 10".to_owned()
        };
        Err(self.error_at(first, reason))
    }

    /// Matches parentheses up front, so an unbalanced one is reported where it is rather than
    /// wherever the grammar first notices, and bounds their nesting (see [`MAX_NESTING`])
    /// before the recursive parse starts.
    fn check_parentheses(&self) -> Result<(), SoqlError> {
        let mut open = Vec::new();
        for token in &self.tokens {
            match token.kind {
                Kind::LParen if open.len() == MAX_NESTING => {
                    return Err(self.error_at(
                        *token,
                        format!(
                            "the query nests parentheses more than {MAX_NESTING} deep (conditions, \
                             function calls and subqueries count alike): flatten the condition \
                             or split the query"
                        ),
                    ));
                }
                Kind::LParen => open.push(*token),
                Kind::RParen if open.pop().is_none() => {
                    return Err(self.error_at(
                        *token,
                        "this ')' has no matching '(': remove it or add the missing '('",
                    ));
                }
                // Lexing stopped early, so the rest is unknown; the parser reports why.
                Kind::Invalid => return Ok(()),
                _ => {}
            }
        }
        match open.last() {
            Some(unclosed) => {
                Err(self.error_at(*unclosed, "this '(' is never closed: add the missing ')'"))
            }
            None => Ok(()),
        }
    }

    /// One SELECT with its clauses, in SOQL's fixed clause order.
    fn parse_query(&mut self, kind: QueryKind) -> Result<QueryInfo, SoqlError> {
        self.expect_word("SELECT", "SELECT")?;
        let (selects_aggregate, unbounded_fields) = self.parse_select_list(kind)?;
        self.expect_from()?;
        let object = self.parse_from_list()?;
        if self.at_word("USING") {
            self.parse_using_scope()?;
        }
        if self.eat_word("WHERE") {
            self.parse_condition()?;
        }
        if self.at_word("WITH") {
            self.parse_with()?;
        }
        let grouped = self.at_word("GROUP") && self.peek_at(1).is_word("BY");
        if grouped {
            self.parse_group_by()?;
        }
        if self.eat_word("HAVING") {
            self.parse_condition()?;
        }
        if self.at_word("ORDER") && self.peek_at(1).is_word("BY") {
            self.parse_order_by()?;
        }
        let limit = if self.eat_word("LIMIT") {
            Some(self.parse_row_count("LIMIT")?)
        } else {
            None
        };
        // Salesforce: FIELDS(ALL) and FIELDS(CUSTOM) are unbounded field sets, allowed only with
        // LIMIT 200 or less (SOQL reference, "FIELDS()": Bounded and Unbounded Queries).
        if let Some(fields) = unbounded_fields
            && limit.is_none_or(|n| n > MAX_UNBOUNDED_FIELDS_ROWS)
        {
            return Err(self.error_at(
                fields,
                "FIELDS(ALL) and FIELDS(CUSTOM) need LIMIT 200 or less: add LIMIT 200 (and \
                 page with OFFSET or a WHERE on Id), or use FIELDS(STANDARD) or list the fields",
            ));
        }
        if self.at_word("OFFSET") {
            self.parse_offset()?;
        }
        self.parse_for_clause()?;
        self.refuse_update_clause()?;
        Ok(QueryInfo {
            object,
            aggregate: selects_aggregate || grouped,
            limit,
        })
    }

    // --- SELECT list -------------------------------------------------------------------------

    /// The comma-separated SELECT list: whether it uses an aggregate function, and the
    /// `FIELDS(ALL)` / `FIELDS(CUSTOM)` item, if any.
    fn parse_select_list(
        &mut self,
        kind: QueryKind,
    ) -> Result<(bool, Option<Token<'a>>), SoqlError> {
        let first = self.peek();
        if first.is_word("FROM") || first.kind == Kind::Eof {
            return Err(self.error_at(
                first,
                "the SELECT list is empty: name at least one field, e.g. SELECT Id, Name FROM \
                 Account",
            ));
        }
        let mut aggregate = false;
        let mut unbounded = None;
        let mut count = 0;
        loop {
            let item_start = self.peek();
            let item = self.parse_select_item(kind)?;
            count += 1;
            if kind == QueryKind::SemiJoin && (!item.plain_field || count > 1) {
                return Err(self.error_at(item_start, SEMI_JOIN_ONE_FIELD));
            }
            aggregate |= item.aggregate;
            if item.unbounded_fields {
                unbounded.get_or_insert(item_start);
            }
            let comma = self.peek();
            if !self.eat(Kind::Comma) {
                return Ok((aggregate, unbounded));
            }
            if self.at_word("FROM") {
                return Err(self.error_at(
                    comma,
                    "remove this ',' before FROM: the SELECT list has no trailing comma",
                ));
            }
        }
    }

    fn parse_select_item(&mut self, kind: QueryKind) -> Result<SelectItem, SoqlError> {
        let token = self.peek();
        let next = self.peek_at(1);
        match token.kind {
            Kind::Star => Err(self.error_at(
                token,
                "SELECT * is not SOQL: list the fields you need (e.g. SELECT Id, Name FROM \
                 Account), or use FIELDS(STANDARD)",
            )),
            Kind::LParen if kind == QueryKind::SemiJoin => {
                Err(self.error_at(token, SEMI_JOIN_ONE_FIELD))
            }
            Kind::LParen => {
                self.parse_child_subquery()?;
                Ok(SelectItem {
                    aggregate: false,
                    plain_field: false,
                    unbounded_fields: false,
                })
            }
            Kind::Ident if token.is_word("TYPEOF") && next.kind == Kind::Ident => {
                self.parse_typeof()?;
                Ok(SelectItem {
                    aggregate: false,
                    plain_field: false,
                    unbounded_fields: false,
                })
            }
            Kind::Ident if token.is_word("DISTINCT") && next.kind == Kind::Ident => {
                Err(self.unexpected(token, "a field"))
            }
            Kind::Ident if next.kind == Kind::LParen => {
                let unbounded_fields = token.is_word("FIELDS")
                    && (self.peek_at(2).is_word("ALL") || self.peek_at(2).is_word("CUSTOM"));
                let aggregate = self.parse_function_call()?;
                self.parse_optional_alias()?;
                Ok(SelectItem {
                    aggregate,
                    plain_field: false,
                    unbounded_fields,
                })
            }
            Kind::Ident => {
                self.parse_path("a field name")?;
                self.parse_optional_alias()?;
                Ok(SelectItem {
                    aggregate: false,
                    plain_field: true,
                    unbounded_fields: false,
                })
            }
            _ => Err(self.unexpected(
                token,
                "a field name, a function such as COUNT(Id), or a (SELECT ...) subquery",
            )),
        }
    }

    /// `(SELECT ... FROM Relationship ...)` in a SELECT list.
    fn parse_child_subquery(&mut self) -> Result<(), SoqlError> {
        let open = self.advance();
        if !self.at_word("SELECT") {
            return Err(self.unexpected(
                self.peek(),
                "SELECT: a '(' in the SELECT list starts a child subquery, e.g. (SELECT LastName \
                 FROM Contacts)",
            ));
        }
        if self.child_depth == MAX_CHILD_DEPTH {
            return Err(self.error_at(
                open,
                "parent-to-child subqueries nest at most 4 levels below the outer query (5 \
                 levels in all): drop the deepest level and query it separately",
            ));
        }
        // Reserve the slot now so relationships are listed in the order they are written.
        let slot = self.subquery_relationships.len();
        self.child_depth += 1;
        let child = self.parse_query(QueryKind::Child)?;
        self.child_depth -= 1;
        self.subquery_relationships.insert(slot, child.object);
        self.expect_close(open)
    }

    /// `TYPEOF What WHEN Account THEN Phone, Name ... [ELSE Name] END`.
    fn parse_typeof(&mut self) -> Result<(), SoqlError> {
        self.advance();
        self.parse_path("the polymorphic field after TYPEOF, e.g. TYPEOF What")?;
        if !self.at_word("WHEN") {
            return Err(self.unexpected(
                self.peek(),
                "WHEN after the TYPEOF field, e.g. TYPEOF What WHEN Account THEN Phone END",
            ));
        }
        while self.eat_word("WHEN") {
            self.parse_path("an object type after WHEN, e.g. WHEN Account")?;
            self.expect_word("THEN", "THEN after the WHEN object type")?;
            self.parse_typeof_fields()?;
        }
        if self.eat_word("ELSE") {
            self.parse_typeof_fields()?;
        }
        if self.eat_word("END") {
            return Ok(());
        }
        Err(self.error_at(
            self.peek(),
            "TYPEOF must be closed with END, e.g. TYPEOF What WHEN Account THEN Phone ELSE Name \
             END",
        ))
    }

    fn parse_typeof_fields(&mut self) -> Result<(), SoqlError> {
        loop {
            if self.peek().kind == Kind::Ident && self.peek_at(1).kind == Kind::LParen {
                self.parse_function_call()?;
            } else {
                self.parse_path("a field name")?;
            }
            if !self.eat(Kind::Comma) {
                return Ok(());
            }
        }
    }

    /// An alias after a field or function (`COUNT(Id) total`); reserved words and clause
    /// keywords are not aliases, they end the item.
    fn parse_optional_alias(&mut self) -> Result<(), SoqlError> {
        let token = self.peek();
        if token.kind != Kind::Ident || token.is_any_word(RESERVED_WORDS) || self.is_clause_start(0)
        {
            return Ok(());
        }
        if let Some(hint) = sql_habit_hint(&token) {
            return Err(self.error_at(token, hint));
        }
        self.advance();
        Ok(())
    }

    // --- names and functions -----------------------------------------------------------------

    /// A dotted name (`Account.Owner.Name`, `ns__X__c`), returned as written minus whitespace.
    fn parse_path(&mut self, expected: &str) -> Result<String, SoqlError> {
        let first = self.peek();
        if first.kind != Kind::Ident {
            return Err(self.unexpected(first, expected));
        }
        self.advance();
        let mut path = first.text.to_owned();
        while self.eat(Kind::Dot) {
            let segment = self.peek();
            if segment.kind != Kind::Ident {
                return Err(self.unexpected(segment, "a field or relationship name after '.'"));
            }
            self.advance();
            path.push('.');
            path.push_str(segment.text);
        }
        Ok(path)
    }

    /// `NAME(args)`; any name is accepted (Salesforce knows its functions). Returns whether an
    /// aggregate function is used, here or nested in the arguments.
    fn parse_function_call(&mut self) -> Result<bool, SoqlError> {
        let name = self.advance();
        let open = self.advance();
        let mut aggregate = is_aggregate_function(name.text);
        if self.eat(Kind::RParen) {
            return Ok(aggregate);
        }
        if self.at_word("SELECT") {
            return Err(self.error_at(
                name,
                "a '(' after a name is read as a function call: put a ',' before a (SELECT ...) \
                 subquery",
            ));
        }
        loop {
            aggregate |= self.parse_function_argument(name)?;
            if !self.eat(Kind::Comma) {
                break;
            }
        }
        self.expect_close(open)?;
        Ok(aggregate)
    }

    fn parse_function_argument(&mut self, function: Token<'_>) -> Result<bool, SoqlError> {
        let token = self.peek();
        match token.kind {
            Kind::Star if function.is_word("COUNT") => Err(self.error_at(
                token,
                "COUNT(*) is not SOQL: use COUNT() to count rows, or COUNT(Id)",
            )),
            Kind::Ident if self.peek_at(1).kind == Kind::LParen => self.parse_function_call(),
            Kind::Ident => self.parse_path("a field name").map(|_| false),
            Kind::Str
            | Kind::Number
            | Kind::Date
            | Kind::DateTime
            | Kind::DateLiteralN
            | Kind::Currency => {
                self.advance();
                Ok(false)
            }
            _ => Err(self.unexpected(token, "a field, value or function inside the parentheses")),
        }
    }

    /// A field or function used as a grouping or sort key, or on the left of a condition.
    fn parse_operand(&mut self, expected: &str) -> Result<(), SoqlError> {
        let token = self.peek();
        if token.kind != Kind::Ident || self.is_clause_start(0) {
            return Err(self.unexpected(token, expected));
        }
        if self.peek_at(1).kind == Kind::LParen {
            self.parse_function_call()?;
        } else {
            self.parse_path(expected)?;
        }
        Ok(())
    }

    // --- FROM, USING SCOPE, WITH --------------------------------------------------------------

    fn expect_from(&mut self) -> Result<(), SoqlError> {
        if self.eat_word("FROM") {
            return Ok(());
        }
        let found = self.peek();
        if found.kind == Kind::Eof || self.is_clause_start(0) {
            let before = match found.kind {
                Kind::Eof => String::new(),
                _ => format!(" before {}", found.text.to_ascii_uppercase()),
            };
            return Err(self.error_at(
                found,
                format!("missing FROM{before}: say which object to query, e.g. SELECT Id, Name FROM Account"),
            ));
        }
        Err(self.unexpected(found, "',' or FROM after the field list"))
    }

    /// `FROM Object [alias] [, path alias ...]`; returns the first object as written.
    fn parse_from_list(&mut self) -> Result<String, SoqlError> {
        let object = self.parse_from_object()?;
        self.parse_optional_alias()?;
        while self.eat(Kind::Comma) {
            self.parse_from_object()?;
            self.parse_optional_alias()?;
        }
        Ok(object)
    }

    fn parse_from_object(&mut self) -> Result<String, SoqlError> {
        let token = self.peek();
        if token.kind != Kind::Ident || self.is_clause_start(0) {
            return Err(self.error_at(
                token,
                format!(
                    "FROM needs an object name, e.g. FROM Account, but found {}",
                    token.describe()
                ),
            ));
        }
        self.parse_path("an object name")
    }

    fn parse_using_scope(&mut self) -> Result<(), SoqlError> {
        self.advance();
        self.expect_word("SCOPE", "SCOPE after USING, e.g. USING SCOPE mine")?;
        let scope = self.peek();
        if scope.kind != Kind::Ident || self.is_clause_start(0) {
            return Err(self.error_at(
                scope,
                "USING SCOPE needs a scope name such as mine, team, everything or delegated",
            ));
        }
        self.advance();
        Ok(())
    }

    /// `WITH DATA CATEGORY ...`, `WITH SECURITY_ENFORCED | USER_MODE | SYSTEM_MODE`, and the
    /// filter forms some objects take (`WITH UserId = '005...'`, `WITH Name (option = value)`).
    fn parse_with(&mut self) -> Result<(), SoqlError> {
        self.advance();
        if self.eat_word("DATA") {
            self.expect_word("CATEGORY", "CATEGORY after WITH DATA")?;
            return self.parse_data_category_filters();
        }
        let filter = self.peek();
        if filter.kind != Kind::Ident || self.is_clause_start(0) {
            return Err(self.error_at(
                filter,
                "WITH needs SECURITY_ENFORCED, USER_MODE, SYSTEM_MODE or DATA CATEGORY ...",
            ));
        }
        self.advance();
        if self.eat(Kind::Op) {
            return self.parse_value();
        }
        if self.at(Kind::LParen) {
            return self.parse_with_options();
        }
        Ok(())
    }

    /// `(name = value, ...)` after a WITH filter name.
    fn parse_with_options(&mut self) -> Result<(), SoqlError> {
        let open = self.advance();
        loop {
            self.parse_path("an option name")?;
            if !self.eat(Kind::Op) {
                return Err(self.unexpected(self.peek(), "'=' after the option name"));
            }
            self.parse_value()?;
            if !self.eat(Kind::Comma) {
                break;
            }
        }
        self.expect_close(open)
    }

    /// `Group__c AT|ABOVE|BELOW|ABOVE_OR_BELOW category__c [AND ...]`, categories optionally in
    /// a parenthesized list.
    fn parse_data_category_filters(&mut self) -> Result<(), SoqlError> {
        loop {
            let group = self.parse_path("a data category group name, e.g. Geography__c")?;
            let selector = self.peek();
            if !selector.is_any_word(&["AT", "ABOVE", "BELOW", "ABOVE_OR_BELOW"]) {
                return Err(self.unexpected(
                    selector,
                    &format!("AT, ABOVE, BELOW or ABOVE_OR_BELOW after the category group {group}"),
                ));
            }
            self.advance();
            if self.at(Kind::LParen) {
                let open = self.advance();
                loop {
                    self.parse_path("a data category name")?;
                    if !self.eat(Kind::Comma) {
                        break;
                    }
                }
                self.expect_close(open)?;
            } else {
                self.parse_path("a data category name, e.g. usa__c")?;
            }
            if !self.eat_word("AND") {
                return Ok(());
            }
        }
    }

    // --- conditions ----------------------------------------------------------------------------

    /// A WHERE or HAVING condition. SOQL refuses AND and OR mixed at one level without
    /// parentheses, so that is checked here with a clearer message than Salesforce's.
    fn parse_condition(&mut self) -> Result<(), SoqlError> {
        self.parse_unary_condition()?;
        let mut connector: Option<&str> = None;
        loop {
            let token = self.peek();
            let word = if token.is_word("AND") {
                "AND"
            } else if token.is_word("OR") {
                "OR"
            } else {
                return Ok(());
            };
            if connector.is_some_and(|previous| previous != word) {
                return Err(self.error_at(
                    token,
                    "SOQL needs parentheses when AND and OR are mixed: write (A AND B) OR C, or \
                     A AND (B OR C)",
                ));
            }
            connector = Some(word);
            self.advance();
            self.parse_unary_condition()?;
        }
    }

    fn parse_unary_condition(&mut self) -> Result<(), SoqlError> {
        let mut nots = 0;
        while self.at_word("NOT") {
            if nots == MAX_NOT_CHAIN {
                return Err(self.error_at(
                    self.peek(),
                    format!(
                        "the condition chains NOT more than {MAX_NOT_CHAIN} times: two NOTs \
                         cancel out, so keep one or none"
                    ),
                ));
            }
            nots += 1;
            self.advance();
        }
        if self.at(Kind::LParen) {
            let open = self.advance();
            self.parse_condition()?;
            return self.expect_close(open);
        }
        self.parse_comparison()
    }

    /// `operand operator value`, `operand [NOT] IN (...)`, `operand INCLUDES|EXCLUDES (...)`.
    fn parse_comparison(&mut self) -> Result<(), SoqlError> {
        self.parse_operand("a condition such as Name = 'Acme'")?;
        let operator = self.peek();
        if operator.kind == Kind::Op || operator.is_word("LIKE") {
            self.advance();
            return self.parse_value();
        }
        if operator.is_word("IN") {
            self.advance();
            return self.parse_in_list("IN");
        }
        if operator.is_word("NOT") && self.peek_at(1).is_word("IN") {
            self.advance();
            self.advance();
            return self.parse_in_list("NOT IN");
        }
        if operator.is_word("NOT") && self.peek_at(1).is_word("LIKE") {
            return Err(self.error_at(
                operator,
                "SOQL has no NOT LIKE: put NOT before the whole condition, e.g. NOT Name LIKE \
                 'A%'",
            ));
        }
        if operator.is_any_word(&["INCLUDES", "EXCLUDES"]) {
            self.advance();
            let word = operator.text.to_ascii_uppercase();
            let open = self.expect_list_open(&word, "('AAA;BBB', 'CCC')")?;
            return self.parse_value_list(open);
        }
        Err(self.unexpected(
            operator,
            "a comparison operator (=, !=, <, <=, >, >=, LIKE, IN, NOT IN, INCLUDES or EXCLUDES)",
        ))
    }

    /// The parenthesized list after IN / NOT IN: literal values, or a semi-join subquery.
    fn parse_in_list(&mut self, operator: &str) -> Result<(), SoqlError> {
        let open = self.expect_list_open(
            operator,
            "('Open', 'Closed') or (SELECT AccountId FROM Contact)",
        )?;
        if self.at_word("SELECT") {
            return self.parse_semi_join(open);
        }
        self.parse_value_list(open)
    }

    fn expect_list_open(&mut self, operator: &str, example: &str) -> Result<Token<'a>, SoqlError> {
        let open = self.peek();
        if open.kind != Kind::LParen {
            return Err(self.error_at(
                open,
                format!("{operator} needs its values in parentheses, e.g. {operator} {example}"),
            ));
        }
        Ok(self.advance())
    }

    /// `(SELECT field FROM Object ...)` after IN / NOT IN; Salesforce allows no semi-join
    /// inside another, so neither does this.
    fn parse_semi_join(&mut self, open: Token<'_>) -> Result<(), SoqlError> {
        if self.in_semi_join {
            return Err(self.error_at(
                self.peek(),
                "a semi-join or anti-join subquery can't contain another one: filter the inner \
                 subquery with plain conditions, or run two queries",
            ));
        }
        self.in_semi_join = true;
        let semi_join = self.parse_query(QueryKind::SemiJoin)?;
        self.in_semi_join = false;
        self.semi_join_objects.push(semi_join.object);
        self.expect_close(open)
    }

    fn parse_value_list(&mut self, open: Token<'_>) -> Result<(), SoqlError> {
        if self.at(Kind::RParen) {
            return Err(self.error_at(
                self.peek(),
                "the value list is empty: put at least one value in the parentheses",
            ));
        }
        loop {
            self.parse_value()?;
            if !self.eat(Kind::Comma) {
                break;
            }
        }
        self.expect_close(open)
    }

    /// A literal on the right of a comparison. SOQL compares fields with literals only, so a
    /// bare word must be a boolean, null, a date literal or a currency amount.
    fn parse_value(&mut self) -> Result<(), SoqlError> {
        let token = self.peek();
        match token.kind {
            Kind::Str
            | Kind::Number
            | Kind::Date
            | Kind::DateTime
            | Kind::DateLiteralN
            | Kind::Currency => {
                self.advance();
                Ok(())
            }
            Kind::Ident if is_value_word(token.text) => {
                self.advance();
                Ok(())
            }
            Kind::Ident if self.peek_at(1).kind == Kind::LParen => Err(self.error_at(
                token,
                "a function call can't be used as a value: compare with a literal such as \
                 'text', 42, 2024-01-31 or TODAY",
            )),
            Kind::Ident if sql_habit_hint(&token).is_none() => Err(self.error_at(
                token,
                format!(
                    "unquoted value {text}: put text in single quotes ('{text}'); dates are \
                     written 2024-01-31 or as date literals such as TODAY or LAST_N_DAYS:30, \
                     and a field can't be compared with another field",
                    text = token.text
                ),
            )),
            Kind::LParen => Err(self.error_at(
                token,
                "a list in parentheses is only allowed after IN, NOT IN, INCLUDES or EXCLUDES",
            )),
            _ => Err(self.unexpected(
                token,
                "a value such as 'text', 42, true, null, 2024-01-31 or TODAY",
            )),
        }
    }

    // --- GROUP BY, ORDER BY, LIMIT, OFFSET, FOR ------------------------------------------------

    /// `GROUP BY a, b`, `GROUP BY ROLLUP(a, b)`, `GROUP BY CUBE(a)`: ROLLUP and CUBE parse as
    /// function calls.
    fn parse_group_by(&mut self) -> Result<(), SoqlError> {
        self.advance();
        self.advance();
        loop {
            self.parse_operand("a field or function to group by")?;
            if !self.eat(Kind::Comma) {
                return Ok(());
            }
        }
    }

    /// `ORDER BY key [ASC|DESC] [NULLS FIRST|LAST], ...`.
    fn parse_order_by(&mut self) -> Result<(), SoqlError> {
        self.advance();
        self.advance();
        loop {
            self.parse_operand("a field to order by")?;
            let _ = self.eat_word("ASC") || self.eat_word("DESC");
            if self.eat_word("NULLS") && !(self.eat_word("FIRST") || self.eat_word("LAST")) {
                return Err(self.unexpected(self.peek(), "FIRST or LAST after NULLS"));
            }
            if !self.eat(Kind::Comma) {
                return Ok(());
            }
        }
    }

    /// The number after LIMIT or OFFSET: a non-negative whole number, nothing else.
    fn parse_row_count(&mut self, clause: &str) -> Result<u64, SoqlError> {
        let token = self.peek();
        let count = match token.kind {
            Kind::Number => token.text.parse::<u64>().ok(),
            _ => None,
        };
        match count {
            Some(count) => {
                self.advance();
                Ok(count)
            }
            None => Err(self.error_at(
                token,
                format!(
                    "{clause} takes a non-negative whole number, e.g. {clause} 100, but found {}",
                    token.describe()
                ),
            )),
        }
    }

    fn parse_offset(&mut self) -> Result<(), SoqlError> {
        self.advance();
        let number = self.peek();
        let offset = self.parse_row_count("OFFSET")?;
        if offset > MAX_OFFSET {
            return Err(self.error_at(
                number,
                format!(
                    "OFFSET {offset} is over Salesforce's maximum of {MAX_OFFSET} rows: narrow \
                     the query with WHERE (for example on CreatedDate or Id) instead of paging \
                     deeper"
                ),
            ));
        }
        Ok(())
    }

    /// `FOR VIEW` / `FOR REFERENCE` are allowed; `FOR UPDATE` locks records and is not.
    fn parse_for_clause(&mut self) -> Result<(), SoqlError> {
        if !self.at_word("FOR") {
            return Ok(());
        }
        let keyword = self.advance();
        loop {
            let purpose = self.peek();
            if purpose.is_word("UPDATE") {
                return Err(self.error_at(keyword, FOR_UPDATE_REFUSED));
            }
            if !purpose.is_any_word(&["VIEW", "REFERENCE"]) {
                return Err(self.unexpected(purpose, "VIEW or REFERENCE after FOR"));
            }
            self.advance();
            if !self.eat(Kind::Comma) {
                return Ok(());
            }
        }
    }

    /// `UPDATE TRACKING` / `UPDATE VIEWSTAT` write article statistics, so they are refused.
    fn refuse_update_clause(&self) -> Result<(), SoqlError> {
        let token = self.peek();
        if !token.is_word("UPDATE") {
            return Ok(());
        }
        Err(self.error_at(
            token,
            "UPDATE TRACKING and UPDATE VIEWSTAT record article views and are not allowed in a \
             read-only query: remove the UPDATE clause",
        ))
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
