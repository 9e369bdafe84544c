//! Any text as a query cursor: only the exact text `encode` writes is accepted (surrounding
//! whitespace aside), and it parses back to the same cursor; everything else is invalid input.
#![no_main]

use crm_plugin::crmb::query::Cursor;
use crm_plugin::crmb::soql;
use crm_plugin::error::ToolError;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let query = soql::validate("SELECT Id FROM Account").expect("a valid query");
    match Cursor::parse(text, &query) {
        Ok(cursor) => {
            assert_eq!(cursor.encode(), text.trim());
            assert_eq!(Cursor::parse(&cursor.encode(), &query), Ok(cursor));
        }
        Err(err) => assert!(matches!(err, ToolError::InvalidInput(_)), "{err:?}"),
    }
});
