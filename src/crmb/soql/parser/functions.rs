//! Function calls, in the shapes Salesforce's SOQL grammar takes: one field or one nested call
//! per function (`FORMAT(MIN(Amount))`, two levels at most), `COUNT()`, `ROLLUP`/`CUBE` with
//! several keys in GROUP BY, and `DISTANCE(field, GEOLOCATION(lat, lon), 'unit')`.

use super::super::lexer::{Kind, Token};
use super::super::words::*;
use super::super::*;
use super::Parser;
use super::server_rules::FORMULA_ONLY_IN_WHERE;

/// Where a call stands, which decides what it may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in super::super) enum Place {
    /// A SELECT item, a condition's left side or a sort key.
    Top,
    /// A GROUP BY key: `ROLLUP(a, b)` and `CUBE(a)` are allowed, DISTANCE is not.
    GroupBy,
    /// A key inside ROLLUP or CUBE: like a top-level call, one nesting allowed.
    GroupingKey,
    /// The argument of another call: no further nesting.
    Argument,
}

const DISTANCE_EXAMPLE: &str = "DISTANCE(Location__c, GEOLOCATION(37.775, -122.418), 'mi')";

impl Parser<'_> {
    /// `NAME(args)`; returns whether an aggregate function is used, here or in its argument.
    pub(in super::super) fn parse_function_call(
        &mut self,
        place: Place,
    ) -> Result<bool, SoqlError> {
        let name = self.peek();
        let grouping = name.is_any_word(&["ROLLUP", "CUBE"]);
        if grouping && place != Place::GroupBy {
            return Err(self.error_at(
                name,
                format!(
                    "{}() only works as the whole GROUP BY, e.g. GROUP BY {0}(StageName, OwnerId)",
                    name.text.to_ascii_uppercase()
                ),
            ));
        }
        let keyword = (name.is_any_word(RESERVED_WORDS) && !name.is_word("GROUP"))
            || (name.is_any_word(GRAMMAR_KEYWORDS) && !grouping);
        if keyword {
            return Err(self.error_at(
                name,
                format!(
                    "{} is a SOQL keyword, not a function: remove the '(' after it, or name a \
                     function such as COUNT, SUM, FORMAT or toLabel",
                    name.text.to_ascii_uppercase()
                ),
            ));
        }
        if name.is_word("DISTANCE") {
            return self.parse_distance(place).map(|()| false);
        }
        // A WHERE condition's own FORMULA('a - b') never gets here: parse_comparison takes it.
        if name.is_word("FORMULA") {
            return Err(self.error_at(name, FORMULA_ONLY_IN_WHERE));
        }
        if name.is_word("GEOLOCATION") {
            return Err(self.error_at(
                name,
                format!(
                    "GEOLOCATION(latitude, longitude) only works as DISTANCE's second argument, \
                     e.g. {DISTANCE_EXAMPLE} < 10"
                ),
            ));
        }
        self.advance();
        let open = self.advance();
        if grouping {
            return self.parse_grouping_keys(name, open);
        }
        let function = name.text.to_ascii_uppercase();
        if self.at(Kind::RParen) && !name.is_word("COUNT") {
            return Err(self.error_at(
                self.peek(),
                format!("{function}() needs one field in its parentheses, e.g. {function}(Amount)"),
            ));
        }
        if self.at_word("SELECT") {
            return Err(self.error_at(
                name,
                "a '(' after a name is read as a function call: put a ',' before a (SELECT \
                 ...) subquery",
            ));
        }
        let mut aggregate = is_aggregate_function(name.text);
        if !self.at(Kind::RParen) {
            aggregate |= self.parse_function_argument(name, place)?;
        }
        if self.at(Kind::Comma) {
            return Err(self.error_at(
                self.peek(),
                format!(
                    "{function}() takes exactly one field (only DISTANCE takes several \
                     arguments): remove the extra ones"
                ),
            ));
        }
        self.expect_close(open)?;
        Ok(aggregate)
    }

    /// The one argument of an ordinary function: a field, or (one level down) a function call.
    fn parse_function_argument(
        &mut self,
        function: Token<'_>,
        place: Place,
    ) -> Result<bool, SoqlError> {
        let token = self.peek();
        let upper = function.text.to_ascii_uppercase();
        match token.kind {
            Kind::Star if function.is_word("COUNT") => Err(self.error_at(
                token,
                "COUNT(*) is not SOQL: use COUNT() to count rows, or COUNT(Id)",
            )),
            Kind::Ident if self.peek_at(1).kind == Kind::LParen => {
                if place == Place::Argument {
                    return Err(self.error_at(
                        token,
                        format!(
                            "functions nest at most two deep in SOQL, e.g. FORMAT(MIN(Amount)): \
                             drop the innermost call inside {upper}()"
                        ),
                    ));
                }
                self.parse_function_call(Place::Argument)
            }
            Kind::Ident => self.parse_field_path("a field name").map(|_| false),
            Kind::Str
            | Kind::Number
            | Kind::Date
            | Kind::DateTime
            | Kind::Time
            | Kind::DateLiteralN
            | Kind::Currency => Err(self.error_at(
                token,
                format!("{upper}() takes a field, not a value: write the field's name"),
            )),
            _ => Err(self.unexpected(token, "a field or function inside the parentheses")),
        }
    }

    /// The keys inside `ROLLUP(...)` / `CUBE(...)`: fields or calls, at least one.
    fn parse_grouping_keys(&mut self, name: Token<'_>, open: Token<'_>) -> Result<bool, SoqlError> {
        if self.at(Kind::RParen) {
            return Err(self.error_at(
                self.peek(),
                format!(
                    "{}() needs the fields to group by, e.g. {0}(StageName)",
                    name.text.to_ascii_uppercase()
                ),
            ));
        }
        let mut aggregate = false;
        loop {
            if self.peek().kind == Kind::Ident && self.peek_at(1).kind == Kind::LParen {
                aggregate |= self.parse_function_call(Place::GroupingKey)?;
            } else {
                self.parse_field_path("a field to group by")?;
            }
            if !self.eat(Kind::Comma) {
                break;
            }
        }
        self.expect_close(open)?;
        Ok(aggregate)
    }

    /// `DISTANCE(field, GEOLOCATION(lat, lon), 'mi' | 'km')`, which stands alone: in the SELECT
    /// list, a condition or ORDER BY, never inside another call or in GROUP BY.
    fn parse_distance(&mut self, place: Place) -> Result<(), SoqlError> {
        let name = self.advance();
        if place != Place::Top {
            return Err(self.error_at(
                name,
                format!(
                    "DISTANCE() works only on its own in the SELECT list, a WHERE condition or \
                     ORDER BY, not inside another function or in GROUP BY: e.g. ORDER BY \
                     {DISTANCE_EXAMPLE}"
                ),
            ));
        }
        let shape = |parser: &Self, token: Token<'_>| {
            parser.error_at(
                token,
                format!(
                    "DISTANCE takes a location field, GEOLOCATION(latitude, longitude) and the \
                     unit 'mi' or 'km', e.g. {DISTANCE_EXAMPLE}"
                ),
            )
        };
        let open = self.advance();
        if self.peek().kind != Kind::Ident || self.peek_at(1).kind == Kind::LParen {
            return Err(shape(self, self.peek()));
        }
        self.parse_field_path("a location field")?;
        if !self.eat(Kind::Comma) || !self.at_word("GEOLOCATION") {
            return Err(shape(self, self.peek()));
        }
        self.advance();
        let geo_open = self.peek();
        if !self.eat(Kind::LParen) {
            return Err(shape(self, geo_open));
        }
        for index in 0..2 {
            let coordinate = self.peek();
            if coordinate.kind != Kind::Number {
                return Err(self.error_at(
                    coordinate,
                    "GEOLOCATION takes two numbers, latitude then longitude, e.g. \
                     GEOLOCATION(37.775, -122.418)",
                ));
            }
            self.advance();
            if index == 0 && !self.eat(Kind::Comma) {
                return Err(shape(self, self.peek()));
            }
        }
        self.expect_close(geo_open)?;
        if !self.eat(Kind::Comma) || !self.at(Kind::Str) {
            return Err(shape(self, self.peek()));
        }
        self.advance();
        if self.at(Kind::Comma) {
            return Err(shape(self, self.peek()));
        }
        self.expect_close(open)
    }
}
