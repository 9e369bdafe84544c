//! HubSpot's answer envelopes shared by several endpoints, as typed wire structs. Each tool
//! module keeps the wire structs only it reads beside it; record property maps stay JSON.

use serde::Deserialize;
use serde_json::{Map, Value};

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

/// One CRM record as HubSpot answers it (`SimplePublicObject`): in a search's `results`
/// (<https://developers.hubspot.com/docs/api-reference/crm-objects-v3/search/post-crm-v3-objects-objectType-search>)
/// and as `GET /crm/v3/objects/{objectType}/{objectId}` answers it
/// (<https://developers.hubspot.com/docs/api/crm/objects>, "Retrieve records").
/// `id`, `properties`, `createdAt` and `updatedAt` are required; `archived` and `archivedAt`
/// are optional, and a record without them is a live one. Property values stay JSON: HubSpot
/// sends text or `null`, and the properties asked for decide which names come.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RecordObject {
    pub(crate) id: String,
    pub(crate) properties: Map<String, Value>,
    pub(crate) created_at: String,
    pub(crate) updated_at: String,
    #[serde(default)]
    pub(crate) archived: bool,
    pub(crate) archived_at: Option<String>,
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

    /// A record as HubSpot's references show it (pages cited on [`RecordObject`]), read with
    /// `archived=true` so that the archived fields come too.
    #[test]
    fn a_record_reads_as_hubspot_documents_it() {
        let record: RecordObject = serde_json::from_value(json!({
            "id": "512", "properties": {"email": "bh@hubspot.com", "firstname": "Brian", "hs_object_id": "512", "lastname": null},
            "createdAt": "2019-10-30T03:30:17.883Z", "updatedAt": "2019-12-07T16:50:06.678Z",
            "archived": true, "archivedAt": "2020-01-12T10:00:00.000Z"
        }))
        .unwrap();
        assert_eq!(record.id, "512");
        assert_eq!(record.properties["firstname"], "Brian");
        assert!(record.properties["lastname"].is_null());
        assert_eq!(record.created_at, "2019-10-30T03:30:17.883Z");
        assert_eq!(record.updated_at, "2019-12-07T16:50:06.678Z");
        assert!(record.archived);
        assert_eq!(
            record.archived_at.as_deref(),
            Some("2020-01-12T10:00:00.000Z")
        );
        let live: RecordObject = serde_json::from_value(json!({
            "id": "512", "properties": {}, "createdAt": "2019-10-30T03:30:17.883Z", "updatedAt": "2019-12-07T16:50:06.678Z"
        }))
        .unwrap();
        assert!(!live.archived && live.archived_at.is_none());
    }

    #[test]
    fn a_record_without_a_required_field_is_refused_by_name() {
        let full = json!({"id": "512", "properties": {}, "createdAt": "2019-10-30T03:30:17.883Z", "updatedAt": "2019-12-07T16:50:06.678Z"});
        for field in ["id", "properties", "createdAt", "updatedAt"] {
            let mut answer = full.clone();
            answer.as_object_mut().unwrap().remove(field);
            let err = serde_json::from_value::<RecordObject>(answer).unwrap_err();
            assert!(
                err.to_string()
                    .contains(&format!("missing field `{field}`")),
                "{field}: {err}"
            );
        }
    }

    #[test]
    fn a_last_page_has_no_cursor_and_missing_results_are_empty() {
        let page: Page<Value> = serde_json::from_value(json!({"paging": {}})).unwrap();
        assert!(page.results.is_empty());
        assert_eq!(page.next_after(), None);
    }
}
