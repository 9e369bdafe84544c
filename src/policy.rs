//! The workspace admin's policy over what the assistant may write and read, from the tenant's
//! settings (`CRM_POLICY_*`). The host sets them from its own configuration; nothing a model
//! sends can change them. Every refusal names the rule, so the user knows whom to ask.

use crate::crmb::compound;
use crate::error::{ConfigError, Crm, ToolError};
use crate::governance::target::{WriteKind, WriteTarget};

/// The settings, documented in docs/governed-writes.md (the policy table).
pub mod keys {
    /// `true` makes the whole workspace read-only.
    pub const READ_ONLY: &str = "CRM_POLICY_READ_ONLY";
    /// Comma-separated HubSpot object types the assistant may write (e.g. `contacts,notes`);
    /// unset means every type.
    pub const CRM_A_WRITABLE: &str = "CRM_POLICY_CRM_A_WRITABLE";
    /// Comma-separated Salesforce objects the assistant may write (e.g. `Task,Contact`); unset
    /// means every object.
    pub const CRM_B_WRITABLE: &str = "CRM_POLICY_CRM_B_WRITABLE";
    /// Comma-separated field names never shown (e.g. `SSN__c`), in either CRM.
    pub const MASKED_FIELDS: &str = "CRM_POLICY_MASKED_FIELDS";
    /// Comma-separated field names never written, in either CRM.
    pub const NEVER_WRITTEN: &str = "CRM_POLICY_NEVER_WRITTEN";
    /// Most records one call returns or exports.
    pub const MAX_RECORDS: &str = "CRM_POLICY_MAX_RECORDS";
    /// `true` (or `token`) makes every write need a confirmation token from a preview; `user`
    /// has the person confirm each write in their client (MCP elicitation), refusing writes
    /// from clients that cannot ask; `user-or-token` asks the person when the client can and
    /// falls back to the token otherwise.
    pub const CONFIRM_WRITES: &str = "CRM_POLICY_CONFIRM_WRITES";
    /// The HubSpot property every created record and activity is marked with: `name` (set to
    /// `true`) or `name=value`.
    pub const CRM_A_PROVENANCE: &str = "CRM_POLICY_CRM_A_PROVENANCE";
    /// The Salesforce field every created record is marked with: `Name__c` (set to `true`) or
    /// `Name__c=value`.
    pub const CRM_B_PROVENANCE: &str = "CRM_POLICY_CRM_B_PROVENANCE";
    /// How long a confirmation token stays good, in seconds (the host keeps the tokens; the
    /// component ignores this one).
    pub const CONFIRM_TTL_SECONDS: &str = "CRM_POLICY_CONFIRM_TTL_SECONDS";
}

/// What a read tool's input names, as the policy judges it ([`WorkspacePolicy::check_read`]):
/// declared by each tool (its `Tool::reads`) and checked by the registry before the
/// tool runs.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReadScope<'a> {
    /// Fields or properties read, filtered, sorted or looked up by.
    pub fields: Vec<&'a str>,
    /// The Salesforce object the fields are of: a compound field and its parts go together.
    pub salesforce_object: Option<&'a str>,
    /// A SOQL query: every name in it, compounds by meaning.
    pub soql: Option<&'a str>,
    /// HubSpot free text, searched over this object type's default searchable properties.
    pub free_text_in: Option<&'a str>,
    /// The most records the call asks for.
    pub records: Option<u64>,
}

/// A rule of the policy, named in refusals by its setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// The workspace is read-only.
    ReadOnly,
    /// The object is not on the CRM's writable list.
    WritableObjects(Crm),
    /// The field is never written.
    NeverWritten,
    /// The field is masked: never shown, so never searched or filtered on either.
    Masked,
    /// More records than one call may carry.
    MaxRecords,
}

