//! Every refusal the host makes itself, to a read and to a write, and what the model is told
//! (issue 36, point 4). The host says "kept in" through the component's `egress` import, never
//! with an answer made up in the CRM's shape, so a refused write is never told as "sent,
//! outcome unknown": the model hears what to do and that nothing was sent, and the journal
//! records the write as failed (provably never sent), never pending or unknown.

use crate::fixtures::{output, plugin, runtime, tool_error};
use crate::fleet::request;
use crm_host::audit::AuditEvent;
use crm_host::egress::Crm;
use crm_host::pacing::{Pacer, PacingLimits, Window};
use crm_host::tenant_db::journal::Status;
use crm_host::{AuditLog, Host};
use crm_sandbox::SandboxCrm;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn read() -> crm_host::CallRequest {
    request(
        "crma_get_record",
        json!({"object_type": "deals", "record_id": "357300", "properties": ["amount"]}),
    )
}

fn write(amount: &str) -> crm_host::CallRequest {
    request(
        "crma_update_record",
        json!({"object_type": "deals", "record_id": "357300", "properties": {"amount": amount}}),
    )
}

fn sandbox_host(pacer: Option<Pacer>) -> (Arc<Host>, AuditLog) {
    let audit = AuditLog::in_memory();
    let mut host = Host::new(runtime(), Arc::new(SandboxCrm::new()), audit.clone());
    if let Some(pacer) = pacer {
        host = host.with_pacer(pacer);
    }
    host.add_tenant(SandboxCrm::tenant_spec("acme"), plugin())
        .unwrap();
    (Arc::new(host), audit)
}

/// Requests that reached the CRM (the hooks' refusals carry no status).
fn delivered(audit: &AuditLog) -> usize {
    audit
        .events()
        .iter()
        .filter(|e| {
            matches!(
                e,
                AuditEvent::Request {
                    status: Some(_),
                    ..
                }
            )
        })
        .count()
}

/// The newest journal entry's status.
fn last_change(host: &Host) -> Status {
    host.mappings("acme")
        .unwrap()
        .list_changes(None, None, None, 1)
        .unwrap()[0]
        .status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_refusal_the_host_makes_is_told_as_not_sent_for_reads_and_writes() {
    let mut table = Vec::new();

    // Paced: the account's window holds one request per ten minutes and nothing may wait. A
    // read after one read is kept in; an update's read of the current values takes the one
    // request, and its write is kept in.
    let paced = || {
        sandbox_host(Some(Pacer::local(PacingLimits {
            hubspot: Window {
                requests: 1,
                per: Duration::from_secs(600),
            },
            max_wait: Duration::ZERO,
            ..PacingLimits::default()
        })))
    };
    let (reads, read_audit) = paced();
    output(reads.call(read()).await);
    let (writes, write_audit) = paced();
    for (what, host, audit, call) in [
        ("read", &reads, &read_audit, read()),
        ("write", &writes, &write_audit, write("2024")),
    ] {
        let (kind, message) = tool_error(host.call(call).await);
        assert_eq!(kind, "rate-limited", "{what}: {message}");
        assert!(
            message.contains("nothing was done. Retry in"),
            "{what}: {message}"
        );
        assert_eq!(
            delivered(audit),
            1,
            "{what}: only the request before it reached the CRM"
        );
        table.push(("paced", what, kind, message));
    }
    assert_eq!(
        last_change(&writes),
        Status::Failed,
        "the refused write was never sent: failed, not pending or unknown"
    );

    // Disconnected by the operator: a tool whose only CRM is disconnected is refused before it
    // runs; a revert (which may reach either CRM) runs and its request is kept in by the hooks.
    let (host, audit) = sandbox_host(None);
    let updated = output(host.call(write("3030")).await);
    let change_id = updated["change_id"].as_str().unwrap().to_string();
    host.disconnect("acme", Crm::Hubspot).unwrap();
    let before = delivered(&audit);
    for (what, call) in [
        ("read", read()),
        ("write", write("4040")),
        (
            "write (revert)",
            request("crm_revert_change", json!({"change_id": change_id})),
        ),
    ] {
        let (kind, message) = tool_error(host.call(call).await);
        assert_eq!(kind, "not-connected", "{what}: {message}");
        assert!(
            message.contains("nothing was sent") || message.contains("was not sent"),
            "{what}: {message}"
        );
        assert!(message.contains("Reconnect") || message.contains("reconnect"));
        table.push(("disconnected", what, kind, message));
    }
    assert_eq!(delivered(&audit), before, "nothing reached the CRM");
    let journal = host
        .mappings("acme")
        .unwrap()
        .list_changes(None, None, None, 10)
        .unwrap();
    assert_eq!(
        journal.iter().map(|c| c.status).collect::<Vec<_>>(),
        [Status::Applied],
        "only the update made while connected; the revert stopped at its first read"
    );

    for (refusal, what, kind, message) in &table {
        eprintln!("{refusal:12} | {what:14} | {kind:13} | {message}");
    }
}
