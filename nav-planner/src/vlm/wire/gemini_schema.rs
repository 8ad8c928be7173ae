//! JSON Schema → Gemini's schema dialect (an OpenAPI 3.0 subset).
//!
//! Gemini rejects keywords it does not know (`additionalProperties`,
//! `strict`, `$schema`, `const`, …), accepts `enum` only on strings, wants
//! `nullable: true` rather than `"type": ["string", "null"]`, and has no
//! `$ref`. [`to_gemini`] rewrites a schema accordingly:
//!
//! - kept: `type`, `format`, `title`, `description`, `nullable`, `enum`
//!   (strings), `properties`, `required` (only names that exist), `items`,
//!   `minItems`, `maxItems`, `minimum`, `maximum`, `minLength`,
//!   `maxLength`, `pattern`, `minProperties`, `maxProperties`,
//!   `propertyOrdering`, `anyOf` (from `anyOf` or `oneOf`), `default`,
//!   `example`;
//! - `"type": [T, "null"]` → `type: T, nullable: true`, and so is an
//!   `anyOf` of one schema and `{"type": "null"}`;
//! - `const: "x"` → `enum: ["x"]`; a non-string `enum` (e.g. the `rotate`
//!   tool's degrees) is dropped and its values are appended to the
//!   description ("Allowed values: -180, -135, …"), so the model still sees
//!   them and the protocol's validator still enforces them;
//! - local `$ref`s (`#/$defs/…`, `#/definitions/…`) are inlined (at most 16
//!   levels deep, so recursive schemas terminate);
//! - everything else is dropped, as are empty `properties` maps.

use serde_json::{Map, Value, json};

const MAX_REF_DEPTH: usize = 16;

const COPIED: &[&str] = &[
    "format",
    "title",
    "nullable",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minProperties",
    "maxProperties",
    "propertyOrdering",
    "default",
    "example",
];

/// The Gemini form of a JSON Schema (see the module docs for the rules).
///
/// ```
/// use serde_json::json;
/// use nav_planner::vlm::wire::gemini_schema::to_gemini;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {"degrees": {"type": "integer", "enum": [-90, 90]}},
///     "required": ["degrees"],
///     "additionalProperties": false,
/// });
/// assert_eq!(to_gemini(&schema), json!({
///     "type": "object",
///     "properties": {"degrees": {"type": "integer", "description": "Allowed values: -90, 90."}},
///     "required": ["degrees"],
/// }));
/// ```
pub fn to_gemini(schema: &Value) -> Value {
    convert(schema, schema, 0)
}

fn convert(schema: &Value, root: &Value, depth: usize) -> Value {
    let Some(obj) = schema.as_object() else {
        // `true` / `false` schemas and garbage: an unconstrained string.
        return json!({"type": "string"});
    };
    if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
        let target = reference.strip_prefix('#').and_then(|p| root.pointer(p));
        return match target {
            Some(t) if depth < MAX_REF_DEPTH => {
                let mut resolved = convert(t, root, depth + 1);
                // Sibling descriptions override the referenced one.
                if let (Some(d), Some(map)) = (obj.get("description"), resolved.as_object_mut()) {
                    map.insert("description".into(), d.clone());
                }
                resolved
            }
            _ => json!({"type": "object"}),
        };
    }
    if let Some(nullable) = nullable_any_of(obj) {
        let mut out = convert(nullable, root, depth);
        if let Some(map) = out.as_object_mut() {
            map.insert("nullable".into(), json!(true));
            if let Some(d) = obj.get("description") {
                map.insert("description".into(), d.clone());
            }
        }
        return out;
    }
    let mut out = Map::new();
    let mut description = obj.get("description").and_then(Value::as_str).map(str::to_string);

    match obj.get("type") {
        Some(Value::String(t)) => {
            out.insert("type".into(), json!(t));
        }
        Some(Value::Array(types)) => {
            let non_null: Vec<&Value> = types.iter().filter(|t| t.as_str() != Some("null")).collect();
            if non_null.len() < types.len() {
                out.insert("nullable".into(), json!(true));
            }
            match non_null.as_slice() {
                [single] => {
                    out.insert("type".into(), (*single).clone());
                }
                [] => {}
                many => {
                    let alternatives: Vec<Value> = many.iter().map(|t| json!({"type": t})).collect();
                    out.insert("anyOf".into(), Value::Array(alternatives));
                }
            }
        }
        _ => {}
    }
    for key in COPIED {
        if let Some(v) = obj.get(*key) {
            out.insert((*key).into(), v.clone());
        }
    }

    let enum_values = match (obj.get("enum"), obj.get("const")) {
        (Some(Value::Array(values)), _) => Some(values.clone()),
        (None, Some(c)) => Some(vec![c.clone()]),
        _ => None,
    };
    if let Some(values) = enum_values {
        if values.iter().all(Value::is_string) {
            out.insert("enum".into(), Value::Array(values));
            out.entry("type").or_insert(json!("string"));
        } else {
            let listed: Vec<String> = values
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            let note = format!("Allowed values: {}.", listed.join(", "));
            description = Some(match description {
                Some(d) if !d.is_empty() => format!("{d} {note}"),
                _ => note,
            });
            if !out.contains_key("type") {
                let inferred = if values.iter().all(|v| v.is_i64() || v.is_u64()) {
                    "integer"
                } else if values.iter().all(Value::is_number) {
                    "number"
                } else {
                    "string"
                };
                out.insert("type".into(), json!(inferred));
            }
        }
    }
    if let Some(d) = description {
        out.insert("description".into(), json!(d));
    }

    if let Some(props) = obj.get("properties").and_then(Value::as_object).filter(|p| !p.is_empty()) {
        let converted: Map<String, Value> = props.iter().map(|(k, v)| (k.clone(), convert(v, root, depth))).collect();
        if let Some(required) = obj.get("required").and_then(Value::as_array) {
            let kept: Vec<Value> =
                required.iter().filter(|r| r.as_str().is_some_and(|n| converted.contains_key(n))).cloned().collect();
            if !kept.is_empty() {
                out.insert("required".into(), Value::Array(kept));
            }
        }
        out.insert("properties".into(), Value::Object(converted));
    }
    if let Some(items) = obj.get("items") {
        out.insert("items".into(), convert(items, root, depth));
    }
    if let Some(Value::Array(alternatives)) = obj.get("anyOf").or_else(|| obj.get("oneOf")) {
        let converted: Vec<Value> = alternatives.iter().map(|a| convert(a, root, depth)).collect();
        out.insert("anyOf".into(), Value::Array(converted));
    }
    Value::Object(out)
}

