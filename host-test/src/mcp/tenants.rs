//! The tenants file of `crm-host serve`: which tenants the server runs, and which bearer
//! tokens act for which tenant and user. Tokens are kept only as SHA-256 hashes, so the file
//! can be read by whoever operates the server without handing out access.
//!
//! ```toml
//! [[tenants]]
//! id = "acme"                      # a sandbox tenant unless proxy_base is set
//! # proxy_base = "https://broker.example.com"
//! # credential_env = "ACME_PROXY_CREDENTIAL"   # the broker credential, from the environment
//! # instance_url = "https://acme.my.salesforce.com"
//!
//! [[tokens]]
//! sha256 = "9f86d081…"            # the hex SHA-256 of the bearer token
//! tenant = "acme"
//! user = "alice"
//! # scopes = ["crm.objects.deals.read"]        # CRM A scopes granted [default: the spec's]
//!
//! [admin]                          # optional: the operator's routes under /admin/
//! sha256 = "…"                     # the hex SHA-256 of the operator's own token (rotated
//!                                  # on every host by importing the registry again)
//!
//! [[jwt]]                          # or: signed tokens from an identity provider
//! issuer = "https://auth.example.com"
//! audience = "crm-mcp"
//! algorithm = "EdDSA"              # EdDSA, ES256 or RS256
//! tenants = ["acme"]               # the tenants this provider may act for (required)
//! public_key_pem = "-----BEGIN PUBLIC KEY-----\n…"
//! # jwks_url = "https://auth.example.com/.well-known/jwks.json"   # instead of the PEM key
//! # leeway_seconds = 60            # clock skew allowed on exp and nbf [default: 60]
//! # tenant_claim = "tenant"        # the claim naming a listed tenant [default: tenant]
//! # user_claim = "sub"             # the claim naming the user [default: sub]
//! ```

use super::jwt::{self, JwtAlgorithm};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use url::Url;

/// The parsed tenants file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantsFile {
    /// Shared, not copied, with what a host keeps of the file it applied.
    #[serde(deserialize_with = "shared")]
    pub tenants: Vec<Arc<TenantEntry>>,
    #[serde(default)]
    pub tokens: Vec<TokenEntry>,
    #[serde(default)]
    pub jwt: Vec<JwtIssuer>,
    /// The operator's token, for the admin routes (disconnect, connect); none without it.
    pub admin: Option<AdminEntry>,
}

/// Each entry in an `Arc` of its own.
fn shared<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Arc<TenantEntry>>, D::Error> {
    Ok(Vec::<TenantEntry>::deserialize(d)?
        .into_iter()
        .map(Arc::new)
        .collect())
}

/// The operator's access to the admin routes.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdminEntry {
    /// Lower-case hex SHA-256 of the operator's token; it may not also be an MCP token.
    pub sha256: String,
}

/// An identity provider whose signed tokens (JWTs) name a tenant and a user in their claims.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JwtIssuer {
    /// The `iss` a token must carry.
    pub issuer: String,
    /// The `aud` a token must carry: this server.
    pub audience: String,
    /// The signature algorithm; nothing else is accepted (no `none`, no algorithm switching).
    pub algorithm: JwtAlgorithm,
    /// The tenants this provider may act for. One provider's tokens never reach another
    /// tenant, whatever their tenant claim says.
    pub tenants: Vec<String>,
    /// The provider's public key, PEM; or
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_key_pem: Option<String>,
    /// the provider's JWKS document (https), for keys it rotates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jwks_url: Option<Url>,
    /// Clock skew tolerated on `exp` and `nbf`, in seconds [default: 60].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leeway_seconds: Option<u64>,
    /// The claim naming the tenant, which must be one of `tenants`.
    #[serde(default = "tenant_claim")]
    pub tenant_claim: String,
    /// The claim naming the user.
    #[serde(default = "user_claim")]
    pub user_claim: String,
    /// CRM A scopes granted to its users [default: the server's].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
    /// Whether anyone may learn this issuer from the unauthenticated protected-resource
    /// metadata (RFC 9728 `authorization_servers`) [default: false]. A provider bound to one
    /// customer's tenants names that customer (`https://acme.okta.com`), which a stranger has
    /// no business learning; turn it on for the sign-in every client is meant to discover.
    #[serde(default)]
    pub advertised: bool,
}

/// Clock skew tolerated on a provider's `exp` and `nbf` unless its table says otherwise.
pub(crate) const DEFAULT_LEEWAY_SECONDS: u64 = 60;

fn tenant_claim() -> String {
    "tenant".into()
}

fn user_claim() -> String {
    "sub".into()
}

/// One tenant the server runs.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Hash)]
#[serde(deny_unknown_fields)]
pub struct TenantEntry {
    pub id: String,
    /// A real broker; without it the tenant is one of the sandbox's.
    #[serde(
        default,
        deserialize_with = "broker_url",
        skip_serializing_if = "Option::is_none"
    )]
    pub proxy_base: Option<Url>,
    /// The environment variable holding this tenant's broker credential.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential_env: Option<String>,
    /// The Salesforce org URL for record links.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_url: Option<String>,
    /// The workspace admin's policy over the assistant's writes and reads.
    #[serde(default, skip_serializing_if = "PolicyEntry::is_unset")]
    pub policy: PolicyEntry,
}

