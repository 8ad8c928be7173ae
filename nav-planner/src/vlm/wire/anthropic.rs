//! Anthropic Messages (`POST {base}/v1/messages`).
//!
//! Request: `system` as text blocks (the first marked `cache_control:
//! {"type": "ephemeral"}` when [`VlmRequest::cache_system`]; tools come
//! before the system prompt in the cache prefix, so they are cached too),
//! one `user` message with base64 `image` blocks and `text` blocks, follow-up
//! `assistant` turns with `tool_use` blocks and `user` turns with
//! `tool_result` blocks, `tools: [{name, description, input_schema}]`,
//! `tool_choice {type: auto | any | none}` (a restricted choice sends only
//! the allowed tools with `any`), `max_tokens` (required). No sampling
//! parameters: API version 2026-10-21 removed `temperature`, `top_p` and
//! `top_k`, and current models reject them on every version; the request's
//! temperature is sent only with [`AnthropicOptions::sampling`].
//!
//! JSON mode: Anthropic has no response-schema field in the stable API, so a
//! request with a JSON schema and no tools declares one tool named after the
//! schema, with the schema as its `input_schema`, and forces it with
//! `tool_choice {type: "tool"}`; [`decode`] turns that tool's input back into
//! the reply text. With other tools present (or a non-object schema) the
//! schema becomes an instruction in a second, uncached system block.
//!
//! Response: `content` blocks (`text`, `tool_use`; `thinking` skipped),
//! `stop_reason` (`refusal` → [`VlmError::Refused`]), `usage` (`input_tokens`
//! + `cache_read_input_tokens` + `cache_creation_input_tokens` = prompt).

use serde_json::{Map, Value, json};

use super::{arguments_object, base64, count, embedded_error, f32_json, json_instruction, parse_body};
use crate::vlm::{BackendConfig, Part, RawToolCall, ToolChoice, Turn, Usage, VlmError, VlmRequest, VlmResponse};

/// Output limit used when neither the request nor the config sets one
/// (Anthropic requires `max_tokens`).
pub const DEFAULT_MAX_TOKENS: u32 = 1024;

/// Body options that are not part of the request itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnthropicOptions {
    /// The model id.
    pub model: String,
    /// Output limit used when the request sets none.
    pub default_max_tokens: Option<u32>,
    /// Send `strict` on tools (needs the structured-outputs beta header).
    pub strict_tools: bool,
    /// Send the request's `temperature` (opt-in: the current API version
    /// and current models reject sampling parameters).
    pub sampling: bool,
}

impl AnthropicOptions {
    /// Options for a model with the default limit and no strict tools.
    pub fn new(model: impl Into<String>) -> Self {
        Self { model: model.into(), default_max_tokens: None, strict_tools: false, sampling: false }
    }

    /// The options a backend with this config uses.
    pub fn from_config(cfg: &BackendConfig) -> Self {
        Self {
            model: cfg.model_id().to_string(),
            default_max_tokens: cfg.max_tokens,
            strict_tools: cfg.anthropic.strict_tools,
            sampling: cfg.anthropic.sampling,
        }
    }
}

/// The forced tool used for JSON mode, if this request uses one.
pub fn json_tool_name(req: &VlmRequest) -> Option<&str> {
    let spec = req.json_schema.as_ref()?;
    let object_schema = spec.schema.get("type").and_then(Value::as_str) == Some("object");
    (req.tools.is_empty() && object_schema).then_some(spec.name.as_str())
}

fn part_json(part: &Part) -> Value {
    match part {
        Part::Text(t) => json!({"type": "text", "text": t}),
        Part::Image { mime, data, .. } => {
            json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": base64(data)}})
        }
    }
}

