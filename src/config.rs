//! Per-tenant configuration, read from the component's WASI environment.
//!
//! The host gives each tenant's calls their own environment (`wasi:cli/environment`), so one
//! tenant can never read another's settings. Only non-secret settings live here: the broker
//! adds the credential outside the component.

use crate::policy::WorkspacePolicy;
use std::collections::BTreeMap;
use std::time::Duration;
use url::Url;

/// Environment variable names, documented in docs/contributors.md ("Embedding the component").
pub mod keys {
    /// The broker's base URL (https; plain http only on loopback). Required.
    pub const PROXY_BASE: &str = "CRM_PROXY_BASE";
    /// The broker's integration name for CRM A (HubSpot); default `hubspot`.
    pub const CRM_A_INTEGRATION: &str = "CRM_A_INTEGRATION";
    /// Path segments, `/`-separated, between the integration name and HubSpot's own paths;
    /// default none.
    pub const CRM_A_API_BASE: &str = "CRM_A_API_BASE";
    /// The connected HubSpot account's portal (hub) id, as the broker knows it from the
    /// connection; when set, every record a search answers carries a link. Optional.
    pub const CRM_A_PORTAL_ID: &str = "CRM_A_PORTAL_ID";
    /// The account's UI domain (a hubspot.com host, e.g. `app-eu1.hubspot.com`); default
    /// `app.hubspot.com`. Used with `CRM_A_PORTAL_ID`.
    pub const CRM_A_UI_DOMAIN: &str = "CRM_A_UI_DOMAIN";
    /// The broker's integration name for CRM B (Salesforce); default `salesforce`.
    pub const CRM_B_INTEGRATION: &str = "CRM_B_INTEGRATION";
    /// The Salesforce REST API version, e.g. `65.0`; default [`super::DEFAULT_CRM_B_API_VERSION`].
    pub const CRM_B_API_VERSION: &str = "CRM_B_API_VERSION";
    /// Per-request timeout in milliseconds, 1 to 600000; default 30000.
    pub const HTTP_TIMEOUT_MS: &str = "CRM_HTTP_TIMEOUT_MS";
    /// Largest response body read, in bytes, 1 KiB to 1 GiB; default 16 MiB.
    pub const MAX_RESPONSE_BYTES: &str = "CRM_MAX_RESPONSE_BYTES";
    /// Total attempts for a read, 1 (no retry) to 10; default 3.
    pub const READ_ATTEMPTS: &str = "CRM_READ_ATTEMPTS";
    /// First retry backoff in milliseconds, doubling per retry, 0 to 60000; default 250.
    pub const RETRY_BASE_MS: &str = "CRM_RETRY_BASE_MS";
    /// Longest single wait in milliseconds, `Retry-After` included, 0 to 300000; default 10000.
    pub const MAX_RETRY_WAIT_MS: &str = "CRM_MAX_RETRY_WAIT_MS";
    /// Most bytes of query records returned inline, 1 KiB to 64 MiB; default 256 KiB.
    pub const INLINE_MAX_BYTES: &str = "CRM_INLINE_MAX_BYTES";
    /// A query with more records than this goes to a file, 1 to 10 million; default 5000.
    pub const FILE_THRESHOLD_RECORDS: &str = "CRM_FILE_THRESHOLD_RECORDS";
    /// Most records written to one result file, 1 to 50 million; default 1 million.
    pub const FILE_MAX_RECORDS: &str = "CRM_FILE_MAX_RECORDS";
    /// The tenant's results directory as the component sees it; set by the host, unset means
    /// no result files.
    pub const RESULTS_DIR: &str = "CRM_RESULTS_DIR";
}

/// The Salesforce REST API version used when the tenant does not pick one (Winter '26).
pub const DEFAULT_CRM_B_API_VERSION: &str = "65.0";

/// Everything a call needs to know about where and how to reach the CRMs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The broker's base URL, e.g. `https://broker.example.com`.
    pub proxy_base: Url,
    /// The broker's integration name for CRM A, the path segment after `sdk/proxy`.
    pub crm_a_integration: String,
    /// Path segments between the integration name and CRM A paths (often none).
    pub crm_a_api_base: Vec<String>,
    /// The HubSpot account records open in, when the tenant's settings name it.
    pub hubspot_portal: Option<HubspotPortal>,
    /// The broker's integration name for CRM B, the path segment after `sdk/proxy`.
    pub crm_b_integration: String,
    /// The Salesforce REST API version in every CRM B path.
    pub crm_b_api_version: ApiVersion,
    /// Timeouts, response size and retry settings for each request.
    pub limits: Limits,
    /// When query results go inline and when to a file.
    pub results: ResultLimits,
    /// The workspace admin's policy over writes, masked fields and record counts.
    pub policy: WorkspacePolicy,
}

