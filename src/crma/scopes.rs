//! HubSpot scopes as data: which granted scopes allow which operation (any of), from
//! HubSpot's published OpenAPI security requirements (`crm-a-api-facts.md`). Every CRM A tool
//! checks here before sending; a shortfall is `missing-scopes` and nothing is sent.

use super::types::ObjectType;
use crate::error::ToolError;

/// Something a tool is about to ask HubSpot to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Operation {
    Read(ObjectType),
    Write(ObjectType),
    MergeCompanies,
    ReadAssociations {
        from: ObjectType,
    },
    CreateAssociation {
        from: ObjectType,
        to: ObjectType,
    },
    ReadPipelines(ObjectType),
    ReadProperties(ObjectType),
    ListOwners,
    ListUsers,
    ListRoles,
    ListTeams,
    AccountDetails,
    /// Reading a record's activity timeline: the spec's optional `timeline` scope is the
    /// workspace's grant of "activity visibility". HubSpot's activity searches need only each
    /// type's read scope (checked as well, type by type).
    ReadTimeline,
}

/// The scopes any one of which allows `operation`.
///
/// Every list is taken from the `security` any-of list of the operation in HubSpot's
/// published OpenAPI specs (`src/crma/testdata/hubspot_openapi_scopes.json` holds them with
/// their source, and a test per row compares). Per-type endpoints use HubSpot's list exactly.
/// The generic endpoints (custom objects, v4 associations, pipelines, properties) list a union
/// over every object type, `oauth` included for some; there the list is the part of HubSpot's
/// that concerns the object type at hand, so a scope is still always one HubSpot names.
/// The CRM A scopes the spec lists as required ("CRM A scopes"); `timeline` is optional.
pub(crate) const REQUIRED: &[&str] = &[
    "crm.objects.companies.read",
    "crm.objects.companies.write",
    "crm.objects.contacts.read",
    "crm.objects.contacts.write",
    "crm.objects.deals.read",
    "crm.objects.deals.write",
    "crm.objects.owners.read",
    "crm.objects.users.read",
    "crm.schemas.custom.read",
    "oauth",
    "sales-email-read",
    "settings.users.read",
    "settings.users.teams.read",
];

/// The spec's optional CRM A scopes.
pub(crate) const OPTIONAL: &[&str] = &["timeline"];

pub(crate) fn allowing(operation: &Operation) -> Vec<String> {
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
        Operation::ReadPipelines(t) | Operation::ReadProperties(t) => definition_scopes(t),
        Operation::ListOwners => owned(&["crm.objects.owners.read", "automation"]),
        Operation::ListUsers | Operation::ListRoles => {
            owned(&["settings.users.read", "crm.objects.users.read"])
        }
        Operation::ListTeams => owned(&["settings.users.teams.read"]),
        Operation::AccountDetails => owned(&["oauth"]),
        Operation::ReadTimeline => owned(&["timeline"]),
    }
}

/// Records of activity types are covered by the contacts scopes; emails also by
/// `sales-email-read`.
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

/// Pipelines, stages and properties share one list in HubSpot's specs. For a type it holds
/// the record read scope (not `sales-email-read`), the activity types' own
/// `crm.objects.{type}.read`, `crm.schemas.{type}.read`, and `crm.schemas.custom.read`.
fn definition_scopes(object: &ObjectType) -> Vec<String> {
    let mut scopes: Vec<String> = read_scopes(object)
        .into_iter()
        .filter(|s| s != "sales-email-read")
        .collect();
    if object.is_activity() {
        scopes.push(format!("crm.objects.{}.read", object.as_str()));
    }
    scopes.extend(schema_scope(object));
    scopes.push("crm.schemas.custom.read".into());
    scopes.dedup();
    scopes
}

/// HubSpot's emails specs accept `sales-email-read` for writes too.
fn write_scopes(object: &ObjectType) -> Vec<String> {
    match object {
        ObjectType::Contacts
        | ObjectType::Tasks
        | ObjectType::Notes
        | ObjectType::Meetings
        | ObjectType::Calls => vec!["crm.objects.contacts.write".into()],
        ObjectType::Emails => vec![
            "crm.objects.contacts.write".into(),
            "sales-email-read".into(),
        ],
        ObjectType::Companies => vec!["crm.objects.companies.write".into()],
        ObjectType::Deals => vec!["crm.objects.deals.write".into()],
        ObjectType::Custom(_) => vec!["crm.objects.custom.write".into()],
    }
}

