//! Any text through the SOQL validator: it answers, never panics or overflows the stack, and
//! what it accepts is sent exactly as written.
#![no_main]

use crm_plugin::crmb::soql;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(query) = soql::validate(text) {
        assert_eq!(query.text(), text);
        assert!(!query.object().is_empty());
    }
});
