//! `crma_sync_users`: reads every page of HubSpot users (with role and team names where
//! scoped) and owners (active and archived), links owners to users by `userId`, and brings the
//! tenant's local mappings in line: keyed by user id / owner id, so a re-run never duplicates;
//! archived or removed ones are soft-deleted (kept, marked deleted) and restored when they
//! return.
//!
//! Reading and writing are apart: every listing is read completely first (a partial listing
//! would soft-delete whoever was on the unread pages), then the changes go to the store in one
//! all-or-nothing write.

use super::client::{self, Call};
use super::people::{Owner, Role, Team, User};
use super::scopes::{Operation, check};
use super::types::{Collection, decode};
use crate::error::{Crm, CrmProblem, ToolError};
use crate::mapping::{Mapping, MappingKind, StoreError};
use crate::tool::{CrmEffect, NoInput, Session, Tool};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};

/// Most pages read per listing (500 owners or 100 users a page) before giving up unchanged.
const MAX_PAGES: usize = 400;

/// Reads every page of a v3 listing, each row as the wire type `T`.
fn read_all<T: DeserializeOwned>(
    session: &mut Session<'_>,
    operation: Operation,
    path: Vec<&str>,
    query: Vec<(&str, String)>,
    what: &str,
) -> Result<Vec<T>, ToolError> {
    let mut items = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut page_query = query.clone();
        if let Some(after) = &after {
            page_query.push(("after", after.clone()));
        }
        let call = Call::get(operation.clone(), path.clone(), what).with_query(page_query);
        let page: Collection<T> = decode(client::send(session, call)?, what)?;
        let next = page.next_after().map(str::to_string);
        let page_was_empty = page.results.is_empty();
        items.extend(page.results);
        match next {
            Some(next) if Some(&next) == after.as_ref() => {
                return Err(CrmProblem::unexpected_answer(
                    Crm::Hubspot,
                    200,
                    format!("the {what} listing repeated its paging cursor; nothing was changed"),
                )
                .into());
            }
            Some(next) if !page_was_empty => after = Some(next),
            _ => return Ok(items),
        }
    }
    Err(ToolError::Unavailable(format!(
        "the {what} listing has more than {MAX_PAGES} pages; nothing was changed locally"
    )))
}

/// The stored fields of a mapping: the JSON object its fields struct serialises to.
fn stored_fields(fields: impl Serialize) -> Map<String, Value> {
    match serde_json::to_value(fields) {
        Ok(Value::Object(map)) => map,
        _ => unreachable!("mapping fields are structs of strings, booleans and lists"),
    }
}

/// What is kept locally about an owner.
#[derive(Serialize)]
struct OwnerFields<'a> {
    email: Option<&'a str>,
    first_name: Option<&'a str>,
    last_name: Option<&'a str>,
    user_id: Option<&'a str>,
    teams: Vec<OwnerTeamFields<'a>>,
}

/// A team of an owner, as kept locally.
#[derive(Serialize)]
struct OwnerTeamFields<'a> {
    id: &'a str,
    name: &'a str,
    primary: bool,
}

/// What is kept locally about a user; `team_names` only when the teams scope was granted.
#[derive(Serialize)]
struct UserFields<'a> {
    email: &'a str,
    first_name: Option<&'a str>,
    last_name: Option<&'a str>,
    super_admin: bool,
    role_ids: Vec<&'a str>,
    /// Each role's name, null for a role the roles listing did not name.
    role_names: Vec<Option<&'a str>>,
    primary_team_id: Option<&'a str>,
    secondary_team_ids: Vec<&'a str>,
    owner_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    team_names: Option<Vec<Option<&'a str>>>,
}

/// Everything read from HubSpot for one sync.
#[derive(Debug)]
struct Snapshot {
    users: Vec<User>,
    /// Role id → name.
    roles: HashMap<String, String>,
    /// Team id → name; `None` when the teams scope was not granted.
    teams: Option<HashMap<String, String>>,
    active_owners: Vec<Owner>,
    archived_owners: Vec<Owner>,
}

