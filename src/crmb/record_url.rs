//! Links that open a record in the Salesforce web interface.

use super::ids::{ApiName, CanonicalId, SalesforceId};
use crate::error::ToolError;
use url::Url;

/// The context's org URL when one was given: a blank one counts as none, as a launcher that
/// fills an optional setting left empty passes `--instance-url=` (an MCP Bundle's does).
fn given(instance_url: Option<&str>) -> Option<&str> {
    instance_url.filter(|text| !text.trim().is_empty())
}

/// The org's instance URL (`https://{MyDomain}.my.salesforce.com`), checked once per call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceUrl {
    /// Where record pages open: the Lightning host for a My Domain org, else the instance.
    /// Worked out once, not per record: a query page links up to 2,000 of them.
    record_base: Url,
    /// Whether `record_base` is a Lightning host (`/lightning/r/{object}/{id}/view` paths).
    lightning: bool,
    /// The instance itself, `https://{host}/`: `{instance}/{Id}` opens any record.
    instance: String,
}

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
        let lightning = lightning_host(url.host_str().unwrap_or_default()).map(|host| {
            Url::parse(&format!("https://{host}")).expect("a host from a parsed URL is valid")
        });
        Ok(InstanceUrl {
            lightning: lightning.is_some(),
            instance: url.to_string(),
            record_base: lightning.unwrap_or(url),
        })
    }

    /// From the optional context field when links are optional: absent gives `None`, a
    /// malformed one is still an error.
    pub fn if_known(instance_url: Option<&str>) -> Result<Option<Self>, ToolError> {
        given(instance_url).map(InstanceUrl::parse).transpose()
    }

    /// From the optional context field, saying what to do when it is absent.
    pub fn from_context(instance_url: Option<&str>) -> Result<Self, ToolError> {
        match given(instance_url) {
            Some(text) => InstanceUrl::parse(text),
            None => Err(ToolError::NotConnected(
                "the Salesforce org URL is not known for this workspace; reconnect Salesforce in \
                 the integration settings"
                    .into(),
            )),
        }
    }

    /// The Lightning record page for My Domain hosts (`x.my.salesforce.com` →
    /// `x.lightning.force.com`, sandboxes and other partitions included; Government Cloud Plus
    /// `x.my.salesforce.mil` → `x.lightning.crmforce.mil`); `{instance}/{Id}` for any other
    /// host, which Salesforce redirects to the record.
    pub fn record_url(&self, object: &ApiName, id: &SalesforceId) -> Url {
        let mut url = self.record_base.clone();
        {
            let mut path = url.path_segments_mut().expect("https URLs have paths");
            path.clear();
            if self.lightning {
                path.extend(["lightning", "r", object.as_str(), id.as_str(), "view"]);
            } else {
                path.push(id.as_str());
            }
        }
        url
    }
}

impl InstanceUrl {
    /// `https://{instance}/{Id}`: Salesforce opens the record from it, redirecting to its
    /// Lightning page (the fallback the spec's record URL facts name for any instance host).
    /// Half the length of the Lightning link, for the rows of a query answer.
    pub fn short_record_url(&self, id: &SalesforceId) -> String {
        let mut url = String::with_capacity(self.instance.len() + id.as_str().len());
        self.push_short_record_url(id.borrowed(), &mut url);
        url
    }

    /// As [`InstanceUrl::short_record_url`], written at the end of `out`: a page's rows are
    /// linked without a string allocated per row.
    pub fn push_short_record_url(&self, id: CanonicalId<'_>, out: &mut String) {
        out.push_str(&self.instance);
        out.push_str(id.as_str());
    }
}

/// My Domain API hosts and the Lightning hosts their records open on (Salesforce Help, "My
/// Domain URL Formats"; the `.mil` pair is Government Cloud Plus).
const LIGHTNING_DOMAINS: &[(&str, &str)] = &[
    (".my.salesforce.com", ".lightning.force.com"),
    (".my.salesforce.mil", ".lightning.crmforce.mil"),
];

/// The Lightning host for a My Domain host, or `None` for any other host.
fn lightning_host(instance_host: &str) -> Option<String> {
    LIGHTNING_DOMAINS.iter().find_map(|(api, lightning)| {
        instance_host
            .strip_suffix(api)
            .filter(|domain| !domain.is_empty())
            .map(|domain| format!("{domain}{lightning}"))
    })
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

    /// Government Cloud Plus orgs live on `.my.salesforce.mil` and open records on
    /// `.lightning.crmforce.mil` (Salesforce Help, "My Domain URL Formats"; the same pairs
    /// are in Salesforce's own CLI, sfdx-core `sfdcUrl.ts`).
    #[test]
    fn government_cloud_plus_links_open_on_crmforce_mil() {
        assert_eq!(
            url_for(
                "https://agency.my.salesforce.mil",
                "Case",
                "500000000000001AAA"
            ),
            "https://agency.lightning.crmforce.mil/lightning/r/Case/500000000000001AAA/view"
        );
        assert_eq!(
            url_for(
                "https://agency--uat.sandbox.my.salesforce.mil",
                "Account",
                "001000000000001"
            ),
            "https://agency--uat.sandbox.lightning.crmforce.mil/lightning/r/Account/001000000000001/view"
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
    fn short_links_are_the_instance_and_the_id() {
        let id = SalesforceId::parse("001000000000001AAA").unwrap();
        for instance in [
            "https://acme.my.salesforce.com",
            "https://acme.my.salesforce.com/",
        ] {
            assert_eq!(
                InstanceUrl::parse(instance).unwrap().short_record_url(&id),
                "https://acme.my.salesforce.com/001000000000001AAA"
            );
        }
        let sandbox = InstanceUrl::parse("https://acme--uat.sandbox.my.salesforce.com").unwrap();
        assert_eq!(
            sandbox.short_record_url(&id),
            "https://acme--uat.sandbox.my.salesforce.com/001000000000001AAA"
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

    #[test]
    fn a_blank_instance_url_in_the_context_is_an_unknown_one() {
        for blank in ["", "  "] {
            assert_eq!(InstanceUrl::if_known(Some(blank)), Ok(None), "{blank:?}");
            let Err(ToolError::NotConnected(message)) = InstanceUrl::from_context(Some(blank))
            else {
                panic!("{blank:?} gave a URL");
            };
            assert!(message.contains("is not known"), "{message}");
        }
        assert!(InstanceUrl::if_known(Some("acme")).is_err());
    }
}
