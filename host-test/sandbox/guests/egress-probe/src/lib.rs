//! The egress probe: a component that carries crm-plugin's own egress policy but sends
//! whatever request the test asks for, under whatever tool name it is called with. The host's
//! egress policy, not this code, decides what leaves.
//!
//! Input, as plain text: `METHOD PATH` on the first line (the path is put after the tenant's
//! broker base, query string included), then `name: value` header lines, then a blank line and
//! the body. The answer reports the status and body, or the error the host gave.

wit_bindgen::generate!({
    world: "plugin",
    path: "../../../../wit",
    generate_all,
});

use exports::crm::plugin::tools::{CallContext, Guest, ToolError, ToolSpec};
use wasi::http::outgoing_handler;
use wasi::http::types::{Fields, Method, OutgoingBody, OutgoingRequest, Scheme};
use wasi::io::streams::StreamError;

/// crm-plugin's policy, exactly as the real component carries it.
#[used]
#[unsafe(link_section = "crm-plugin:egress-policy")]
static EGRESS_POLICY: [u8; include_bytes!("../../../../../src/egress-policy.toml").len()] =
    *include_bytes!("../../../../../src/egress-policy.toml");

struct Probe;

impl Guest for Probe {
    fn list_tools() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "crmb_update_record".into(),
            description: "egress probe: sends the request it is given".into(),
            input_schema: "{}".into(),
            read_only: false,
        }]
    }

    fn call_tool(_ctx: CallContext, _name: String, input: String) -> Result<String, ToolError> {
        let (head, body) = input.split_once("\n\n").unwrap_or((&input, ""));
        let mut lines = head.lines();
        let first = lines.next().unwrap_or_default();
        let (method, path) = first
            .split_once(' ')
            .ok_or_else(|| ToolError::InvalidInput("first line: METHOD PATH".into()))?;
        let headers: Vec<(&str, &str)> = lines.filter_map(|l| l.split_once(": ")).collect();
        let base = wasi::config::store::get("CRM_PROXY_BASE")
            .ok()
            .flatten()
            .ok_or_else(|| ToolError::InvalidInput("no CRM_PROXY_BASE".into()))?;
        Ok(send(method, &base, path, &headers, body.as_bytes()))
    }
}

fn method_of(name: &str) -> Method {
    match name {
        "GET" => Method::Get,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "PATCH" => Method::Patch,
        "DELETE" => Method::Delete,
        other => Method::Other(other.into()),
    }
}

/// Sends the request and reports `{"status":…,"body":…}` or `{"error":…}`.
fn send(method: &str, base: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> String {
    let (scheme, rest) = base.split_once("://").unwrap_or(("https", base));
    let authority = rest.split('/').next().unwrap_or(rest);
    let base_path = rest[authority.len()..].trim_end_matches('/');
    let fields = Fields::new();
    for (name, value) in headers {
        if let Err(e) = fields.append(name, value.as_bytes()) {
            return format!("{{\"error\":{:?}}}", format!("header {name}: {e:?}"));
        }
    }
    let request = OutgoingRequest::new(fields);
    if request.set_method(&method_of(method)).is_err() {
        return "{\"error\":\"method refused by wasi:http\"}".into();
    }
    let _ = request.set_scheme(Some(&if scheme == "http" {
        Scheme::Http
    } else {
        Scheme::Https
    }));
    let _ = request.set_authority(Some(authority));
    if request
        .set_path_with_query(Some(&format!("{base_path}{path}")))
        .is_err()
    {
        return "{\"error\":\"path refused by wasi:http\"}".into();
    }
    let outgoing = request.body().expect("body");
    let future = match outgoing_handler::handle(request, None) {
        Ok(f) => f,
        Err(code) => return format!("{{\"error\":{:?}}}", format!("{code:?}")),
    };
    {
        let stream = outgoing.write().expect("stream");
        for chunk in body.chunks(4096) {
            if stream.blocking_write_and_flush(chunk).is_err() {
                break;
            }
        }
    }
    let _ = OutgoingBody::finish(outgoing, None);
    future.subscribe().block();
    match future.get() {
        Some(Ok(Ok(response))) => {
            let status = response.status();
            let body = response.consume().expect("body");
            let stream = body.stream().expect("stream");
            let mut bytes = Vec::new();
            while let Ok(chunk) = stream.blocking_read(65536) {
                bytes.extend(chunk);
            }
            drop(stream);
            let _ = StreamError::Closed;
            format!(
                "{{\"status\":{status},\"body\":{:?}}}",
                String::from_utf8_lossy(&bytes)
            )
        }
        Some(Ok(Err(code))) => format!("{{\"error\":{:?}}}", format!("{code:?}")),
        other => format!("{{\"error\":{:?}}}", format!("{other:?}")),
    }
}

impl exports::crm::plugin::tool_metadata::Guest for Probe {
    fn list_tool_metadata() -> Vec<exports::crm::plugin::tool_metadata::ToolMetadata> {
        Vec::new()
    }
}

export!(Probe);