/// A tenant's broker URL, parsed once for a run of tenants that spell it the same (this
/// thread's last one is kept): a file of a hundred thousand tenants on one broker would
/// otherwise spend a tenth of its parse on the same URL.
fn broker_url<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Url>, D::Error> {
    use std::cell::RefCell;
    thread_local! {
        static LAST: RefCell<Option<(String, Url)>> = const { RefCell::new(None) };
    }
    let Some(text) = Option::<String>::deserialize(d)? else {
        return Ok(None);
    };
    LAST.with_borrow_mut(|last| {
        if let Some((_, url)) = last.as_ref().filter(|(seen, _)| *seen == text) {
            return Ok(Some(url.clone()));
        }
        let url = Url::parse(&text).map_err(|e| {
            serde::de::Error::custom(format_args!("proxy_base {text:?} is not a URL: {e}"))
        })?;
        *last = Some((text, url.clone()));
        Ok(Some(url))
    })
}

/// A tenant's `[tenants.policy]` table: each key is one `CRM_POLICY_*` setting
/// (docs/governed-writes.md, the policy table). The model can change none of it.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize, Hash)]
#[serde(deny_unknown_fields)]
pub struct PolicyEntry {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crm_a_writable: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crm_b_writable: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub masked_fields: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub never_written: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_records: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirm_writes: Option<ConfirmWrites>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirm_ttl_seconds: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crm_a_provenance: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crm_b_provenance: Option<String>,
}

impl PolicyEntry {
    /// Whether the table sets nothing (the environment's settings apply).
    pub fn is_unset(&self) -> bool {
        *self == PolicyEntry::default()
    }

    /// The table as the tenant's `CRM_POLICY_*` settings.
    pub fn settings(&self) -> Vec<(String, String)> {
        let list = |l: &Option<Vec<String>>| {
            l.as_ref().map(|l| {
                if l.is_empty() {
                    "none".to_string()
                } else {
                    l.join(",")
                }
            })
        };
        [
            (
                "CRM_POLICY_READ_ONLY",
                self.read_only.map(|b| b.to_string()),
            ),
            ("CRM_POLICY_CRM_A_WRITABLE", list(&self.crm_a_writable)),
            ("CRM_POLICY_CRM_B_WRITABLE", list(&self.crm_b_writable)),
            ("CRM_POLICY_MASKED_FIELDS", list(&self.masked_fields)),
            ("CRM_POLICY_NEVER_WRITTEN", list(&self.never_written)),
            (
                "CRM_POLICY_MAX_RECORDS",
                self.max_records.map(|n| n.to_string()),
            ),
            (
                "CRM_POLICY_CONFIRM_WRITES",
                self.confirm_writes.map(|c| c.setting().to_string()),
            ),
            (
                "CRM_POLICY_CONFIRM_TTL_SECONDS",
                self.confirm_ttl_seconds.map(|n| n.to_string()),
            ),
            ("CRM_POLICY_CRM_A_PROVENANCE", self.crm_a_provenance.clone()),
            ("CRM_POLICY_CRM_B_PROVENANCE", self.crm_b_provenance.clone()),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
        .collect()
    }
}

/// A tenant's `confirm_writes`: whether each write needs a confirmation, and who gives it.
/// Written as in `CRM_POLICY_CONFIRM_WRITES`: `false`, `true` (the same as `"token"`),
/// `"token"` (the assistant passes back a preview's token), `"user"` (the person confirms in
/// their client) or `"user-or-token"` (the person when their client can ask, else the token).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConfirmWrites {
    /// `false`: writes go out as the assistant makes them.
    Off,
    /// `true` or `"token"`.
    Token,
    /// `"user"`.
    User,
    /// `"user-or-token"`.
    UserOrToken,
}

impl ConfirmWrites {
    /// The value of the tenant's `CRM_POLICY_CONFIRM_WRITES` setting.
    pub fn setting(self) -> &'static str {
        match self {
            ConfirmWrites::Off => "false",
            ConfirmWrites::Token => "true",
            ConfirmWrites::User => "user",
            ConfirmWrites::UserOrToken => "user-or-token",
        }
    }
}

impl Serialize for ConfirmWrites {
    /// As it is written in a tenants file, which reads it back the same.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ConfirmWrites::Off => serializer.serialize_bool(false),
            ConfirmWrites::Token => serializer.serialize_str("token"),
            ConfirmWrites::User => serializer.serialize_str("user"),
            ConfirmWrites::UserOrToken => serializer.serialize_str("user-or-token"),
        }
    }
}

impl<'de> Deserialize<'de> for ConfirmWrites {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Mode;
        impl serde::de::Visitor<'_> for Mode {
            type Value = ConfirmWrites;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(r#"false, true, "token", "user" or "user-or-token""#)
            }

