//! Masking by meaning: Salesforce's compound fields hold other fields' values, so a masked
//! field's compound is masked with it, and a masked compound masks its parts.
//!
//! The families are Salesforce's own ("Compound Fields", SOAP API Developer Guide,
//! <https://developer.salesforce.com/docs/atlas.en-us.api.meta/api/compound_fields.htm>), as
//! describe reports them through each part's `compoundFieldName`:
//! - **Name** of people (Contact, Lead, User, Individual, person accounts): FirstName,
//!   LastName, MiddleName, Suffix, Salutation.
//! - **Addresses** (`BillingAddress`, `MailingAddress`, `Address`, ...): the same prefix with
//!   Street, City, State, PostalCode, Country, StateCode, CountryCode, Latitude, Longitude,
//!   GeocodeAccuracy.
//! - **Geolocations** (`Spot__c`): `Spot__Latitude__s` and `Spot__Longitude__s`.

#[cfg(test)]
use serde_json::{Map, Value};

/// What a masked value reads as (the host writes the same words).
pub const MASKED: &str = "[masked by workspace policy]";

const NAME_PARTS: &[&str] = &[
    "firstname",
    "lastname",
    "middlename",
    "suffix",
    "salutation",
];
const PERSON_TYPES: &[&str] = &["contact", "lead", "user", "individual"];
const ADDRESS_PARTS: &[&str] = &[
    "street",
    "city",
    "state",
    "postalcode",
    "country",
    "statecode",
    "countrycode",
    "latitude",
    "longitude",
    "geocodeaccuracy",
];
const GEO_PARTS: &[&str] = &["__latitude__s", "__longitude__s"];

/// Whether records of this kind have a compound Name: a person type, or a record that carries
/// a person's name parts itself (a person account).
pub fn has_person_name<'k>(
    record_type: Option<&str>,
    mut fields: impl Iterator<Item = &'k str>,
) -> bool {
    record_type.is_some_and(|t| PERSON_TYPES.iter().any(|p| p.eq_ignore_ascii_case(t)))
        || fields.any(|k| k.eq_ignore_ascii_case("FirstName") || k.eq_ignore_ascii_case("LastName"))
}

/// The compound a field is part of, lower-cased.
fn compound_of(field: &str, person: bool) -> Option<String> {
    if person && NAME_PARTS.contains(&field) {
        return Some("name".into());
    }
    if let Some(base) = GEO_PARTS.iter().find_map(|p| field.strip_suffix(p)) {
        return Some(format!("{base}__c"));
    }
    ADDRESS_PARTS.iter().find_map(|part| {
        let prefix = field.strip_suffix(part)?;
        prefix
            .chars()
            .all(|c| c.is_ascii_alphabetic())
            .then(|| format!("{prefix}address"))
    })
}

/// The parts of a compound field, lower-cased (none when it is not one).
fn parts_of(field: &str, person: bool) -> Vec<String> {
    if person && field == "name" {
        return NAME_PARTS.iter().map(|p| p.to_string()).collect();
    }
    if let Some(prefix) = field.strip_suffix("address")
        && prefix.chars().all(|c| c.is_ascii_alphabetic())
    {
        return ADDRESS_PARTS
            .iter()
            .map(|p| format!("{prefix}{p}"))
            .collect();
    }
    if let Some(base) = field.strip_suffix("__c") {
        return GEO_PARTS.iter().map(|p| format!("{base}{p}")).collect();
    }
    Vec::new()
}

/// The masked field whose value `field` would show, if any: itself, a masked part of it (it is
/// a compound), or its masked compound (it is a part).
pub fn shows_masked<'m>(field: &str, person: bool, masked: &'m [String]) -> Option<&'m str> {
    if masked.is_empty() {
        return None;
    }
    let field = field.to_ascii_lowercase();
    let find = |name: &str| {
        masked
            .iter()
            .find(|m| m.eq_ignore_ascii_case(name))
            .map(String::as_str)
    };
    find(&field)
        .or_else(|| compound_of(&field, person).and_then(|c| find(&c)))
        .or_else(|| parts_of(&field, person).iter().find_map(|p| find(p)))
}

