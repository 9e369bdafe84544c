//! Tool input schemas in the core every major model API takes as sent.
//!
//! Clients hand a tool's `inputSchema` to their model's function-calling API, and several of
//! those take only a subset of JSON Schema: Gemini's function declarations take the OpenAPI 3.0
//! `Schema` object (<https://ai.google.dev/api/caching#Schema>), with no `$ref`/`$defs`, no
//! `additionalProperties`, `patternProperties`, `oneOf` or `const`, and one type per node.
//! Converters that meet anything else strip it, rewrite it or drop the tool. So what schemars
//! derives is rewritten here into that core, meaning kept:
//! - `$schema` goes; `$ref` is inlined (the referring node's own keywords win) and `$defs` go;
//! - a nullable `["T", "null"]` becomes `T` and the property optional (absent and `null` read
//!   the same to the component's parser); `default: null` goes;
//! - a `oneOf` of `const` strings becomes an `enum`, each value's description kept in words;
//! - objects are open (`additionalProperties` goes): the component's parser still refuses an
//!   unknown field, with a typed error naming it;
//! - a map's `patternProperties` goes: its description says what the keys and values are, and
//!   the parser checks them.
//!
//! Output schemas are left alone: no model API reads them.

use serde_json::{Map, Value};

/// Every keyword of Gemini's `Schema` object (<https://ai.google.dev/api/caching#Schema>).
pub(crate) const GEMINI_KEYWORDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// Rewrites a root input schema, as schemars derives it, into the portable core.
pub(crate) fn core(schema: &mut Value) {
    let defs = match schema.as_object_mut() {
        Some(root) => {
            root.remove("$schema");
            match root.remove("$defs") {
                Some(Value::Object(defs)) => defs,
                _ => Map::new(),
            }
        }
        None => Map::new(),
    };
    rewrite(schema, &defs);
}

/// Rewrites one node and what it holds; true when the node allowed `null`.
fn rewrite(node: &mut Value, defs: &Map<String, Value>) -> bool {
    let Value::Object(map) = node else {
        return false;
    };
    inline_ref(map, defs);
    let nullable = make_single_type(map) | drop_null_branch(map, defs);
    if map.get("default") == Some(&Value::Null) {
        map.remove("default");
    }
    consts_to_enum(map);
    if let Some(value) = map.remove("const") {
        map.insert("enum".into(), Value::Array(vec![value]));
    }
    map.remove("additionalProperties");
    map.remove("patternProperties");
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        let mut optional = Vec::new();
        for (name, property) in properties.iter_mut() {
            if rewrite(property, defs) {
                optional.push(name.clone());
            }
        }
        if let Some(Value::Array(required)) = map.get_mut("required") {
            required.retain(|name| !optional.iter().any(|o| Some(o.as_str()) == name.as_str()));
            if required.is_empty() {
                map.remove("required");
            }
        }
    }
    if let Some(items) = map.get_mut("items") {
        rewrite(items, defs);
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        for branch in branches.iter_mut() {
            rewrite(branch, defs);
        }
    }
    nullable
}

/// Replaces `$ref` by the definition it names; the node's own keywords (its description,
/// say) win over the definition's.
fn inline_ref(map: &mut Map<String, Value>, defs: &Map<String, Value>) {
    let Some(Value::String(reference)) = map.remove("$ref") else {
        return;
    };
    let name = reference
        .strip_prefix("#/$defs/")
        .unwrap_or_else(|| panic!("only local $defs references are derived: {reference}"));
    let Some(Value::Object(definition)) = defs.get(name) else {
        panic!("$ref to a missing definition {name}");
    };
    let own = std::mem::replace(map, definition.clone());
    map.extend(own);
    // A definition may refer to another one.
    inline_ref(map, defs);
}

/// An `anyOf` with a `{"type": "null"}` branch (schemars' `Option` of a referenced type) loses
/// that branch (returns true: the value was nullable); a single branch left is merged into the
/// node, whose own keywords win.
fn drop_null_branch(map: &mut Map<String, Value>, defs: &Map<String, Value>) -> bool {
    let Some(Value::Array(branches)) = map.get_mut("anyOf") else {
        return false;
    };
    let before = branches.len();
    branches.retain(|b| b.get("type") != Some(&Value::String("null".into())));
    if branches.len() == before {
        return false;
    }
    if branches.len() == 1 {
        let Some(Value::Object(mut only)) = branches.pop() else {
            panic!("an anyOf branch is a schema object");
        };
        map.remove("anyOf");
        inline_ref(&mut only, defs);
        let own = std::mem::take(map);
        *map = only;
        map.extend(own);
    }
    true
}

/// One type per node: `["T", "null"]` becomes `T` (returns true: the value was nullable), and a
/// union of several non-null types an `anyOf` of one type each.
fn make_single_type(map: &mut Map<String, Value>) -> bool {
    let Some(Value::Array(types)) = map.get("type") else {
        return false;
    };
    let nullable = types.iter().any(|t| t == "null");
    let mut others: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
    if others.len() == 1 {
        map.insert("type".into(), others.remove(0));
    } else {
        map.remove("type");
        let branches = others
            .into_iter()
            .map(|t| serde_json::json!({ "type": t }))
            .collect();
        map.insert("anyOf".into(), Value::Array(branches));
    }
    nullable
}

