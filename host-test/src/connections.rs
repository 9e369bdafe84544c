//! A tenant's two CRM connections: the broker credential each may use, dropped the moment an
//! operator disconnects that CRM.
//!
//! The spec: "when the integration is uninstalled or disconnected, credentials are removed and
//! access stops (CRM A immediately; sync stops)". A disconnect here drops the credential for that
//! CRM at once: no later request to it carries one (the hooks answer `401` themselves and send
//! nothing), and each disconnect moves the CRM's generation on, so a call that started before
//! it (a running sync) can tell and write nothing. Calls to the other CRM go on as before.

use crate::credential::Credential;
use crate::egress::Crm;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// One CRM's connection.
#[derive(Default)]
struct Link {
    credential: RwLock<Option<Credential>>,
    /// Moves on at every disconnect.
    generation: AtomicU64,
}

/// Both of a tenant's CRM connections.
pub struct Connections {
    crm_a: Link,
    crm_b: Link,
}

impl Connections {
    /// Both CRMs connected with the tenant's broker credential, except those in `disconnected`.
    pub fn new(credential: Credential, disconnected: &[Crm]) -> Self {
        let link = |integration| Link {
            credential: RwLock::new(
                (!disconnected.contains(&integration)).then(|| credential.clone()),
            ),
            generation: AtomicU64::new(0),
        };
        Connections {
            crm_a: link(Crm::Hubspot),
            crm_b: link(Crm::Salesforce),
        }
    }

    fn link(&self, integration: Crm) -> &Link {
        match integration {
            Crm::Hubspot => &self.crm_a,
            Crm::Salesforce => &self.crm_b,
        }
    }

    /// The credential to send to `integration` with, if it is connected.
    pub fn credential(&self, integration: Crm) -> Option<Credential> {
        self.link(integration)
            .credential
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether `integration` is connected.
    pub fn is_connected(&self, integration: Crm) -> bool {
        self.credential(integration).is_some()
    }

    /// Drops the credential for `integration`.
    pub fn disconnect(&self, integration: Crm) {
        let link = self.link(integration);
        *link.credential.write().unwrap_or_else(|e| e.into_inner()) = None;
        link.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Connects `integration` again with `credential`.
    pub fn connect(&self, integration: Crm, credential: Credential) {
        *self
            .link(integration)
            .credential
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Some(credential);
    }

    /// Where `integration` stands now; compare with [`Connections::unchanged_since`] later.
    pub fn generation(&self, integration: Crm) -> u64 {
        self.link(integration).generation.load(Ordering::SeqCst)
    }

    /// True when `integration` is connected and was not disconnected since `generation`.
    pub fn unchanged_since(&self, integration: Crm, generation: u64) -> bool {
        self.is_connected(integration) && self.generation(integration) == generation
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disconnect_drops_one_crms_credential_and_is_seen_by_calls_already_running() {
        let links = Connections::new(Credential::new("c"), &[]);
        let started = links.generation(Crm::Hubspot);
        links.disconnect(Crm::Hubspot);
        assert!(links.credential(Crm::Hubspot).is_none());
        assert!(links.credential(Crm::Salesforce).is_some());
        links.connect(Crm::Hubspot, Credential::new("c2"));
        assert!(links.is_connected(Crm::Hubspot));
        assert!(!links.unchanged_since(Crm::Hubspot, started));
        let now = links.generation(Crm::Hubspot);
        assert!(links.unchanged_since(Crm::Hubspot, now));
    }

    #[test]
    fn a_disconnect_kept_in_the_store_holds_from_the_start() {
        let links = Connections::new(Credential::new("c"), &[Crm::Salesforce]);
        assert!(links.is_connected(Crm::Hubspot));
        assert!(!links.is_connected(Crm::Salesforce));
    }
}
