//! The tenants file and token table, natively: hashes, providers, leeway, policies.

use super::*;
use crate::mcp::Authority;

const FILE: &str = r#"
    [[tenants]]
    id = "acme"
    [[tenants]]
    id = "globex"
    [[tokens]]
    sha256 = "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"
    tenant = "acme"
    user = "alice"
    [[tokens]]
    sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    tenant = "globex"
    user = "bob"
    scopes = ["crm.objects.deals.read"]
"#;

#[tokio::test]
async fn tokens_map_to_their_tenant_and_user_by_hash_only() {
    assert_eq!(
        token_hash("secret"),
        "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"
    );
    let file = TenantsFile::parse(FILE).unwrap();
    let table = file
        .tokens(&["oauth".into()], |t| {
            Some(format!("https://{}.example", t.id))
        })
        .unwrap();
    let alice = table.principal("secret").await.unwrap();
    assert_eq!(
        (alice.tenant_id.as_str(), alice.user_id.as_str()),
        ("acme", "alice")
    );
    assert_eq!(alice.granted_scopes, ["oauth"]);
    assert_eq!(alice.authority, Authority::Token(token_hash("secret")));
    let bob = table.principal("test").await.unwrap();
    assert_eq!(bob.tenant_id, "globex");
    assert_eq!(bob.granted_scopes, ["crm.objects.deals.read"]);
    assert!(table.principal("").await.is_none());
    assert!(
        table
            .principal("2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b")
            .await
            .is_none(),
        "the hash is not a token"
    );
}

#[tokio::test]
async fn a_table_changed_in_place_revokes_adds_and_unlists_one_at_a_time() {
    let file = TenantsFile::parse(FILE).unwrap();
    let table = file.tokens(&["oauth".into()], |_| None).unwrap();
    let shared = SharedTokens::from(table);
    let held = shared.current();
    assert!(
        held.remove_token(&token_hash("secret")),
        "alice's token was listed"
    );
    assert!(
        !held.remove_token(&token_hash("secret")),
        "and is no longer"
    );
    assert!(
        shared.current().principal("secret").await.is_none(),
        "revoked for every request from now on, in the table a request already holds too"
    );
    assert!(
        shared.current().principal("test").await.is_some(),
        "bob untouched"
    );
    let carol = TokenEntry {
        sha256: token_hash("carol-token").to_ascii_uppercase(),
        tenant: "acme".into(),
        user: "carol".into(),
        scopes: None,
    };
    held.set_token(&carol).unwrap();
    let principal = held.principal("carol-token").await.unwrap();
    assert_eq!(
        (principal.user_id.as_str(), principal.granted_scopes),
        ("carol", vec!["oauth".to_string()])
    );
    let stranger = TokenEntry {
        tenant: "initech".into(),
        ..carol
    };
    assert!(
        held.set_token(&stranger).unwrap_err().contains("initech"),
        "a token of a tenant not listed is refused"
    );
    held.remove_tenant("globex");
    assert!(
        held.principal("test").await.is_none(),
        "a token of an unlisted tenant admits nobody"
    );
    held.set_tenant("globex", Some("https://globex.example".into()));
    let bob = held.principal("test").await.unwrap();
    assert_eq!(bob.instance_url.as_deref(), Some("https://globex.example"));
}

#[test]
fn the_bearer_scheme_is_case_insensitive_and_needs_a_token() {
    assert_eq!(bearer("Bearer abc"), Some("abc"));
    assert_eq!(bearer("bearer abc"), Some("abc"));
    assert_eq!(bearer("BEARER  abc "), Some("abc"));
    assert_eq!(bearer("Basic abc"), None);
    assert_eq!(bearer("Bearer "), None);
    assert_eq!(bearer("Bearerabc"), None);
}

/// A test provider's Ed25519 key pair (made for these tests with openssl; signs nothing else).
const PRIVATE_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIOgpVW/WlUZCAUTqQ5QXQ3jIseGwFUbeH+I0rGt16JRz\n-----END PRIVATE KEY-----\n";
const PUBLIC_KEY: &str = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAa/jEcEttH55w7bzsx1y6KqNCA6WUbPq3elcUxVtBNVA=\n-----END PUBLIC KEY-----\n";

