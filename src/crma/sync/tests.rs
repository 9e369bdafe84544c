use super::*;
use crate::harness;
use crate::http::{Response, TransportError};
use crate::mapping::{MappingStore, MemoryStore};
use crate::retry::tests::{ScriptedTransport, response};
use serde_json::{Value, json};

const ALL: &[&str] = &[
    "settings.users.read",
    "crm.objects.owners.read",
    "settings.users.teams.read",
];

fn sync(
    script: Vec<Result<Response, TransportError>>,
    scopes: &[&str],
    store: &mut MemoryStore,
) -> (Result<Value, ToolError>, ScriptedTransport) {
    let mut transport = ScriptedTransport::new(script);
    let result = harness::call_with_store(
        &mut transport,
        store,
        &harness::ctx(scopes, None),
        &harness::config(&[]),
        SyncUsers::NAME,
        &json!({}),
    );
    (result, transport)
}

fn page(results: Value, after: Option<&str>) -> Result<Response, TransportError> {
    let mut body = json!({"results": results});
    if let Some(after) = after {
        body["paging"] = json!({"next": {"after": after, "link": "https://api.hubapi.com/x"}});
    }
    response(200, &body.to_string())
}

/// An owner as HubSpot lists it: archived owners have `userId: null` and keep the user in
/// `userIdIncludingInactive` (https://developers.hubspot.com/docs/api/crm/owners).
fn owner(id: u64, user: u64, email: &str, archived: bool) -> Value {
    let active_user = (!archived).then_some(user);
    json!({"id": id.to_string(), "email": email, "firstName": "F", "lastName": "L",
           "userId": active_user, "userIdIncludingInactive": user,
           "archived": archived, "teams": [{"id": "9", "name": "Sales", "primary": true}],
           "createdAt": "2025-01-01T00:00:00Z", "updatedAt": "2025-06-01T00:00:00Z"})
}

fn user(id: &str, email: &str) -> Value {
    json!({"id": id, "email": email, "roleIds": ["100"], "primaryTeamId": "9", "secondaryTeamIds": [],
           "superAdmin": false})
}

/// users (1 page), roles, teams, active owners (given pages), archived owners (given pages).
fn script(
    owners: Vec<Result<Response, TransportError>>,
    archived: Vec<Result<Response, TransportError>>,
) -> Vec<Result<Response, TransportError>> {
    let mut s = vec![
        page(
            json!([user("1", "ana@acme.com"), user("2", "bo@acme.com")]),
            None,
        ),
        page(json!([{"id": "100", "name": "Sales rep"}]), None),
        page(
            json!([{"id": "9", "name": "Sales", "userIds": ["1"]}]),
            None,
        ),
    ];
    s.extend(owners);
    s.extend(archived);
    s
}

fn active() -> Vec<Result<Response, TransportError>> {
    vec![page(
        json!([
            owner(11, 1, "ana@acme.com", false),
            owner(12, 2, "bo@acme.com", false)
        ]),
        None,
    )]
}

fn none() -> Vec<Result<Response, TransportError>> {
    vec![page(json!([]), None)]
}

