//! A recursive-descent parser over the SELECT grammar; it records what [`super::ValidatedQuery`]
//! reports as it goes.

mod clauses;
mod conditions;
mod functions;
mod select;
mod server_rules;

use super::hints::sql_habit_hint;
use super::lexer::{Kind, Token};
use super::*;
use server_rules::{Clause, FieldPath};

// ---------------------------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------------------------

/// Where a SELECT sits: each place allows a little less than the outer query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum QueryKind {
    Outer,
    /// A parent-to-child subquery in a SELECT list: `(SELECT LastName FROM Contacts)`.
    Child,
    /// A subquery after IN / NOT IN in a condition.
    SemiJoin,
}

/// What the caller needs to know about one parsed SELECT.
pub(super) struct QueryInfo {
    pub(super) object: String,
    pub(super) aggregate: bool,
    pub(super) limit: Option<u64>,
}

/// What one SELECT-list entry turned out to be.
pub(super) struct SelectItem {
    pub(super) aggregate: bool,
    pub(super) plain_field: bool,
    /// `FIELDS(ALL)` or `FIELDS(CUSTOM)`: an unbounded field set, which needs LIMIT <= 200.
    pub(super) unbounded_fields: bool,
    /// `COUNT()`: counts rows, and must stand alone.
    pub(super) count_rows: bool,
    /// An alias followed it.
    pub(super) aliased: bool,
    /// A function call (FIELDS() aside), which TYPEOF can't stand beside.
    pub(super) function: bool,
    /// A TYPEOF expression.
    pub(super) typeof_expr: bool,
}

impl SelectItem {
    /// A child subquery or TYPEOF: nothing the list rules look at.
    pub(super) fn other() -> Self {
        SelectItem {
            aggregate: false,
            plain_field: false,
            unbounded_fields: false,
            count_rows: false,
            aliased: false,
            function: false,
            typeof_expr: false,
        }
    }
}

/// A recursive-descent parser over the SELECT grammar; it records what [`ValidatedQuery`]
/// reports as it goes.
pub(super) struct Parser<'a> {
    pub(super) tokens: Vec<Token<'a>>,
    pub(super) index: usize,
    pub(super) lex_error: Option<SoqlError>,
    pub(super) child_depth: usize,
    pub(super) in_semi_join: bool,
    pub(super) subquery_relationships: Vec<String>,
    pub(super) semi_join_objects: Vec<String>,
    /// The clause whose condition is being parsed, if any (none inside a nested query's
    /// other clauses).
    pub(super) condition: Option<Clause>,
    /// The IN / NOT IN of every semi-join and anti-join so far, in order: a condition holds one
    /// when this grew while it was parsed.
    pub(super) semi_join_tokens: Vec<Token<'a>>,
    /// Child subqueries opened so far, nested ones included.
    pub(super) child_subqueries: usize,
    /// Field paths deep enough to pass the child-to-parent level limit, for the query being
    /// parsed and those enclosing it (each query takes its own off the end).
    pub(super) field_paths: Vec<FieldPath<'a>>,
    /// Object names and aliases of the FROM clauses being parsed, likewise.
    pub(super) from_names: Vec<&'a str>,
}

impl<'a> Parser<'a> {
    pub(super) fn new(tokens: Vec<Token<'a>>, lex_error: Option<SoqlError>) -> Self {
        Parser {
            tokens,
            index: 0,
            lex_error,
            child_depth: 0,
            in_semi_join: false,
            subquery_relationships: Vec::new(),
            semi_join_objects: Vec::new(),
            condition: None,
            semi_join_tokens: Vec::new(),
            child_subqueries: 0,
            field_paths: Vec::new(),
            from_names: Vec::new(),
        }
    }

    // --- token access ----------------------------------------------------------------------

