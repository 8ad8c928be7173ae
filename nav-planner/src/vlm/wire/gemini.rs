//! Gemini `generateContent`, the same body for Google AI
//! (`{base}/v1beta/models/{model}:generateContent`) and Vertex AI
//! (`.../publishers/google/models/{model}:generateContent` or
//! `.../endpoints/{id}:generateContent`).
//!
//! Request: `systemInstruction`, `contents` (role `user` with `text` and
//! `inlineData {mimeType, data}` parts; follow-up `model` turns with
//! `functionCall` parts, each with the `thoughtSignature` the reply carried,
//! and `user` turns with `functionResponse` parts),
//! `tools: [{functionDeclarations}]` with parameters converted by
//! [`to_gemini`], `toolConfig.functionCallingConfig {mode: ANY | AUTO |
//! NONE, allowedFunctionNames}`, `generationConfig {temperature,
//! maxOutputTokens, responseMimeType, responseSchema}`. Gemini cannot combine
//! function calling with a JSON response schema, so with tools the schema
//! becomes an instruction appended to the system prompt.
//!
//! Response: `candidates[0].content.parts` (`text`, `functionCall` with its
//! part's `thoughtSignature` kept on the [`RawToolCall`]; `thought` parts
//! skipped), `finishReason` (SAFETY, RECITATION and the other block
//! reasons → [`VlmError::Refused`]), `promptFeedback.blockReason`,
//! `usageMetadata` (`promptTokenCount`, `candidatesTokenCount` +
//! `thoughtsTokenCount`, `cachedContentTokenCount`), `modelVersion`.

use serde_json::{Map, Value, json};

use super::gemini_schema::{is_empty_object, to_gemini};
use super::{arguments_object, base64, count, embedded_error, f32_json, json_instruction, parse_body};
use crate::vlm::{Part, RawToolCall, ToolChoice, Turn, Usage, VlmError, VlmRequest, VlmResponse};

/// Finish reasons that mean the provider blocked the output.
pub const REFUSAL_REASONS: &[&str] =
    &["SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "IMAGE_SAFETY", "LANGUAGE"];

fn part_json(part: &Part) -> Value {
    match part {
        Part::Text(t) => json!({"text": t}),
        Part::Image { mime, data, .. } => json!({"inlineData": {"mimeType": mime, "data": base64(data)}}),
    }
}

/// The function-response payload: the tool's JSON object, or the text under
/// `result`.
fn response_object(content: &str) -> Value {
    match serde_json::from_str::<Value>(content) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({"result": content}),
    }
}

/// The request body (the model id goes in the URL, not the body).
pub fn encode(req: &VlmRequest, default_max_tokens: Option<u32>) -> Value {
    let mut body = Map::new();
    let mut system = req.system.clone();
    let tools_declared = !req.tools.is_empty();
    if let (true, Some(spec)) = (tools_declared, &req.json_schema) {
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(&json_instruction(spec));
    }
    if !system.is_empty() {
        body.insert("systemInstruction".into(), json!({"parts": [{"text": system}]}));
    }

    let mut contents = vec![json!({"role": "user", "parts": req.user.iter().map(part_json).collect::<Vec<_>>()})];
    for turn in &req.turns {
        match turn {
            Turn::Assistant { text, tool_calls } => {
                let mut parts: Vec<Value> = text.iter().filter(|t| !t.is_empty()).map(|t| json!({"text": t})).collect();
                parts.extend(tool_calls.iter().map(|c| {
                    let mut part = json!({"functionCall": {"name": c.name, "args": arguments_object(&c.arguments)}});
                    // Gemini 3 answers 400 to a replayed call without its signature.
                    if let Some(signature) = &c.thought_signature {
                        part["thoughtSignature"] = json!(signature);
                    }
                    part
                }));
                contents.push(json!({"role": "model", "parts": parts}));
            }
            Turn::ToolResult { name, content, .. } => {
                let part = json!({"functionResponse": {"name": name, "response": response_object(content)}});
                // Consecutive results travel together in one user turn.
                let merged = contents.last_mut().and_then(|last| {
                    let is_results = last["role"] == "user"
                        && last["parts"]
                            .as_array()
                            .is_some_and(|p| p.iter().all(|x| x.get("functionResponse").is_some()));
                    if is_results { last["parts"].as_array_mut() } else { None }
                });
                match merged {
                    Some(parts) => parts.push(part),
                    None => contents.push(json!({"role": "user", "parts": [part]})),
                }
            }
        }
    }
    body.insert("contents".into(), Value::Array(contents));

    if tools_declared {
        let declarations: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                let mut d = Map::new();
                d.insert("name".into(), json!(t.name));
                d.insert("description".into(), json!(t.description));
                let params = to_gemini(&t.parameters);
                if !is_empty_object(&params) {
                    d.insert("parameters".into(), params);
                }
                Value::Object(d)
            })
            .collect();
        body.insert("tools".into(), json!([{"functionDeclarations": declarations}]));
        let config = match &req.tool_choice {
            ToolChoice::Auto => json!({"mode": "AUTO"}),
            ToolChoice::Required => json!({"mode": "ANY"}),
            ToolChoice::None => json!({"mode": "NONE"}),
            ToolChoice::Only(names) => json!({"mode": "ANY", "allowedFunctionNames": names}),
        };
        body.insert("toolConfig".into(), json!({"functionCallingConfig": config}));
    }

    let mut generation = Map::new();
    if let Some(t) = req.temperature {
        generation.insert("temperature".into(), f32_json(t));
    }
    if let Some(n) = req.max_tokens.or(default_max_tokens) {
        generation.insert("maxOutputTokens".into(), json!(n));
    }
    if let (false, Some(spec)) = (tools_declared, &req.json_schema) {
        generation.insert("responseMimeType".into(), json!("application/json"));
        generation.insert("responseSchema".into(), to_gemini(&spec.schema));
    }
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    Value::Object(body)
}