#[test]
fn first_run_creates_and_second_run_changes_nothing() {
    let mut store = MemoryStore::default();
    let (out, t) = sync(script(active(), none()), ALL, &mut store);
    let out = out.unwrap();
    assert_eq!(
        (
            out["created"].clone(),
            out["updated"].clone(),
            out["unchanged"].clone(),
            out["soft_deleted"].clone()
        ),
        (json!(4), json!(0), json!(0), json!(0))
    );
    assert_eq!(t.sent.len(), 5);
    let paths: Vec<String> = t
        .sent
        .iter()
        .map(|r| format!("{}?{}", r.url().path(), r.url().query().unwrap_or_default()))
        .collect();
    assert_eq!(
        paths,
        [
            "/sdk/proxy/hubspot/settings/v3/users?limit=100",
            "/sdk/proxy/hubspot/settings/v3/users/roles?",
            "/sdk/proxy/hubspot/settings/v3/users/teams?",
            "/sdk/proxy/hubspot/crm/v3/owners?limit=500&archived=false",
            "/sdk/proxy/hubspot/crm/v3/owners?limit=500&archived=true",
        ]
    );
    let ana = &store.mappings[&(MappingKind::User, "1".into())];
    assert_eq!(ana.fields["owner_id"], "11");
    assert_eq!(ana.fields["role_names"], json!(["Sales rep"]));
    assert_eq!(ana.fields["team_names"], json!(["Sales"]));
    assert_eq!(
        store.mappings[&(MappingKind::Owner, "12".into())].fields["user_id"],
        "2"
    );

    let (out, _) = sync(script(active(), none()), ALL, &mut store);
    let out = out.unwrap();
    assert_eq!(
        (out["created"].clone(), out["unchanged"].clone()),
        (json!(0), json!(4))
    );
    assert_eq!(store.puts, 1, "an unchanged run writes nothing");
    assert_eq!(store.mappings.len(), 4, "a re-run never duplicates");
}

#[test]
fn an_archived_owner_is_soft_deleted_and_restored_when_it_returns() {
    let mut store = MemoryStore::default();
    sync(script(active(), none()), ALL, &mut store).0.unwrap();

    // Owner 12 is archived in HubSpot: listed only with archived=true.
    let only_ana = vec![page(json!([owner(11, 1, "ana@acme.com", false)]), None)];
    let bo_archived = vec![page(json!([owner(12, 2, "bo@acme.com", true)]), None)];
    let (out, _) = sync(script(only_ana, bo_archived), ALL, &mut store);
    let out = out.unwrap();
    assert_eq!(out["soft_deleted"], 1, "{out}");
    assert_eq!(out["owners"]["soft_deleted"], 1);
    let bo = &store.mappings[&(MappingKind::Owner, "12".into())];
    assert!(bo.deleted, "kept and marked deleted, not removed");
    assert_eq!(bo.fields["email"], "bo@acme.com");
    // The archived owner still names its user, and the user its owner.
    assert_eq!(bo.fields["user_id"], "2");
    assert_eq!(
        store.mappings[&(MappingKind::User, "2".into())].fields["owner_id"],
        "12"
    );

    let (out, _) = sync(script(active(), none()), ALL, &mut store);
    let out = out.unwrap();
    assert_eq!(
        (out["restored"].clone(), out["updated"].clone()),
        (json!(1), json!(1))
    );
    assert!(!store.mappings[&(MappingKind::Owner, "12".into())].deleted);
}

#[test]
fn a_user_gone_from_the_account_is_soft_deleted() {
    let mut store = MemoryStore::default();
    sync(script(active(), none()), ALL, &mut store).0.unwrap();
    let mut s = script(active(), none());
    s[0] = page(json!([user("1", "ana@acme.com")]), None);
    let out = sync(s, ALL, &mut store).0.unwrap();
    assert_eq!(out["users"]["soft_deleted"], 1);
    assert!(store.mappings[&(MappingKind::User, "2".into())].deleted);
    assert_eq!(store.mappings.len(), 4);
}

#[test]
fn every_page_of_owners_is_read() {
    let mut store = MemoryStore::default();
    let pages = vec![
        page(json!([owner(11, 1, "a@x.com", false)]), Some("11")),
        page(json!([owner(12, 2, "b@x.com", false)]), Some("12")),
        page(json!([owner(13, 3, "c@x.com", false)]), None),
    ];
    let (out, t) = sync(script(pages, none()), ALL, &mut store);
    assert_eq!(out.unwrap()["owners"]["created"], 3);
    let owner_queries: Vec<&str> = t
        .sent
        .iter()
        .filter(|r| r.url().path().ends_with("/owners"))
        .map(|r| r.url().query().unwrap())
        .collect();
    assert_eq!(
        owner_queries,
        [
            "limit=500&archived=false",
            "limit=500&archived=false&after=11",
            "limit=500&archived=false&after=12",
            "limit=500&archived=true",
        ]
    );
}

