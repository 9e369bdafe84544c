//! `crm_find_across`: the same customer in both CRMs. A person by e-mail (HubSpot contacts;
//! Salesforce Contacts and unconverted Leads), or a company by domain or name (HubSpot
//! companies; Salesforce Accounts). Each side's records come with their links; each pair lists
//! the fields that disagree, so the assistant can say "HubSpot has her as a customer,
//! Salesforce still as an open lead". A CRM that is disconnected or lacks a scope is named,
//! and the answer comes from the other.

use crate::crma::client::{self as crma_client, Call};
use crate::crma::metadata::account::RecordLinks;
use crate::crma::scopes::Operation;
use crate::crma::types::ObjectType;
use crate::crma::wire::{Page, RecordObject};
use crate::crmb::client::{self as crmb_client};
use crate::crmb::ids::{ApiName, SalesforceId};
use crate::crmb::record_url::InstanceUrl;
use crate::error::ToolError;
use crate::policy::ReadScope;
use crate::tool::{CrmEffect, Session, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// Most records looked at on each side.
const MAX_EACH: usize = 5;

/// HubSpot lifecycle stages that mean the person already buys.
const CUSTOMER_STAGES: &[&str] = &["customer", "evangelist"];

/// Input of `crm_find_across`: exactly one of `email` and `company`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FindInput {
    /// A person's e-mail address.
    #[serde(default)]
    email: Option<String>,
    /// A company's web domain (e.g. acme.com) or its exact name.
    #[serde(default)]
    company: Option<String>,
    /// Most records looked at on each side: [`MAX_EACH`], or the workspace's record cap when
    /// smaller (set by the registry, never by the caller).
    #[serde(skip)]
    #[schemars(skip)]
    each: Option<u32>,
}

/// What `crm_find_across` answers.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct FoundAcross {
    /// "person" or "company".
    looked_for: String,
    /// HubSpot's side.
    hubspot: Side,
    /// Salesforce's side.
    salesforce: Side,
    /// Each HubSpot record beside each Salesforce record, with the fields that disagree.
    pairs: Vec<Pair>,
}

/// One CRM's records.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub(crate) struct Side {
    /// Why this CRM could not be asked (disconnected, a scope missing), and what to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
    /// The records found.
    records: Vec<Found>,
}

/// A record found in one CRM.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Found {
    /// Its id.
    id: String,
    /// Its object: contacts, companies, Contact, Lead or Account.
    object: String,
    /// The link that opens it, when one can be made.
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    /// The compared fields, by their common names (name, phone, owner_email, stage, domain,
    /// annual_revenue); masked fields are left out.
    fields: Map<String, Value>,
}

/// Two records that are the same customer, and where they disagree.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Pair {
    /// The HubSpot record.
    hubspot_id: String,
    /// The Salesforce record.
    salesforce_id: String,
    /// The fields whose values differ (empty when they agree).
    disagreements: Vec<Disagreement>,
}

/// One field the two CRMs disagree on.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Disagreement {
    /// The common name of the field.
    field: String,
    /// HubSpot's value.
    hubspot: Value,
    /// Salesforce's value.
    salesforce: Value,
    /// What it means, when there is more to say than the values.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

/// What is looked for.
enum Key<'a> {
    Person(&'a str),
    Company(&'a str),
}

impl FindInput {
    fn key(&self) -> Result<Key<'_>, ToolError> {
        fn text(v: &Option<String>) -> Option<&str> {
            v.as_deref().map(str::trim).filter(|t| !t.is_empty())
        }
        match (text(&self.email), text(&self.company)) {
            (Some(email), None) if email.contains('@') && email.len() <= 254 => {
                Ok(Key::Person(email))
            }
            (Some(email), None) => Err(ToolError::invalid(format!(
                "{email:?} is not an e-mail address"
            ))),
            (None, Some(company)) if company.len() <= 255 => Ok(Key::Company(company)),
            _ => Err(ToolError::invalid(
                "give exactly one of email (a person) or company (a domain or a name)",
            )),
        }
    }
}

/// `crm_find_across`.
pub(crate) struct FindAcross;