fn signed(claims: serde_json::Value) -> String {
    let key = jsonwebtoken::EncodingKey::from_ed_pem(PRIVATE_KEY.as_bytes()).unwrap();
    let header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
    jsonwebtoken::encode(&header, &claims, &key).unwrap()
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Two tenants, and one provider bound to acme only.
fn provider_file(extra: &str) -> String {
    format!(
        "[[tenants]]\nid = \"acme\"\n[[tenants]]\nid = \"globex\"\n\
         [[jwt]]\nissuer = \"https://auth.example\"\naudience = \"crm-mcp\"\n\
         algorithm = \"EdDSA\"\ntenants = [\"acme\"]\n\
         public_key_pem = '''{PUBLIC_KEY}'''\n{extra}"
    )
}

#[tokio::test]
async fn a_provider_signed_token_names_a_tenant_the_provider_is_bound_to() {
    let table = TenantsFile::parse(&provider_file(""))
        .unwrap()
        .tokens(&["oauth".into()], |_| None)
        .unwrap();
    assert!(
        table.issuers().is_empty(),
        "a stranger learns no issuer the operator did not advertise"
    );
    let advertised = TenantsFile::parse(&provider_file("advertised = true"))
        .unwrap()
        .tokens(&["oauth".into()], |_| None)
        .unwrap();
    assert_eq!(advertised.issuers(), ["https://auth.example"]);
    let exp = 4_102_444_800u64; // 2100-01-01
    let good = serde_json::json!({"iss": "https://auth.example", "aud": "crm-mcp", "exp": exp, "tenant": "acme", "sub": "carol"});
    let principal = table.principal(&signed(good.clone())).await.unwrap();
    assert_eq!(
        (principal.tenant_id.as_str(), principal.user_id.as_str()),
        ("acme", "carol")
    );
    assert_eq!(principal.granted_scopes, ["oauth"]);
    assert_eq!(
        principal.authority,
        Authority::Provider("https://auth.example".into())
    );
    for (field, value) in [
        ("aud", serde_json::json!("another-server")),
        ("iss", serde_json::json!("https://evil.example")),
        ("exp", serde_json::json!(1_000_000_000u64)),
        // globex is listed, but this provider may not mint it.
        ("tenant", serde_json::json!("globex")),
        ("tenant", serde_json::json!("initech")),
        ("nbf", serde_json::json!(now() + 3600)),
        ("sub", serde_json::json!("")),
    ] {
        let mut claims = good.clone();
        claims[field] = value.clone();
        assert!(
            table.principal(&signed(claims)).await.is_none(),
            "{field} = {value}"
        );
    }
    let mut unsigned = signed(good).rsplit_once('.').unwrap().0.to_string();
    unsigned.push_str(".AAAA");
    assert!(
        table.principal(&unsigned).await.is_none(),
        "a forged signature"
    );
}

#[tokio::test]
async fn clocks_a_little_apart_are_tolerated_within_the_leeway() {
    let table = TenantsFile::parse(&provider_file("leeway_seconds = 30\n"))
        .unwrap()
        .tokens(&[], |_| None)
        .unwrap();
    let claims = |exp: u64, nbf: u64| serde_json::json!({"iss": "https://auth.example", "aud": "crm-mcp", "exp": exp, "nbf": nbf, "tenant": "acme", "sub": "carol"});
    let t = now();
    let slightly_early = claims(t + 600, t + 10);
    assert!(table.principal(&signed(slightly_early)).await.is_some());
    let just_expired = claims(t - 10, t - 600);
    assert!(table.principal(&signed(just_expired)).await.is_some());
    let too_early = claims(t + 600, t + 120);
    assert!(table.principal(&signed(too_early)).await.is_none());
    let long_expired = claims(t - 120, t - 600);
    assert!(table.principal(&signed(long_expired)).await.is_none());
}

#[test]
fn a_provider_must_name_its_tenants_and_exactly_one_key_source() {
    let bound = "tenants = [\"acme\"]";
    let unbound = provider_file("").replace(&format!("{bound}\n"), "");
    assert!(
        TenantsFile::parse(&unbound)
            .unwrap_err()
            .contains("tenants")
    );
    let empty = provider_file("").replace(bound, "tenants = []");
    assert!(
        TenantsFile::parse(&empty)
            .unwrap_err()
            .contains("no tenants")
    );
    let unlisted = provider_file("").replace(bound, "tenants = [\"initech\"]");
    assert!(
        TenantsFile::parse(&unlisted)
            .unwrap_err()
            .contains("initech")
    );
    let jwks = "jwks_url = \"https://auth.example/jwks\"\n";
    let both = provider_file(jwks);
    assert!(
        TenantsFile::parse(&both)
            .unwrap_err()
            .contains("exactly one")
    );
    let jwks_only =
        provider_file(jwks).replace(&format!("public_key_pem = '''{PUBLIC_KEY}'''\n"), "");
    let parsed = TenantsFile::parse(&jwks_only).unwrap();
    assert!(
        parsed.tokens(&[], |_| None).is_err(),
        "a JWKS needs a backend to fetch it"
    );
}

#[test]
fn a_token_for_an_unlisted_tenant_or_a_bad_hash_is_refused() {
    let unknown = FILE.replace("tenant = \"globex\"", "tenant = \"initech\"");
    assert!(
        TenantsFile::parse(&unknown)
            .unwrap_err()
            .contains("initech")
    );
    let bad = FILE.replace("9f86d081", "zz");
    assert!(TenantsFile::parse(&bad).is_err());
    assert!(TenantsFile::parse("[[tenants]]\nid = \"a\"\ncolour = \"red\"").is_err());
}

#[test]
fn a_tenants_policy_table_becomes_its_policy_settings() {
    let file = TenantsFile::parse(
        "[[tenants]]\nid = \"acme\"\n[tenants.policy]\nread_only = false\n\
         crm_a_writable = [\"contacts\", \"notes\"]\ncrm_b_writable = []\n\
         masked_fields = [\"SSN__c\"]\nconfirm_writes = true\n",
    )
    .unwrap();
    let settings = file.tenants[0].policy.settings();
    let get = |k: &str| {
        settings
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(get("CRM_POLICY_CRM_A_WRITABLE"), Some("contacts,notes"));
    assert_eq!(get("CRM_POLICY_CRM_B_WRITABLE"), Some("none"));
    assert_eq!(get("CRM_POLICY_MASKED_FIELDS"), Some("SSN__c"));
    assert_eq!(get("CRM_POLICY_CONFIRM_WRITES"), Some("true"));
    assert_eq!(get("CRM_POLICY_MAX_RECORDS"), None);
    assert!(
        TenantsFile::parse("[[tenants]]\nid = \"acme\"\n[tenants.policy]\nreadonly = true\n")
            .is_err(),
        "a misspelt rule is refused, not ignored"
    );
}

#[test]
fn each_tenant_sets_who_confirms_its_writes() {
    let mode = |value: &str| {
        let text =
            format!("[[tenants]]\nid = \"acme\"\n[tenants.policy]\nconfirm_writes = {value}\n");
        TenantsFile::parse(&text).map(|file| {
            let settings = file.tenants[0].policy.settings();
            let setting = settings
                .iter()
                .find(|(k, _)| k == "CRM_POLICY_CONFIRM_WRITES")
                .map(|(_, v)| v.clone());
            // The host reads the same setting the component does.
            let policy = crate::governance::HostPolicy::from_settings(
                settings.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            )
            .unwrap();
            (setting, policy.confirm_writes, policy.confirm_by)
        })
    };
    use crm_plugin::policy::ConfirmBy;
    let on = |by| {
        Ok((
            Some(match by {
                ConfirmBy::Assistant => "true".to_string(),
                ConfirmBy::User => "user".to_string(),
                ConfirmBy::UserOrAssistant => "user-or-token".to_string(),
            }),
            true,
            by,
        ))
    };
    assert_eq!(
        mode("false"),
        Ok((Some("false".into()), false, ConfirmBy::Assistant))
    );
    assert_eq!(mode("true"), on(ConfirmBy::Assistant));
    assert_eq!(mode("\"token\""), on(ConfirmBy::Assistant));
    assert_eq!(mode("\"user\""), on(ConfirmBy::User));
    assert_eq!(mode("\"user-or-token\""), on(ConfirmBy::UserOrAssistant));
    let wrong = mode("\"always\"").unwrap_err();
    assert!(
        wrong.contains(r#"false, true, "token", "user" or "user-or-token""#),
        "{wrong}"
    );
    assert!(mode("1").is_err());
}

#[test]
fn what_holds_on_every_host_is_checked_when_the_file_is_read() {
    // So `tenants import` refuses it, rather than every host failing to apply it.
    let twice = format!("{FILE}[[tenants]]\nid = \"acme\"\n");
    assert!(
        TenantsFile::parse(&twice)
            .unwrap_err()
            .contains("\"acme\" is listed twice")
    );
    let same_token = FILE.replace(
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "2BB80D537B1DA3E38BD30361AA855686BDE0EACD7162FEF6A25FE97BF527A25B",
    );
    assert!(
        TenantsFile::parse(&same_token)
            .unwrap_err()
            .contains("listed twice")
    );
    let bad_key = provider_file("").replace("MCowBQYDK2VwAyEA", "AAAA");
    assert!(
        TenantsFile::parse(&bad_key)
            .unwrap_err()
            .contains("the public key of https://auth.example")
    );
    let plain_jwks = provider_file("jwks_url = \"http://auth.example/jwks\"\n")
        .replace(&format!("public_key_pem = '''{PUBLIC_KEY}'''\n"), "");
    assert!(
        TenantsFile::parse(&plain_jwks)
            .unwrap_err()
            .contains("must be https")
    );
}

/// A file of `count` tenants (every third with a policy table) and a token each, the
/// operator's table `admin_at` "start", "middle" or "end".
fn large_file(count: usize, admin_at: &str) -> String {
    let admin = format!("[admin]\nsha256 = \"{}\"\n", "a".repeat(64));
    let mut text = String::new();
    if admin_at == "start" {
        text += &admin;
    }
    for i in 0..count {
        text += &format!(
            "[[tenants]]\nid = \"t{i:06}\"\nproxy_base = \"https://broker.example.com\"\n\
             credential_env = \"CRED\"\n"
        );
        if i % 3 == 0 {
            text += "[tenants.policy]\nread_only = true\n";
        }
        if admin_at == "middle" && i == count / 2 {
            text += &admin;
        }
    }
    for i in 0..count {
        text += &format!(
            "[[tokens]]\nsha256 = \"{}\"\ntenant = \"t{i:06}\"\nuser = \"u{i}\"\n",
            token_hash(&format!("token-{i}"))
        );
    }
    if admin_at == "end" {
        text += &admin;
    }
    text
}

#[test]
fn a_large_file_parsed_in_halves_is_the_file_parsed_whole() {
    for admin_at in ["start", "middle", "end"] {
        let text = large_file(12_000, admin_at);
        assert!(text.len() > 1 << 20, "large enough to be cut");
        let halves = halves::parse(&text).expect("cut in two");
        let whole: TenantsFile = toml::from_str(&text).unwrap();
        assert_eq!(
            format!("{halves:?}"),
            format!("{whole:?}"),
            "admin at {admin_at}"
        );
        assert_eq!(halves.tenants.len(), 12_000);
        assert!(halves.admin.is_some());
    }
}

#[test]
fn a_large_file_the_halves_could_misread_is_parsed_whole_errors_and_all() {
    let large = large_file(12_000, "end");
    // The operator's table twice, a key given both inline and as tables, a multi-line string:
    // not cut (one parse, which refuses the first two with the file's own line numbers).
    let admin_twice = format!("[admin]\nsha256 = \"{}\"\n{large}", "b".repeat(64));
    let inline_too = format!("tokens = []\n{large}");
    let multi_line = large.replace("user = \"u7\"", "user = \"\"\"u7\"\"\"");
    for text in [&admin_twice, &inline_too, &multi_line] {
        assert!(halves::parse(text).is_none());
    }
    let refused = TenantsFile::parse(&admin_twice).unwrap_err();
    assert!(refused.contains("line"), "{refused}");
    assert!(TenantsFile::parse(&inline_too).is_err());
    assert_eq!(
        TenantsFile::parse(&multi_line).unwrap().tokens[7].user,
        "u7"
    );
    // A small file is never cut.
    assert!(halves::parse(FILE).is_none());
}

#[test]
fn a_json_tenants_file_reads_as_its_toml_twin_and_is_checked_alike() {
    let toml = TenantsFile::parse(&large_file(30, "middle")).unwrap();
    let as_value: serde_json::Value = toml::from_str(&large_file(30, "middle")).unwrap();
    let json = TenantsFile::parse(&format!("\n  {as_value:#}")).unwrap();
    assert_eq!(json.tenants, toml.tenants);
    assert_eq!(
        json.tokens.iter().map(|t| &t.sha256).collect::<Vec<_>>(),
        toml.tokens.iter().map(|t| &t.sha256).collect::<Vec<_>>()
    );
    assert_eq!(
        json.admin.map(|a| a.sha256),
        toml.admin.map(|a| a.sha256),
        "the operator's table too"
    );
    // The checks a TOML file gets, and an error that says where.
    let twice = r#"{"tenants": [{"id": "acme"}, {"id": "acme"}]}"#;
    assert!(
        TenantsFile::parse(twice)
            .unwrap_err()
            .contains("\"acme\" is listed twice")
    );
    let unknown = "{\"tenants\": [\n{\"id\": \"acme\", \"colour\": \"blue\"}]}";
    let why = TenantsFile::parse(unknown).unwrap_err();
    assert!(
        why.starts_with("JSON: unknown field `colour`") && why.contains("line 2"),
        "{why}"
    );
}
