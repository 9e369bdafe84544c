//! What the documentation and the packaging say is what the code does. The tools: what the
//! host lists on the sandbox (plus the MCP layer's own `crm_read_result_file`); the top-level
//! README's tools table is regenerated from it; the MCP Bundle's manifest lists the same tools
//! with the same first sentences; `docs/tools.md`'s table names each of the component's tools
//! once; and every "N tools" in the READMEs and `docs/` is the real count. The other tables
//! in `docs/` that list things the code defines are checked against it: the egress table
//! (generated from the shipped policy), the component's settings and their defaults, the
//! policy settings (each also a `[tenants.policy]` key) and `serve`'s limits (flag, variable
//! and default). And the documents stay short and their links resolve: every file in
//! `docs/` under 400 lines, the top-level README under 200, every relative link (and its
//! `#anchor`) pointing at a file and heading that exist.

use crate::fixtures::acme_sandbox;
use std::path::{Path, PathBuf};

/// The README at the repository root (this file is `host-test/sandbox/tests/all/docs.rs`).
const README: &str = include_str!("../../../../README.md");
/// The MCP Bundle's manifest (`packaging/mcpb/build.sh` packs it).
const MANIFEST: &str = include_str!("../../../../packaging/mcpb/manifest.json");

const BEGIN: &str =
    "<!-- tools table: generated from crm-sandbox tools; checked by tests/all/docs.rs -->";
const END: &str = "<!-- end of tools table -->";

/// A description's first sentence: up to and including the first period followed by a space,
/// or the whole text when there is none. The period of an "e.g. " or "i.e. " ends no sentence.
fn first_sentence(description: &str) -> &str {
    let mut from = 0;
    while let Some(at) = description[from..].find(". ") {
        let end = from + at + 1;
        let sentence = &description[..end];
        if sentence.ends_with("e.g.") || sentence.ends_with("i.e.") {
            from = end;
            continue;
        }
        return sentence;
    }
    description
}

/// The table as the README shows it: one row per tool, sorted by name.
fn render(mut rows: Vec<(String, bool, String)>) -> String {
    rows.sort();
    let mut table = String::from("| Tool | Read-only | What it does |\n|---|---|---|\n");
    for (name, read_only, description) in rows {
        let does = first_sentence(&description)
            .replace('\n', " ")
            .replace('|', "\\|");
        let read_only = if read_only { "yes" } else { "no" };
        table.push_str(&format!("| `{name}` | {read_only} | {does} |\n"));
    }
    table
}

#[test]
fn a_first_sentence_ends_at_a_period_and_a_space_but_not_at_an_abbreviation() {
    assert_eq!(first_sentence("Do this. Then that."), "Do this.");
    assert_eq!(
        first_sentence("Link two (e.g. a deal and a contact). More."),
        "Link two (e.g. a deal and a contact)."
    );
    assert_eq!(first_sentence("Only one sentence."), "Only one sentence.");
    assert_eq!(first_sentence("No period"), "No period");
}

/// Every tool a client lists, as (name, read-only, description), sorted by name: the
/// component's and the MCP layer's `crm_read_result_file`.
async fn listed_tools() -> Vec<(String, bool, String)> {
    let (host, _acme) = acme_sandbox();
    let mut rows: Vec<(String, bool, String)> = host
        .list_tools("acme")
        .await
        .unwrap()
        .into_iter()
        .map(|spec| (spec.name, spec.read_only, spec.description))
        .collect();
    // `crm_read_result_file` is not the component's: the MCP layer adds it to every listing.
    let read = crm_host::mcp::files::read_tool(crm_host::answer_form::AnswerForm::Structured);
    rows.push((
        read.name.to_string(),
        read.annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false),
        read.description.as_deref().unwrap_or_default().to_string(),
    ));
    rows.sort();
    rows
}

