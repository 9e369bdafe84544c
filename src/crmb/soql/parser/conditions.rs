//! WHERE and HAVING conditions: comparisons, IN lists, semi-joins and values, with the rules
//! Salesforce's server applies to them beyond the grammar (see [`super::server_rules`]).

use super::super::hints::sql_habit_hint;
use super::super::lexer::{Kind, Token};
use super::super::words::*;
use super::super::*;
use super::functions::Place;
use super::server_rules::Clause;
use super::{Parser, QueryKind};

impl<'a> Parser<'a> {
    // --- conditions ----------------------------------------------------------------------------

    /// The condition after WHERE, with the limits Salesforce puts on a WHERE clause as a whole.
    pub(super) fn parse_where(&mut self) -> Result<(), SoqlError> {
        let first_semi_join = self.semi_join_tokens.len();
        self.condition = Some(Clause::Where);
        self.parse_condition()?;
        self.condition = None;
        self.check_semi_join_count(first_semi_join)
    }

    /// The condition after HAVING.
    pub(super) fn parse_having(&mut self) -> Result<(), SoqlError> {
        self.condition = Some(Clause::Having);
        self.parse_condition()?;
        self.condition = None;
        Ok(())
    }

    /// A WHERE or HAVING condition. SOQL refuses AND and OR mixed at one level without
    /// parentheses, so that is checked here with a clearer message than Salesforce's; so is a
    /// semi-join in an OR, which Salesforce's server refuses though its grammar takes it.
    pub(super) fn parse_condition(&mut self) -> Result<(), SoqlError> {
        // SOQL's grammar takes NOT only before a whole condition at its level: beside AND or
        // OR it needs parentheses (`A AND (NOT B)`, `(NOT A) OR B`).
        let negated = self.at_word("NOT").then(|| self.peek());
        let first_semi_join = self.semi_join_tokens.len();
        self.parse_unary_condition()?;
        let mut connector: Option<&str> = None;
        let mut or: Option<Token<'a>> = None;
        loop {
            let token = self.peek();
            let word = if token.is_word("AND") {
                "AND"
            } else if token.is_word("OR") {
                "OR"
            } else {
                return match or {
                    Some(or) if self.semi_join_tokens.len() > first_semi_join => {
                        Err(self.semi_join_with_or(or))
                    }
                    _ => Ok(()),
                };
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
            if word == "OR" {
                or.get_or_insert(token);
            }
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
        let not = self.peek();
        let negated = self.eat_word("NOT");
        // One NOT at most before a condition: SOQL's grammar has no NOT NOT.
        if negated && self.at_word("NOT") {
            return Err(self.error_at(
                self.peek(),
                "NOT NOT is not SOQL: two NOTs cancel out, so keep one or none (a NOT may stand \
                 before a parenthesized condition that starts with NOT)",
            ));
        }
        let first_semi_join = self.semi_join_tokens.len();
        if self.at(Kind::LParen) {
            let open = self.advance();
            self.parse_condition()?;
            self.expect_close(open)?;
        } else {
            self.parse_comparison()?;
        }
        if negated && self.semi_join_tokens.len() > first_semi_join {
            return Err(self.negated_semi_join(not));
        }
        Ok(())
    }

    /// `operand operator value`, `operand [NOT] IN (...)`, `operand INCLUDES|EXCLUDES (...)`.
    pub(super) fn parse_comparison(&mut self) -> Result<(), SoqlError> {
        if self.at_word("FORMULA") && self.peek_at(1).kind == Kind::LParen {
            return self.parse_formula_comparison();
        }
        let operand_start = self.index;
        self.parse_operand("a condition such as Name = 'Acme'", Place::Top)?;
        if self.condition == Some(Clause::Where) {
            self.check_where_operand(operand_start)?;
        }
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
            return self.parse_in_list(operator, "IN");
        }
        if operator.is_word("NOT") && self.peek_at(1).is_word("IN") {
            self.advance();
            self.advance();
            return self.parse_in_list(operator, "NOT IN");
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

    /// The parenthesized list after IN / NOT IN: literal values, or a semi-join subquery
    /// (whose operator is recorded, for the limits on semi-joins in a WHERE clause).
    pub(super) fn parse_in_list(
        &mut self,
        operator: Token<'a>,
        word: &str,
    ) -> Result<(), SoqlError> {
        let open = self.expect_list_open(
            word,
            "('Open', 'Closed') or (SELECT AccountId FROM Contact)",
        )?;
        if self.at_word("SELECT") {
            self.semi_join_tokens.push(operator);
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
            self.check_where_string(self.peek())?;
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
            Kind::Str => {
                self.check_where_string(token)?;
                self.advance();
                Ok(())
            }
            Kind::Number
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
}
