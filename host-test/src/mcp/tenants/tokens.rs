//! Who each bearer token acts for: the table a server checks every request against. A host
//! may list a hundred thousand tokens, so the table is changed in place, one token or tenant at
//! a time, when the registry announces a change (a revocation costs the same whatever the
//! count), and replaced whole only when a whole tenants file is applied.

use super::super::jwt::{self, Jwks, KeySource, Provider, ProviderSettings};
use super::super::{Authority, Principal};
use super::{DEFAULT_LEEWAY_SECONDS, JwtIssuer, TenantEntry, TenantsFile, TokenEntry};
use crate::backend::Backend;
use foldhash::HashMap;
use sha2::{Digest, Sha256};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Who each token acts for: looked up by the token's hash, or read from a provider-signed
/// token's claims.
#[derive(Default)]
pub struct TokenTable {
    listing: RwLock<Listing>,
    /// The CRM A scopes of a listed token that names none.
    default_scopes: Arc<[String]>,
    /// The identity providers, replaced together (they change rarely, and together).
    providers: RwLock<Arc<Providers>>,
}

/// The listed tokens and tenants.
#[derive(Default)]
struct Listing {
    /// Each listed token by its SHA-256, kept small: the principal is built when the token is
    /// presented.
    by_hash: HashMap<[u8; 32], Listed>,
    /// Each listed tenant's Salesforce org URL, for every principal of the tenant. A token
    /// whose tenant is not here admits nobody.
    tenants: HashMap<Arc<str>, Option<String>>,
}

/// The identity providers.
#[derive(Default)]
struct Providers {
    /// Each provider, with the CRM A scopes its users are granted.
    each: Vec<(Provider, Vec<String>)>,
    /// The issuers the operator lets anyone learn (`advertised = true`).
    advertised: Vec<String>,
}

/// Who a listed token acts for.
struct Listed {
    /// The key of [`Listing::tenants`], shared.
    tenant: Arc<str>,
    user: Box<str>,
    /// `None`: the table's default scopes.
    scopes: Option<Arc<[String]>>,
}

/// Lowercase hex of `bytes`.
pub(super) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        text.push(DIGITS[usize::from(b >> 4)] as char);
        text.push(DIGITS[usize::from(b & 15)] as char);
    }
    text
}

/// The 32 bytes a 64-digit hex SHA-256 (either case) spells.
pub(super) fn hash_from_hex(text: &str) -> Option<[u8; 32]> {
    let digits = text.as_bytes();
    if digits.len() != 64 {
        return None;
    }
    let mut hash = [0u8; 32];
    for (byte, pair) in hash.iter_mut().zip(digits.chunks(2)) {
        let digit = |d: u8| (d as char).to_digit(16);
        *byte = (digit(pair[0])? * 16 + digit(pair[1])?) as u8;
    }
    Some(hash)
}

impl TenantsFile {
    /// The token table, each token's principal completed from its tenant and the defaults.
    pub fn tokens(
        &self,
        default_scopes: &[String],
        instance_url: impl Fn(&TenantEntry) -> Option<String>,
    ) -> Result<TokenTable, String> {
        self.tokens_with_jwks(default_scopes, instance_url, None)
    }

    /// As [`TenantsFile::tokens`], fetching providers' JWKS documents through `jwks_backend`
    /// (a provider with a `jwks_url` needs one).
    pub fn tokens_with_jwks(
        &self,
        default_scopes: &[String],
        instance_url: impl Fn(&TenantEntry) -> Option<String>,
        jwks_backend: Option<Arc<dyn Backend>>,
    ) -> Result<TokenTable, String> {
        let table = TokenTable::new(default_scopes);
        {
            let mut listing = table.listing.write().unwrap_or_else(|e| e.into_inner());
            listing.tenants = self
                .tenants
                .iter()
                .map(|t| (Arc::from(t.id.as_str()), instance_url(t)))
                .collect();
            listing.by_hash.reserve(self.tokens.len());
            for token in &self.tokens {
                if listing.list(token)?.is_some() {
                    return Err(format!(
                        "the same token is listed twice (for {})",
                        token.tenant
                    ));
                }
            }
        }
        table.set_providers(&self.jwt, jwks_backend)?;
        Ok(table)
    }
}

