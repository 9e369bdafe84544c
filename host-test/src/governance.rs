//! The host's half of the workspace policy (`CRM_POLICY_*` settings, set by the operator, never
//! by a model): it hides the tools a policy makes useless, refuses them before any component
//! runs, and masks the fields never to be shown in every tool answer and every result file,
//! whatever the component did. The component enforces the same policy on each write it builds
//! (see `src/governance/`); this is the second wall.

use crm_plugin::governance::WorkspacePolicy;
use crm_plugin::policy::keys;
use serde_json::Value;

/// What an error about a masked field says instead of the CRM's own words.
fn masked_note(field: &str) -> String {
    format!(
        "{MASKED}: the CRM's message concerns field {field}, which this workspace masks; check \
         the record in the CRM itself"
    )
}

/// What masked values read as.
pub const MASKED: &str = "[masked by workspace policy]";

/// How long a confirmation token stays good when the tenant does not say: ten minutes.
const DEFAULT_CONFIRM_TTL_SECONDS: u64 = 600;

/// The HubSpot activity types `crma_log_activity` writes.
const ACTIVITY_TYPES: [&str; 5] = ["notes", "calls", "meetings", "emails", "tasks"];

/// The host's reading of one tenant's policy: the component's own reading of the
/// `CRM_POLICY_*` settings (one parser, one set of keys), plus what only the host uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostPolicy {
    policy: WorkspacePolicy,
    confirm_ttl_seconds: u64,
}

impl std::ops::Deref for HostPolicy {
    type Target = WorkspacePolicy;

    fn deref(&self) -> &WorkspacePolicy {
        &self.policy
    }
}

impl HostPolicy {
    /// Reads the policy from the tenant's settings (a later setting of a key wins); refuses a
    /// malformed setting by name, as the component would on its first call.
    pub fn from_settings<'a>(
        settings: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, String> {
        let settings: Vec<(&str, &str)> = settings
            .into_iter()
            .map(|(k, v)| (k, v.trim()))
            .filter(|(_, v)| !v.is_empty())
            .collect();
        let get = |key: &str| {
            settings
                .iter()
                .rev()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| *v)
        };
        let policy = WorkspacePolicy::from_settings(get).map_err(|e| e.to_string())?;
        let key = keys::CONFIRM_TTL_SECONDS;
        let confirm_ttl_seconds = match get(key) {
            None => DEFAULT_CONFIRM_TTL_SECONDS,
            Some(value) => value
                .parse()
                .ok()
                .filter(|s| (1..=86_400).contains(s))
                .ok_or_else(|| format!("{key}: {value:?} is not 1 to 86400 seconds"))?,
        };
        Ok(HostPolicy {
            policy,
            confirm_ttl_seconds,
        })
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

    /// Replaces, anywhere in `value`, every value that would show a masked field: by name
    /// (without case, as both CRMs compare field names) and by meaning (compounds, and names
    /// reached through a relationship to a person), through the component's own rules
    /// ([`crm_plugin::masking`]), so host and component never disagree on what is masked.
    pub fn mask(&self, value: &mut Value) {
        crm_plugin::masking::mask_value(value, &self.masked);
    }

    /// A tool result as a client reads it (MCP's `CallToolResult` as JSON, as a finished task
    /// keeps it), masked by this policy: the structured content, and each text block's JSON.
    /// A stored answer is masked again each time it is read, by the policy in force then.
    pub fn mask_call_result(&self, result: &mut Value) {
        if !self.masks() {
            return;
        }
        if let Some(structured) = result.get_mut("structuredContent") {
            self.mask(structured);
        }
        let blocks = result.get_mut("content").and_then(Value::as_array_mut);
        for block in blocks.into_iter().flatten() {
            if let Some(Value::String(text)) = block.get_mut("text") {
                *text = self.mask_text(std::mem::take(text));
            }
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

    /// A `crm-error` payload with what a masked field could leak taken out: masked keys are
    /// replaced, and when the CRM's error concerns a masked field (it is among the error's
    /// `fields`, or named in its messages) the CRM's own words, which may quote the value, are
    /// replaced by a note.
    pub fn mask_crm_error(&self, payload: String) -> String {
        let Ok(mut value) = serde_json::from_str::<Value>(&payload) else {
            return match self.named_in(&payload) {
                Some(field) => masked_note(field),
                None => payload,
            };
        };
        self.mask(&mut value);
        let in_fields = value["fields"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .find_map(|f| self.masked.iter().find(|m| m.eq_ignore_ascii_case(f)));
        let in_words = ["messages", "hint"]
            .iter()
            .filter_map(|k| value.get(*k))
            .find_map(|v| self.named_in(&v.to_string()));
        if let Some(field) = in_fields.map(String::as_str).or(in_words) {
            let note = masked_note(field);
            if value.get("messages").is_some() {
                value["messages"] = Value::Array(vec![Value::String(note.clone())]);
            }
            if value.get("hint").is_some() {
                value["hint"] = Value::String(note);
            }
        }
        value.to_string()
    }

    /// The masked field `text` names as a word (any case), if any.
    fn named_in(&self, text: &str) -> Option<&str> {
        let lower = text.to_ascii_lowercase();
        let words: Vec<&str> = lower
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        self.masked
            .iter()
            .find(|m| words.contains(&m.as_str()))
            .map(String::as_str)
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
    use crate::bindings::ToolError;
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
    fn a_crm_error_about_a_masked_field_loses_the_crms_words_and_others_are_kept() {
        let p = policy(&[("CRM_POLICY_MASKED_FIELDS", "email, Phone")]);
        // HubSpot's validation error quotes the value (its documented error shape).
        let about_email = json!({"crm": "hubspot", "status": 400, "codes": ["VALIDATION_ERROR"],
            "messages": ["Property values were not valid: maria@acme.example is not a valid email"],
            "fields": ["email"], "hint": "fix email"});
        let masked = ToolError::CrmError(about_email.to_string())
            .masked_by(&p)
            .message();
        assert!(!masked.contains("maria@acme.example"), "{masked}");
        assert!(
            masked.contains("email"),
            "the field is still named: {masked}"
        );
        let named_only = json!({"crm": "salesforce", "status": 400, "codes": ["INVALID_FIELD"],
            "messages": ["Phone: value 555-0100 is too long"], "fields": []});
        let masked = ToolError::CrmError(named_only.to_string())
            .masked_by(&p)
            .message();
        assert!(!masked.contains("555-0100"), "{masked}");
        let other = json!({"crm": "salesforce", "status": 400, "codes": ["INVALID_FIELD"],
            "messages": ["No such column 'Nmae'"], "fields": ["Nmae"]})
        .to_string();
        let kept = ToolError::CrmError(other.clone()).masked_by(&p);
        assert_eq!(
            serde_json::from_str::<Value>(&kept.message()).unwrap(),
            serde_json::from_str::<Value>(&other).unwrap()
        );
        let refusal = ToolError::Forbidden("field Phone is masked".into());
        let kept = refusal.masked_by(&p);
        assert_eq!(
            (kept.kind(), kept.message().as_str()),
            ("forbidden", "field Phone is masked"),
            "our own refusal is kept"
        );
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
