//! Tools described in the prompt, for OpenAI-compatible servers that reject
//! or ignore native tools: the instruction that lists them, the JSON schema
//! of one call (a grammar for servers that accept one), and the call parsed
//! back out of the reply text.

use serde_json::{Value, json};

use crate::vlm::{RawToolCall, ToolSpec};

/// The most reply text searched for a call (its end: the call comes after
/// any reasoning). Bounds the work on a long reply.
const MAX_SEARCH_BYTES: usize = 64 * 1024;

/// The system-prompt instruction that replaces native tools: each callable
/// tool's name, description and JSON-Schema parameters, and the reply
/// format `{"name": …, "parameters": {…}}`.
pub fn tools_instruction(tools: &[&ToolSpec]) -> String {
    let mut s = String::from(
        "You can act only by calling exactly one of these tools. Reply with one JSON object \
         {\"name\": TOOL_NAME, \"parameters\": {…}} whose parameters match the tool's \
         (you may reason in a few sentences before it).\nTools:",
    );
    for t in tools {
        s.push_str(&format!("\n- {}: {}\n  parameters: {}", t.name, t.description, t.parameters));
    }
    s
}

/// The JSON schema of one call of `tools`: one branch per tool (`anyOf`),
/// whose `name` is that tool's (a one-value enum) and whose `parameters`
/// follow that tool's parameter schema, so a server that constrains its output to the schema
/// (llama.cpp's grammar, vLLM's guided decoding) can only produce a call of
/// a listed tool with arguments in shape — `rotate` by an allowed angle,
/// `move_toward` in a listed direction. A tool without an object schema
/// takes any object. The key is `parameters`, not `arguments`, because a
/// grammar server writes the keys in the order the body lists them, which
/// is alphabetical: `name` before `parameters` lets a small model choose
/// the tool before its arguments.
pub fn call_schema(tools: &[&ToolSpec]) -> Value {
    let branches: Vec<Value> = tools
        .iter()
        .map(|t| {
            let arguments = if t.parameters.get("type").and_then(Value::as_str) == Some("object") {
                t.parameters.clone()
            } else {
                json!({"type": "object"})
            };
            json!({
                "type": "object",
                "properties": {"name": {"type": "string", "enum": [t.name]}, "parameters": arguments},
                "required": ["name", "parameters"],
                "additionalProperties": false,
            })
        })
        .collect();
    json!({"anyOf": branches})
}

/// The last JSON object in `text` that names one of `names` (`name`, or
/// `tool`/`function`) with object arguments (`arguments`, `parameters`,
/// `args` or `input`; a JSON string holding an object counts too). Only the
/// last 64 KiB of the text are searched.
pub fn tool_call_from_text(text: &str, names: &[&str]) -> Option<RawToolCall> {
    let mut start = text.len().saturating_sub(MAX_SEARCH_BYTES);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let tail = &text[start..];
    let mut found = None;
    for (i, _) in tail.match_indices('{') {
        let mut stream = serde_json::Deserializer::from_str(&tail[i..]).into_iter::<Value>();
        if let Some(Ok(v)) = stream.next() {
            if let Some(call) = call_of(&v, names) {
                found = Some(call);
            }
        }
    }
    found
}

fn call_of(v: &Value, names: &[&str]) -> Option<RawToolCall> {
    let name = ["name", "tool", "function"].iter().find_map(|k| v.get(*k).and_then(Value::as_str))?;
    if !names.contains(&name) {
        return None;
    }
    let args = ["arguments", "parameters", "args", "input"].iter().find_map(|k| v.get(*k)).cloned();
    let args = match args {
        Some(Value::Object(m)) => Value::Object(m),
        Some(Value::String(s)) => serde_json::from_str::<Value>(&s).ok().filter(Value::is_object)?,
        None | Some(Value::Null) => json!({}),
        Some(_) => return None,
    };
    Some(RawToolCall::new("call_text_0", name, args))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_call_schema_has_each_tools_own_arguments() {
        let rotate = ToolSpec::new(
            "rotate",
            "Turn.",
            json!({"type": "object", "properties": {"degrees": {"type": "integer", "enum": [-90, 90]}},
                   "required": ["degrees"], "additionalProperties": false}),
        );
        let stop = ToolSpec::new("stop_robot", "Stop.", json!({}));
        let schema = call_schema(&[&rotate, &stop]);
        let branches = schema["anyOf"].as_array().expect("one branch per tool");
        assert_eq!(branches.len(), 2);
        assert_eq!(branches[0]["properties"]["name"]["enum"], json!(["rotate"]));
        assert_eq!(branches[0]["properties"]["parameters"]["properties"]["degrees"]["enum"], json!([-90, 90]));
        assert_eq!(branches[1]["properties"]["name"]["enum"], json!(["stop_robot"]));
        assert_eq!(branches[1]["properties"]["parameters"], json!({"type": "object"}));
        assert!(branches.iter().all(|b| b["required"] == json!(["name", "parameters"])));
        // the order a grammar server writes the keys in: the tool first
        let keys: Vec<&String> = branches[0]["properties"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["name", "parameters"]);
        // a reply in the schema's shape is read back
        let call = tool_call_from_text(r#"{"name": "rotate", "parameters": {"degrees": 90}}"#, &["rotate"]).unwrap();
        assert_eq!((call.name.as_str(), call.arguments["degrees"].as_i64()), ("rotate", Some(90)));
    }

    #[test]
    fn finds_the_last_call_after_reasoning() {
        let text = r#"PERCEIVE: a wall. I considered {"name": "rotate", "arguments": {"degrees": 90}} but
            REASON: the corridor is open.
            ```json
            {"name": "move_toward", "arguments": {"direction": "forward", "speed": "slow"}}
            ```"#;
        let call = tool_call_from_text(text, &["rotate", "move_toward"]).expect("a call");
        assert_eq!(call.name, "move_toward");
        assert_eq!(call.arguments["speed"], "slow");
    }

    #[test]
    fn accepts_common_spellings_and_rejects_unknown_tools() {
        let c = tool_call_from_text(r#"{"tool": "stop_robot", "parameters": {}}"#, &["stop_robot"]).expect("call");
        assert_eq!(c.name, "stop_robot");
        let c =
            tool_call_from_text(r#"{"name": "rotate", "arguments": "{\"degrees\": 45}"}"#, &["rotate"]).expect("call");
        assert_eq!(c.arguments["degrees"], 45);
        assert!(tool_call_from_text(r#"{"name": "self_destruct", "arguments": {}}"#, &["rotate"]).is_none());
        assert!(tool_call_from_text(r#"{"name": "rotate", "arguments": [1]}"#, &["rotate"]).is_none());
        assert!(tool_call_from_text("no call here", &["rotate"]).is_none());
    }

    proptest! {
        #[test]
        fn never_panics_on_any_text(text in ".{0,400}") {
            let _ = tool_call_from_text(&text, &["rotate"]);
        }

        #[test]
        fn finds_a_call_wrapped_in_any_prose(pre in "[^{}]{0,100}", post in "[^{}]{0,100}", deg in -180i32..180) {
            let text = format!("{pre}{{\"name\": \"rotate\", \"arguments\": {{\"degrees\": {deg}}}}}{post}");
            let call = tool_call_from_text(&text, &["rotate"]).expect("the call");
            prop_assert_eq!(call.arguments["degrees"].as_i64(), Some(i64::from(deg)));
        }
    }
}