impl Listing {
    /// Lists `token` (its tenant must be listed); returns who it acted for before, if anyone.
    fn list(&mut self, token: &TokenEntry) -> Result<Option<Listed>, String> {
        let (tenant, _) = self
            .tenants
            .get_key_value(token.tenant.as_str())
            .ok_or_else(|| {
                format!(
                    "a token names tenant {:?}, which is not listed",
                    token.tenant
                )
            })?;
        let listed = Listed {
            tenant: tenant.clone(),
            user: token.user.as_str().into(),
            scopes: token.scopes.as_deref().map(Arc::from),
        };
        let hash = hash_from_hex(&token.sha256)
            .ok_or_else(|| format!("the token for {} is not a hex SHA-256", token.tenant))?;
        Ok(self.by_hash.insert(hash, listed))
    }
}

fn provider(
    issuer: &JwtIssuer,
    default_scopes: &[String],
    jwks_backend: Option<Arc<dyn Backend>>,
) -> Result<(Provider, Vec<String>), String> {
    let keys = match (&issuer.public_key_pem, &issuer.jwks_url) {
        (Some(pem), _) => KeySource::Fixed(
            jwt::pem_key(issuer.algorithm, pem)
                .map_err(|e| format!("the public key of {}: {e}", issuer.issuer))?,
        ),
        (None, Some(url)) => {
            let backend = jwks_backend.ok_or_else(|| {
                format!(
                    "the provider {} has a jwks_url but no way to fetch it",
                    issuer.issuer
                )
            })?;
            KeySource::Jwks(Jwks::new(url.clone(), backend)?)
        }
        (None, None) => return Err(format!("the provider {} has no key", issuer.issuer)),
    };
    let provider = Provider::new(ProviderSettings {
        issuer: issuer.issuer.clone(),
        audience: issuer.audience.clone(),
        algorithm: issuer.algorithm,
        keys,
        tenant_claim: issuer.tenant_claim.clone(),
        user_claim: issuer.user_claim.clone(),
        tenants: issuer.tenants.clone(),
        leeway: Duration::from_secs(issuer.leeway_seconds.unwrap_or(DEFAULT_LEEWAY_SECONDS)),
    });
    let scopes = issuer
        .scopes
        .clone()
        .unwrap_or_else(|| default_scopes.to_vec());
    Ok((provider, scopes))
}

/// The token table a server checks requests against: replaced whole when a whole tenants file
/// is applied, changed in place when the registry changes a few rows (a revoked token fails
/// its very next request either way).
#[derive(Clone, Default)]
pub struct SharedTokens(Arc<RwLock<Arc<TokenTable>>>);

impl From<TokenTable> for SharedTokens {
    fn from(table: TokenTable) -> Self {
        SharedTokens(Arc::new(RwLock::new(Arc::new(table))))
    }
}

impl SharedTokens {
    /// The table now.
    pub fn current(&self) -> Arc<TokenTable> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Puts `table` in the place of the current one.
    pub fn replace(&self, table: TokenTable) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(table);
    }
}

impl TokenTable {
    /// A table listing nothing yet, whose listed tokens naming no scopes get `default_scopes`.
    pub fn new(default_scopes: &[String]) -> Self {
        TokenTable {
            default_scopes: default_scopes.into(),
            ..TokenTable::default()
        }
    }

