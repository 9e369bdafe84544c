//! Who may reach MCP: the browser `Origin` (a DNS-rebinding guard), the `Host` clients use
//! (the public URL's, or loopback names on loopback), and the bearer token, whose hash or
//! signature picks the [`Principal`]. A missing or unknown token is a 401 that points to the
//! RFC 9728 protected-resource metadata at the public URL.

use super::{Body, METADATA_PATH, json_response, plain};
use crate::mcp::Principal;
use crate::mcp::tenants::{SharedTokens, bearer};
use crate::metrics::Refused;
use ::http::{Request, Response, StatusCode, header};
use std::net::SocketAddr;
use url::Url;

/// What the server checks each request against.
pub struct Gate {
    /// Who each bearer token acts for (replaced when the tenants registry changes).
    pub tokens: SharedTokens,
    /// Origins browsers may call from; requests without an Origin (non-browser clients) pass.
    pub allowed_origins: Vec<String>,
    /// The MCP endpoint as clients reach it (`--public-url`, else `http://<listen>/mcp`): the
    /// allowed `Host`, the resource in the metadata and the 401 challenge follow it.
    pub public_url: Url,
}

/// Why a request does not reach MCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A browser Origin that was not allowed (DNS rebinding, a foreign page).
    ForeignOrigin,
    /// No `Authorization` header.
    NoToken,
    /// A token that is neither listed in the tenants file nor signed by a provider bound to
    /// the tenant it names.
    BadToken,
}

impl Refusal {
    pub fn metric(self) -> Refused {
        match self {
            Refusal::ForeignOrigin => Refused::ForeignOrigin,
            Refusal::NoToken | Refusal::BadToken => Refused::Unauthenticated,
        }
    }
}

impl Gate {
    /// The origin (`scheme://host[:port]`) of the public URL.
    fn origin(&self) -> String {
        self.public_url.origin().ascii_serialization()
    }

    /// Where the metadata for this resource is: RFC 9728, section 3.1, inserts the well-known
    /// path between the host and the resource's own path.
    pub fn metadata_url(&self) -> String {
        let path = self.public_url.path().trim_end_matches('/');
        format!("{}{METADATA_PATH}{path}", self.origin())
    }

    /// The `Host` values rmcp accepts: the public URL's authority, and loopback names when the
    /// server listens on loopback (local clients and tests).
    pub fn allowed_hosts(&self, local: SocketAddr) -> Vec<String> {
        let mut hosts = Vec::new();
        if let Some(host) = self.public_url.host_str() {
            hosts.push(host.to_string());
            if let Some(port) = self.public_url.port_or_known_default() {
                hosts.push(format!("{host}:{port}"));
            }
        }
        if local.ip().is_loopback() {
            let port = local.port();
            hosts.push(local.to_string());
            hosts.push(local.ip().to_string());
            for name in ["localhost", "127.0.0.1", "[::1]", "::1"] {
                hosts.push(name.to_string());
                hosts.push(format!("{name}:{port}"));
            }
        }
        hosts.sort();
        hosts.dedup();
        hosts
    }

