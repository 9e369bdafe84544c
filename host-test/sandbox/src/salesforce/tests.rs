use super::*;

fn acme() -> SalesforceData {
    let data: Value = serde_json::from_str(include_str!("../../acme.json")).unwrap();
    SalesforceData::from_json(&data["salesforce"])
}

fn soql(data: &mut SalesforceData, q: &str) -> Answer {
    let encoded: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("q", q)
        .finish();
    data.answer("GET", "v65.0", &["query"], Some(&encoded), b"")
}

#[test]
fn every_id_in_the_data_sets_has_a_valid_checksum() {
    for text in [
        include_str!("../../acme.json"),
        include_str!("../../globex.json"),
    ] {
        let data: Value = serde_json::from_str(text).unwrap();
        for (object, rows) in data["salesforce"].as_object().unwrap() {
            for row in rows.as_array().unwrap() {
                let id = row["Id"].as_str().unwrap();
                assert_eq!(with_checksum(&id[..15]), id, "{object} {id}");
            }
        }
    }
}

#[test]
fn open_opportunities_closing_this_month_with_their_account() {
    let mut data = acme();
    let (status, body) = soql(
        &mut data,
        "select Id, Name, Amount, CloseDate, Account.Name from Opportunity where IsClosed = false and CloseDate = THIS_MONTH order by Amount desc",
    );
    assert_eq!(status, 200, "{body}");
    let records = body["records"].as_array().unwrap();
    assert!(!records.is_empty());
    for r in records {
        assert!(
            r["CloseDate"].as_str().unwrap().starts_with("2026-11"),
            "{r}"
        );
        assert_eq!(r["attributes"]["type"], "Opportunity");
        assert!(r["Account"]["Name"].is_string(), "{r}");
        assert_eq!(r["Account"]["attributes"]["type"], "Account");
    }
    let amounts: Vec<f64> = records
        .iter()
        .map(|r| r["Amount"].as_f64().unwrap())
        .collect();
    assert!(amounts.windows(2).all(|w| w[0] >= w[1]));
    assert_eq!(body["totalSize"], records.len());
}

