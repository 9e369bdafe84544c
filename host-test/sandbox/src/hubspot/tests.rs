//! The sandbox HubSpot's answers, checked against the shapes and rules HubSpot documents.

use super::*;

fn data() -> HubSpotData {
    let text = include_str!("../../acme.json");
    let json: Value = serde_json::from_str(text).unwrap();
    HubSpotData::from_json(&json["hubspot"])
}

#[test]
fn search_filters_sorts_and_pages() {
    let mut d = data();
    let body = json!({"filterGroups": [{"filters": [{"propertyName": "amount", "operator": "GT", "value": "40000"}]}],
                      "sorts": [{"propertyName": "amount", "direction": "DESCENDING"}],
                      "properties": ["dealname", "amount"], "limit": 2});
    let (status, answer) = d.answer(
        "POST",
        &["crm", "v3", "objects", "deals", "search"],
        None,
        body.to_string().as_bytes(),
    );
    assert_eq!(status, 200);
    assert_eq!(answer["total"], 4);
    assert_eq!(answer["results"][0]["properties"]["amount"], "320000");
    assert_eq!(answer["paging"]["next"]["after"], "2");
}

#[test]
fn unknown_properties_are_validation_errors_naming_them() {
    let mut d = data();
    let body = json!({"properties": {"favourite_colour": "blue"}});
    let (status, answer) = d.answer(
        "POST",
        &["crm", "v3", "objects", "contacts"],
        None,
        body.to_string().as_bytes(),
    );
    assert_eq!(status, 400);
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("\"name\":\"favourite_colour\"")
    );
}

#[test]
fn owners_list_active_or_archived_only() {
    let mut d = data();
    let (_, active) = d.answer("GET", &["crm", "v3", "owners"], Some("archived=false"), b"");
    let (_, archived) = d.answer("GET", &["crm", "v3", "owners"], Some("archived=true"), b"");
    assert_eq!(active["results"].as_array().unwrap().len(), 3);
    assert_eq!(archived["results"].as_array().unwrap().len(), 1);
    assert_eq!(archived["results"][0]["archived"], true);
}

fn get(d: &mut HubSpotData, path: &[&str], query: &str) -> Answer {
    d.answer("GET", path, Some(query), b"")
}

fn post(d: &mut HubSpotData, path: &[&str], body: Value) -> Answer {
    d.answer("POST", path, None, body.to_string().as_bytes())
}