            fn visit_bool<E: serde::de::Error>(self, on: bool) -> Result<ConfirmWrites, E> {
                Ok(if on {
                    ConfirmWrites::Token
                } else {
                    ConfirmWrites::Off
                })
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<ConfirmWrites, E> {
                match text {
                    "token" => Ok(ConfirmWrites::Token),
                    "user" => Ok(ConfirmWrites::User),
                    "user-or-token" => Ok(ConfirmWrites::UserOrToken),
                    other => Err(E::invalid_value(serde::de::Unexpected::Str(other), &self)),
                }
            }
        }
        deserializer.deserialize_any(Mode)
    }
}

/// One bearer token, by its hash.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TokenEntry {
    /// Lower-case hex SHA-256 of the token.
    pub sha256: String,
    pub tenant: String,
    pub user: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
}

/// The token in an `Authorization` header: the `Bearer` scheme, in any case (RFC 7235,
/// section 2.1), then the token.
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim_start().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The lower-case hex SHA-256 of a token, as the tenants file keeps it.
pub fn token_hash(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

impl TenantsFile {
    /// Reads and checks a tenants file: every token names a known tenant, no tenant, hash or
    /// provider twice, every provider's key readable. These hold on every host alike, so
    /// `crm-host tenants import` refuses a file that breaks one; what may differ from host to
    /// host (a credential variable) is checked as each host applies the file.
    ///
    /// The file is TOML, or JSON (the same tables as objects) when it begins with `{`, which
    /// no TOML document does: a generated file of a hundred thousand tenants reads about ten
    /// times faster as JSON (docs/operators.md, "Many tenants").
    pub fn parse(text: &str) -> Result<Self, String> {
        let file = if is_json(text) {
            serde_json::from_str(text).map_err(|e| format!("JSON: {e}"))?
        } else {
            match halves::parse(text) {
                Some(file) => file,
                None => toml::from_str(text).map_err(|e| e.to_string())?,
            }
        };
        Self::check(file)
    }

    /// Checks a tenants file however it was read (a file, the registry's rows): see
    /// [`TenantsFile::parse`].
    pub fn check(file: TenantsFile) -> Result<Self, String> {
        // Looked up by id, never scanned: a file lists up to a hundred thousand tenants.
        let mut ids = foldhash::HashSet::default();
        ids.reserve(file.tenants.len());
        if let Some(twice) = file.tenants.iter().find(|t| !ids.insert(t.id.as_str())) {
            return Err(format!("tenant {:?} is listed twice", twice.id));
        }
        // By the 32 bytes each spells, whatever its case: no string per token.
        let mut hashes = foldhash::HashSet::default();
        hashes.reserve(file.tokens.len());
        for token in &file.tokens {
            let Some(hash) = hash_from_hex(&token.sha256) else {
                return Err(format!(
                    "the token for {}/{} is not a hex SHA-256",
                    token.tenant, token.user
                ));
            };
            if !hashes.insert(hash) {
                return Err(format!(
                    "the same token is listed twice (for {})",
                    token.tenant
                ));
            }
        }
        for token in &file.tokens {
            if !ids.contains(token.tenant.as_str()) {
                return Err(format!(
                    "a token names tenant {:?}, which is not listed",
                    token.tenant
                ));
            }
            if file
                .admin
                .as_ref()
                .is_some_and(|a| a.sha256.eq_ignore_ascii_case(&token.sha256))
            {
                return Err("the operator's token may not also be an MCP token".into());
            }
        }
        for provider in &file.jwt {
            let name = &provider.issuer;
            if provider.tenants.is_empty() {
                return Err(format!(
                    "the provider {name} lists no tenants: name the tenants it may act for"
                ));
            }
            if let Some(t) = provider.tenants.iter().find(|t| !ids.contains(t.as_str())) {
                return Err(format!(
                    "the provider {name} names tenant {t:?}, which is not listed"
                ));
            }
            if provider.public_key_pem.is_some() == provider.jwks_url.is_some() {
                return Err(format!(
                    "the provider {name} needs exactly one of public_key_pem and jwks_url"
                ));
            }
            if let Some(pem) = &provider.public_key_pem {
                jwt::pem_key(provider.algorithm, pem)
                    .map_err(|e| format!("the public key of {name}: {e}"))?;
            }
            if let Some(url) = provider.jwks_url.as_ref().filter(|u| u.scheme() != "https") {
                return Err(format!("the provider {name}: jwks_url {url} must be https"));
            }
        }
        Ok(file)
    }
}

/// Whether a tenants file is JSON: it opens an object (a TOML document starts with a key, a
/// table header or a comment).
pub fn is_json(text: &str) -> bool {
    text.trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n'])
        .starts_with('{')
}

/// A large file parsed in two halves at once.
mod halves;
/// Who each token acts for.
mod tokens;

pub use tokens::{SharedTokens, TableEdit, TokenTable};
use tokens::{hash_from_hex, hex};

#[cfg(test)]
mod tests;
