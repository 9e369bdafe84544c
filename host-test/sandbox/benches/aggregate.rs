//! Issue 26's aggregate figure: `crma_aggregate_records` over 2,000 and 25,000 deals seeded
//! into the sandbox HubSpot (pipeline value by stage), paced under the search API's limit.
//! Prints the time, the records read and the component's peak linear memory, which must be
//! the same figure at both sizes: only the groups are kept.

use crm_host::{AuditLog, CallRequest, Host, Runtime};
use crm_sandbox::SandboxCrm;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;

pub async fn figures(runtime: &Arc<Runtime>, wasm: &[u8]) {
    for count in [2_000usize, 25_000] {
        let sandbox = SandboxCrm::new();
        let label = format!("Bench{count}");
        sandbox
            .seed_hubspot_deals("acme", count, &label)
            .expect("acme is a sandbox tenant");
        let audit = AuditLog::in_memory();
        let host = Host::new(runtime.clone(), Arc::new(sandbox), audit.clone());
        host.add_tenant(SandboxCrm::tenant_spec("acme"), runtime.load(wasm).unwrap())
            .unwrap();
        let request = CallRequest {
            tenant_id: "acme".into(),
            user_id: "bench-user".into(),
            granted_scopes: crm_plugin::crma::REQUIRED_SCOPES
                .iter()
                .map(|s| s.to_string())
                .collect(),
            instance_url: None,
            tool: "crma_aggregate_records".into(),
            input: json!({
                "object_type": "deals",
                "filter_groups": [{"filters": [{"property": "dealname", "operator": "CONTAINS_TOKEN", "value": label}]}],
                "group_by": [{"property": "dealstage"}],
                "metrics": ["sum:amount", "avg:amount"]
            })
            .to_string(),
        };
        let started = Instant::now();
        let out: Value =
            serde_json::from_str(&host.call(request).await.expect("the aggregate runs")).unwrap();
        let elapsed = started.elapsed();
        let peak = super::export::peak_of(&audit);
        println!(
            "HubSpot aggregate of {count} deals by stage: records_read {}, {} groups, {elapsed:?}, peak linear memory {peak} bytes ({:.2} MiB)",
            out["records_read"],
            out["groups"].as_array().map_or(0, Vec::len),
            peak as f64 / (1024.0 * 1024.0)
        );
    }
}
