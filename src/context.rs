//! What the host tells the core about a call. It never holds a credential.

/// The parts of the host's per-call context (the WIT `call-context`) the tools use. Its tenant
/// and user ids are left out: the host itself ties the credential, mapping store and results
/// directory to the tenant, and audits the user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallContext {
    /// CRM A scopes granted when the tenant authorized the connection.
    pub granted_scopes: Vec<String>,
    /// CRM B org URL, such as `https://acme.my.salesforce.com`.
    pub instance_url: Option<String>,
}
