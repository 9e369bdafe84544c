//! The HubSpot user and owner sync end to end, with SQLite mapping files across restarts.

use crate::fixtures::*;
use crm_host::tenant_db::{DbLocation, TenantDb};
use crm_sandbox::stub::{Recorded, Reply, StubBackend};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// A HubSpot whose owners and users can change between sync runs; owners come 2 to a page.
#[derive(Clone)]
struct Directory {
    owners: Arc<Mutex<Vec<Value>>>,
}

impl Directory {
    fn new() -> Self {
        let owners = (1..=5)
            .map(|i| json!({"id": format!("8{i}"), "email": format!("owner{i}@example.com"), "firstName": "O", "lastName": format!("{i}"),
                            "userId": 700 + i, "userIdIncludingInactive": 700 + i, "archived": false, "teams": []}))
            .collect();
        Directory {
            owners: Arc::new(Mutex::new(owners)),
        }
    }

    /// As HubSpot archives an owner: `userId` becomes null and the user stays in
    /// `userIdIncludingInactive` (https://developers.hubspot.com/docs/api/crm/owners).
    fn archive(&self, id: &str) {
        for o in self.owners.lock().unwrap().iter_mut() {
            if o["id"] == id {
                o["archived"] = true.into();
                o["userId"] = Value::Null;
            }
        }
    }

    fn stub(&self) -> StubBackend {
        let owners = self.owners.clone();
        StubBackend::with_handler(move |r: &Recorded| {
            let query: Vec<(String, String)> =
                url::form_urlencoded::parse(r.uri.query().unwrap_or_default().as_bytes())
                    .into_owned()
                    .collect();
            let param = |k: &str| query.iter().find(|(q, _)| q == k).map(|(_, v)| v.clone());
            match path_of(r).as_str() {
                "/settings/v3/users" => Reply::json(
                    200,
                    json!({"results": (1..=5).map(|i| json!({"id": format!("{}", 700 + i), "email": format!("owner{i}@example.com"), "roleIds": [], "superAdmin": false})).collect::<Vec<_>>()}),
                ),
                "/settings/v3/users/roles" | "/settings/v3/users/teams" => {
                    Reply::json(200, json!({"results": []}))
                }
                "/crm/v3/owners" => {
                    let archived = param("archived").as_deref() == Some("true");
                    let list: Vec<Value> = owners
                        .lock()
                        .unwrap()
                        .iter()
                        .filter(|o| o["archived"] == archived)
                        .cloned()
                        .collect();
                    let start: usize = param("after").and_then(|a| a.parse().ok()).unwrap_or(0);
                    let page: Vec<Value> = list.iter().skip(start).take(2).cloned().collect();
                    let mut body = json!({"results": page});
                    if start + 2 < list.len() {
                        body["paging"] = json!({"next": {"after": (start + 2).to_string()}});
                    }
                    Reply::json(200, body)
                }
                other => Reply::json(
                    404,
                    json!({"status": "error", "message": other, "category": "OBJECT_NOT_FOUND"}),
                ),
            }
        })
    }
}

fn counts(out: &Value) -> (u64, u64, u64, u64) {
    let n = |k: &str| out[k].as_u64().unwrap();
    (
        n("created"),
        n("updated"),
        n("unchanged"),
        n("soft_deleted"),
    )
}

