//! The connected account: `crma_get_account_details`, and `crma_generate_record_url`, which
//! builds record links from the account's portal id and UI domain.

use crate::config::{Config, hubspot_ui_domain};
use crate::crma::client::{self, Call};
use crate::crma::scopes::Operation;
use crate::crma::types::{ObjectType, RecordId, decode};
use crate::error::{Crm, CrmProblem, ToolError};
use crate::tool::{CrmEffect, NoInput, Session, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `GET /account-info/v3/details`
/// (<https://developers.hubspot.com/docs/api-reference/legacy/account/account-information/get-account-details>):
/// `{"portalId": 12345678, "accountType": "STANDARD", "timeZone": "US/Eastern",
/// "companyCurrency": "USD", "additionalCurrencies": [], "utcOffset": "-05:00",
/// "utcOffsetMilliseconds": -18000000, "uiDomain": "app.hubspot.com", "dataHostingLocation": "na1"}`.
///
/// HubSpot documents every field as required. `portalId` and `uiDomain` are required here:
/// record links are built from them. The rest are read as optional, as this tool always has
/// (answering null for a missing one): the component's own tests, unit and end to end, answer
/// with only some of them.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AccountDetails {
    portal_id: u64,
    ui_domain: String,
    account_type: Option<String>,
    time_zone: Option<String>,
    company_currency: Option<String>,
    additional_currencies: Option<Vec<String>>,
    utc_offset: Option<String>,
    data_hosting_location: Option<String>,
}

impl AccountDetails {
    /// The account's time zone as HubSpot names it (`US/Eastern`).
    pub(crate) fn time_zone(&self) -> Option<&str> {
        self.time_zone.as_deref()
    }

    /// The currency amounts are in (`USD`).
    pub(crate) fn company_currency(&self) -> Option<&str> {
        self.company_currency.as_deref()
    }

    /// The account's other currencies (`["EUR"]`): deals may be in any of them.
    pub(crate) fn additional_currencies(&self) -> &[String] {
        self.additional_currencies.as_deref().unwrap_or_default()
    }
}

/// Reads the account's details.
pub(crate) fn account_details(session: &mut Session<'_>) -> Result<AccountDetails, ToolError> {
    let answer = client::send(
        session,
        Call::get(
            Operation::AccountDetails,
            vec!["account-info", "v3", "details"],
            "account details",
        ),
    )?;
    decode(answer, "account details")
}

/// The account facts record links need, checked: a link must point at HubSpot, whatever the
/// answer says.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Account {
    portal_id: u64,
    /// A bare host under hubspot.com, e.g. `app-eu1.hubspot.com`.
    ui_domain: String,
}

impl TryFrom<AccountDetails> for Account {
    type Error = ToolError;
    fn try_from(details: AccountDetails) -> Result<Self, ToolError> {
        let Some(ui_domain) = hubspot_ui_domain(&details.ui_domain) else {
            return Err(CrmProblem::unexpected_answer(
                Crm::Hubspot,
                200,
                "account details: uiDomain is not a hubspot.com host",
            )
            .into());
        };
        Ok(Account {
            portal_id: details.portal_id,
            ui_domain,
        })
    }
}

impl Account {
    /// `https://{uiDomain}/contacts/{portalId}/record/{typeId}/{id}`.
    fn record_url(&self, type_id: &str, id: RecordId) -> String {
        format!(
            "https://{}/contacts/{}/record/{type_id}/{id}",
            self.ui_domain, self.portal_id
        )
    }
}

/// Record links for one call: the account's facts read once, then a link per record.
pub(crate) struct RecordLinks(Account);

impl RecordLinks {
    pub(crate) fn read(session: &mut Session<'_>) -> Result<Self, ToolError> {
        Ok(RecordLinks(Account::try_from(account_details(session)?)?))
    }

    /// The account the tenant's settings name, or else the one HubSpot's account details
    /// describe (one request): what the tools that link a few records use.
    pub(crate) fn known_or_read(session: &mut Session<'_>) -> Result<Self, ToolError> {
        match Self::configured(session.config()?) {
            Some(links) => Ok(links),
            None => Self::read(session),
        }
    }

    /// The links of the account the tenant's settings name, without asking HubSpot: what a
    /// search uses, so that a link per record costs no request.
    pub(crate) fn configured(config: &Config) -> Option<Self> {
        let portal = config.hubspot_portal.as_ref()?;
        Some(RecordLinks(Account {
            portal_id: portal.portal_id,
            ui_domain: portal.ui_domain.clone(),
        }))
    }

    /// The link that opens record `id` of `object_type`, for the standard types.
    pub(crate) fn url(&self, object_type: &ObjectType, id: &str) -> Option<String> {
        let id = RecordId::parse(id).ok()?;
        Some(self.0.record_url(object_type.type_id()?, id))
    }
}

