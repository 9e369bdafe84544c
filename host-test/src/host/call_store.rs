//! Each call's store: only its tenant's settings, results directory, mapping store and
//! connections, and hooks that send to its broker alone.

use super::{CallOptions, Host, Opened, TenantEntry};
use crate::hooks::{BrokerHooks, EgressScope};
use crate::host::CallError;
use crate::runtime::TenantResources;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Who and what a call's store serves: the tool, the user, whether a write was sent, the
/// audit trail's call id.
pub(super) struct CallSite<'a> {
    pub(super) tool: &'a str,
    pub(super) user_id: &'a str,
    pub(super) writes: Arc<AtomicBool>,
    pub(super) call_id: Arc<str>,
}

impl Host {
    pub(super) fn store(
        &self,
        pre: &crate::bindings::PluginPre<crate::runtime::CallState>,
        entry: &TenantEntry,
        opened: &Opened,
        call: CallSite<'_>,
        options: CallOptions,
    ) -> Result<wasmtime::Store<crate::runtime::CallState>, CallError> {
        let CallSite {
            tool,
            user_id,
            writes,
            call_id,
        } = call;
        let limits = self.runtime.limits();
        let time_limit = options.time_limit.unwrap_or(limits.call_timeout);
        // Only this tenant's settings, results directory and mapping store.
        let owner = options
            .owner
            .unwrap_or_else(|| crate::tenant_db::ResultOwner::of(user_id));
        let tenant = TenantResources {
            config: entry.shape.config.clone(),
            results_dir: opened.results_dir.clone(),
            owner,
            mappings: opened.mappings.clone(),
            connections: opened.connections.clone(),
            policy: entry.shape.policy.clone(),
            call_id,
            progress: options.progress,
            time_limit,
        };
        let hooks = BrokerHooks {
            tenant: entry.tenant_id.clone(),
            origin: entry.shape.origin.clone(),
            scope: EgressScope {
                policy: entry.plugin.policy.clone(),
                tool: tool.into(),
                roots: entry.shape.roots.clone(),
            },
            connections: opened.connections.clone(),
            backend: self.backend.clone(),
            audit: self.audit.clone(),
            max_timeout: limits.http_timeout,
            max_request_bytes: limits.max_request_bytes,
            writes_sent: writes,
            pacer: self.pacer.clone(),
            refusals: Default::default(),
        };
        Ok(self.runtime.store(pre, tenant, hooks, user_id.into()))
    }
}
