//! The tenants registry's rows as a host writes and reads them: a tenants file split into rows
//! (one per tenant, one per token, one for the identity providers, one for the operator), each
//! a JSON document of the file's own entry; and rows read back, as a [`Change`] to apply.
//!
//! A row this host cannot read (written by a newer crm-host, or by hand) spoils only itself:
//! its tenant is out of service here, its token admits nobody, unreadable providers or
//! operator are turned off (fail closed); every other row still applies.

use crate::mcp::tenants::{AdminEntry, JwtIssuer, TenantEntry, TenantsFile, TokenEntry};
use crate::tenant_db::postgres::{RegistryRead, RegistryRow, RowKind};
use std::sync::Arc;

/// One row as read: its entry, removed, or unreadable here (with why).
#[derive(Debug)]
pub(crate) enum Row<T> {
    Set(T),
    Removed,
    Unreadable(String),
}

/// The rows changed up to a registry version (every row, read from version 0).
#[derive(Debug, Default)]
pub(crate) struct Change {
    pub(crate) version: i64,
    pub(crate) tenants: Vec<(String, Row<Arc<TenantEntry>>)>,
    /// By the token's lower-case hex SHA-256.
    pub(crate) tokens: Vec<(String, Row<TokenEntry>)>,
    pub(crate) jwt: Option<Row<Vec<JwtIssuer>>>,
    pub(crate) admin: Option<Row<AdminEntry>>,
}

impl Change {
    /// The tenants it lists (for what kind of host serves them).
    pub(crate) fn listed(&self) -> impl Iterator<Item = &TenantEntry> {
        self.tenants.iter().filter_map(|(_, row)| match row {
            Row::Set(entry) => Some(&**entry),
            _ => None,
        })
    }
}

fn document(entry: &impl serde::Serialize) -> String {
    serde_json::to_string(entry).expect("a tenants file's entry serializes")
}

/// A checked tenants file as the registry's rows.
pub(crate) fn rows_of(file: &TenantsFile) -> Vec<RegistryRow> {
    let row = |kind, key: &str, document| RegistryRow {
        kind,
        key: key.to_owned(),
        document: Some(document),
    };
    let mut rows: Vec<RegistryRow> = file
        .tenants
        .iter()
        .map(|t| row(RowKind::Tenant, &t.id, document(&**t)))
        .collect();
    rows.extend(file.tokens.iter().map(|t| {
        let sha256 = t.sha256.to_ascii_lowercase();
        let token = TokenEntry {
            sha256: sha256.clone(),
            tenant: t.tenant.clone(),
            user: t.user.clone(),
            scopes: t.scopes.clone(),
        };
        row(RowKind::Token, &sha256, document(&token))
    }));
    if !file.jwt.is_empty() {
        rows.push(row(RowKind::Jwt, "", document(&file.jwt)));
    }
    if let Some(admin) = &file.admin {
        rows.push(row(RowKind::Admin, "", document(admin)));
    }
    rows
}

fn read<T: serde::de::DeserializeOwned>(row: &RegistryRow) -> Row<T> {
    match &row.document {
        None => Row::Removed,
        Some(text) => serde_json::from_str(text).map_or_else(
            |e| {
                Row::Unreadable(format!(
                    "this host cannot read its registry row ({e}): upgrade it to the crm-host \
                     that wrote the row, or import a file it reads"
                ))
            },
            Row::Set,
        ),
    }
}

/// Rows read from the registry, as a change to apply. Many rows (a host starting on a
/// registry of a hundred thousand tenants) are read in two halves on two threads.
pub(crate) fn change_of(read_rows: RegistryRead) -> Change {
    const HALVED_FROM: usize = 4_096;
    let mut rows = read_rows.rows;
    let mut change = if rows.len() < HALVED_FROM {
        change_of_rows(rows)
    } else {
        let second = rows.split_off(rows.len() / 2);
        let first = rows;
        let (mut first, second) = std::thread::scope(|scope| {
            let second = scope.spawn(|| change_of_rows(second));
            let first = change_of_rows(first);
            (
                first,
                second
                    .join()
                    .unwrap_or_else(|e| std::panic::resume_unwind(e)),
            )
        });
        first.tenants.extend(second.tenants);
        first.tokens.extend(second.tokens);
        first.jwt = second.jwt.or(first.jwt);
        first.admin = second.admin.or(first.admin);
        first
    };
    change.version = read_rows.version;
    change
}

