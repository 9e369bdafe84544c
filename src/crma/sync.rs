//! `crma_sync_users`: reads every page of HubSpot users (with role and team names where
//! scoped) and owners (active and archived), links owners to users by `userId`, and brings the
//! tenant's local mappings in line: keyed by user id / owner id, so a re-run never duplicates;
//! archived or removed ones are soft-deleted (kept, marked deleted) and restored when they
//! return.
//!
//! Reading and writing are apart, and memory stays flat however large the account: every
//! listing is read completely first (a partial listing would soft-delete whoever was on the
//! unread pages), each owner page projected to its mappings as it arrives and staged in the
//! store's open change, then dropped. Users (bounded by the account's seats) are held, with the
//! owner each one is linked to. The staged mappings are then compared with the stored ones in
//! key order, a page of each at a time ([`plan`]), the writes staged in batches, and the change
//! committed in one all-or-nothing write.

mod plan;
mod project;

use super::client::{self, Call};
use super::people::{Owner, Role, Team, User};
use super::scopes::{Operation, check};
use super::types::{Collection, decode};
use crate::error::{Crm, CrmProblem, ToolError};
use crate::mapping::{MAX_BATCH, Mapping, MappingKind, StoreError};
use crate::tool::{CrmEffect, NoInput, Session, Tool};
use plan::{Counts, StoreListings, plan};
use project::{Links, Names, owner_mapping, user_mapping};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

#[cfg(test)]
use project::stored_fields;

/// Most pages read per listing (500 owners or 100 users a page) before giving up unchanged.
const MAX_PAGES: usize = 400;

/// Reads every page of a v3 listing, each row as the wire type `T`, handing each page to
/// `take` as it arrives.
fn for_each_page<T: DeserializeOwned>(
    session: &mut Session<'_>,
    operation: Operation,
    path: Vec<&str>,
    query: Vec<(&str, String)>,
    what: &str,
    mut take: impl FnMut(&mut Session<'_>, Vec<T>) -> Result<(), ToolError>,
) -> Result<(), ToolError> {
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
        take(session, page.results)?;
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
            _ => return Ok(()),
        }
    }
    Err(ToolError::Unavailable(format!(
        "the {what} listing has more than {MAX_PAGES} pages; nothing was changed locally"
    )))
}

/// Reads every page of a v3 listing into memory: for the listings an account's seats bound.
fn read_all<T: DeserializeOwned>(
    session: &mut Session<'_>,
    operation: Operation,
    path: Vec<&str>,
    query: Vec<(&str, String)>,
    what: &str,
) -> Result<Vec<T>, ToolError> {
    let mut items = Vec::new();
    for_each_page(session, operation, path, query, what, |_, page| {
        items.extend(page);
        Ok(())
    })?;
    Ok(items)
}

/// A store failure: nothing was committed, so nothing changed locally.
fn store_failed(e: StoreError) -> ToolError {
    ToolError::Unavailable(format!(
        "{e}; nothing was changed locally, run the sync again later"
    ))
}

/// Stages observed mappings in the call's open change, a batch at a time.
fn observe(session: &mut Session<'_>, mappings: &[Mapping]) -> Result<(), ToolError> {
    let store = session.store()?;
    for batch in mappings.chunks(MAX_BATCH) {
        store.observe(batch).map_err(store_failed)?;
    }
    Ok(())
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
        session.store()?.begin().map_err(store_failed)?;
        let with_teams = check(&granted, &Operation::ListTeams).is_ok();
        observe_account(session, with_teams)?;

        // Nothing is held now but a page of each listing and a batch of writes.
        let store = session.store()?;
        let mut wrote = false;
        let mut plan_kind = |kind: MappingKind| {
            let mut listings = StoreListings::new(&mut *store, kind);
            let counts = plan(&mut listings)?;
            wrote |= listings.finish()?;
            Ok::<_, StoreError>(counts)
        };
        let users = plan_kind(MappingKind::User).map_err(store_failed)?;
        let owners = plan_kind(MappingKind::Owner).map_err(store_failed)?;
        if wrote {
            store.commit().map_err(store_failed)?;
        }
        Ok(SyncReport {
            total: users + owners,
            users,
            owners,
            teams_included: with_teams,
        })
    }
}

/// Reads users, roles, teams (when scoped) and owners, active and archived, every page, and
/// stages the mappings they project to in the store's open change. Owners listed both ways
/// (mid-change in HubSpot) are observed archived: that listing is read last and replaces.
fn observe_account(session: &mut Session<'_>, with_teams: bool) -> Result<(), ToolError> {
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
    let names = Names { roles, teams };
    let mut links = Links::new(&users);
    // People read so far, for progress: HubSpot's listings give no total.
    let mut read = users.len() as u64;
    session.progress(read, None);
    for (archived, what) in [(false, "owners"), (true, "archived owners")] {
        let query = vec![
            ("limit", "500".to_string()),
            ("archived", archived.to_string()),
        ];
        let path = vec!["crm", "v3", "owners"];
        for_each_page::<Owner>(
            session,
            Operation::ListOwners,
            path,
            query,
            what,
            |session, owners| {
                let mappings: Vec<Mapping> = owners
                    .iter()
                    .map(|owner| {
                        links.see(owner, archived);
                        owner_mapping(owner, archived)
                    })
                    .collect();
                observe(session, &mappings)?;
                read += owners.len() as u64;
                session.progress(read, None);
                Ok(())
            },
        )?;
    }
    for batch in users.chunks(MAX_BATCH) {
        let mappings: Vec<Mapping> = batch
            .iter()
            .map(|user| user_mapping(user, &names, links.owner_of(&user.id)))
            .collect();
        observe(session, &mappings)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
