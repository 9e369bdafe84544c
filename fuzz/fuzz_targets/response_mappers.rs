//! Any bytes as a CRM answer body, through every mapper that reads one: the Salesforce and
//! HubSpot error mappers, Salesforce record mapping, HubSpot search answers and describe
//! compaction. Each gives a typed error or an output, never a panic or a stack overflow.
#![no_main]

use crm_plugin::crma;
use crm_plugin::crmb;
use crm_plugin::crmb::describe::{FieldFilter, RawDescribe, compact};
use crm_plugin::crmb::record_url::InstanceUrl;
use crm_plugin::http::Response;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const STATUSES: [u16; 9] = [200, 400, 401, 403, 404, 409, 414, 429, 503];

fuzz_target!(|data: &[u8]| {
    for status in STATUSES {
        let response = Response {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: data.to_vec(),
        };
        let salesforce_hint = crmb::client::retry_hint(&response);
        let _ = crmb::errors::map_error(&response, salesforce_hint, "Account 001000000000001AAA");
        let hubspot_hint = crma::rate_limits::hint(&response);
        let granted = ["crm.objects.contacts.read".to_string()];
        let _ = crma::errors::map_error(&response, hubspot_hint, &granted, "contact 1");
    }
    if let Ok(value) = serde_json::from_slice::<Value>(data) {
        let instance = InstanceUrl::parse("https://acme.my.salesforce.com").expect("valid");
        let mut record = value.clone();
        let _ = crmb::records::map_record(&mut record, Some(&instance));
        let _ = crma::search::map_answer(&value);
    }
    if let Ok(raw) = serde_json::from_slice::<RawDescribe>(data) {
        let filter = FieldFilter {
            name_contains: Some("a".into()),
            ..FieldFilter::default()
        };
        let _ = serde_json::to_string(&compact(raw, &filter, true));
    }
});