/// [`change_of`] for some of the rows, in order (each row's key moved, not copied).
fn change_of_rows(rows: Vec<RegistryRow>) -> Change {
    let mut change = Change::default();
    for row in rows {
        match row.kind {
            RowKind::Tenant => {
                let entry = match read::<TenantEntry>(&row) {
                    Row::Set(entry) if entry.id != row.key => Row::Unreadable(format!(
                        "its registry row is keyed {:?} but names tenant {:?}: import the \
                         tenants file again",
                        row.key, entry.id
                    )),
                    Row::Set(entry) => Row::Set(Arc::new(entry)),
                    Row::Removed => Row::Removed,
                    Row::Unreadable(why) => Row::Unreadable(why),
                };
                change.tenants.push((row.key, entry));
            }
            RowKind::Token => {
                let token = read(&row);
                change.tokens.push((row.key, token));
            }
            RowKind::Jwt => change.jwt = Some(read(&row)),
            RowKind::Admin => change.admin = Some(read(&row)),
        }
    }
    change
}

/// Every live row as a tenants file, checked as an import checks one (for `tenants export`).
pub(crate) fn file_of(read_rows: RegistryRead) -> Result<TenantsFile, String> {
    let change = change_of(read_rows);
    let unreadable = |what: &str, why: &str| format!("{what}: {why}");
    let mut file = TenantsFile {
        tenants: Vec::new(),
        tokens: Vec::new(),
        jwt: Vec::new(),
        admin: None,
    };
    for (id, row) in change.tenants {
        match row {
            Row::Set(entry) => file.tenants.push(entry),
            Row::Removed => {}
            Row::Unreadable(why) => return Err(unreadable(&format!("tenant {id:?}"), &why)),
        }
    }
    for (sha256, row) in change.tokens {
        match row {
            Row::Set(token) => file.tokens.push(token),
            Row::Removed => {}
            Row::Unreadable(why) => return Err(unreadable(&format!("token {sha256}"), &why)),
        }
    }
    match change.jwt {
        Some(Row::Set(jwt)) => file.jwt = jwt,
        Some(Row::Unreadable(why)) => return Err(unreadable("the identity providers", &why)),
        _ => {}
    }
    match change.admin {
        Some(Row::Set(admin)) => file.admin = Some(admin),
        Some(Row::Unreadable(why)) => return Err(unreadable("the operator", &why)),
        _ => {}
    }
    // The order a file lists things in: tenants by id, then tokens by tenant and user.
    file.tenants.sort_by(|a, b| a.id.cmp(&b.id));
    file.tokens
        .sort_by(|a, b| (&a.tenant, &a.user, &a.sha256).cmp(&(&b.tenant, &b.user, &b.sha256)));
    TenantsFile::check(file)
}

/// How a tenants file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileFormat {
    Toml,
    /// For files a program writes or reads: a large one parses about ten times faster.
    Json,
}

impl FileFormat {
    /// The format a file's name asks for: JSON for `.json`, TOML otherwise.
    pub(crate) fn of_path(path: &std::path::Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some(ext) if ext.eq_ignore_ascii_case("json") => FileFormat::Json,
            _ => FileFormat::Toml,
        }
    }
}

/// A tenants file as text in `format`, which [`TenantsFile::parse`] reads back the same.
pub(crate) fn text_of(file: &TenantsFile, format: FileFormat) -> Result<String, String> {
    #[derive(serde::Serialize)]
    struct Written<'a> {
        tenants: Vec<&'a TenantEntry>,
        #[serde(skip_serializing_if = "<[_]>::is_empty")]
        tokens: &'a [TokenEntry],
        #[serde(skip_serializing_if = "<[_]>::is_empty")]
        jwt: &'a [JwtIssuer],
        #[serde(skip_serializing_if = "Option::is_none")]
        admin: &'a Option<AdminEntry>,
    }
    let written = Written {
        tenants: file.tenants.iter().map(|t| &**t).collect(),
        tokens: &file.tokens,
        jwt: &file.jwt,
        admin: &file.admin,
    };
    match format {
        FileFormat::Toml => toml::to_string(&written).map_err(|e| e.to_string()),
        FileFormat::Json => serde_json::to_string_pretty(&written)
            .map(|mut text| {
                text.push('\n');
                text
            })
            .map_err(|e| e.to_string()),
    }
}

#[cfg(test)]
mod tests;