/// Where HubSpot records open in a browser: `https://{ui_domain}/contacts/{portal_id}/...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubspotPortal {
    /// The account's portal (hub) id.
    pub portal_id: u64,
    /// A bare host under hubspot.com, lower-cased, e.g. `app-eu1.hubspot.com`.
    pub ui_domain: String,
}

/// `text` as a HubSpot UI domain (a host under hubspot.com), lower-cased; `None` for anything
/// else, so a link can only ever point at HubSpot.
pub fn hubspot_ui_domain(text: &str) -> Option<String> {
    let domain = text.to_ascii_lowercase();
    let is_host = !domain.is_empty()
        && domain.len() <= 253
        && domain
            .split('.')
            .all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    (is_host && (domain == "hubspot.com" || domain.ends_with(".hubspot.com"))).then_some(domain)
}

/// How query results reach the assistant: inline up to a byte budget, or as a JSON Lines file
/// when they are large and the host gave the tenant a results directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultLimits {
    /// Most bytes of records returned inline; the rest is left to a cursor.
    pub inline_max_bytes: usize,
    /// A query whose total exceeds this many records goes to a file (when files are enabled).
    pub file_threshold_records: u64,
    /// Most records written to one file.
    pub file_max_records: u64,
    /// Whether the host keeps result files for the tenant (a label, never a path: the host
    /// says where each published file is, as each user's files are kept apart).
    pub dir: Option<String>,
}

impl Default for ResultLimits {
    fn default() -> Self {
        ResultLimits {
            inline_max_bytes: 256 * 1024,
            file_threshold_records: 5_000,
            file_max_records: 1_000_000,
            dir: None,
        }
    }
}

/// Bounds on time, size and retries for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Per-request timeout, passed to `wasi:http` (the host clamps it further).
    pub http_timeout: Duration,
    /// Largest response body read into memory.
    pub max_response_bytes: usize,
    /// Total attempts for a read (1 = no retry).
    pub read_attempts: u32,
    /// First backoff delay; doubles each retry.
    pub retry_base: Duration,
    /// Longest single wait, including a CRM's `Retry-After`.
    pub max_retry_wait: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            http_timeout: Duration::from_secs(30),
            max_response_bytes: 16 * 1024 * 1024,
            read_attempts: 3,
            retry_base: Duration::from_millis(250),
            max_retry_wait: Duration::from_secs(10),
        }
    }
}

/// A Salesforce API version such as `65.0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ApiVersion {
    major: u16,
}

impl ApiVersion {
    /// Accepts `65`, `65.0` or `v65.0`; Salesforce versions are whole numbers from 20 on.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.strip_prefix('v').unwrap_or(text);
        let major = text.strip_suffix(".0").unwrap_or(text);
        if major.is_empty() || major.len() > 3 || !major.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let major: u16 = major.parse().ok()?;
        (major >= 20).then_some(ApiVersion { major })
    }

    /// The path segment, e.g. `v65.0`.
    pub fn segment(self) -> String {
        format!("v{}.0", self.major)
    }
}

pub use crate::error::ConfigError;

impl Config {
    /// Reads the configuration from the host's key-value settings (`wasi:config/store`).
    pub fn from_vars<I, K, V>(vars: I) -> Result<Self, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let vars = Vars(
            vars.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        );
        let get = |key: &str| vars.get(key);
        let defaults = Limits::default();

