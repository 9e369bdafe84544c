//! The tool listing as data: every tool's spec and metadata in one JSON document,
//! `src/schema/listing.json`, that the build deflates into the component's
//! `crm-plugin:tool-listing` custom section (`build.rs`). The host reads that section to answer
//! `tools/list` before it has compiled a line of the component; this test keeps the document
//! exactly what `list-tools` and `list-tool-metadata` return.
//!
//! Format (version 1): `{"version": 1, "tools": [{name, title, description, input_schema,
//! output_schema, read_only, annotations: {read_only, destructive, idempotent, open_world}}]}`,
//! in `list-tools` order, each schema as the exact JSON text the exports return.

use super::list_tools;
use serde_json::{Value, json};

/// Where the checked-in listing is.
const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/schema/listing.json");

/// The listing document for the tools this build offers.
fn render() -> String {
    let tools: Vec<Value> = list_tools()
        .into_iter()
        .map(|spec| {
            json!({
                "name": spec.name,
                "title": spec.title,
                "description": spec.description,
                "input_schema": spec.input_schema,
                "output_schema": spec.output_schema,
                "read_only": spec.read_only,
                "annotations": {
                    "read_only": spec.annotations.read_only,
                    "destructive": spec.annotations.destructive,
                    "idempotent": spec.annotations.idempotent,
                    "open_world": spec.annotations.open_world,
                },
            })
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&json!({"version": 1, "tools": tools}))
        .expect("a listing serialises");
    text.push('\n');
    text
}

#[test]
fn checked_in_schema_listing_is_what_the_exports_return() {
    let derived = render();
    if std::env::var_os("UPDATE_SCHEMAS").is_some() {
        std::fs::write(PATH, &derived).unwrap();
    }
    let checked_in = std::fs::read_to_string(PATH).unwrap_or_default();
    assert!(
        checked_in == derived,
        "{PATH} is not what list-tools returns; if the change is intended, run \
         `UPDATE_SCHEMAS=1 cargo test -p crm-plugin --lib schema` (twice: the schemas first) \
         and review the diff"
    );
}

#[test]
fn the_listing_names_every_tool_once_in_order() {
    let listing: Value = serde_json::from_str(&render()).unwrap();
    let names: Vec<&str> = listing["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    let expected: Vec<&str> = list_tools().iter().map(|spec| spec.name).collect();
    assert_eq!(names, expected);
    assert_eq!(listing["version"], 1);
}