    /// The 401 a client without a valid token gets: RFC 6750's challenge with RFC 9728's
    /// pointer to the metadata.
    pub fn unauthorized(&self, bad_token: bool) -> Response<Body> {
        let mut response = plain(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
        let error = if bad_token {
            r#", error="invalid_token""#
        } else {
            ""
        };
        let challenge = format!(
            r#"Bearer resource_metadata="{}"{error}"#,
            self.metadata_url()
        );
        if let Ok(value) = challenge.parse() {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }

    /// RFC 9728 protected-resource metadata: this resource, where its tokens come from (the
    /// configured providers' issuers), and that tokens go in the header.
    pub fn metadata(&self) -> Response<Body> {
        let mut body = serde_json::json!({
            "resource": self.public_url.as_str(),
            "bearer_methods_supported": ["header"],
            "resource_name": "crm-plugin MCP server",
        });
        let issuers = self.tokens.current().issuers();
        if !issuers.is_empty() {
            body["authorization_servers"] = issuers.into();
        }
        json_response(StatusCode::OK, &body)
    }

    /// Whether a browser `Origin` may call: one given with `--allow-origin`, or the server's
    /// own (the public URL's origin; on loopback, the same port under any loopback name), as a
    /// page the server itself serves would send.
    pub fn origin_allowed(&self, origin: &str) -> bool {
        if self.allowed_origins.iter().any(|a| a == origin) {
            return true;
        }
        let own = self.origin();
        if origin.eq_ignore_ascii_case(&own) {
            return true;
        }
        let loopback = |host: &str| matches!(host, "127.0.0.1" | "localhost" | "[::1]");
        let public_loopback = self.public_url.host_str().is_some_and(loopback);
        match Url::parse(origin) {
            Ok(asked) if public_loopback => {
                asked.scheme() == self.public_url.scheme()
                    && asked.host_str().is_some_and(loopback)
                    && asked.port_or_known_default() == self.public_url.port_or_known_default()
            }
            _ => false,
        }
    }

    /// The principal of a request, or why it is refused.
    pub async fn admit<B>(&self, request: &Request<B>) -> Result<Principal, Refusal> {
        if let Some(origin) = request.headers().get(header::ORIGIN) {
            let allowed = origin.to_str().is_ok_and(|o| self.origin_allowed(o));
            if !allowed {
                return Err(Refusal::ForeignOrigin);
            }
        }
        let Some(value) = request.headers().get(header::AUTHORIZATION) else {
            return Err(Refusal::NoToken);
        };
        let Some(token) = value.to_str().ok().and_then(bearer) else {
            return Err(Refusal::BadToken);
        };
        let tokens = self.tokens.current();
        tokens.principal(token).await.ok_or(Refusal::BadToken)
    }

    /// The answer to a refused request.
    pub fn refuse(&self, refusal: Refusal) -> Response<Body> {
        match refusal {
            Refusal::ForeignOrigin => {
                plain(StatusCode::FORBIDDEN, "this Origin may not call the server")
            }
            Refusal::NoToken => self.unauthorized(false),
            Refusal::BadToken => self.unauthorized(true),
        }
    }

    /// Whether `path` is one of the places the metadata is served: the well-known path alone,
    /// or followed by the resource's path.
    pub fn is_metadata_path(&self, path: &str) -> bool {
        let suffix = self.public_url.path().trim_end_matches('/');
        path == METADATA_PATH || path.strip_prefix(METADATA_PATH) == Some(suffix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(url: &str) -> Gate {
        Gate {
            tokens: crate::mcp::tenants::TokenTable::default().into(),
            allowed_origins: Vec::new(),
            public_url: Url::parse(url).unwrap(),
        }
    }

    #[test]
    fn a_public_url_names_the_host_the_metadata_and_the_challenge() {
        let gate = gate("https://crm.example.com/mcp");
        let any: SocketAddr = "0.0.0.0:8765".parse().unwrap();
        assert_eq!(
            gate.allowed_hosts(any),
            ["crm.example.com", "crm.example.com:443"]
        );
        assert_eq!(
            gate.metadata_url(),
            "https://crm.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert!(gate.is_metadata_path("/.well-known/oauth-protected-resource"));
        assert!(gate.is_metadata_path("/.well-known/oauth-protected-resource/mcp"));
        assert!(!gate.is_metadata_path("/.well-known/oauth-protected-resource/other"));
        let challenge = gate.unauthorized(true);
        let value = challenge.headers()[header::WWW_AUTHENTICATE]
            .to_str()
            .unwrap();
        assert!(value.contains("https://crm.example.com/.well-known/oauth-protected-resource/mcp"));
        assert!(value.contains("invalid_token"));
    }

    #[test]
    fn the_servers_own_origin_is_allowed_and_others_only_when_listed() {
        let mut local = gate("http://127.0.0.1:9000/mcp");
        assert!(local.origin_allowed("http://127.0.0.1:9000"));
        assert!(local.origin_allowed("http://localhost:9000"));
        assert!(!local.origin_allowed("http://localhost:9001"));
        assert!(!local.origin_allowed("https://evil.example"));
        assert!(!local.origin_allowed("null"));
        local
            .allowed_origins
            .push("https://assistant.example".into());
        assert!(local.origin_allowed("https://assistant.example"));
        let public = gate("https://crm.example.com/mcp");
        assert!(public.origin_allowed("https://crm.example.com"));
        assert!(!public.origin_allowed("http://localhost:443"));
        assert!(!public.origin_allowed("https://crm.example.com.evil.example"));
    }

    #[test]
    fn on_loopback_local_names_are_allowed_besides_the_public_one() {
        let gate = gate("http://127.0.0.1:9000/mcp");
        let local: SocketAddr = "127.0.0.1:9000".parse().unwrap();
        let hosts = gate.allowed_hosts(local);
        assert!(hosts.contains(&"localhost:9000".to_string()));
        assert!(hosts.contains(&"127.0.0.1:9000".to_string()));
    }
}