impl Rule {
    /// The setting that holds the rule.
    pub fn setting(self) -> &'static str {
        match self {
            Rule::ReadOnly => keys::READ_ONLY,
            Rule::WritableObjects(Crm::Hubspot) => keys::CRM_A_WRITABLE,
            Rule::WritableObjects(Crm::Salesforce) => keys::CRM_B_WRITABLE,
            Rule::NeverWritten => keys::NEVER_WRITTEN,
            Rule::Masked => keys::MASKED_FIELDS,
            Rule::MaxRecords => keys::MAX_RECORDS,
        }
    }

    /// A refusal under this rule: what was refused, and that only the admin can change it.
    pub fn refuse(self, what: impl std::fmt::Display) -> ToolError {
        ToolError::Forbidden(format!(
            "the workspace policy ({}) does not allow this: {what}. Nothing was sent. Only a \
             workspace admin can change the policy.",
            self.setting()
        ))
    }
}

/// A marker every created record carries, so the CRM itself shows what the assistant made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// The property or field name.
    pub field: String,
    /// Its value; `None` sets the checkbox to true.
    pub value: Option<String>,
}

/// The policy; the default (no settings) lets everything through, as before policies existed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkspacePolicy {
    /// Nothing is written at all.
    pub read_only: bool,
    /// HubSpot object types that may be written, lower-case; `None` is every type.
    pub crm_a_writable: Option<Vec<String>>,
    /// Salesforce objects that may be written; `None` is every object.
    pub crm_b_writable: Option<Vec<String>>,
    /// Fields never shown, lower-case (both CRMs compare names without case).
    pub masked: Vec<String>,
    /// Fields never written, lower-case.
    pub never_written: Vec<String>,
    /// Most records one call returns or exports.
    pub max_records: Option<u64>,
    /// Every write needs a token from a preview.
    pub confirm_writes: bool,
    /// Who gives that confirmation: the assistant with the token, or the person.
    pub confirm_by: ConfirmBy,
    /// HubSpot's provenance marker.
    pub crm_a_marker: Option<Marker>,
    /// Salesforce's provenance marker.
    pub crm_b_marker: Option<Marker>,
}

/// Who confirms a write when the workspace asks for confirmation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ConfirmBy {
    /// The assistant, passing back the preview's token (`true`, `token`).
    #[default]
    Assistant,
    /// The person, asked by their client; a client that cannot ask is refused (`user`).
    User,
    /// The person when their client can ask, else the assistant with the token
    /// (`user-or-token`).
    UserOrAssistant,
}

