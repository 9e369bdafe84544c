//! The sandbox's SOQL evaluator: the subset demo questions need, `SELECT fields (incl.
//! Parent.Field) FROM Object [WHERE field op value {AND|OR ...}] [ORDER BY field [ASC|DESC]]
//! [LIMIT n]`, `COUNT()`, with `= != < <= > >= LIKE IN` and the date literals TODAY,
//! THIS_MONTH, NEXT_MONTH, LAST_MONTH, THIS_YEAR, evaluated against the sandbox's fixed today.

use super::TODAY;
use serde_json::{Value, json};

/// Orders JSON values: numbers numerically, everything else as text.
pub(super) fn compare(a: &Value, b: &Value) -> std::cmp::Ordering {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal),
        _ => text(a).cmp(&text(b)),
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_ascii_lowercase(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A parsed `SELECT` of the sandbox's subset.
#[derive(Debug)]
pub(super) struct Select {
    pub(super) fields: Vec<String>,
    pub(super) object: String,
    pub(super) count_only: bool,
    /// OR of AND groups.
    pub(super) conditions: Vec<Vec<Condition>>,
    pub(super) order_by: Option<(String, bool)>,
    pub(super) limit: Option<usize>,
}

#[derive(Debug, Clone)]
pub(super) struct Condition {
    pub(super) field: String,
    pub(super) op: String,
    pub(super) value: Literal,
}

#[derive(Debug, Clone)]
pub(super) enum Literal {
    Scalar(Value),
    List(Vec<Value>),
    /// A date range [start, end) from a date literal.
    Range(String, String),
}

/// Splits SOQL into words, keeping quoted strings and `(`, `)`, `,` and operators apart.
fn tokens(soql: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut chars = soql.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '\'' {
            chars.next();
            let mut s = String::from("'");
            loop {
                match chars.next() {
                    Some('\\') => s.extend(chars.next()),
                    Some('\'') => break,
                    Some(ch) => s.push(ch),
                    None => return Err("unterminated string".into()),
                }
            }
            out.push(s);
        } else if "(),".contains(c) {
            out.push(chars.next().unwrap().to_string());
        } else if "=<>!".contains(c) {
            let mut op = chars.next().unwrap().to_string();
            if chars.peek().is_some_and(|n| *n == '=' || *n == '>') {
                op.push(chars.next().unwrap());
            }
            out.push(op);
        } else {
            let mut word = String::new();
            while let Some(&ch) = chars.peek() {
                if ch.is_whitespace() || "(),=<>!'".contains(ch) {
                    break;
                }
                word.push(ch);
                chars.next();
            }
            out.push(word);
        }
    }
    Ok(out)
}

impl Select {
    pub(super) fn parse(soql: &str) -> Result<Self, String> {
        let tokens = tokens(soql)?;
        let upper: Vec<String> = tokens.iter().map(|t| t.to_ascii_uppercase()).collect();
        let at = |word: &str| upper.iter().position(|t| t == word);
        if upper.first().map(String::as_str) != Some("SELECT") {
            return Err("the sandbox answers SELECT queries only".into());
        }
        let from = at("FROM").ok_or("unexpected token: missing FROM")?;
        let select: Vec<&String> = tokens[1..from].iter().filter(|t| *t != ",").collect();
        let count_only = upper[1..from].join("") == "COUNT()";
        let object = tokens.get(from + 1).ok_or("FROM needs an object")?.clone();
        let clause_end = |start: usize| {
            upper[start..]
                .iter()
                .position(|t| matches!(t.as_str(), "WHERE" | "ORDER" | "LIMIT"))
                .map_or(upper.len(), |p| p + start)
        };
        let mut conditions = Vec::new();
        if let Some(w) = at("WHERE") {
            let end = clause_end(w + 1);
            conditions = parse_conditions(&tokens[w + 1..end])?;
        }
        let order_by = match at("ORDER") {
            Some(o) if upper.get(o + 1).map(String::as_str) == Some("BY") => {
                let field = tokens.get(o + 2).ok_or("ORDER BY needs a field")?.clone();
                Some((field, upper.get(o + 3).map(String::as_str) == Some("DESC")))
            }
            Some(_) => return Err("expected BY after ORDER".into()),
            None => None,
        };
        let limit = match at("LIMIT") {
            Some(l) => Some(
                tokens
                    .get(l + 1)
                    .and_then(|n| n.parse().ok())
                    .ok_or("LIMIT needs a number")?,
            ),
            None => None,
        };
        if !count_only
            && (select.is_empty() || select.iter().any(|f| f.contains('(') || f.starts_with('(')))
        {
            return Err("the sandbox answers plain field lists and COUNT() only".into());
        }
        Ok(Select {
            fields: if count_only {
                vec![]
            } else {
                select.into_iter().cloned().collect()
            },
            object,
            count_only,
            conditions,
            order_by,
            limit,
        })
    }

