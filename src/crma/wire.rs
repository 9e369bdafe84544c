//! HubSpot's answer envelopes shared by several endpoints, as typed wire structs. Each tool
//! module keeps the wire structs only it reads beside it; record bodies stay JSON.

use serde::Deserialize;

/// One page of a HubSpot list or search answer:
/// `{"results": [...], "paging": {"next": {"after": "NTI1Cg%3D%3D", "link": "..."}}}`
/// (<https://developers.hubspot.com/docs/api-reference/crm-owners-v3/owners/get-crm-v3-owners>).
/// A missing `results` is an empty page; a missing `paging` is the last page.
#[derive(Debug, Deserialize)]
pub(crate) struct Page<T> {
    #[serde(default = "Vec::new")]
    pub(crate) results: Vec<T>,
    #[serde(default)]
    pub(crate) paging: Option<Paging>,
}

/// The `paging` object of a page.
#[derive(Debug, Deserialize)]
pub(crate) struct Paging {
    #[serde(default)]
    pub(crate) next: Option<NextPage>,
}

/// `paging.next`: where the next page starts.
#[derive(Debug, Deserialize)]
pub(crate) struct NextPage {
    pub(crate) after: String,
}

impl<T> Page<T> {
    /// HubSpot's `paging.next.after`, as it came.
    pub(crate) fn next_after(&self) -> Option<&str> {
        self.paging
            .as_ref()
            .and_then(|p| p.next.as_ref())
            .map(|n| n.after.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn a_page_reads_results_and_the_next_cursor() {
        // The shape of GET /crm/v3/owners (HubSpot's reference page cited above).
        let page: Page<Value> = serde_json::from_value(json!({
            "results": [{"id": "41629779"}],
            "paging": {"next": {"after": "NTI1Cg%3D%3D", "link": "?after=NTI1Cg%3D%3D"}}
        }))
        .unwrap();
        assert_eq!(page.results.len(), 1);
        assert_eq!(page.next_after(), Some("NTI1Cg%3D%3D"));
    }

    #[test]
    fn a_last_page_has_no_cursor_and_missing_results_are_empty() {
        let page: Page<Value> = serde_json::from_value(json!({"paging": {}})).unwrap();
        assert!(page.results.is_empty());
        assert_eq!(page.next_after(), None);
    }
}
