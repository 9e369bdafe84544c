use super::*;

fn search(groups: Value) -> Search {
    Search {
        object_type: ObjectType::Deals,
        filter_groups: serde_json::from_value(groups).unwrap(),
        sorts: vec![],
        query: None,
        properties: vec![],
        limit: 10,
        after: None,
        string_properties: BTreeSet::from(["dealname".to_string()]),
    }
}

#[test]
fn every_operator_has_its_wire_shape() {
    let s = search(json!([
        {"filters": [
            {"property": "amount", "operator": "BETWEEN", "value": 1000, "high_value": "5000"},
            {"property": "dealstage", "operator": "IN", "values": ["appointmentscheduled", "ClosedWon"]},
            {"property": "closedate", "operator": "HAS_PROPERTY"},
            {"property": "dealname", "operator": "CONTAINS_TOKEN", "value": "renewal"}
        ]},
        {"filters": [{"property": "amount", "operator": "GTE", "value": 10}, {"property": "pipeline", "operator": "NOT_IN", "values": ["x"]},
                     {"property": "dealname", "operator": "IN", "values": ["Big Renewal"]}]}
    ]));
    let body = s.body().unwrap();
    assert_eq!(
        body["filterGroups"][0]["filters"][0],
        json!({"propertyName": "amount", "operator": "BETWEEN", "value": "1000", "highValue": "5000"})
    );
    assert_eq!(
        body["filterGroups"][0]["filters"][1],
        json!({"propertyName": "dealstage", "operator": "IN", "values": ["appointmentscheduled", "ClosedWon"]}),
        "an enumeration's values go exactly as given"
    );
    assert_eq!(
        body["filterGroups"][1]["filters"][2],
        json!({"propertyName": "dealname", "operator": "IN", "values": ["big renewal"]}),
        "a string property's IN values go lower-case, as HubSpot requires"
    );
    assert_eq!(
        body["filterGroups"][0]["filters"][2],
        json!({"propertyName": "closedate", "operator": "HAS_PROPERTY"})
    );
    assert_eq!(body["filterGroups"][1]["filters"][1]["operator"], "NOT_IN");
    assert_eq!(body["limit"], 10);
}

#[test]
fn limits_are_checked_before_sending() {
    let filter = json!({"property": "amount", "operator": "GT", "value": 1});
    let six_groups = json!(
        (0..6)
            .map(|_| json!({"filters": [filter]}))
            .collect::<Vec<_>>()
    );
    assert!(
        matches!(search(six_groups).validate(), Err(ToolError::InvalidInput(m)) if m.contains("at most 5"))
    );
    let seven = json!([{"filters": (0..7).map(|_| filter.clone()).collect::<Vec<_>>()}]);
    assert!(
        matches!(search(seven).validate(), Err(ToolError::InvalidInput(m)) if m.contains("at most 6"))
    );
    let nineteen = json!((0..4).map(|i| json!({"filters": (0..if i == 0 { 1 } else { 6 }).map(|_| filter.clone()).collect::<Vec<_>>()})).collect::<Vec<_>>());
    assert!(
        matches!(search(nineteen).validate(), Err(ToolError::InvalidInput(m)) if m.contains("at most 18"))
    );
    let mut s = search(json!([]));
    s.sorts = serde_json::from_value(json!([{"property": "amount", "direction": "ASCENDING"}, {"property": "closedate", "direction": "DESCENDING"}])).unwrap();
    assert!(matches!(s.validate(), Err(ToolError::InvalidInput(m)) if m.contains("one sort")));
    s.sorts.clear();
    s.limit = 201;
    assert!(s.validate().is_err());
    s.limit = 200;
    s.query = Some("x".repeat(3001));
    assert!(s.validate().is_err());
    s.query = None;
    s.after = Some("10000".into());
    assert!(matches!(s.validate(), Err(ToolError::InvalidInput(m)) if m.contains("date windows")));
}

