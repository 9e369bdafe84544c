use super::*;

/// The policy the real component carries.
const SHIPPED: &str = include_str!("../../../src/egress-policy.toml");

fn shipped() -> Policy {
    Policy::parse(SHIPPED).expect("the shipped policy is accepted")
}

fn roots() -> Roots {
    Roots::new(
        &"https://broker.example.com".parse().unwrap(),
        [("CRM_A_INTEGRATION", "hubspot")],
    )
}

fn headers(names: &[(&str, &str)]) -> HeaderMap {
    names
        .iter()
        .map(|(k, v)| (HeaderName::try_from(*k).unwrap(), v.parse().unwrap()))
        .collect()
}

fn admit(tool: &str, method: &str, path: &str) -> Result<Admitted, Refusal> {
    admit_with(tool, method, path, &[("accept", "application/json")])
}

fn admit_with(
    tool: &str,
    method: &str,
    path: &str,
    extra: &[(&str, &str)],
) -> Result<Admitted, Refusal> {
    let uri: Uri = format!("https://broker.example.com{path}").parse().unwrap();
    let method = Method::from_bytes(method.as_bytes()).unwrap();
    shipped().admit(tool, &roots(), &method, &uri, &headers(extra))
}

const SF: &str = "/sdk/proxy/salesforce/services/data/v65.0";
const HS: &str = "/sdk/proxy/hubspot";

#[test]
fn what_the_tools_send_is_admitted() {
    for (tool, method, path) in [
        (
            "crma_list_owners",
            "GET",
            format!("{HS}/crm/v3/owners?limit=100&archived=false"),
        ),
        (
            "crma_sync_users",
            "GET",
            format!("{HS}/settings/v3/users/teams"),
        ),
        (
            "crma_get_record",
            "GET",
            format!("{HS}/crm/v3/objects/contacts/51?archived=true&properties=email"),
        ),
        (
            "crma_update_record",
            "PATCH",
            format!("{HS}/crm/v3/objects/0-1/51"),
        ),
        (
            "crma_create_association",
            "PUT",
            format!("{HS}/crm/v4/objects/contacts/5/associations/default/companies/6"),
        ),
        (
            "crmb_get_record",
            "GET",
            format!("{SF}/sobjects/Account/001000000000001AAA?fields=Name&fields=Industry"),
        ),
        (
            "crmb_run_soql_query",
            "GET",
            format!("{SF}/query?q=SELECT+Id+FROM+Account"),
        ),
        (
            "crmb_run_soql_query",
            "GET",
            format!("{SF}/query/01gD0000002HU6KIAW-2000"),
        ),
        (
            "crmb_update_record",
            "GET",
            "/sdk/proxy/salesforce/services/data/".to_string(),
        ),
        (
            "crmb_create_record",
            "POST",
            format!("{SF}/sobjects/Custom__c"),
        ),
    ] {
        let admitted = admit(tool, method, &path);
        assert!(admitted.is_ok(), "{tool} {method} {path}: {admitted:?}");
    }
    let integration = |path: &str| {
        admit("crmb_run_soql_query", "GET", path)
            .unwrap()
            .integration
    };
    assert_eq!(integration(&format!("{SF}/query?q=x")), Crm::Salesforce);
    assert!(
        !admit(
            "crmb_get_record",
            "GET",
            &format!("{SF}/sobjects/Account/001000000000001AAA")
        )
        .unwrap()
        .body_allowed
    );
}

