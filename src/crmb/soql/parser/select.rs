//! The SELECT list: fields, child subqueries, TYPEOF, aliases, paths and function calls.

use super::super::hints::sql_habit_hint;
use super::super::lexer::{Kind, Token};
use super::super::words::*;
use super::super::*;
use super::functions::Place;
use super::{Parser, QueryKind, SelectItem};

impl<'a> Parser<'a> {
    // --- SELECT list -------------------------------------------------------------------------

    /// The comma-separated SELECT list: whether it uses an aggregate function, and the
    /// `FIELDS(ALL)` / `FIELDS(CUSTOM)` item, if any.
    pub(super) fn parse_select_list(
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
        let mut count_rows: Option<Token<'a>> = None;
        let (mut typeof_expr, mut function) = (false, None);
        loop {
            let item_start = self.peek();
            let item = self.parse_select_item(kind)?;
            count += 1;
            typeof_expr |= item.typeof_expr;
            if item.function {
                function.get_or_insert(item_start);
            }
            if typeof_expr && let Some(function) = function {
                return Err(self.typeof_beside_function(item_start, function));
            }
            if kind == QueryKind::SemiJoin && (!item.plain_field || count > 1) {
                return Err(self.error_at(item_start, SEMI_JOIN_ONE_FIELD));
            }
            if kind == QueryKind::SemiJoin && item.aliased {
                return Err(self.error_at(
                    item_start,
                    "the field of a semi-join or anti-join subquery takes no alias: remove it",
                ));
            }
            if item.count_rows {
                if item.aliased {
                    return Err(self.error_at(
                        item_start,
                        "COUNT() takes no alias: write COUNT(Id) alias to name a count",
                    ));
                }
                count_rows = Some(item_start);
            }
            if let Some(count_token) = count_rows
                && count > 1
            {
                return Err(self.error_at(
                    count_token,
                    "COUNT() counts rows and must be alone in the SELECT list: use COUNT(Id) \
                     beside other fields",
                ));
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

    pub(super) fn parse_select_item(&mut self, kind: QueryKind) -> Result<SelectItem, SoqlError> {
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
            // Salesforce's grammar lets an alias follow these too.
            Kind::LParen => {
                self.parse_child_subquery()?;
                self.parse_optional_alias()?;
                Ok(SelectItem::other())
            }
            Kind::Ident
                if token.is_word("TYPEOF") && next.kind == Kind::Ident && !next.is_word("FROM") =>
            {
                self.parse_typeof()?;
                self.parse_optional_alias()?;
                Ok(SelectItem {
                    typeof_expr: true,
                    ..SelectItem::other()
                })
            }
            Kind::Ident if token.is_word("DISTINCT") && next.kind == Kind::Ident => {
                Err(self.unexpected(token, "a field"))
            }
            Kind::Ident if token.is_word("TOP") && next.kind == Kind::Number => {
                Err(self.unexpected(token, "a field"))
            }
            Kind::Ident if next.kind == Kind::LParen => {
                let unbounded_fields = token.is_word("FIELDS")
                    && (self.peek_at(2).is_word("ALL") || self.peek_at(2).is_word("CUSTOM"));
                let count_rows = token.is_word("COUNT") && self.peek_at(2).kind == Kind::RParen;
                let aggregate = self.parse_function_call(Place::Top)?;
                let aliased = self.parse_optional_alias()?;
                Ok(SelectItem {
                    aggregate,
                    plain_field: false,
                    unbounded_fields,
                    count_rows,
                    aliased,
                    function: !token.is_word("FIELDS"),
                    typeof_expr: false,
                })
            }
            Kind::Ident => {
                self.parse_field_path("a field name")?;
                let aliased = self.parse_optional_alias()?;
                Ok(SelectItem {
                    plain_field: true,
                    aliased,
                    ..SelectItem::other()
                })
            }
            _ => Err(self.unexpected(
                token,
                "a field name, a function such as COUNT(Id), or a (SELECT ...) subquery",
            )),
        }
    }

    /// `(SELECT ... FROM Relationship ...)` in a SELECT list.
    pub(super) fn parse_child_subquery(&mut self) -> Result<(), SoqlError> {
        let open = self.advance();
        if !self.at_word("SELECT") {
            return Err(self.unexpected(
                self.peek(),
                "SELECT: a '(' in the SELECT list starts a child subquery, e.g. (SELECT LastName \
                 FROM Contacts)",
            ));
        }
        self.count_child_subquery(open)?;
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
    pub(super) fn parse_typeof(&mut self) -> Result<(), SoqlError> {
        self.advance();
        self.parse_field_path("the polymorphic field after TYPEOF, e.g. TYPEOF What")?;
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

    /// The fields after THEN or ELSE: fields and paths only, since Salesforce refuses TYPEOF in
    /// a query with functions in its SELECT clause (see [`super::server_rules`]).
    pub(super) fn parse_typeof_fields(&mut self) -> Result<(), SoqlError> {
        loop {
            let field = self.peek();
            if field.kind == Kind::Ident && self.peek_at(1).kind == Kind::LParen {
                return Err(self.typeof_with_function(field));
            }
            self.parse_field_path("a field name")?;
            if !self.eat(Kind::Comma) {
                return Ok(());
            }
        }
    }

    /// An alias after a field or function (`COUNT(Id) total`); reserved words and clause
    /// keywords are not aliases, they end the item. Returns whether there was one. A word SQL
    /// uses (`AS`, `DISTINCT`, `IS`) is an alias like any other unless another name follows it
    /// (`COUNT(Id) AS total`): then it is the SQL habit, and the hint says what to write.
    pub(super) fn parse_optional_alias(&mut self) -> Result<bool, SoqlError> {
        let token = self.peek();
        // BIND is Salesforce's keyword even where its clause cannot follow.
        if token.kind != Kind::Ident
            || token.is_any_word(RESERVED_WORDS)
            || token.is_any_word(GRAMMAR_KEYWORDS)
            || self.is_clause_start(0)
        {
            return Ok(false);
        }
        let next = self.peek_at(1);
        let name_follows = next.kind == Kind::Ident
            && !next.is_any_word(RESERVED_WORDS)
            && !self.is_clause_start(1);
        // AS is never an alias: SOQL has no AS at all.
        if let Some(hint) = sql_habit_hint(&token)
            && (name_follows || token.is_word("AS"))
        {
            return Err(self.error_at(token, hint));
        }
        self.advance();
        Ok(true)
    }

    // --- names and functions -----------------------------------------------------------------

    /// A dotted name (`Account.Owner.Name`, `ns__X__c`), returned as written minus whitespace.
    pub(super) fn parse_path(&mut self, expected: &str) -> Result<String, SoqlError> {
        let first = self.peek();
        if first.kind != Kind::Ident {
            return Err(self.unexpected(first, expected));
        }
        let dotted = self.peek_at(1).kind == Kind::Dot;
        self.refuse_reserved(first, expected, dotted)?;
        self.advance();
        let mut path = first.text.to_owned();
        while self.eat(Kind::Dot) {
            let segment = self.peek();
            if segment.kind != Kind::Ident {
                return Err(self.unexpected(segment, "a field or relationship name after '.'"));
            }
            self.refuse_reserved(segment, "a field or relationship name after '.'", true)?;
            self.advance();
            path.push('.');
            path.push_str(segment.text);
        }
        Ok(path)
    }

    /// A reserved word (`LIMIT`, `FROM`, ...) can name no field, relationship or object. The
    /// grammar's other keywords (`BY`, `UPDATE`, ...) can name nothing alone, but inside a
    /// dotted path (`Owner.By`, `Update.Name`) Salesforce's grammar reads them as names.
    fn refuse_reserved(
        &self,
        token: Token<'_>,
        expected: &str,
        dotted: bool,
    ) -> Result<(), SoqlError> {
        // `Group` is a standard object, whose name may also lead a path (Group.Name).
        let reserved = (token.is_any_word(RESERVED_WORDS) && !token.is_word("GROUP"))
            || (token.is_any_word(GRAMMAR_KEYWORDS) && !dotted);
        if token.is_word("AS") && !dotted {
            return Err(self.unexpected(token, expected));
        }
        if !reserved {
            return Ok(());
        }
        Err(self.error_at(
            token,
            format!(
                "{} is a reserved word in SOQL and can't be a name here: expected {expected}",
                token.text.to_ascii_uppercase()
            ),
        ))
    }

    /// A field or function used as a grouping or sort key, or on the left of a condition.
    pub(super) fn parse_operand(&mut self, expected: &str, place: Place) -> Result<(), SoqlError> {
        let token = self.peek();
        if token.kind != Kind::Ident || self.is_clause_start(0) {
            return Err(self.unexpected(token, expected));
        }
        if self.peek_at(1).kind == Kind::LParen {
            if token.is_word("FIELDS") {
                return Err(self.error_at(
                    token,
                    "FIELDS() only works in the SELECT list: name the fields here",
                ));
            }
            if token.is_word("COUNT") && self.peek_at(2).kind == Kind::RParen {
                return Err(self.error_at(
                    token,
                    "COUNT() only works alone in the SELECT list: write COUNT(Id) here",
                ));
            }
            self.parse_function_call(place)?;
        } else {
            self.parse_field_path(expected)?;
        }
        Ok(())
    }
}
