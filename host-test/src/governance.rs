//! The host's half of the workspace policy (`CRM_POLICY_*` settings, set by the operator, never
//! by a model): it hides the tools a policy makes useless, refuses them before any component
//! runs, and masks the fields never to be shown in every tool answer and every result file,
//! whatever the component did. The component enforces the same policy on each write it builds
//! (see `src/governance/`); this is the second wall.

use serde_json::Value;

/// What masked values read as.
pub const MASKED: &str = "[masked by workspace policy]";

/// How long a confirmation token stays good when the tenant does not say: ten minutes.
const DEFAULT_CONFIRM_TTL_SECONDS: u64 = 600;

/// The HubSpot activity types `crma_log_activity` writes.
const ACTIVITY_TYPES: [&str; 5] = ["notes", "calls", "meetings", "emails", "tasks"];

/// The host's reading of one tenant's policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostPolicy {
    read_only: bool,
    crm_a_writable: Option<Vec<String>>,
    crm_b_writable: Option<Vec<String>>,
    masked: Vec<String>,
    confirm_ttl_seconds: u64,
}

fn names(text: &str) -> Vec<String> {
    text.split(',')
        .map(|n| n.trim().to_ascii_lowercase())
        .filter(|n| !n.is_empty() && n != "none")
        .collect()
}

impl HostPolicy {
    /// Reads the policy from the tenant's settings; refuses a malformed setting by name.
    pub fn from_settings<'a>(
        settings: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, String> {
        let mut policy = HostPolicy {
            confirm_ttl_seconds: DEFAULT_CONFIRM_TTL_SECONDS,
            ..HostPolicy::default()
        };
        for (key, value) in settings {
            let value = value.trim();
            if value.is_empty() {
                continue;
            }
            match key {
                "CRM_POLICY_READ_ONLY" => {
                    policy.read_only = match value.to_ascii_lowercase().as_str() {
                        "true" => true,
                        "false" => false,
                        _ => return Err(format!("{key}: {value:?} is not true or false")),
                    }
                }
                "CRM_POLICY_CRM_A_WRITABLE" => policy.crm_a_writable = Some(names(value)),
                "CRM_POLICY_CRM_B_WRITABLE" => policy.crm_b_writable = Some(names(value)),
                "CRM_POLICY_MASKED_FIELDS" => policy.masked = names(value),
                "CRM_POLICY_CONFIRM_TTL_SECONDS" => {
                    policy.confirm_ttl_seconds = value
                        .parse()
                        .ok()
                        .filter(|s| (1..=86_400).contains(s))
                        .ok_or_else(|| format!("{key}: {value:?} is not 1 to 86400 seconds"))?
                }
                _ => {}
            }
        }
        Ok(policy)
    }

    /// How long a confirmation token stays good, in milliseconds.
    pub fn confirm_ttl_ms(&self) -> i64 {
        (self.confirm_ttl_seconds * 1000) as i64
    }

    /// Why the policy hides a tool (and refuses it), naming the rule; `None` when it is
    /// offered. A read-only tool is never hidden.
    pub fn hides(&self, tool: &str, read_only: bool) -> Option<String> {
        if read_only {
            return None;
        }
        if self.read_only {
            return Some("the workspace policy (CRM_POLICY_READ_ONLY) makes the workspace read-only for the assistant".into());
        }
        let useless = |list: &Option<Vec<String>>, needs: &[&str]| match list {
            None => false,
            Some(list) if needs.is_empty() => list.is_empty(),
            Some(list) => !needs.iter().any(|n| list.iter().any(|l| l == n)),
        };
        let (setting, hidden) = match tool {
            "crma_merge_companies" => (
                "CRM_POLICY_CRM_A_WRITABLE",
                useless(&self.crm_a_writable, &["companies"]),
            ),
            "crma_log_activity" => (
                "CRM_POLICY_CRM_A_WRITABLE",
                useless(&self.crm_a_writable, &ACTIVITY_TYPES),
            ),
            t if t.starts_with("crma_") => (
                "CRM_POLICY_CRM_A_WRITABLE",
                useless(&self.crm_a_writable, &[]),
            ),
            t if t.starts_with("crmb_") => (
                "CRM_POLICY_CRM_B_WRITABLE",
                useless(&self.crm_b_writable, &[]),
            ),
            _ => (
                "CRM_POLICY_CRM_A_WRITABLE and CRM_POLICY_CRM_B_WRITABLE",
                useless(&self.crm_a_writable, &[]) && useless(&self.crm_b_writable, &[]),
            ),
        };
        hidden
            .then(|| format!("the workspace policy ({setting}) leaves {tool} nothing it may write"))
    }

