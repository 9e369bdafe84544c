//! The operator's figures, in Prometheus' text format (`GET /metrics` on `crm-host serve`,
//! behind the operator's token): tool calls by tool and outcome, call latency, CRM requests by
//! status, egress denials, open MCP sessions and HTTP connections, refused HTTP requests, the
//! tenants registry version applied and the tenants out of service on this host.
//!
//! Calls and requests are counted from the audit trail ([`AuditObserver`]), so a figure never
//! disagrees with the lines behind it. No label carries a tenant, a user or a record: the
//! metrics are the operator's, and a label per tenant would grow without bound.

use crate::audit::{AuditEvent, AuditObserver};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tool: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabel {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    /// The HTTP status, or `none` when no answer came (refused, timed out, reset).
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: String,
}

/// Why the server refused an HTTP request before MCP saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    Unauthenticated,
    ForeignOrigin,
    ForeignHost,
    RateLimited,
    UnknownSession,
    TooManyConnections,
    /// A source past its failed-authentication limit (answered without checking its token).
    AuthFailures,
    /// A principal at its share of requests in flight.
    TooManyInFlight,
    /// A request body that came too slowly (408).
    SlowBody,
}

impl Refused {
    fn label(self) -> &'static str {
        match self {
            Refused::Unauthenticated => "unauthenticated",
            Refused::ForeignOrigin => "foreign_origin",
            Refused::ForeignHost => "foreign_host",
            Refused::RateLimited => "rate_limited",
            Refused::UnknownSession => "unknown_session",
            Refused::TooManyConnections => "too_many_connections",
            Refused::AuthFailures => "auth_failures",
            Refused::TooManyInFlight => "too_many_in_flight",
            Refused::SlowBody => "slow_body",
        }
    }
}

/// Every figure the server keeps. Cheap to update from any task (atomics).
pub struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    latency: Family<ToolLabel, Histogram, fn() -> Histogram>,
    requests: Family<StatusLabel, Counter>,
    denials: Counter,
    refused: Family<ReasonLabel, Counter>,
    /// Open MCP sessions (the 2025 era's; the 2026 era keeps none).
    pub sessions: Gauge,
    /// Open HTTP connections.
    pub connections: Gauge,
    /// The tenants registry version this host applied last (0: a `--tenants` file).
    pub registry_version: Gauge,
    /// Listed tenants this host cannot serve (`/readyz` names them and why).
    pub tenants_out_of_service: Gauge,
    /// Tenants listed here, and those of them whose store has been opened (they were called).
    pub tenants_listed: Gauge,
    pub tenants_loaded: Gauge,
    /// SQLite stores open now, and how many may be at once.
    pub open_stores: Gauge,
    pub open_stores_limit: Gauge,
}

fn latency_histogram() -> Histogram {
    // 1 ms to ~65 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("crm_host");
        let calls = Family::<CallLabels, Counter>::default();
        registry.register(
            "tool_calls",
            "Tool calls by tool and outcome (ok, a tool-error kind, or host-error)",
            calls.clone(),
        );
        let latency = Family::new_with_constructor(latency_histogram as fn() -> Histogram);
        registry.register(
            "tool_call_duration_seconds",
            "Time from a tool call's start to its answer",
            latency.clone(),
        );
        let requests = Family::<StatusLabel, Counter>::default();
        registry.register(
            "crm_requests",
            "Requests the components sent towards the CRMs, by HTTP status (none: no answer)",
            requests.clone(),
        );
        let denials = Counter::default();
        registry.register(
            "egress_denials",
            "Requests the egress policy refused before they left the host",
            denials.clone(),
        );
        let refused = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "http_refused",
            "HTTP requests refused before MCP saw them, by reason",
            refused.clone(),
        );
        let sessions = Gauge::default();
        registry.register("mcp_sessions_open", "Open MCP sessions", sessions.clone());
        let connections = Gauge::default();
        registry.register(
            "http_connections_open",
            "Open HTTP connections",
            connections.clone(),
        );
        let registry_version = Gauge::default();
        registry.register(
            "registry_version",
            "The tenants registry version this host applied last",
            registry_version.clone(),
        );
        let tenants_out_of_service = Gauge::default();
        registry.register(
            "tenants_out_of_service",
            "Listed tenants this host cannot serve (see /readyz for which and why)",
            tenants_out_of_service.clone(),
        );
        let gauge = |registry: &mut Registry, name: &str, help: &str| {
            let gauge = Gauge::default();
            registry.register(name, help, gauge.clone());
            gauge
        };
        let tenants_listed = gauge(
            &mut registry,
            "tenants_listed",
            "Tenants listed on this host",
        );
        let tenants_loaded = gauge(
            &mut registry,
            "tenants_loaded",
            "Listed tenants whose store and results directory are open (called since the start)",
        );
        let open_stores = gauge(&mut registry, "open_stores", "SQLite stores open now");
        let open_stores_limit = gauge(
            &mut registry,
            "open_stores_limit",
            "SQLite stores that may be open at once (fitted to the open-files limit)",
        );
        Metrics {
            registry,
            registry_version,
            tenants_listed,
            tenants_loaded,
            open_stores,
            open_stores_limit,
            tenants_out_of_service,
            calls,
            latency,
            requests,
            denials,
            refused,
            sessions,
            connections,
        }
    }
}

