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
//! sha256 = "…"                     # the hex SHA-256 of the operator's own token
//!
//! [[jwt]]                          # or: signed tokens from an identity provider
//! issuer = "https://auth.example.com"
//! audience = "crm-mcp"
//! algorithm = "EdDSA"              # EdDSA, ES256 or RS256
//! public_key_pem = "-----BEGIN PUBLIC KEY-----\n…"
//! # tenant_claim = "tenant"        # the claim naming a listed tenant [default: tenant]
//! # user_claim = "sub"             # the claim naming the user [default: sub]
//! ```

use super::Principal;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::{Map, Value};
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
    #[serde(default)]
    pub jwt: Vec<JwtIssuer>,
    /// The operator's token, for the admin routes (disconnect, connect); none without it.
    pub admin: Option<AdminEntry>,
}

/// The operator's access to the admin routes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdminEntry {
    /// Lower-case hex SHA-256 of the operator's token; it may not also be an MCP token.
    pub sha256: String,
}

/// An identity provider whose signed tokens (JWTs) name a tenant and a user in their claims.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtIssuer {
    /// The `iss` a token must carry.
    pub issuer: String,
    /// The `aud` a token must carry: this server.
    pub audience: String,
    /// The signature algorithm; nothing else is accepted (no `none`, no algorithm switching).
    pub algorithm: JwtAlgorithm,
    /// The provider's public key, PEM.
    pub public_key_pem: String,
    /// The claim naming the tenant, which must be one the file lists.
    #[serde(default = "tenant_claim")]
    pub tenant_claim: String,
    /// The claim naming the user.
    #[serde(default = "user_claim")]
    pub user_claim: String,
    /// CRM A scopes granted to its users [default: the server's].
    pub scopes: Option<Vec<String>>,
}

fn tenant_claim() -> String {
    "tenant".into()
}

fn user_claim() -> String {
    "sub".into()
}

/// The asymmetric algorithms a provider may sign with.
#[derive(Debug, Clone, Copy, Deserialize)]
pub enum JwtAlgorithm {
    EdDSA,
    ES256,
    RS256,
}

/// One provider, ready to check tokens.
struct Verifier {
    key: DecodingKey,
    validation: Validation,
    tenant_claim: String,
    user_claim: String,
    scopes: Vec<String>,
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
    /// The workspace admin's policy over the assistant's writes and reads.
    #[serde(default)]
    pub policy: PolicyEntry,
}

/// A tenant's `[tenants.policy]` table: each key is one `CRM_POLICY_*` setting (README,
/// "Governed writes"). The model can change none of it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyEntry {
    pub read_only: Option<bool>,
    pub crm_a_writable: Option<Vec<String>>,
    pub crm_b_writable: Option<Vec<String>>,
    pub masked_fields: Option<Vec<String>>,
    pub never_written: Option<Vec<String>>,
    pub max_records: Option<u64>,
    pub confirm_writes: Option<bool>,
    pub confirm_ttl_seconds: Option<u64>,
    pub crm_a_provenance: Option<String>,
    pub crm_b_provenance: Option<String>,
}

