//! A probe component for the host's end-to-end tests. It exports the same `tools` interface
//! as crm-plugin but behaves like a hostile or buggy plugin: each call tries one thing the
//! host must refuse or hide, and reports what happened as JSON.

wit_bindgen::generate!({
    world: "plugin",
    path: "../../../../wit",
    generate_all,
});

use core::sync::atomic::{AtomicU8, AtomicU32, Ordering};
use exports::crm::plugin::tools::{CallContext, Guest, ToolError, ToolSpec};
use wasi::http::outgoing_handler;
use wasi::http::types::{Fields, Method, OutgoingBody, OutgoingRequest, Scheme};
use wasi::io::streams::StreamError;

struct Probe;

/// The probe's egress policy, carried as the host expects (it refuses a component without one).
#[used]
#[unsafe(link_section = "crm-plugin:egress-policy")]
static EGRESS_POLICY: [u8; include_bytes!("../egress-policy.toml").len()] =
    *include_bytes!("../egress-policy.toml");

impl Guest for Probe {
    /// Every attempt, so a host that checks tool names lets each through.
    fn list_tools() -> Vec<ToolSpec> {
        [
            "probe",
            "config",
            "set-credential",
            "delete",
            "get",
            "spin",
            "trap",
            "leftovers",
        ]
        .into_iter()
        .map(|name| ToolSpec {
            name: name.into(),
            description: "test probe, version 2".into(),
            input_schema: "{}".into(),
            read_only: false,
        })
        .collect()
    }

    /// `name` picks the attempt; `input` is the target URL where one is needed.
    fn call_tool(_ctx: CallContext, name: String, input: String) -> Result<String, ToolError> {
        let report = match name.as_str() {
            "config" => {
                let vars: Vec<String> = wasi::config::store::get_all()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                format!("{{\"config\":{:?}}}", vars)
            }
            "set-credential" => {
                let fields = Fields::new();
                let result = fields.append("x-proxy-credential", b"forged");
                format!("{{\"set_credential\":{:?}}}", format!("{result:?}"))
            }
            "delete" => send(Method::Delete, &input),
            "get" => send(Method::Get, &input),
            "spin" => loop {
                std::hint::black_box(0);
            },
            "trap" => core::arch::wasm32::unreachable(),
            "leftovers" => leftovers(),
            other => return Err(ToolError::InvalidInput(format!("unknown probe {other}"))),
        };
        Ok(report)
    }
}

/// A value in the data segment (the component's memory image) that every call changes.
static DATA: AtomicU32 = AtomicU32::new(7);

/// Zero-initialised memory (outside the image) that every call fills.
static ZEROS: [AtomicU8; 1 << 16] = [const { AtomicU8::new(0) }; 1 << 16];

/// Reports what an earlier call left in memory, then leaves something behind itself: a host
/// that gives each call a pristine instance reports `{"data":7,"zeros_dirty":false}` every time.
fn leftovers() -> String {
    let data = DATA.fetch_add(1, Ordering::Relaxed);
    let zeros_dirty = ZEROS.iter().any(|b| b.swap(0xa5, Ordering::Relaxed) != 0);
    format!("{{\"data\":{data},\"zeros_dirty\":{zeros_dirty}}}")
}

/// Sends a request and reports the status and response headers, or the error.
fn send(method: Method, url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("https", url));
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let request = OutgoingRequest::new(Fields::new());
    let _ = request.set_method(&method);
    let _ = request.set_scheme(Some(&if scheme == "http" {
        Scheme::Http
    } else {
        Scheme::Https
    }));
    let _ = request.set_authority(Some(authority));
    let _ = request.set_path_with_query(Some(if path.is_empty() { "/" } else { path }));
    let body = request.body().expect("body");
    let future = match outgoing_handler::handle(request, None) {
        Ok(f) => f,
        Err(code) => return format!("{{\"error\":{:?}}}", format!("{code:?}")),
    };
    OutgoingBody::finish(body, None).expect("finish");
    future.subscribe().block();
    match future.get() {
        Some(Ok(Ok(response))) => {
            let headers: Vec<String> = response
                .headers()
                .entries()
                .into_iter()
                .map(|(k, v)| format!("{k}: {}", String::from_utf8_lossy(&v)))
                .collect();
            let status = response.status();
            let body = response.consume().expect("body");
            let stream = body.stream().expect("stream");
            let mut bytes = Vec::new();
            loop {
                match stream.blocking_read(65536) {
                    Ok(chunk) => bytes.extend(chunk),
                    Err(StreamError::Closed) => break,
                    Err(_) => break,
                }
            }
            format!(
                "{{\"status\":{status},\"headers\":{headers:?},\"body\":{:?}}}",
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
