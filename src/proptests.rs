//! Property tests of the hand-written parsers, URL builders and answer mappers: generated input
//! never panics, never changes a URL's shape, and never slips past a documented limit. (The
//! SOQL lexer and the query cursor, whose internals are private, have their own `proptests`
//! modules next to them.)

use crate::config::{Config, keys};
use crate::crma::search::export::ExportPlan;
use crate::crma::search::{
    self, Direction, Filter, FilterGroup, MAX_FILTER_GROUPS, MAX_FILTERS, MAX_FILTERS_PER_GROUP,
    MAX_LIMIT, MAX_QUERY_CHARS, MAX_REACHABLE, Operator, Search, Sort,
};
use crate::crma::types::{ObjectType, PropertyName, RecordId};
use crate::crmb::describe::{FieldFilter, RawDescribe, compact};
use crate::crmb::ids::{ApiName, SalesforceId};
use crate::crmb::record_url::InstanceUrl;
use crate::error::ToolError;
use crate::http::Response;
use crate::{crma, crmb, proxy};
use proptest::prelude::*;
use serde_json::{Map, Value};

const CASES: u32 = 256;

// --- JSON ------------------------------------------------------------------------------------

/// Keys the mappers look for, so generated answers reach past the first `get`.
const KEYS: &[&str] = &[
    "attributes",
    "type",
    "url",
    "Id",
    "Name",
    "records",
    "done",
    "totalSize",
    "nextRecordsUrl",
    "total",
    "results",
    "id",
    "properties",
    "createdAt",
    "updatedAt",
    "paging",
    "next",
    "after",
    "message",
    "errorCode",
    "fields",
    "status",
    "category",
    "subCategory",
    "correlationId",
    "errors",
    "context",
    "requiredGranularScopes",
    "missingScopes",
    "propertyName",
    "name",
    "label",
    "labelPlural",
    "keyPrefix",
    "picklistValues",
    "value",
    "active",
    "referenceTo",
    "relationshipName",
    "childRelationships",
    "childSObject",
    "field",
    "policyName",
];

/// Strings the mappers treat specially.
const STRINGS: &[&str] = &[
    "Account",
    "Contact",
    "AggregateResult",
    "001000000000001AAA",
    "003000000000001",
    "INVALID_FIELD",
    "REQUEST_LIMIT_EXCEEDED",
    "INVALID_SESSION_ID",
    "ConcurrentRequests",
    "MISSING_SCOPES",
    "VALIDATION_ERROR",
    "OBJECT_NOT_FOUND",
    "RATE_LIMITS",
    "TEN_SECONDLY_ROLLING",
    "9999",
    "10000",
    "NTI1Cg%3D%3D",
    "../x",
    "",
    "combobox",
    "picklist",
    "reference",
];

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop::sample::select(STRINGS).prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ]
}

fn json_key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(KEYS).prop_map(str::to_owned),
        1 => ".{0,6}",
    ]
}

/// Any JSON value, up to 8 levels and about 100 nodes deep.
fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(8, 100, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((json_key(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn response(status: u16, body: &Value) -> Response {
    Response {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: serde_json::to_vec(body).unwrap(),
    }
}

// --- URLs ------------------------------------------------------------------------------------

fn config() -> Config {
    Config::from_vars([(keys::PROXY_BASE, "https://broker.example.com/base")]).unwrap()
}

/// Percent-decoding of one path segment, by hand so the tests need no extra crate.
fn decoded(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap()
}

/// Segment values that try to change a path, mixed with arbitrary text.
fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "..",
            ".",
            "",
            "/",
            "%2F",
            "%2e%2e",
            "?",
            "#",
            "\\",
            "a/../b",
            "..%2F",
            "?q=1#f",
            "%",
            "%zz",
            " ",
            "\u{0}",
            "\u{202e}",
            "x;y",
            "@host",
            "//evil.example",
            ".\t.",
            "\r",
            ".\n.",
            "a\tb",
        ])
        .prop_map(str::to_owned),
        ".{0,12}",
    ]
}