#[test]
fn operators_need_their_values() {
    for bad in [
        json!({"property": "amount", "operator": "BETWEEN", "value": 1}),
        json!({"property": "dealstage", "operator": "IN", "values": []}),
        json!({"property": "dealname", "operator": "EQ"}),
        json!({"property": "dealname", "operator": "EQ", "value": {"x": 1}}),
    ] {
        assert!(
            matches!(
                search(json!([{"filters": [bad.clone()]}])).body(),
                Err(ToolError::InvalidInput(_))
            ),
            "{bad}"
        );
    }
}

#[test]
fn answers_map_and_warn_past_ten_thousand() {
    let answer = json!({"total": 12000, "results": [{"id": "51", "properties": {"dealname": "Big"}, "createdAt": "2026-01-01T00:00:00Z", "updatedAt": "2026-02-01T00:00:00Z", "archived": false}],
                        "paging": {"next": {"after": "100", "link": "?after=100"}}});
    let out = map_answer(&answer).unwrap();
    assert_eq!(out["results"][0]["id"], "51");
    assert_eq!(out["results"][0]["properties"]["dealname"], "Big");
    assert_eq!(out["next_cursor"], "100");
    assert!(out["note"].as_str().unwrap().contains("10000"));
    let last = json!({"total": 12000, "results": [], "paging": {"next": {"after": "10000"}}});
    let out = map_answer(&last).unwrap();
    assert!(out.get("next_cursor").is_none());
    assert!(
        out["note"].as_str().unwrap().contains("10000"),
        "never silently"
    );
}

/// The search answer of HubSpot's reference (cited on [`SearchAnswer`]), as it shows it.
#[test]
fn a_search_answer_reads_as_hubspot_documents_it() {
    let text = json!({
        "total": 123,
        "results": [{"archived": false, "createdAt": "2019-10-30T03:30:17.883Z", "id": "512",
                     "properties": {"property_checkbox": "false", "property_date": "1572480000000", "property_string": "value"},
                     "updatedAt": "2019-12-07T16:50:06.678Z"}],
        "paging": {"next": {"after": "NTI1Cg%3D%3D", "link": "?after=NTI1Cg%3D%3D"},
                   "prev": {"before": "MQ%3D%3D", "link": "?before=MQ%3D%3D"}}
    })
    .to_string();
    let shown = Shown {
        asked: &[],
        include_empty: false,
        links: None,
    };
    assert_eq!(
        serde_json::to_value(output(text.as_bytes(), &shown).unwrap()).unwrap(),
        json!({"results": [{"id": "512", "properties": {"property_checkbox": "false", "property_date": "1572480000000", "property_string": "value"}}],
               "total": 123, "next_cursor": "NTI1Cg%3D%3D"})
    );
}

/// A contact as a search answers it when firstname and email are asked for: HubSpot adds
/// hs_object_id, createdate and lastmodifieddate, and sends an empty property as null
/// (reference page cited on [`SearchAnswer`]). The page shows what was asked for, with a
/// link when the account is known.
#[test]
fn a_page_shows_what_was_asked_for_and_links_each_record() {
    let text = json!({
            "total": 1,
            "results": [{"id": "357201", "archived": false,
                         "createdAt": "2025-02-02T10:00:00.000Z", "updatedAt": "2025-02-03T10:00:00.000Z",
                         "properties": {"createdate": "2025-02-02T10:00:00.000Z", "email": null,
                                        "firstname": "Ada", "hs_object_id": "357201",
                                        "lastmodifieddate": "2025-02-03T10:00:00.000Z"}}]
    })
    .to_string();
    let config = crate::harness::config(&[(crate::config::keys::CRM_A_PORTAL_ID, "12345678")]);
    let contacts = ObjectType::parse("contacts").unwrap();
    let asked = [
        PropertyName::parse("firstname").unwrap(),
        PropertyName::parse("email").unwrap(),
    ];
    let shown = Shown {
        asked: &asked,
        include_empty: false,
        links: RecordLinks::configured(&config).map(|links| (links, &contacts)),
    };
    let out = serde_json::to_value(output(text.as_bytes(), &shown).unwrap()).unwrap();
    assert_eq!(
        out["results"][0],
        json!({"id": "357201", "properties": {"firstname": "Ada"},
               "record_url": "https://app.hubspot.com/contacts/12345678/record/0-1/357201"})
    );
    let asked = [
        PropertyName::parse("hs_object_id").unwrap(),
        PropertyName::parse("createdate").unwrap(),
    ];
    let everything = Shown {
        asked: &asked,
        include_empty: true,
        links: None,
    };
    let out = serde_json::to_value(output(text.as_bytes(), &everything).unwrap()).unwrap();
    assert_eq!(
        out["results"][0]["properties"],
        json!({"createdate": "2025-02-02T10:00:00.000Z", "email": null, "firstname": "Ada", "hs_object_id": "357201"}),
        "what is asked for by name comes, and include_empty keeps the empty"
    );
}

