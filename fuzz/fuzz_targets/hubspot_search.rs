//! Any bytes as `crma_search_records` input: a body is built only within HubSpot's documented
//! limits, and anything past them is invalid input.
#![no_main]

use crm_plugin::crma::search::{
    MAX_FILTER_GROUPS, MAX_FILTERS, MAX_FILTERS_PER_GROUP, MAX_LIMIT, MAX_QUERY_CHARS,
    MAX_REACHABLE, Search,
};
use crm_plugin::crma::tools::SearchInput;
use crm_plugin::error::ToolError;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(input) = serde_json::from_slice::<SearchInput>(data) else {
        return;
    };
    let search = Search {
        object_type: input.object_type,
        filter_groups: input.filter_groups,
        sorts: input.sorts,
        query: input.query,
        properties: input.properties,
        limit: input.limit.unwrap_or(20),
        // Any text, not only the cursors the tool accepts: the limits must hold regardless.
        after: input.cursor,
        string_properties: Default::default(),
    };
    match search.body() {
        Ok(body) => check_limits(&body),
        Err(err) => assert!(matches!(err, ToolError::InvalidInput(_)), "{err:?}"),
    }
});

fn check_limits(body: &Value) {
    let groups = body["filterGroups"].as_array().expect("filterGroups");
    assert!(groups.len() <= MAX_FILTER_GROUPS);
    let mut total = 0;
    for group in groups {
        let filters = group["filters"].as_array().expect("filters").len();
        assert!((1..=MAX_FILTERS_PER_GROUP).contains(&filters));
        total += filters;
    }
    assert!(total <= MAX_FILTERS);
    let limit = body["limit"].as_u64().expect("limit");
    assert!((1..=u64::from(MAX_LIMIT)).contains(&limit));
    if let Some(after) = body["after"].as_str().and_then(|a| a.parse::<u64>().ok()) {
        assert!(after + limit <= MAX_REACHABLE, "{after} + {limit}");
    }
    if let Some(query) = body["query"].as_str() {
        assert!(query.chars().count() <= MAX_QUERY_CHARS);
    }
    assert!(body["sorts"].as_array().expect("sorts").len() <= 1);
}