/// Relationships that lead to a person (a User or a Contact/Lead): a `Name` read through them
/// is a compound of name parts.
const PERSON_RELATIONSHIPS: &[&str] = &[
    "owner",
    "createdby",
    "lastmodifiedby",
    "contact",
    "who",
    "lead",
    "user",
    "manager",
    "reportsto",
    "delegatedapprover",
    "convertedcontact",
    "individual",
];

/// Whether a relationship (`Owner`, `CreatedBy`, `Who`, ...; any case) leads to a person, so
/// a `Name` read through it is a compound of name parts.
pub fn leads_to_person(relationship: &str) -> bool {
    PERSON_RELATIONSHIPS
        .iter()
        .any(|p| p.eq_ignore_ascii_case(relationship))
}

/// Refuses a SOQL query naming a field that would show a masked one, by meaning: `Name` of a
/// Contact when `LastName` is masked, `BillingAddress` when `BillingCity` is, and the like, in
/// any clause (a filter on a compound probes its masked part). `from` is the FROM object;
/// `children` the FROM names of its child subqueries: a field of a child subquery over people
/// (`(SELECT Name FROM Contacts)`) is a person's, so while one is in the query every plain
/// field name is judged as a person's (refusing an account's own `Name` there is the safe
/// side of not knowing which list a name is in).
pub fn refuse_in_query(
    query: &str,
    from: &str,
    children: &[String],
    masked: &[String],
) -> Result<(), String> {
    if masked.is_empty() {
        return Ok(());
    }
    let from_person = PERSON_TYPES.iter().any(|p| p.eq_ignore_ascii_case(from))
        || children.iter().any(|c| lists_people(c));
    for path in super::soql::paths(query) {
        let Some((field, through)) = path.split_last() else {
            continue;
        };
        let person = match through.last() {
            None => from_person,
            Some(rel) => leads_to_person(rel),
        };
        if let Some(part) = shows_masked(field, person, masked) {
            return Err(refusal(&path.join("."), part));
        }
    }
    Ok(())
}

/// Whether a child relationship lists people: `Contacts`, `Leads`, `Users` and those ending
/// so (`ManagedUsers`, `ReportsToContacts`...), compared without case.
fn lists_people(relationship: &str) -> bool {
    let r = relationship.to_ascii_lowercase();
    ["contacts", "leads", "users", "individuals"]
        .iter()
        .any(|p| r.ends_with(p))
}

/// Refuses fields asked of one record of `object` that would show a masked one.
pub fn refuse_fields<'f>(
    object: &str,
    fields: impl IntoIterator<Item = &'f str>,
    masked: &[String],
) -> Result<(), String> {
    let person = PERSON_TYPES.iter().any(|p| p.eq_ignore_ascii_case(object));
    for field in fields {
        if let Some(part) = shows_masked(field, person, masked) {
            return Err(refusal(field, part));
        }
    }
    Ok(())
}

fn refusal(field: &str, masked: &str) -> String {
    if field.eq_ignore_ascii_case(masked)
        || field
            .rsplit('.')
            .next()
            .is_some_and(|f| f.eq_ignore_ascii_case(masked))
    {
        format!("field {field} is masked, so it cannot be read, filtered or sorted on")
    } else {
        format!(
            "field {field} holds the value of masked field {masked} (a Salesforce compound field \
             and its parts go together), so it cannot be read, filtered or sorted on: leave it out"
        )
    }
}

