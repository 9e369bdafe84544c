//! FROM, USING SCOPE, WITH, WHERE and HAVING conditions, GROUP BY, ORDER BY, LIMIT, OFFSET
//! and FOR.

use super::super::hints::sql_habit_hint;
use super::super::lexer::{Kind, Token};
use super::super::words::*;
use super::super::*;
use super::functions::Place;
use super::{Parser, QueryKind};

impl<'a> Parser<'a> {
    // --- FROM, USING SCOPE, WITH --------------------------------------------------------------

    pub(super) fn expect_from(&mut self) -> Result<(), SoqlError> {
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
    pub(super) fn parse_from_list(&mut self) -> Result<String, SoqlError> {
        let object = self.parse_from_object()?;
        self.parse_from_alias()?;
        while self.eat(Kind::Comma) {
            self.parse_from_object()?;
            self.parse_from_alias()?;
        }
        Ok(object)
    }

    /// An object's alias, `Contact c` or `Contact AS c`: unlike a field's, Salesforce's grammar
    /// lets AS stand before an object's alias.
    fn parse_from_alias(&mut self) -> Result<(), SoqlError> {
        let _ = self.eat_word("AS");
        self.parse_optional_alias().map(|_| ())
    }

    pub(super) fn parse_from_object(&mut self) -> Result<String, SoqlError> {
        let token = self.peek();
        if token.kind != Kind::Ident || self.starts_clause_instead_of_object() {
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

    /// Whether the word after FROM begins a clause rather than naming an object: a reserved
    /// word does, and so does a clause word with what its clause needs after it (`ORDER BY`,
    /// `OFFSET 5`, `FOR VIEW`); otherwise `Offset` or `Update` may be an object's name.
    fn starts_clause_instead_of_object(&self) -> bool {
        let token = self.peek();
        let next = self.peek_at(1);
        // GROUP is reserved, yet `Group` is a standard object (queues and public groups).
        (token.is_any_word(RESERVED_WORDS) && !token.is_word("GROUP"))
            || (token.is_any_word(&["ORDER", "GROUP"]) && next.is_word("BY"))
            || (token.is_word("OFFSET") && next.kind == Kind::Number)
            || (token.is_word("FOR") && next.is_any_word(&["VIEW", "REFERENCE", "UPDATE"]))
            || (token.is_word("UPDATE") && next.is_any_word(&["TRACKING", "VIEWSTAT"]))
    }

    /// `USING SCOPE mine`, `USING LOOKUP name` (whose values a BIND clause at the end gives),
    /// or several of them separated by commas (`USING SCOPE mine, LOOKUP name`).
    pub(super) fn parse_using_scope(&mut self) -> Result<(), SoqlError> {
        self.advance();
        loop {
            let lookup = self.eat_word("LOOKUP");
            if !lookup {
                self.expect_word(
                    "SCOPE",
                    "SCOPE or LOOKUP after USING, e.g. USING SCOPE mine",
                )?;
            }
            // The grammar takes a plain name here: none of its keywords, soft ones included.
            let name = self.peek();
            let keyword = name.is_any_word(RESERVED_WORDS)
                || name.is_any_word(GRAMMAR_KEYWORDS)
                || name.is_any_word(SOFT_KEYWORDS);
            if name.kind != Kind::Ident || keyword {
                let reason = if lookup {
                    "USING LOOKUP needs the lookup's name"
                } else {
                    "USING SCOPE needs a scope name such as mine, team, everything or delegated"
                };
                return Err(self.error_at(name, format!("{reason}, but found {}", name.describe())));
            }
            self.advance();
            if !self.eat(Kind::Comma) {
                return Ok(());
            }
        }
    }

    /// `BIND name = value, ...`: values for a query's lookups, after OFFSET and before FOR.
    pub(super) fn parse_bind(&mut self) -> Result<(), SoqlError> {
        self.advance();
        loop {
            let name = self.peek();
            if name.kind != Kind::Ident || self.is_clause_start(0) {
                return Err(self.unexpected(name, "a name after BIND, e.g. BIND name = 'value'"));
            }
            self.advance();
            let equals = self.peek();
            if !(equals.kind == Kind::Op && equals.text == "=") {
                return Err(self.unexpected(equals, "'=' and a value after the BIND name"));
            }
            self.advance();
            self.parse_value()?;
            if !self.eat(Kind::Comma) {
                return Ok(());
            }
        }
    }

    /// `WITH DATA CATEGORY ...`, `WITH SECURITY_ENFORCED | USER_MODE | SYSTEM_MODE`, and the
    /// filter forms some objects take (`WITH UserId = '005...'`, `WITH Name (option = value)`).
    pub(super) fn parse_with(&mut self) -> Result<(), SoqlError> {
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
    pub(super) fn parse_with_options(&mut self) -> Result<(), SoqlError> {
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
    pub(super) fn parse_data_category_filters(&mut self) -> Result<(), SoqlError> {
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
    pub(super) fn parse_condition(&mut self) -> Result<(), SoqlError> {
        // SOQL's grammar takes NOT only before a whole condition at its level: beside AND or
        // OR it needs parentheses (`A AND (NOT B)`, `(NOT A) OR B`).
        let negated = self.at_word("NOT").then(|| self.peek());
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
            if let Some(not) = negated {
                return Err(self.error_at(
                    not,
                    format!(
                        "NOT next to {word} needs parentheses: write (NOT A) {word} B to negate \
                         one condition, or NOT (A {word} B) to negate both"
                    ),
                ));
            }
            if connector.is_some_and(|previous| previous != word) {
                return Err(self.error_at(
                    token,
                    "SOQL needs parentheses when AND and OR are mixed: write (A AND B) OR C, or \
                     A AND (B OR C)",
                ));
            }
            connector = Some(word);
            self.advance();
            let not = self.peek();
            if not.is_word("NOT") {
                return Err(self.error_at(
                    not,
                    format!("NOT after {word} needs parentheses: write A {word} (NOT B)"),
                ));
            }
            self.parse_unary_condition()?;
        }
    }

    pub(super) fn parse_unary_condition(&mut self) -> Result<(), SoqlError> {
        // One NOT at most before a condition: SOQL's grammar has no NOT NOT.
        if self.eat_word("NOT") && self.at_word("NOT") {
            return Err(self.error_at(
                self.peek(),
                "NOT NOT is not SOQL: two NOTs cancel out, so keep one or none (a NOT may stand \
                 before a parenthesized condition that starts with NOT)",
            ));
        }
        if self.at(Kind::LParen) {
            let open = self.advance();
            self.parse_condition()?;
            return self.expect_close(open);
        }
        self.parse_comparison()
    }

    /// `operand operator value`, `operand [NOT] IN (...)`, `operand INCLUDES|EXCLUDES (...)`.
    pub(super) fn parse_comparison(&mut self) -> Result<(), SoqlError> {
        self.parse_operand("a condition such as Name = 'Acme'", Place::Top)?;
        let operator = self.peek();
        if operator.is_word("LIKE") {
            self.advance();
            return self.parse_like_pattern();
        }
        if operator.kind == Kind::Op {
            self.advance();
            // `< =` and `> =`: Salesforce reads the two characters as one operator even with
            // whitespace between them.
            if matches!(operator.text, "<" | ">")
                && self.peek().kind == Kind::Op
                && self.peek().text == "="
            {
                self.advance();
            }
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
    pub(super) fn parse_in_list(&mut self, operator: &str) -> Result<(), SoqlError> {
        let open = self.expect_list_open(
            operator,
            "('Open', 'Closed') or (SELECT AccountId FROM Contact)",
        )?;
        if self.at_word("SELECT") {
            return self.parse_semi_join(open);
        }
        self.parse_value_list(open)
    }

    pub(super) fn expect_list_open(
        &mut self,
        operator: &str,
        example: &str,
    ) -> Result<Token<'a>, SoqlError> {
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
    pub(super) fn parse_semi_join(&mut self, open: Token<'_>) -> Result<(), SoqlError> {
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

    pub(super) fn parse_value_list(&mut self, open: Token<'_>) -> Result<(), SoqlError> {
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

    /// The value after LIKE: the one place `\%` and `\_` mean something.
    pub(super) fn parse_like_pattern(&mut self) -> Result<(), SoqlError> {
        if self.at(Kind::Str) {
            self.advance();
            return Ok(());
        }
        self.parse_value()
    }

    /// A literal on the right of a comparison. SOQL compares fields with literals only, so a
    /// bare word must be a boolean, null, a date literal or a currency amount.
    pub(super) fn parse_value(&mut self) -> Result<(), SoqlError> {
        let token = self.peek();
        match token.kind {
            Kind::Str if has_like_escape(token.text) => Err(self.error_at(
                token,
                "\\% and \\_ are escapes for LIKE patterns only: elsewhere write % and _ as \
                 they are",
            )),
            Kind::Ident if is_n_date_literal(token.text) => Err(self.error_at(
                token,
                format!(
                    "{word} needs its number: write {word}:n, e.g. {word}:30",
                    word = token.text.to_ascii_uppercase()
                ),
            )),
            Kind::Str
            | Kind::Number
            | Kind::Date
            | Kind::DateTime
            | Kind::Time
            | Kind::DateLiteralN
            | Kind::Currency => {
                self.advance();
                Ok(())
            }
            Kind::Ident if is_value_word(token.text) => {
                self.advance();
                Ok(())
            }
            Kind::Ident if looks_like_date_literal(token.text) => {
                Err(self.error_at(token, unknown_date_literal(token.text)))
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
    pub(super) fn parse_group_by(&mut self) -> Result<(), SoqlError> {
        self.advance();
        self.advance();
        let mut rollup: Option<Token<'a>> = None;
        let mut keys = 0;
        loop {
            let key = self.peek();
            if key.is_any_word(&["ROLLUP", "CUBE"]) && self.peek_at(1).kind == Kind::LParen {
                rollup = Some(key);
            }
            self.parse_operand("a field or function to group by", Place::GroupBy)?;
            keys += 1;
            if let Some(rollup) = rollup
                && keys > 1
            {
                let word = rollup.text.to_ascii_uppercase();
                return Err(self.error_at(
                    rollup,
                    format!(
                        "GROUP BY {word}(...) can't be mixed with other grouping keys: put every \
                         field inside {word}( )"
                    ),
                ));
            }
            if !self.eat(Kind::Comma) {
                return Ok(());
            }
        }
    }

    /// `ORDER BY key [ASC|DESC] [NULLS FIRST|LAST], ...`.
    pub(super) fn parse_order_by(&mut self) -> Result<(), SoqlError> {
        self.advance();
        self.advance();
        loop {
            self.parse_operand("a field to order by", Place::Top)?;
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
    pub(super) fn parse_row_count(&mut self, clause: &str) -> Result<u64, SoqlError> {
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

    pub(super) fn parse_offset(&mut self) -> Result<(), SoqlError> {
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
    pub(super) fn parse_for_clause(&mut self) -> Result<(), SoqlError> {
        if !self.at_word("FOR") {
            return Ok(());
        }
        let keyword = self.advance();
        let purpose = self.peek();
        if purpose.is_word("UPDATE") {
            return Err(self.error_at(keyword, FOR_UPDATE_REFUSED));
        }
        if !purpose.is_any_word(&["VIEW", "REFERENCE"]) {
            return Err(self.unexpected(purpose, "VIEW or REFERENCE after FOR"));
        }
        self.advance();
        let comma = self.peek();
        if comma.kind == Kind::Comma {
            return Err(self.error_at(comma, "FOR takes one of VIEW or REFERENCE: keep one"));
        }
        Ok(())
    }

    /// `UPDATE TRACKING` / `UPDATE VIEWSTAT` write article statistics, so they are refused.
    pub(super) fn refuse_update_clause(&self) -> Result<(), SoqlError> {
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