#[test]
fn a_failed_page_changes_nothing_locally() {
    let mut store = MemoryStore::default();
    sync(script(active(), none()), ALL, &mut store).0.unwrap();
    let before = store.mappings.clone();
    // The archived listing fails after every retry: no soft delete on a partial picture.
    let failing = vec![
        response(500, "{}"),
        response(500, "{}"),
        response(500, "{}"),
    ];
    let (out, _) = sync(
        script(vec![page(json!([]), None)], failing),
        ALL,
        &mut store,
    );
    assert!(out.is_err());
    assert_eq!(store.mappings, before);
}

#[test]
fn missing_scopes_name_both_listings_and_send_nothing() {
    let mut store = MemoryStore::default();
    let (out, t) = sync(vec![], &["oauth"], &mut store);
    assert_eq!(
        out.unwrap_err(),
        ToolError::MissingScopes(vec![
            "settings.users.read".into(),
            "crm.objects.users.read".into(),
            "crm.objects.owners.read".into(),
            "automation".into()
        ])
    );
    assert!(t.sent.is_empty());
    // Without the teams scope the sync still runs, without team names.
    let (out, t) = sync(
        vec![
            page(json!([user("1", "a@x.com")]), None),
            page(json!([]), None),
            page(json!([]), None),
            page(json!([]), None),
        ],
        &["crm.objects.users.read", "crm.objects.owners.read"],
        &mut store,
    );
    assert_eq!(out.unwrap()["teams_included"], false);
    assert!(t.sent.iter().all(|r| !r.url().path().ends_with("/teams")));
    assert!(
        !store.mappings[&(MappingKind::User, "1".into())]
            .fields
            .contains_key("team_names")
    );
}

#[test]
fn a_row_without_a_required_field_changes_nothing_locally() {
    let mut store = MemoryStore::default();
    sync(script(active(), none()), ALL, &mut store).0.unwrap();
    let before = store.mappings.clone();
    // HubSpot documents a user's `email` as required (GET /settings/v3/users).
    let mut s = script(active(), none());
    s[0] = page(json!([{"id": "1", "roleIds": []}]), None);
    let (out, _) = sync(s, ALL, &mut store);
    let err = out.unwrap_err();
    assert!(
        matches!(&err, ToolError::CrmError(p) if p.messages == ["the users answer: missing field `email`"]),
        "{err:?}"
    );
    assert_eq!(store.mappings, before);
}

#[test]
fn plan_counts_each_case() {
    let m = |id: &str, email: &str, deleted: bool| Mapping {
        kind: MappingKind::Owner,
        crm_id: id.into(),
        fields: stored_fields(json!({"email": email})),
        deleted,
    };
    let stored = vec![
        m("1", "a", false),
        m("2", "b", false),
        m("3", "c", true),
        m("4", "d", false),
    ];
    let observed = vec![
        m("1", "a", false),
        m("2", "B", false),
        m("3", "c", false),
        m("5", "e", false),
    ];
    let mut listings = VecListings::new(stored, observed);
    let counts = plan(&mut listings).unwrap();
    let writes = listings.writes;
    assert_eq!(
        counts,
        Counts {
            created: 1,
            updated: 2,
            unchanged: 1,
            soft_deleted: 1,
            restored: 1
        }
    );
    // Decided and written in key order, a key at a time.
    let ids: Vec<&str> = writes.iter().map(|w| w.crm_id.as_str()).collect();
    assert_eq!(ids, ["2", "3", "4", "5"]);
    assert!(writes[2].deleted && writes[2].fields["email"] == "d");
}

/// Both listings from memory, for [`plan`]; the writes kept in order.
struct VecListings {
    stored: std::vec::IntoIter<Mapping>,
    observed: std::vec::IntoIter<Mapping>,
    writes: Vec<Mapping>,
}

