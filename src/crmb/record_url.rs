//! Links that open a record in the Salesforce web interface.

use super::ids::{ApiName, SalesforceId};
use crate::error::ToolError;
use url::Url;

/// The org's instance URL (`https://{MyDomain}.my.salesforce.com`), checked once per call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceUrl(Url);

impl InstanceUrl {
    /// Parses the instance URL the host passes in the call context.
    pub fn parse(text: &str) -> Result<Self, ToolError> {
        let bad = |why: &str| {
            ToolError::NotConnected(format!(
                "the Salesforce org URL {text:?} {why}; reconnect Salesforce in the workspace's \
                 integration settings so the org URL is known"
            ))
        };
        let url = Url::parse(text.trim()).map_err(|_| bad("is not a URL"))?;
        if url.scheme() != "https" || url.host_str().is_none() {
            return Err(bad("is not an https URL"));
        }
        if !matches!(url.path(), "" | "/") || url.query().is_some() || url.fragment().is_some() {
            return Err(bad("must be the org's base URL with no path"));
        }
        Ok(InstanceUrl(url))
    }

    /// From the optional context field when links are optional: absent gives `None`, a
    /// malformed one is still an error.
    pub fn if_known(instance_url: Option<&str>) -> Result<Option<Self>, ToolError> {
        instance_url.map(InstanceUrl::parse).transpose()
    }

    /// From the optional context field, saying what to do when it is absent.
    pub fn from_context(instance_url: Option<&str>) -> Result<Self, ToolError> {
        match instance_url {
            Some(text) => InstanceUrl::parse(text),
            None => Err(ToolError::NotConnected(
                "the Salesforce org URL is not known for this workspace; reconnect Salesforce in \
                 the integration settings"
                    .into(),
            )),
        }
    }

    /// The Lightning record page for My Domain hosts (`x.my.salesforce.com` →
    /// `x.lightning.force.com`, sandboxes included); `{instance}/{Id}` for any other host,
    /// which Salesforce redirects to the record.
    pub fn record_url(&self, object: &ApiName, id: &SalesforceId) -> Url {
        let host = self.0.host_str().unwrap_or_default();
        let lightning = host
            .strip_suffix(".my.salesforce.com")
            .filter(|domain| !domain.is_empty())
            .map(|domain| format!("https://{domain}.lightning.force.com"));
        let mut url = match lightning {
            Some(base) => Url::parse(&base).expect("a host from a parsed URL is valid"),
            None => self.0.clone(),
        };
        {
            let mut path = url.path_segments_mut().expect("https URLs have paths");
            path.clear();
            if url_is_lightning(host) {
                path.extend(["lightning", "r", object.as_str(), id.as_str(), "view"]);
            } else {
                path.push(id.as_str());
            }
        }
        url
    }
}

fn url_is_lightning(instance_host: &str) -> bool {
    instance_host
        .strip_suffix(".my.salesforce.com")
        .is_some_and(|domain| !domain.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url_for(instance: &str, object: &str, id: &str) -> String {
        InstanceUrl::parse(instance)
            .unwrap()
            .record_url(
                &ApiName::parse(object).unwrap(),
                &SalesforceId::parse(id).unwrap(),
            )
            .to_string()
    }

    #[test]
    fn my_domain_gives_a_lightning_url() {
        assert_eq!(
            url_for(
                "https://acme.my.salesforce.com",
                "Account",
                "001000000000001AAA"
            ),
            "https://acme.lightning.force.com/lightning/r/Account/001000000000001AAA/view"
        );
        assert_eq!(
            url_for(
                "https://acme.my.salesforce.com/",
                "Invoice__c",
                "a01000000000001"
            ),
            "https://acme.lightning.force.com/lightning/r/Invoice__c/a01000000000001/view"
        );
    }

    #[test]
    fn sandboxes_keep_their_sandbox_domain() {
        assert_eq!(
            url_for(
                "https://acme--uat.sandbox.my.salesforce.com",
                "Opportunity",
                "006000000000001"
            ),
            "https://acme--uat.sandbox.lightning.force.com/lightning/r/Opportunity/006000000000001/view"
        );
    }

    #[test]
    fn other_hosts_fall_back_to_the_id_path() {
        assert_eq!(
            url_for("https://na139.salesforce.com", "Account", "001000000000001"),
            "https://na139.salesforce.com/001000000000001"
        );
        assert_eq!(
            url_for("https://my.salesforce.com", "Account", "001000000000001"),
            "https://my.salesforce.com/001000000000001"
        );
    }

    #[test]
    fn bad_instance_urls_ask_to_reconnect() {
        for bad in [
            "acme.my.salesforce.com",
            "http://acme.my.salesforce.com",
            "https://acme.my.salesforce.com/x?y=1",
            "",
        ] {
            assert!(
                matches!(InstanceUrl::parse(bad), Err(ToolError::NotConnected(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            InstanceUrl::from_context(None),
            Err(ToolError::NotConnected(_))
        ));
    }
}
