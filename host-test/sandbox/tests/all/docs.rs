//! What the documentation and the packaging say about the tools is the real tool list: what
//! the host lists on the sandbox (plus the MCP layer's own `crm_read_result_file`). The
//! top-level README's tools table is regenerated from it; the MCP Bundle's manifest lists the
//! same tools with the same first sentences; the reference's table names each of the
//! component's tools once; and every "N tools" in either README is the real count.

use crate::fixtures::acme_sandbox;

/// The README at the repository root (this file is `host-test/sandbox/tests/all/docs.rs`).
const README: &str = include_str!("../../../../README.md");
/// The reference, `host-test/README.md`.
const HOST_README: &str = include_str!("../../../README.md");
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

    // The reference says how many of the component's tools a client gets besides the file
    // reader: the sentence must be there, with the real number.
    let sentence = format!("the {} tools{plus}", component.len());
    assert!(
        HOST_README.contains(&sentence),
        "host-test/README.md should say \"{sentence}\" (What a client gets)"
    );
    for (file, text) in [("README.md", README), ("host-test/README.md", HOST_README)] {
        for (number, after) in tool_counts(text) {
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

    // The reference's table says more about each of the component's tools: one row each.
    let table = HOST_README
        .split_once("\n## Tools\n")
        .and_then(|(_, rest)| rest.split_once("\n| tool | does |\n"))
        .map(|(_, rest)| rest)
        .expect("host-test/README.md has a \"## Tools\" section with a \"| tool | does |\" table");
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
        "host-test/README.md's Tools table should have one row for each of the component's tools"
    );
}