impl Snapshot {
    /// The mappings HubSpot's current state implies. Owners listed as archived are deleted;
    /// a user is linked to the active owner with its `userId` (an archived one otherwise).
    fn mappings(&self) -> Vec<Mapping> {
        let mut owner_of_user: HashMap<&str, (&str, bool)> = HashMap::new();
        let owners = self
            .active_owners
            .iter()
            .map(|o| (o, false))
            .chain(self.archived_owners.iter().map(|o| (o, true)));
        let mut seen_owners = BTreeMap::new();
        for (owner, archived) in owners {
            if let Some(user) = owner.user() {
                let linked = owner_of_user.entry(user).or_insert((&owner.id, archived));
                if linked.1 && !archived {
                    *linked = (&owner.id, archived);
                }
            }
            let fields = stored_fields(OwnerFields {
                email: owner.email.as_deref(),
                first_name: owner.first_name.as_deref(),
                last_name: owner.last_name.as_deref(),
                user_id: owner.user(),
                teams: owner
                    .teams
                    .iter()
                    .flatten()
                    .map(|t| OwnerTeamFields {
                        id: &t.id,
                        name: &t.name,
                        primary: t.primary,
                    })
                    .collect(),
            });
            // Listed both ways (mid-change in HubSpot): the archived answer wins.
            seen_owners.insert(
                owner.id.clone(),
                Mapping {
                    kind: MappingKind::Owner,
                    crm_id: owner.id.clone(),
                    fields,
                    deleted: archived,
                },
            );
        }
        let mut mappings: Vec<Mapping> = self
            .users
            .iter()
            .map(|user| {
                let role_ids = user.roles();
                let secondary_team_ids: Vec<&str> = user
                    .secondary_team_ids
                    .iter()
                    .flatten()
                    .map(String::as_str)
                    .collect();
                let team_names = self.teams.as_ref().map(|teams| {
                    user.primary_team_id
                        .iter()
                        .map(String::as_str)
                        .chain(secondary_team_ids.iter().copied())
                        .map(|t| teams.get(t).map(String::as_str))
                        .collect()
                });
                let fields = stored_fields(UserFields {
                    email: &user.email,
                    first_name: user.first_name.as_deref(),
                    last_name: user.last_name.as_deref(),
                    super_admin: user.is_super_admin(),
                    role_names: role_ids
                        .iter()
                        .map(|r| self.roles.get(*r).map(String::as_str))
                        .collect(),
                    role_ids,
                    primary_team_id: user.primary_team_id.as_deref(),
                    secondary_team_ids,
                    owner_id: owner_of_user.get(user.id.as_str()).map(|(owner, _)| *owner),
                    team_names,
                });
                Mapping {
                    kind: MappingKind::User,
                    crm_id: user.id.clone(),
                    fields,
                    deleted: false,
                }
            })
            .collect();
        mappings.extend(seen_owners.into_values());
        mappings
    }
}

/// What a sync changed, for one kind or in all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
struct Counts {
    /// Mappings made for users or owners seen for the first time.
    created: u32,
    /// Mappings whose fields changed (restored ones included).
    updated: u32,
    /// Mappings that stayed as they were.
    unchanged: u32,
    /// Mappings marked deleted (kept locally): archived owners, users gone from the account.
    soft_deleted: u32,
    /// Soft-deleted mappings that came back (also counted in `updated`).
    restored: u32,
}

impl std::ops::Add for Counts {
    type Output = Counts;
    fn add(self, other: Counts) -> Counts {
        Counts {
            created: self.created + other.created,
            updated: self.updated + other.updated,
            unchanged: self.unchanged + other.unchanged,
            soft_deleted: self.soft_deleted + other.soft_deleted,
            restored: self.restored + other.restored,
        }
    }
}

