//! The routes a load balancer and an operator poll: `/readyz` and `/metrics`.

use super::{Body, json_response, plain};
use crate::host::Host;
use crate::mcp::admin::Admin;
use crate::metrics::Metrics;
use ::http::{Request, Response, StatusCode, header};
use serde_json::json;

/// `GET /readyz`: 200 while the host serves (`"status": "ok"`), still 200 but `"degraded"` when
/// some tenant is out of service here, each named with what to fix (one broken tenant must not
/// take the host out of a load balancer for every other tenant); 503 when it serves none, or a
/// served tenant's store does not answer.
pub(super) fn ready(host: &Host) -> Response<Body> {
    match host.readiness() {
        Ok(readiness) => {
            let out_of_service: Vec<_> = readiness
                .out_of_service
                .iter()
                .map(|(tenant, why)| json!({"tenant": tenant, "why": why}))
                .collect();
            json_response(
                StatusCode::OK,
                &json!({
                    "ready": true,
                    "status": if readiness.is_degraded() { "degraded" } else { "ok" },
                    "tenants": readiness.tenants,
                    "loaded": readiness.loaded,
                    "open_stores": readiness.open_stores,
                    "open_stores_limit": readiness.open_stores_limit,
                    "out_of_service": out_of_service,
                }),
            )
        }
        Err(why) => json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"ready": false, "why": why}),
        ),
    }
}

/// `GET /metrics`, for the operator's token only (404 when the server has no operator now).
pub(super) fn metrics<B>(
    operator: Option<&Admin>,
    metrics: &Metrics,
    request: &Request<B>,
) -> Response<Body> {
    let Some(admin) = operator else {
        return plain(StatusCode::NOT_FOUND, "not found");
    };
    if !admin.is_operator(request) {
        return plain(
            StatusCode::UNAUTHORIZED,
            "the operator's bearer token is required",
        );
    }
    let mut response = plain(StatusCode::OK, &metrics.render());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        ),
    );
    response
}