#[test]
fn paging_tokens_are_opaque_like_hubspots_and_round_trip() {
    // HubSpot's own example token: "NTI1Cg%3D%3D" is offset 525.
    assert_eq!(token_for(525), "NTI1Cg%3D%3D");
    for offset in [1, 2, 10, 99, 525, 1000, 123_456] {
        assert_eq!(offset_of(&token_for(offset)), Some(offset), "{offset}");
    }
    assert_eq!(offset_of("2"), None, "a bare number is not a token");
    let mut d = data();
    let (_, first) = get(&mut d, &["settings", "v3", "users"], "limit=1");
    let after = first["paging"]["next"]["after"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(after.parse::<u64>().is_err(), "{after}");
    let (status, second) = get(
        &mut d,
        &["settings", "v3", "users"],
        &format!("limit=1&after={}", after.replace('%', "%25")),
    );
    assert_eq!(status, 200);
    assert_ne!(first["results"][0]["id"], second["results"][0]["id"]);
}

#[test]
fn a_created_record_is_readable_at_once_but_searchable_only_later() {
    let mut d = data();
    let (status, created) = post(
        &mut d,
        &["crm", "v3", "objects", "contacts"],
        json!({"properties": {"email": "new.person@example.com", "firstname": "New"}}),
    );
    assert_eq!(status, 201);
    let id = created["id"].as_str().unwrap().to_string();
    let by_id = json!({"filterGroups": [{"filters": [{"propertyName": "hs_object_id", "operator": "EQ", "value": id}]}]});
    let (_, found) = post(
        &mut d,
        &["crm", "v3", "objects", "contacts", "search"],
        by_id.clone(),
    );
    assert_eq!(found["total"], 0, "search lags behind the write");
    let (status, read) = get(
        &mut d,
        &["crm", "v3", "objects", "contacts", &id],
        "properties=email",
    );
    assert_eq!(status, 200);
    assert_eq!(read["properties"]["email"], "new.person@example.com");
    for _ in 0..SEARCH_LAG_REQUESTS {
        get(&mut d, &["account-info", "v3", "details"], "");
    }
    let (_, found) = post(
        &mut d,
        &["crm", "v3", "objects", "contacts", "search"],
        by_id,
    );
    assert_eq!(found["total"], 1, "the index caught up");
}

#[test]
fn archived_records_answer_only_with_archived_true() {
    let mut d = data();
    let (status, _) = get(
        &mut d,
        &["crm", "v3", "objects", "contacts", "357206"],
        "archived=false",
    );
    assert_eq!(status, 404);
    let (status, record) = get(
        &mut d,
        &["crm", "v3", "objects", "contacts", "357206"],
        "archived=true",
    );
    assert_eq!(status, 200);
    assert_eq!(record["archived"], true);
    assert!(record["archivedAt"].is_string());
}

#[test]
fn a_duplicate_contact_email_is_a_conflict_naming_the_existing_id() {
    let mut d = data();
    let email = d.objects["contacts"].values().next().unwrap()["properties"]["email"].clone();
    let (status, answer) = post(
        &mut d,
        &["crm", "v3", "objects", "contacts"],
        json!({"properties": {"email": email}}),
    );
    assert_eq!(status, 409);
    assert_eq!(answer["category"], "CONFLICT");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .starts_with("Contact already exists. Existing ID: ")
    );
}

#[test]
fn date_properties_take_only_midnight_utc() {
    let mut d = data();
    for (value, ok) in [
        ("2026-11-20", true),
        ("1763596800000", true),
        ("2026-11-20T15:30:00Z", false),
        ("1763600000000", false),
    ] {
        let (status, answer) = post(
            &mut d,
            &["crm", "v3", "objects", "contacts"],
            json!({"properties": {"firstname": "D", "renewal_date": value}}),
        );
        assert_eq!(status == 201, ok, "{value}: {answer}");
    }
}

#[test]
fn in_matches_lower_case_strings_and_exact_enumeration_values() {
    let mut d = data();
    let search = |d: &mut HubSpotData, object: &str, property: &str, values: Value| {
        let body = json!({"filterGroups": [{"filters": [{"propertyName": property, "operator": "IN", "values": values}]}]});
        post(d, &["crm", "v3", "objects", object, "search"], body).1["total"]
            .as_u64()
            .unwrap()
    };
    assert!(search(&mut d, "tasks", "hs_task_status", json!(["NOT_STARTED"])) > 0);
    assert_eq!(
        search(&mut d, "tasks", "hs_task_status", json!(["not_started"])),
        0
    );
    let first = d.objects["contacts"].values().next().unwrap()["properties"]["firstname"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        search(
            &mut d,
            "contacts",
            "firstname",
            json!([first.to_lowercase()])
        ),
        1
    );
    assert_eq!(
        search(
            &mut d,
            "contacts",
            "firstname",
            json!([first.to_uppercase()])
        ),
        0
    );
}

#[test]
fn search_refuses_to_page_past_ten_thousand() {
    let mut d = data();
    let (status, answer) = post(
        &mut d,
        &["crm", "v3", "objects", "contacts", "search"],
        json!({"limit": 100, "after": "9950"}),
    );
    assert_eq!(status, 400, "{answer}");
}

fn search_contacts(d: &mut HubSpotData, body: Value) -> Answer {
    d.answer(
        "POST",
        &["crm", "v3", "objects", "contacts", "search"],
        None,
        body.to_string().as_bytes(),
    )
}

