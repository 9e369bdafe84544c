//! Any text as a Salesforce id: parsing never panics, an accepted id is 15 or 18 letters and
//! digits, parses again to itself, and its case-folded 18-character form recovers it.
#![no_main]

use crm_plugin::crmb::ids::SalesforceId;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(id) = SalesforceId::parse(text) else {
        return;
    };
    let s = id.as_str();
    assert!(matches!(s.len(), 15 | 18), "{s}");
    assert!(s.bytes().all(|b| b.is_ascii_alphanumeric()));
    assert_eq!(SalesforceId::parse(s).as_ref(), Ok(&id));
    let long = id.to_18();
    assert_eq!(long.as_str().len(), 18);
    assert_eq!(&long.as_str()[..15], &s[..15]);
    for folded in [
        long.as_str().to_ascii_lowercase(),
        long.as_str().to_ascii_uppercase(),
    ] {
        let restored = SalesforceId::parse(&folded);
        // A folded id recovers the original wherever the checksum can say where capitals are:
        // always, since a body folded to one case has no mixed letters to misplace.
        assert_eq!(restored.as_ref(), Ok(&long), "{folded}");
    }
});