/// Checks a built broker URL: same host, exactly the prefix plus one segment per value.
fn assert_shape(url: &url::Url, prefix: usize, path: &[String]) -> Result<(), TestCaseError> {
    prop_assert_eq!(url.host_str(), Some("broker.example.com"));
    prop_assert_eq!(url.fragment(), None);
    let segments: Vec<String> = url.path_segments().unwrap().map(decoded).collect();
    prop_assert_eq!(segments.len(), prefix + path.len(), "{}", url);
    prop_assert_eq!(&segments[prefix..], path, "{}", url);
    Ok(())
}

fn api_name() -> impl Strategy<Value = ApiName> {
    "([a-z]{1,4}__)?[A-Za-z][A-Za-z0-9]{0,10}(_[A-Za-z0-9]{1,4})?(__(c|r|mdt|x))?"
        .prop_filter_map("an API name", |text| ApiName::parse(&text).ok())
}

fn id_15() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9]{15}"
}

fn salesforce_id() -> impl Strategy<Value = SalesforceId> {
    (id_15(), any::<bool>()).prop_map(|(body, long)| {
        let id = SalesforceId::parse(&body).unwrap();
        if long { id.to_18() } else { id }
    })
}

fn instance_host() -> impl Strategy<Value = String> {
    (
        "[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?(--[a-z]{1,8})?",
        prop::sample::select(vec![
            ".my.salesforce.com",
            ".sandbox.my.salesforce.com",
            ".my.salesforce.mil",
            ".salesforce.com",
            ".example.com",
        ]),
    )
        .prop_map(|(name, domain)| format!("{name}{domain}"))
}

// --- HubSpot search --------------------------------------------------------------------------

fn filter() -> impl Strategy<Value = Filter> {
    let operator = prop::sample::select(vec![
        Operator::Eq,
        Operator::Neq,
        Operator::Lt,
        Operator::Lte,
        Operator::Gt,
        Operator::Gte,
        Operator::Between,
        Operator::In,
        Operator::NotIn,
        Operator::HasProperty,
        Operator::NotHasProperty,
        Operator::ContainsToken,
        Operator::NotContainsToken,
    ]);
    (
        "[a-z][a-z0-9_]{0,12}",
        operator,
        prop::option::of(json_leaf()),
        prop::option::of(prop::collection::vec(json_leaf(), 0..4)),
        prop::option::of(json_leaf()),
    )
        .prop_map(|(property, operator, value, values, high_value)| Filter {
            property: PropertyName::parse(&property).unwrap(),
            operator,
            value,
            values,
            high_value,
        })
}

fn search() -> impl Strategy<Value = Search> {
    let groups = prop::collection::vec(
        prop::collection::vec(filter(), 0..8).prop_map(|filters| FilterGroup { filters }),
        0..7,
    );
    let sorts = prop::collection::vec(
        ("[a-z]{1,8}", any::<bool>()).prop_map(|(p, up)| Sort {
            property: PropertyName::parse(&p).unwrap(),
            direction: if up {
                Direction::Ascending
            } else {
                Direction::Descending
            },
        }),
        0..3,
    );
    let query = prop::option::of(prop_oneof![
        ".{0,20}",
        (2_990..3_010usize).prop_map(|n| "é".repeat(n)),
    ]);
    let limit = prop_oneof![0..=250u32, Just(u32::MAX)];
    let after = prop::option::of(prop_oneof![
        (0..12_000u64).prop_map(|n| n.to_string()),
        Just(u64::MAX.to_string()),
        "[A-Za-z0-9%=]{1,12}",
    ]);
    (groups, sorts, query, limit, after).prop_map(|(filter_groups, sorts, query, limit, after)| {
        Search {
            object_type: ObjectType::parse("deals").unwrap(),
            filter_groups,
            sorts,
            query,
            properties: vec![PropertyName::parse("dealname").unwrap()],
            limit,
            after,
            string_properties: ["dealstage".to_owned()].into(),
        }
    })
}