#[test]
fn deletes_in_every_spelling_are_refused() {
    let id = "001000000000001AAA";
    for (tool, method, path, extra) in [
        (
            "crma_update_record",
            "DELETE",
            format!("{HS}/crm/v3/objects/contacts/51"),
            vec![],
        ),
        (
            "crma_update_record",
            "delete",
            format!("{HS}/crm/v3/objects/contacts/51"),
            vec![],
        ),
        (
            "crma_create_record",
            "POST",
            format!("{HS}/crm/v3/objects/contacts/batch/archive"),
            vec![],
        ),
        (
            "crma_create_record",
            "POST",
            format!("{HS}/crm/v3/objects/contacts/gdpr-delete"),
            vec![],
        ),
        (
            "crma_create_record",
            "POST",
            format!("{HS}/crm/v3/objects/batch"),
            vec![],
        ),
        (
            "crmb_create_record",
            "POST",
            format!("{SF}/sobjects/Account/{id}?_HttpMethod=DELETE"),
            vec![],
        ),
        (
            "crmb_update_record",
            "PATCH",
            format!("{SF}/sobjects/Account/{id}?%5FHttpMethod=DELETE"),
            vec![],
        ),
        (
            "crmb_update_record",
            "PATCH",
            format!("{SF}/sobjects/Account/{id}"),
            vec![("x-http-method-override", "DELETE")],
        ),
        (
            "crmb_create_record",
            "POST",
            format!("{SF}/composite"),
            vec![],
        ),
        (
            "crmb_create_record",
            "POST",
            format!("{SF}/composite/batch"),
            vec![],
        ),
        (
            "crmb_create_record",
            "POST",
            format!("{SF}/composite/sobjects"),
            vec![],
        ),
        (
            "crmb_run_soql_query",
            "GET",
            format!("{SF}/tooling/executeAnonymous?anonymousBody=x"),
            vec![],
        ),
        (
            "crmb_get_record",
            "GET",
            format!("/sdk/proxy/other-integration/services/data/v65.0/sobjects/Account/{id}"),
            vec![],
        ),
        (
            "crmb_update_record",
            "PATCH",
            format!("{SF}/sobjects/Account/../Contact/{id}"),
            vec![],
        ),
        (
            "crmb_update_record",
            "PATCH",
            format!("/sdk/proxy/salesforce/../other/services/data/v65.0/sobjects/Account/{id}"),
            vec![],
        ),
        (
            "crmb_update_record",
            "PATCH",
            format!("{SF}/sobjects/Account%2F{id}"),
            vec![],
        ),
        (
            "crmb_update_record",
            "PATCH",
            format!("{SF}//sobjects/Account/{id}"),
            vec![],
        ),
        (
            "crmb_update_record",
            "PATCH",
            format!("{SF}/sobjects/Account/{id};x=1"),
            vec![],
        ),
        (
            "crma_list_owners",
            "GET",
            format!("{HS}/crm/v3/owners?limit=1&hapikey=x"),
            vec![],
        ),
        (
            "crma_list_owners",
            "POST",
            format!("{HS}/crm/v3/owners"),
            vec![],
        ),
        (
            "crma_list_owners",
            "GET",
            format!("{HS}/crm/v3/objects/contacts/51"),
            vec![],
        ),
        (
            "crma_get_record",
            "GET",
            format!("{HS}/crm/v3/objects/contacts/51"),
            vec![("authorization", "Bearer x")],
        ),
    ] {
        let extra: Vec<(&str, &str)> = extra;
        let refused = admit_with(tool, method, &path, &extra);
        assert!(
            refused.is_err(),
            "{tool} {method} {path} {extra:?} was admitted"
        );
    }
    assert_eq!(
        admit("crma_update_record", "delete", &format!("{HS}/x")),
        Err(Refusal::Delete)
    );
    assert!(matches!(
        admit(
            "crma_list_owners",
            "GET",
            &format!("{HS}/crm/v3/objects/contacts/51")
        ),
        Err(Refusal::NotForTool { .. })
    ));
    assert_eq!(
        admit("crmb_get_record", "GET", "/sdk/proxy/other/x"),
        Err(Refusal::OtherIntegration)
    );
}