/// The one non-null alternative of an `anyOf` (or `oneOf`) whose others
/// are all `{"type": "null"}`: a nullable schema, which Gemini spells
/// `nullable: true`.
fn nullable_any_of(obj: &Map<String, Value>) -> Option<&Value> {
    let alternatives = obj.get("anyOf").or_else(|| obj.get("oneOf"))?.as_array()?;
    let is_null = |a: &Value| a.get("type").and_then(Value::as_str) == Some("null");
    match alternatives.iter().filter(|a| !is_null(a)).collect::<Vec<_>>().as_slice() {
        [single] if alternatives.len() > 1 => Some(single),
        _ => None,
    }
}

/// True when a converted parameters schema declares no properties (Gemini
/// rejects an `OBJECT` with empty `properties`; such functions are declared
/// without `parameters`).
pub fn is_empty_object(schema: &Value) -> bool {
    schema.get("properties").and_then(Value::as_object).is_none_or(Map::is_empty)
        && schema.get("type").and_then(Value::as_str).is_none_or(|t| t.eq_ignore_ascii_case("object"))
        && schema.get("anyOf").is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_any_of_with_null_is_nullable() {
        let schema = json!({"anyOf": [
            {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}, {"type": "null"}
        ]});
        assert_eq!(
            to_gemini(&schema),
            json!({"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2, "nullable": true})
        );
        let two = json!({"anyOf": [{"type": "string"}, {"type": "number"}]});
        assert_eq!(to_gemini(&two), json!({"anyOf": [{"type": "string"}, {"type": "number"}]}));
    }

    #[test]
    fn seed_003_move_toward_converts_to_the_seed_gemini_form() {
        let openai = json!({
            "type": "object",
            "properties": {
                "direction": {"type": "string", "enum": ["forward", "left"], "description": "Direction"},
                "duration_s": {"type": "number", "description": "Seconds (1.0-8.0)"},
            },
            "required": ["direction"],
            "additionalProperties": false,
        });
        assert_eq!(
            to_gemini(&openai),
            json!({
                "type": "object",
                "properties": {
                    "direction": {"type": "string", "enum": ["forward", "left"], "description": "Direction"},
                    "duration_s": {"type": "number", "description": "Seconds (1.0-8.0)"},
                },
                "required": ["direction"],
            })
        );
    }

    #[test]
    fn nullable_refs_const_and_one_of() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": {"pos": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x", "ghost"]}},
            "type": "object",
            "properties": {
                "where": {"$ref": "#/$defs/pos", "description": "target"},
                "note": {"type": ["string", "null"]},
                "mode": {"const": "fast"},
                "either": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                "empty": {"type": "object", "properties": {}},
            },
        });
        assert_eq!(
            to_gemini(&schema),
            json!({
                "type": "object",
                "properties": {
                    "where": {"type": "object", "description": "target", "properties": {"x": {"type": "number"}}, "required": ["x"]},
                    "note": {"type": "string", "nullable": true},
                    "mode": {"type": "string", "enum": ["fast"]},
                    "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                    "empty": {"type": "object"},
                },
            })
        );
    }

    #[test]
    fn recursive_refs_terminate() {
        let schema = json!({"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
            "$ref": "#/$defs/node"});
        let converted = to_gemini(&schema);
        assert_eq!(converted["type"], "object");
        assert!(is_empty_object(&json!({"type": "object"})));
        assert!(!is_empty_object(&converted));
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|i| json!(i)),
            "[a-z$#/]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop_oneof![
                        Just("type".to_string()),
                        Just("properties".to_string()),
                        Just("enum".to_string()),
                        Just("$ref".to_string()),
                        Just("items".to_string()),
                        Just("anyOf".to_string()),
                        "[a-z]{1,5}"
                    ],
                    inner,
                    0..5
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Every schema node uses only Gemini keywords and string enums.
    fn dialect_ok(node: &Value) -> bool {
        let Some(obj) = node.as_object() else { return false };
        let allowed = |k: &str| {
            COPIED.contains(&k)
                || ["type", "description", "enum", "properties", "required", "items", "anyOf"].contains(&k)
        };
        obj.keys().all(|k| allowed(k))
            && obj.get("enum").is_none_or(|e| e.as_array().is_some_and(|a| a.iter().all(Value::is_string)))
            && obj
                .get("properties")
                .is_none_or(|p| p.as_object().is_some_and(|m| !m.is_empty() && m.values().all(dialect_ok)))
            && obj.get("items").is_none_or(dialect_ok)
            && obj.get("anyOf").is_none_or(|a| a.as_array().is_some_and(|a| a.iter().all(dialect_ok)))
    }

    proptest! {
        #[test]
        fn never_panics_and_emits_only_the_dialect(schema in arb_json()) {
            let out = to_gemini(&schema);
            prop_assert!(dialect_ok(&out), "{out}");
        }
    }
}
