//! The tenant's change journal and write confirmations, in the tenant's store beside its
//! mappings, so they survive restarts and every host on the store sees them. Rows are never
//! deleted: a settled change keeps its row, a used token is marked used.
//!
//! A confirmation token is `cf1.{id}.{mac}`: a random id naming the row, and an HMAC-SHA256
//! (key kept in the same store, made at first use) over the tenant, user, tool, input digest,
//! expiry and id. A token from another tenant names no row here; an altered one fails
//! its MAC.

use super::rows::{ChangeFilter, Confirmation, StatusMove};
use super::{StoreError, TenantDb, now_ms};
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use sha2::{Digest, Sha256};

pub use super::rows::{JournalRow, Kind, Status};

/// Who and what a journal entry or a token is bound to: the host's own knowledge of the call.
#[derive(Debug, Clone)]
pub struct CallIdentity<'a> {
    pub user_id: &'a str,
    pub tool: &'a str,
    pub call_id: &'a str,
}

/// Why a token was not redeemed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Unknown,
    Used,
    Expired,
    OtherUser,
    OtherTool,
    OtherInput,
    Store(String),
}

/// A change to journal, as the component describes it.
#[derive(Debug, Clone)]
pub struct NewChange<'a> {
    pub crm: &'a str,
    pub kind: Kind,
    pub object: &'a str,
    pub record_id: Option<&'a str>,
    pub old_values: &'a str,
    pub new_values: &'a str,
    pub reverts: Option<&'a str>,
    /// When the journalling call will have ended whatever happens to it (its time limit): a
    /// change still `pending` after that has no call left to settle it, and reads `unknown`.
    pub lease_until_ms: i64,
}

/// Largest value set one change may carry.
const MAX_VALUES_BYTES: usize = 256 << 10;

/// `bytes` secure random bytes, as lower-case hex: the ids of changes, tokens and calls.
pub(crate) fn random_hex(bytes: usize) -> Result<String, StoreError> {
    let mut buf = vec![0u8; bytes];
    SystemRandom::new()
        .fill(&mut buf)
        .map_err(|_| StoreError::Unavailable("no secure random numbers".into()))?;
    Ok(hex(&buf))
}

/// A random change id (staging rows of changes begun on different hosts never meet).
pub(crate) fn random_i64() -> i64 {
    let mut buf = [0u8; 8];
    // Without the system's randomness, the clock still tells concurrent changes apart.
    match SystemRandom::new().fill(&mut buf) {
        Ok(()) => i64::from_le_bytes(buf),
        Err(_) => now_ms() ^ i64::from(std::process::id()) << 40,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares in time that depends only on the length, so a MAC cannot be guessed byte by byte.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn sha256(text: &str) -> String {
    sha256_hex(text.as_bytes())
}

/// The SHA-256 of `bytes` as lower-case hex: tokens' inputs, and components by content.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn json_object(what: &str, text: &str) -> Result<(), StoreError> {
    if text.len() > MAX_VALUES_BYTES {
        return Err(StoreError::Invalid(format!(
            "{what} is larger than {MAX_VALUES_BYTES} bytes"
        )));
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(_)) => Ok(()),
        _ => Err(StoreError::Invalid(format!("{what} is not a JSON object"))),
    }
}

impl TenantDb {
    /// Journals a change before its write is sent; returns its id.
    pub fn journal_change(
        &self,
        who: &CallIdentity<'_>,
        change: &NewChange<'_>,
    ) -> Result<String, StoreError> {
        if !matches!(change.crm, "hubspot" | "salesforce") {
            return Err(StoreError::Invalid(format!("unknown CRM {:?}", change.crm)));
        }
        super::check_key("object type", change.object)?;
        if let Some(id) = change.record_id {
            super::check_key("record id", id)?;
        }
        json_object("old-values", change.old_values)?;
        json_object("new-values", change.new_values)?;
        let id = format!("chg_{}", random_hex(12)?);
        let row = JournalRow {
            id: id.clone(),
            at_ms: now_ms(),
            user_id: who.user_id.into(),
            tool: who.tool.into(),
            call_id: who.call_id.into(),
            status: Status::Pending,
            crm: change.crm.into(),
            kind: change.kind,
            object: change.object.into(),
            record_id: change.record_id.map(str::to_string),
            old_values: change.old_values.into(),
            new_values: change.new_values.into(),
            reverts: change.reverts.map(str::to_string),
        };
        self.rows
            .insert_change(&self.tenant, &row, change.lease_until_ms)?;
        Ok(id)
    }

