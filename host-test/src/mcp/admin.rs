//! The operator's routes on `crm-host serve`, beside MCP but never part of it: the model talks
//! only MCP, so it can reach none of these.
//!
//! `POST /admin/tenants/{tenant}/connections/{crm-a|crm-b}/disconnect` drops that CRM's
//! credential for the tenant at once ([`Host::disconnect`]); `.../connect` restores it from the
//! tenant's credential source. `POST /admin/tenants/{tenant}/component` with a component's
//! bytes swaps it in (on every host of a fleet). Each needs the operator's own bearer token (its SHA-256 is the
//! tenants file's `[admin] sha256`, replaced with every registry version), which no MCP token
//! matches; browsers are refused outright.

use super::tenants::{bearer, token_hash};
use crate::credential::Credential;
use crate::egress::Crm;
use crate::host::Host;
use ::http::{Method, Request, StatusCode, header};
use foldhash::HashMap;

/// Where a tenant's broker credential comes from when an operator reconnects it.
#[derive(Clone)]
pub enum CredentialSource {
    /// An environment variable, read again at reconnect time (so a rotated value is used).
    Env(std::sync::Arc<str>),
    /// A fixed value (the sandbox's tenants).
    Fixed(Credential),
}

impl CredentialSource {
    fn credential(&self) -> Result<Credential, String> {
        match self {
            CredentialSource::Env(var) => std::env::var(&**var)
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

    /// Sets each tenant's source (or, with none, forgets it), leaving the others.
    pub fn set<'a>(
        &self,
        changes: impl ExactSizeIterator<Item = (&'a str, Option<CredentialSource>)>,
    ) {
        let mut sources = self.0.write().unwrap_or_else(|e| e.into_inner());
        sources.reserve(changes.len());
        for (tenant, source) in changes {
            match source {
                Some(source) => sources.insert(tenant.to_owned(), source),
                None => sources.remove(tenant),
            };
        }
    }
}

/// The operator's token, as the hex SHA-256 of the tenants file's `[admin]`: replaced whenever
/// the registry changes, so a rotated token works (and the old one stops) without a restart;
/// none turns the operator's routes off.
#[derive(Clone, Default)]
pub struct OperatorToken(std::sync::Arc<std::sync::RwLock<Option<String>>>);

impl From<String> for OperatorToken {
    fn from(sha256: String) -> Self {
        let token = OperatorToken::default();
        token.replace(Some(sha256));
        token
    }
}

impl OperatorToken {
    /// Puts `sha256` (none: no operator) in the place of the current hash.
    pub fn replace(&self, sha256: Option<String>) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = sha256.map(|h| h.to_ascii_lowercase());
    }

    /// Whether there is an operator now.
    pub fn is_set(&self) -> bool {
        self.0.read().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// Whether `token` is the operator's now.
    fn matches(&self, token: &str) -> bool {
        self.0
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_deref()
            .is_some_and(|hash| token_hash(token) == hash)
    }
}

/// The operator's access: their token, each tenant's credential source, and the fleet's store
/// when there is one (a swap made here reaches every host through it).
#[derive(Clone)]
pub struct Admin {
    pub operator: OperatorToken,
    pub credentials: Credentials,
    pub fleet: Option<std::sync::Arc<crate::tenant_db::PgStore>>,
}

/// An admin answer: a status and a JSON body.
pub type Answer = (StatusCode, serde_json::Value);

impl Admin {
    /// Whether the operator's routes are on (the registry names an operator now).
    pub fn enabled(&self) -> bool {
        self.operator.is_set()
    }

    /// Whether a request carries the operator's token (and comes from no browser).
    pub fn is_operator<B>(&self, request: &Request<B>) -> bool {
        let token = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer);
        !request.headers().contains_key(header::ORIGIN)
            && token.is_some_and(|t| self.operator.matches(t))
    }

    /// Swaps `tenant`'s component for `wasm`: loaded here first (a component that does not load
    /// changes nothing), kept in the fleet's store (every other host swaps it in within a
    /// second), then swapped in here. Calls in flight finish on the old component; listening
    /// clients are told the tool list changed.
    pub fn swap_component(&self, host: &Host, tenant: &str, wasm: &[u8]) -> Answer {
        let refuse = |status, why: String| (status, serde_json::json!({"error": why}));
        if host.plugin_of(tenant).is_none() {
            return refuse(StatusCode::NOT_FOUND, format!("unknown tenant {tenant:?}"));
        }
        let plugin = match host.runtime().load(wasm) {
            Ok(plugin) => plugin,
            Err(e) => {
                return refuse(
                    StatusCode::BAD_REQUEST,
                    format!("the component does not load: {e}"),
                );
            }
        };
        if let Some(fleet) = &self.fleet
            && let Err(e) = fleet.swap_component(tenant, wasm)
        {
            return refuse(StatusCode::SERVICE_UNAVAILABLE, e.to_string());
        }
        let sha256 = plugin.sha256().to_string();
        match host.swap_version(tenant, plugin) {
            Ok(()) => (
                StatusCode::OK,
                serde_json::json!({"tenant": tenant, "component_sha256": sha256}),
            ),
            Err(e) => refuse(StatusCode::NOT_FOUND, e.to_string()),
        }
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
        if token.is_none_or(|t| !self.operator.matches(t)) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn request(token: &str) -> Request<()> {
        Request::post("/admin/tenants/acme/connections/crm-a/disconnect")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .body(())
            .unwrap()
    }

    #[test]
    fn a_rotated_operator_token_works_at_once_and_the_old_one_stops() {
        let admin = Admin {
            operator: token_hash("old").into(),
            credentials: Credentials::default(),
            fleet: None,
        };
        assert!(admin.enabled());
        assert!(admin.is_operator(&request("old")));
        assert!(!admin.is_operator(&request("new")));
        admin
            .operator
            .replace(Some(token_hash("new").to_ascii_uppercase()));
        assert!(!admin.is_operator(&request("old")), "the old token stops");
        assert!(admin.is_operator(&request("new")), "in any case of hex");
        admin.operator.replace(None);
        assert!(!admin.enabled(), "no [admin]: the routes are off");
        assert!(!admin.is_operator(&request("new")));
    }
}