        let proxy_base = parse_proxy_base(get(keys::PROXY_BASE).ok_or(ConfigError {
            key: keys::PROXY_BASE,
            problem: "not set; the host must give the broker's base URL".into(),
        })?)?;
        let crm_a_integration = integration_name(
            keys::CRM_A_INTEGRATION,
            get(keys::CRM_A_INTEGRATION),
            "hubspot",
        )?;
        let crm_b_integration = integration_name(
            keys::CRM_B_INTEGRATION,
            get(keys::CRM_B_INTEGRATION),
            "salesforce",
        )?;
        let crm_a_api_base = match get(keys::CRM_A_API_BASE) {
            None => Vec::new(),
            Some(base) => base
                .split('/')
                .filter(|s| !s.is_empty())
                .map(|s| checked_segment(keys::CRM_A_API_BASE, s))
                .collect::<Result<_, _>>()?,
        };
        let hubspot_portal = match get(keys::CRM_A_PORTAL_ID) {
            None => None,
            Some(id) => Some(HubspotPortal {
                portal_id: id.trim().parse().map_err(|_| ConfigError {
                    key: keys::CRM_A_PORTAL_ID,
                    problem: format!("{id:?} is not a HubSpot portal id (a number)"),
                })?,
                ui_domain: {
                    let domain = get(keys::CRM_A_UI_DOMAIN).unwrap_or("app.hubspot.com");
                    hubspot_ui_domain(domain).ok_or(ConfigError {
                        key: keys::CRM_A_UI_DOMAIN,
                        problem: format!("{domain:?} is not a hubspot.com host"),
                    })?
                },
            }),
        };
        let crm_b_api_version = match get(keys::CRM_B_API_VERSION) {
            None => ApiVersion::parse(DEFAULT_CRM_B_API_VERSION).expect("default parses"),
            Some(v) => ApiVersion::parse(v).ok_or(ConfigError {
                key: keys::CRM_B_API_VERSION,
                problem: format!("{v:?} is not a Salesforce API version such as 65.0"),
            })?,
        };
        let limits = Limits {
            http_timeout: Duration::from_millis(number(
                &vars,
                keys::HTTP_TIMEOUT_MS,
                defaults.http_timeout.as_millis() as u64,
                1..=600_000,
            )?),
            max_response_bytes: number(
                &vars,
                keys::MAX_RESPONSE_BYTES,
                defaults.max_response_bytes as u64,
                1024..=1 << 30,
            )? as usize,
            read_attempts: number(
                &vars,
                keys::READ_ATTEMPTS,
                defaults.read_attempts.into(),
                1..=10,
            )? as u32,
            retry_base: Duration::from_millis(number(
                &vars,
                keys::RETRY_BASE_MS,
                defaults.retry_base.as_millis() as u64,
                0..=60_000,
            )?),
            max_retry_wait: Duration::from_millis(number(
                &vars,
                keys::MAX_RETRY_WAIT_MS,
                defaults.max_retry_wait.as_millis() as u64,
                0..=300_000,
            )?),
        };
        let default_results = ResultLimits::default();
        let results = ResultLimits {
            inline_max_bytes: number(
                &vars,
                keys::INLINE_MAX_BYTES,
                default_results.inline_max_bytes as u64,
                1024..=64 << 20,
            )? as usize,
            file_threshold_records: number(
                &vars,
                keys::FILE_THRESHOLD_RECORDS,
                default_results.file_threshold_records,
                1..=10_000_000,
            )?,
            file_max_records: number(
                &vars,
                keys::FILE_MAX_RECORDS,
                default_results.file_max_records,
                1..=50_000_000,
            )?,
            dir: get(keys::RESULTS_DIR).map(str::to_string),
        };
        let policy = WorkspacePolicy::from_settings(get)?;
        let mut results = results;
        // No export carries more records than one call may.
        if let Some(max) = policy.max_records {
            results.file_max_records = results.file_max_records.min(max);
        }
        Ok(Config {
            policy,
            results,
            proxy_base,
            crm_a_integration,
            crm_a_api_base,
            hubspot_portal,
            crm_b_integration,
            crm_b_api_version,
            limits,
        })
    }
}

fn parse_proxy_base(text: &str) -> Result<Url, ConfigError> {
    let problem = |p: String| ConfigError {
        key: keys::PROXY_BASE,
        problem: p,
    };
    let url = Url::parse(text).map_err(|e| problem(format!("{text:?} is not a URL: {e}")))?;
    let loopback = matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
    if url.scheme() != "https" && !(url.scheme() == "http" && loopback) {
        return Err(problem(
            "must be an https URL (data travels over HTTPS)".into(),
        ));
    }
    if url.host().is_none()
        || url.query().is_some()
        || url.fragment().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return Err(problem(format!(
            "{text:?} must be scheme, host and optional path only"
        )));
    }
    Ok(url)
}

fn integration_name(
    key: &'static str,
    value: Option<&str>,
    default: &str,
) -> Result<String, ConfigError> {
    checked_segment(key, value.unwrap_or(default))
}

/// A configured path segment: plain characters only, so configuration cannot smuggle in `..`.
fn checked_segment(key: &'static str, segment: &str) -> Result<String, ConfigError> {
    let ok = !segment.is_empty()
        && segment != "."
        && segment != ".."
        && segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if ok {
        Ok(segment.to_string())
    } else {
        Err(ConfigError {
            key,
            problem: format!("{segment:?} must be letters, digits, '-', '_' or '.'"),
        })
    }
}

/// The raw variables; blank values count as unset.
struct Vars(BTreeMap<String, String>);

impl Vars {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(|v| v.trim()).filter(|v| !v.is_empty())
    }
}