/// The request body.
pub fn encode(req: &VlmRequest, opts: &AnthropicOptions) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(opts.model));
    let max_tokens = req.max_tokens.or(opts.default_max_tokens).unwrap_or(DEFAULT_MAX_TOKENS);
    body.insert("max_tokens".into(), json!(max_tokens));

    let forced_json_tool = json_tool_name(req);
    let mut system = Vec::new();
    if !req.system.is_empty() {
        let mut block = json!({"type": "text", "text": req.system});
        if req.cache_system {
            block["cache_control"] = json!({"type": "ephemeral"});
        }
        system.push(block);
    }
    if let (None, Some(spec)) = (forced_json_tool, &req.json_schema) {
        system.push(json!({"type": "text", "text": json_instruction(spec)}));
    }
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }

    let mut messages = vec![json!({"role": "user", "content": req.user.iter().map(part_json).collect::<Vec<_>>()})];
    for turn in &req.turns {
        match turn {
            Turn::Assistant { text, tool_calls } => {
                let mut blocks: Vec<Value> =
                    text.iter().filter(|t| !t.is_empty()).map(|t| json!({"type": "text", "text": t})).collect();
                blocks.extend(tool_calls.iter().map(|c| {
                    json!({"type": "tool_use", "id": c.id, "name": c.name, "input": arguments_object(&c.arguments)})
                }));
                messages.push(json!({"role": "assistant", "content": blocks}));
            }
            Turn::ToolResult { call_id, content, .. } => {
                let block = json!({"type": "tool_result", "tool_use_id": call_id, "content": content});
                // Results of one assistant turn go together in one user turn
                // (roles must alternate).
                let merged = messages.last_mut().and_then(|last| {
                    let is_results = last["role"] == "user"
                        && last["content"].as_array().is_some_and(|b| b.iter().all(|x| x["type"] == "tool_result"));
                    if is_results { last["content"].as_array_mut() } else { None }
                });
                match merged {
                    Some(blocks) => blocks.push(block),
                    None => messages.push(json!({"role": "user", "content": [block]})),
                }
            }
        }
    }
    body.insert("messages".into(), Value::Array(messages));

    let tool_json = |name: &str, description: &str, schema: &Value, strict: bool| {
        let mut t = json!({"name": name, "description": description, "input_schema": schema});
        if opts.strict_tools && strict {
            t["strict"] = json!(true);
        }
        t
    };
    if let (Some(name), Some(spec)) = (forced_json_tool, &req.json_schema) {
        let description = "Give your answer by calling this tool; its input is the JSON reply.";
        body.insert("tools".into(), json!([tool_json(name, description, &spec.schema, spec.strict)]));
        body.insert("tool_choice".into(), json!({"type": "tool", "name": name}));
    } else {
        let tools = req.callable_tools();
        if !tools.is_empty() {
            let tools: Vec<Value> =
                tools.iter().map(|t| tool_json(&t.name, &t.description, &t.parameters, t.strict)).collect();
            body.insert("tools".into(), Value::Array(tools));
            let choice = match &req.tool_choice {
                ToolChoice::Auto => "auto",
                ToolChoice::Required | ToolChoice::Only(_) => "any",
                ToolChoice::None => "none",
            };
            body.insert("tool_choice".into(), json!({"type": choice}));
        }
    }
    if let (true, Some(t)) = (opts.sampling, req.temperature) {
        body.insert("temperature".into(), f32_json(t));
    }
    Value::Object(body)
}

