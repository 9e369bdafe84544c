//! JSON Schemas (draft 2020-12) of tool inputs and outputs.
//!
//! They are derived from the Rust types with schemars, so what the model is told and what the
//! parser accepts cannot drift apart, but the derivation runs in the unit tests, not in the
//! component: schemars' generator and the per-type schema code were about a sixth of the
//! component's bytes, to compute the same constant text on every start. The derived text is
//! checked in as [`generated`]; a test derives every schema again and fails when the checked-in
//! copy differs (`UPDATE_SCHEMAS=1 cargo test -p crm-plugin --lib schema` rewrites it).

use schemars::{Schema, json_schema};

#[rustfmt::skip]
mod generated;
#[cfg(test)]
mod portable_input;

/// The checked-in `(input, output)` schemas of the tool named `name`, as the JSON text
/// `list-tools` and `list-tool-metadata` return.
pub(crate) fn of(name: &str) -> Option<(&'static str, &'static str)> {
    generated::SCHEMAS
        .iter()
        .find(|(tool, _, _)| *tool == name)
        .map(|&(_, input, output)| (input, output))
}

/// A string schema with a pattern, for validated newtypes.
pub(crate) fn string_schema(pattern: &str, description: &str) -> Schema {
    json_schema!({
        "type": "string",
        "pattern": pattern,
        "description": description,
    })
}

/// Derives the schemas from the types, as the checked-in copy must read.
#[cfg(test)]
pub(crate) mod derive {
    use schemars::JsonSchema;
    use schemars::generate::{Contract, SchemaSettings};

    /// The input schema of a tool: what the tool accepts, in the portable core (see
    /// [`super::portable_input`]).
    pub(crate) fn input_schema<T: JsonSchema>() -> String {
        let text = root_schema::<T>(Contract::Deserialize);
        let mut schema: serde_json::Value = serde_json::from_str(&text).expect("a schema is JSON");
        super::portable_input::core(&mut schema);
        serde_json::to_string(&schema).expect("a schema serializes")
    }

    /// The output schema of a tool (MCP's `outputSchema`): what the tool's answer looks like.
    pub(crate) fn output_schema<T: JsonSchema>() -> String {
        root_schema::<T>(Contract::Serialize)
    }

    /// The input schema of a write tool: its own input, plus `preview` and
    /// `confirmation_token`, which every write tool takes (see `governance::call_write`).
    pub(crate) fn governed_input_schema(plain: &str) -> String {
        let mut schema: serde_json::Value = serde_json::from_str(plain).expect("a schema is JSON");
        let properties = schema["properties"]
            .as_object_mut()
            .expect("every input is an object with properties");
        properties.insert(
            "preview".into(),
            serde_json::json!({
                "type": "boolean",
                "default": false,
                "description": "true: write nothing; answer with exactly what would be sent, each changed field's current value beside the new one, and a confirmation_token."
            }),
        );
        properties.insert(
            "confirmation_token".into(),
            serde_json::json!({
                "type": "string",
                "description": "The token of an earlier preview of this same input, by this user: makes the previewed write, once. Refused when the record changed since the preview. Required when the workspace has the assistant confirm every write with a preview's token."
            }),
        );
        serde_json::to_string(&schema).expect("a schema serializes")
    }