fn number(
    vars: &Vars,
    key: &'static str,
    default: u64,
    range: std::ops::RangeInclusive<u64>,
) -> Result<u64, ConfigError> {
    let Some(text) = vars.get(key) else {
        return Ok(default);
    };
    text.parse::<u64>()
        .ok()
        .filter(|n| range.contains(n))
        .ok_or(ConfigError {
            key,
            problem: format!(
                "{text:?} must be a whole number from {} to {}",
                range.start(),
                range.end()
            ),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Vec<(&'static str, &'static str)> {
        vec![(keys::PROXY_BASE, "https://broker.example.com")]
    }

    #[test]
    fn defaults_fill_everything_but_the_broker() {
        let config = Config::from_vars(base()).unwrap();
        assert_eq!(config.proxy_base.as_str(), "https://broker.example.com/");
        assert_eq!(config.crm_a_integration, "hubspot");
        assert_eq!(config.crm_b_integration, "salesforce");
        assert!(config.crm_a_api_base.is_empty());
        assert_eq!(config.crm_b_api_version.segment(), "v65.0");
        assert_eq!(config.limits, Limits::default());
    }

    #[test]
    fn a_hubspot_portal_is_a_number_and_its_domain_a_hubspot_host() {
        assert_eq!(Config::from_vars(base()).unwrap().hubspot_portal, None);
        let with = |extra: &[(&'static str, &'static str)]| {
            Config::from_vars(base().into_iter().chain(extra.iter().copied()))
        };
        let portal = with(&[(keys::CRM_A_PORTAL_ID, "12345678")]).unwrap();
        assert_eq!(
            portal.hubspot_portal,
            Some(HubspotPortal {
                portal_id: 12_345_678,
                ui_domain: "app.hubspot.com".into()
            })
        );
        let eu = with(&[
            (keys::CRM_A_PORTAL_ID, "1"),
            (keys::CRM_A_UI_DOMAIN, "APP-EU1.hubspot.com"),
        ])
        .unwrap();
        assert_eq!(eu.hubspot_portal.unwrap().ui_domain, "app-eu1.hubspot.com");
        let not_a_number = with(&[(keys::CRM_A_PORTAL_ID, "acme")]).unwrap_err();
        assert_eq!(not_a_number.key, keys::CRM_A_PORTAL_ID);
        for elsewhere in [
            "evil.example.com",
            "hubspot.com.evil.example",
            "app.hubspot.com/x",
        ] {
            let err = with(&[
                (keys::CRM_A_PORTAL_ID, "1"),
                (keys::CRM_A_UI_DOMAIN, elsewhere),
            ])
            .unwrap_err();
            assert_eq!(err.key, keys::CRM_A_UI_DOMAIN, "{elsewhere}");
        }
    }

    #[test]
    fn missing_broker_names_the_variable() {
        let err = Config::from_vars(Vec::<(String, String)>::new()).unwrap_err();
        assert_eq!(err.key, keys::PROXY_BASE);
    }

    #[test]
    fn plain_http_is_refused_except_on_loopback() {
        let err = Config::from_vars([(keys::PROXY_BASE, "http://broker.example.com")]).unwrap_err();
        assert!(err.problem.contains("https"), "{err}");
        assert!(Config::from_vars([(keys::PROXY_BASE, "http://127.0.0.1:8080")]).is_ok());
    }

    #[test]
    fn api_version_forms() {
        for (text, seg) in [("65.0", "v65.0"), ("v61.0", "v61.0"), ("62", "v62.0")] {
            assert_eq!(ApiVersion::parse(text).unwrap().segment(), seg);
        }
        for bad in ["", "v", "65.1", "abc", "../1", "19.0", "6500"] {
            assert!(ApiVersion::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn configured_segments_cannot_traverse() {
        let mut vars = base();
        vars.push((keys::CRM_A_API_BASE, "a/../b"));
        let err = Config::from_vars(vars).unwrap_err();
        assert_eq!(err.key, keys::CRM_A_API_BASE);
        let mut vars = base();
        vars.push((keys::CRM_B_INTEGRATION, "sales force"));
        assert_eq!(
            Config::from_vars(vars).unwrap_err().key,
            keys::CRM_B_INTEGRATION
        );
    }

    #[test]
    fn limits_are_range_checked() {
        let mut vars = base();
        vars.push((keys::READ_ATTEMPTS, "0"));
        assert_eq!(
            Config::from_vars(vars).unwrap_err().key,
            keys::READ_ATTEMPTS
        );
        let mut vars = base();
        vars.push((keys::HTTP_TIMEOUT_MS, "1500"));
        vars.push((keys::CRM_A_API_BASE, "/crm-a/"));
        let config = Config::from_vars(vars).unwrap();
        assert_eq!(config.limits.http_timeout, Duration::from_millis(1500));
        assert_eq!(config.crm_a_api_base, vec!["crm-a".to_string()]);
    }
}