    pub(super) fn matches(&self, row: &Value) -> bool {
        self.conditions.is_empty()
            || self
                .conditions
                .iter()
                .any(|group| group.iter().all(|c| c.holds(row)))
    }
}

/// A WHERE clause as an OR of AND groups: parentheses are multiplied out, so
/// `(WhoId = 'a' OR WhatId = 'a') AND CreatedDate < x` is two groups of two.
fn parse_conditions(tokens: &[String]) -> Result<Vec<Vec<Condition>>, String> {
    let mut at = 0;
    let groups = any_of(tokens, &mut at)?;
    match tokens.get(at) {
        None => Ok(groups),
        Some(extra) => Err(format!("unexpected token: '{extra}'")),
    }
}

fn is_word(tokens: &[String], at: usize, word: &str) -> bool {
    tokens.get(at).is_some_and(|t| t.eq_ignore_ascii_case(word))
}

/// Terms joined by OR.
fn any_of(tokens: &[String], at: &mut usize) -> Result<Vec<Vec<Condition>>, String> {
    let mut groups = all_of(tokens, at)?;
    while is_word(tokens, *at, "OR") {
        *at += 1;
        groups.extend(all_of(tokens, at)?);
    }
    Ok(groups)
}

/// Factors joined by AND, multiplied out.
fn all_of(tokens: &[String], at: &mut usize) -> Result<Vec<Vec<Condition>>, String> {
    let mut groups = factor(tokens, at)?;
    while is_word(tokens, *at, "AND") {
        *at += 1;
        let right = factor(tokens, at)?;
        groups = groups
            .iter()
            .flat_map(|left| {
                right.iter().map(move |r| {
                    let mut both = left.clone();
                    both.extend(r.iter().cloned());
                    both
                })
            })
            .collect();
    }
    Ok(groups)
}

/// A parenthesised clause or one condition.
fn factor(tokens: &[String], at: &mut usize) -> Result<Vec<Vec<Condition>>, String> {
    if tokens.get(*at).is_some_and(|t| t == "(") {
        *at += 1;
        let groups = any_of(tokens, at)?;
        if tokens.get(*at).is_none_or(|t| t != ")") {
            return Err("expecting a right parentheses, found end of WHERE".into());
        }
        *at += 1;
        return Ok(groups);
    }
    let (condition, used) = condition(&tokens[*at..])?;
    *at += used;
    Ok(vec![vec![condition]])
}

/// One `field op value` condition at the start of `tokens`, and how many tokens it took.
fn condition(tokens: &[String]) -> Result<(Condition, usize), String> {
    let field = tokens.first().ok_or("a condition needs a field")?.clone();
    let op = tokens
        .get(1)
        .ok_or("a condition needs an operator")?
        .to_ascii_uppercase();
    let (value, used) = if op == "IN" {
        let close = tokens[2..]
            .iter()
            .position(|t| t == ")")
            .ok_or("IN needs a closing parenthesis")?;
        let list = tokens[3..2 + close]
            .iter()
            .filter(|t| *t != ",")
            .map(|t| literal(t))
            .collect::<Result<Vec<_>, _>>()?;
        (
            Literal::List(
                list.into_iter()
                    .filter_map(|l| match l {
                        Literal::Scalar(v) => Some(v),
                        _ => None,
                    })
                    .collect(),
            ),
            close + 3,
        )
    } else {
        (
            literal(tokens.get(2).ok_or("a condition needs a value")?)?,
            3,
        )
    };
    if !["=", "!=", "<>", "<", "<=", ">", ">=", "LIKE", "IN"].contains(&op.as_str()) {
        return Err(format!("unexpected token: '{op}'"));
    }
    Ok((Condition { field, op, value }, used))
}