impl WorkspacePolicy {
    /// Reads the policy settings; `get` gives a setting's trimmed value, `None` when unset.
    pub fn from_settings<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Result<Self, ConfigError> {
        let flag = |key: &'static str| match get(key) {
            None => Ok(false),
            Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
            Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
            Some(v) => Err(ConfigError {
                key,
                problem: format!("{v:?} is not true or false"),
            }),
        };
        let list = |key: &'static str| get(key).map(names);
        let (confirm_writes, confirm_by) = match get(keys::CONFIRM_WRITES) {
            None => (false, ConfirmBy::Assistant),
            Some(v) if v.eq_ignore_ascii_case("false") => (false, ConfirmBy::Assistant),
            Some(v) if v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("token") => {
                (true, ConfirmBy::Assistant)
            }
            Some(v) if v.eq_ignore_ascii_case("user") => (true, ConfirmBy::User),
            Some(v) if v.eq_ignore_ascii_case("user-or-token") => {
                (true, ConfirmBy::UserOrAssistant)
            }
            Some(v) => {
                return Err(ConfigError {
                    key: keys::CONFIRM_WRITES,
                    problem: format!("{v:?} is not false, true, token, user or user-or-token"),
                });
            }
        };
        let marker = |key: &'static str| get(key).map(|v| marker(key, v)).transpose();
        let max_records = match get(keys::MAX_RECORDS) {
            None => None,
            Some(v) => Some(
                v.parse::<u64>()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or(ConfigError {
                        key: keys::MAX_RECORDS,
                        problem: format!("{v:?} is not a whole number of at least 1"),
                    })?,
            ),
        };
        Ok(WorkspacePolicy {
            read_only: flag(keys::READ_ONLY)?,
            crm_a_writable: list(keys::CRM_A_WRITABLE),
            crm_b_writable: list(keys::CRM_B_WRITABLE),
            masked: list(keys::MASKED_FIELDS).unwrap_or_default(),
            never_written: list(keys::NEVER_WRITTEN).unwrap_or_default(),
            max_records,
            confirm_writes,
            confirm_by,
            crm_a_marker: marker(keys::CRM_A_PROVENANCE)?,
            crm_b_marker: marker(keys::CRM_B_PROVENANCE)?,
        })
    }

    /// Whether a field is masked (names compare without case, as in both CRMs).
    pub fn is_masked(&self, field: &str) -> bool {
        contains(&self.masked, field)
    }

    /// Refuses a masked field named in a request (a filter, a sort, a property asked for):
    /// naming it would let its values be probed even though they are never shown.
    pub fn refuse_masked<'f>(
        &self,
        fields: impl IntoIterator<Item = &'f str>,
    ) -> Result<(), ToolError> {
        match fields.into_iter().find(|f| self.is_masked(f)) {
            Some(field) => Err(Rule::Masked.refuse(format!(
                "field {field} is masked, so it cannot be read, filtered or sorted on"
            ))),
            None => Ok(()),
        }
    }

    /// Refuses HubSpot's free-text `query` when the tenant masks a property it searches:
    /// a match or no match on text says something about a masked value, and a few hundred
    /// searches spell it out. HubSpot documents the default searchable properties of its
    /// standard objects ("Search by default searchable properties",
    /// <https://developers.hubspot.com/docs/api-reference/search/guide>); for other types
    /// (custom objects choose theirs) any masked field refuses the query.
    pub fn refuse_masked_free_text(&self, object_type: &str) -> Result<(), ToolError> {
        if self.masked.is_empty() {
            return Ok(());
        }
        let searched: Option<&[&str]> = match object_type {
            "contacts" => Some(&[
                "firstname",
                "lastname",
                "email",
                "phone",
                "hs_additional_emails",
                "fax",
                "mobilephone",
                "company",
                "hs_marketable_until_renewal",
            ]),
            "companies" => Some(&["website", "phone", "name", "domain"]),
            "deals" => Some(&[
                "dealname",
                "pipeline",
                "dealstage",
                "description",
                "dealtype",
            ]),
            _ => None,
        };
        let hit = match searched {
            Some(list) => list
                .iter()
                .find(|p| self.is_masked(p))
                .map(|p| p.to_string()),
            None => self.masked.first().cloned(),
        };
        match hit {
            Some(field) => Err(Rule::Masked.refuse(format!(
                "free-text search of {object_type} looks into {field}, which is masked, so it \
                 cannot be used: filter on properties that are not masked instead"
            ))),
            None => Ok(()),
        }
    }

    /// The refusal for a request that names masked data, in words the caller made.
    pub fn masked_refusal(&self, why: String) -> ToolError {
        Rule::Masked.refuse(why)
    }

    /// Checks what a read names before anything is sent: masked fields (compounds included, by
    /// meaning), free text over a masked searchable property, and the record cap. The registry
    /// calls it for every tool with what the tool's `Tool::reads` declares, so no read tool
    /// calls these checks itself.
    pub fn check_read(&self, scope: &ReadScope<'_>) -> Result<(), ToolError> {
        self.refuse_masked(scope.fields.iter().copied())?;
        if let Some(query) = scope.soql {
            self.refuse_masked(crate::crmb::soql::identifiers(query))?;
        }
        if let Some(object_type) = scope.free_text_in {
            self.refuse_masked_free_text(object_type)?;
        }
        if let Some(records) = scope.records {
            self.refuse_over_max(records)?;
        }
        if let Some(object) = scope.salesforce_object {
            compound::refuse_fields(object, scope.fields.iter().copied(), &self.masked)
                .map_err(|why| self.masked_refusal(why))?;
        }
        // A query that does not validate is refused by the tool with the SOQL error itself.
        if let Some(query) = scope.soql
            && let Ok(valid) = crate::crmb::soql::validate(query)
        {
            compound::refuse_in_query(
                query,
                valid.object(),
                valid.subquery_relationships(),
                &self.masked,
            )
            .map_err(|why| self.masked_refusal(why))?;
        }
        Ok(())
    }

    /// Refuses a call asking for more records than one call may carry.
    pub fn refuse_over_max(&self, asked: u64) -> Result<(), ToolError> {
        match self.max_records {
            Some(max) if asked > max => Err(Rule::MaxRecords.refuse(format!(
                "{asked} records were asked for and one call may carry at most {max}; ask for \
                 fewer"
            ))),
            _ => Ok(()),
        }
    }

    /// Checks one write before anything about it is sent: the read-only switch, the CRM's
    /// writable objects, and the fields never written.
    pub fn check_write(&self, target: &WriteTarget) -> Result<(), ToolError> {
        if self.read_only {
            return Err(Rule::ReadOnly.refuse("the workspace is read-only for the assistant"));
        }
        let crm = target.crm;
        let writable = match crm {
            Crm::Hubspot => &self.crm_a_writable,
            Crm::Salesforce => &self.crm_b_writable,
        };
        if let Some(list) = writable
            && !contains(list, &target.object)
        {
            let listed = if list.is_empty() {
                "none".to_string()
            } else {
                list.join(", ")
            };
            let verb = match target.kind {
                WriteKind::Associate { .. } => "link records of",
                _ => "write",
            };
            return Err(Rule::WritableObjects(crm).refuse(format!(
                "the assistant may not {verb} {} {}; writable: {listed}",
                crm.product(),
                target.object
            )));
        }
        if let Some(field) = target
            .fields
            .keys()
            .find(|f| contains(&self.never_written, f))
        {
            return Err(Rule::NeverWritten
                .refuse(format!("field {field} is never written by the assistant")));
        }
        Ok(())
    }

    /// The provenance marker for records created in `crm`.
    pub fn marker(&self, crm: Crm) -> Option<&Marker> {
        match crm {
            Crm::Hubspot => self.crm_a_marker.as_ref(),
            Crm::Salesforce => self.crm_b_marker.as_ref(),
        }
    }
}

