//! Who is in the HubSpot account: `crma_list_owners` (whom records can be assigned to) and
//! `crma_list_users` (who can log in, with roles and teams).

use super::{after, next_cursor_of};
use crate::crma::client::{self, Call};
use crate::crma::people::{Owner, OwnerTeam, User};
use crate::crma::scopes::Operation;
use crate::crma::wire::Page;
use crate::error::ToolError;
use crate::policy::ReadScope;
use crate::tool::{CrmEffect, Session, Tool, capped};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Input of `crma_list_owners`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListOwnersInput {
    /// true lists only archived (deactivated) owners; HubSpot lists active ones otherwise.
    #[serde(default)]
    pub archived: bool,
    /// Only the owner with this email.
    #[serde(default)]
    pub email: Option<String>,
    /// 1-500, default 100.
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub cursor: Option<String>,
}

/// `crma_list_owners`.
pub struct ListOwners;

/// What `crma_list_owners` answers: one page of owners.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OwnersPage {
    /// The owners on this page.
    results: Vec<OwnerOutput>,
    /// Pass it back as cursor for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
}

/// One owner: someone (or a queue) records can be assigned to.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct OwnerOutput {
    /// The owner id: the value of a record's hubspot_owner_id.
    id: String,
    /// The owner's email, or null when HubSpot has none.
    email: Option<String>,
    /// First name, or null when HubSpot has none.
    first_name: Option<String>,
    /// Last name, or null when HubSpot has none.
    last_name: Option<String>,
    /// The HubSpot user behind the owner (the id crma_list_users gives), also for a
    /// deactivated owner; null for an owner without a user, such as a queue.
    user_id: Option<u64>,
    /// True for a deactivated owner.
    archived: bool,
    /// The owner's teams, or null when HubSpot lists none.
    teams: Option<Vec<OwnerTeam>>,
}

impl From<Owner> for OwnerOutput {
    fn from(owner: Owner) -> Self {
        // Archived owners keep their user only in `userIdIncludingInactive`; HubSpot's user
        // ids are integers.
        let user_id = owner.user().and_then(|id| id.parse().ok());
        OwnerOutput {
            id: owner.id,
            email: owner.email,
            first_name: owner.first_name,
            last_name: owner.last_name,
            user_id,
            archived: owner.archived,
            teams: owner.teams,
        }
    }
}

impl Tool for ListOwners {
    const NAME: &'static str = "crma_list_owners";
    const DESCRIPTION: &'static str = "List HubSpot owners (the users and queues records can be \
        assigned to): id, email, name, linked user id, teams. Active by default; archived=true \
        lists deactivated ones. Use it to map an owner id to a person.";
    const TITLE: &'static str = "List HubSpot owners";
    const EFFECT: CrmEffect = CrmEffect::Reads;
    type Input = ListOwnersInput;
    type Output = OwnersPage;

    /// A lookup by e-mail: an answer or none would say whether a masked e-mail is this one.
    fn reads(input: &ListOwnersInput) -> ReadScope<'_> {
        let by_email = input.email.as_deref().is_some_and(|e| !e.trim().is_empty());
        ReadScope {
            fields: if by_email { vec!["email"] } else { Vec::new() },
            records: input.limit.map(Into::into),
            ..ReadScope::default()
        }
    }

    fn cap_records(input: &mut ListOwnersInput, cap: u32) {
        input.limit = capped(input.limit, 100, cap);
    }

    fn run(input: ListOwnersInput, session: &mut Session<'_>) -> Result<OwnersPage, ToolError> {
        let limit = input.limit.unwrap_or(100);
        if !(1..=500).contains(&limit) {
            return Err(ToolError::invalid("limit must be from 1 to 500"));
        }
        let mut query = vec![
            ("limit", limit.to_string()),
            ("archived", input.archived.to_string()),
        ];
        if let Some(after) = after(&input.cursor)? {
            query.push(("after", after));
        }
        if let Some(email) = input.email.filter(|e| !e.trim().is_empty()) {
            query.push(("email", email.trim().to_string()));
        }
        let page: Page<Owner> = client::send_for(
            session,
            Call::get(Operation::ListOwners, vec!["crm", "v3", "owners"], "owners")
                .with_query(query),
        )?;
        let next_cursor = next_cursor_of(&page);
        Ok(OwnersPage {
            results: page.results.into_iter().map(OwnerOutput::from).collect(),
            next_cursor,
        })
    }
}