/// What `crma_get_account_details` answers.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct AccountSummary {
    /// The account's id (Hub ID), part of every record link.
    portal_id: u64,
    /// STANDARD, SANDBOX, DEVELOPER_TEST or APP_DEVELOPER; null when HubSpot did not say.
    account_type: Option<String>,
    /// The account's time zone (e.g. America/New_York): read dates in it. Null when HubSpot did
    /// not say.
    time_zone: Option<String>,
    /// The currency amounts are in (e.g. USD); null when HubSpot did not say.
    company_currency: Option<String>,
    /// Further currencies the account uses; null when HubSpot did not say.
    additional_currencies: Option<Vec<String>>,
    /// The time zone's offset from UTC, e.g. -05:00; null when HubSpot did not say.
    utc_offset: Option<String>,
    /// The host HubSpot's web app runs on for this account, e.g. app-eu1.hubspot.com.
    ui_domain: String,
    /// Where the account's data is hosted, e.g. na1 or eu1; null when HubSpot did not say.
    data_hosting_location: Option<String>,
}

impl From<AccountDetails> for AccountSummary {
    fn from(a: AccountDetails) -> Self {
        AccountSummary {
            portal_id: a.portal_id,
            account_type: a.account_type,
            time_zone: a.time_zone,
            company_currency: a.company_currency,
            additional_currencies: a.additional_currencies,
            utc_offset: a.utc_offset,
            ui_domain: a.ui_domain,
            data_hosting_location: a.data_hosting_location,
        }
    }
}

/// `crma_get_account_details`.
pub(crate) struct GetAccountDetails;

impl Tool for GetAccountDetails {
    const NAME: &'static str = "crma_get_account_details";
    const DESCRIPTION: &'static str = "Get the connected HubSpot account's details: portal id, \
        account type, time zone, company currency, UI domain and data hosting location. Use the \
        time zone to read dates and the currency to read amounts.";
    const TITLE: &'static str = "Get HubSpot account details";
    const EFFECT: CrmEffect = CrmEffect::Reads;
    type Input = NoInput;
    type Output = AccountSummary;

    fn run(_: NoInput, session: &mut Session<'_>) -> Result<AccountSummary, ToolError> {
        account_details(session).map(AccountSummary::from)
    }
}

/// Input of `crma_generate_record_url`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RecordUrlInput {
    /// A standard type, or a custom type as 2-<id>.
    object_type: ObjectType,
    record_id: RecordId,
}

/// What `crma_generate_record_url` answers.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct RecordLink {
    /// The link that opens the record in HubSpot.
    url: String,
}

/// `crma_generate_record_url`.
pub(crate) struct GenerateRecordUrl;

impl Tool for GenerateRecordUrl {
    const NAME: &'static str = "crma_generate_record_url";
    const DESCRIPTION: &'static str = "Build the link that opens a HubSpot record in the \
        browser, from the account's portal id and UI domain. Give it to the user next to any \
        record you mention.";
    const TITLE: &'static str = "Link to a HubSpot record";
    const EFFECT: CrmEffect = CrmEffect::Reads;
    type Input = RecordUrlInput;
    type Output = RecordLink;

    fn run(input: RecordUrlInput, session: &mut Session<'_>) -> Result<RecordLink, ToolError> {
        let type_id = input.object_type.type_id().ok_or_else(|| {
            ToolError::invalid(format!(
                "record links need the custom type's id (2-<id>), not {}",
                input.object_type
            ))
        })?;
        let account = Account::try_from(account_details(session)?)?;
        Ok(RecordLink {
            url: account.record_url(type_id, input.record_id),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn account(answer: Value) -> Result<Account, ToolError> {
        Account::try_from(decode::<AccountDetails>(answer, "account details")?)
    }

    #[test]
    fn record_links_only_point_at_hubspot() {
        let account_eu = account(
            json!({"portalId": 12345678, "uiDomain": "app-eu1.hubspot.com", "timeZone": "Europe/Berlin"}),
        )
        .unwrap();
        assert_eq!(
            account_eu.record_url("0-3", RecordId::parse("987").unwrap()),
            "https://app-eu1.hubspot.com/contacts/12345678/record/0-3/987"
        );
        for hostile in [
            "evil.example.com",
            "hubspot.com.evil.example",
            "app.hubspot.com/phish",
            "app.hubspot.com:8080",
            "user@app.hubspot.com",
            "",
        ] {
            assert!(
                account(json!({"portalId": 1, "uiDomain": hostile})).is_err(),
                "{hostile}"
            );
        }
        assert!(account(json!({"portalId": "1", "uiDomain": "app.hubspot.com"})).is_err());
    }

    #[test]
    fn account_details_read_hubspots_answer_and_name_a_missing_field() {
        // The example answer of the account details guide (page cited on `AccountDetails`).
        let details: AccountDetails = decode(
            json!({"portalId": 123456, "accountType": "STANDARD", "timeZone": "US/Eastern",
                   "companyCurrency": "USD", "additionalCurrencies": ["EUR"],
                   "utcOffset": "-05:00", "utcOffsetMilliseconds": -18000000,
                   "uiDomain": "app.hubspot.com", "dataHostingLocation": "na1"}),
            "account details",
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(AccountSummary::from(details)).unwrap(),
            json!({"portal_id": 123456, "account_type": "STANDARD", "time_zone": "US/Eastern",
                   "company_currency": "USD", "additional_currencies": ["EUR"],
                   "utc_offset": "-05:00", "ui_domain": "app.hubspot.com",
                   "data_hosting_location": "na1"})
        );
        let err = account(json!({"uiDomain": "app.hubspot.com"})).unwrap_err();
        assert!(
            err.to_string().contains("missing field `portalId`"),
            "{err}"
        );
    }
}