/// Compares the stored mappings of one kind with the observed ones: the writes to make and
/// the counts. A stored mapping no longer observed is soft-deleted, its fields kept.
fn plan(stored: Vec<Mapping>, observed: Vec<Mapping>) -> (Vec<Mapping>, Counts) {
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

/// What `crma_sync_users` answers: the counts for users and owners together, then apart.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SyncReport {
    #[serde(flatten)]
    total: Counts,
    /// The counts for users.
    users: Counts,
    /// The counts for owners.
    owners: Counts,
    /// Whether team names were read (the teams scope was granted).
    teams_included: bool,
}

/// `crma_sync_users`.
pub(crate) struct SyncUsers;

impl Tool for SyncUsers {
    const NAME: &'static str = "crma_sync_users";
    const DESCRIPTION: &'static str = "Sync HubSpot users and owners into the workspace's local \
        mappings for provisioning and identity mapping: reads every user (with role and team \
        names where scoped) and every owner (active and archived), links owners to users, and \
        reports counts created, updated, unchanged, soft_deleted. Archived owners and removed \
        users are soft-deleted locally (kept, marked deleted); re-running changes nothing new.";
    const TITLE: &'static str = "Sync HubSpot users and owners to local mappings";
    const EFFECT: CrmEffect = CrmEffect::Reads;
    type Input = NoInput;
    type Output = SyncReport;

    fn run(_: NoInput, session: &mut Session<'_>) -> Result<SyncReport, ToolError> {
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
        let snapshot = read_snapshot(session, with_teams)?;
        let observed = snapshot.mappings();

        let store_failed = |e: StoreError| {
            ToolError::Unavailable(format!(
                "{e}; nothing was changed locally, run the sync again later"
            ))
        };
        let store = session.store()?;
        let mut plan_kind = |kind: MappingKind| {
            let stored = store.list(kind).map_err(store_failed)?;
            let seen = observed
                .iter()
                .filter(|m| m.kind == kind)
                .cloned()
                .collect();
            Ok::<_, ToolError>(plan(stored, seen))
        };
        let (mut writes, users) = plan_kind(MappingKind::User)?;
        let (owner_writes, owners) = plan_kind(MappingKind::Owner)?;
        writes.extend(owner_writes);
        if !writes.is_empty() {
            store.put(&writes).map_err(store_failed)?;
        }
        Ok(SyncReport {
            total: users + owners,
            users,
            owners,
            teams_included: with_teams,
        })
    }
}

/// Reads users, roles, teams (when scoped) and owners, active and archived, every page.
fn read_snapshot(session: &mut Session<'_>, with_teams: bool) -> Result<Snapshot, ToolError> {
    let users = read_all::<User>(
        session,
        Operation::ListUsers,
        vec!["settings", "v3", "users"],
        vec![("limit", "100".to_string())],
        "users",
    )?;
    let roles = read_all::<Role>(
        session,
        Operation::ListRoles,
        vec!["settings", "v3", "users", "roles"],
        vec![],
        "roles",
    )?
    .into_iter()
    .map(|role| (role.id, role.name))
    .collect();
    let teams = if with_teams {
        let teams = read_all::<Team>(
            session,
            Operation::ListTeams,
            vec!["settings", "v3", "users", "teams"],
            vec![],
            "teams",
        )?;
        Some(teams.into_iter().map(|team| (team.id, team.name)).collect())
    } else {
        None
    };
    let owners = |archived: bool| {
        vec![
            ("limit", "500".to_string()),
            ("archived", archived.to_string()),
        ]
    };
    let active_owners = read_all::<Owner>(
        session,
        Operation::ListOwners,
        vec!["crm", "v3", "owners"],
        owners(false),
        "owners",
    )?;
    let archived_owners = read_all::<Owner>(
        session,
        Operation::ListOwners,
        vec!["crm", "v3", "owners"],
        owners(true),
        "archived owners",
    )?;
    Ok(Snapshot {
        users,
        roles,
        teams,
        active_owners,
        archived_owners,
    })
}

#[cfg(test)]
mod tests;