/// The MCP layer's own tool, listed beside the component's.
const READ_RESULT_FILE: &str = "crm_read_result_file";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_tools_table_is_the_real_tool_list() {
    let table = render(listed_tools().await);

    let paste = format!("{BEGIN}\n{table}{END}");
    let Some(begin) = README.find(BEGIN) else {
        panic!("the README has no tools table; add this:\n{paste}\n");
    };
    let start = begin + BEGIN.len();
    let Some(length) = README[start..].find(END) else {
        panic!("the README's tools table has no end marker; use this:\n{paste}\n");
    };
    let current = &README[start..start + length];
    assert!(
        current.trim() == table.trim(),
        "the README's tools table is stale; replace it (markers included) with:\n{paste}\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bundle_manifest_lists_every_tool_with_its_first_sentence() {
    let expected: Vec<serde_json::Value> = listed_tools()
        .await
        .into_iter()
        .map(|(name, _, description)| {
            serde_json::json!({
                "name": name,
                "description": first_sentence(&description).replace('\n', " "),
            })
        })
        .collect();
    let manifest: serde_json::Value =
        serde_json::from_str(MANIFEST).expect("packaging/mcpb/manifest.json is JSON");
    let paste = serde_json::to_string_pretty(&expected).unwrap();
    assert_eq!(
        manifest["tools"],
        serde_json::Value::Array(expected),
        "packaging/mcpb/manifest.json's tools are stale; replace its \"tools\" with:\n{paste}\n"
    );
}

/// Every "N tools" in a text, with what follows it (to tell "N tools plus ..." apart).
fn tool_counts(text: &str) -> Vec<(usize, &str)> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices(" tools") {
        let before = &text[..at];
        let digits = before.len() - before.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            continue;
        }
        let number = before[before.len() - digits..].parse().unwrap();
        found.push((number, &text[at + " tools".len()..]));
    }
    found
}

#[test]
fn tool_counts_are_found_with_what_follows_them() {
    let found = tool_counts("All 30 tools. The 29 tools plus one; tools, 3tools.");
    assert_eq!(
        found,
        vec![
            (30, ". The 29 tools plus one; tools, 3tools."),
            (29, " plus one; tools, 3tools.")
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_count_in_the_readmes_is_the_real_one() {
    let listed = listed_tools().await;
    let total = listed.len();
    // Sorted by name, as `listed` is.
    let component: Vec<&str> = listed
        .iter()
        .map(|(name, _, _)| name.as_str())
        .filter(|name| *name != READ_RESULT_FILE)
        .collect();
    let plus = format!(" plus `{READ_RESULT_FILE}`");

    // The operators' guide says how many of the component's tools a client gets besides the
    // file reader: the sentence must be there, with the real number.
    let operators = read("docs/operators.md");
    let sentence = format!("the {} tools{plus}", component.len());
    assert!(
        operators.contains(&sentence),
        "docs/operators.md should say \"{sentence}\" (What a client gets)"
    );
    for (file, text) in markdown_files() {
        for (number, after) in tool_counts(&text) {
            let (expected, what) = if after.starts_with(&plus) {
                (component.len(), "the component's tools")
            } else {
                (total, "the tools a client lists")
            };
            assert_eq!(
                number,
                expected,
                "{file} says \"{number} tools{}\": {what} are {expected}",
                after.chars().take(30).collect::<String>()
            );
        }
    }

    // docs/tools.md's table says more about each of the component's tools: one row each.
    let tools = read("docs/tools.md");
    let table = tools
        .split_once("\n## Tools\n")
        .and_then(|(_, rest)| rest.split_once("\n| tool | does |\n"))
        .map(|(_, rest)| rest)
        .expect("docs/tools.md has a \"## Tools\" section with a \"| tool | does |\" table");
    let mut rows: Vec<&str> = table
        .lines()
        .skip(1) // |---|---|
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            line.trim_start_matches("| `")
                .split_once('`')
                .map_or(line, |(name, _)| name)
        })
        .collect();
    rows.sort_unstable();
    assert_eq!(
        rows, component,
        "docs/tools.md's Tools table should have one row for each of the component's tools"
    );
}

/// The repository's root (this crate is `host-test/sandbox`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A file of the repository, by its path from the root.
fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The Markdown files whose links, counts and lengths are checked, as (path from the root,
/// text): the top-level README, the host's pointer and every file in `docs/`.
fn markdown_files() -> Vec<(String, String)> {
    let mut paths = vec!["README.md".to_string(), "host-test/README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    docs.sort();
    paths.extend(docs);
    paths
        .into_iter()
        .map(|path| {
            let text = read(&path);
            (path, text)
        })
        .collect()
}

/// The lines of a Markdown text outside fenced code blocks.
fn prose_lines(text: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            lines.push(line);
        }
    }
    lines
}

/// A heading's anchor as GitHub makes it: lower case, spaces to `-`, every other character
/// but letters, digits, `-` and `_` dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Every anchor a Markdown text's headings give, a repeated one also with GitHub's `-1`, `-2`.
fn anchors(text: &str) -> Vec<String> {
    let mut seen = std::collections::HashMap::<String, usize>::new();
    let mut found = Vec::new();
    for line in prose_lines(text) {
        let hashes = line.len() - line.trim_start_matches('#').len();
        if hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = anchor(&line[hashes..]);
        let count = seen.entry(base.clone()).or_default();
        found.push(if *count == 0 {
            base
        } else {
            format!("{base}-{count}")
        });
        *count += 1;
    }
    found
}

/// Every inline link target `[text](target)` in a Markdown text, outside code.
fn links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in prose_lines(text) {
        // Drop code spans: a link inside backticks is no link.
        let mut outside = String::new();
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                outside.push_str(part);
            }
        }
        let mut rest = outside.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            found.push(after[..end].trim().to_string());
            rest = &after[end..];
        }
    }
    found
}