/// Past 10,000 results HubSpot's paging stops with a 400; sorting by `hs_object_id` and asking
/// for the ids above the last one seen reaches every record, 200 at a time.
#[test]
fn keyset_paging_by_hs_object_id_reaches_past_ten_thousand_and_offsets_do_not() {
    let mut d = data();
    let ids = d.seed_contacts(12_345, "Seeded Import Co");
    assert_eq!(ids.len(), 12_345);
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    let mine = json!({"filters": [{"propertyName": "company", "operator": "EQ", "value": "Seeded Import Co"}]});
    let sorts = json!([{"propertyName": "hs_object_id", "direction": "ASCENDING"}]);

    let (status, page) = search_contacts(
        &mut d,
        json!({"filterGroups": [mine], "sorts": sorts, "limit": 200, "after": "9800"}),
    );
    assert_eq!((status, page["total"].as_u64()), (200, Some(12_345)));
    assert_eq!(page["paging"]["next"]["after"], "10000");
    let (status, refused) = search_contacts(
        &mut d,
        json!({"filterGroups": [mine], "sorts": sorts, "limit": 200, "after": "10000"}),
    );
    assert_eq!(
        (status, refused["category"].as_str()),
        (400, Some("VALIDATION_ERROR"))
    );
    let (status, _) = search_contacts(&mut d, json!({"filterGroups": [mine], "limit": 201}));
    assert_eq!(status, 400, "no page over 200");

    let mut seen = Vec::new();
    let mut last: Option<u64> = None;
    loop {
        let mut group = mine.clone();
        if let Some(last) = last {
            group["filters"].as_array_mut().unwrap().push(json!({"propertyName": "hs_object_id", "operator": "GT", "value": last.to_string()}));
        }
        let (status, page) = search_contacts(
            &mut d,
            json!({"filterGroups": [group], "sorts": sorts, "properties": ["email"], "limit": 200}),
        );
        assert_eq!(status, 200, "{page}");
        let results = page["results"].as_array().unwrap();
        seen.extend(
            results
                .iter()
                .map(|r| r["id"].as_str().unwrap().parse::<u64>().unwrap()),
        );
        if page.get("paging").is_none() {
            break;
        }
        last = seen.last().copied();
    }
    assert_eq!(seen, ids);
}

#[test]
fn activities_are_found_by_the_record_they_are_associated_with() {
    let mut d = data();
    let search = |d: &mut HubSpotData, object: &str, filters: Value| {
        let body = json!({"filterGroups": [{"filters": filters}], "limit": 10,
                          "sorts": [{"propertyName": "hs_timestamp", "direction": "DESCENDING"}]});
        let (status, answer) = d.answer(
            "POST",
            &["crm", "v3", "objects", object, "search"],
            None,
            body.to_string().as_bytes(),
        );
        assert_eq!(status, 200, "{answer}");
        answer["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let maria =
        json!([{"propertyName": "associations.contact", "operator": "EQ", "value": "357200"}]);
    assert_eq!(search(&mut d, "notes", maria.clone()), ["357400"]);
    assert_eq!(search(&mut d, "calls", maria.clone()), ["357600"]);
    let deal = json!([{"propertyName": "associations.deal", "operator": "EQ", "value": "357300"}]);
    assert_eq!(search(&mut d, "calls", deal), ["357600"]);
    let nobody = json!([{"propertyName": "associations.contact", "operator": "EQ", "value": "1"}]);
    assert!(search(&mut d, "notes", nobody).is_empty());
    // Combined with a time filter, as a timeline's next page asks.
    let before = |millis: &str| {
        json!([{"propertyName": "associations.contact", "operator": "EQ", "value": "357200"},
               {"propertyName": "hs_timestamp", "operator": "LTE", "value": millis}])
    };
    // 2026-11-18, after the note; 2025-11-13, before it.
    assert_eq!(search(&mut d, "notes", before("1795000000000")), ["357400"]);
    assert!(search(&mut d, "notes", before("1763000000000")).is_empty());
}
