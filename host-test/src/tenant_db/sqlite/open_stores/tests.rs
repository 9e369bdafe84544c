use super::super::SqliteRows;
use super::{FEWEST, OpenStores};
use crate::tenant_db::StoredMapping;
use crate::tenant_db::rows::{Rows, Staged};
use std::path::PathBuf;
use std::sync::Arc;

/// A folder of its own under the system's temporary folder.
fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "crm-open-stores-{name}-{}-{}",
        std::process::id(),
        crate::tenant_db::journal::random_hex(4).unwrap()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn owner(id: &str) -> StoredMapping {
    StoredMapping {
        kind: "owner".into(),
        crm_id: id.into(),
        fields: format!(r#"{{"name":"{id}"}}"#),
        deleted: false,
    }
}

/// `count` tenants' stores in `dir`, each holding one mapping of its own.
fn stores(dir: &std::path::Path, count: usize, budget: &Arc<OpenStores>) -> Vec<SqliteRows> {
    (0..count)
        .map(|i| {
            let rows =
                SqliteRows::open_counted(Some(dir.join(format!("t{i}.sqlite"))), budget.clone())
                    .unwrap();
            rows.put(&format!("t{i}"), &[owner(&format!("o{i}"))], 1)
                .unwrap();
            rows
        })
        .collect()
}

#[test]
fn more_stores_than_the_limit_each_keep_and_serve_their_own_rows() {
    let dir = folder("many");
    let budget = OpenStores::new(FEWEST);
    let all = stores(&dir, 3 * FEWEST, &budget);
    assert!(budget.len() <= FEWEST, "{} open", budget.len());
    // Each one, opened again as it is asked, still holds its own mapping and no other's.
    for (i, rows) in all.iter().enumerate() {
        let tenant = format!("t{i}");
        let got = rows.list_page(&tenant, "owner", None, 10).unwrap();
        assert_eq!(got, vec![owner(&format!("o{i}"))]);
        assert!(budget.len() <= FEWEST);
    }
    let open = all.iter().filter(|r| r.is_open()).count();
    assert_eq!(open, budget.len());
    drop(all);
    assert_eq!(budget.len(), 0, "a dropped store is no longer counted");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_least_recently_used_store_is_the_one_closed() {
    let dir = folder("lru");
    let budget = OpenStores::new(FEWEST);
    let all = stores(&dir, FEWEST, &budget);
    // The first is used again, so the second is now the least recently used.
    all[0].ping().unwrap();
    let newcomer = stores(&dir.join("new"), 1, &budget);
    assert!(all[0].is_open());
    assert!(!all[1].is_open());
    assert!(newcomer[0].is_open());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_store_with_staged_rows_or_in_use_stays_open_past_the_limit() {
    let dir = folder("pinned");
    let budget = OpenStores::new(FEWEST);
    let first = stores(&dir, 1, &budget).pop().unwrap();
    first
        .stage("t0", 7, Staged::Writes, &[owner("staged")])
        .unwrap();
    let second = stores(&dir.join("second"), 1, &budget).pop().unwrap();
    let held = second.conn().unwrap();
    let others = stores(&dir.join("others"), 3 * FEWEST, &budget);
    assert!(first.is_open(), "its staging lives in the connection");
    drop(held);
    assert!(second.is_open(), "it was in use");
    // The staged write is still there to commit.
    assert!(first.commit_change("t0", 7, 2, None).unwrap());
    let got = first.list_page("t0", "owner", None, 10).unwrap();
    assert_eq!(got, vec![owner("o0"), owner("staged")]);
    // Once committed, nothing keeps it open.
    drop(stores(&dir.join("late"), 2 * FEWEST, &budget));
    let _ = others;
    assert!(!first.is_open());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_store_in_memory_is_never_counted_or_closed() {
    let budget = OpenStores::new(FEWEST);
    let memory = SqliteRows::open_counted(None, budget.clone()).unwrap();
    memory.put("m", &[owner("kept")], 1).unwrap();
    let dir = folder("memory");
    let _files = stores(&dir, 2 * FEWEST, &budget);
    assert!(memory.is_open());
    assert_eq!(
        memory.list_page("m", "owner", None, 10).unwrap(),
        vec![owner("kept")]
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn stores_idle_past_the_wait_close_and_open_again_at_their_next_query() {
    let dir = folder("idle");
    let budget = OpenStores::new(FEWEST);
    let all = stores(&dir, 3, &budget);
    all[0]
        .stage("t0", 9, Staged::Observed, &[owner("seen")])
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(30));
    all[1].ping().unwrap();
    let closed = budget.close_idle(std::time::Duration::from_millis(20));
    assert_eq!(
        closed.len(),
        1,
        "only the third: the first is staging, the second was used"
    );
    drop(closed);
    assert!(all[0].is_open() && all[1].is_open() && !all[2].is_open());
    assert_eq!(budget.len(), 2);
    assert_eq!(
        all[2].list_page("t2", "owner", None, 10).unwrap(),
        vec![owner("o2")]
    );
    assert_eq!(budget.len(), 3);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn idle_stores_are_trimmed_once_and_still_serve_their_rows() {
    use std::time::Duration;
    let dir = folder("trim");
    let budget = OpenStores::new(FEWEST);
    let all = stores(&dir, 3, &budget);
    all[0]
        .stage("t0", 9, Staged::Observed, &[owner("seen")])
        .unwrap();
    std::thread::sleep(Duration::from_millis(30));
    all[1].ping().unwrap();
    assert_eq!(
        budget.trim_idle(Duration::from_millis(20)),
        1,
        "only the third: the first is staging, the second was used"
    );
    assert_eq!(
        budget.trim_idle(Duration::from_millis(20)),
        0,
        "a trimmed store is not trimmed again until it is used"
    );
    assert!(
        all.iter().all(|rows| rows.is_open()),
        "trimming closes none"
    );
    assert_eq!(
        all[2].list_page("t2", "owner", None, 10).unwrap(),
        vec![owner("o2")]
    );
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(
        budget.trim_idle(Duration::from_millis(20)),
        2,
        "the second and third, idle again; the first is still staging"
    );
    let _ = std::fs::remove_dir_all(dir);
}
