//! Issue 14's export figure: `crma_search_records` with `to_file` over 25,000 contacts seeded
//! into the sandbox HubSpot, past the 10,000 results a search can page through, paced under
//! the search API's 5 requests a second. Prints the time, the records in the file and the
//! component's peak linear memory, which stays as flat as a 2,000-record export.

use crm_host::audit::AuditEvent;
use crm_host::{AuditLog, CallRequest, Host, Runtime};
use crm_sandbox::SandboxCrm;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;

const SCOPES: &[&str] = &["crm.objects.contacts.read", "crm.schemas.custom.read"];

/// The component's peak linear memory in the first call audited.
pub fn peak_of(audit: &AuditLog) -> u64 {
    audit
        .events()
        .iter()
        .find_map(|e| match e {
            AuditEvent::ToolCall {
                peak_memory_bytes, ..
            } => Some(*peak_memory_bytes),
            _ => None,
        })
        .unwrap_or_default()
}

pub async fn figures(runtime: &Arc<Runtime>, wasm: &[u8]) {
    for count in [2_000usize, 25_000] {
        let sandbox = SandboxCrm::new();
        sandbox
            .seed_hubspot_contacts("acme", count, "Bench Export Ltd")
            .expect("acme is a sandbox tenant");
        let audit = AuditLog::in_memory();
        let host = Host::new(runtime.clone(), Arc::new(sandbox), audit.clone());
        let dir =
            std::env::temp_dir().join(format!("crm-bench-export-{}-{count}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut spec = SandboxCrm::tenant_spec("acme");
        spec.results_dir = Some(dir.clone());
        host.add_tenant(spec, runtime.load(wasm).unwrap()).unwrap();
        let request = CallRequest {
            tenant_id: "acme".into(),
            user_id: "bench-user".into(),
            granted_scopes: SCOPES.iter().map(|s| s.to_string()).collect(),
            instance_url: None,
            tool: "crma_search_records".into(),
            input: json!({
                "object_type": "contacts",
                "filter_groups": [{"filters": [{"property": "company", "operator": "EQ", "value": "Bench Export Ltd"}]}],
                "properties": ["email", "company"],
                "to_file": true
            })
            .to_string(),
        };
        let started = Instant::now();
        let out: Value =
            serde_json::from_str(&host.call(request).await.expect("the export runs")).unwrap();
        let elapsed = started.elapsed();
        let lines = out["file_path"]
            .as_str()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map_or(0, |text| text.lines().count());
        let peak = peak_of(&audit);
        let searches = audit
            .events()
            .iter()
            .filter(|e| matches!(e, AuditEvent::Request { path, .. } if path.ends_with("/search")))
            .count();
        println!(
            "HubSpot export of {count} contacts (to_file): {lines} lines, record_count {}, {searches} searches, {elapsed:?}, peak linear memory {:.2} MiB",
            out["record_count"],
            peak as f64 / (1024.0 * 1024.0)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