impl Tool for FindAcross {
    const NAME: &'static str = "crm_find_across";
    const DESCRIPTION: &'static str = "Find the same customer in HubSpot and Salesforce: a \
        person by e-mail (HubSpot contacts; Salesforce Contacts and open Leads) or a company by \
        domain or exact name (HubSpot companies; Salesforce Accounts). Returns each side's \
        records with links and, for each pair, the fields that disagree (name, phone, owner's \
        e-mail, lifecycle stage or lead status, domain, annual revenue). If one CRM cannot be \
        asked, says why and answers from the other.";
    const TITLE: &'static str = "Find a customer in both CRMs";
    const EFFECT: CrmEffect = CrmEffect::Reads;
    type Input = FindInput;
    type Output = FoundAcross;

    /// The lookup key is a filter: a masked e-mail or domain is never looked up.
    fn reads(input: &FindInput) -> ReadScope<'_> {
        let fields = match input.key() {
            Ok(Key::Person(_)) => vec!["email", "Email"],
            Ok(Key::Company(_)) => vec!["domain", "name", "Website", "Name"],
            Err(_) => Vec::new(),
        };
        ReadScope {
            fields,
            ..ReadScope::default()
        }
    }

    fn cap_records(input: &mut FindInput, cap: u32) {
        input.each = Some(cap.min(MAX_EACH as u32));
    }

    fn run(input: FindInput, session: &mut Session<'_>) -> Result<FoundAcross, ToolError> {
        let key = input.key()?;
        let each = input.each.map_or(MAX_EACH, |n| n as usize);
        let (hubspot, salesforce) = (
            hubspot_side(session, &key, each),
            salesforce_side(session, &key, each),
        );
        let mut hubspot = hubspot.unwrap_or_else(side_problem);
        let mut salesforce = salesforce.unwrap_or_else(side_problem);
        let policy = &session.config()?.policy;
        for record in hubspot
            .records
            .iter_mut()
            .chain(salesforce.records.iter_mut())
        {
            record.fields.retain(|name, _| !masks(policy, name));
        }
        let pairs = hubspot
            .records
            .iter()
            .flat_map(|h| salesforce.records.iter().map(move |s| pair(h, s)))
            .collect();
        Ok(FoundAcross {
            looked_for: match key {
                Key::Person(_) => "person",
                Key::Company(_) => "company",
            }
            .into(),
            hubspot,
            salesforce,
            pairs,
        })
    }
}

/// Whether a compared field would show a masked one, in either CRM's names.
fn masks(policy: &crate::policy::WorkspacePolicy, common: &str) -> bool {
    let names: &[&str] = match common {
        "name" => &[
            "firstname",
            "lastname",
            "name",
            "FirstName",
            "LastName",
            "Name",
        ],
        "phone" => &["phone", "Phone"],
        "owner_email" => &["email", "Email", "hubspot_owner_id", "OwnerId"],
        "stage" => &["lifecyclestage", "Status"],
        "domain" => &["domain", "Website"],
        "annual_revenue" => &["annualrevenue", "AnnualRevenue"],
        _ => &[],
    };
    names.iter().any(|n| policy.is_masked(n))
}

fn side_problem(error: ToolError) -> Side {
    Side {
        problem: Some(error.to_string()),
        records: Vec::new(),
    }
}

/// Each field both records have whose values differ.
fn pair(hubspot: &Found, salesforce: &Found) -> Pair {
    let mut disagreements = Vec::new();
    for (field, h) in &hubspot.fields {
        let Some(s) = salesforce.fields.get(field) else {
            continue;
        };
        if field == "stage" {
            if let Some(note) = stage_conflict(h, &salesforce.object) {
                disagreements.push(Disagreement {
                    field: field.clone(),
                    hubspot: h.clone(),
                    salesforce: s.clone(),
                    note: Some(note),
                });
            }
            continue;
        }
        if !same(field, h, s) {
            disagreements.push(Disagreement {
                field: field.clone(),
                hubspot: h.clone(),
                salesforce: s.clone(),
                note: None,
            });
        }
    }
    Pair {
        hubspot_id: hubspot.id.clone(),
        salesforce_id: salesforce.id.clone(),
        disagreements,
    }
}

/// The two CRMs' stages in words, when they contradict each other.
fn stage_conflict(hubspot: &Value, salesforce_object: &str) -> Option<String> {
    let stage = hubspot.as_str()?.to_ascii_lowercase();
    (salesforce_object == "Lead" && CUSTOMER_STAGES.contains(&stage.as_str()))
        .then(|| format!("HubSpot has this person as a {stage}, Salesforce still as an open lead"))
}

