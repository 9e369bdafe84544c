//! The people of a HubSpot account as HubSpot's answers describe them, as typed wire structs:
//! users with their roles and teams (user provisioning API) and owners (owners API).
//!
//! `crma_sync_users`, `crma_list_roles`, `crma_list_owners` and `crma_list_users` all read
//! these, so a field HubSpot renames is caught in one place; [`owner_names`] reads every
//! owner's name for tools that show owners in words.
//!
//! Only the fields the tools read are declared, each as HubSpot documents it: required ones
//! are plain fields (a missing one makes the whole answer an unexpected one), optional ones are
//! `Option`s (missing and `null` alike are `None`).

use super::client::{self, Call};
use super::scopes::Operation;
use super::types::AnswerId;
use super::wire::Page;
use crate::error::ToolError;
use crate::tool::Session;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A role (permission set), one row of `GET /settings/v3/users/roles`
/// (<https://developers.hubspot.com/docs/api-reference/settings-user-provisioning-v3/roles/get-settings-v3-users-roles>):
/// `{"id": "1234", "name": "a new role", "requiresBillingWrite": false}`.
#[derive(Debug, Deserialize)]
pub(crate) struct Role {
    pub(crate) id: String,
    pub(crate) name: String,
}

/// A team, one row of `GET /settings/v3/users/teams` (user provisioning guide,
/// <https://developers.hubspot.com/docs/api-reference/settings-user-provisioning-v3/guide>):
/// `{"id": "6222455", "name": "Team 1", "userIds": ["..."], "secondaryUserIds": []}`.
#[derive(Debug, Deserialize)]
pub(crate) struct Team {
    pub(crate) id: String,
    pub(crate) name: String,
}

/// A user, one row of `GET /settings/v3/users`
/// (<https://developers.hubspot.com/docs/api-reference/settings-user-provisioning-v3/users/get-settings-v3-users->):
/// `{"id": "123", "email": "newUser@email.com", "roleIds": ["100"], "primaryTeamId": "101",
/// "secondaryTeamIds": ["102"], "superAdmin": "false"}`. Only `id` and `email` are required;
/// older accounts name one role in `roleId` instead of the `roleIds` list.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct User {
    pub(crate) id: String,
    pub(crate) email: String,
    pub(crate) first_name: Option<String>,
    pub(crate) last_name: Option<String>,
    pub(crate) role_ids: Option<Vec<String>>,
    pub(crate) role_id: Option<String>,
    pub(crate) primary_team_id: Option<String>,
    pub(crate) secondary_team_ids: Option<Vec<String>>,
    super_admin: Option<TextOrBool>,
}

/// `superAdmin` is a boolean in HubSpot's schema but a string (`"false"`) in the example answer
/// of the page cited on [`User`], so both are read.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum TextOrBool {
    Bool(bool),
    Text(String),
}

impl User {
    /// The user's roles: the `roleIds` list when there is one, else the single `roleId`.
    pub(crate) fn roles(&self) -> Vec<&str> {
        match (&self.role_ids, &self.role_id) {
            (Some(ids), _) => ids.iter().map(String::as_str).collect(),
            (None, Some(one)) => vec![one.as_str()],
            (None, None) => Vec::new(),
        }
    }

    /// Whether HubSpot says the user is a super admin; not when it does not say.
    pub(crate) fn is_super_admin(&self) -> bool {
        match &self.super_admin {
            Some(TextOrBool::Bool(flag)) => *flag,
            Some(TextOrBool::Text(text)) => text == "true",
            None => false,
        }
    }
}

/// An owner, one row of `GET /crm/v3/owners`
/// (<https://developers.hubspot.com/docs/api-reference/crm-owners-v3/owners/get-crm-v3-owners>):
/// `{"id": "41629779", "email": "dana@example.com", "firstName": "Dana", "lastName": "W",
/// "userId": 9001, "userIdIncludingInactive": 9001, "archived": false, "teams": [...]}`.
/// Only `id` is required among the fields read. HubSpot documents `userId` as an integer;
/// it is read as a number or a digit string, as before.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Owner {
    pub(crate) id: String,
    pub(crate) email: Option<String>,
    pub(crate) first_name: Option<String>,
    pub(crate) last_name: Option<String>,
    pub(crate) user_id: Option<AnswerId>,
    /// HubSpot clears `userId` on archived owners and keeps the link here (owners guide).
    pub(crate) user_id_including_inactive: Option<AnswerId>,
    /// Required by HubSpot; an answer without it is read as an active owner.
    #[serde(default)]
    pub(crate) archived: bool,
    pub(crate) teams: Option<Vec<OwnerTeam>>,
}

impl Owner {
    /// The user behind the owner, archived or not.
    pub(crate) fn user(&self) -> Option<&str> {
        self.user_id
            .as_ref()
            .or(self.user_id_including_inactive.as_ref())
            .map(AnswerId::as_str)
    }
}

/// A team an owner belongs to, inside an owner row: `{"id": "9", "name": "Sales", "primary":
/// true}`, all three required. `crma_list_owners` passes it on as it came.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub(super) struct OwnerTeam {
    /// The team's id, as crma_list_users gives it in primary_team_id and secondary_team_ids.
    pub(crate) id: String,
    /// The team's name.
    pub(crate) name: String,
    /// True for the owner's primary team.
    pub(crate) primary: bool,
}