    /// The output schema of a write tool: its own output plus the journal's `change_id`, or a
    /// preview.
    pub(crate) fn governed_output_schema(plain: &str) -> String {
        let parse = |text: String| -> serde_json::Value {
            serde_json::from_str(&text).expect("a schema is JSON")
        };
        let mut applied = parse(plain.to_owned());
        let mut preview = parse(output_schema::<crate::governance::PreviewOutput>());
        let mut defs = serde_json::Map::new();
        for branch in [&mut applied, &mut preview] {
            let branch = branch.as_object_mut().expect("a schema is an object");
            branch.remove("$schema");
            if let Some(serde_json::Value::Object(d)) = branch.remove("$defs") {
                defs.extend(d);
            }
        }
        applied["properties"].as_object_mut().expect("outputs are objects").insert(
            "change_id".into(),
            serde_json::json!({
                "type": "string",
                "description": "The change journal's id for this write: crm_list_changes shows it, and crm_revert_change puts an update back by it."
            }),
        );
        let mut schema = serde_json::json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": applied["title"].clone(),
            "type": "object",
            "anyOf": [applied, preview],
        });
        if !defs.is_empty() {
            schema["$defs"] = defs.into();
        }
        serde_json::to_string(&schema).expect("a schema serializes")
    }

    fn root_schema<T: JsonSchema>(contract: Contract) -> String {
        let mut settings = SchemaSettings::draft2020_12();
        settings.contract = contract;
        let schema = settings.into_generator().root_schema_for::<T>();
        let mut schema = serde_json::to_value(&schema).expect("a schema serializes");
        portable(&mut schema);
        serde_json::to_string(&schema).expect("a schema serializes")
    }

    /// The `format` values JSON Schema 2020-12 defines; others (schemars' `uint64`, `int32`,
    /// ...) are refused by strict validators such as Ajv, which the TypeScript SDK uses.
    const STANDARD_FORMATS: &[&str] = &[
        "date-time",
        "date",
        "time",
        "duration",
        "email",
        "idn-email",
        "hostname",
        "idn-hostname",
        "ipv4",
        "ipv6",
        "uri",
        "uri-reference",
        "iri",
        "iri-reference",
        "uuid",
        "uri-template",
        "json-pointer",
        "relative-json-pointer",
        "regex",
    ];

    /// Keywords whose value is one sub-schema.
    const SCHEMA_KEYWORDS: &[&str] = &[
        "items",
        "additionalProperties",
        "not",
        "contains",
        "propertyNames",
        "if",
        "then",
        "else",
        "unevaluatedItems",
        "unevaluatedProperties",
    ];
    /// Keywords whose value maps names to sub-schemas, or lists sub-schemas.
    const SCHEMA_MAP_KEYWORDS: &[&str] = &["properties", "$defs", "patternProperties"];
    const SCHEMA_LIST_KEYWORDS: &[&str] = &["anyOf", "allOf", "oneOf", "prefixItems"];

    /// A schema every client reads alike: standard formats only (a non-standard one is
    /// dropped; `minimum` still bounds the number), and `{}` where a sub-schema was a bare
    /// `true`, which some clients' converters do not take.
    pub(crate) fn portable(schema: &mut serde_json::Value) {
        use serde_json::Value;
        let Value::Object(map) = schema else { return };
        if map
            .get("format")
            .and_then(Value::as_str)
            .is_some_and(|f| !STANDARD_FORMATS.contains(&f))
        {
            map.remove("format");
        }
        let fix = |sub: &mut Value| {
            if *sub == Value::Bool(true) {
                *sub = Value::Object(serde_json::Map::new());
            }
            portable(sub);
        };
        for (key, value) in map.iter_mut() {
            let key = key.as_str();
            if SCHEMA_KEYWORDS.contains(&key) {
                fix(value);
            } else if SCHEMA_MAP_KEYWORDS.contains(&key) {
                if let Value::Object(subs) = value {
                    subs.values_mut().for_each(fix);
                }
            } else if SCHEMA_LIST_KEYWORDS.contains(&key)
                && let Value::Array(subs) = value
            {
                subs.iter_mut().for_each(fix);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::registry;
    use std::fmt::Write;

    /// An entry's schemas as a client sees them: a write's with governance's `preview`,
    /// `confirmation_token`, `change_id` and preview answer added.
    pub(crate) fn derived_schemas(entry: &crate::tool::Entry) -> (String, String) {
        let (input, output) = ((entry.input_schema)(), (entry.output_schema)());
        if entry.read_only {
            return (input, output);
        }
        (
            super::derive::governed_input_schema(&input),
            super::derive::governed_output_schema(&output),
        )
    }

    /// The text of `generated.rs` for the schemas derived now.
    fn render() -> String {
        let mut out = String::from(
            "//! Every tool's input and output JSON Schema, derived from its Rust types.\n\
             //! @generated by `UPDATE_SCHEMAS=1 cargo test -p crm-plugin --lib schema`: do not\n\
             //! edit; a unit test fails when this differs from what the types derive.\n\n\
             /// `(tool name, input schema, output schema)`, in `list-tools` order.\n\
             pub(super) const SCHEMAS: &[(&str, &str, &str)] = &[\n",
        );
        for entry in registry::entries() {
            let (input, output) = derived_schemas(entry);
            let hashes = "#".repeat(
                (1..)
                    .find(|n| {
                        let end = format!("\"{}", "#".repeat(*n));
                        !input.contains(&end) && !output.contains(&end)
                    })
                    .unwrap(),
            );
            writeln!(
                out,
                "    (\n        {:?},\n        r{hashes}\"{input}\"{hashes},\n        \
                 r{hashes}\"{output}\"{hashes},\n    ),",
                entry.name
            )
            .unwrap();
        }
        out.push_str("];\n");
        out
    }

    #[test]
    fn schemas_use_standard_formats_and_no_bare_true_sub_schemas() {
        let mut schema = serde_json::json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "format": "uint64", "minimum": 0},
                "at": {"type": "string", "format": "date-time"},
                "any": true,
                "list": {"type": "array", "items": true},
                "flag": {"type": "boolean", "default": true, "const": true}
            },
            "additionalProperties": true,
            "anyOf": [true, {"format": "int32"}]
        });
        super::derive::portable(&mut schema);
        assert_eq!(
            schema,
            serde_json::json!({
                "type": "object",
                "properties": {
                    "n": {"type": "integer", "minimum": 0},
                    "at": {"type": "string", "format": "date-time"},
                    "any": {},
                    "list": {"type": "array", "items": {}},
                    "flag": {"type": "boolean", "default": true, "const": true}
                },
                "additionalProperties": {},
                "anyOf": [{}, {}]
            })
        );
        let text = render();
        for bad in [
            "\"uint",
            "\"int32\"",
            "\"int64\"",
            "\"double\"",
            "\"float\"",
        ] {
            assert!(!text.contains(&format!("\"format\":{bad}")), "format {bad}");
        }
        for keyword in ["items", "additionalProperties", "not"] {
            assert!(
                !text.contains(&format!("\"{keyword}\":true")),
                "{keyword}: true"
            );
        }
    }

    #[test]
    fn checked_in_schemas_are_the_derived_ones() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/schema/generated.rs");
        let derived = render();
        if std::env::var_os("UPDATE_SCHEMAS").is_some() {
            std::fs::write(path, &derived).unwrap();
        }
        let checked_in = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            checked_in == derived,
            "{path} is not what the tool types derive; if the change is intended, run \
             `UPDATE_SCHEMAS=1 cargo test -p crm-plugin --lib schema` and review the diff"
        );
    }
}
