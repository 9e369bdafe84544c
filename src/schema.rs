//! JSON Schemas (draft 2020-12) for tool inputs, derived from the Rust input types so that
//! what the model is told and what the parser accepts cannot drift apart.

use schemars::{JsonSchema, Schema, json_schema};

/// The input schema of a tool, as the JSON text `list-tools` returns.
pub fn input_schema<T: JsonSchema>() -> String {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let schema = generator.root_schema_for::<T>();
    serde_json::to_string(&schema).expect("a schema serializes")
}

/// A string schema with a pattern, for validated newtypes.
pub fn string_schema(pattern: &str, description: &str) -> Schema {
    json_schema!({
        "type": "string",
        "pattern": pattern,
        "description": description,
    })
}
