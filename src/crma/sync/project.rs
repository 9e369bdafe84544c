//! What a sync keeps locally about each user and owner: the mapping each one projects to, and
//! the owner each user is linked to. Owners are projected page by page as they arrive; only
//! the links of the users already held are kept, so an account's owners are never all in memory.

use super::super::people::{Owner, User};
use crate::mapping::{Mapping, MappingKind};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// The stored fields of a mapping: the JSON object its fields struct serialises to.
pub(super) fn stored_fields(fields: impl Serialize) -> Map<String, Value> {
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

/// The mapping an owner projects to; one listed as archived is deleted.
pub(super) fn owner_mapping(owner: &Owner, archived: bool) -> Mapping {
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
    Mapping {
        kind: MappingKind::Owner,
        crm_id: owner.id.clone(),
        fields,
        deleted: archived,
    }
}

/// The names a user's roles and teams are shown with: role id → name, and team id → name
/// (`None` when the teams scope was not granted).
pub(super) struct Names {
    pub(super) roles: HashMap<String, String>,
    pub(super) teams: Option<HashMap<String, String>>,
}

/// The mapping a user projects to, linked to `owner_id`.
pub(super) fn user_mapping(user: &User, names: &Names, owner_id: Option<&str>) -> Mapping {
    let role_ids = user.roles();
    let secondary_team_ids: Vec<&str> = user
        .secondary_team_ids
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    let team_names = names.teams.as_ref().map(|teams| {
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
            .map(|r| names.roles.get(*r).map(String::as_str))
            .collect(),
        role_ids,
        primary_team_id: user.primary_team_id.as_deref(),
        secondary_team_ids,
        owner_id,
        team_names,
    });
    Mapping {
        kind: MappingKind::User,
        crm_id: user.id.clone(),
        fields,
        deleted: false,
    }
}

/// The owner each held user is linked to, gathered as owners arrive: the first active owner
/// naming the user, else the first archived one. Owners naming no held user are not kept.
pub(super) struct Links<'u> {
    held: HashSet<&'u str>,
    /// User id → owner id, and whether that owner was listed as archived.
    owner_of: HashMap<&'u str, (String, bool)>,
}

impl<'u> Links<'u> {
    pub(super) fn new(users: &'u [User]) -> Self {
        Links {
            held: users.iter().map(|u| u.id.as_str()).collect(),
            owner_of: HashMap::new(),
        }
    }

    /// Takes note of an owner, listed as archived or not.
    pub(super) fn see(&mut self, owner: &Owner, archived: bool) {
        let Some(user) = owner.user().and_then(|u| self.held.get(u).copied()) else {
            return;
        };
        let linked = self
            .owner_of
            .entry(user)
            .or_insert_with(|| (owner.id.clone(), archived));
        if linked.1 && !archived {
            *linked = (owner.id.clone(), archived);
        }
    }

    /// The owner a user is linked to.
    pub(super) fn owner_of(&self, user: &str) -> Option<&str> {
        self.owner_of.get(user).map(|(owner, _)| owner.as_str())
    }
}
