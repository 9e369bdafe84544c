//! A large tenants file parsed in two halves on two threads: a hundred thousand tenants make a
//! 22 MB file whose parse is most of a host's start. The file is cut just before an
//! array-of-tables header (`[[tenants]]` or `[[tokens]]` at the start of a line) near its
//! middle; each half is a TOML document of its own, and the two arrays of each kind, in order,
//! are what the whole file's would be. Anything that could make the halves differ from the
//! whole (a multi-line string, a top-level key that an array could also be given by, a half
//! that does not parse, an operator's table in both halves) falls back to one parse of the
//! whole file, which also words any error with the file's own line numbers.

use super::{AdminEntry, JwtIssuer, TenantEntry, TenantsFile, TokenEntry};
use serde::Deserialize;

/// Below this, one parse is quicker than starting a thread.
const LARGE: usize = 1 << 20;

/// One half of the file: any section may be missing from it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Half {
    tenants: Option<Vec<TenantEntry>>,
    #[serde(default)]
    tokens: Vec<TokenEntry>,
    #[serde(default)]
    jwt: Vec<JwtIssuer>,
    admin: Option<AdminEntry>,
}

/// The file parsed in two halves, when that is sure to equal one parse of the whole.
pub(super) fn parse(text: &str) -> Option<TenantsFile> {
    if text.len() < LARGE || text.contains("\"\"\"") || text.contains("'''") {
        return None;
    }
    // `tenants = [...]` beside `[[tenants]]` is an error in one document, not in two.
    let top_level_key = |line: &str| {
        ["tenants", "tokens", "jwt", "admin"]
            .iter()
            .any(|key| line.starts_with(key))
    };
    if text.lines().any(top_level_key) {
        return None;
    }
    let cut = cut_near_middle(text)?;
    let (first, second) = text.split_at(cut);
    let (first, second) = std::thread::scope(|scope| {
        let second = scope.spawn(|| toml::from_str::<Half>(second));
        (toml::from_str::<Half>(first), second.join())
    });
    let (first, second) = (first.ok()?, second.ok()?.ok()?);
    let Half {
        tenants,
        mut tokens,
        mut jwt,
        admin,
    } = first;
    if admin.is_some() && second.admin.is_some() {
        return None;
    }
    let tenants = match (tenants, second.tenants) {
        (None, None) => return None,
        (first, second) => [first, second]
            .into_iter()
            .flatten()
            .flatten()
            .map(std::sync::Arc::new)
            .collect(),
    };
    tokens.extend(second.tokens);
    jwt.extend(second.jwt);
    Some(TenantsFile {
        tenants,
        tokens,
        jwt,
        admin: admin.or(second.admin),
    })
}

/// Where a line `[[tenants]]` or `[[tokens]]` begins, the first at or after the middle.
fn cut_near_middle(text: &str) -> Option<usize> {
    let mut from = text.len() / 2;
    while let Some(at) = text[from..].find("\n[[") {
        let line = from + at + 1;
        let rest = &text[line..];
        if rest.starts_with("[[tenants]]") || rest.starts_with("[[tokens]]") {
            return Some(line);
        }
        from = line;
    }
    None
}
