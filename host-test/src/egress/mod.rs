//! The egress policy: every request a component may send, as data that travels inside the
//! component, enforced by the host whatever the component does.
//!
//! A component carries its policy as TOML in a custom section named [`SECTION`]. The host reads
//! and vets it before loading the component: a policy that admits DELETE, a reserved path
//! (archive, GDPR delete, batch, composite, tooling, Apex) or a method-override spelling is
//! refused, and so is the component. At run time the hooks admit a request only when one of the
//! policy's endpoints names the calling tool, the method, the whole path (under the tenant's own
//! integration roots on the broker), every query parameter and the body; anything else is
//! refused and audited, and never reaches the backend.

pub mod path;
mod roots;

use http::{HeaderMap, HeaderName, Method, Uri};
use path::{PathProblem, Segments, Template, TemplateProblem};
use serde::Deserialize;

pub use roots::Roots;

/// The custom section a component's policy travels in.
pub const SECTION: &str = "crm-plugin:egress-policy";

/// The policy format this host reads.
const VERSION: u32 = 1;

/// Query parameters that turn a request into another method (Salesforce reads `_HttpMethod`
/// on a POST as the method to run).
const OVERRIDE_QUERY: &[&str] = &["_httpmethod", "_method"];

/// Headers that do the same for proxies and frameworks that honour them.
const OVERRIDE_HEADERS: &[&str] = &[
    "x-http-method-override",
    "x-http-method",
    "x-method-override",
];

/// The CRMs, as the component names them; the policy file spells them as the spec does
/// (`crm = "crm-a"` is HubSpot, `"crm-b"` Salesforce).
pub use crm_plugin::error::Crm;

/// Reads a policy's `crm = "crm-a" | "crm-b"`.
fn crm_by_integration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Crm, D::Error> {
    let name = String::deserialize(d)?;
    Crm::from_integration(&name).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "unknown crm {name:?}: crm-a (HubSpot) or crm-b (Salesforce)"
        ))
    })
}

/// The methods a policy may admit. There is no DELETE to write down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Get,
    Post,
    Patch,
    Put,
}

impl Verb {
    /// The verb a request's method is, spelled exactly as HTTP does (upper case).
    fn of(method: &str) -> Option<Self> {
        Some(match method {
            "GET" => Verb::Get,
            "POST" => Verb::Post,
            "PATCH" => Verb::Patch,
            "PUT" => Verb::Put,
            _ => return None,
        })
    }

    /// The method as it goes on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "GET",
            Verb::Post => "POST",
            Verb::Patch => "PATCH",
            Verb::Put => "PUT",
        }
    }
}

/// One endpoint a policy admits.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub integration: Crm,
    pub method: Verb,
    pub template: Template,
    /// Query parameter names allowed; any other is refused.
    pub query: Vec<String>,
    /// Whether a request body may be sent.
    pub body: bool,
    /// The tools that may send it.
    pub tools: Vec<String>,
}

/// A vetted policy.
#[derive(Debug, Clone)]
pub struct Policy {
    headers: Vec<HeaderName>,
    endpoints: Vec<Endpoint>,
}

/// Why a component's policy, and so the component, is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("the component carries no egress policy (custom section {SECTION})")]
    Missing,
    #[error("the component carries {0} egress policies; it must carry exactly one")]
    Several(usize),
    #[error("the component could not be read: {0}")]
    NotAComponent(String),
    #[error("the egress policy is not valid TOML of the expected shape: {0}")]
    Unreadable(String),
    #[error("egress policy version {0} is not supported (this host reads version {VERSION})")]
    Version(u32),
    #[error("endpoint {path}: method {method:?} is never admitted (GET, POST, PATCH or PUT only)")]
    Method { path: String, method: String },
    #[error("endpoint {path}: {problem}")]
    Template {
        path: String,
        problem: TemplateProblem,
    },
    #[error("endpoint {path}: query parameter {name:?} overrides the method")]
    OverrideQuery { path: String, name: String },
    #[error("header {0:?} is a method override or not a header name")]
    Header(String),
    #[error("endpoint {path}: a GET never carries a body")]
    BodyOnGet { path: String },
    #[error("endpoint {path}: names no tool")]
    NoTools { path: String },
}

