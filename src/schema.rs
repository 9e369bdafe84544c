//! JSON Schemas (draft 2020-12) for tool inputs, derived from the Rust input types so that
//! what the model is told and what the parser accepts cannot drift apart.

use schemars::{JsonSchema, Schema, json_schema};

/// The input schema of a tool, as the JSON text `list-tools` returns: what the tool accepts.
pub(crate) fn input_schema<T: JsonSchema>() -> String {
    root_schema::<T>(schemars::generate::Contract::Deserialize)
}

/// The output schema of a tool (MCP's `outputSchema`): what the tool's answer looks like.
pub(crate) fn output_schema<T: JsonSchema>() -> String {
    root_schema::<T>(schemars::generate::Contract::Serialize)
}

fn root_schema<T: JsonSchema>(contract: schemars::generate::Contract) -> String {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.contract = contract;
    let schema = settings.into_generator().root_schema_for::<T>();
    serde_json::to_string(&schema).expect("a schema serializes")
}

/// A string schema with a pattern, for validated newtypes.
pub(crate) fn string_schema(pattern: &str, description: &str) -> Schema {
    json_schema!({
        "type": "string",
        "pattern": pattern,
        "description": description,
    })
}