fn literal(token: &str) -> Result<Literal, String> {
    if let Some(s) = token.strip_prefix('\'') {
        return Ok(Literal::Scalar(Value::String(s.to_string())));
    }
    let upper = token.to_ascii_uppercase();
    match upper.as_str() {
        "TRUE" => return Ok(Literal::Scalar(Value::Bool(true))),
        "FALSE" => return Ok(Literal::Scalar(Value::Bool(false))),
        "NULL" => return Ok(Literal::Scalar(Value::Null)),
        _ => {}
    }
    if let Some(range) = date_literal(&upper) {
        return Ok(range);
    }
    if let Ok(n) = token.parse::<f64>() {
        return Ok(Literal::Scalar(json!(n)));
    }
    if token.len() >= 10 && token.as_bytes()[4] == b'-' {
        return Ok(Literal::Scalar(Value::String(token.to_string())));
    }
    Err(format!("unexpected token: '{token}'"))
}

/// Date literals as [start, end) ranges around [`TODAY`].
fn date_literal(word: &str) -> Option<Literal> {
    let (y, m, d) = TODAY;
    let month = |y: i32, m: u32| format!("{y:04}-{m:02}-01");
    let next = |y: i32, m: u32| if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    let prev = |y: i32, m: u32| if m == 1 { (y - 1, 12) } else { (y, m - 1) };
    let (start, end) = match word {
        "TODAY" => (
            format!("{y:04}-{m:02}-{d:02}"),
            format!("{y:04}-{m:02}-{:02}", d + 1),
        ),
        "THIS_MONTH" => (month(y, m), {
            let (ny, nm) = next(y, m);
            month(ny, nm)
        }),
        "NEXT_MONTH" => {
            let (ny, nm) = next(y, m);
            let (ay, am) = next(ny, nm);
            (month(ny, nm), month(ay, am))
        }
        "LAST_MONTH" => {
            let (py, pm) = prev(y, m);
            (month(py, pm), month(y, m))
        }
        "THIS_YEAR" => (format!("{y:04}-01-01"), format!("{:04}-01-01", y + 1)),
        _ => return None,
    };
    Some(Literal::Range(start, end))
}

impl Condition {
    fn holds(&self, row: &Value) -> bool {
        // The sandbox's rows are never deleted or archived: the system checkboxes read false.
        let unset_flag = Value::Bool(false);
        let actual = match &row[self.field.as_str()] {
            Value::Null if matches!(self.field.as_str(), "IsDeleted" | "IsArchived") => &unset_flag,
            actual => actual,
        };
        match &self.value {
            Literal::Range(start, end) => {
                let Some(value) = actual.as_str() else {
                    return false;
                };
                let day = &value[..value.len().min(10)];
                match self.op.as_str() {
                    "=" => day >= start.as_str() && day < end.as_str(),
                    "!=" | "<>" => !(day >= start.as_str() && day < end.as_str()),
                    "<" => day < start.as_str(),
                    "<=" => day < end.as_str(),
                    ">" => day >= end.as_str(),
                    ">=" => day >= start.as_str(),
                    _ => false,
                }
            }
            Literal::List(values) => values.iter().any(|v| compare(actual, v).is_eq()),
            Literal::Scalar(expected) => {
                let order = compare(actual, expected);
                match self.op.as_str() {
                    "=" => {
                        if expected.is_null() {
                            actual.is_null()
                        } else {
                            order.is_eq()
                        }
                    }
                    "!=" | "<>" => {
                        if expected.is_null() {
                            !actual.is_null()
                        } else {
                            !order.is_eq()
                        }
                    }
                    "<" => !actual.is_null() && order.is_lt(),
                    "<=" => !actual.is_null() && order.is_le(),
                    ">" => !actual.is_null() && order.is_gt(),
                    ">=" => !actual.is_null() && order.is_ge(),
                    "LIKE" => like(&text(actual), &text(expected)),
                    _ => false,
                }
            }
        }
    }
}

/// `LIKE` with `%` wildcards, case-insensitive.
fn like(value: &str, pattern: &str) -> bool {
    let parts: Vec<&str> = pattern.split('%').collect();
    let mut rest = value;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(part) else {
                return false;
            };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            let Some(at) = rest.find(part) else {
                return false;
            };
            rest = &rest[at + part.len()..];
        }
    }
    rest.is_empty()
}
