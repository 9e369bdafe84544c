//! Properties of the opaque query cursor: what `encode` writes parses back to the same cursor,
//! and no other text is taken for one.

use super::*;
use proptest::prelude::*;

const QUERY: &str = "SELECT Id, Name FROM Opportunity";

fn cursor() -> impl Strategy<Value = Cursor> {
    ("[a-zA-Z0-9]{15,18}", 0..1_000_000_000_000u64).prop_map(|(id, offset)| {
        let query = soql::validate(QUERY).unwrap();
        Cursor::new(Locator { id, offset }, &query)
    })
}

/// Small edits of the offset or the fingerprint that keep a cursor's shape but not its exact
/// text (an edited locator id can be another valid id, so it is left alone).
fn edited(encoded: &str, edit: usize, offset: bool) -> String {
    let mut parts: Vec<String> = encoded.split('.').map(str::to_owned).collect();
    let i = if offset { 2 } else { 3 };
    parts[i] = match edit % 3 {
        0 => format!("+{}", parts[i]),
        1 => format!("0{}", parts[i]),
        _ => format!("{}x", parts[i]),
    };
    parts.join(".")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn an_encoded_cursor_parses_back_to_itself(cursor in cursor()) {
        let query = soql::validate(QUERY).unwrap();
        prop_assert_eq!(Cursor::parse(&cursor.encode(), &query), Ok(cursor));
    }

    /// Any text that parses is exactly what `encode` writes for it (whitespace aside);
    /// everything else is invalid input.
    #[test]
    fn any_other_text_is_invalid_input(text in prop_oneof![
        ".{0,60}",
        "sfq1\\.[a-zA-Z0-9+]{0,20}\\.[-+0-9]{0,14}\\.[+0-9a-fA-F]{0,18}",
    ]) {
        let query = soql::validate(QUERY).unwrap();
        match Cursor::parse(&text, &query) {
            Ok(cursor) => prop_assert_eq!(cursor.encode(), text.trim()),
            Err(err) => prop_assert!(matches!(err, ToolError::InvalidInput(_)), "{:?}", err),
        }
    }

    /// A sign, a leading zero or a stray character: refused, though `u64` parsing alone would
    /// take the first two.
    #[test]
    fn an_edited_cursor_is_refused(cursor in cursor(), edit in 0..3usize, offset: bool) {
        let query = soql::validate(QUERY).unwrap();
        let text = edited(&cursor.encode(), edit, offset);
        let parsed = Cursor::parse(&text, &query);
        prop_assert!(matches!(parsed, Err(ToolError::InvalidInput(_))), "{}: {:?}", text, parsed);
    }
}