    /// The listed tokens and tenants, to change: held until the edit is dropped (a change of
    /// many rows takes the lock once; requests wait for it rather than see half a change).
    pub fn edit(&self) -> TableEdit<'_> {
        TableEdit(self.listing.write().unwrap_or_else(|e| e.into_inner()))
    }

    /// Lists `tenant` (again), with its Salesforce org URL.
    pub fn set_tenant(&self, tenant: &str, instance_url: Option<String>) {
        self.edit().set_tenant(tenant, instance_url);
    }

    /// Unlists `tenant`: none of its tokens, and no provider's token naming it, admits anyone
    /// from now on.
    pub fn remove_tenant(&self, tenant: &str) {
        self.edit().remove_tenant(tenant);
    }

    /// Lists `token` (replacing what the same hash acted for), or says why it cannot be: a
    /// tenant not listed, a hash that is not one.
    pub fn set_token(&self, token: &TokenEntry) -> Result<(), String> {
        self.edit().set_token(token)
    }

    /// Revokes the token whose hex SHA-256 is `sha256`; whether it was listed.
    pub fn remove_token(&self, sha256: &str) -> bool {
        self.edit().remove_token(sha256)
    }

    /// Puts these identity providers in the place of the current ones.
    pub fn set_providers(
        &self,
        issuers: &[JwtIssuer],
        jwks_backend: Option<Arc<dyn Backend>>,
    ) -> Result<(), String> {
        let each = issuers
            .iter()
            .map(|issuer| provider(issuer, &self.default_scopes, jwks_backend.clone()))
            .collect::<Result<_, _>>()?;
        let advertised = issuers
            .iter()
            .filter(|issuer| issuer.advertised)
            .map(|issuer| issuer.issuer.clone())
            .collect();
        *self.providers.write().unwrap_or_else(|e| e.into_inner()) =
            Arc::new(Providers { each, advertised });
        Ok(())
    }

    /// The principal a presented bearer token acts for, if any: a listed token of a listed
    /// tenant, or a token signed by a listed provider, valid now, for this audience, naming a
    /// listed tenant the provider is bound to.
    pub async fn principal(&self, token: &str) -> Option<Principal> {
        let hash: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        // A listed token of a tenant no longer listed admits nobody, and no provider is asked.
        let listed: Option<Option<Principal>> = {
            let listing = self.listing.read().unwrap_or_else(|e| e.into_inner());
            listing.by_hash.get(&hash).map(|listed| {
                let instance_url = listing.tenants.get(&listed.tenant)?.clone();
                Some(Principal {
                    tenant_id: listed.tenant.to_string(),
                    user_id: listed.user.to_string(),
                    granted_scopes: listed
                        .scopes
                        .as_deref()
                        .unwrap_or(&self.default_scopes)
                        .to_vec(),
                    instance_url,
                    authority: Authority::Token(hex(&hash)),
                })
            })
        };
        if let Some(principal) = listed {
            return principal;
        }
        let providers = self
            .providers
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for (provider, scopes) in &providers.each {
            let Some(claimed) = provider.verify(token).await else {
                continue;
            };
            let instance_url = self
                .listing
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .tenants
                .get(claimed.tenant.as_str())?
                .clone();
            return Some(Principal {
                tenant_id: claimed.tenant,
                user_id: claimed.user,
                granted_scopes: scopes.clone(),
                instance_url,
                authority: Authority::Provider(provider.issuer.clone()),
            });
        }
        None
    }

    /// The issuers of the providers, for the protected-resource metadata.
    /// Only those the operator marked `advertised`: the metadata is public, and a tenant's
    /// own provider would tell a stranger who the tenants are.
    pub fn issuers(&self) -> Vec<String> {
        self.providers
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .advertised
            .clone()
    }
}

/// A change of a [`TokenTable`]'s listed tokens and tenants, under its lock.
pub struct TableEdit<'a>(std::sync::RwLockWriteGuard<'a, Listing>);

impl TableEdit<'_> {
    /// Room for this many more tenants and tokens.
    pub fn reserve(&mut self, tenants: usize, tokens: usize) {
        self.0.tenants.reserve(tenants);
        self.0.by_hash.reserve(tokens);
    }

    /// See [`TokenTable::set_tenant`].
    pub fn set_tenant(&mut self, tenant: &str, instance_url: Option<String>) {
        match self.0.tenants.get_mut(tenant) {
            Some(url) => *url = instance_url,
            None => {
                self.0.tenants.insert(Arc::from(tenant), instance_url);
            }
        }
    }

    /// See [`TokenTable::remove_tenant`].
    pub fn remove_tenant(&mut self, tenant: &str) {
        self.0.tenants.remove(tenant);
    }

    /// See [`TokenTable::set_token`].
    pub fn set_token(&mut self, token: &TokenEntry) -> Result<(), String> {
        self.0.list(token).map(drop)
    }

    /// See [`TokenTable::remove_token`].
    pub fn remove_token(&mut self, sha256: &str) -> bool {
        hash_from_hex(sha256).is_some_and(|hash| self.0.by_hash.remove(&hash).is_some())
    }
}