    /// The current token; the last token (Eof or Invalid) repeats forever.
    pub(super) fn peek(&self) -> Token<'a> {
        self.peek_at(0)
    }

    pub(super) fn peek_at(&self, ahead: usize) -> Token<'a> {
        let last = self.tokens.len() - 1;
        self.tokens[(self.index + ahead).min(last)]
    }

    pub(super) fn advance(&mut self) -> Token<'a> {
        let token = self.peek();
        if self.index < self.tokens.len() - 1 {
            self.index += 1;
        }
        token
    }

    pub(super) fn at(&self, kind: Kind) -> bool {
        self.peek().kind == kind
    }

    pub(super) fn at_word(&self, word: &str) -> bool {
        self.peek().is_word(word)
    }

    pub(super) fn eat(&mut self, kind: Kind) -> bool {
        let found = self.at(kind);
        if found {
            self.advance();
        }
        found
    }

    pub(super) fn eat_word(&mut self, word: &str) -> bool {
        let found = self.at_word(word);
        if found {
            self.advance();
        }
        found
    }

    /// Whether the token `ahead` starts a clause (or FROM), which ends whatever came before.
    /// OFFSET and FOR are ordinary words (an alias, an object's name) unless their clause
    /// follows: a number, VIEW or REFERENCE.
    pub(super) fn is_clause_start(&self, ahead: usize) -> bool {
        let token = self.peek_at(ahead);
        let next = self.peek_at(ahead + 1);
        // `Update.Name`: a keyword leading a dotted path is a name.
        if next.kind == Kind::Dot {
            return false;
        }
        token.is_any_word(&[
            "FROM", "WHERE", "WITH", "USING", "HAVING", "LIMIT", "UPDATE",
        ]) || (token.is_any_word(&["GROUP", "ORDER"]) && next.is_word("BY"))
            || (token.is_word("OFFSET") && matches!(next.kind, Kind::Number | Kind::Str))
            || (token.is_word("FOR") && next.kind == Kind::Ident)
            || (token.is_word("BIND")
                && next.kind == Kind::Ident
                && self.peek_at(ahead + 2).text == "=")
    }

    // --- errors ------------------------------------------------------------------------------

    /// An error at `token`, unless lexing stopped there: then the lexer's error is the real one.
    pub(super) fn error_at(&self, token: Token<'_>, reason: impl Into<String>) -> SoqlError {
        match (&self.lex_error, token.kind) {
            (Some(error), Kind::Invalid) => error.clone(),
            _ => SoqlError::at(token.pos, reason),
        }
    }

    /// "expected X but found Y", or a targeted fix when Y is a SQL habit.
    pub(super) fn unexpected(&self, token: Token<'_>, expected: &str) -> SoqlError {
        match sql_habit_hint(&token) {
            Some(hint) => self.error_at(token, hint),
            None => self.error_at(
                token,
                format!("expected {expected} but found {}", token.describe()),
            ),
        }
    }

    pub(super) fn expect_word(&mut self, word: &str, expected: &str) -> Result<(), SoqlError> {
        if self.eat_word(word) {
            Ok(())
        } else {
            Err(self.unexpected(self.peek(), expected))
        }
    }

    /// The `)` matching `open`; a clause found instead is reported as out of order.
    pub(super) fn expect_close(&mut self, open: Token<'_>) -> Result<(), SoqlError> {
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
    pub(super) fn out_of_order(&self, token: Token<'_>) -> SoqlError {
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
    pub(super) fn parse_statement(&mut self) -> Result<QueryInfo, SoqlError> {
        self.check_statement_start()?;
        self.check_parentheses()?;
        let outer = self.parse_query(QueryKind::Outer)?;
        let rest = self.peek();
        match rest.kind {
            Kind::Eof => Ok(outer),
            Kind::RParen => Err(self.error_at(rest, "this ')' has no matching '('")),
            _ if self.is_clause_start(0) => Err(self.out_of_order(rest)),
            Kind::Number if rest.text.starts_with(['+', '-']) => Err(self.error_at(
                rest,
                "SOQL has no arithmetic: compare a field with one value, e.g. Amount > 3",
            )),
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
    pub(super) fn check_statement_start(&self) -> Result<(), SoqlError> {
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
    pub(super) fn check_parentheses(&self) -> Result<(), SoqlError> {
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

    /// The end of a semi-join subquery: at most one WITH filter (`WITH DATA CATEGORY ...` or
    /// `WITH name = value`), and none of the clauses that shape an answer.
    fn finish_semi_join(&mut self, object: String) -> Result<QueryInfo, SoqlError> {
        if self.at_word("WITH") {
            let with = self.peek();
            let data_category = self.peek_at(1).is_word("DATA");
            let filter = self.peek_at(2).kind == Kind::Op;
            if !(data_category || filter) {
                return Err(self.error_at(
                    with,
                    "inside a semi-join or anti-join subquery WITH takes only DATA CATEGORY ... \
                     or a filter such as WITH UserId = '005...': put WITH SECURITY_ENFORCED, \
                     USER_MODE or SYSTEM_MODE on the outer query",
                ));
            }
            self.parse_with()?;
        }
        let token = self.peek();
        if token.kind != Kind::RParen && token.kind != Kind::Eof && self.is_clause_start(0)
            || token.is_any_word(&["OFFSET", "FOR", "BIND"])
        {
            let mut clause = token.text.to_ascii_uppercase();
            if token.is_any_word(&["ORDER", "GROUP"]) {
                clause.push_str(" BY");
            }
            return Err(self.error_at(
                token,
                format!(
                    "a semi-join or anti-join subquery (IN or NOT IN (SELECT ...)) takes only \
                     WHERE and one WITH filter, not {clause}: remove it from the subquery"
                ),
            ));
        }
        Ok(QueryInfo {
            object,
            aggregate: false,
            limit: None,
        })
    }

    /// One SELECT with its clauses, then the limit on its child-to-parent paths, which needs
    /// its FROM names.
    pub(super) fn parse_query(&mut self, kind: QueryKind) -> Result<QueryInfo, SoqlError> {
        let outer_condition = self.condition.take();
        let (paths_mark, names_mark) = (self.field_paths.len(), self.from_names.len());
        let query = self.parse_query_clauses(kind);
        self.condition = outer_condition;
        let query = query?;
        let paths = self.field_paths.split_off(paths_mark);
        let names = self.from_names.split_off(names_mark);
        self.check_parent_levels(kind, &paths, &names)?;
        Ok(query)
    }

    /// One SELECT with its clauses, in SOQL's fixed clause order.
    fn parse_query_clauses(&mut self, kind: QueryKind) -> Result<QueryInfo, SoqlError> {
        self.expect_word("SELECT", "SELECT")?;
        let (selects_aggregate, unbounded_fields) = self.parse_select_list(kind)?;
        self.expect_from()?;
        let object = self.parse_from_list()?;
        if self.at_word("USING") {
            self.parse_using_scope()?;
        }
        if self.eat_word("WHERE") {
            self.parse_where()?;
        }
        if kind == QueryKind::SemiJoin {
            return self.finish_semi_join(object);
        }
        // `WITH DATA CATEGORY ... WITH SECURITY_ENFORCED`: one WITH per filter.
        while self.at_word("WITH") {
            self.parse_with()?;
        }
        let grouped = self.at_word("GROUP") && self.peek_at(1).is_word("BY");
        if grouped {
            self.parse_group_by()?;
        }
        let having = self.peek();
        if self.eat_word("HAVING") {
            if !grouped {
                return Err(self.error_at(
                    having,
                    "HAVING filters groups and needs a GROUP BY before it: add GROUP BY, or \
                     move the condition into WHERE",
                ));
            }
            self.parse_having()?;
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
        if self.at_word("BIND") && self.is_clause_start(0) {
            self.parse_bind()?;
        }
        self.parse_for_clause()?;
        self.refuse_update_clause()?;
        Ok(QueryInfo {
            object,
            aggregate: selects_aggregate || grouped,
            limit,
        })
    }
}