/// Input of `crma_list_users`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListUsersInput {
    /// 1-100, default 100.
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub cursor: Option<String>,
}

/// `crma_list_users`.
pub struct ListUsers;

/// What `crma_list_users` answers: one page of the account's users.
#[derive(Debug, Serialize, JsonSchema)]
pub struct UsersPage {
    /// The users on this page.
    results: Vec<UserOutput>,
    /// Pass it back as cursor for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
}

/// One HubSpot user, with what decides their permissions.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct UserOutput {
    /// The user id (an owner's user_id in crma_list_owners).
    id: String,
    /// The user's login email.
    email: String,
    /// First name, or null when HubSpot has none.
    first_name: Option<String>,
    /// Last name, or null when HubSpot has none.
    last_name: Option<String>,
    /// The user's role as HubSpot's single-role field gives it, or null; role_ids lists
    /// every role.
    role_id: Option<String>,
    /// Ids of the user's roles (crma_list_roles names them); empty for none.
    role_ids: Vec<String>,
    /// The user's primary team id, or null for none.
    primary_team_id: Option<String>,
    /// The user's other team ids, or null when HubSpot lists none.
    secondary_team_ids: Option<Vec<String>>,
    /// True for a super admin, who has every permission.
    super_admin: bool,
}

impl From<User> for UserOutput {
    fn from(user: User) -> Self {
        let super_admin = user.is_super_admin();
        UserOutput {
            id: user.id,
            email: user.email,
            first_name: user.first_name,
            last_name: user.last_name,
            role_id: user.role_id,
            // A missing list reads as no roles (older references list only id and email).
            role_ids: user.role_ids.unwrap_or_default(),
            primary_team_id: user.primary_team_id,
            secondary_team_ids: user.secondary_team_ids,
            super_admin,
        }
    }
}

impl Tool for ListUsers {
    const NAME: &'static str = "crma_list_users";
    const DESCRIPTION: &'static str = "List the HubSpot account's users: id, email, role ids, \
        primary and secondary team ids, super admin flag. For provisioning and permission mapping.";
    const TITLE: &'static str = "List HubSpot users";
    const EFFECT: CrmEffect = CrmEffect::Reads;
    type Input = ListUsersInput;
    type Output = UsersPage;

