//! Broker URLs: `{proxy_base}/sdk/proxy/{integration}/...` for both CRMs.
//!
//! Every dynamic part is pushed as one whole path segment, so the `url` crate percent-encodes
//! any `/`, `?`, `#` or `%` in it: a value can never change the shape of the path. The three
//! segments no encoding can keep (empty, `.` and `..`) are refused before anything is built.

use crate::config::Config;
use crate::error::ToolError;
use url::Url;

/// A CRM A (HubSpot) URL: `{proxy_base}/sdk/proxy/{integration}/{api_base}/{path...}`.
pub fn crm_a(config: &Config, path: &[&str], query: &[(&str, &str)]) -> Result<Url, ToolError> {
    let mut segments: Vec<&str> = vec!["sdk", "proxy", &config.crm_a_integration];
    segments.extend(config.crm_a_api_base.iter().map(String::as_str));
    Ok(build(&config.proxy_base, &segments, checked(path)?, query))
}

/// A CRM B (Salesforce) URL: `{proxy_base}/sdk/proxy/{integration}/services/data/vNN.0/{path...}`.
pub fn crm_b(config: &Config, path: &[&str], query: &[(&str, &str)]) -> Result<Url, ToolError> {
    let version = config.crm_b_api_version.segment();
    let segments = [
        "sdk",
        "proxy",
        &config.crm_b_integration,
        "services",
        "data",
        &version,
    ];
    Ok(build(&config.proxy_base, &segments, checked(path)?, query))
}

/// The org's list of REST API versions, `{proxy_base}/sdk/proxy/{integration}/services/data/`,
/// the one Salesforce path that names no version.
pub fn crm_b_versions(config: &Config) -> Url {
    let segments = [
        "sdk",
        "proxy",
        &config.crm_b_integration,
        "services",
        "data",
    ];
    let mut url = build(&config.proxy_base, &segments, &[], &[]);
    url.path_segments_mut()
        .expect("the configured proxy base is an http(s) URL, which has a path")
        .push("");
    url
}

/// The path prefix every CRM B URL of this tenant starts with (used to vet paging links).
pub fn crm_b_root_path(config: &Config) -> String {
    crm_b(config, &[], &[])
        .expect("an empty path has no segment to refuse")
        .path()
        .trim_end_matches('/')
        .to_string()
}

/// The caller's path segments, refusing those `url` cannot keep as one segment: it drops `.`
/// and `..` (the WHATWG rules read `%2e%2e` as `..` too, so no encoding survives), an empty one
/// would change the broker route, and it strips tabs and line breaks before reading the rest,
/// so `".\t."` would act as `..`. Names and ids never hold any of these; the check makes the
/// guarantee hold for any value, not just for today's callers.
fn checked<'a, 'b>(path: &'a [&'b str]) -> Result<&'a [&'b str], ToolError> {
    let unkeepable =
        |s: &str| matches!(s, "" | "." | "..") || s.chars().any(|c| c.is_ascii_control());
    match path.iter().find(|s| unkeepable(s)) {
        Some(segment) => Err(ToolError::invalid(format!(
            "{segment:?} can't be part of a CRM path: names and ids are never empty, '.' or \
             '..', and hold no control characters"
        ))),
        None => Ok(path),
    }
}

/// `base` plus the configured segments (validated by [`Config`]) and the checked ones.
fn build(base: &Url, configured: &[&str], path: &[&str], query: &[(&str, &str)]) -> Url {
    let mut url = base.clone();
    url.path_segments_mut()
        .expect("the configured proxy base is an http(s) URL, which has a path")
        .pop_if_empty()
        .extend(configured)
        .extend(path);
    if !query.is_empty() {
        url.query_pairs_mut().extend_pairs(query);
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::keys;

    fn config(extra: &[(&'static str, &'static str)]) -> Config {
        let mut vars = vec![(keys::PROXY_BASE, "https://broker.example.com/base")];
        vars.extend_from_slice(extra);
        Config::from_vars(vars).unwrap()
    }

    #[test]
    fn crm_a_paths_follow_the_proxy_shape() {
        let url = crm_a(
            &config(&[]),
            &["crm", "v3", "objects", "contacts", "search"],
            &[],
        )
        .unwrap();
        assert_eq!(
            url.as_str(),
            "https://broker.example.com/base/sdk/proxy/hubspot/crm/v3/objects/contacts/search"
        );
        let url = crm_a(
            &config(&[(keys::CRM_A_API_BASE, "api/hs")]),
            &["crm", "v3", "owners"],
            &[("limit", "100"), ("after", "abc")],
        )
        .unwrap();
        assert_eq!(
            url.as_str(),
            "https://broker.example.com/base/sdk/proxy/hubspot/api/hs/crm/v3/owners?limit=100&after=abc"
        );
    }

    #[test]
    fn crm_b_paths_carry_the_api_version() {
        let url = crm_b(
            &config(&[(keys::CRM_B_API_VERSION, "62.0")]),
            &["sobjects", "Account", "001000000000001AAA"],
            &[],
        )
        .unwrap();
        assert_eq!(
            url.as_str(),
            "https://broker.example.com/base/sdk/proxy/salesforce/services/data/v62.0/sobjects/Account/001000000000001AAA"
        );
        assert_eq!(
            crm_b_root_path(&config(&[])),
            "/base/sdk/proxy/salesforce/services/data/v65.0"
        );
    }

    #[test]
    fn hostile_segments_are_encoded_not_interpreted() {
        let url = crm_b(&config(&[]), &["sobjects", "../../x?y#z", "a/b%2F"], &[]).unwrap();
        assert_eq!(
            url.path(),
            "/base/sdk/proxy/salesforce/services/data/v65.0/sobjects/..%2F..%2Fx%3Fy%23z/a%2Fb%252F"
        );
        assert_eq!(url.query(), None);
        assert_eq!(url.fragment(), None);
    }

    #[test]
    fn query_values_are_form_encoded() {
        let url = crm_b(
            &config(&[]),
            &["query"],
            &[("q", "SELECT Id FROM Account WHERE Name = 'A&B'")],
        )
        .unwrap();
        assert_eq!(
            url.query(),
            Some("q=SELECT+Id+FROM+Account+WHERE+Name+%3D+%27A%26B%27")
        );
    }

    /// `url` silently drops `.` and `..` segments, and strips tabs and line breaks first (so
    /// `".\t."` popped the segment before it): all are refused rather than sent.
    #[test]
    fn segments_no_encoding_can_keep_are_refused() {
        for segment in ["..", ".", "", ".\t.", ".\n.", "\r", "a\u{0}b"] {
            let path = ["sobjects", segment, "001000000000001AAA"];
            assert!(matches!(
                crm_b(&config(&[]), &path, &[]),
                Err(ToolError::InvalidInput(_))
            ));
            assert!(matches!(
                crm_a(&config(&[]), &path, &[]),
                Err(ToolError::InvalidInput(_))
            ));
        }
    }
}