/// Most owner pages read for names (500 owners a page).
const MAX_OWNER_PAGES: usize = 20;

/// Owners' names (`Jane Doe`, else the e-mail, else the id), active and archived, by owner
/// id: what turns a stored `hubspot_owner_id` into words. A person's name is a compound of its
/// parts, so when the workspace masks any of them (`lastname`, `firstname`, ...) no owner is
/// named by name: the e-mail (unless masked too) or the id stands in.
pub(crate) fn owner_names(
    session: &mut Session<'_>,
) -> Result<std::collections::BTreeMap<String, String>, ToolError> {
    let policy = &session.config()?.policy;
    let by_name = !crate::masking::person_name_masked(&policy.masked);
    let by_email = !policy.is_masked("email");
    let mut names = std::collections::BTreeMap::new();
    for archived in ["false", "true"] {
        let mut after: Option<String> = None;
        for _ in 0..MAX_OWNER_PAGES {
            let mut query = vec![("limit", "500".to_string()), ("archived", archived.into())];
            if let Some(after) = &after {
                query.push(("after", after.clone()));
            }
            let call = Call::get(Operation::ListOwners, vec!["crm", "v3", "owners"], "owners")
                .with_query(query);
            let page: Page<Owner> = client::send_for(session, call)?;
            after = page.next_after().map(str::to_string);
            for owner in page.results {
                let name = [owner.first_name.as_deref(), owner.last_name.as_deref()]
                    .into_iter()
                    .flatten()
                    .filter(|n| by_name && !n.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ");
                let name = if name.is_empty() {
                    owner
                        .email
                        .clone()
                        .filter(|_| by_email)
                        .unwrap_or_else(|| owner.id.clone())
                } else {
                    name
                };
                names.entry(owner.id).or_insert(name);
            }
            if after.is_none() {
                break;
            }
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn roles_and_teams_read_hubspots_rows() {
        // The role example of the user provisioning guide, and a team row of its teams listing.
        let role: Role = serde_json::from_value(
            json!({"id": "1234", "name": "a new role", "requiresBillingWrite": false}),
        )
        .unwrap();
        assert_eq!(
            (role.id.as_str(), role.name.as_str()),
            ("1234", "a new role")
        );
        let team: Team = serde_json::from_value(
            json!({"id": "6222455", "name": "Team 1", "userIds": ["2"], "secondaryUserIds": []}),
        )
        .unwrap();
        assert_eq!(team.name, "Team 1");
        let err = serde_json::from_value::<Role>(json!({"id": "1234"})).unwrap_err();
        assert!(err.to_string().contains("missing field `name`"), "{err}");
    }

    #[test]
    fn a_user_reads_its_roles_from_either_field() {
        // The example answer of GET /settings/v3/users (page cited on `User`), `superAdmin` a
        // string as there.
        let user: User = serde_json::from_value(json!({"id": "123", "email": "newUser@email.com",
            "roleId": "100", "primaryTeamId": "101", "secondaryTeamIds": ["102"], "superAdmin": "false"}))
        .unwrap();
        assert_eq!(user.roles(), ["100"]);
        assert!(!user.is_super_admin());
        assert_eq!(
            user.secondary_team_ids.as_deref(),
            Some(&["102".to_string()][..])
        );
        let user: User = serde_json::from_value(
            json!({"id": "1", "email": "a@x.com", "roleIds": ["3", "4"], "roleId": "3", "superAdmin": true}),
        )
        .unwrap();
        assert_eq!(user.roles(), ["3", "4"]);
        assert!(user.is_super_admin());
        let err = serde_json::from_value::<User>(json!({"id": "1"})).unwrap_err();
        assert!(err.to_string().contains("missing field `email`"), "{err}");
    }

    #[test]
    fn an_archived_owner_keeps_its_user_in_the_inactive_field() {
        // As GET /crm/v3/owners?archived=true lists it: `userId` null (page cited on `Owner`).
        let owner: Owner = serde_json::from_value(json!({"id": "81035703",
            "email": "jonas@acme.example.com", "type": "PERSON", "firstName": "Jonas",
            "lastName": "Berg", "userId": null, "userIdIncludingInactive": 7103573,
            "createdAt": "2025-09-01T10:00:00Z", "updatedAt": "2025-09-01T10:00:00Z",
            "archived": true, "teams": [{"id": "9001", "name": "Sales", "primary": true}]}))
        .unwrap();
        assert_eq!(owner.user(), Some("7103573"));
        assert!(owner.teams.unwrap()[0].primary);
        let err = serde_json::from_value::<Owner>(json!({"email": "x@y.z"})).unwrap_err();
        assert!(err.to_string().contains("missing field `id`"), "{err}");
        let err = serde_json::from_value::<Owner>(json!({"id": "1", "teams": [{"id": "9"}]}))
            .unwrap_err();
        assert!(err.to_string().contains("missing field `name`"), "{err}");
    }
}