/// Values compared as people read them: text without case or spacing, phone numbers by their
/// digits, domains without scheme or www, numbers by value.
fn same(field: &str, a: &Value, b: &Value) -> bool {
    let text = |v: &Value| match v {
        Value::Null => String::new(),
        Value::String(s) => s.trim().to_ascii_lowercase(),
        other => other.to_string(),
    };
    let (a, b) = (text(a), text(b));
    match field {
        "phone" => digits(&a) == digits(&b),
        "domain" => host(&a) == host(&b),
        "annual_revenue" => match (a.parse::<f64>(), b.parse::<f64>()) {
            (Ok(x), Ok(y)) => x == y,
            _ => a == b,
        },
        _ => a.split_whitespace().eq(b.split_whitespace()),
    }
}

fn digits(text: &str) -> String {
    text.chars().filter(char::is_ascii_digit).collect()
}

/// `https://www.acme.com/about` → `acme.com`.
/// Whether a company key is a web domain rather than a name.
fn by_domain(company: &str) -> bool {
    company.contains('.') && !company.contains(' ')
}

/// Whether a web address is on `domain` or one of its subdomains, compared by host (without
/// case, port or a trailing dot), whatever a LIKE matched: `notacme.com` and
/// `acme.com.evil.example` are not on acme.com; `www.acme.com` and `eu.acme.com` are.
fn on_domain(website: &str, domain: &str) -> bool {
    let bare = |text: &str| {
        let host = host(text).to_ascii_lowercase();
        let host = host
            .rsplit_once('@')
            .map_or(host.as_str(), |(_, h)| h)
            .to_string();
        host.split(':')
            .next()
            .unwrap_or_default()
            .trim_end_matches('.')
            .to_string()
    };
    let (site, domain) = (bare(website), bare(domain));
    !domain.is_empty() && (site == domain || site.ends_with(&format!(".{domain}")))
}

fn host(text: &str) -> String {
    let rest = text.split("://").last().unwrap_or(text);
    let host = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    host.trim_start_matches("www.").to_string()
}

// --- HubSpot ----------------------------------------------------------------------------------

fn hubspot_side(session: &mut Session<'_>, key: &Key<'_>, each: usize) -> Result<Side, ToolError> {
    let (object, filter, properties): (&str, Value, &[&str]) = match key {
        Key::Person(email) => (
            "contacts",
            json!({"propertyName": "email", "operator": "EQ", "value": email}),
            &[
                "firstname",
                "lastname",
                "phone",
                "lifecyclestage",
                "hubspot_owner_id",
            ],
        ),
        Key::Company(company) => {
            let filter = if by_domain(company) {
                json!({"propertyName": "domain", "operator": "EQ", "value": host(company)})
            } else {
                json!({"propertyName": "name", "operator": "EQ", "value": company})
            };
            (
                "companies",
                filter,
                &[
                    "name",
                    "domain",
                    "phone",
                    "annualrevenue",
                    "hubspot_owner_id",
                ],
            )
        }
    };
    let object_type = ObjectType::parse(object).map_err(ToolError::invalid)?;
    let body = json!({"filterGroups": [{"filters": [filter]}], "properties": properties,
                      "limit": each});
    let call = Call::get(
        Operation::Read(object_type.clone()),
        vec!["crm", "v3", "objects", object, "search"],
        format!("{object} matching the customer"),
    )
    .searching(body);
    let page: Page<RecordObject> = crma_client::send_for(session, call)?;
    if page.results.is_empty() {
        return Ok(Side::default());
    }
    // Links and owners' e-mails are extras: without them the records still answer.
    let links = RecordLinks::known_or_read(session).ok();
    let owners = owner_emails(session);
    let records = page
        .results
        .into_iter()
        .map(|r| {
            let p = &r.properties;
            let get = |k: &str| p.get(k).cloned().unwrap_or(Value::Null);
            let mut fields = Map::new();
            match key {
                Key::Person(_) => {
                    let name = [get("firstname"), get("lastname")]
                        .iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect::<Vec<_>>()
                        .join(" ");
                    fields.insert("name".into(), name.into());
                    fields.insert("stage".into(), get("lifecyclestage"));
                }
                Key::Company(_) => {
                    fields.insert("name".into(), get("name"));
                    fields.insert("domain".into(), get("domain"));
                    fields.insert("annual_revenue".into(), get("annualrevenue"));
                }
            }
            fields.insert("phone".into(), get("phone"));
            if let Some(owners) = &owners {
                let owner = get("hubspot_owner_id");
                let email = owner.as_str().and_then(|id| owners.get(id)).cloned();
                fields.insert("owner_email".into(), email.unwrap_or(Value::Null));
            }
            Found {
                url: links.as_ref().and_then(|l| l.url(&object_type, &r.id)),
                id: r.id,
                object: object.into(),
                fields,
            }
        })
        .collect();
    Ok(Side {
        problem: None,
        records,
    })
}

