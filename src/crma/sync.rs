//! `crma_sync_users`: reads every page of HubSpot users (with role and team names where
//! scoped) and owners (active and archived), links owners to users by `userId`, and brings the
//! tenant's local mappings in line: keyed by user id / owner id, so a re-run never duplicates;
//! archived or removed ones are soft-deleted (kept, marked deleted) and restored when they
//! return.
//!
//! Reading and writing are apart: every listing is read completely first (a partial listing
//! would soft-delete whoever was on the unread pages), then the changes go to the store in one
//! all-or-nothing write.

use super::client::{self, Call, results};

use super::scopes::{Operation, check};
use super::tools::next_cursor;
use super::types::id_text;
use crate::error::{Crm, CrmProblem, ToolError};
use crate::mapping::{Mapping, MappingKind};
use crate::tool::{NoInput, Session, Tool};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};

/// Most pages read per listing (500 owners or 100 users a page) before giving up unchanged.
const MAX_PAGES: usize = 400;

/// Reads every page of a v3 listing.
fn read_all(
    session: &mut Session<'_>,
    operation: Operation,
    path: Vec<&str>,
    query: Vec<(&str, String)>,
    what: &str,
) -> Result<Vec<Value>, ToolError> {
    let mut items = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut page_query = query.clone();
        if let Some(after) = &after {
            page_query.push(("after", after.clone()));
        }
        let call = Call::get(operation.clone(), path.clone(), what).with_query(page_query);
        let answer = client::send(session, call)?;
        let page = results(&answer, what)?;
        items.extend(page.iter().cloned());
        match next_cursor(&answer) {
            Some(next) if Some(&next) == after.as_ref() => {
                return Err(CrmProblem::unexpected_answer(
                    Crm::Hubspot,
                    200,
                    format!("the {what} listing repeated its paging cursor; nothing was changed"),
                )
                .into());
            }
            Some(next) if !page.is_empty() => after = Some(next),
            _ => return Ok(items),
        }
    }
    Err(ToolError::Unavailable(format!(
        "the {what} listing has more than {MAX_PAGES} pages; nothing was changed locally"
    )))
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Everything read from HubSpot for one sync.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub users: Vec<Value>,
    /// Role id → name.
    pub roles: HashMap<String, String>,
    /// Team id → name; `None` when the teams scope was not granted.
    pub teams: Option<HashMap<String, String>>,
    pub active_owners: Vec<Value>,
    pub archived_owners: Vec<Value>,
}

impl Snapshot {
    /// The mappings HubSpot's current state implies. Owners listed as archived are deleted;
    /// a user is linked to the active owner with its `userId` (an archived one otherwise).
    pub fn mappings(&self) -> Result<Vec<Mapping>, ToolError> {
        let missing_id = |what: &str| {
            ToolError::from(CrmProblem::unexpected_answer(
                Crm::Hubspot,
                200,
                format!("a {what} in the listing has no id; nothing was changed"),
            ))
        };
        let mut owner_of_user: HashMap<String, (String, bool)> = HashMap::new();
        let mut mappings = Vec::new();
        let owners = self
            .active_owners
            .iter()
            .map(|o| (o, false))
            .chain(self.archived_owners.iter().map(|o| (o, true)));
        let mut seen_owners = BTreeMap::new();
        for (owner, archived) in owners {
            let id = id_text(&owner["id"]).ok_or_else(|| missing_id("owner"))?;
            // HubSpot clears `userId` on archived owners and keeps the link in
            // `userIdIncludingInactive` (owners guide), so read both.
            let user_id =
                id_text(&owner["userId"]).or_else(|| id_text(&owner["userIdIncludingInactive"]));
            if let Some(user) = &user_id {
                let linked = owner_of_user
                    .entry(user.clone())
                    .or_insert((id.clone(), archived));
                if linked.1 && !archived {
                    *linked = (id.clone(), archived);
                }
            }
            let teams: Vec<Value> = owner["teams"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| json!({"id": id_text(&t["id"]), "name": t["name"], "primary": t["primary"]}))
                .collect();
            let fields = object(json!({
                "email": owner["email"], "first_name": owner["firstName"], "last_name": owner["lastName"],
                "user_id": user_id, "teams": teams,
            }));
            // Listed both ways (mid-change in HubSpot): the archived answer wins.
            seen_owners.insert(
                id.clone(),
                Mapping {
                    kind: MappingKind::Owner,
                    crm_id: id,
                    fields,
                    deleted: archived,
                },
            );
        }
        for user in &self.users {
            let id = id_text(&user["id"]).ok_or_else(|| missing_id("user"))?;
            let role_ids: Vec<String> = match (&user["roleIds"], id_text(&user["roleId"])) {
                (Value::Array(ids), _) => ids.iter().filter_map(id_text).collect(),
                (_, Some(one)) => vec![one],
                _ => Vec::new(),
            };
            let role_names: Vec<Value> = role_ids
                .iter()
                .map(|r| self.roles.get(r).map_or(Value::Null, |n| n.as_str().into()))
                .collect();
            let primary_team = id_text(&user["primaryTeamId"]);
            let secondary_teams: Vec<String> = user["secondaryTeamIds"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(id_text)
                .collect();
            let mut fields = object(json!({
                "email": user["email"], "first_name": user["firstName"], "last_name": user["lastName"],
                "super_admin": user["superAdmin"] == true,
                "role_ids": role_ids, "role_names": role_names,
                "primary_team_id": primary_team, "secondary_team_ids": secondary_teams,
                "owner_id": owner_of_user.get(&id).map(|(owner, _)| owner.clone()),
            }));
            if let Some(teams) = &self.teams {
                let names: Vec<Value> = primary_team
                    .iter()
                    .chain(&secondary_teams)
                    .map(|t| teams.get(t).map_or(Value::Null, |n| n.as_str().into()))
                    .collect();
                fields.insert("team_names".into(), names.into());
            }
            mappings.push(Mapping {
                kind: MappingKind::User,
                crm_id: id,
                fields,
                deleted: false,
            });
        }
        mappings.extend(seen_owners.into_values());
        Ok(mappings)
    }
}

/// What a sync changed, for one kind or in all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    pub created: u32,
    pub updated: u32,
    pub unchanged: u32,
    pub soft_deleted: u32,
    /// Soft-deleted mappings that came back (also counted in `updated`).
    pub restored: u32,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.created += other.created;
        self.updated += other.updated;
        self.unchanged += other.unchanged;
        self.soft_deleted += other.soft_deleted;
        self.restored += other.restored;
    }
}

