//! Comparing field values read at two moments: a confirmation's values against the record
//! now, and a revert's written values against the record now. The reads themselves are each
//! CRM's ([`super::crm::GovernedCrm::current`]).

use crate::policy::WorkspacePolicy;
use serde_json::{Map, Value};

/// Each field of `expected` whose value `now` holds no longer, with both values, described
/// for a refusal by `describe(field, expected, now)`; a masked field is named, never its values.
pub(super) fn moved(
    expected: &Map<String, Value>,
    now: &Map<String, Value>,
    policy: &WorkspacePolicy,
    describe: impl Fn(&str, &Value, &Value) -> String,
) -> Vec<String> {
    expected
        .iter()
        .filter_map(|(field, then)| {
            let now = now.get(field).unwrap_or(&Value::Null);
            (!same_value(then, now)).then(|| {
                if policy.is_masked(field) {
                    format!("{field} (masked) holds another value")
                } else {
                    describe(field, then, now)
                }
            })
        })
        .collect()
}

/// Whether two field values are the same value as the CRM stores it: HubSpot keeps every
/// value as text, so `10` and `"10"` are one value, and an empty text is no value.
pub(crate) fn same_value(a: &Value, b: &Value) -> bool {
    fn text(v: &Value) -> Option<String> {
        match v {
            Value::Null => None,
            Value::String(s) if s.is_empty() => None,
            Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        }
    }
    text(a) == text(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_compare_as_the_crm_stores_them() {
        assert!(same_value(&json!(10), &json!("10")));
        assert!(same_value(&json!(""), &Value::Null));
        assert!(!same_value(&json!("10"), &json!("11")));
        assert!(same_value(&json!(true), &json!("true")));
    }
}