#[test]
fn paging_follows_locators_from_any_offset() {
    let mut data = acme();
    data.set_batch_size(2);
    let (_, first) = soql(&mut data, "SELECT Id, Name FROM Opportunity");
    let total = first["totalSize"].as_u64().unwrap() as usize;
    assert!(total > 4);
    let mut names: Vec<Value> = first["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["Name"].clone())
        .collect();
    let mut next = first["nextRecordsUrl"].as_str().map(str::to_string);
    while let Some(url) = next {
        let locator = url.rsplit('/').next().unwrap().to_string();
        let (status, page) = data.answer("GET", "v65.0", &["query", &locator], None, b"");
        assert_eq!(status, 200);
        names.extend(
            page["records"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["Name"].clone()),
        );
        next = page["nextRecordsUrl"].as_str().map(str::to_string);
    }
    assert_eq!(names.len(), total);
    let locator = first["nextRecordsUrl"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .split('-')
        .next()
        .unwrap()
        .to_string();
    let (_, mid) = data.answer(
        "GET",
        "v65.0",
        &["query", &format!("{locator}-3")],
        None,
        b"",
    );
    assert_eq!(mid["records"][0]["Name"], names[3]);
    assert_eq!(
        data.answer("GET", "v65.0", &["query", "01gNOPE0000000000-2"], None, b"")
            .0,
        400
    );
}

#[test]
fn counts_filters_and_errors() {
    let mut data = acme();
    let (_, all) = soql(&mut data, "SELECT COUNT() FROM Contact");
    assert!(all["totalSize"].as_u64().unwrap() >= 4 && all["records"] == json!([]));
    let (_, like) = soql(
        &mut data,
        "SELECT Name FROM Account WHERE Name LIKE 'acme%'",
    );
    assert_eq!(like["records"][0]["Name"], "Acme Energy");
    let (_, within) = soql(
        &mut data,
        "SELECT Name FROM Opportunity WHERE StageName IN ('Prospecting', 'Closed Won') LIMIT 1",
    );
    assert_eq!(within["records"].as_array().unwrap().len(), 1);
    for (q, code) in [
        ("SELECT Id FROM Nothing__c", "INVALID_TYPE"),
        ("SELECT Nmae FROM Account", "INVALID_FIELD"),
        ("SELECT Id FROM Account WHERE Nmae = 'x'", "INVALID_FIELD"),
        ("UPDATE Account", "MALFORMED_QUERY"),
    ] {
        let (status, body) = soql(&mut data, q);
        assert_eq!(
            (status, body[0]["errorCode"].as_str()),
            (400, Some(code)),
            "{q}"
        );
    }
}

#[test]
fn records_describe_create_and_update() {
    let mut data = acme();
    let (status, account) = data.answer(
        "GET",
        "v65.0",
        &["sobjects", "Account", "0015gA000000001ABA"],
        Some("fields=Name,Industry"),
        b"",
    );
    assert_eq!(status, 200);
    assert_eq!(account["Name"], "Acme Energy");
    assert!(account.get("Phone").is_none());
    assert_eq!(
        data.answer(
            "GET",
            "v65.0",
            &["sobjects", "Account", "0015gA000000099ABA"],
            None,
            b""
        )
        .0,
        404
    );
    assert_eq!(
        data.answer(
            "GET",
            "v65.0",
            &["sobjects", "Account", "0015gA000000001ABA"],
            Some("fields=Nmae"),
            b""
        )
        .0,
        400
    );

    let (status, describe) = data.answer(
        "GET",
        "v65.0",
        &["sobjects", "Opportunity", "describe"],
        None,
        b"",
    );
    assert_eq!(status, 200);
    let stage = describe["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "StageName")
        .unwrap();
    assert_eq!(stage["type"], "picklist");
    assert_eq!(stage["nillable"], false);
    assert!(!stage["picklistValues"].as_array().unwrap().is_empty());
    let account_id = describe["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "AccountId")
        .unwrap();
    assert_eq!(
        (
            account_id["referenceTo"][0].as_str(),
            account_id["relationshipName"].as_str()
        ),
        (Some("Account"), Some("Account"))
    );

    let (status, missing) = data.answer(
        "POST",
        "v65.0",
        &["sobjects", "Opportunity"],
        None,
        br#"{"Name": "New"}"#,
    );
    assert_eq!(
        (status, missing[0]["errorCode"].as_str()),
        (400, Some("REQUIRED_FIELD_MISSING"))
    );
    let (status, created) = data.answer(
        "POST",
        "v65.0",
        &["sobjects", "Task"],
        None,
        br#"{"Subject": "Call Maria", "Status": "Not Started"}"#,
    );
    assert_eq!(status, 201);
    let id = created["id"].as_str().unwrap().to_string();
    assert!(
        id.starts_with("00T5gA0") && id.len() == 18 && with_checksum(&id[..15]) == id,
        "{id}"
    );
    assert_eq!(
        data.answer(
            "PATCH",
            "v65.0",
            &["sobjects", "Task", &id],
            None,
            br#"{"Status": "Completed"}"#
        )
        .0,
        204
    );
    let (_, task) = data.answer("GET", "v65.0", &["sobjects", "Task", &id], None, b"");
    assert_eq!(task["Status"], "Completed");
    let (status, bad) = data.answer(
        "PATCH",
        "v65.0",
        &["sobjects", "Task", &id],
        None,
        br#"{"IsClosed": true}"#,
    );
    assert_eq!(
        (status, bad[0]["errorCode"].as_str()),
        (400, Some("INVALID_FIELD_FOR_INSERT_UPDATE"))
    );
    assert_eq!(
        data.answer("DELETE", "v65.0", &["sobjects", "Task", &id], None, b"")
            .0,
        405
    );
}

#[test]
fn parentheses_group_conditions_as_soql_requires_when_and_and_or_mix() {
    let mut data = acme();
    let ids = |answer: &Value| -> Vec<String> {
        answer["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["Id"].as_str().unwrap().to_string())
            .collect()
    };
    let id = "0035gA000000001ABA";
    let (status, both) = soql(
        &mut data,
        &format!(
            "SELECT Id FROM Task WHERE (WhoId = '{id}' OR WhatId = '{id}') ORDER BY CreatedDate DESC"
        ),
    );
    assert_eq!(status, 200, "{both}");
    assert_eq!(ids(&both), ["00T5gA000000001EBA"]);
    // The time bound applies to both sides of the OR.
    let (_, none) = soql(
        &mut data,
        &format!(
            "SELECT Id FROM Task WHERE (WhoId = '{id}' OR WhatId = '{id}') AND CreatedDate <= 2026-11-01T00:00:00Z"
        ),
    );
    assert!(ids(&none).is_empty(), "{none}");
    let (status, open) = soql(&mut data, "SELECT Id FROM Task WHERE (WhoId = 'x'");
    assert_eq!(status, 400, "{open}");
}