#[tokio::test]
async fn sync_creates_then_changes_nothing_then_soft_deletes_and_survives_a_restart() {
    let dir = temp_dir("sync");
    let file = DbLocation::File(dir.join("t1").join("mappings.sqlite"));
    let directory = Directory::new();
    let stub = directory.stub();
    let scopes = ["settings.users.read", "crm.objects.owners.read"];
    {
        let host = host_with(Arc::new(stub.clone()), &[("t1", file.clone())]);
        let first = run(&host, "crma_sync_users", json!({}), &scopes)
            .await
            .unwrap();
        assert_eq!(counts(&first), (10, 0, 0, 0), "{first}");
        // 5 active owners at 2 a page: 3 pages, each after the last one's cursor.
        let owner_pages: Vec<String> = stub
            .requests()
            .iter()
            .filter(|r| r.uri.path().ends_with("/owners"))
            .map(|r| r.uri.query().unwrap().to_string())
            .collect();
        assert_eq!(
            owner_pages,
            [
                "limit=500&archived=false",
                "limit=500&archived=false&after=2",
                "limit=500&archived=false&after=4",
                "limit=500&archived=true",
            ]
        );
        let second = run(&host, "crma_sync_users", json!({}), &scopes)
            .await
            .unwrap();
        assert_eq!(counts(&second), (0, 0, 10, 0), "{second}");
        directory.archive("83");
        let third = run(&host, "crma_sync_users", json!({}), &scopes)
            .await
            .unwrap();
        assert_eq!(counts(&third), (0, 0, 9, 1), "{third}");
        assert_eq!(third["owners"]["soft_deleted"], 1);
    }
    // A new host process on the same file: the mappings are all there, and nothing changes.
    let db = TenantDb::open("t1", &file).unwrap();
    let owners = db.list("owner").unwrap();
    assert_eq!(owners.len(), 5, "soft-deleted, not removed");
    let archived = db.get("owner", "83").unwrap().unwrap();
    assert!(archived.deleted);
    assert!(archived.fields.contains("owner3@example.com"));
    // The archived owner keeps its user, read from `userIdIncludingInactive`, both ways.
    let fields: Value = serde_json::from_str(&archived.fields).unwrap();
    assert_eq!(fields["user_id"], "703", "{fields}");
    let user: Value =
        serde_json::from_str(&db.get("user", "703").unwrap().unwrap().fields).unwrap();
    assert_eq!(user["owner_id"], "83", "{user}");
    assert_eq!(db.list("user").unwrap().len(), 5);
    drop(db);
    let restarted = host_with(Arc::new(directory.stub()), &[("t1", file.clone())]);
    let after_restart = run(&restarted, "crma_sync_users", json!({}), &scopes)
        .await
        .unwrap();
    assert_eq!(counts(&after_restart), (0, 0, 10, 0), "{after_restart}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn one_tenants_mappings_are_invisible_to_another() {
    let directory = Directory::new();
    let host = host_with(
        Arc::new(directory.stub()),
        &[("t1", DbLocation::Memory), ("t2", DbLocation::Memory)],
    );
    let scopes = ["settings.users.read", "crm.objects.owners.read"];
    run(&host, "crma_sync_users", json!({}), &scopes)
        .await
        .unwrap();
    let mut t2 = hs_call("crma_sync_users", json!({}), &scopes);
    t2.tenant_id = "t2".into();
    let out: Value = serde_json::from_str(&host.call(t2).await.unwrap()).unwrap();
    assert_eq!(
        out["created"], 10,
        "t2 starts from its own empty store: {out}"
    );
    assert_eq!(host.mappings("t1").unwrap().list("owner").unwrap().len(), 5);
    assert_eq!(host.mappings("t2").unwrap().list("owner").unwrap().len(), 5);
    assert!(
        host.mappings("t1")
            .unwrap()
            .created_records()
            .unwrap()
            .is_empty()
    );
}

/// The archived owner keeps its user link (`userId` null, `userIdIncludingInactive` set).
#[tokio::test]
async fn an_archived_owner_keeps_its_user() {
    let (host, acme) = acme_sandbox();
    ok(host.call(acme("crma_sync_users", json!({}))).await);
    let db = host.mappings("acme").unwrap();
    let owner = db.get("owner", "81035703").unwrap().unwrap();
    assert!(owner.deleted);
    let fields: Value = serde_json::from_str(&owner.fields).unwrap();
    assert_eq!(fields["user_id"], "7103573", "{fields}");
}

/// Picks the request during which the disconnect lands.
type Cut = fn(&Recorded) -> bool;

/// The directory's stub, which disconnects HubSpot for `t1` when it answers the first request
/// `cut` picks out, as an operator might while a sync is running.
fn disconnecting(
    directory: &Directory,
    host: Arc<std::sync::OnceLock<Arc<crm_host::Host>>>,
    cut: Cut,
) -> StubBackend {
    let inner = directory.stub();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    StubBackend::with_handler(move |r: &Recorded| {
        if cut(r) && !done.swap(true, std::sync::atomic::Ordering::SeqCst) {
            let host = host.get().expect("the host is set before the sync");
            host.disconnect("t1", crm_host::egress::Crm::Hubspot)
                .unwrap();
        }
        inner.reply_to(r)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_cut_by_a_disconnect_writes_nothing_and_reconnecting_restores_it() {
    let scopes = ["settings.users.read", "crm.objects.owners.read"];
    // Cut while the pages are being read (the next page is answered by the host itself), and
    // cut after the last page, just before the mappings would be written.
    // The second is refused by the mapping store, which the component reports as
    // `unavailable` (nothing changed locally) with the store's word to reconnect.
    let cuts: [(Cut, &str); 2] = [
        (
            |r| r.uri.query().unwrap_or_default() == "limit=500&archived=false&after=2",
            "not-connected",
        ),
        (
            |r| r.uri.query().unwrap_or_default() == "limit=500&archived=true",
            "unavailable",
        ),
    ];
    for (cut, expected) in cuts {
        let directory = Directory::new();
        let cell = Arc::new(std::sync::OnceLock::new());
        let stub = disconnecting(&directory, cell.clone(), cut);
        let host = Arc::new(host_with(
            Arc::new(stub.clone()),
            &[("t1", DbLocation::Memory)],
        ));
        cell.set(host.clone()).ok().unwrap();
        let err = run(&host, "crma_sync_users", json!({}), &scopes)
            .await
            .unwrap_err();
        let (kind, message) = tool_error(Err(err));
        assert_eq!(kind, expected, "{message}");
        assert!(message.contains("Reconnect HubSpot"), "{message}");
        let db = host.mappings("t1").unwrap();
        assert!(db.list("user").unwrap().is_empty() && db.list("owner").unwrap().is_empty());
        let sent = stub.requests().len();
        // A new sync is refused up front; after reconnecting it runs to the end.
        let (kind, _) = tool_error(
            run(&host, "crma_sync_users", json!({}), &scopes)
                .await
                .map(|v| v.to_string()),
        );
        assert_eq!(kind, "not-connected");
        assert_eq!(
            stub.requests().len(),
            sent,
            "nothing sent while disconnected"
        );
        host.reconnect(
            "t1",
            crm_host::egress::Crm::Hubspot,
            crm_host::credential::Credential::new(CREDENTIAL),
        )
        .unwrap();
        let out = run(&host, "crma_sync_users", json!({}), &scopes)
            .await
            .unwrap();
        assert_eq!(counts(&out), (10, 0, 0, 0), "{out}");
    }
}

#[tokio::test]
async fn a_disconnect_outlives_the_host_and_keeps_the_mappings() {
    let dir = temp_dir("disconnect");
    let file = DbLocation::File(dir.join("t1").join("mappings.sqlite"));
    let directory = Directory::new();
    let scopes = ["settings.users.read", "crm.objects.owners.read"];
    {
        let host = host_with(Arc::new(directory.stub()), &[("t1", file.clone())]);
        run(&host, "crma_sync_users", json!({}), &scopes)
            .await
            .unwrap();
        host.disconnect("t1", crm_host::egress::Crm::Hubspot)
            .unwrap();
    }
    let stub = directory.stub();
    let restarted = host_with(Arc::new(stub.clone()), &[("t1", file.clone())]);
    let (kind, _) = tool_error(
        run(&restarted, "crma_list_owners", json!({}), &scopes)
            .await
            .map(|v| v.to_string()),
    );
    assert_eq!(kind, "not-connected");
    assert!(stub.requests().is_empty());
    assert_eq!(
        restarted
            .mappings("t1")
            .unwrap()
            .list("owner")
            .unwrap()
            .len(),
        5
    );
    let _ = std::fs::remove_dir_all(dir);
}