impl VecListings {
    fn new(stored: Vec<Mapping>, observed: Vec<Mapping>) -> Self {
        VecListings {
            stored: stored.into_iter(),
            observed: observed.into_iter(),
            writes: Vec::new(),
        }
    }
}

impl plan::Listings for VecListings {
    fn next_stored(&mut self) -> Result<Option<Mapping>, StoreError> {
        Ok(self.stored.next())
    }
    fn next_observed(&mut self) -> Result<Option<Mapping>, StoreError> {
        Ok(self.observed.next())
    }
    fn write(&mut self, mapping: Mapping) -> Result<(), StoreError> {
        self.writes.push(mapping);
        Ok(())
    }
}

#[test]
fn a_large_account_passes_through_the_store_in_bounded_batches() {
    // 1,203 active owners over 3 pages, 2 of them linked to the two users.
    let pages = || {
        (0..3u64)
            .map(|p| {
                let owners: Vec<Value> = (p * 500..(p * 500 + 500).min(1_203))
                    .map(|i| {
                        owner(
                            1_000 + i,
                            if i < 2 { i + 1 } else { 5_000 + i },
                            "o@x.com",
                            false,
                        )
                    })
                    .collect();
                let next = (p < 2).then(|| ((p + 1) * 500).to_string());
                page(json!(owners), next.as_deref())
            })
            .collect::<Vec<_>>()
    };
    let mut store = MemoryStore::default();
    let (out, _) = sync(script(pages(), none()), ALL, &mut store);
    let out = out.unwrap();
    assert_eq!(out["owners"]["created"], 1_203, "{out}");
    assert_eq!(out["users"]["created"], 2, "{out}");
    assert_eq!(store.mappings.len(), 1_205);
    assert_eq!(
        store.mappings[&(MappingKind::User, "2".into())].fields["owner_id"],
        "1001"
    );
    assert!(store.largest_batch <= crate::mapping::MAX_BATCH);

    let (out, _) = sync(script(pages(), none()), ALL, &mut store);
    assert_eq!(out.unwrap()["unchanged"], 1_205);
    assert_eq!(store.puts, 1, "an unchanged run writes nothing");
    assert!(store.largest_batch <= crate::mapping::MAX_BATCH);
}

/// A store whose stored listing comes out of key order.
struct Unordered;

impl MappingStore for Unordered {
    fn list_page(
        &mut self,
        kind: MappingKind,
        after: Option<&str>,
        _: usize,
    ) -> Result<Vec<Mapping>, StoreError> {
        let m = |id: &str| Mapping {
            kind,
            crm_id: id.into(),
            fields: Default::default(),
            deleted: false,
        };
        Ok(match after {
            None => vec![m("2"), m("1")],
            Some(_) => vec![],
        })
    }
    fn begin(&mut self) -> Result<(), StoreError> {
        Ok(())
    }
    fn observe(&mut self, _: &[Mapping]) -> Result<(), StoreError> {
        Ok(())
    }
    fn observed_page(
        &mut self,
        _: MappingKind,
        _: Option<&str>,
        _: usize,
    ) -> Result<Vec<Mapping>, StoreError> {
        Ok(vec![])
    }
    fn write(&mut self, _: &[Mapping]) -> Result<(), StoreError> {
        Ok(())
    }
    fn commit(&mut self) -> Result<(), StoreError> {
        Ok(())
    }
    fn record_created(&mut self, _: &crate::mapping::CreatedRecord) -> Result<(), StoreError> {
        Ok(())
    }
}

#[test]
fn a_listing_out_of_key_order_is_refused_not_merged() {
    let mut store = Unordered;
    let mut listings = plan::StoreListings::new(&mut store, MappingKind::Owner);
    let err = plan(&mut listings).unwrap_err();
    assert!(err.0.contains("out of key order"), "{err}");
}