/// Owner id → e-mail, from one page of owners; `None` when they cannot be read (a scope).
fn owner_emails(session: &mut Session<'_>) -> Option<Map<String, Value>> {
    #[derive(Deserialize)]
    struct Owners {
        results: Vec<Owner>,
    }
    #[derive(Deserialize)]
    struct Owner {
        id: String,
        #[serde(default)]
        email: Option<String>,
    }
    let call = Call::get(Operation::ListOwners, vec!["crm", "v3", "owners"], "owners")
        .with_query(vec![("limit", "500".into())]);
    let owners: Owners = crma_client::send_for(session, call).ok()?;
    Some(crate::sorted_map::json_object(
        owners
            .results
            .into_iter()
            .filter_map(|o| Some((o.id, Value::String(o.email?))))
            .collect(),
    ))
}

// --- Salesforce -------------------------------------------------------------------------------

/// A SOQL string literal.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

fn salesforce_side(
    session: &mut Session<'_>,
    key: &Key<'_>,
    each: usize,
) -> Result<Side, ToolError> {
    let queries: Vec<(&str, String)> = match key {
        Key::Person(email) => vec![
            (
                "Contact",
                format!(
                    "SELECT Id, FirstName, LastName, Phone, Owner.Email FROM Contact WHERE \
                     Email = {} LIMIT {each}",
                    quoted(email)
                ),
            ),
            (
                "Lead",
                format!(
                    "SELECT Id, FirstName, LastName, Phone, Status, Owner.Email FROM Lead WHERE \
                     Email = {} AND IsConverted = false LIMIT {each}",
                    quoted(email)
                ),
            ),
        ],
        Key::Company(company) => {
            let filter = if by_domain(company) {
                // Narrowed by LIKE, decided by host below: `%acme.com%` alone also matches
                // notacme.com. The forms a Website holds: bare, with a scheme, a subdomain.
                let d = host(company);
                format!(
                    "(Website = {} OR Website LIKE {} OR Website LIKE {} OR Website LIKE {})",
                    quoted(&d),
                    quoted(&format!("{d}/%")),
                    quoted(&format!("%//{d}%")),
                    quoted(&format!("%.{d}%")),
                )
            } else {
                format!("Name = {}", quoted(company))
            };
            vec![(
                "Account",
                format!(
                    "SELECT Id, Name, Phone, Website, AnnualRevenue, Owner.Email FROM Account \
                     WHERE {filter} LIMIT {each}"
                ),
            )]
        }
    };
    let instance = InstanceUrl::if_known(session.ctx.instance_url.as_deref())?;
    let mut records = Vec::new();
    for (object, soql) in queries {
        if records.len() >= each {
            break;
        }
        let subject = format!("{object} records matching the customer");
        let page = crmb_client::lookup(session, &soql, &subject)?;
        for row in page.records {
            let get = |k: &str| row.get(k).cloned().unwrap_or(Value::Null);
            if let Key::Company(company) = key
                && object == "Account"
                && by_domain(company)
                && !get("Website")
                    .as_str()
                    .is_some_and(|w| on_domain(w, company))
            {
                continue;
            }
            let Some(id) = row.get("Id").and_then(Value::as_str).map(str::to_string) else {
                continue;
            };
            let mut fields = Map::new();
            if object == "Account" {
                fields.insert("name".into(), get("Name"));
                fields.insert("domain".into(), get("Website"));
                fields.insert("annual_revenue".into(), get("AnnualRevenue"));
            } else {
                let name = [get("FirstName"), get("LastName")]
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect::<Vec<_>>()
                    .join(" ");
                fields.insert("name".into(), name.into());
                let stage = match object {
                    "Lead" => json!(format!(
                        "open lead ({})",
                        get("Status").as_str().unwrap_or("?")
                    )),
                    _ => json!("contact"),
                };
                fields.insert("stage".into(), stage);
            }
            fields.insert("phone".into(), get("Phone"));
            fields.insert(
                "owner_email".into(),
                row.get("Owner").map_or(Value::Null, |o| {
                    o.get("Email").cloned().unwrap_or(Value::Null)
                }),
            );
            let url = match (&instance, ApiName::parse(object), SalesforceId::parse(&id)) {
                (Some(instance), Ok(object), Ok(sf_id)) => {
                    Some(instance.record_url(&object, &sf_id).to_string())
                }
                _ => None,
            };
            records.push(Found {
                id,
                object: object.into(),
                url,
                fields,
            });
        }
    }
    records.truncate(each);
    Ok(Side {
        problem: None,
        records,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness;
    use crate::retry::tests::{ScriptedTransport, response};

    #[test]
    fn a_domain_matches_its_host_and_subdomains_only() {
        for site in [
            "acme.com",
            "https://www.acme.com",
            "http://eu.acme.com/about",
            "HTTPS://ACME.COM:443/",
            "acme.com.",
        ] {
            assert!(on_domain(site, "acme.com"), "{site}");
        }
        for site in [
            "https://www.notacme.com",
            "acme.com.evil.example",
            "https://acme.community",
            "https://evil.example/acme.com",
            "https://acme.com@evil.example",
            "",
        ] {
            assert!(!on_domain(site, "acme.com"), "{site}");
        }
    }

    /// Salesforce's LIKE matched a look-alike domain too ("Comparison Operators", LIKE:
    /// `%` matches any characters,
    /// <https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_select_comparisonoperators.htm>):
    /// only the account on the domain is listed and paired.
    #[test]
    fn a_look_alike_domain_is_not_the_same_customer() {
        let accounts = json!({"totalSize": 2, "done": true, "records": [
            {"attributes": {"type": "Account"}, "Id": "0015gA000000001ABA", "Name": "Acme",
             "Website": "https://www.acme.com", "Phone": null, "AnnualRevenue": null},
            {"attributes": {"type": "Account"}, "Id": "0015gA000000002ABA", "Name": "Not Acme",
             "Website": "https://www.notacme.com", "Phone": null, "AnnualRevenue": null}]});
        let mut t = ScriptedTransport::new([
            response(200, r#"{"total": 0, "results": []}"#),
            response(200, &accounts.to_string()),
        ]);
        let out = harness::call(
            &mut t,
            &harness::ctx(&["crm.objects.companies.read"], None),
            &harness::config(&[]),
            "crm_find_across",
            &json!({"company": "acme.com"}),
        )
        .unwrap();
        let ids: Vec<&str> = out["salesforce"]["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["0015gA000000001ABA"], "{out}");
        let soql = t.sent[1]
            .url()
            .query_pairs()
            .find(|(k, _)| k == "q")
            .unwrap()
            .1;
        assert!(!soql.contains("'%acme.com%'"), "{soql}");
    }

    fn found(object: &str, fields: Value) -> Found {
        Found {
            id: "1".into(),
            object: object.into(),
            url: None,
            fields: fields.as_object().unwrap().clone(),
        }
    }

    #[test]
    fn a_customer_in_hubspot_who_is_an_open_lead_in_salesforce_is_said_in_words() {
        let hubspot = found(
            "contacts",
            json!({"name": "Maria Garcia", "phone": "+1 (713) 555-0142", "stage": "customer",
                   "owner_email": "dana@acme.example.com"}),
        );
        let salesforce = found(
            "Lead",
            json!({"name": "maria  garcia", "phone": "+1 713 555 0199",
                   "stage": "open lead (Open - Not Contacted)",
                   "owner_email": "dana.whitfield@example.com"}),
        );
        let pair = pair(&hubspot, &salesforce);
        let fields: Vec<&str> = pair
            .disagreements
            .iter()
            .map(|d| d.field.as_str())
            .collect();
        assert_eq!(fields, ["owner_email", "phone", "stage"], "the name agrees");
        let stage = pair
            .disagreements
            .iter()
            .find(|d| d.field == "stage")
            .unwrap();
        assert_eq!(
            stage.note.as_deref(),
            Some("HubSpot has this person as a customer, Salesforce still as an open lead")
        );
    }

    #[test]
    fn companies_compare_domains_phones_and_amounts_as_people_read_them() {
        assert!(same(
            "domain",
            &json!("acme.com"),
            &json!("https://www.acme.com/about")
        ));
        assert!(!same(
            "domain",
            &json!("acme-energy.example.com"),
            &json!("https://www.example.com/energy")
        ));
        // The country code is part of the number.
        assert!(!same(
            "phone",
            &json!("+1 713 555 0100"),
            &json!("(713) 555-0100")
        ));
        assert!(same(
            "phone",
            &json!("+1 713 555 0100"),
            &json!("+1-713-555-0100")
        ));
        assert!(same(
            "annual_revenue",
            &json!("52000000"),
            &json!(52000000.0)
        ));
    }
}
