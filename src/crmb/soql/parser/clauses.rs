//! FROM, USING SCOPE, WITH, GROUP BY, ORDER BY, LIMIT, OFFSET and FOR (conditions are in
//! `conditions.rs`).

use super::super::lexer::{Kind, Token};
use super::super::words::*;
use super::super::*;
use super::Parser;
use super::functions::Place;

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
    /// The first segment of each entry and every alias are kept in `from_names`: a field path
    /// may start with one (`SELECT Contact.Account.Name FROM Contact`, `a.Name`).
    pub(super) fn parse_from_list(&mut self) -> Result<String, SoqlError> {
        let first = self.peek();
        let object = self.parse_from_object()?;
        self.from_names.push(first.text);
        self.parse_from_alias()?;
        while self.eat(Kind::Comma) {
            let first = self.peek();
            self.parse_from_object()?;
            self.from_names.push(first.text);
            self.parse_from_alias()?;
        }
        Ok(object)
    }

    /// An object's alias, `Contact c` or `Contact AS c`: unlike a field's, Salesforce's grammar
    /// lets AS stand before an object's alias.
    fn parse_from_alias(&mut self) -> Result<(), SoqlError> {
        let _ = self.eat_word("AS");
        let alias = self.peek();
        if self.parse_optional_alias()? {
            self.from_names.push(alias.text);
        }
        Ok(())
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
