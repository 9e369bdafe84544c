//! HubSpot scopes as data: which granted scopes allow which operation (any of), from
//! HubSpot's published OpenAPI security requirements (`crm-a-api-facts.md`). Every CRM A tool
//! checks here before sending; a shortfall is `missing-scopes` and nothing is sent.

use super::types::ObjectType;
use crate::error::ToolError;

/// Something a tool is about to ask HubSpot to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    Read(ObjectType),
    Write(ObjectType),
    MergeCompanies,
    ReadAssociations { from: ObjectType },
    CreateAssociation { from: ObjectType, to: ObjectType },
    ReadPipelines(ObjectType),
    ReadProperties(ObjectType),
    ListOwners,
    ListUsers,
    ListRoles,
    ListTeams,
    AccountDetails,
}

/// The scopes any one of which allows `operation`.
pub fn allowing(operation: &Operation) -> Vec<String> {
    let owned = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    match operation {
        Operation::Read(t) => read_scopes(t),
        Operation::Write(t) => write_scopes(t),
        Operation::MergeCompanies => owned(&["crm.objects.companies.write"]),
        Operation::ReadAssociations { from } => [owned(&["oauth"]), read_scopes(from)].concat(),
        Operation::CreateAssociation { from, to } => {
            let mut scopes = owned(&["oauth"]);
            for scope in write_scopes(from).into_iter().chain(write_scopes(to)) {
                if !scopes.contains(&scope) {
                    scopes.push(scope);
                }
            }
            scopes
        }
        Operation::ReadPipelines(t) => [read_scopes(t), schema_scope(t)].concat(),
        Operation::ReadProperties(t) => {
            let mut scopes = [read_scopes(t), schema_scope(t)].concat();
            if matches!(t, ObjectType::Custom(_)) {
                scopes.push("crm.schemas.custom.read".into());
            }
            scopes
        }
        Operation::ListOwners => owned(&["crm.objects.owners.read"]),
        Operation::ListUsers | Operation::ListRoles => {
            owned(&["settings.users.read", "crm.objects.users.read"])
        }
        Operation::ListTeams => owned(&["settings.users.teams.read"]),
        Operation::AccountDetails => owned(&["oauth"]),
    }
}

/// Records of activity types are covered by the contacts scopes; emails also by
/// `sales-email-read` for reads.
fn read_scopes(object: &ObjectType) -> Vec<String> {
    match object {
        ObjectType::Contacts
        | ObjectType::Tasks
        | ObjectType::Notes
        | ObjectType::Meetings
        | ObjectType::Calls => {
            vec!["crm.objects.contacts.read".into()]
        }
        ObjectType::Emails => vec![
            "crm.objects.contacts.read".into(),
            "sales-email-read".into(),
        ],
        ObjectType::Companies => vec!["crm.objects.companies.read".into()],
        ObjectType::Deals => vec!["crm.objects.deals.read".into()],
        ObjectType::Custom(_) => vec!["crm.objects.custom.read".into()],
    }
}

fn write_scopes(object: &ObjectType) -> Vec<String> {
    match object {
        ObjectType::Contacts
        | ObjectType::Tasks
        | ObjectType::Notes
        | ObjectType::Meetings
        | ObjectType::Calls
        | ObjectType::Emails => vec!["crm.objects.contacts.write".into()],
        ObjectType::Companies => vec!["crm.objects.companies.write".into()],
        ObjectType::Deals => vec!["crm.objects.deals.write".into()],
        ObjectType::Custom(_) => vec!["crm.objects.custom.write".into()],
    }
}

/// `crm.schemas.{type}.read` for the standard types that have one.
fn schema_scope(object: &ObjectType) -> Vec<String> {
    match object {
        ObjectType::Contacts | ObjectType::Companies | ObjectType::Deals => {
            vec![format!("crm.schemas.{}.read", object.as_str())]
        }
        _ => Vec::new(),
    }
}

/// Passes when any granted scope allows the operation; otherwise names the scopes that would.
pub fn check(granted: &[String], operation: &Operation) -> Result<(), ToolError> {
    let allowed = allowing(operation);
    if allowed
        .iter()
        .any(|scope| granted.iter().any(|g| g.trim() == scope))
    {
        Ok(())
    } else {
        Err(ToolError::MissingScopes(allowed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn granted(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_deals_write_scope_guards_deal_creation() {
        assert_eq!(
            check(
                &granted(&["crm.objects.deals.read"]),
                &Operation::Write(ObjectType::Deals)
            ),
            Err(ToolError::MissingScopes(vec![
                "crm.objects.deals.write".into()
            ]))
        );
        assert!(
            check(
                &granted(&["crm.objects.deals.write"]),
                &Operation::Write(ObjectType::Deals)
            )
            .is_ok()
        );
    }

    #[test]
    fn activities_use_contact_scopes_and_emails_also_sales_email_read() {
        assert!(
            check(
                &granted(&["crm.objects.contacts.write"]),
                &Operation::Write(ObjectType::Notes)
            )
            .is_ok()
        );
        assert!(
            check(
                &granted(&["sales-email-read"]),
                &Operation::Read(ObjectType::Emails)
            )
            .is_ok()
        );
        assert!(
            check(
                &granted(&["sales-email-read"]),
                &Operation::Read(ObjectType::Calls)
            )
            .is_err()
        );
    }

    #[test]
    fn any_of_lists_follow_the_openapi_requirements() {
        assert_eq!(
            allowing(&Operation::ListUsers),
            vec!["settings.users.read", "crm.objects.users.read"]
        );
        assert_eq!(
            allowing(&Operation::CreateAssociation {
                from: ObjectType::Contacts,
                to: ObjectType::Companies
            }),
            vec![
                "oauth",
                "crm.objects.contacts.write",
                "crm.objects.companies.write"
            ]
        );
        assert_eq!(
            allowing(&Operation::ReadProperties(ObjectType::Deals)),
            vec!["crm.objects.deals.read", "crm.schemas.deals.read"]
        );
        assert!(
            allowing(&Operation::ReadProperties(ObjectType::Custom("2-1".into())))
                .contains(&"crm.schemas.custom.read".to_string())
        );
        assert_eq!(
            allowing(&Operation::MergeCompanies),
            vec!["crm.objects.companies.write"]
        );
        assert_eq!(allowing(&Operation::AccountDetails), vec!["oauth"]);
    }

    #[test]
    fn no_scopes_means_nothing_is_allowed() {
        for op in [
            Operation::ListOwners,
            Operation::ListTeams,
            Operation::Read(ObjectType::Companies),
            Operation::AccountDetails,
        ] {
            assert!(matches!(check(&[], &op), Err(ToolError::MissingScopes(s)) if !s.is_empty()));
        }
    }
}
