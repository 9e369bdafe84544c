use super::*;
use crate::tenant_db::postgres::RegistryRead;

const FILE: &str = r#"
[[tenants]]
id = "acme"
proxy_base = "https://broker.example.com/"
credential_env = "ACME_CREDENTIAL"
instance_url = "https://acme.my.salesforce.com"
[tenants.policy]
masked_fields = ["contact.email"]
confirm_writes = "user"
max_records = 50

[[tenants]]
id = "globex"
proxy_base = "https://broker.example.com/"
credential_env = "GLOBEX_CREDENTIAL"
[tenants.policy]
confirm_writes = false

[[tokens]]
sha256 = "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08"
tenant = "acme"
user = "alice"
scopes = ["crm.objects.deals.read"]

[[tokens]]
sha256 = "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"
tenant = "globex"
user = "bob"

[admin]
sha256 = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
"#;

/// Rows as a store would give them back, all changed after version 0.
fn read_back(rows: Vec<RegistryRow>) -> RegistryRead {
    RegistryRead { version: 3, rows }
}

#[test]
fn a_file_split_into_rows_reads_back_as_the_same_file() {
    let file = TenantsFile::parse(FILE).unwrap();
    let rows = rows_of(&file);
    assert_eq!(
        rows.len(),
        5,
        "a row per tenant and token, one for the operator"
    );
    let token = rows.iter().find(|r| r.kind == RowKind::Token).unwrap();
    assert_eq!(
        token.key, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "a token's row is keyed by its lower-case hash, whatever case the file used"
    );
    let back = file_of(read_back(rows.clone())).unwrap();
    assert_eq!(back.tenants, file.tenants);
    assert_eq!(
        rows_of(&back),
        rows,
        "the same rows again: an import of an export changes nothing"
    );
    // And the export, as TOML or JSON, is a tenants file that reads back the same.
    for format in [FileFormat::Toml, FileFormat::Json] {
        let text = text_of(&back, format).unwrap();
        assert_eq!(
            crate::mcp::tenants::is_json(&text),
            format == FileFormat::Json
        );
        let exported = TenantsFile::parse(&text).unwrap();
        assert_eq!(exported.tenants, file.tenants, "{format:?}");
        assert_eq!(rows_of(&exported), rows, "{format:?}");
    }
}

#[test]
fn an_export_is_json_when_its_file_name_says_so() {
    use std::path::Path;
    assert_eq!(FileFormat::of_path(Path::new("t.json")), FileFormat::Json);
    assert_eq!(FileFormat::of_path(Path::new("T.JSON")), FileFormat::Json);
    assert_eq!(FileFormat::of_path(Path::new("t.toml")), FileFormat::Toml);
    assert_eq!(FileFormat::of_path(Path::new("tenants")), FileFormat::Toml);
}

#[test]
fn an_unreadable_row_spoils_only_itself() {
    let file = TenantsFile::parse(FILE).unwrap();
    let mut rows = rows_of(&file);
    let globex = rows.iter_mut().find(|r| r.key == "globex").unwrap();
    globex.document = Some(r#"{"id":"globex","colour":"blue"}"#.into());
    let change = change_of(read_back(rows));
    let states: Vec<(&str, &str)> = change
        .tenants
        .iter()
        .map(|(id, row)| {
            let state = match row {
                Row::Set(_) => "set",
                Row::Removed => "removed",
                Row::Unreadable(why) if why.contains("colour") => "unreadable",
                Row::Unreadable(_) => "unreadable without why",
            };
            (id.as_str(), state)
        })
        .collect();
    assert_eq!(states, [("acme", "set"), ("globex", "unreadable")]);
    assert_eq!(change.tokens.len(), 2);
    assert!(matches!(change.admin, Some(Row::Set(_))));
    assert!(
        file_of(read_back(change_rows_for_export())).is_err(),
        "an export refuses a registry it cannot read whole"
    );
}

/// A registry with one row this crm-host cannot read.
fn change_rows_for_export() -> Vec<RegistryRow> {
    vec![RegistryRow {
        kind: RowKind::Tenant,
        key: "acme".into(),
        document: Some(r#"{"id":"acme","format":2}"#.into()),
    }]
}

#[test]
fn a_removed_row_and_a_row_under_another_key_are_told_apart() {
    let change = change_of(read_back(vec![
        RegistryRow {
            kind: RowKind::Token,
            key: "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752".into(),
            document: None,
        },
        RegistryRow {
            kind: RowKind::Tenant,
            key: "acme".into(),
            document: Some(r#"{"id":"globex"}"#.into()),
        },
    ]));
    assert!(matches!(change.tokens[0].1, Row::Removed));
    assert!(
        matches!(&change.tenants[0].1, Row::Unreadable(why) if why.contains("keyed")),
        "a row whose entry names another tenant is not served as either: {:?}",
        change.tenants[0].1
    );
}

#[test]
fn many_rows_read_in_halves_are_read_as_one_reading_would() {
    let mut text = String::new();
    for i in 0..3_000 {
        text += &format!("[[tenants]]\nid = \"t{i:05}\"\n");
    }
    for i in 0..3_000 {
        let hash = crate::mcp::tenants::token_hash(&format!("token-{i}"));
        text += &format!("[[tokens]]\nsha256 = \"{hash}\"\ntenant = \"t{i:05}\"\nuser = \"u\"\n");
    }
    text +=
        "[admin]\nsha256 = \"2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae\"\n";
    let rows = rows_of(&TenantsFile::parse(&text).unwrap());
    let change = change_of(read_back(rows.clone()));
    assert_eq!(change.version, 3);
    let tenants: Vec<&str> = change.tenants.iter().map(|(id, _)| id.as_str()).collect();
    let expected: Vec<String> = (0..3_000).map(|i| format!("t{i:05}")).collect();
    assert_eq!(tenants, expected, "every tenant, in the rows' order");
    assert_eq!(change.tokens.len(), 3_000);
    assert!(
        matches!(change.admin, Some(Row::Set(_))),
        "the operator's row, in the second half"
    );
    let back = file_of(read_back(rows.clone())).unwrap();
    assert_eq!(rows_of(&back), rows);
}
