//! The REST API versions the sandbox org serves, as `GET /services/data/` lists them
//! (https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_versions.htm):
//! `[{label, url, version}]`. A version outside the list answers 404 NOT_FOUND, as a real org
//! does for a version it does not know.

use serde_json::{Value, json};

/// Oldest and newest versions served (Summer '14 to Spring '26).
const OLDEST: u32 = 31;
const NEWEST: u32 = 66;

/// True for a path segment such as `v65.0` that names a served version.
pub fn serves(segment: &str) -> bool {
    segment
        .strip_prefix('v')
        .and_then(|v| v.strip_suffix(".0"))
        .and_then(|major| major.parse::<u32>().ok())
        .is_some_and(|major| (OLDEST..=NEWEST).contains(&major))
}

/// The body of `GET /services/data/`.
pub fn versions() -> Value {
    (OLDEST..=NEWEST)
        .map(|major| {
            json!({"label": format!("Release {major}"), "url": format!("/services/data/v{major}.0"),
                   "version": format!("{major}.0")})
        })
        .collect()
}