/// Why a request was refused. Shown in the audit trail as `denied: …`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("DELETE is never sent")]
    Delete,
    #[error("method {0:?} is not in the egress policy")]
    Method(String),
    #[error("header {0} overrides the method")]
    OverrideHeader(String),
    #[error("header {0} is not in the egress policy")]
    Header(String),
    #[error("query parameter {0} overrides the method")]
    OverrideQuery(String),
    #[error("unreadable path: {0}")]
    Path(#[from] PathProblem),
    #[error("the path is under neither of this tenant's integrations")]
    OtherIntegration,
    #[error("{} {method} {path} is not in the egress policy", integration.integration())]
    NotInPolicy {
        integration: Crm,
        method: &'static str,
        path: String,
    },
    #[error("tool {tool:?} may not send {method} {template}")]
    NotForTool {
        tool: String,
        method: &'static str,
        template: String,
    },
    #[error("query parameter {name:?} is not allowed on {template}")]
    Query { template: String, name: String },
    #[error("{template} carries no body")]
    Body { template: String },
    #[error("{} is disconnected for this tenant", .0.integration())]
    Disconnected(Crm),
}

/// What an admitted request may still do: the hooks check the body once it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admitted {
    pub integration: Crm,
    pub body_allowed: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    version: u32,
    headers: Vec<String>,
    endpoint: Vec<RawEndpoint>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEndpoint {
    #[serde(deserialize_with = "crm_by_integration")]
    crm: Crm,
    method: String,
    path: String,
    #[serde(default)]
    query: Vec<String>,
    #[serde(default)]
    body: bool,
    tools: Vec<String>,
}

impl Policy {
    /// Reads the one policy a component (or core module) carries, at any nesting depth.
    pub fn from_component(wasm: &[u8]) -> Result<Self, PolicyError> {
        let found = crate::listing::custom_sections(wasm, SECTION)
            .map_err(|e| PolicyError::NotAComponent(e.to_string()))?;
        match found.as_slice() {
            [] => Err(PolicyError::Missing),
            [one] => Self::parse(
                std::str::from_utf8(one).map_err(|e| PolicyError::Unreadable(e.to_string()))?,
            ),
            many => Err(PolicyError::Several(many.len())),
        }
    }

    /// Parses and vets a policy's text.
    pub fn parse(text: &str) -> Result<Self, PolicyError> {
        let raw: RawPolicy =
            toml::from_str(text).map_err(|e| PolicyError::Unreadable(e.to_string()))?;
        if raw.version != VERSION {
            return Err(PolicyError::Version(raw.version));
        }
        let headers = raw
            .headers
            .iter()
            .map(|h| {
                let name =
                    HeaderName::try_from(h.as_str()).map_err(|_| PolicyError::Header(h.clone()))?;
                if OVERRIDE_HEADERS.contains(&name.as_str()) {
                    return Err(PolicyError::Header(h.clone()));
                }
                Ok(name)
            })
            .collect::<Result<_, _>>()?;
        let endpoints = raw
            .endpoint
            .into_iter()
            .map(Endpoint::vet)
            .collect::<Result<_, _>>()?;
        Ok(Policy { headers, endpoints })
    }

    /// The integrations `tool` may reach (none for a tool that makes no CRM call).
    pub fn integrations_of<'a>(&'a self, tool: &'a str) -> impl Iterator<Item = Crm> + 'a {
        [Crm::Hubspot, Crm::Salesforce]
            .into_iter()
            .filter(move |i| {
                self.endpoints
                    .iter()
                    .any(|e| e.integration == *i && e.tools.iter().any(|t| t == tool))
            })
    }

    /// Every endpoint, in the policy's order.
    pub fn endpoints(&self) -> &[Endpoint] {
        &self.endpoints
    }

