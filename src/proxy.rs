//! Broker URLs: `{proxy_base}/sdk/proxy/{integration}/...` for both CRMs.
//!
//! Every dynamic part is pushed as one whole path segment, so the `url` crate percent-encodes
//! any `/`, `?`, `#` or `%` in it: a value can never change the shape of the path.

use crate::config::Config;
use url::Url;

/// A CRM A (HubSpot) URL: `{proxy_base}/sdk/proxy/{integration}/{api_base}/{path...}`.
pub fn crm_a(config: &Config, path: &[&str], query: &[(&str, &str)]) -> Url {
    let mut segments: Vec<&str> = vec!["sdk", "proxy", &config.crm_a_integration];
    segments.extend(config.crm_a_api_base.iter().map(String::as_str));
    segments.extend_from_slice(path);
    build(&config.proxy_base, &segments, query)
}

/// A CRM B (Salesforce) URL: `{proxy_base}/sdk/proxy/{integration}/services/data/vNN.0/{path...}`.
pub fn crm_b(config: &Config, path: &[&str], query: &[(&str, &str)]) -> Url {
    let version = config.crm_b_api_version.segment();
    let mut segments: Vec<&str> = vec![
        "sdk",
        "proxy",
        &config.crm_b_integration,
        "services",
        "data",
        &version,
    ];
    segments.extend_from_slice(path);
    build(&config.proxy_base, &segments, query)
}

/// The org's list of REST API versions, `{proxy_base}/sdk/proxy/{integration}/services/data/`,
/// the one Salesforce path that names no version.
pub fn crm_b_versions(config: &Config) -> Url {
    let mut url = build(
        &config.proxy_base,
        &[
            "sdk",
            "proxy",
            &config.crm_b_integration,
            "services",
            "data",
        ],
        &[],
    );
    url.path_segments_mut()
        .expect("the configured proxy base is an http(s) URL, which has a path")
        .push("");
    url
}

/// The path prefix every CRM B URL of this tenant starts with (used to vet paging links).
pub fn crm_b_root_path(config: &Config) -> String {
    crm_b(config, &[], &[])
        .path()
        .trim_end_matches('/')
        .to_string()
}

fn build(base: &Url, segments: &[&str], query: &[(&str, &str)]) -> Url {
    let mut url = base.clone();
    {
        let mut path = url
            .path_segments_mut()
            .expect("the configured proxy base is an http(s) URL, which has a path");
        path.pop_if_empty();
        for segment in segments {
            // `url` drops "." and ".." segments; callers only pass validated names and ids,
            // which are never empty or dots.
            debug_assert!(
                !matches!(*segment, "" | "." | ".."),
                "unvalidated path segment"
            );
            path.push(segment);
        }
    }
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
        );
        assert_eq!(
            url.as_str(),
            "https://broker.example.com/base/sdk/proxy/hubspot/crm/v3/objects/contacts/search"
        );
        let url = crm_a(
            &config(&[(keys::CRM_A_API_BASE, "api/hs")]),
            &["crm", "v3", "owners"],
            &[("limit", "100"), ("after", "abc")],
        );
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
        );
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
        let url = crm_b(&config(&[]), &["sobjects", "../../x?y#z", "a/b%2F"], &[]);
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
        );
        assert_eq!(
            url.query(),
            Some("q=SELECT+Id+FROM+Account+WHERE+Name+%3D+%27A%26B%27")
        );
    }
}