    /// Moves one change from `from` to `status` (by `call_id` when given), keeping the record
    /// id once one is known; `NotFound` when no such change is in that state.
    pub(super) fn set_status(
        &self,
        id: &str,
        status: Status,
        record_id: Option<&str>,
        call_id: Option<&str>,
        from: Status,
    ) -> Result<(), StoreError> {
        if let Some(id) = record_id {
            super::check_key("record id", id)?;
        }
        let step = StatusMove {
            id,
            from,
            status,
            record_id,
            call_id,
        };
        if self.rows.move_status(&self.tenant, &step)? {
            Ok(())
        } else {
            Err(StoreError::NotFound(format!(
                "no {} change {id:?}",
                from.name()
            )))
        }
    }

    /// Settles a change of this tenant whose outcome was unknown, from a later call: `applied`
    /// with the record it made, or `failed`; any other change (pending, settled) is refused.
    pub fn resolve_change(
        &self,
        id: &str,
        status: Status,
        record_id: Option<&str>,
    ) -> Result<(), StoreError> {
        if !matches!(status, Status::Applied | Status::Failed) {
            return Err(StoreError::Invalid(
                "a change with an unknown outcome resolves to applied or failed".into(),
            ));
        }
        self.expire_leases()?;
        self.set_status(id, status, record_id, None, Status::Unknown)
            .map_err(|e| match e {
                StoreError::NotFound(_) => StoreError::NotFound(format!(
                    "no change {id:?} with an unknown outcome in this workspace"
                )),
                other => other,
            })
    }

    /// Up to `limit` (1 to 100) of this tenant's changes, newest first, matching every filter
    /// given.
    pub fn list_changes(
        &self,
        user_id: Option<&str>,
        record_id: Option<&str>,
        object: Option<&str>,
        limit: u32,
    ) -> Result<Vec<JournalRow>, StoreError> {
        let filter = ChangeFilter {
            user_id,
            record_id,
            object,
        };
        self.expire_leases()?;
        self.rows
            .list_changes(&self.tenant, &filter, limit.clamp(1, 100))
    }

    /// One of this tenant's changes.
    pub fn change(&self, id: &str) -> Result<Option<JournalRow>, StoreError> {
        self.expire_leases()?;
        self.rows.change(&self.tenant, id)
    }

    /// The tenant's signing key, made at first use and then kept in memory.
    fn signing_key(&self) -> Result<&hmac::Key, StoreError> {
        if let Some(key) = self.signing_key.get() {
            return Ok(key);
        }
        let mut candidate = vec![0u8; 32];
        SystemRandom::new()
            .fill(&mut candidate)
            .map_err(|_| StoreError::Unavailable("no secure random numbers".into()))?;
        let kept = self.rows.signing_key(&self.tenant, &candidate)?;
        Ok(self
            .signing_key
            .get_or_init(|| hmac::Key::new(hmac::HMAC_SHA256, &kept)))
    }

    fn mac(
        &self,
        key: &hmac::Key,
        who: &CallIdentity<'_>,
        input_sha256: &str,
        expires_ms: i64,
        id: &str,
    ) -> String {
        let message = [
            &*self.tenant,
            who.user_id,
            who.tool,
            input_sha256,
            &expires_ms.to_string(),
            id,
        ]
        .join("\u{0}");
        hex(&hmac::sign(key, message.as_bytes()).as_ref()[..16])
    }

    /// Signs a confirmation for this tenant, user and tool, bound to `input` and the values read
    /// for the preview; good for `ttl_ms`. Returns the token and when it expires.
    pub fn issue_confirmation(
        &self,
        who: &CallIdentity<'_>,
        input: &str,
        values_read: &str,
        ttl_ms: i64,
    ) -> Result<(String, i64), StoreError> {
        json_object("values-read", values_read)?;
        let key = self.signing_key()?;
        let id = random_hex(16)?;
        let input_sha256 = sha256(input);
        let expires_ms = now_ms() + ttl_ms;
        let mac = self.mac(key, who, &input_sha256, expires_ms, &id);
        self.rows.insert_confirmation(
            &self.tenant,
            &Confirmation {
                id: id.clone(),
                user_id: who.user_id.into(),
                tool: who.tool.into(),
                input_sha256,
                values_read: values_read.into(),
                expires_ms,
                used: false,
            },
        )?;
        Ok((format!("cf1.{id}.{mac}"), expires_ms))
    }

