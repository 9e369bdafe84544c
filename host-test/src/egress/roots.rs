//! Where each of a tenant's two integrations sits on its broker, from the tenant's settings:
//! the only path prefixes its calls may use. Another integration on the same broker (another
//! product's, or another CRM's) is outside both.

use super::Crm;
use super::path::Segments;
use url::Url;

/// The settings that name the integrations, as the component reads them.
const CRM_A_INTEGRATION: &str = "CRM_A_INTEGRATION";
const CRM_A_API_BASE: &str = "CRM_A_API_BASE";
const CRM_B_INTEGRATION: &str = "CRM_B_INTEGRATION";

/// The decoded path segments each integration's requests start with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    crm_a: Vec<String>,
    crm_b: Vec<String>,
}

impl Roots {
    /// `{proxy base path}/sdk/proxy/{integration}` for each CRM (and CRM A's API base), with the
    /// component's defaults (`hubspot`, `salesforce`) where the settings name none.
    pub fn new<'a>(
        proxy_base: &Url,
        settings: impl IntoIterator<Item = (&'a str, &'a str)> + Clone,
    ) -> Self {
        let get = |key: &str| {
            settings
                .clone()
                .into_iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v)
        };
        let base: Vec<String> = proxy_base
            .path_segments()
            .into_iter()
            .flatten()
            .filter(|s| !s.is_empty())
            .map(|s| {
                percent_encoding::percent_decode_str(s)
                    .decode_utf8_lossy()
                    .into_owned()
            })
            .collect();
        let root = |integration: &str| {
            let mut segments = base.clone();
            segments.extend(["sdk".into(), "proxy".into(), integration.to_string()]);
            segments
        };
        let mut crm_a = root(get(CRM_A_INTEGRATION).unwrap_or("hubspot"));
        crm_a.extend(
            get(CRM_A_API_BASE)
                .unwrap_or_default()
                .split('/')
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        );
        let crm_b = root(get(CRM_B_INTEGRATION).unwrap_or("salesforce"));
        Roots { crm_a, crm_b }
    }

    /// Which integration a path is under, and the rest of the path after its root.
    pub fn locate<'s>(&self, segments: &'s Segments) -> Option<(Crm, &'s [String])> {
        // The longer root first, so nested roots resolve to the more specific integration.
        let mut roots = [(Crm::Hubspot, &self.crm_a), (Crm::Salesforce, &self.crm_b)];
        roots.sort_by_key(|(_, r)| std::cmp::Reverse(r.len()));
        roots
            .into_iter()
            .find_map(|(i, root)| segments.strip_prefix(root).map(|rest| (i, rest)))
    }
}
