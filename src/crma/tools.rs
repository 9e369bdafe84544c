//! The `crma_*` record, owner and user tools. Each builds its HubSpot call as data, sends it
//! through `client::send_for` (which checks the granted scopes first) and reads the answer as
//! a typed wire struct of HubSpot's documented shape, so a renamed or missing field is an
//! error, never a `null` passed on. Each answers with a typed output whose JSON Schema is the
//! tool's advertised output schema.
//!
//! - `reads`: `crma_search_records`, `crma_get_record`.
//! - `writes`: `crma_create_record`, `crma_update_record`, `crma_merge_companies`.
//! - `people`: `crma_list_owners`, `crma_list_users`.

mod people;
mod reads;
mod writes;

pub use people::{ListOwners, ListUsers};
pub use reads::{GetRecord, SearchInput, SearchRecords};
pub(crate) use writes::create_record;
pub use writes::{CreateRecord, MergeCompanies, UpdateRecord};

use super::types::PropertyName;
use super::wire::Page;
use crate::error::ToolError;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Property name → value for writes. HubSpot stores every value as a string; numbers and
/// booleans are sent as their text, null clears the property.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct PropertyValues(BTreeMap<PropertyName, Value>);

impl PropertyValues {
    pub(super) fn to_wire(&self) -> Result<Map<String, Value>, ToolError> {
        self.0
            .iter()
            .map(|(name, value)| {
                let text = match value {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    Value::Null => String::new(),
                    _ => {
                        return Err(ToolError::invalid(format!(
                            "property {}: values must be a string, number, boolean or null (multi-select as \"a;b\")",
                            name.as_str()
                        )));
                    }
                };
                Ok((name.as_str().to_string(), Value::String(text)))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(crate::sorted_map::json_object)
    }
}

/// Longest paging token accepted back from a caller.
const MAX_CURSOR_LEN: usize = 1024;

/// A HubSpot paging cursor (`after`). HubSpot documents it only as "the paging cursor token"
/// and its own examples are base64 text such as `NTI1Cg%3D%3D`, so any URL-safe token of a
/// bounded length is passed back as it came.
pub(super) fn after(cursor: &Option<String>) -> Result<Option<String>, ToolError> {
    match cursor {
        Some(c) if is_cursor(c) => Ok(Some(c.clone())),
        Some(_) => Err(ToolError::invalid(
            "cursor is not one this tool returned: pass next_cursor unchanged",
        )),
        None => Ok(None),
    }
}

/// 1 to 1,024 characters that need no escaping in a URL or are already escaped: the tokens
/// [`after`] accepts back, so the only ones worth handing out.
pub(super) fn is_cursor(text: &str) -> bool {
    (1..=MAX_CURSOR_LEN).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.~%=+/".contains(&b))
}

/// A page's `paging.next.after`, when it is one this tool will accept back.
pub(super) fn next_cursor_of<T>(page: &Page<T>) -> Option<String> {
    page.next_after()
        .filter(|after| is_cursor(after))
        .map(str::to_string)
}

#[cfg(test)]
mod tests;
