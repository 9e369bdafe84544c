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
//! ```

use super::Principal;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use url::Url;

/// The parsed tenants file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantsFile {
    pub tenants: Vec<TenantEntry>,
    #[serde(default)]
    pub tokens: Vec<TokenEntry>,
}

/// One tenant the server runs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantEntry {
    pub id: String,
    /// A real broker; without it the tenant is one of the sandbox's.
    pub proxy_base: Option<Url>,
    /// The environment variable holding this tenant's broker credential.
    pub credential_env: Option<String>,
    /// The Salesforce org URL for record links.
    pub instance_url: Option<String>,
}

/// One bearer token, by its hash.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenEntry {
    /// Lower-case hex SHA-256 of the token.
    pub sha256: String,
    pub tenant: String,
    pub user: String,
    pub scopes: Option<Vec<String>>,
}

/// Who each token acts for, looked up by the token's hash.
#[derive(Debug, Default)]
pub struct TokenTable {
    by_hash: HashMap<String, Principal>,
}

/// The lower-case hex SHA-256 of a token, as the tenants file keeps it.
pub fn token_hash(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl TenantsFile {
    /// Reads and checks a tenants file: every token names a known tenant, no hash twice.
    pub fn parse(text: &str) -> Result<Self, String> {
        let file: TenantsFile = toml::from_str(text).map_err(|e| e.to_string())?;
        for token in &file.tokens {
            if !file.tenants.iter().any(|t| t.id == token.tenant) {
                return Err(format!(
                    "a token names tenant {:?}, which is not listed",
                    token.tenant
                ));
            }
            let hex =
                token.sha256.len() == 64 && token.sha256.bytes().all(|b| b.is_ascii_hexdigit());
            if !hex {
                return Err(format!(
                    "the token for {}/{} is not a hex SHA-256",
                    token.tenant, token.user
                ));
            }
        }
        Ok(file)
    }

    /// The token table, each token's principal completed from its tenant and the defaults.
    pub fn tokens(
        &self,
        default_scopes: &[String],
        instance_url: impl Fn(&TenantEntry) -> Option<String>,
    ) -> Result<TokenTable, String> {
        let mut by_hash = HashMap::new();
        for token in &self.tokens {
            let tenant = self
                .tenants
                .iter()
                .find(|t| t.id == token.tenant)
                .ok_or("unknown tenant")?;
            let principal = Principal {
                tenant_id: tenant.id.clone(),
                user_id: token.user.clone(),
                granted_scopes: token
                    .scopes
                    .clone()
                    .unwrap_or_else(|| default_scopes.to_vec()),
                instance_url: instance_url(tenant),
            };
            if by_hash
                .insert(token.sha256.to_ascii_lowercase(), principal)
                .is_some()
            {
                return Err(format!(
                    "the same token is listed twice (for {})",
                    token.tenant
                ));
            }
        }
        Ok(TokenTable { by_hash })
    }
}

impl TokenTable {
    /// The principal a presented bearer token acts for, if any.
    pub fn principal(&self, token: &str) -> Option<&Principal> {
        self.by_hash.get(&token_hash(token))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
        [[tenants]]
        id = "acme"
        [[tenants]]
        id = "globex"
        [[tokens]]
        sha256 = "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"
        tenant = "acme"
        user = "alice"
        [[tokens]]
        sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        tenant = "globex"
        user = "bob"
        scopes = ["crm.objects.deals.read"]
    "#;

    #[test]
    fn tokens_map_to_their_tenant_and_user_by_hash_only() {
        assert_eq!(
            token_hash("secret"),
            "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"
        );
        let file = TenantsFile::parse(FILE).unwrap();
        let table = file
            .tokens(&["oauth".into()], |t| {
                Some(format!("https://{}.example", t.id))
            })
            .unwrap();
        let alice = table.principal("secret").unwrap();
        assert_eq!(
            (alice.tenant_id.as_str(), alice.user_id.as_str()),
            ("acme", "alice")
        );
        assert_eq!(alice.granted_scopes, ["oauth"]);
        let bob = table.principal("test").unwrap();
        assert_eq!(bob.tenant_id, "globex");
        assert_eq!(bob.granted_scopes, ["crm.objects.deals.read"]);
        assert!(table.principal("").is_none());
        assert!(
            table
                .principal("2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b")
                .is_none(),
            "the hash is not a token"
        );
    }

    #[test]
    fn a_token_for_an_unlisted_tenant_or_a_bad_hash_is_refused() {
        let unknown = FILE.replace("tenant = \"globex\"", "tenant = \"initech\"");
        assert!(
            TenantsFile::parse(&unknown)
                .unwrap_err()
                .contains("initech")
        );
        let bad = FILE.replace("9f86d081", "zz");
        assert!(TenantsFile::parse(&bad).is_err());
        assert!(TenantsFile::parse("[[tenants]]\nid = \"a\"\ncolour = \"red\"").is_err());
    }
}
