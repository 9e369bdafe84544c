//! An operator's disconnects and reconnects of a tenant's CRMs, kept in the tenant's store so
//! they hold after a restart and, on a fleet's store, on every host.

use super::Host;
use crate::credential::Credential;
use crate::egress::Crm;
use crate::host::CallError;

impl Host {
    /// Disconnects one CRM for a tenant, as when the integration is uninstalled: its credential
    /// is dropped at once, new calls to it get `not-connected` with nothing sent, calls already
    /// running send nothing more to it, and a running sync writes nothing. Mappings are kept.
    /// The disconnect is kept in the tenant's store, so it holds after a restart.
    pub fn disconnect(&self, tenant_id: &str, integration: Crm) -> Result<(), CallError> {
        let opened = self.opened(tenant_id)?;
        opened.connections.disconnect(integration);
        opened
            .mappings
            .set_disconnected(integration.integration(), true)
            .map_err(|e| CallError::BadTenant(tenant_id.into(), format!("mapping store: {e}")))
    }

    /// Connects one CRM again for a tenant, with the broker credential to use.
    pub fn reconnect(
        &self,
        tenant_id: &str,
        integration: Crm,
        credential: Credential,
    ) -> Result<(), CallError> {
        let opened = self.opened(tenant_id)?;
        opened
            .mappings
            .set_disconnected(integration.integration(), false)
            .map_err(|e| CallError::BadTenant(tenant_id.into(), format!("mapping store: {e}")))?;
        opened.connections.connect(integration, credential);
        Ok(())
    }

    /// Whether the tenant's `integration` is connected.
    pub fn is_connected(&self, tenant_id: &str, integration: Crm) -> Result<bool, CallError> {
        Ok(self
            .opened(tenant_id)?
            .connections
            .is_connected(integration))
    }
}
