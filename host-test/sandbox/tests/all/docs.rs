//! The top-level README's tools table is the real tool list: regenerated here from what the
//! host lists on the sandbox (plus the MCP layer's own `crm_read_result_file`) and compared
//! with the table between the README's markers.

use crate::fixtures::acme_sandbox;

/// The README at the repository root (this file is `host-test/sandbox/tests/all/docs.rs`).
const README: &str = include_str!("../../../../README.md");

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_tools_table_is_the_real_tool_list() {
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
    let table = render(rows);

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
