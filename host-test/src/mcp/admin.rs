//! The operator's routes on `crm-host serve`, beside MCP but never part of it: the model talks
//! only MCP, so it can reach none of these.
//!
//! `POST /admin/tenants/{tenant}/connections/{crm-a|crm-b}/disconnect` drops that CRM's
//! credential for the tenant at once ([`Host::disconnect`]); `.../connect` restores it from the
//! tenant's credential source. Each needs the operator's own bearer token (its SHA-256 is the
//! tenants file's `[admin] sha256`), which no MCP token matches; browsers are refused outright.

use super::tenants::{bearer, token_hash};
use crate::credential::Credential;
use crate::egress::Crm;
use crate::host::Host;
use ::http::{Method, Request, StatusCode, header};
use std::collections::HashMap;

/// Where a tenant's broker credential comes from when an operator reconnects it.
#[derive(Clone)]
pub enum CredentialSource {
    /// An environment variable, read again at reconnect time (so a rotated value is used).
    Env(String),
    /// A fixed value (the sandbox's tenants).
    Fixed(Credential),
}

impl CredentialSource {
    fn credential(&self) -> Result<Credential, String> {
        match self {
            CredentialSource::Env(var) => std::env::var(var)
                .map(Credential::new)
                .map_err(|_| format!("{var} is not set")),
            CredentialSource::Fixed(credential) => Ok(credential.clone()),
        }
    }
}

/// Each tenant's credential source, replaced whole when the tenants registry changes.
#[derive(Clone, Default)]
pub struct Credentials(std::sync::Arc<std::sync::RwLock<HashMap<String, CredentialSource>>>);

impl FromIterator<(String, CredentialSource)> for Credentials {
    fn from_iter<I: IntoIterator<Item = (String, CredentialSource)>>(iter: I) -> Self {
        Credentials(std::sync::Arc::new(std::sync::RwLock::new(
            iter.into_iter().collect(),
        )))
    }
}

impl Credentials {
    /// The tenant's broker credential now, or why there is none.
    fn credential(&self, tenant: &str) -> Option<Result<Credential, String>> {
        self.0
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(tenant)
            .map(CredentialSource::credential)
    }

    /// Puts `sources` in the place of the current ones.
    pub fn replace(&self, sources: HashMap<String, CredentialSource>) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = sources;
    }
}

/// The operator's access: their token's hash, and each tenant's credential source.
pub struct Admin {
    pub token_sha256: String,
    pub credentials: Credentials,
}

/// An admin answer: a status and a JSON body.
pub type Answer = (StatusCode, serde_json::Value);

impl Admin {
    /// Whether a request carries the operator's token (and comes from no browser).
    pub fn is_operator<B>(&self, request: &Request<B>) -> bool {
        let token = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer);
        !request.headers().contains_key(header::ORIGIN)
            && token.is_some_and(|t| token_hash(t) == self.token_sha256.to_ascii_lowercase())
    }

    /// Answers one request under `/admin/`.
    pub fn handle<B>(&self, host: &Host, request: &Request<B>) -> Answer {
        let refuse = |status, why: &str| (status, serde_json::json!({"error": why}));
        if request.headers().contains_key(header::ORIGIN) {
            return refuse(
                StatusCode::FORBIDDEN,
                "the admin routes are not for browsers",
            );
        }
        let token = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer);
        if token.is_none_or(|t| token_hash(t) != self.token_sha256.to_ascii_lowercase()) {
            return refuse(
                StatusCode::UNAUTHORIZED,
                "the operator's bearer token is required",
            );
        }
        if request.method() != Method::POST {
            return refuse(StatusCode::METHOD_NOT_ALLOWED, "use POST");
        }
        let parts: Vec<&str> = request.uri().path().split('/').collect();
        let ["", "admin", "tenants", tenant, "connections", crm, action] = parts.as_slice() else {
            return refuse(StatusCode::NOT_FOUND, "no such admin route");
        };
        let Some(integration) = Crm::from_integration(crm) else {
            return refuse(StatusCode::NOT_FOUND, "the CRM is crm-a or crm-b");
        };
        let done = match *action {
            "disconnect" => host
                .disconnect(tenant, integration)
                .map_err(|e| e.to_string()),
            "connect" => match self.credentials.credential(tenant) {
                Some(Ok(credential)) => host
                    .reconnect(tenant, integration, credential)
                    .map_err(|e| e.to_string()),
                Some(Err(why)) => Err(why),
                None => Err(format!("unknown tenant {tenant:?}")),
            },
            _ => return refuse(StatusCode::NOT_FOUND, "the action is connect or disconnect"),
        };
        match done.and_then(|()| {
            host.is_connected(tenant, integration)
                .map_err(|e| e.to_string())
        }) {
            Ok(connected) => (
                StatusCode::OK,
                serde_json::json!({"tenant": tenant, "crm": crm, "connected": connected}),
            ),
            Err(why) => refuse(StatusCode::NOT_FOUND, &why),
        }
    }
}