/// Decodes a 2xx response body. `json_tool` is [`json_tool_name`] of the
/// request: that tool's input becomes the reply text.
pub fn decode(body: &[u8], json_tool: Option<&str>) -> Result<VlmResponse, VlmError> {
    let v = parse_body(body)?;
    if let Some(e) = embedded_error(&v) {
        return Err(e);
    }
    let blocks = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| VlmError::InvalidResponse { message: "response has no `content` array".into() })?;
    let stop_reason = v.get("stop_reason").and_then(Value::as_str).map(str::to_string);
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("tool_use") => {
                let name = block.get("name").and_then(Value::as_str).unwrap_or("");
                if name.is_empty() {
                    return Err(VlmError::InvalidResponse {
                        message: format!("tool_use block {} has no name", tool_calls.len()),
                    });
                }
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                if Some(name) == json_tool {
                    text = input.to_string();
                    continue;
                }
                let id = block.get("id").and_then(Value::as_str).filter(|s| !s.is_empty());
                let id = id.map_or_else(|| format!("call_{}", tool_calls.len()), str::to_string);
                tool_calls.push(RawToolCall::new(id, name, input));
            }
            _ => {}
        }
    }
    if stop_reason.as_deref() == Some("refusal") {
        let message = if text.trim().is_empty() { "stop_reason refusal".to_string() } else { text };
        return Err(VlmError::Refused { message });
    }
    let usage = v.get("usage").map_or_else(Usage::default, |u| {
        let cached = count(u, "cache_read_input_tokens");
        let written = count(u, "cache_creation_input_tokens");
        Usage {
            prompt_tokens: count(u, "input_tokens").saturating_add(cached).saturating_add(written),
            completion_tokens: count(u, "output_tokens"),
            cached_tokens: cached,
            cache_write_tokens: written,
        }
    });
    Ok(VlmResponse {
        text,
        tool_calls,
        usage,
        model: v.get("model").and_then(Value::as_str).unwrap_or("").to_string(),
        finish_reason: stop_reason,
        ..VlmResponse::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vlm::ToolSpec;

    #[test]
    fn json_mode_forces_a_tool_and_decodes_its_input_as_text() {
        let schema = json!({"type": "object", "properties": {"angle": {"type": "number"}}});
        let req = VlmRequest::new("sys").text("u").json_schema("decision", schema.clone(), true);
        let body = encode(&req, &AnthropicOptions::new("m"));
        assert_eq!(body["tool_choice"], json!({"type": "tool", "name": "decision"}));
        assert_eq!(body["tools"][0]["input_schema"], schema);
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert!(body.get("temperature").is_none());
        let reply = decode(
            br#"{"content": [{"type": "tool_use", "id": "t1", "name": "decision", "input": {"angle": 30}}],
                "stop_reason": "tool_use"}"#,
            json_tool_name(&req),
        )
        .unwrap();
        assert_eq!(reply.text, r#"{"angle":30}"#);
        assert!(reply.tool_calls.is_empty());
    }

    #[test]
    fn json_mode_with_tools_is_an_uncached_instruction() {
        let req = VlmRequest::new("sys")
            .text("u")
            .cache_system(true)
            .tools(vec![ToolSpec::new("a", "A", json!({"type": "object", "properties": {}}))])
            .json_schema("d", json!({"type": "object"}), true);
        assert_eq!(json_tool_name(&req), None);
        let body = encode(&req, &AnthropicOptions { strict_tools: true, ..AnthropicOptions::new("m") });
        assert_eq!(body["system"][0]["cache_control"], json!({"type": "ephemeral"}));
        assert!(body["system"][1].get("cache_control").is_none());
        assert_eq!(body["tools"][0]["strict"], true);
        assert_eq!(body["tool_choice"], json!({"type": "auto"}));
    }

    #[test]
    fn temperature_is_sent_only_when_sampling_is_opted_in() {
        let req = VlmRequest::new("s").text("u").temperature(0.2);
        assert!(encode(&req, &AnthropicOptions::new("claude-sonnet-5")).get("temperature").is_none());
        let old = AnthropicOptions { sampling: true, ..AnthropicOptions::new("claude-3-5-haiku") };
        assert_eq!(encode(&req, &old)["temperature"], json!(0.2));
    }

    #[test]
    fn decode_refusal_and_missing_content() {
        let e = decode(br#"{"content": [], "stop_reason": "refusal"}"#, None).unwrap_err();
        assert_eq!(e, VlmError::Refused { message: "stop_reason refusal".into() });
        let e = decode(br#"{"type": "message"}"#, None).unwrap_err();
        assert_eq!(e.to_string(), "invalid VLM response: response has no `content` array");
        let e = decode(br#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#, None);
        assert_eq!(e.unwrap_err(), VlmError::Http { status: 502, message: "[overloaded_error] Overloaded".into() });
    }
}