/// Whether `search` is within every documented limit and each filter has what its operator
/// needs: exactly the searches `body` must build.
fn within_limits(search: &Search) -> bool {
    let groups = &search.filter_groups;
    let sizes_ok = groups.len() <= MAX_FILTER_GROUPS
        && groups
            .iter()
            .all(|g| (1..=MAX_FILTERS_PER_GROUP).contains(&g.filters.len()))
        && groups.iter().map(|g| g.filters.len()).sum::<usize>() <= MAX_FILTERS;
    let scalar = |v: &Option<Value>| {
        v.as_ref()
            .is_some_and(|v| v.is_string() || v.is_number() || v.is_boolean())
    };
    let filters_ok = groups
        .iter()
        .flat_map(|g| &g.filters)
        .all(|f| match f.operator {
            Operator::HasProperty | Operator::NotHasProperty => true,
            Operator::In | Operator::NotIn => f
                .values
                .as_ref()
                .is_some_and(|vs| !vs.is_empty() && vs.iter().all(|v| scalar(&Some(v.clone())))),
            Operator::Between => scalar(&f.value) && scalar(&f.high_value),
            _ => scalar(&f.value),
        });
    let offset_ok = search
        .after
        .as_deref()
        .and_then(|a| a.parse::<u64>().ok())
        .is_none_or(|a| a < MAX_REACHABLE);
    sizes_ok
        && filters_ok
        && offset_ok
        && search.sorts.len() <= 1
        && (1..=MAX_LIMIT).contains(&search.limit)
        && search
            .query
            .as_ref()
            .is_none_or(|q| q.chars().count() <= MAX_QUERY_CHARS)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    // --- Salesforce ids ----------------------------------------------------------------------

    /// 15 → 18 → 15: the long form carries the same id, and parses to itself.
    #[test]
    fn a_15_character_id_survives_the_18_character_form(body in id_15()) {
        let short = SalesforceId::parse(&body).unwrap();
        let long = short.to_18();
        prop_assert_eq!(long.as_str().len(), 18);
        prop_assert_eq!(&long.as_str()[..15], body.as_str());
        prop_assert_eq!(SalesforceId::parse(long.as_str()), Ok(long.clone()));
        prop_assert_eq!(long.to_18(), long);
    }

    /// An 18-character id whose letters were all lower- or upper-cased is restored.
    #[test]
    fn a_case_folded_18_character_id_recovers_the_original(body in id_15()) {
        let long = SalesforceId::parse(&body).unwrap().to_18();
        for folded in [long.as_str().to_ascii_lowercase(), long.as_str().to_ascii_uppercase()] {
            prop_assert_eq!(SalesforceId::parse(&folded), Ok(long.clone()), "{}", folded);
        }
    }

    /// Any text: an id or a reason, and an accepted id is 15 or 18 letters and digits.
    #[test]
    fn any_text_is_an_id_or_a_reason(text in "[a-zA-Z0-9 ]{0,20}|.{0,20}") {
        if let Ok(id) = SalesforceId::parse(&text) {
            prop_assert!(matches!(id.as_str().len(), 15 | 18));
            prop_assert!(id.as_str().bytes().all(|b| b.is_ascii_alphanumeric()));
        }
    }

    // --- URLs --------------------------------------------------------------------------------

    /// A record link is the object and id as whole segments on the org's (Lightning) host.
    #[test]
    fn record_links_keep_their_shape(
        host in instance_host(),
        object in api_name(),
        id in salesforce_id(),
    ) {
        let instance = InstanceUrl::parse(&format!("https://{host}")).unwrap();
        let url = instance.record_url(&object, &id);
        let segments: Vec<&str> = url.path_segments().unwrap().collect();
        let lightning = host.ends_with(".my.salesforce.com") || host.ends_with(".my.salesforce.mil");
        if lightning {
            prop_assert_eq!(segments, ["lightning", "r", object.as_str(), id.as_str(), "view"]);
            let name = host.split(".my.salesforce.").next().unwrap();
            let expected = format!("{name}.lightning.");
            prop_assert!(url.host_str().unwrap().starts_with(&expected));
        } else {
            prop_assert_eq!(segments, [id.as_str()]);
            prop_assert_eq!(url.host_str(), Some(host.as_str()));
        }
        prop_assert_eq!(url.query(), None);
        prop_assert_eq!(url.fragment(), None);
    }

    /// No segment value changes a broker path: `/`, `%2F`, `?`, `#` and `\` are encoded, and
    /// the segments `url` cannot keep (`..`, `.`, empty, control characters) are refused.
    #[test]
    fn broker_paths_keep_their_shape(
        path in prop::collection::vec(segment(), 0..5),
        query in ".{0,12}",
    ) {
        let refs: Vec<&str> = path.iter().map(String::as_str).collect();
        let refused = refs
            .iter()
            .any(|s| matches!(*s, "" | "." | "..") || s.chars().any(|c| c.is_ascii_control()));
        for (built, prefix) in [
            (proxy::crm_a(&config(), &refs, &[("q", &query)]), 4),
            (proxy::crm_b(&config(), &refs, &[("q", &query)]), 7),
        ] {
            match built {
                Ok(url) => {
                    prop_assert!(!refused, "{}", url);
                    assert_shape(&url, prefix, &path)?;
                    let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
                    prop_assert_eq!(pairs, [("q".to_owned(), query.clone())]);
                }
                Err(err) => {
                    prop_assert!(refused);
                    prop_assert!(matches!(err, ToolError::InvalidInput(_)));
                }
            }
        }
    }

    /// The values the parsers accept always build: HubSpot object types and record ids,
    /// Salesforce API names and ids.
    #[test]
    fn parsed_names_and_ids_always_build(
        object_type in "(contacts|companies|deal|2-[0-9]{1,12}|p[0-9]{0,12}_[a-z0-9_]{1,20}|[a-z_]{1,10})",
        record_id in "[0-9]{1,20}",
        object in api_name(),
        id in salesforce_id(),
    ) {
        if let (Ok(object_type), Ok(record_id)) =
            (ObjectType::parse(&object_type), RecordId::parse(&record_id))
        {
            let path = ["crm", "v3", "objects", object_type.as_str(), &record_id.to_string()]
                .map(str::to_owned);
            let refs: Vec<&str> = path.iter().map(String::as_str).collect();
            assert_shape(&proxy::crm_a(&config(), &refs, &[]).unwrap(), 4, &path)?;
        }
        let path = ["sobjects", object.as_str(), id.as_str()].map(str::to_owned);
        let refs: Vec<&str> = path.iter().map(String::as_str).collect();
        assert_shape(&proxy::crm_b(&config(), &refs, &[]).unwrap(), 7, &path)?;
    }

    // --- HubSpot search ----------------------------------------------------------------------

    /// Every body built is within HubSpot's documented limits; every search within them is
    /// built, and every other one is invalid input.
    #[test]
    fn search_bodies_never_exceed_the_documented_limits(search in search()) {
        match search.body() {
            Ok(body) => {
                prop_assert!(within_limits(&search), "{body}");
                let groups = body["filterGroups"].as_array().unwrap();
                prop_assert!(groups.len() <= MAX_FILTER_GROUPS);
                let counts: Vec<usize> =
                    groups.iter().map(|g| g["filters"].as_array().unwrap().len()).collect();
                prop_assert!(counts.iter().all(|&n| (1..=MAX_FILTERS_PER_GROUP).contains(&n)));
                prop_assert!(counts.iter().sum::<usize>() <= MAX_FILTERS);
                let limit = body["limit"].as_u64().unwrap();
                prop_assert!((1..=u64::from(MAX_LIMIT)).contains(&limit));
                if let Some(after) = body["after"].as_str().and_then(|a| a.parse::<u64>().ok()) {
                    prop_assert!(after + limit <= MAX_REACHABLE, "{} + {}", after, limit);
                }
                if let Some(query) = body["query"].as_str() {
                    prop_assert!(query.chars().count() <= MAX_QUERY_CHARS);
                }
            }
            Err(err) => {
                prop_assert!(!within_limits(&search), "{err:?}");
                prop_assert!(matches!(err, ToolError::InvalidInput(_)), "{err:?}");
            }
        }
    }

    /// An export's every request, the first and any next one, is within HubSpot's documented
    /// limits with its own filter added to every group: a plan that would pass them is refused
    /// as invalid input before anything is sent.
    #[test]
    fn export_bodies_never_exceed_the_documented_limits(search in search(), last in any::<u64>()) {
        let plan = ExportPlan::new(
            search.object_type.clone(),
            search.filter_groups.clone(),
            &[],
            search.query.clone(),
            search.properties.clone(),
            None,
            None,
        );
        match plan {
            Ok(plan) => {
                for after in [None, Some(last)] {
                    let body = plan.body(after).unwrap();
                    let groups = body["filterGroups"].as_array().unwrap();
                    prop_assert!(groups.len() <= MAX_FILTER_GROUPS);
                    let counts: Vec<usize> =
                        groups.iter().map(|g| g["filters"].as_array().unwrap().len()).collect();
                    prop_assert!(counts.iter().all(|&n| (1..=MAX_FILTERS_PER_GROUP).contains(&n)));
                    prop_assert!(counts.iter().sum::<usize>() <= MAX_FILTERS);
                    prop_assert_eq!(body["limit"].as_u64(), Some(u64::from(MAX_LIMIT)));
                    prop_assert!(body.get("after").is_none());
                    if after.is_some() {
                        prop_assert!(!groups.is_empty());
                    }
                }
            }
            Err(err) => prop_assert!(matches!(err, ToolError::InvalidInput(_)), "{err:?}"),
        }
    }

    // --- answer mappers ----------------------------------------------------------------------

    /// Any JSON as a Salesforce record: mapped, or a typed error; never a panic.
    #[test]
    fn any_json_record_maps_or_is_a_crm_error(value in json_value()) {
        let instance = InstanceUrl::parse("https://acme.my.salesforce.com").unwrap();
        let mut record = value;
        if let Err(err) = crmb::records::map_record(&mut record, Some(&instance)) {
            prop_assert!(matches!(err, ToolError::CrmError(_)), "{err:?}");
        }
        prop_assert!(record.get("attributes").is_none());
    }

    /// Any JSON as a HubSpot search answer: mapped, or said to be unexpected.
    #[test]
    fn any_json_search_answer_maps_or_is_refused(value in json_value()) {
        if let Ok(out) = search::map_answer(&value) {
            prop_assert!(out["results"].is_array());
            prop_assert!(out["total"].is_u64());
        }
    }

    /// Any JSON as an error body, at any status: each CRM's mapper names a tool error.
    #[test]
    fn any_json_error_body_maps_to_a_tool_error(
        value in json_value(),
        status in prop::sample::select(vec![200u16, 400, 401, 403, 404, 409, 414, 429, 500, 503]),
    ) {
        let answer = response(status, &value);
        let salesforce = crmb::errors::map_error(&answer, crmb::client::retry_hint(&answer), "Account 001000000000001AAA");
        let hubspot = crma::errors::map_error(&answer, crma::rate_limits::hint(&answer), &["oauth".to_owned()], "contact 51");
        prop_assert!(!salesforce.to_string().is_empty());
        prop_assert!(!hubspot.to_string().is_empty());
    }

    /// Any JSON as a describe answer: parsed and compacted, or refused by serde.
    #[test]
    fn any_json_describe_compacts_or_is_refused(value in json_value(), children: bool) {
        if let Ok(raw) = serde_json::from_value::<RawDescribe>(value) {
            let field_count = raw.fields.len();
            let filter = FieldFilter { name_contains: Some("a".into()), ..FieldFilter::default() };
            let view = compact(raw, &filter, children);
            prop_assert_eq!(view.field_count, field_count);
            prop_assert!(view.fields.len() <= field_count);
            prop_assert!(serde_json::to_string(&view).is_ok());
        }
    }
}