    fn reads(input: &ListUsersInput) -> ReadScope<'_> {
        ReadScope {
            records: input.limit.map(Into::into),
            ..ReadScope::default()
        }
    }

    fn cap_records(input: &mut ListUsersInput, cap: u32) {
        input.limit = capped(input.limit, 100, cap);
    }

    fn run(input: ListUsersInput, session: &mut Session<'_>) -> Result<UsersPage, ToolError> {
        let limit = input.limit.unwrap_or(100);
        if !(1..=100).contains(&limit) {
            return Err(ToolError::invalid("limit must be from 1 to 100"));
        }
        let mut query = vec![("limit", limit.to_string())];
        if let Some(after) = after(&input.cursor)? {
            query.push(("after", after));
        }
        let page: Page<User> = client::send_for(
            session,
            Call::get(
                Operation::ListUsers,
                vec!["settings", "v3", "users"],
                "users",
            )
            .with_query(query),
        )?;
        let next_cursor = next_cursor_of(&page);
        Ok(UsersPage {
            results: page.results.into_iter().map(UserOutput::from).collect(),
            next_cursor,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// An active and a deactivated owner as HubSpot's owners reference shows them (page cited
    /// on [`Owner`]); the deactivated one's `userId` is null.
    fn owners_answer() -> Value {
        json!({
            "results": [
                {"id": "41629779", "email": "email@hubspot.com", "type": "PERSON", "firstName": "HubSpot",
                 "lastName": "Test Owner", "userId": 9586504, "userIdIncludingInactive": 9586504,
                 "createdAt": "2019-12-25T13:01:35.228Z", "updatedAt": "2023-08-22T13:40:26.790Z", "archived": false,
                 "teams": [{"id": "368389", "name": "Sales Team", "primary": true}]},
                {"id": "42103462", "email": "useremail@hubspot.com", "type": "PERSON", "firstName": "", "lastName": "",
                 "userId": null, "userIdIncludingInactive": 9685555,
                 "createdAt": "2020-01-09T20:28:50.080Z", "updatedAt": "2020-01-09T20:28:50.080Z", "archived": true}
            ],
            "paging": {"next": {"after": "NTI1Cg%3D%3D", "link": "?after=NTI1Cg%3D%3D"}}
        })
    }

    #[test]
    fn owners_read_as_hubspot_documents_them() {
        let page: Page<Owner> = serde_json::from_value(owners_answer()).unwrap();
        let out: Vec<Value> = page
            .results
            .into_iter()
            .map(|o| serde_json::to_value(OwnerOutput::from(o)).unwrap())
            .collect();
        assert_eq!(
            out,
            [
                json!({"id": "41629779", "email": "email@hubspot.com", "first_name": "HubSpot", "last_name": "Test Owner",
                       "user_id": 9586504, "archived": false, "teams": [{"id": "368389", "name": "Sales Team", "primary": true}]}),
                json!({"id": "42103462", "email": "useremail@hubspot.com", "first_name": "", "last_name": "",
                       "user_id": 9685555, "archived": true, "teams": null}),
            ]
        );
    }

    #[test]
    fn an_owner_without_a_required_field_is_refused_by_name() {
        {
            let field = "id";
            let mut answer = owners_answer();
            answer["results"][0].as_object_mut().unwrap().remove(field);
            let err = serde_json::from_value::<Page<Owner>>(answer).unwrap_err();
            assert!(
                err.to_string()
                    .contains(&format!("missing field `{field}`")),
                "{field}: {err}"
            );
        }
        let mut answer = owners_answer();
        answer["results"][0]["teams"][0]
            .as_object_mut()
            .unwrap()
            .remove("name");
        let err = serde_json::from_value::<Page<Owner>>(answer).unwrap_err();
        assert!(err.to_string().contains("missing field `name`"), "{err}");
    }

    /// A user as HubSpot's user provisioning reference shows one (pages cited on [`User`]).
    fn users_answer() -> Value {
        json!({
            "results": [
                {"id": "123", "email": "newUser@email.com", "firstName": "New", "lastName": "User",
                 "roleId": "100", "roleIds": ["100"], "primaryTeamId": "101", "secondaryTeamIds": ["102"],
                 "superAdmin": false, "sendWelcomeEmail": false}
            ],
            "paging": {"next": {"after": "MTAx", "link": "?after=MTAx"}}
        })
    }

    #[test]
    fn users_read_as_hubspot_documents_them() {
        let page: Page<User> = serde_json::from_value(users_answer()).unwrap();
        assert_eq!(page.next_after(), Some("MTAx"));
        let user = serde_json::to_value(UserOutput::from(page.results.into_iter().next().unwrap()))
            .unwrap();
        assert_eq!(
            user,
            json!({"id": "123", "email": "newUser@email.com", "first_name": "New", "last_name": "User",
                   "role_id": "100", "role_ids": ["100"], "primary_team_id": "101",
                   "secondary_team_ids": ["102"], "super_admin": false})
        );
        // The optional fields may be missing: null, as before.
        let bare: User = serde_json::from_value(
            json!({"id": "7", "email": "a@b.com", "roleIds": [], "superAdmin": true}),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(UserOutput::from(bare)).unwrap(),
            json!({"id": "7", "email": "a@b.com", "first_name": null, "last_name": null, "role_id": null,
                   "role_ids": [], "primary_team_id": null, "secondary_team_ids": null, "super_admin": true})
        );
    }

    #[test]
    fn a_user_without_a_required_field_is_refused_by_name() {
        for field in ["id", "email"] {
            let mut answer = users_answer();
            answer["results"][0].as_object_mut().unwrap().remove(field);
            let err = serde_json::from_value::<Page<User>>(answer).unwrap_err();
            assert!(
                err.to_string()
                    .contains(&format!("missing field `{field}`")),
                "{field}: {err}"
            );
        }
    }

    #[test]
    fn a_user_without_roles_or_the_admin_flag_has_none() {
        // Older versions of HubSpot's user reference list only id and email as required.
        let mut answer = users_answer();
        let user = answer["results"][0].as_object_mut().unwrap();
        user.remove("roleIds");
        user.remove("superAdmin");
        let page = serde_json::from_value::<Page<User>>(answer).unwrap();
        let out = serde_json::to_value(UserOutput::from(page.results.into_iter().next().unwrap()))
            .unwrap();
        assert_eq!(out["role_ids"], json!([]));
        assert_eq!(out["super_admin"], false);
    }
}