    /// Uses up a token once; returns the values read for its preview.
    pub fn redeem_confirmation(
        &self,
        who: &CallIdentity<'_>,
        token: &str,
        input: &str,
    ) -> Result<String, Refusal> {
        let store = |e: StoreError| Refusal::Store(e.to_string());
        let mut parts = token.split('.');
        let (Some("cf1"), Some(id), Some(mac), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Refusal::Unknown);
        };
        let Some(found) = self.rows.confirmation(&self.tenant, id).map_err(store)? else {
            return Err(Refusal::Unknown);
        };
        let key = self.signing_key().map_err(store)?;
        let issued_to = CallIdentity {
            user_id: &found.user_id,
            tool: &found.tool,
            call_id: "",
        };
        let expected = self.mac(key, &issued_to, &found.input_sha256, found.expires_ms, id);
        if !same_bytes(expected.as_bytes(), mac.as_bytes()) {
            return Err(Refusal::Unknown);
        }
        if found.used {
            return Err(Refusal::Used);
        }
        if found.user_id != who.user_id {
            return Err(Refusal::OtherUser);
        }
        if found.tool != who.tool {
            return Err(Refusal::OtherTool);
        }
        if found.input_sha256 != sha256(input) {
            return Err(Refusal::OtherInput);
        }
        let now = now_ms();
        if now >= found.expires_ms {
            return Err(Refusal::Expired);
        }
        // Single use, even between hosts: only one claim finds it unused.
        if self
            .rows
            .claim_confirmation(&self.tenant, id, now)
            .map_err(store)?
        {
            Ok(found.values_read)
        } else {
            Err(Refusal::Used)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenant_db::DbLocation;

    #[test]
    fn a_journal_from_before_declined_writes_keeps_its_rows_and_takes_declined() {
        let dir = std::env::temp_dir().join(format!("crm-journal-migrate-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("mappings.sqlite");
        {
            // The table as earlier versions made it, with one applied change.
            let old = rusqlite::Connection::open(&path).unwrap();
            old.execute_batch(
                "CREATE TABLE changes (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
                     tenant TEXT NOT NULL, at_ms INTEGER NOT NULL, user_id TEXT NOT NULL,
                     tool TEXT NOT NULL, call_id TEXT NOT NULL,
                     status TEXT NOT NULL CHECK (status IN ('pending', 'applied', 'failed', 'unknown')),
                     crm TEXT NOT NULL CHECK (crm IN ('hubspot', 'salesforce')),
                     kind TEXT NOT NULL CHECK (kind IN ('create', 'update', 'merge', 'association')),
                     object TEXT NOT NULL, record_id TEXT,
                     old_values TEXT NOT NULL CHECK (json_valid(old_values)),
                     new_values TEXT NOT NULL CHECK (json_valid(new_values)), reverts TEXT);
                 INSERT INTO changes VALUES (1, 'chg_old', 't1', 5, 'u', 'crmb_update_record',
                     'c', 'applied', 'salesforce', 'update', 'Account', '001', '{}', '{}', NULL);",
            )
            .unwrap();
        }
        let db = TenantDb::open("t1", &DbLocation::File(path)).unwrap();
        assert_eq!(
            db.change("chg_old").unwrap().unwrap().status,
            Status::Applied
        );
        let change = NewChange {
            crm: "hubspot",
            kind: Kind::Update,
            object: "deals",
            record_id: Some("5"),
            old_values: "{}",
            new_values: "{}",
            reverts: None,
            lease_until_ms: i64::MAX,
        };
        let id = db
            .journal_change(&who("u", "crma_update_record"), &change)
            .unwrap();
        db.settle_change(&who("u", "crma_update_record"), &id, Status::Declined, None)
            .unwrap();
        assert_eq!(db.change(&id).unwrap().unwrap().status, Status::Declined);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn who<'a>(user: &'a str, tool: &'a str) -> CallIdentity<'a> {
        CallIdentity {
            user_id: user,
            tool,
            call_id: "call-1",
        }
    }

    #[test]
    fn a_token_is_good_once_for_its_user_tool_and_input_only() {
        for (kind, db) in crate::tenant_db::testing::stores("acme") {
            let ana = who("ana", "crma_update_record");
            let (token, _) = db
                .issue_confirmation(&ana, "{\"a\":1}", r#"{"amount":"10"}"#, 60_000)
                .unwrap();
            // The MAC's last hex digit changed (to another digit whatever it was).
            let last = if token.ends_with('0') { '1' } else { '0' };
            let tampered = format!("{}{last}", &token[..token.len() - 1]);
            assert_eq!(
                db.redeem_confirmation(&ana, &tampered, "{\"a\":1}"),
                Err(Refusal::Unknown),
                "{kind}"
            );
            assert_eq!(
                db.redeem_confirmation(&who("bo", "crma_update_record"), &token, "{\"a\":1}"),
                Err(Refusal::OtherUser)
            );
            assert_eq!(
                db.redeem_confirmation(&who("ana", "crmb_update_record"), &token, "{\"a\":1}"),
                Err(Refusal::OtherTool)
            );
            assert_eq!(
                db.redeem_confirmation(&ana, &token, "{\"a\":2}"),
                Err(Refusal::OtherInput)
            );
            assert_eq!(
                db.redeem_confirmation(&ana, &token, "{\"a\":1}").as_deref(),
                Ok(r#"{"amount":"10"}"#)
            );
            assert_eq!(
                db.redeem_confirmation(&ana, &token, "{\"a\":1}"),
                Err(Refusal::Used)
            );
            let (expired, _) = db.issue_confirmation(&ana, "{}", "{}", 0).unwrap();
            assert_eq!(
                db.redeem_confirmation(&ana, &expired, "{}"),
                Err(Refusal::Expired)
            );
            // Another tenant's store knows none of this tenant's tokens.
            let (_, other) = crate::tenant_db::testing::stores("globex")
                .into_iter()
                .find(|(k, _)| *k == kind)
                .unwrap();
            let (theirs, _) = other.issue_confirmation(&ana, "{}", "{}", 60_000).unwrap();
            assert_eq!(
                db.redeem_confirmation(&ana, &theirs, "{}"),
                Err(Refusal::Unknown),
                "{kind}"
            );
        }
    }

    #[test]
    fn a_token_redeemed_by_many_at_once_is_used_exactly_once() {
        for (kind, db) in crate::tenant_db::testing::stores("race") {
            let ana = who("ana", "crma_update_record");
            let (token, _) = db.issue_confirmation(&ana, "{}", "{}", 60_000).unwrap();
            let wins = std::thread::scope(|scope| {
                let racers: Vec<_> = (0..8)
                    .map(|_| scope.spawn(|| db.redeem_confirmation(&ana, &token, "{}").is_ok()))
                    .collect();
                racers
                    .into_iter()
                    .map(|r| r.join())
                    .filter(|won| matches!(won, Ok(true)))
                    .count()
            });
            assert_eq!(wins, 1, "{kind}");
        }
    }

    #[test]
    fn changes_are_kept_settled_once_and_listed_newest_first() {
        for (kind, db) in crate::tenant_db::testing::stores("acme") {
            let ana = who("ana", "crma_update_record");
            let change = |record: &'static str| NewChange {
                crm: "hubspot",
                kind: Kind::Update,
                object: "deals",
                record_id: Some(record),
                old_values: r#"{"amount":"10"}"#,
                new_values: r#"{"amount":"20"}"#,
                reverts: None,
                lease_until_ms: i64::MAX,
            };
            let first = db.journal_change(&ana, &change("1")).unwrap();
            let second = db.journal_change(&ana, &change("2")).unwrap();
            db.settle_change(&ana, &first, Status::Applied, None)
                .unwrap();
            assert!(
                db.settle_change(&ana, &first, Status::Failed, None)
                    .is_err()
            );
            let other_call = CallIdentity {
                call_id: "call-2",
                ..ana.clone()
            };
            assert!(
                db.settle_change(&other_call, &second, Status::Applied, None)
                    .is_err()
            );
            let all = db.list_changes(None, None, None, 10).unwrap();
            assert_eq!(
                all.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
                [&second, &first],
                "{kind}"
            );
            assert_eq!(all[1].status, Status::Applied);
            assert_eq!(
                db.list_changes(None, Some("1"), Some("DEALS"), 10)
                    .unwrap()
                    .len(),
                1
            );
            assert!(
                db.list_changes(Some("bo"), None, None, 10)
                    .unwrap()
                    .is_empty()
            );
            assert!(
                db.journal_change(
                    &ana,
                    &NewChange {
                        old_values: "[]",
                        ..change("3")
                    }
                )
                .is_err()
            );
        }
    }
}