impl Metrics {
    /// Counts a refused HTTP request.
    pub fn refused(&self, why: Refused) {
        self.refused
            .get_or_create(&ReasonLabel {
                reason: why.label().into(),
            })
            .inc();
    }

    /// The exposition text.
    pub fn render(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

impl AuditObserver for Metrics {
    fn observe(&self, event: &AuditEvent) {
        match event {
            AuditEvent::ToolCall {
                tool,
                outcome,
                duration_ms,
                ..
            } => {
                self.calls
                    .get_or_create(&CallLabels {
                        tool: tool.clone(),
                        outcome: outcome.clone(),
                    })
                    .inc();
                self.latency
                    .get_or_create(&ToolLabel { tool: tool.clone() })
                    .observe(*duration_ms as f64 / 1000.0);
            }
            AuditEvent::Request {
                status, outcome, ..
            } => {
                if outcome.starts_with("denied") {
                    self.denials.inc();
                }
                let status = status.map_or_else(|| "none".to_string(), |s| s.to_string());
                self.requests.get_or_create(&StatusLabel { status }).inc();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_requests_and_denials_from_the_audit_trail_render_as_prometheus_text() {
        let metrics = Metrics::default();
        let call = |outcome: &str, ms| AuditEvent::ToolCall {
            call_id: "c".into(),
            tenant: "acme".into(),
            user: "alice".into(),
            tool: "crmb_get_record".into(),
            plugin_version: "v".into(),
            outcome: outcome.into(),
            duration_ms: ms,
            peak_memory_bytes: 0,
        };
        metrics.observe(&call("ok", 3));
        metrics.observe(&call("ok", 5));
        metrics.observe(&call("not-found", 2));
        let request = |status, outcome: &str| AuditEvent::Request {
            tenant: "acme".into(),
            method: "GET".into(),
            path: "/x".into(),
            status,
            outcome: outcome.into(),
            correlation_id: None,
            duration_ms: 1,
        };
        metrics.observe(&request(Some(200), "ok"));
        metrics.observe(&request(None, "denied: DELETE"));
        metrics.refused(Refused::RateLimited);
        metrics.sessions.set(2);
        metrics.registry_version.set(7);
        metrics.tenants_out_of_service.set(1);
        metrics.tenants_listed.set(100_000);
        metrics.tenants_loaded.set(1_000);
        metrics.open_stores.set(16);
        metrics.open_stores_limit.set(16);
        let text = metrics.render();
        for line in [
            "crm_host_tool_calls_total{tool=\"crmb_get_record\",outcome=\"ok\"} 2",
            "crm_host_tool_calls_total{tool=\"crmb_get_record\",outcome=\"not-found\"} 1",
            "crm_host_tool_call_duration_seconds_count{tool=\"crmb_get_record\"} 3",
            "crm_host_crm_requests_total{status=\"200\"} 1",
            "crm_host_crm_requests_total{status=\"none\"} 1",
            "crm_host_egress_denials_total 1",
            "crm_host_http_refused_total{reason=\"rate_limited\"} 1",
            "crm_host_mcp_sessions_open 2",
            "crm_host_registry_version 7",
            "crm_host_tenants_out_of_service 1",
            "crm_host_tenants_listed 100000",
            "crm_host_tenants_loaded 1000",
            "crm_host_open_stores 16",
            "crm_host_open_stores_limit 16",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        assert!(
            !text.contains("acme") && !text.contains("alice"),
            "no tenant or user"
        );
    }
}
