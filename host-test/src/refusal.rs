//! `egress`: why the host kept a request from leaving. The hooks refuse with `wasi:http`'s
//! `HTTP-request-denied` and keep the reason here for the component to ask about, so a request
//! the host held back is never mistaken for one the CRM answered (a made-up `503` to a create
//! read as "sent, outcome unknown" was exactly that mistake).

use crate::bindings::crm::plugin::egress as wit;
use crate::egress::Crm;
use crate::pacing::Paced;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wasmtime::component::HasData;
use wasmtime_wasi_http::Error as HttpError;

/// A request the host kept in, and why. Nothing of it was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostRefusal {
    /// The account has no room within the longest wait; room again after this long.
    Paced(Duration),
    /// The fleet's store, which paces and journals, does not answer.
    StoreAway(String),
    /// The operator disconnected the CRM for this workspace.
    Disconnected(Crm),
    /// Not the tenant's broker, or not allowed to the tool by the egress policy.
    Denied(String),
}

impl From<Paced> for HostRefusal {
    fn from(paced: Paced) -> Self {
        match paced {
            Paced::Busy(wait) => HostRefusal::Paced(wait),
            Paced::Store(err) => HostRefusal::StoreAway(err.to_string()),
        }
    }
}

fn crm_name(crm: Crm) -> &'static str {
    match crm {
        Crm::Hubspot => "HubSpot",
        Crm::Salesforce => "Salesforce",
    }
}

impl From<HostRefusal> for wit::Refusal {
    fn from(refusal: HostRefusal) -> Self {
        match refusal {
            HostRefusal::Paced(wait) => {
                wit::Refusal::Paced(u32::try_from(wait.as_secs().max(1)).unwrap_or(u32::MAX))
            }
            HostRefusal::StoreAway(err) => wit::Refusal::HostUnavailable(format!(
                "the fleet's shared store, which paces and journals this workspace's CRM \
                 requests, does not answer ({err})"
            )),
            HostRefusal::Disconnected(crm) => wit::Refusal::Disconnected(format!(
                "{name} was disconnected for this workspace by its operator. Reconnect {name} in \
                 the workspace's integration settings",
                name = crm_name(crm)
            )),
            HostRefusal::Denied(why) => wit::Refusal::Denied(why),
        }
    }
}

/// One call's latest refusal, kept between the hooks that make it and the component that asks.
#[derive(Debug, Clone, Default)]
pub struct RefusalSlot(Arc<Mutex<Option<HostRefusal>>>);

impl RefusalSlot {
    /// Keeps `refusal` for the component and answers the request with the error that says
    /// "the host denied it": the request never left.
    pub fn refuse(&self, refusal: HostRefusal) -> HttpError {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(refusal);
        HttpError::HttpRequestDenied
    }

    /// The latest refusal, once.
    pub fn take(&self) -> Option<HostRefusal> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// The `egress` capability, for the linker: its host data is the call's [`RefusalSlot`].
pub(crate) struct Egress;

impl HasData for Egress {
    type Data<'a> = &'a RefusalSlot;
}

impl wit::Host for &RefusalSlot {
    fn take_refusal(&mut self) -> Option<wit::Refusal> {
        self.take().map(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_told_once_and_as_the_host_made_it() {
        let slot = RefusalSlot::default();
        assert!(slot.take().is_none());
        let err = slot.refuse(HostRefusal::Paced(Duration::from_millis(2_500)));
        assert!(matches!(err, HttpError::HttpRequestDenied));
        let mut view = &slot;
        assert!(matches!(
            wit::Host::take_refusal(&mut view),
            Some(wit::Refusal::Paced(2))
        ));
        assert!(wit::Host::take_refusal(&mut view).is_none(), "told once");
        slot.refuse(HostRefusal::Disconnected(Crm::Salesforce));
        assert!(matches!(
            slot.take().map(wit::Refusal::from),
            Some(wit::Refusal::Disconnected(m)) if m.contains("Salesforce was disconnected")
        ));
    }
}