#[test]
fn anchors_follow_githubs_rules() {
    assert_eq!(
        anchor("What the host lets out: the egress policy"),
        "what-the-host-lets-out-the-egress-policy"
    );
    assert_eq!(
        anchor("Where the vendors differ from `../shared/spec`"),
        "where-the-vendors-differ-from-sharedspec"
    );
    assert_eq!(
        anchor("Use it from an assistant (MCP)"),
        "use-it-from-an-assistant-mcp"
    );
    assert_eq!(
        anchors("# A\n## A\n```\n# not a heading\n```\n### A\n"),
        ["a", "a-1", "a-2"]
    );
    assert_eq!(
        links("see [x](a.md#b), `[not](c.md)` and [y](https://e.com)"),
        ["a.md#b", "https://e.com"]
    );
}

#[test]
fn the_documents_stay_short() {
    for (path, text) in markdown_files() {
        let lines = text.lines().count();
        let limit = match path.as_str() {
            "README.md" => 200,
            "host-test/README.md" => 40,
            _ => 400,
        };
        assert!(
            lines < limit,
            "{path} has {lines} lines; keep it under {limit} (split it)"
        );
    }
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let mut broken = Vec::new();
    for (path, text) in markdown_files() {
        let dir = Path::new(&path).parent().unwrap().to_path_buf();
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, fragment) = match target.split_once('#') {
                Some((file, fragment)) => (file, Some(fragment)),
                None => (target.as_str(), None),
            };
            let resolved = if file.is_empty() {
                path.clone()
            } else {
                dir.join(file).to_string_lossy().into_owned()
            };
            let full = root().join(&resolved);
            if !full.exists() {
                broken.push(format!("{path}: ({target}): {resolved} does not exist"));
                continue;
            }
            if let Some(fragment) = fragment {
                if !resolved.ends_with(".md") {
                    broken.push(format!(
                        "{path}: ({target}): an anchor into a file that is not Markdown"
                    ));
                    continue;
                }
                let heads = anchors(&std::fs::read_to_string(&full).unwrap());
                if !heads.iter().any(|a| a == fragment) {
                    broken.push(format!(
                        "{path}: ({target}): {resolved} has no heading #{fragment}"
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The rows of the Markdown table whose header line is `after` in `text`, each as its cells.
fn table_after(text: &str, after: &str) -> Vec<Vec<String>> {
    let at = text
        .find(after)
        .unwrap_or_else(|| panic!("no {after:?} in the text"));
    text[at..]
        .lines()
        .map(str::trim)
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2) // the header and |---|
        .map(|line| {
            line.trim_matches('|')
                .split(" | ")
                .map(|cell| cell.trim().to_string())
                .collect()
        })
        .collect()
}

/// The `CRM_...` names a Rust source defines as `pub const NAME: &str = "CRM_...";`.
fn defined_names(source: &str) -> Vec<String> {
    let mut names: Vec<String> = source
        .lines()
        .filter_map(|line| line.trim().strip_prefix("pub const "))
        .filter_map(|rest| rest.split_once(": &str = \"").map(|(_, value)| value))
        .filter_map(|value| value.split_once('"').map(|(name, _)| name.to_string()))
        .filter(|name| name.starts_with("CRM_"))
        .collect();
    names.sort();
    names
}

#[test]
fn the_egress_table_is_the_shipped_policy() {
    let Ok(policy) = crm_host::egress::Policy::parse(&read("src/egress-policy.toml")) else {
        panic!("src/egress-policy.toml is not a valid policy");
    };
    let table = policy.markdown_table();
    assert!(
        read("docs/security.md").contains(&table),
        "regenerate docs/security.md's egress table from src/egress-policy.toml:\n{table}"
    );
}

#[test]
fn the_settings_table_is_every_setting_the_component_reads() {
    let text = read("docs/contributors.md");
    let mut documented: Vec<String> = table_after(&text, "| variable | meaning | default |")
        .into_iter()
        .map(|row| row[0].trim_matches('`').to_string())
        .collect();
    documented.sort();
    assert_eq!(
        documented,
        defined_names(&read("src/config.rs")),
        "docs/contributors.md's settings table (Embedding the component) should list each of \
         src/config.rs's keys once"
    );
}

#[test]
fn the_settings_tables_defaults_are_the_components() {
    use crm_plugin::config::{Config, DEFAULT_CRM_B_API_VERSION, keys};
    let base = ("CRM_PROXY_BASE", "https://broker.example.com");
    let Ok(config) = Config::from_vars([base, (keys::CRM_A_PORTAL_ID, "1")]) else {
        panic!("the default configuration is accepted");
    };
    let portal = config
        .hubspot_portal
        .as_ref()
        .expect("a portal id was given");
    let limits = &config.limits;
    let results = &config.results;
    let expected: Vec<(&str, String)> = vec![
        (keys::CRM_A_INTEGRATION, config.crm_a_integration.clone()),
        (keys::CRM_A_UI_DOMAIN, portal.ui_domain.clone()),
        (keys::CRM_B_INTEGRATION, config.crm_b_integration.clone()),
        (
            keys::CRM_B_API_VERSION,
            DEFAULT_CRM_B_API_VERSION.to_string(),
        ),
        (
            keys::HTTP_TIMEOUT_MS,
            limits.http_timeout.as_millis().to_string(),
        ),
        (
            keys::MAX_RESPONSE_BYTES,
            limits.max_response_bytes.to_string(),
        ),
        (keys::READ_ATTEMPTS, limits.read_attempts.to_string()),
        (
            keys::RETRY_BASE_MS,
            limits.retry_base.as_millis().to_string(),
        ),
        (
            keys::MAX_RETRY_WAIT_MS,
            limits.max_retry_wait.as_millis().to_string(),
        ),
        (keys::INLINE_MAX_BYTES, results.inline_max_bytes.to_string()),
        (
            keys::FILE_THRESHOLD_RECORDS,
            results.file_threshold_records.to_string(),
        ),
        (keys::FILE_MAX_RECORDS, results.file_max_records.to_string()),
    ];
    assert!(
        config.crm_a_api_base.is_empty(),
        "CRM_A_API_BASE's default is empty"
    );
    let text = read("docs/contributors.md");
    let rows = table_after(&text, "| variable | meaning | default |");
    for (name, default) in expected {
        let row = rows
            .iter()
            .find(|row| row[0] == format!("`{name}`"))
            .unwrap_or_else(|| panic!("docs/contributors.md's settings table has no {name}"));
        assert_eq!(
            row[2],
            format!("`{default}`"),
            "docs/contributors.md's settings table gives {name} a default the component does not"
        );
    }
}

#[test]
fn the_policy_table_is_every_policy_setting() {
    let text = read("docs/governed-writes.md");
    let mut documented = Vec::new();
    for row in table_after(&text, "| setting | effect |") {
        for name in row[0].split(" / ") {
            let name = name.trim_matches('`');
            // `_CRM_B_PROVENANCE` after `CRM_POLICY_CRM_A_PROVENANCE` shortens the prefix.
            documented.push(if name.starts_with('_') {
                format!("CRM_POLICY{name}")
            } else {
                name.to_string()
            });
        }
    }
    documented.sort();
    let defined = defined_names(&read("src/policy.rs"));
    assert_eq!(
        documented, defined,
        "docs/governed-writes.md's policy table should list each of src/policy.rs's settings once"
    );
    // Each is also a key of a tenant's `[tenants.policy]` table.
    let tenants = read("host-test/src/mcp/tenants.rs");
    let entry = tenants
        .split_once("pub struct PolicyEntry {")
        .and_then(|(_, rest)| rest.split_once('}'))
        .map(|(fields, _)| fields)
        .expect("host-test/src/mcp/tenants.rs defines PolicyEntry");
    for name in &defined {
        let key = name.trim_start_matches("CRM_POLICY_").to_lowercase();
        assert!(
            entry.contains(&format!("pub {key}:")),
            "{name} has no `{key}` in a tenant's [tenants.policy] (PolicyEntry)"
        );
    }
}

#[test]
fn the_limits_table_names_serves_real_flags_and_defaults() {
    let text = read("docs/operators.md");
    let serve = read("host-test/src/cli/serve.rs");
    // The limits per principal, and the stores' (many tenants on one host).
    let rows: Vec<Vec<String>> = [
        "| flag (environment) | default | what happens past it |",
        "| flag (environment) | default | what it bounds |",
    ]
    .iter()
    .flat_map(|header| {
        let rows = table_after(&text, header);
        assert!(!rows.is_empty(), "docs/operators.md has no table {header}");
        rows
    })
    .collect();
    for row in rows {
        // Each flag is followed by its variable: "`--flag` (`CRM_HOST_...`)".
        let cell = &row[0];
        let mut pairs = 0;
        for part in cell.split("`--").skip(1) {
            let (flag, rest) = part.split_once('`').unwrap();
            let env = rest
                .split_once("(`")
                .and_then(|(_, rest)| rest.split_once('`'))
                .map(|(env, _)| env)
                .unwrap_or_else(|| panic!("--{flag} has no variable in the limits table"));
            let arg = format!("env = \"{env}\"");
            let at = serve
                .find(&arg)
                .unwrap_or_else(|| panic!("serve has no flag reading {env}"));
            let field_line = serve[at..]
                .lines()
                .map(str::trim)
                .find(|line| !line.starts_with("#[") && line.ends_with(',') && line.contains(": "))
                .unwrap();
            let field = field_line
                .split_once(':')
                .map(|(name, _)| name.trim_start_matches("pub ").to_string())
                .unwrap();
            assert_eq!(
                field.replace('_', "-"),
                flag,
                "the limits table names --{flag} with {env}, but serve reads {env} as --{}",
                field.replace('_', "-")
            );
            // The default column gives each flag's default, in the same order.
            let arg_text = &serve[at..serve[at..].find(field_line).map_or(at, |end| at + end)];
            let default = arg_text
                .split_once("default_value_t = ")
                .map(|(_, rest)| {
                    rest.split(|c: char| c == ')' || c == ',' || c.is_whitespace())
                        .next()
                        .unwrap()
                })
                .unwrap_or_else(|| panic!("--{flag} has no default_value_t in serve"));
            let default = resolve_constant(default);
            let documented = numbers(&row[1]);
            assert_eq!(
                documented.get(pairs).copied(),
                Some(default),
                "the limits table's default for --{flag} is not serve's ({default})"
            );
            pairs += 1;
        }
        assert!(pairs > 0, "a limits row names no flag: {cell}");
    }
}

/// The whole numbers in a text, in order.
fn numbers(text: &str) -> Vec<u64> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter(|part| !part.is_empty())
        .map(|part| part.parse().unwrap())
        .collect()
}

/// A default as written in `#[arg(default_value_t = ...)]`: a number, or the name of a
/// `pub const NAME: usize = N;` in `host-test/src/mcp/http/limits.rs`.
fn resolve_constant(value: &str) -> u64 {
    if let Ok(number) = value.trim_end_matches(".0").parse() {
        return number;
    }
    let limits = read("host-test/src/mcp/http/limits.rs");
    let declaration = format!("pub const {value}: usize = ");
    limits
        .split_once(&declaration)
        .and_then(|(_, rest)| rest.split_once(';'))
        .and_then(|(number, _)| number.trim().replace('_', "").parse().ok())
        .unwrap_or_else(|| panic!("{value} is not a number or a constant of limits.rs"))
}