/// `crm.schemas.{type}.read` for the standard types (custom types use
/// `crm.schemas.custom.read`).
fn schema_scope(object: &ObjectType) -> Vec<String> {
    match object {
        ObjectType::Custom(_) => Vec::new(),
        standard => vec![format!("crm.schemas.{}.read", standard.as_str())],
    }
}

/// Passes when any granted scope allows the operation; otherwise names the scopes that would.
pub(crate) fn check(granted: &[String], operation: &Operation) -> Result<(), ToolError> {
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
            vec![
                "crm.objects.deals.read",
                "crm.schemas.deals.read",
                "crm.schemas.custom.read"
            ]
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

    /// Custom-object pipelines: HubSpot's list accepts `crm.schemas.custom.read`, which the
    /// spec grants; the tool must not refuse them locally.
    #[test]
    fn custom_object_pipelines_are_readable_with_the_custom_schemas_scope() {
        let custom = ObjectType::parse("2-1234").unwrap();
        assert!(
            check(
                &granted(&["crm.schemas.custom.read"]),
                &Operation::ReadPipelines(custom)
            )
            .is_ok()
        );
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

    /// HubSpot's published any-of lists, with their source (see the file's `source`).
    const OPENAPI: &str = include_str!("testdata/hubspot_openapi_scopes.json");

    /// The any-of list HubSpot's OpenAPI spec gives the endpoint `key`.
    fn openapi(key: &str) -> Vec<String> {
        let specs: serde_json::Value = serde_json::from_str(OPENAPI).unwrap();
        let endpoint = specs["endpoints"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"] == key)
            .unwrap_or_else(|| panic!("no {key} in the fixture"));
        serde_json::from_value(endpoint["any_of"].clone()).unwrap()
    }

    /// How a row relates to HubSpot's list: the same scopes, or (for the generic endpoints,
    /// whose lists span every object type) only scopes from it, including those named.
    enum Match {
        Exact,
        SubsetWith(&'static [&'static str]),
    }

    fn compare(operation: Operation, key: &str, expected: Match) {
        let ours = allowing(&operation);
        let theirs = openapi(key);
        assert!(!ours.is_empty(), "{operation:?}: no scope allows it");
        match expected {
            Match::Exact => {
                let mut a = ours.clone();
                let mut b = theirs.clone();
                a.sort();
                b.sort();
                assert_eq!(a, b, "{operation:?} vs HubSpot's {key}");
            }
            Match::SubsetWith(named) => {
                for scope in &ours {
                    assert!(
                        theirs.contains(scope),
                        "{operation:?} accepts {scope}, which HubSpot's {key} does not name"
                    );
                }
                for scope in named {
                    assert!(
                        ours.iter().any(|s| s == scope),
                        "{operation:?} should accept {scope}"
                    );
                }
            }
        }
    }

    /// One test per row of the scope table, against HubSpot's list for that endpoint.
    macro_rules! rows {
        ($($name:ident: $operation:expr, $key:literal, $match:expr;)*) => {
            $(
                #[test]
                fn $name() {
                    compare($operation, $key, $match);
                }
            )*
        };
    }

    fn custom() -> ObjectType {
        ObjectType::parse("2-1234").unwrap()
    }

    use Match::{Exact, SubsetWith};
    use ObjectType::{Calls, Companies, Contacts, Deals, Emails, Meetings, Notes, Tasks};

    rows! {
        row_account_details: Operation::AccountDetails, "account_details", Exact;
        row_owners: Operation::ListOwners, "owners", Exact;
        row_users: Operation::ListUsers, "users", Exact;
        row_roles: Operation::ListRoles, "roles", Exact;
        row_teams: Operation::ListTeams, "teams", Exact;
        row_merge: Operation::MergeCompanies, "merge", Exact;
        row_read_contacts: Operation::Read(Contacts), "search:contacts", Exact;
        row_get_contacts: Operation::Read(Contacts), "read:contacts", Exact;
        row_write_contacts: Operation::Write(Contacts), "create:contacts", Exact;
        row_update_contacts: Operation::Write(Contacts), "update:contacts", Exact;
        row_read_companies: Operation::Read(Companies), "search:companies", Exact;
        row_get_companies: Operation::Read(Companies), "read:companies", Exact;
        row_write_companies: Operation::Write(Companies), "create:companies", Exact;
        row_update_companies: Operation::Write(Companies), "update:companies", Exact;
        row_read_deals: Operation::Read(Deals), "search:deals", Exact;
        row_get_deals: Operation::Read(Deals), "read:deals", Exact;
        row_write_deals: Operation::Write(Deals), "create:deals", Exact;
        row_update_deals: Operation::Write(Deals), "update:deals", Exact;
        row_read_notes: Operation::Read(Notes), "search:notes", Exact;
        row_get_notes: Operation::Read(Notes), "read:notes", Exact;
        row_write_notes: Operation::Write(Notes), "create:notes", Exact;
        row_update_notes: Operation::Write(Notes), "update:notes", Exact;
        row_read_tasks: Operation::Read(Tasks), "search:tasks", Exact;
        row_get_tasks: Operation::Read(Tasks), "read:tasks", Exact;
        row_write_tasks: Operation::Write(Tasks), "create:tasks", Exact;
        row_update_tasks: Operation::Write(Tasks), "update:tasks", Exact;
        row_read_meetings: Operation::Read(Meetings), "search:meetings", Exact;
        row_get_meetings: Operation::Read(Meetings), "read:meetings", Exact;
        row_write_meetings: Operation::Write(Meetings), "create:meetings", Exact;
        row_update_meetings: Operation::Write(Meetings), "update:meetings", Exact;
        row_read_calls: Operation::Read(Calls), "search:calls", Exact;
        row_get_calls: Operation::Read(Calls), "read:calls", Exact;
        row_write_calls: Operation::Write(Calls), "create:calls", Exact;
        row_update_calls: Operation::Write(Calls), "update:calls", Exact;
        row_read_emails: Operation::Read(Emails), "search:emails", Exact;
        row_get_emails: Operation::Read(Emails), "read:emails", Exact;
        row_write_emails: Operation::Write(Emails), "create:emails", Exact;
        row_update_emails: Operation::Write(Emails), "update:emails", Exact;
        row_read_custom: Operation::Read(custom()), "search:custom", SubsetWith(&["crm.objects.custom.read"]);
        row_get_custom: Operation::Read(custom()), "read:custom", SubsetWith(&["crm.objects.custom.read"]);
        row_write_custom: Operation::Write(custom()), "create:custom", SubsetWith(&["crm.objects.custom.write"]);
        row_update_custom: Operation::Write(custom()), "update:custom", SubsetWith(&["crm.objects.custom.write"]);
        row_associations_read: Operation::ReadAssociations { from: Deals }, "associations_read", SubsetWith(&["oauth", "crm.objects.deals.read"]);
        row_associations_read_custom: Operation::ReadAssociations { from: custom() }, "associations_read", SubsetWith(&["oauth", "crm.objects.custom.read"]);
        row_associations_create: Operation::CreateAssociation { from: Contacts, to: Companies }, "associations_create_default", SubsetWith(&["oauth", "crm.objects.contacts.write", "crm.objects.companies.write"]);
        row_pipelines_deals: Operation::ReadPipelines(Deals), "pipelines:generic", SubsetWith(&["crm.objects.deals.read", "crm.schemas.deals.read", "crm.schemas.custom.read"]);
        row_stages_deals: Operation::ReadPipelines(Deals), "stages:generic", SubsetWith(&["crm.objects.deals.read", "crm.schemas.deals.read", "crm.schemas.custom.read"]);
        row_pipelines_custom: Operation::ReadPipelines(custom()), "pipelines:generic", SubsetWith(&["crm.objects.custom.read", "crm.schemas.custom.read"]);
        row_stages_tasks: Operation::ReadPipelines(Tasks), "stages:generic", SubsetWith(&["crm.objects.contacts.read", "crm.schemas.tasks.read", "crm.schemas.custom.read"]);
        row_properties_contacts: Operation::ReadProperties(Contacts), "properties:generic", SubsetWith(&["crm.objects.contacts.read", "crm.schemas.contacts.read", "crm.schemas.custom.read"]);
        row_properties_emails: Operation::ReadProperties(Emails), "properties:generic", SubsetWith(&["crm.objects.contacts.read", "crm.objects.emails.read", "crm.schemas.emails.read"]);
        row_properties_custom: Operation::ReadProperties(custom()), "properties:generic", SubsetWith(&["crm.objects.custom.read", "crm.schemas.custom.read"]);
    }
}