/// A `oneOf` whose branches are each one `const` string becomes a string `enum`; a branch's
/// description the node's text does not already give is added to it.
fn consts_to_enum(map: &mut Map<String, Value>) {
    let Some(Value::Array(branches)) = map.get("oneOf") else {
        return;
    };
    let values: Option<Vec<(String, Option<String>)>> = branches
        .iter()
        .map(|b| {
            let value = b.get("const")?.as_str()?.to_owned();
            let note = b
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned);
            Some((value, note))
        })
        .collect();
    let Some(values) = values else {
        panic!("a oneOf other than of const strings has no portable form: {branches:?}");
    };
    map.remove("oneOf");
    let mut description = map
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    for (value, note) in &values {
        if let Some(note) = note
            && !description.contains(&format!("\"{value}\""))
        {
            let sep = if description.is_empty() { "" } else { " " };
            description.push_str(&format!("{sep}\"{value}\": {note}"));
        }
    }
    if !description.is_empty() {
        map.insert("description".into(), Value::String(description));
    }
    map.insert("type".into(), Value::String("string".into()));
    map.insert(
        "enum".into(),
        values.into_iter().map(|(v, _)| Value::String(v)).collect(),
    );
}

/// Where `schema` falls outside Gemini's `Schema` subset: one JSON path per finding.
#[cfg(test)]
pub(crate) fn outside_core(schema: &Value, path: &str, found: &mut Vec<String>) {
    let Value::Object(map) = schema else {
        found.push(format!("{path}: not an object"));
        return;
    };
    for (key, value) in map {
        let here = format!("{path}/{key}");
        if !GEMINI_KEYWORDS.contains(&key.as_str()) {
            found.push(here.clone());
        }
        match key.as_str() {
            "type" if !value.is_string() => found.push(format!("{here}: not one type")),
            "type" if value == "null" => found.push(format!("{here}: null is not a type")),
            "properties" => {
                for (name, sub) in value.as_object().into_iter().flatten() {
                    outside_core(sub, &format!("{here}/{name}"), found);
                }
            }
            "items" => outside_core(value, &here, found),
            "anyOf" => {
                for (i, sub) in value.as_array().into_iter().flatten().enumerate() {
                    outside_core(sub, &format!("{here}/{i}"), found);
                }
            }
            "required" => {
                for name in value.as_array().into_iter().flatten() {
                    let name = name.as_str().unwrap_or_default();
                    if map.get("properties").and_then(|p| p.get(name)).is_none() {
                        found.push(format!("{here}: {name} is not a property"));
                    }
                }
            }
            "default" if value.is_null() => found.push(format!("{here}: null")),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_nullable_unions_consts_and_closed_objects_become_the_portable_core() {
        let mut schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": {
                "Layout": {
                    "description": "How records are laid out.",
                    "oneOf": [
                        {"const": "objects", "description": "One object per record.", "type": "string"},
                        {"const": "table", "description": "Rows of values.", "type": "string"}
                    ]
                },
                "Fields": {
                    "type": "object",
                    "additionalProperties": false,
                    "patternProperties": {"^[A-Z]+$": {"type": ["string", "number", "null"]}}
                }
            },
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "layout": {"$ref": "#/$defs/Layout", "description": "\"objects\" or a table."},
                "cursor": {"type": ["string", "null"], "default": null},
                "limit": {"type": ["integer", "null"], "minimum": 1},
                "fields": {"$ref": "#/$defs/Fields", "description": "Name → value."},
                "names": {"type": ["array", "null"], "items": {"type": "string"}},
                "bucket": {
                    "anyOf": [{"$ref": "#/$defs/Layout"}, {"type": "null"}],
                    "description": "Optional layout."
                }
            },
            "required": ["fields", "limit", "bucket"]
        });
        core(&mut schema);
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "layout": {
                        "type": "string",
                        "enum": ["objects", "table"],
                        "description": "\"objects\" or a table. \"table\": Rows of values."
                    },
                    "cursor": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1},
                    "fields": {"type": "object", "description": "Name → value."},
                    "names": {"type": "array", "items": {"type": "string"}},
                    "bucket": {
                        "type": "string",
                        "enum": ["objects", "table"],
                        "description": "Optional layout. \"objects\": One object per record. \"table\": Rows of values."
                    }
                },
                "required": ["fields"]
            })
        );
        let mut found = Vec::new();
        outside_core(&schema, "", &mut found);
        assert_eq!(found, Vec::<String>::new());
    }

    #[test]
    fn the_subset_check_names_what_falls_outside() {
        let schema = json!({
            "$schema": "x",
            "type": "object",
            "additionalProperties": false,
            "properties": {"a": {"type": ["string", "null"]}, "b": {"$ref": "#/$defs/B"}},
            "required": ["c"]
        });
        let mut found = Vec::new();
        outside_core(&schema, "", &mut found);
        assert_eq!(
            found,
            [
                "/$schema",
                "/additionalProperties",
                "/properties/a/type: not one type",
                "/properties/b/$ref",
                "/required: c is not a property",
            ]
        );
    }

    #[test]
    fn every_tool_input_schema_is_in_the_portable_core() {
        let mut found = Vec::new();
        for entry in crate::registry::entries() {
            let (input, _) = crate::schema::of(entry.name).expect("every tool has schemas");
            let schema: Value = serde_json::from_str(input).expect("a schema is JSON");
            outside_core(&schema, entry.name, &mut found);
        }
        assert_eq!(found, Vec::<String>::new());
    }
}
