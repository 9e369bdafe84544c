//! The SOQL lexer: positions, token kinds and tokens, read in one pass.

use super::words::*;
use super::*;

// ---------------------------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------------------------

/// A 1-based line and column, in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Pos {
    pub(super) line: usize,
    pub(super) column: usize,
}

impl Pos {
    pub(super) const START: Pos = Pos { line: 1, column: 1 };

    /// Moves past `c`; `\r\n`, `\n` and a lone `\r` each end a line.
    pub(super) fn advance(&mut self, c: char, next: Option<char>) {
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
pub(super) enum Kind {
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
    /// `09:30:00Z`, `09:30:00.000+05:30`: a Time field's value.
    Time,
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
pub(super) struct Token<'a> {
    pub(super) kind: Kind,
    pub(super) text: &'a str,
    pub(super) pos: Pos,
}

impl Token<'_> {
    /// Whether this is the keyword `word` (keywords are case-insensitive).
    pub(super) fn is_word(&self, word: &str) -> bool {
        self.kind == Kind::Ident && self.text.eq_ignore_ascii_case(word)
    }

    pub(super) fn is_any_word(&self, words: &[&str]) -> bool {
        words.iter().any(|word| self.is_word(word))
    }

    /// How the token is named in an error message.
    pub(super) fn describe(&self) -> String {
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

pub(super) struct Lexer<'a> {
    pub(super) src: &'a str,
    pub(super) chars: Vec<(usize, char)>,
    pub(super) index: usize,
    pub(super) pos: Pos,
}

impl<'a> Lexer<'a> {
    pub(super) fn new(src: &'a str) -> Self {
        Lexer {
            src,
            chars: src.char_indices().collect(),
            index: 0,
            pos: Pos::START,
        }
    }

    /// Splits the text into tokens, ending with `Eof`, or with `Invalid` plus the error if a
    /// character or literal is malformed (the parser decides which error to show first).
    pub(super) fn tokenize(mut self) -> (Vec<Token<'a>>, Option<SoqlError>) {
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

    pub(super) fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.index + ahead).map(|&(_, c)| c)
    }

    pub(super) fn peek_is(&self, ahead: usize, test: impl Fn(char) -> bool) -> bool {
        self.peek(ahead).is_some_and(test)
    }

    pub(super) fn bump(&mut self) {
        if let Some(c) = self.peek(0) {
            let next = self.peek(1);
            self.pos.advance(c, next);
            self.index += 1;
        }
    }

    pub(super) fn eat(&mut self, expected: char) -> bool {
        let found = self.peek(0) == Some(expected);
        if found {
            self.bump();
        }
        found
    }

    pub(super) fn byte_offset(&self) -> usize {
        self.chars
            .get(self.index)
            .map_or(self.src.len(), |&(offset, _)| offset)
    }

    /// Only plain ASCII whitespace separates tokens; anything fancier is reported, because
    /// Salesforce would choke on it too.
    pub(super) fn skip_whitespace(&mut self) {
        while self.peek_is(0, |c| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0C')) {
            self.bump();
        }
    }

    pub(super) fn skip_while(&mut self, test: impl Fn(char) -> bool) -> usize {
        let mut count = 0;
        while self.peek_is(0, &test) {
            self.bump();
            count += 1;
        }
        count
    }

    pub(super) fn lex_token(&mut self) -> Result<Kind, SoqlError> {
        let start = self.pos;
        let c = self.peek(0).unwrap_or(' ');
        let single = match c {
            '(' => Some(Kind::LParen),
            ')' => Some(Kind::RParen),
            ',' => Some(Kind::Comma),
            '.' if !self.peek_is(1, |c| c.is_ascii_digit()) => Some(Kind::Dot),
            '*' => Some(Kind::Star),
            _ => None,
        };
        if let Some(kind) = single {
            self.bump();
            return Ok(kind);
        }
        let digit = |c: char| c.is_ascii_digit();
        match c {
            c if c.is_ascii_alphabetic() || c == '_' => self.lex_word(),
            c if c.is_ascii_digit() => self.lex_number_or_date(),
            // `.5`, and signed numbers: `-7`, `+5`, `-.5` (Salesforce reads them all).
            '.' if self.peek_is(1, digit) => self.lex_number_or_date(),
            '-' | '+' if self.sign_then_number() => self.lex_number_or_date(),
            '\'' => self.lex_string(),
            '=' | '!' | '<' | '>' => self.lex_operator(),
            _ => Err(SoqlError::at(
                start,
                unexpected_char_reason(self.peek(1), c),
            )),
        }
    }

    /// Names, keywords, date literals (`LAST_N_DAYS:30`) and currency amounts (`EUR100.50`).
    pub(super) fn lex_word(&mut self) -> Result<Kind, SoqlError> {
        let start_byte = self.byte_offset();
        self.skip_while(is_word_char);
        let word = &self.src[start_byte..self.byte_offset()];
        if self.peek(0) == Some(':') {
            return self.lex_date_literal_n(word);
        }
        // `NEXT_N_DAYS :5`: Salesforce lets whitespace stand before the colon.
        if is_n_date_literal(word) {
            let mut ahead = 0;
            while self.peek_is(ahead, |c| matches!(c, ' ' | '\t' | '\n' | '\r')) {
                ahead += 1;
            }
            if ahead > 0 && self.peek(ahead) == Some(':') {
                self.skip_whitespace();
                return self.lex_date_literal_n(word);
            }
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
    pub(super) fn lex_date_literal_n(&mut self, word: &str) -> Result<Kind, SoqlError> {
        let colon = self.pos;
        if is_fixed_date_literal(word) {
            return Err(SoqlError::at(
                colon,
                format!(
                    "{} takes no number: only the N date literals do, e.g. LAST_N_DAYS:30 \
                     (remove ':' and what follows, or use the N form)",
                    word.to_ascii_uppercase()
                ),
            ));
        }
        if !is_n_date_literal(word) && looks_like_date_literal(word) {
            return Err(SoqlError::at(colon, unknown_date_literal(word)));
        }
        if !is_n_date_literal(word) {
            return Err(SoqlError::at(
                colon,
                unexpected_char_reason(self.peek(1), ':'),
            ));
        }
        self.bump();
        self.skip_whitespace();
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

    /// Whether a `-` or `+` here signs a number, whitespace between allowed (`- 5`, `+.5`):
    /// Salesforce's grammar reads the sign as its own token.
    fn sign_then_number(&self) -> bool {
        let mut ahead = 1;
        while self.peek_is(ahead, |c| matches!(c, ' ' | '\t' | '\n' | '\r')) {
            ahead += 1;
        }
        let digit = |c: char| c.is_ascii_digit();
        self.peek_is(ahead, digit)
            || (self.peek(ahead) == Some('.') && self.peek_is(ahead + 1, digit))
    }

    /// Numbers (`42`, `-7`, `3.14`), dates, datetimes and times, all unquoted in SOQL.
    pub(super) fn lex_number_or_date(&mut self) -> Result<Kind, SoqlError> {
        let start = self.pos;
        let signed = self.eat('-') || self.eat('+');
        if signed {
            self.skip_whitespace();
        }
        let digits = self.skip_while(|c| c.is_ascii_digit());
        let kind = if !signed && digits == 4 && self.peek(0) == Some('-') {
            self.lex_date_after_year(start)?
        } else if !signed && digits == 2 && self.peek(0) == Some(':') {
            self.lex_time_after_hour(start)?
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
    pub(super) fn lex_date_after_year(&mut self, start: Pos) -> Result<Kind, SoqlError> {
        let malformed = || SoqlError::at(start, MALFORMED_DATE);
        let month = self.dash_then_digits(2).ok_or_else(malformed)?;
        let day = self.dash_then_digits(2).ok_or_else(malformed)?;
        if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
            return Err(malformed());
        }
        // The separator and the UTC mark in either case, as Salesforce reads them.
        if !(self.peek_is(0, |c| c == 'T' || c == 't') && self.peek_is(1, |c| c.is_ascii_digit())) {
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

    /// The rest of a time `hh:mm:ss[.fff](Z|+hh:mm|-hh:mm)`, the value of a Time field
    /// (`StartTime__c > 09:30:00Z`); a bare `hh:mm` or a time without a zone is no SOQL.
    pub(super) fn lex_time_after_hour(&mut self, start: Pos) -> Result<Kind, SoqlError> {
        let malformed = || {
            SoqlError::at(
                start,
                "malformed time: write times as hh:mm:ss with a time zone, e.g. 09:30:00Z or \
                 09:30:00.000+05:30, without quotes",
            )
        };
        let hour: u32 = self.src[self.byte_offset() - 2..self.byte_offset()]
            .parse()
            .map_err(|_| malformed())?;
        let minute = self.colon_then_digits(2).ok_or_else(malformed)?;
        let second = self.colon_then_digits(2).ok_or_else(malformed)?;
        if hour > 23 || minute > 59 || second > 59 {
            return Err(malformed());
        }
        if self.eat('.') && self.skip_while(|c| c.is_ascii_digit()) == 0 {
            return Err(malformed());
        }
        if !self.peek_is(0, |c| matches!(c, 'Z' | 'z' | '+' | '-')) {
            return Err(malformed());
        }
        self.lex_time_zone(start)?;
        Ok(Kind::Time)
    }

    /// `Z`, or an offset `+hh:mm` / `-hh:mm` / `+hhmm`, which Salesforce requires on every
    /// datetime (its own answers write `+0000`).
    pub(super) fn lex_time_zone(&mut self, start: Pos) -> Result<(), SoqlError> {
        if self.eat('Z') || self.eat('z') {
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
        let minutes = if self.peek(0) == Some(':') {
            self.colon_then_digits(2)
        } else {
            self.digits(2)
        };
        match (hours, minutes) {
            (Some(h), Some(m)) if h <= 23 && m <= 59 => Ok(()),
            _ => Err(SoqlError::at(start, MALFORMED_DATE)),
        }
    }

    /// Exactly `count` digits, as a number.
    pub(super) fn digits(&mut self, count: usize) -> Option<u32> {
        let mut value = 0;
        for _ in 0..count {
            let digit = self.peek(0)?.to_digit(10)?;
            self.bump();
            value = value * 10 + digit;
        }
        Some(value)
    }

    pub(super) fn dash_then_digits(&mut self, count: usize) -> Option<u32> {
        if self.eat('-') {
            self.digits(count)
        } else {
            None
        }
    }

    pub(super) fn colon_then_digits(&mut self, count: usize) -> Option<u32> {
        if self.eat(':') {
            self.digits(count)
        } else {
            None
        }
    }

    /// A single-quoted string; only the escapes Salesforce documents are allowed, since any
    /// other backslash is an error there too.
    pub(super) fn lex_string(&mut self) -> Result<Kind, SoqlError> {
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
                // A raw line feed ends the string for Salesforce's lexer; a raw carriage
                // return is an ordinary character to it.
                Some('\n') => {
                    return Err(SoqlError::at(
                        self.pos,
                        "a string cannot span lines: write a line break inside it as \\n",
                    ));
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
    pub(super) fn lex_escape(&mut self, escape_at: Pos) -> Result<(), SoqlError> {
        match self.peek(0) {
            // The escapes "Quoted String Escape Sequences" lists, \f and \F (form feed)
            // included, though the ANTLR grammar refuses those two (issue 37):
            // https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_select_quotedstringescapes.htm
            Some('n' | 'N' | 'r' | 'R' | 't' | 'T' | 'b' | 'B' | 'f' | 'F' | '"' | '\'' | '\\')
            | Some('_' | '%') => {
                self.bump();
                Ok(())
            }
            Some('u' | 'U') => {
                self.bump();
                let digits_at = self.index;
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
                let digits: String = self.chars[digits_at..self.index]
                    .iter()
                    .map(|&(_, c)| c)
                    .collect();
                if digits.eq_ignore_ascii_case("FFFF") {
                    return Err(SoqlError::at(
                        escape_at,
                        "\\uFFFF is not a character (Salesforce refuses it): remove it",
                    ));
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

    pub(super) fn lex_operator(&mut self) -> Result<Kind, SoqlError> {
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
}
