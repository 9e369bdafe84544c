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

/// The operator's access: their token's hash, and each tenant's credential source.
pub struct Admin {
    pub token_sha256: String,
    pub credentials: HashMap<String, CredentialSource>,
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
            "connect" => match self
                .credentials
                .get(*tenant)
                .map(CredentialSource::credential)
            {
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