#[test]
fn a_search_answer_without_its_total_is_refused_by_name() {
    let err = serde_json::from_value::<SearchAnswer>(json!({"results": []})).unwrap_err();
    assert!(err.to_string().contains("missing field `total`"), "{err}");
    assert!(map_answer(&json!({"results": []})).is_err());
}

/// HubSpot documents `after` only as "the paging cursor token" and its own examples are
/// base64 (`"after": "NTI1Cg%3D%3D"`): whatever it returns is handed on.
#[test]
fn an_opaque_cursor_is_passed_on_never_dropped() {
    let answer = json!({"total": 600, "results": [], "paging": {"next": {"after": "NTI1Cg%3D%3D", "link": "?after=NTI1Cg%3D%3D"}}});
    assert_eq!(map_answer(&answer).unwrap()["next_cursor"], "NTI1Cg%3D%3D");
    let odd = json!({"total": 600, "results": [], "paging": {"next": {"after": "a b"}}});
    let out = map_answer(&odd).unwrap();
    assert!(out.get("next_cursor").is_none());
    assert!(out["note"].as_str().unwrap().contains("more results"));
}

/// "Attempting to page beyond 10,000 will result in a 400 error": the last reachable page
/// is shortened so that after + limit is exactly 10,000.
#[test]
fn the_last_page_is_clamped_at_ten_thousand() {
    let mut s = search(json!([]));
    s.limit = 200;
    s.after = Some("9900".into());
    assert_eq!(s.body().unwrap()["limit"], 100);
    s.after = Some("9999".into());
    assert_eq!(s.body().unwrap()["limit"], 1);
    s.after = Some("400".into());
    assert_eq!(s.body().unwrap()["limit"], 200);
}

/// The one-pass reader holds HubSpot to the same shape as before: `total` and each record's
/// `id` and `properties` (an object) are required, anything else HubSpot adds is ignored.
#[test]
fn a_page_missing_what_hubspot_documents_is_an_error_and_extra_members_are_ignored() {
    let shown = Shown {
        asked: &[],
        include_empty: false,
        links: None,
    };
    let read = |page: Value| output(page.to_string().as_bytes(), &shown).map(|_| ());
    assert!(read(json!({"results": []})).is_err(), "no total");
    assert!(
        read(json!({"total": 1, "results": [{"properties": {}}]})).is_err(),
        "no id"
    );
    assert!(
        read(json!({"total": 1, "results": [{"id": "1"}]})).is_err(),
        "no properties"
    );
    assert!(read(json!({"total": 1, "results": [{"id": "1", "properties": []}]})).is_err());
    assert!(read(json!({"total": 1, "results": [{"id": "1", "properties": {"a": "b"}, "extra": {"x": [1]}}], "new": true})).is_ok());
    assert!(
        output(b"{\"total\": 1} trailing", &shown).is_err(),
        "text after the answer"
    );
}
