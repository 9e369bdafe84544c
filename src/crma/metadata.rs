//! HubSpot metadata tools: roles (here), pipeline stages, property definitions, account details,
//! and record links built from the account's portal id and UI domain. Each tool sits beside the
//! wire structs of the answers it reads and the output type it answers with.

pub(crate) mod account;
mod pipelines;
mod property_definitions;

pub(crate) use account::{GenerateRecordUrl, GetAccountDetails};
pub(crate) use pipelines::{GetPipelineStages, pipeline_names};
pub(crate) use property_definitions::GetProperties;

use super::client::{self, Call};
use super::people::Role;
use super::scopes::Operation;
use super::types::{Collection, decode};
use crate::error::ToolError;
use crate::tool::{CrmEffect, NoInput, Session, Tool};
use schemars::JsonSchema;
use serde::Serialize;

/// `crma_list_roles`.
pub(crate) struct ListRoles;

/// What `crma_list_roles` answers.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct RoleList {
    /// Every user role of the account.
    results: Vec<RoleSummary>,
}

/// One user role.
#[derive(Debug, Serialize, JsonSchema)]
struct RoleSummary {
    /// The role id, as the role_ids of crma_list_users name it.
    id: String,
    /// The role's name, e.g. "Sales rep".
    name: String,
}

impl From<Role> for RoleSummary {
    fn from(role: Role) -> Self {
        RoleSummary {
            id: role.id,
            name: role.name,
        }
    }
}

impl Tool for ListRoles {
    const NAME: &'static str = "crma_list_roles";
    const DESCRIPTION: &'static str = "List the HubSpot account's user roles (id and name), to \
        read the role_ids that crma_list_users returns.";
    const TITLE: &'static str = "List HubSpot roles";
    const EFFECT: CrmEffect = CrmEffect::Reads;
    type Input = NoInput;
    type Output = RoleList;

    fn run(_: NoInput, session: &mut Session<'_>) -> Result<RoleList, ToolError> {
        let answer = client::send(
            session,
            Call::get(
                Operation::ListRoles,
                vec!["settings", "v3", "users", "roles"],
                "roles",
            ),
        )?;
        let roles: Collection<Role> = decode(answer, "roles")?;
        Ok(RoleList {
            results: roles.results.into_iter().map(RoleSummary::from).collect(),
        })
    }
}
