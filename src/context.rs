//! Who a call is for, as the host passes it. It never holds a credential.

/// The host's per-call context (the WIT `call-context`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallContext {
    pub tenant_id: String,
    pub user_id: String,
    /// CRM A scopes granted when the tenant authorized the connection.
    pub granted_scopes: Vec<String>,
    /// CRM B org URL, such as `https://acme.my.salesforce.com`.
    pub instance_url: Option<String>,
}
