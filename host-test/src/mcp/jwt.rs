//! Tokens signed by a tenant's identity provider (JWTs), checked with the maintained
//! `jsonwebtoken` crate: one fixed algorithm per provider (no `none`, no switching), `iss`,
//! `aud`, `exp` and `nbf` with a bounded clock skew, and a tenant claim the provider is bound to.
//!
//! A provider's keys are either one PEM public key or a JWKS URL. JWKS keys are fetched over
//! HTTPS, cached, and fetched again when a token names a key id the cache lacks — at most once
//! a minute, so a stream of made-up key ids cannot turn the server into a request amplifier.

use crate::backend::Backend;
use bytes::Bytes;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;

/// Largest JWKS document read.
const MAX_JWKS_BYTES: usize = 256 << 10;
/// Shortest time between two JWKS fetches of one provider.
pub const JWKS_REFRESH_INTERVAL: Duration = Duration::from_secs(60);

/// The asymmetric algorithms a provider may sign with.
#[derive(Debug, Clone, Copy, Deserialize, serde::Serialize, PartialEq, Eq)]
pub enum JwtAlgorithm {
    EdDSA,
    ES256,
    RS256,
}

impl JwtAlgorithm {
    fn algorithm(self) -> Algorithm {
        match self {
            JwtAlgorithm::EdDSA => Algorithm::EdDSA,
            JwtAlgorithm::ES256 => Algorithm::ES256,
            JwtAlgorithm::RS256 => Algorithm::RS256,
        }
    }

    fn key_from_pem(self, pem: &[u8]) -> Result<DecodingKey, jsonwebtoken::errors::Error> {
        match self {
            JwtAlgorithm::EdDSA => DecodingKey::from_ed_pem(pem),
            JwtAlgorithm::ES256 => DecodingKey::from_ec_pem(pem),
            JwtAlgorithm::RS256 => DecodingKey::from_rsa_pem(pem),
        }
    }
}

/// Where a provider's public keys come from.
pub enum KeySource {
    /// One key, from the tenants file.
    Fixed(DecodingKey),
    /// The provider's JWKS document, fetched and cached.
    Jwks(Jwks),
}

/// What a valid token says: the tenant and user it acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    pub tenant: String,
    pub user: String,
}

/// One identity provider, ready to check tokens.
pub struct Provider {
    pub issuer: String,
    keys: KeySource,
    validation: Validation,
    tenant_claim: String,
    user_claim: String,
    /// The tenants this provider may act for; a token naming another is refused.
    tenants: Vec<String>,
}

/// How a provider is set up (from its `[[jwt]]` table).
pub struct ProviderSettings {
    pub issuer: String,
    pub audience: String,
    pub algorithm: JwtAlgorithm,
    pub keys: KeySource,
    pub tenant_claim: String,
    pub user_claim: String,
    pub tenants: Vec<String>,
    /// Clock skew tolerated on `exp` and `nbf`.
    pub leeway: Duration,
}