fn contains(list: &[String], name: &str) -> bool {
    list.iter().any(|n| n.eq_ignore_ascii_case(name))
}

/// A comma-separated list of names, trimmed, lower-cased, blanks dropped.
/// A comma list, lower-case; `none` (any case) names nothing, so `none` alone is the empty list.
fn names(text: &str) -> Vec<String> {
    text.split(',')
        .map(|n| n.trim().to_ascii_lowercase())
        .filter(|n| !n.is_empty() && n != "none")
        .collect()
}

fn marker(key: &'static str, text: &str) -> Result<Marker, ConfigError> {
    let (field, value) = match text.split_once('=') {
        Some((field, value)) => (field.trim(), Some(value.trim().to_string())),
        None => (text.trim(), None),
    };
    let plain = !field.is_empty()
        && field
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if plain {
        Ok(Marker {
            field: field.to_string(),
            value,
        })
    } else {
        Err(ConfigError {
            key,
            problem: format!("{field:?} is not a property or field name"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, json};
    use std::collections::BTreeMap;

    fn policy(settings: &[(&str, &str)]) -> WorkspacePolicy {
        let map: BTreeMap<&str, &str> = settings.iter().copied().collect();
        // As the configuration reads settings: a blank value is unset.
        WorkspacePolicy::from_settings(|k| map.get(k).copied().filter(|v| !v.is_empty())).unwrap()
    }

    #[test]
    fn who_confirms_a_write_is_read_from_one_setting() {
        let confirm = |v: &str| {
            let p = policy(&[(keys::CONFIRM_WRITES, v)]);
            (p.confirm_writes, p.confirm_by)
        };
        assert_eq!(confirm(""), (false, ConfirmBy::Assistant));
        assert_eq!(confirm("false"), (false, ConfirmBy::Assistant));
        assert_eq!(confirm("true"), (true, ConfirmBy::Assistant));
        assert_eq!(confirm("token"), (true, ConfirmBy::Assistant));
        assert_eq!(confirm("user"), (true, ConfirmBy::User));
        assert_eq!(confirm("User-Or-Token"), (true, ConfirmBy::UserOrAssistant));
        let err = WorkspacePolicy::from_settings(|k| (k == keys::CONFIRM_WRITES).then_some("ask"))
            .unwrap_err();
        assert!(err.to_string().contains("user-or-token"), "{err}");
    }

    fn target(crm: Crm, object: &str, fields: &[&str]) -> WriteTarget {
        let fields: Map<_, _> = fields.iter().map(|f| (f.to_string(), json!("x"))).collect();
        WriteTarget {
            crm,
            kind: WriteKind::Update {
                record_id: "1".into(),
            },
            object: object.into(),
            fields,
        }
    }

    #[test]
    fn no_settings_let_every_write_through() {
        let p = policy(&[]);
        assert_eq!(p, WorkspacePolicy::default());
        p.check_write(&target(Crm::Hubspot, "deals", &["amount"]))
            .unwrap();
    }

    #[test]
    fn each_refusal_names_its_setting() {
        let p = policy(&[
            (keys::CRM_A_WRITABLE, "contacts, Notes"),
            (keys::CRM_B_WRITABLE, ""),
            (keys::NEVER_WRITTEN, "hubspot_owner_id"),
        ]);
        p.check_write(&target(Crm::Hubspot, "notes", &["hs_note_body"]))
            .unwrap();
        let e = p
            .check_write(&target(Crm::Hubspot, "deals", &[]))
            .unwrap_err();
        assert!(e.to_string().contains(keys::CRM_A_WRITABLE), "{e}");
        assert!(e.to_string().contains("writable: contacts, notes"), "{e}");
        // A blank list is unset: every Salesforce object stays writable.
        p.check_write(&target(Crm::Salesforce, "Account", &[]))
            .unwrap();
        let e = p
            .check_write(&target(Crm::Hubspot, "contacts", &["HUBSPOT_OWNER_ID"]))
            .unwrap_err();
        assert!(e.to_string().contains(keys::NEVER_WRITTEN), "{e}");
        let e = policy(&[(keys::READ_ONLY, "TRUE")])
            .check_write(&target(Crm::Salesforce, "Task", &[]))
            .unwrap_err();
        assert!(
            matches!(&e, ToolError::Forbidden(m) if m.contains(keys::READ_ONLY)),
            "{e}"
        );
    }

    #[test]
    fn masked_fields_and_the_record_cap_refuse_by_name() {
        let p = policy(&[(keys::MASKED_FIELDS, "SSN__c"), (keys::MAX_RECORDS, "100")]);
        assert!(p.is_masked("ssn__C"));
        let e = p.refuse_masked(["Name", "Ssn__c"]).unwrap_err();
        assert!(e.to_string().contains(keys::MASKED_FIELDS), "{e}");
        p.refuse_over_max(100).unwrap();
        assert!(
            p.refuse_over_max(101)
                .unwrap_err()
                .to_string()
                .contains(keys::MAX_RECORDS)
        );
    }

    #[test]
    fn bad_settings_are_named_for_the_admin() {
        for (key, value) in [
            (keys::READ_ONLY, "yes"),
            (keys::MAX_RECORDS, "0"),
            (keys::CRM_A_PROVENANCE, "a b=c"),
        ] {
            let e = WorkspacePolicy::from_settings(|k| (k == key).then_some(value)).unwrap_err();
            assert_eq!(e.key, key);
        }
        let p = policy(&[(keys::CRM_B_PROVENANCE, "Made_By_Assistant__c=crm-plugin")]);
        assert_eq!(
            p.marker(Crm::Salesforce),
            Some(&Marker {
                field: "Made_By_Assistant__c".into(),
                value: Some("crm-plugin".into())
            })
        );
    }
}