#[test]
fn a_component_with_a_dangerous_policy_is_refused() {
    let endpoint = |method: &str, path: &str, extra: &str| {
        format!(
            "version = 1\nheaders = [\"accept\"]\n[[endpoint]]\ncrm = \"crm-b\"\nmethod = \"{method}\"\n\
             path = \"{path}\"\ntools = [\"t\"]\n{extra}"
        )
    };
    for (text, why) in [
        (
            endpoint(
                "DELETE",
                "/services/data/{version}/sobjects/{object}/{sf_id}",
                "",
            ),
            "DELETE",
        ),
        (endpoint("delete", "/x", ""), "lower-case delete"),
        (
            endpoint("POST", "/services/data/{version}/composite", "body = true"),
            "composite",
        ),
        (
            endpoint(
                "POST",
                "/services/data/{version}/composite/batch",
                "body = true",
            ),
            "batch",
        ),
        (
            endpoint(
                "GET",
                "/services/data/{version}/tooling/executeAnonymous",
                "",
            ),
            "tooling",
        ),
        (
            endpoint("POST", "/services/apexrest/x", ""),
            "no: apexrest is not reserved, see below",
        ),
        (
            endpoint("POST", "/crm/v3/objects/{object}/batch/archive", ""),
            "archive",
        ),
        (
            endpoint("POST", "/crm/v3/objects/contacts/gdpr-delete", ""),
            "gdpr-delete",
        ),
        (
            endpoint("POST", "/../../other-integration/x", ""),
            "another integration",
        ),
        (
            endpoint("POST", "/x", "query = [\"_HttpMethod\"]"),
            "_HttpMethod",
        ),
        (endpoint("GET", "/x", "body = true"), "GET with a body"),
        (
            "version = 1\nheaders = [\"X-HTTP-Method-Override\"]\nendpoint = []".into(),
            "override header",
        ),
        ("version = 2\nheaders = []\nendpoint = []".into(), "version"),
    ] {
        let refused = Policy::parse(&text);
        if why.starts_with("no:") {
            assert!(refused.is_ok(), "{why}");
        } else {
            assert!(refused.is_err(), "{why} was accepted");
        }
    }
}

#[test]
fn the_policy_travels_in_a_custom_section() {
    let module = |sections: &[&str]| {
        let mut wasm = b"\0asm\x01\0\0\0".to_vec();
        for text in sections {
            let name = SECTION.as_bytes();
            let mut payload = vec![name.len() as u8];
            payload.extend_from_slice(name);
            payload.extend_from_slice(text.as_bytes());
            wasm.push(0);
            let mut len = payload.len();
            loop {
                let byte = (len & 0x7f) as u8;
                len >>= 7;
                wasm.push(if len == 0 { byte } else { byte | 0x80 });
                if len == 0 {
                    break;
                }
            }
            wasm.extend(payload);
        }
        wasm
    };
    assert!(Policy::from_component(&module(&[SHIPPED])).is_ok());
    assert_eq!(
        Policy::from_component(&module(&[])).unwrap_err(),
        PolicyError::Missing
    );
    assert_eq!(
        Policy::from_component(&module(&[SHIPPED, SHIPPED])).unwrap_err(),
        PolicyError::Several(2)
    );
}

#[test]
fn roots_follow_the_tenants_settings_and_proxy_base() {
    let roots = Roots::new(
        &"https://broker.example.com/base/".parse().unwrap(),
        [
            ("CRM_A_INTEGRATION", "hs-prod"),
            ("CRM_A_API_BASE", "v1/api"),
        ],
    );
    let uri: Uri = "https://broker.example.com/base/sdk/proxy/hs-prod/v1/api/crm/v3/owners"
        .parse()
        .unwrap();
    let admitted = shipped().admit(
        "crma_list_owners",
        &roots,
        &Method::GET,
        &uri,
        &HeaderMap::new(),
    );
    assert_eq!(admitted.unwrap().integration, Crm::Hubspot);
    let default_name: Uri = "https://broker.example.com/base/sdk/proxy/hubspot/crm/v3/owners"
        .parse()
        .unwrap();
    assert_eq!(
        shipped().admit(
            "crma_list_owners",
            &roots,
            &Method::GET,
            &default_name,
            &HeaderMap::new()
        ),
        Err(Refusal::OtherIntegration)
    );
}