/// Decodes a 2xx response body. Latency, attempts and cost are left for the
/// caller; tool calls without an id get `call_N`.
pub fn decode(body: &[u8]) -> Result<VlmResponse, VlmError> {
    let v = parse_body(body)?;
    if let Some(e) = embedded_error(&v) {
        return Err(e);
    }
    let candidate = match v.get("candidates").and_then(Value::as_array).and_then(|c| c.first()) {
        Some(c) => c,
        None => {
            let block = v.pointer("/promptFeedback/blockReason").and_then(Value::as_str);
            return Err(match block {
                Some(reason) => VlmError::Refused { message: format!("the prompt was blocked ({reason})") },
                None => VlmError::InvalidResponse { message: "response has no candidates".into() },
            });
        }
    };
    let finish_reason = candidate.get("finishReason").and_then(Value::as_str).map(str::to_string);
    if let Some(reason) = finish_reason.as_deref().filter(|r| REFUSAL_REASONS.contains(r)) {
        let detail = candidate.get("finishMessage").and_then(Value::as_str).map_or(String::new(), |m| format!(": {m}"));
        return Err(VlmError::Refused { message: format!("generation stopped with finishReason {reason}{detail}") });
    }
    if finish_reason.as_deref() == Some("MALFORMED_FUNCTION_CALL") {
        return Err(VlmError::InvalidResponse { message: "the model produced a malformed function call".into() });
    }
    let empty = Vec::new();
    let parts = candidate.pointer("/content/parts").and_then(Value::as_array).unwrap_or(&empty);
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for part in parts {
        if part.get("thought").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        if let Some(t) = part.get("text").and_then(Value::as_str) {
            text.push_str(t);
        }
        if let Some(call) = part.get("functionCall") {
            let name = call.get("name").and_then(Value::as_str).unwrap_or("");
            if name.is_empty() {
                return Err(VlmError::InvalidResponse {
                    message: format!("functionCall {} has no name", tool_calls.len()),
                });
            }
            let id = call.get("id").and_then(Value::as_str).filter(|s| !s.is_empty());
            let id = id.map_or_else(|| format!("call_{}", tool_calls.len()), str::to_string);
            let arguments = call.get("args").cloned().unwrap_or_else(|| json!({}));
            let signature = part.get("thoughtSignature").and_then(Value::as_str).filter(|s| !s.is_empty());
            tool_calls.push(RawToolCall {
                id,
                name: name.into(),
                arguments,
                thought_signature: signature.map(str::to_string),
            });
        }
    }
    let usage = v.get("usageMetadata").map_or_else(Usage::default, |u| Usage {
        prompt_tokens: count(u, "promptTokenCount").saturating_add(count(u, "toolUsePromptTokenCount")),
        completion_tokens: count(u, "candidatesTokenCount").saturating_add(count(u, "thoughtsTokenCount")),
        cached_tokens: count(u, "cachedContentTokenCount"),
        cache_write_tokens: 0,
    });
    Ok(VlmResponse {
        text,
        tool_calls,
        usage,
        model: v.get("modelVersion").and_then(Value::as_str).unwrap_or("").to_string(),
        finish_reason,
        ..VlmResponse::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vlm::ToolSpec;

    #[test]
    fn json_mode_without_tools_uses_response_schema() {
        let req = VlmRequest::new("s").text("u").json_schema(
            "d",
            json!({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": false}),
            true,
        );
        let body = encode(&req, Some(100));
        assert_eq!(body["generationConfig"]["responseMimeType"], "application/json");
        assert_eq!(
            body["generationConfig"]["responseSchema"],
            json!({"type": "object", "properties": {"a": {"type": "integer"}}})
        );
        assert_eq!(body["generationConfig"]["maxOutputTokens"], 100);
        assert_eq!(body["systemInstruction"]["parts"][0]["text"], "s");
    }

    #[test]
    fn json_mode_with_tools_becomes_an_instruction() {
        let req = VlmRequest::new("s")
            .text("u")
            .tools(vec![ToolSpec::new("noop", "nothing", json!({"type": "object", "properties": {}}))])
            .json_schema("d", json!({"type": "object"}), true);
        let body = encode(&req, None);
        assert!(body.get("generationConfig").is_none());
        assert!(body["systemInstruction"]["parts"][0]["text"].as_str().unwrap().contains("JSON Schema"));
        assert_eq!(body["tools"][0]["functionDeclarations"][0], json!({"name": "noop", "description": "nothing"}));
        assert_eq!(body["toolConfig"]["functionCallingConfig"]["mode"], "AUTO");
    }

    #[test]
    fn thought_signatures_are_echoed_on_replayed_calls() {
        let reply = decode(
            br#"{"candidates": [{"content": {"role": "model", "parts": [
                {"functionCall": {"name": "look", "args": {"q": "door"}}, "thoughtSignature": "c2lnLTE="}]},
                "finishReason": "STOP"}]}"#,
        )
        .unwrap();
        assert_eq!(reply.tool_calls[0].thought_signature.as_deref(), Some("c2lnLTE="));
        let req = VlmRequest::new("s")
            .text("u")
            .tools(vec![ToolSpec::new("look", "l", json!({"type": "object", "properties": {}}))])
            .turn(Turn::Assistant { text: None, tool_calls: reply.tool_calls.clone() })
            .turn(Turn::ToolResult {
                call_id: reply.tool_calls[0].id.clone(),
                name: "look".into(),
                content: "{}".into(),
            });
        let body = encode(&req, None);
        assert_eq!(
            body["contents"][1]["parts"][0],
            json!({"functionCall": {"name": "look", "args": {"q": "door"}}, "thoughtSignature": "c2lnLTE="})
        );
        let unsigned = RawToolCall::new("c", "look", json!({}));
        let req = req.clone();
        let mut turns = req.turns.clone();
        turns[0] = Turn::Assistant { text: None, tool_calls: vec![unsigned] };
        let body = encode(&VlmRequest { turns, ..req }, None);
        assert!(body["contents"][1]["parts"][0].get("thoughtSignature").is_none());
    }

    #[test]
    fn decode_blocks_and_thoughts() {
        let e = decode(br#"{"promptFeedback": {"blockReason": "SAFETY"}}"#).unwrap_err();
        assert_eq!(e.to_string(), "the model refused: the prompt was blocked (SAFETY)");
        let e = decode(br#"{"candidates": [{"finishReason": "RECITATION"}]}"#).unwrap_err();
        assert!(matches!(e, VlmError::Refused { .. }));
        let e = decode(br#"{"candidates": []}"#).unwrap_err();
        assert_eq!(e.to_string(), "invalid VLM response: response has no candidates");
        let r = decode(br#"{"candidates": [{"content": {"parts": [{"text": "hmm", "thought": true}, {"text": "ok"}]},
            "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 2, "thoughtsTokenCount": 5}}"#)
        .unwrap();
        assert_eq!((r.text.as_str(), r.usage.completion_tokens), ("ok", 7));
    }
}