/// Replaces in one record (not its nested ones) every value that would show a masked field:
/// the rule the record mapper applies as it maps, over a `Value` for these tests.
#[cfg(test)]
fn mask_record(fields: &mut Map<String, Value>, record_type: Option<&str>, masked: &[String]) {
    if masked.is_empty() {
        return;
    }
    let person = has_person_name(record_type, fields.keys().map(String::as_str));
    for (name, value) in fields.iter_mut() {
        if !value.is_null() && shows_masked(name, person, masked).is_some() {
            *value = Value::String(MASKED.into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn masked(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_ascii_lowercase()).collect()
    }

    fn children(query: &str) -> Vec<String> {
        crate::crmb::soql::validate(query)
            .map(|v| v.subquery_relationships().to_vec())
            .unwrap_or_default()
    }

    #[test]
    fn a_masked_part_masks_its_compound_and_a_masked_compound_its_parts() {
        let m = masked(&[
            "LastName",
            "BillingCity",
            "Spot__Latitude__s",
            "MailingAddress",
        ]);
        assert_eq!(shows_masked("Name", true, &m), Some("lastname"));
        assert_eq!(
            shows_masked("Name", false, &m),
            None,
            "an account's Name is its own"
        );
        assert_eq!(
            shows_masked("BillingAddress", false, &m),
            Some("billingcity")
        );
        assert_eq!(
            shows_masked("BillingStreet", false, &m),
            None,
            "a sibling is not masked"
        );
        assert_eq!(
            shows_masked("Spot__c", false, &m),
            Some("spot__latitude__s")
        );
        assert_eq!(
            shows_masked("MailingPostalCode", true, &m),
            Some("mailingaddress")
        );
        assert_eq!(shows_masked("Phone", true, &m), None);
        assert_eq!(shows_masked("lastname", true, &m), Some("lastname"));
    }

    #[test]
    fn a_query_naming_a_compound_of_a_masked_field_is_refused_in_any_clause() {
        let m = masked(&["LastName", "BillingCity"]);
        let refused = |q: &str, from: &str| refuse_in_query(q, from, &children(q), &m).is_err();
        assert!(refused("SELECT Name FROM Contact", "Contact"));
        assert!(refused(
            "SELECT Id FROM Contact WHERE Name LIKE 'Mar%'",
            "Contact"
        ));
        assert!(refused("SELECT Id, Owner.Name FROM Account", "Account"));
        assert!(refused(
            "SELECT Id FROM Account ORDER BY BillingAddress",
            "Account"
        ));
        assert!(!refused("SELECT Id, Name FROM Account", "Account"));
        assert!(!refused("SELECT Id, Account.Name FROM Contact", "Contact"));
        assert!(refused("SELECT LastName FROM Lead", "Lead"));
        // A child subquery over people: its Name is a person's.
        assert!(refused(
            "SELECT Id, (SELECT Name FROM Contacts) FROM Account",
            "Account"
        ));
        assert!(!refused(
            "SELECT Id, Name, (SELECT Subject FROM Tasks) FROM Account",
            "Account"
        ));
        let e = refuse_in_query("SELECT Name FROM Contact", "Contact", &[], &m).unwrap_err();
        assert!(e.contains("compound") && e.contains("lastname"), "{e}");
        assert!(refuse_fields("Contact", ["Email", "Name"], &m).is_err());
        assert!(refuse_fields("Account", ["Name"], &m).is_ok());
    }

    #[test]
    fn records_are_masked_by_type_and_person_accounts_by_their_parts() {
        let m = masked(&["LastName", "BillingCountry"]);
        // The shapes of Salesforce's REST answers (SOQL and SOSL Reference, "Compound Fields").
        let mut contact = json!({"Name": "Maria Lopez", "LastName": "Lopez", "Email": "m@x"});
        mask_record(contact.as_object_mut().unwrap(), Some("Contact"), &m);
        assert_eq!(contact["Name"], MASKED);
        assert_eq!(contact["LastName"], MASKED);
        assert_eq!(contact["Email"], "m@x");
        let mut account =
            json!({"Name": "Acme", "BillingAddress": {"city": "Paris", "country": "FR"}});
        mask_record(account.as_object_mut().unwrap(), Some("Account"), &m);
        assert_eq!(account["Name"], "Acme");
        assert_eq!(account["BillingAddress"], MASKED);
        let mut person_account = json!({"Name": "Ann Lee", "FirstName": "Ann", "LastName": "Lee"});
        mask_record(person_account.as_object_mut().unwrap(), Some("Account"), &m);
        assert_eq!(person_account["Name"], MASKED);
    }
}