/// Compares the stored mappings of one kind with the observed ones: the writes to make and
/// the counts. A stored mapping no longer observed is soft-deleted, its fields kept.
pub fn plan(stored: Vec<Mapping>, observed: Vec<Mapping>) -> (Vec<Mapping>, Counts) {
    let mut stored: BTreeMap<String, Mapping> =
        stored.into_iter().map(|m| (m.crm_id.clone(), m)).collect();
    let mut writes = Vec::new();
    let mut counts = Counts::default();
    for new in observed {
        match stored.remove(&new.crm_id) {
            None => {
                counts.created += 1;
                writes.push(new);
            }
            Some(old) if old == new => counts.unchanged += 1,
            Some(old) => {
                match (old.deleted, new.deleted) {
                    (false, true) => counts.soft_deleted += 1,
                    (true, false) => {
                        counts.restored += 1;
                        counts.updated += 1;
                    }
                    _ => counts.updated += 1,
                }
                writes.push(new);
            }
        }
    }
    for (_, mut gone) in stored {
        if gone.deleted {
            counts.unchanged += 1;
        } else {
            gone.deleted = true;
            counts.soft_deleted += 1;
            writes.push(gone);
        }
    }
    (writes, counts)
}

/// `crma_sync_users`.
pub struct SyncUsers;

impl Tool for SyncUsers {
    const NAME: &'static str = "crma_sync_users";
    const DESCRIPTION: &'static str = "Sync HubSpot users and owners into the workspace's local \
        mappings for provisioning and identity mapping: reads every user (with role and team \
        names where scoped) and every owner (active and archived), links owners to users, and \
        reports counts created, updated, unchanged, soft_deleted. Archived owners and removed \
        users are soft-deleted locally (kept, marked deleted); re-running changes nothing new.";
    const READ_ONLY: bool = true;
    type Input = NoInput;
    type Output = Value;

    fn run(_: NoInput, session: &mut Session<'_>) -> Result<Self::Output, ToolError> {
        // Both listings are needed; name everything missing at once, before sending anything.
        let granted = session.ctx.granted_scopes.clone();
        let mut missing = Vec::new();
        for operation in [Operation::ListUsers, Operation::ListOwners] {
            if let Err(ToolError::MissingScopes(scopes)) = check(&granted, &operation) {
                missing.extend(scopes);
            }
        }
        if !missing.is_empty() {
            return Err(ToolError::MissingScopes(missing));
        }
        session.store()?;
        let with_teams = check(&granted, &Operation::ListTeams).is_ok();

        let limit = |n: u32| vec![("limit", n.to_string())];
        let users = read_all(
            session,
            Operation::ListUsers,
            vec!["settings", "v3", "users"],
            limit(100),
            "users",
        )?;
        let names = |items: Vec<Value>| -> HashMap<String, String> {
            items
                .iter()
                .filter_map(|i| Some((id_text(&i["id"])?, i["name"].as_str()?.to_string())))
                .collect()
        };
        let roles = names(read_all(
            session,
            Operation::ListRoles,
            vec!["settings", "v3", "users", "roles"],
            vec![],
            "roles",
        )?);
        let teams = if with_teams {
            Some(names(read_all(
                session,
                Operation::ListTeams,
                vec!["settings", "v3", "users", "teams"],
                vec![],
                "teams",
            )?))
        } else {
            None
        };
        let owners = |archived: bool| {
            vec![
                ("limit", "500".to_string()),
                ("archived", archived.to_string()),
            ]
        };
        let active_owners = read_all(
            session,
            Operation::ListOwners,
            vec!["crm", "v3", "owners"],
            owners(false),
            "owners",
        )?;
        let archived_owners = read_all(
            session,
            Operation::ListOwners,
            vec!["crm", "v3", "owners"],
            owners(true),
            "archived owners",
        )?;
        let snapshot = Snapshot {
            users,
            roles,
            teams,
            active_owners,
            archived_owners,
        };
        let observed = snapshot.mappings()?;

        let store_failed = |e: crate::mapping::StoreError| {
            ToolError::Unavailable(format!(
                "{e}; nothing was changed locally, run the sync again later"
            ))
        };
        let store = session.store()?;
        let mut writes = Vec::new();
        let mut total = Counts::default();
        let mut by_kind = Map::new();
        for (kind, name) in [(MappingKind::User, "users"), (MappingKind::Owner, "owners")] {
            let stored = store.list(kind).map_err(store_failed)?;
            let seen = observed
                .iter()
                .filter(|m| m.kind == kind)
                .cloned()
                .collect();
            let (changes, counts) = plan(stored, seen);
            writes.extend(changes);
            total.add(counts);
            by_kind.insert(name.into(), json!(counts));
        }
        if !writes.is_empty() {
            store.put(&writes).map_err(store_failed)?;
        }
        let mut out = json!(total);
        out["users"] = by_kind["users"].clone();
        out["owners"] = by_kind["owners"].clone();
        out["teams_included"] = with_teams.into();
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