    /// Whether anything is masked at all.
    pub fn masks(&self) -> bool {
        !self.masked.is_empty()
    }

    /// Replaces, anywhere in `value`, the value of every key named like a masked field (names
    /// compare without case, as both CRMs' field names do).
    pub fn mask(&self, value: &mut Value) {
        match value {
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    if self.masked.iter().any(|m| m.eq_ignore_ascii_case(key)) {
                        if !v.is_null() {
                            *v = Value::String(MASKED.into());
                        }
                    } else {
                        self.mask(v);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.mask(v)),
            _ => {}
        }
    }

    /// A tool answer (JSON text) with masked fields replaced; text that is not JSON is kept.
    pub fn mask_text(&self, text: String) -> String {
        if !self.masks() {
            return text;
        }
        match serde_json::from_str::<Value>(&text) {
            Ok(mut value) => {
                self.mask(&mut value);
                value.to_string()
            }
            Err(_) => text,
        }
    }

    /// One JSON Lines line (without its newline) with masked fields replaced. A line that is
    /// not JSON is dropped whole rather than written unmasked.
    pub fn mask_line(&self, line: &[u8]) -> Option<Vec<u8>> {
        let mut value: Value = serde_json::from_slice(line).ok()?;
        self.mask(&mut value);
        Some(value.to_string().into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(settings: &[(&str, &str)]) -> HostPolicy {
        HostPolicy::from_settings(settings.iter().copied()).unwrap()
    }

    #[test]
    fn a_policy_hides_the_write_tools_it_leaves_nothing_to_write() {
        let open = policy(&[]);
        assert!(open.hides("crma_update_record", false).is_none());
        let read_only = policy(&[("CRM_POLICY_READ_ONLY", "true")]);
        assert!(
            read_only
                .hides("crmb_create_record", false)
                .unwrap()
                .contains("CRM_POLICY_READ_ONLY")
        );
        assert!(read_only.hides("crmb_run_soql_query", true).is_none());
        let contacts_only = policy(&[
            ("CRM_POLICY_CRM_A_WRITABLE", "contacts"),
            ("CRM_POLICY_CRM_B_WRITABLE", "none"),
        ]);
        assert!(contacts_only.hides("crma_update_record", false).is_none());
        assert!(contacts_only.hides("crma_merge_companies", false).is_some());
        assert!(contacts_only.hides("crma_log_activity", false).is_some());
        assert!(
            contacts_only
                .hides("crmb_update_record", false)
                .unwrap()
                .contains("CRM_POLICY_CRM_B_WRITABLE")
        );
        assert!(contacts_only.hides("crm_revert_change", false).is_none());
        let nothing = policy(&[
            ("CRM_POLICY_CRM_A_WRITABLE", "none"),
            ("CRM_POLICY_CRM_B_WRITABLE", "none"),
        ]);
        assert!(nothing.hides("crm_revert_change", false).is_some());
        assert!(HostPolicy::from_settings([("CRM_POLICY_READ_ONLY", "yes")]).is_err());
    }

    #[test]
    fn masked_fields_are_replaced_at_any_depth_and_in_any_case() {
        let p = policy(&[("CRM_POLICY_MASKED_FIELDS", "SSN__c, hs_ssn")]);
        let mut v = json!({"records": [{"Id": "1", "ssn__C": "123", "Account": {"SSN__c": "9"}}],
                           "properties": {"hs_ssn": "42", "email": "a@b"}, "empty": {"hs_ssn": null}});
        p.mask(&mut v);
        assert_eq!(v["records"][0]["ssn__C"], MASKED);
        assert_eq!(v["records"][0]["Account"]["SSN__c"], MASKED);
        assert_eq!(v["properties"], json!({"hs_ssn": MASKED, "email": "a@b"}));
        assert_eq!(v["empty"]["hs_ssn"], Value::Null);
        assert_eq!(
            p.mask_line(br#"{"SSN__c":"1"}"#).unwrap(),
            format!(r#"{{"SSN__c":"{MASKED}"}}"#).into_bytes()
        );
        assert_eq!(p.mask_line(b"{not json"), None);
    }
}