impl Provider {
    pub fn new(settings: ProviderSettings) -> Self {
        let mut validation = Validation::new(settings.algorithm.algorithm());
        validation.set_issuer(&[&settings.issuer]);
        validation.set_audience(&[&settings.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.validate_nbf = true;
        validation.leeway = settings.leeway.as_secs();
        Provider {
            issuer: settings.issuer,
            keys: settings.keys,
            validation,
            tenant_claim: settings.tenant_claim,
            user_claim: settings.user_claim,
            tenants: settings.tenants,
        }
    }

    /// The tenant and user a token acts for, if this provider signed it, it is valid now, and
    /// it names a tenant this provider is bound to.
    pub async fn verify(&self, token: &str) -> Option<Claimed> {
        let header = jsonwebtoken::decode_header(token).ok()?;
        // RFC 7515 section 4.1.11: a token whose `crit` lists extensions the recipient does not
        // understand is invalid, and this server understands none (an empty list is invalid
        // too: producers must not send one).
        if header.crit.is_some() {
            return None;
        }
        let claims = match &self.keys {
            KeySource::Fixed(key) => self.decode(token, key)?,
            KeySource::Jwks(jwks) => {
                let kid = header.kid?;
                let key = jwks.key(&kid).await?;
                self.decode(token, &key)?
            }
        };
        let tenant = claims.get(&self.tenant_claim)?.as_str()?;
        let user = claims.get(&self.user_claim)?.as_str()?;
        if user.is_empty() || !self.tenants.iter().any(|t| t == tenant) {
            return None;
        }
        Some(Claimed {
            tenant: tenant.to_string(),
            user: user.to_string(),
        })
    }

    fn decode(&self, token: &str, key: &DecodingKey) -> Option<Map<String, Value>> {
        jsonwebtoken::decode::<Map<String, Value>>(token, key, &self.validation)
            .ok()
            .map(|data| data.claims)
    }
}

/// Reads a PEM key for `algorithm`.
pub fn pem_key(algorithm: JwtAlgorithm, pem: &str) -> Result<DecodingKey, String> {
    algorithm
        .key_from_pem(pem.as_bytes())
        .map_err(|e| e.to_string())
}

/// A provider's JWKS: keys by id, fetched through a backend with size and time limits.
pub struct Jwks {
    url: Url,
    backend: Arc<dyn Backend>,
    cache: tokio::sync::Mutex<JwksCache>,
    refresh_interval: Duration,
}

#[derive(Default)]
struct JwksCache {
    keys: HashMap<String, DecodingKey>,
    fetched_at: Option<Instant>,
    /// Fetches made, for tests and the operator's logs.
    fetches: u64,
}

impl Jwks {
    /// A JWKS at an `https` URL, fetched through `backend` (which holds the trusted roots).
    pub fn new(url: Url, backend: Arc<dyn Backend>) -> Result<Self, String> {
        if url.scheme() != "https" {
            return Err(format!("jwks_url {url} must be https"));
        }
        Ok(Jwks {
            url,
            backend,
            cache: tokio::sync::Mutex::new(JwksCache::default()),
            refresh_interval: JWKS_REFRESH_INTERVAL,
        })
    }

    /// The same JWKS with another shortest time between fetches (tests use a short one).
    pub fn with_refresh_interval(mut self, interval: Duration) -> Self {
        self.refresh_interval = interval;
        self
    }

    /// How many times the document was fetched.
    pub async fn fetches(&self) -> u64 {
        self.cache.lock().await.fetches
    }

    /// The key with this id: from the cache, or after one fetch when the cache lacks it and
    /// the last fetch is at least the refresh interval old (or there was none).
    pub async fn key(&self, kid: &str) -> Option<DecodingKey> {
        let mut cache = self.cache.lock().await;
        if let Some(key) = cache.keys.get(kid) {
            return Some(key.clone());
        }
        let stale = cache
            .fetched_at
            .is_none_or(|at| at.elapsed() >= self.refresh_interval);
        if !stale {
            return None;
        }
        cache.fetched_at = Some(Instant::now());
        cache.fetches += 1;
        match self.fetch().await {
            Ok(keys) => cache.keys = keys,
            Err(why) => tracing::warn!(url = %self.url, "fetching the JWKS: {why}"),
        }
        cache.keys.get(kid).cloned()
    }

    async fn fetch(&self) -> Result<HashMap<String, DecodingKey>, String> {
        let request = http::Request::get(self.url.as_str())
            .header(http::header::ACCEPT, "application/json")
            .body(Bytes::new())
            .map_err(|e| e.to_string())?;
        let response = self
            .backend
            .send(request)
            .await
            .map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("status {}", response.status()));
        }
        if response.body().len() > MAX_JWKS_BYTES {
            return Err(format!("over {MAX_JWKS_BYTES} bytes"));
        }
        parse_jwks(response.body())
    }
}

/// The keys of a JWKS document that have an id and can verify; others are skipped.
pub fn parse_jwks(body: &[u8]) -> Result<HashMap<String, DecodingKey>, String> {
    let set: JwkSet = serde_json::from_slice(body).map_err(|e| format!("not a JWKS: {e}"))?;
    Ok(set
        .keys
        .iter()
        .filter_map(|jwk| {
            let kid = jwk.common.key_id.clone()?;
            let key = DecodingKey::from_jwk(jwk).ok()?;
            Some((kid, key))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jwks_document_yields_its_keys_by_id_and_skips_what_cannot_verify() {
        // An Ed25519 key as RFC 8037 writes it, one without an id, and a malformed one.
        let body = br#"{"keys":[
            {"kty":"OKP","crv":"Ed25519","kid":"k1","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
            {"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
            {"kty":"RSA","kid":"bad","n":"!","e":"AQAB"}
        ]}"#;
        let keys = parse_jwks(body).unwrap();
        assert!(keys.contains_key("k1"));
        assert_eq!(keys.len(), 1, "no id, or no usable key: skipped");
        assert!(parse_jwks(b"{}").is_err());
        assert!(parse_jwks(b"<html>").is_err());
    }

    #[test]
    fn a_jwks_url_must_be_https() {
        let backend: Arc<dyn Backend> = Arc::new(
            crate::backend::NetworkBackend::new(crate::backend::NetworkOptions::new(
                1 << 20,
                std::time::Duration::from_secs(5),
            ))
            .unwrap(),
        );
        let http = Url::parse("http://idp.example/jwks").unwrap();
        assert!(Jwks::new(http, backend.clone()).is_err());
        let https = Url::parse("https://idp.example/jwks").unwrap();
        assert!(Jwks::new(https, backend).is_ok());
    }
}
