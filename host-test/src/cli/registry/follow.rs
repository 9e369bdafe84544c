//! A host following the fleet's registry: at start it reads every row (the change from nothing
//! to the registry now); then, at each announced change, only the rows changed since the version
//! it applied, and applies them in place. A revoked token is one row read and one entry
//! removed, whether the registry lists ten tenants or a hundred thousand.

use super::plan;
use super::rows::{Change, Row, change_of, rows_of};
use super::{OnHost, Tenants};
use crate::mcp::tenants::TenantsFile;
use crate::tenant_db::PgStore;
use crate::tenant_db::postgres::StoreEvent;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;

/// Every row of the fleet's registry, as the change a starting host applies. A registry kept
/// as one document (schema version 4) is converted into rows first, once.
pub(in crate::cli) fn read_registry(store: &PgStore) -> Result<Change, String> {
    if let Some(read) = store.registry_rows(0).map_err(|e| e.to_string())? {
        return Ok(change_of(read));
    }
    let (_, text) = store
        .registry_document()
        .map_err(|e| e.to_string())?
        .ok_or(
            "the store has no tenants registry yet: run `crm-host tenants import FILE` with the \
         same --store, or give --tenants",
        )?;
    let file = TenantsFile::parse(&text).map_err(|e| format!("the registry: {e}"))?;
    let written = store
        .replace_registry(rows_of(&file))
        .map_err(|e| e.to_string())?;
    tracing::info!(
        registry_version = written.version,
        "the tenants registry document was converted into rows"
    );
    let read = store
        .registry_rows(0)
        .map_err(|e| e.to_string())?
        .ok_or("the tenants registry's rows vanished as they were written")?;
    Ok(change_of(read))
}

impl Tenants {
    /// Applies the rows of `change` and nothing else: tokens, the operator's token and the
    /// credential sources (a revocation never waits on a tenant's build), and the tenants it
    /// names, each built, removed or taken out of service on its own.
    pub(in crate::cli) fn apply_change(&self, change: Change) {
        let mut applied = self.applied.lock().unwrap_or_else(|e| e.into_inner());
        if change.version <= applied.version {
            return;
        }
        // Who may call is changed on a thread of its own while the tenants are built (see
        // [`Tenants::apply`]).
        std::thread::scope(|scope| {
            scope.spawn(|| self.apply_access_rows(&change));
            let removed = change
                .tenants
                .iter()
                .filter(|(_, row)| matches!(row, Row::Removed))
                .map(|(id, _)| id.clone())
                .collect();
            let steps = plan::changed(&applied.tenants, &change.tenants);
            self.host.reserve_tenants(steps.len());
            let now = plan::carry_out(&applied.tenants, steps, &mut OnHost::new(self));
            self.settle_steps(&mut applied, change.version, now, removed);
        });
    }

    /// The tokens, the operator's token, the identity providers and the credential sources
    /// the rows of `change` set.
    fn apply_access_rows(&self, change: &Change) {
        let table = self.tokens.current();
        let mut edit = table.edit();
        edit.reserve(change.tenants.len(), change.tokens.len());
        for (id, row) in &change.tenants {
            match row {
                Row::Set(entry) => edit.set_tenant(id, self.instance_url(entry)),
                // Its tokens still name it; its calls are refused, out of service.
                Row::Unreadable(_) => edit.set_tenant(id, None),
                Row::Removed => edit.remove_tenant(id),
            }
        }
        let mut var = None;
        self.credentials
            .set(change.tenants.iter().map(|(id, row)| match row {
                Row::Set(entry) => (id.as_str(), self.credential_source(entry, &mut var).ok()),
                Row::Unreadable(_) | Row::Removed => (id.as_str(), None),
            }));
        for (sha256, row) in &change.tokens {
            let admitted = match row {
                Row::Set(token) if token.sha256 == *sha256 => edit.set_token(token),
                Row::Set(_) => Err("its row names another hash".into()),
                Row::Removed => {
                    edit.remove_token(sha256);
                    Ok(())
                }
                Row::Unreadable(why) => Err(why.clone()),
            };
            if let Err(why) = admitted {
                edit.remove_token(sha256);
                tracing::error!("registry token {sha256} admits nobody on this host: {why}");
            }
        }
        drop(edit);
        let providers = match &change.jwt {
            None => Ok(()),
            Some(Row::Set(issuers)) => {
                table.set_providers(issuers, Some(self.jwks_backend.clone()))
            }
            Some(Row::Removed) => table.set_providers(&[], None),
            Some(Row::Unreadable(why)) => Err(why.clone()),
        };
        if let Err(why) = providers {
            tracing::error!("the identity providers are off on this host: {why}");
            let _ = table.set_providers(&[], None);
        }
        match &change.admin {
            None => {}
            Some(Row::Set(admin)) => self.operator.replace(Some(admin.sha256.clone())),
            Some(Row::Removed) => self.operator.replace(None),
            Some(Row::Unreadable(why)) => {
                tracing::error!("the operator's routes are off on this host: {why}");
                self.operator.replace(None);
            }
        }
    }

    /// Applies the registry's changes whenever one is announced (and after this host's
    /// listener reconnects, when it may have missed one).
    pub(in crate::cli) fn follow(self: Arc<Self>, store: Arc<PgStore>) {
        self.follows
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let mut events = store.events();
        tokio::spawn(async move {
            loop {
                match events.recv().await {
                    Ok(StoreEvent::Registry { .. } | StoreEvent::Resync)
                    | Err(RecvError::Lagged(_)) => {}
                    Ok(_) => continue,
                    Err(RecvError::Closed) => return,
                }
                let (tenants, store) = (self.clone(), store.clone());
                let _ = tokio::task::spawn_blocking(move || tenants.catch_up(&store)).await;
            }
        });
    }

    /// Reads the rows changed since the version this host applied and applies them, then
    /// tells the fleet (one indexed query that finds nothing when nothing changed).
    pub(super) fn catch_up(&self, store: &PgStore) {
        let since = self
            .applied
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .version;
        match store.registry_rows(since) {
            Ok(Some(read)) if read.version > since => {
                let many = read.rows.len() >= 4_096;
                self.apply_change(change_of(read));
                if many {
                    release_freed_memory();
                }
                self.report(store);
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("reading the tenants registry: {e}"),
        }
    }
}

/// Hands the memory freed after reading many tenants (the file's text, the rows as read)
/// back to the system. glibc keeps freed memory in its arenas for reuse, and after reading a
/// hundred thousand tenants that is tens of megabytes a server would hold for the rest of its
/// life without using it.
pub(in crate::cli) fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages of the allocator's own heaps to the system;
    // it touches no live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}