    /// Decides whether `tool` may send this request to the tenant whose integrations are at
    /// `roots`. The body is checked by the caller once read ([`Admitted::body_allowed`]).
    pub fn admit(
        &self,
        tool: &str,
        roots: &Roots,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
    ) -> Result<Admitted, Refusal> {
        if method.as_str().eq_ignore_ascii_case("DELETE") {
            return Err(Refusal::Delete);
        }
        let verb = Verb::of(method.as_str())
            .ok_or_else(|| Refusal::Method(method.as_str().chars().take(32).collect()))?;
        for (name, value) in headers {
            // wasi-http sets `host` from the authority (a guest may not), which the origin
            // check already vetted.
            if name == http::header::HOST
                && uri
                    .authority()
                    .is_some_and(|a| value.as_bytes() == a.as_str().as_bytes())
            {
                continue;
            }
            if OVERRIDE_HEADERS.contains(&name.as_str()) {
                return Err(Refusal::OverrideHeader(name.to_string()));
            }
            if !self.headers.contains(name) {
                return Err(Refusal::Header(name.to_string()));
            }
        }
        let names: Vec<String> = uri
            .query()
            .map(|q| {
                url::form_urlencoded::parse(q.as_bytes())
                    .map(|(k, _)| k.into_owned())
                    .collect()
            })
            .unwrap_or_default();
        if let Some(name) = names
            .iter()
            .find(|n| OVERRIDE_QUERY.iter().any(|o| n.eq_ignore_ascii_case(o)))
        {
            return Err(Refusal::OverrideQuery(name.clone()));
        }
        let segments = Segments::parse(uri.path())?;
        let (integration, rest) = roots.locate(&segments).ok_or(Refusal::OtherIntegration)?;
        let mut matching = self
            .endpoints
            .iter()
            .filter(|e| e.integration == integration && e.method == verb)
            .filter(|e| e.template.matches(rest))
            .peekable();
        let first = matching.peek().map(|e| e.template.to_string());
        let endpoint = matching
            .find(|e| e.tools.iter().any(|t| t == tool))
            .ok_or_else(|| match first {
                Some(template) => Refusal::NotForTool {
                    tool: tool.chars().take(64).collect(),
                    method: verb.as_str(),
                    template,
                },
                None => Refusal::NotInPolicy {
                    integration,
                    method: verb.as_str(),
                    path: format!("/{}", rest.join("/")),
                },
            })?;
        if let Some(name) = names.iter().find(|n| !endpoint.query.contains(n)) {
            return Err(Refusal::Query {
                template: endpoint.template.to_string(),
                name: name.chars().take(64).collect(),
            });
        }
        Ok(Admitted {
            integration,
            body_allowed: endpoint.body,
        })
    }

    /// The policy as a Markdown table, endpoint by endpoint (docs/security.md shows it).
    pub fn markdown_table(&self) -> String {
        let mut table = String::from(
            "| CRM | Method | Path (under the integration's root) | Query | Body | Tools |\n\
             |---|---|---|---|---|---|\n",
        );
        for e in &self.endpoints {
            let code = |items: &[String]| {
                if items.is_empty() {
                    "–".to_string()
                } else {
                    items
                        .iter()
                        .map(|i| format!("`{i}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            };
            table.push_str(&format!(
                "| {} | {} | `{}` | {} | {} | {} |\n",
                e.integration.integration(),
                e.method.as_str(),
                e.template,
                code(&e.query),
                if e.body { "JSON" } else { "none" },
                code(&e.tools),
            ));
        }
        table
    }
}

impl Endpoint {
    fn vet(raw: RawEndpoint) -> Result<Self, PolicyError> {
        let path = raw.path.clone();
        let method = Verb::of(&raw.method).ok_or_else(|| PolicyError::Method {
            path: path.clone(),
            method: raw.method.clone(),
        })?;
        let template = Template::parse(&raw.path).map_err(|problem| PolicyError::Template {
            path: path.clone(),
            problem,
        })?;
        if let Some(name) = raw
            .query
            .iter()
            .find(|n| OVERRIDE_QUERY.iter().any(|o| n.eq_ignore_ascii_case(o)))
        {
            return Err(PolicyError::OverrideQuery {
                path,
                name: name.clone(),
            });
        }
        if raw.body && method == Verb::Get {
            return Err(PolicyError::BodyOnGet { path });
        }
        if raw.tools.is_empty() {
            return Err(PolicyError::NoTools { path });
        }
        Ok(Endpoint {
            integration: raw.crm,
            method,
            template,
            query: raw.query,
            body: raw.body,
            tools: raw.tools,
        })
    }
}

#[cfg(test)]
mod tests;