impl PolicyEntry {
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
                self.confirm_writes.map(|b| b.to_string()),
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

/// Who each token acts for: looked up by the token's hash, or read from a provider-signed
/// token's claims.
#[derive(Default)]
pub struct TokenTable {
    by_hash: HashMap<String, Principal>,
    verifiers: Vec<Verifier>,
    /// Each listed tenant's Salesforce org URL, for principals from signed tokens.
    tenants: HashMap<String, Option<String>>,
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
            if file
                .admin
                .as_ref()
                .is_some_and(|a| a.sha256.eq_ignore_ascii_case(&token.sha256))
            {
                return Err("the operator's token may not also be an MCP token".into());
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
        let verifiers = self
            .jwt
            .iter()
            .map(|issuer| verifier(issuer, default_scopes))
            .collect::<Result<_, _>>()?;
        let tenants = self
            .tenants
            .iter()
            .map(|t| (t.id.clone(), instance_url(t)))
            .collect();
        Ok(TokenTable {
            by_hash,
            verifiers,
            tenants,
        })
    }
}

fn verifier(issuer: &JwtIssuer, default_scopes: &[String]) -> Result<Verifier, String> {
    let pem = issuer.public_key_pem.as_bytes();
    let (key, algorithm) = match issuer.algorithm {
        JwtAlgorithm::EdDSA => (DecodingKey::from_ed_pem(pem), Algorithm::EdDSA),
        JwtAlgorithm::ES256 => (DecodingKey::from_ec_pem(pem), Algorithm::ES256),
        JwtAlgorithm::RS256 => (DecodingKey::from_rsa_pem(pem), Algorithm::RS256),
    };
    let key = key.map_err(|e| format!("the public key of {}: {e}", issuer.issuer))?;
    let mut validation = Validation::new(algorithm);
    validation.set_issuer(&[&issuer.issuer]);
    validation.set_audience(&[&issuer.audience]);
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    Ok(Verifier {
        key,
        validation,
        tenant_claim: issuer.tenant_claim.clone(),
        user_claim: issuer.user_claim.clone(),
        scopes: issuer
            .scopes
            .clone()
            .unwrap_or_else(|| default_scopes.to_vec()),
    })
}

impl TokenTable {
    /// The principal a presented bearer token acts for, if any: a listed token, or a token
    /// signed by a listed provider, unexpired, for this audience, naming a listed tenant.
    pub fn principal(&self, token: &str) -> Option<Principal> {
        if let Some(principal) = self.by_hash.get(&token_hash(token)) {
            return Some(principal.clone());
        }
        self.verifiers.iter().find_map(|v| {
            let claims =
                jsonwebtoken::decode::<Map<String, Value>>(token, &v.key, &v.validation).ok()?;
            let tenant = claims.claims.get(&v.tenant_claim)?.as_str()?;
            let user = claims.claims.get(&v.user_claim)?.as_str()?;
            let instance_url = self.tenants.get(tenant)?.clone();
            Some(Principal {
                tenant_id: tenant.to_string(),
                user_id: user.to_string(),
                granted_scopes: v.scopes.clone(),
                instance_url,
            })
        })
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

    /// A test provider's Ed25519 key pair (made for these tests with openssl; signs nothing else).
    const PRIVATE_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIOgpVW/WlUZCAUTqQ5QXQ3jIseGwFUbeH+I0rGt16JRz\n-----END PRIVATE KEY-----\n";
    const PUBLIC_KEY: &str = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAa/jEcEttH55w7bzsx1y6KqNCA6WUbPq3elcUxVtBNVA=\n-----END PUBLIC KEY-----\n";

    fn signed(claims: serde_json::Value) -> String {
        let key = jsonwebtoken::EncodingKey::from_ed_pem(PRIVATE_KEY.as_bytes()).unwrap();
        jsonwebtoken::encode(&jsonwebtoken::Header::new(Algorithm::EdDSA), &claims, &key).unwrap()
    }

    #[test]
    fn a_provider_signed_token_names_a_listed_tenant_and_its_user() {
        let file = format!(
            "[[tenants]]\nid = \"acme\"\n[[jwt]]\nissuer = \"https://auth.example\"\n\
             audience = \"crm-mcp\"\nalgorithm = \"EdDSA\"\npublic_key_pem = '''{PUBLIC_KEY}'''\n"
        );
        let table = TenantsFile::parse(&file)
            .unwrap()
            .tokens(&["oauth".into()], |_| None)
            .unwrap();
        let exp = 4_102_444_800u64; // 2100-01-01
        let good = serde_json::json!({"iss": "https://auth.example", "aud": "crm-mcp", "exp": exp, "tenant": "acme", "sub": "carol"});
        let principal = table.principal(&signed(good.clone())).unwrap();
        assert_eq!(
            (principal.tenant_id.as_str(), principal.user_id.as_str()),
            ("acme", "carol")
        );
        assert_eq!(principal.granted_scopes, ["oauth"]);
        for (field, value) in [
            ("aud", serde_json::json!("another-server")),
            ("iss", serde_json::json!("https://evil.example")),
            ("exp", serde_json::json!(1_000_000_000u64)),
            ("tenant", serde_json::json!("globex")),
        ] {
            let mut claims = good.clone();
            claims[field] = value;
            assert!(table.principal(&signed(claims)).is_none(), "{field}");
        }
        let mut unsigned = signed(good).rsplit_once('.').unwrap().0.to_string();
        unsigned.push_str(".AAAA");
        assert!(table.principal(&unsigned).is_none(), "a forged signature");
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

    #[test]
    fn a_tenants_policy_table_becomes_its_policy_settings() {
        let file = TenantsFile::parse(
            "[[tenants]]\nid = \"acme\"\n[tenants.policy]\nread_only = false\n\
             crm_a_writable = [\"contacts\", \"notes\"]\ncrm_b_writable = []\n\
             masked_fields = [\"SSN__c\"]\nconfirm_writes = true\n",
        )
        .unwrap();
        let settings = file.tenants[0].policy.settings();
        let get = |k: &str| {
            settings
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("CRM_POLICY_CRM_A_WRITABLE"), Some("contacts,notes"));
        assert_eq!(get("CRM_POLICY_CRM_B_WRITABLE"), Some("none"));
        assert_eq!(get("CRM_POLICY_MASKED_FIELDS"), Some("SSN__c"));
        assert_eq!(get("CRM_POLICY_CONFIRM_WRITES"), Some("true"));
        assert_eq!(get("CRM_POLICY_MAX_RECORDS"), None);
        assert!(
            TenantsFile::parse("[[tenants]]\nid = \"acme\"\n[tenants.policy]\nreadonly = true\n")
                .is_err(),
            "a misspelt rule is refused, not ignored"
        );
    }
}
