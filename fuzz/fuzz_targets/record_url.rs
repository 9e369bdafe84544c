//! Record links from any instance URL, object name and id (one per line): whatever the parsers
//! accept gives a link on the same or the matching Lightning host whose path is exactly the
//! object and id, never more or fewer segments.
#![no_main]

use crm_plugin::crmb::ids::{ApiName, SalesforceId};
use crm_plugin::crmb::record_url::InstanceUrl;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.splitn(3, '\n');
    let (Some(instance), Some(object), Some(id)) = (lines.next(), lines.next(), lines.next())
    else {
        return;
    };
    let (Ok(instance), Ok(object), Ok(id)) = (
        InstanceUrl::parse(instance),
        ApiName::parse(object),
        SalesforceId::parse(id),
    ) else {
        return;
    };
    let url = instance.record_url(&object, &id);
    assert_eq!(url.scheme(), "https");
    assert_eq!(url.query(), None);
    assert_eq!(url.fragment(), None);
    let segments: Vec<&str> = url.path_segments().unwrap().collect();
    let lightning = ["lightning", "r", object.as_str(), id.as_str(), "view"];
    assert!(segments == lightning || segments == [id.as_str()], "{url}");
});
