//! Properties of the SOQL validator over generated text: it always answers (never panics or
//! overflows the stack), and what it accepts lexes the same however it is spaced, so the tokens
//! it judged are the tokens Salesforce gets.

use super::lexer::Kind;
use super::tests::VALID;
use super::*;
use proptest::prelude::*;

/// The tokens of `text` as (kind, text) pairs, or `None` when lexing fails.
fn tokens(text: &str) -> Option<Vec<(Kind, String)>> {
    let (tokens, error) = Lexer::new(text).tokenize();
    if error.is_some() {
        return None;
    }
    Some(tokens.iter().map(|t| (t.kind, t.text.to_owned())).collect())
}

/// The same tokens joined by single spaces.
fn respaced(text: &str) -> String {
    let (tokens, _) = Lexer::new(text).tokenize();
    let texts: Vec<&str> = tokens.iter().map(|t| t.text).collect();
    texts.join(" ").trim_end().to_owned()
}

/// Checks an accepted query: it re-lexes to the same tokens once respaced, and the respaced
/// text is accepted as the same query.
fn assert_relexes(query: &str) -> Result<(), TestCaseError> {
    let original = tokens(query).expect("an accepted query lexes");
    let spaced = respaced(query);
    prop_assert_eq!(tokens(&spaced), Some(original), "respaced: {}", spaced);
    let again = validate(&spaced);
    prop_assert!(again.is_ok(), "{spaced}: {again:?}");
    let (before, after) = (validate(query).unwrap(), again.unwrap());
    prop_assert_eq!(before.object(), after.object());
    prop_assert_eq!(
        before.subquery_relationships(),
        after.subquery_relationships()
    );
    prop_assert_eq!(before.semi_join_objects(), after.semi_join_objects());
    Ok(())
}

/// SOQL-shaped fragments, so generated text reaches deep into the grammar rather than failing
/// on the first character.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "SELECT",
            "FROM",
            "WHERE",
            "AND",
            "OR",
            "NOT",
            "IN",
            "LIKE",
            "GROUP",
            "BY",
            "HAVING",
            "ORDER",
            "LIMIT",
            "OFFSET",
            "FOR",
            "VIEW",
            "UPDATE",
            "WITH",
            "TYPEOF",
            "WHEN",
            "THEN",
            "ELSE",
            "END",
            "USING",
            "SCOPE",
            "NULLS",
            "FIRST",
            "ASC",
            "(",
            ")",
            ",",
            ".",
            "*",
            "=",
            "!=",
            "<>",
            "<=",
            ">=",
            "<",
            ">",
            "Id",
            "Name",
            "Account",
            "Contacts",
            "COUNT",
            "FIELDS",
            "ALL",
            "TODAY",
            "LAST_N_DAYS:30",
            "null",
            "true",
            "-1.5",
            "42",
            "2024-01-31",
            "2024-01-31T09:00:00Z",
            "USD100.50",
            "'it''s'",
            "'a\\'b'",
            "'%_\\\\'",
        ])
        .prop_map(str::to_owned),
        "[a-zA-Z_][a-zA-Z0-9_]{0,6}",
        "'[^'\\\\]{0,6}'",
        "[-0-9.:TZ+]{1,8}",
        ".{0,3}",
    ]
}

fn soqlish() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(fragment(), 0..40),
        prop::sample::select(vec![" ", "\n", "\t", "  ", "\r\n"]),
    )
        .prop_map(|(parts, gap)| format!("SELECT Id FROM Account {}", parts.join(gap)))
}

/// SOQL's reserved keywords, which no field name can be.
const RESERVED: &[&str] = &[
    "AND",
    "AS",
    "ASC",
    "BY",
    "CUBE",
    "DESC",
    "ELSE",
    "END",
    "EXCLUDES",
    "FALSE",
    "FIRST",
    "FOR",
    "FROM",
    "GROUP",
    "HAVING",
    "IN",
    "INCLUDES",
    "LAST",
    "LIKE",
    "LIMIT",
    "NOT",
    "NULL",
    "NULLS",
    "OFFSET",
    "OR",
    "ORDER",
    "ROLLUP",
    "SELECT",
    "THEN",
    "TODAY",
    "TRUE",
    "TYPEOF",
    "UPDATE",
    "USING",
    "WHEN",
    "WHERE",
    "WITH",
    "YESTERDAY",
    "TOMORROW",
];

/// A condition of random shape: comparisons under parentheses, NOT, AND and OR.
fn condition() -> impl Strategy<Value = String> {
    // A field is never one of SOQL's reserved words ("Reserved Characters and Keywords" in the
    // SOQL and SOSL Reference): no org can have a field named FOR or LIMIT.
    let field = "[A-Z][a-zA-Z]{0,5}(\\.[A-Z][a-z]{0,4})?".prop_filter("a reserved word", |f| {
        !f.split('.')
            .any(|part| RESERVED.contains(&part.to_ascii_uppercase().as_str()))
    });
    let comparison = (
        field,
        prop::sample::select(vec!["=", "!=", "<", ">=", "LIKE"]),
        prop_oneof![
            "'([^'\\\\\r\n]|\\\\'|\\\\\\\\){0,8}'",
            "-?[0-9]{1,4}(\\.[0-9]{1,2})?",
            Just("TODAY".to_owned()),
            Just("null".to_owned()),
            Just("2024-01-31".to_owned()),
        ],
    )
        .prop_map(|(field, op, value)| format!("{field} {op} {value}"));
    comparison.prop_recursive(6, 24, 3, |inner| {
        prop_oneof![
            inner.clone().prop_map(|c| format!("({c})")),
            inner.clone().prop_map(|c| format!("NOT ({c})")),
            prop::collection::vec(inner.clone(), 2..4).prop_map(|cs| {
                let parts: Vec<String> = cs.iter().map(|c| format!("({c})")).collect();
                parts.join(" AND ")
            }),
            prop::collection::vec(inner, 2..4).prop_map(|cs| {
                let parts: Vec<String> = cs.iter().map(|c| format!("({c})")).collect();
                parts.join(" OR ")
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any text at all gets an answer.
    #[test]
    fn any_text_gets_an_answer(text in ".{0,200}") {
        let _ = validate(&text);
    }

    /// SOQL-shaped token soup gets an answer, and whatever passes re-lexes to itself.
    #[test]
    fn accepted_token_soup_relexes_to_the_same_tokens(query in soqlish()) {
        if validate(&query).is_ok() {
            assert_relexes(&query)?;
        }
    }

    /// Generated WHERE clauses (strings with escapes, nested parentheses, NOT, AND, OR) are
    /// accepted and re-lex to the same tokens.
    #[test]
    fn generated_conditions_are_accepted_and_relex(condition in condition()) {
        let query = format!("SELECT Id, Name FROM Account WHERE {condition} LIMIT 10");
        let checked = validate(&query);
        prop_assert!(checked.is_ok(), "{query}: {checked:?}");
        assert_relexes(&query)?;
    }

    /// Every documented query re-lexes to the same tokens, respaced with any whitespace.
    #[test]
    fn documented_queries_relex_to_the_same_tokens(
        query in prop::sample::select(VALID),
        gap in prop::sample::select(vec![" ", "\n", "\t ", "\r\n  "]),
    ) {
        assert_relexes(query)?;
        let (tokens_of, _) = Lexer::new(query).tokenize();
        let texts: Vec<&str> = tokens_of.iter().map(|t| t.text).collect();
        let spread = texts.join(gap);
        prop_assert_eq!(tokens(&spread), tokens(query));
        prop_assert!(validate(&spread).is_ok(), "{}", spread);
    }
}
