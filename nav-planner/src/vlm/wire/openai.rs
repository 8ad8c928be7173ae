//! OpenAI Chat Completions (`POST {base}/chat/completions`), also spoken by
//! OpenRouter, Ollama, vLLM and llama.cpp server.
//!
//! Request: `system` + `user` messages (text and `image_url` data URLs with
//! `detail`), follow-up `assistant` (`tool_calls`) and `tool` messages,
//! `tools: [{"type": "function", "function": {name, description,
//! parameters, strict}}]`, `tool_choice` `auto` / `required` / `none` (a
//! restricted choice sends only the allowed tools with `required`),
//! `parallel_tool_calls: false` with tools (reasoning text
//! then one action), `response_format: {"type": "json_schema", ...}`,
//! `max_completion_tokens` for OpenAI itself and reasoning models
//! (`max_tokens` for compatible servers), no `temperature` for reasoning
//! models ([`is_reasoning_model`]).
//!
//! Response: `choices[0].message` (`content`, `tool_calls`, `refusal`),
//! `finish_reason`, `usage` with `prompt_tokens_details.cached_tokens`.

use serde_json::{Map, Value, json};

use super::{arguments_from_text, base64, count, embedded_error, f32_json, json_instruction, parse_body, tool_text};
use crate::vlm::{BackendConfig, Part, RawToolCall, ToolChoice, Turn, Usage, VlmError, VlmRequest, VlmResponse};

/// Body options that are not part of the request itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiOptions {
    /// The model id.
    pub model: String,
    /// Output limit used when the request sets none.
    pub default_max_tokens: Option<u32>,
    /// Send the limit as `max_completion_tokens` (required by OpenAI's newer
    /// models) rather than `max_tokens` (what compatible servers accept).
    pub max_completion_tokens_field: bool,
    /// Send the request's `temperature`; off for reasoning models, which
    /// accept only the default.
    pub sampling: bool,
    /// How a request's JSON schema is sent (the capability fallback of
    /// compatible servers steps down through these).
    pub json_mode: JsonMode,
    /// Describe the tools in the system prompt instead of sending native
    /// `tools` (servers that reject or ignore them): the reply's call is
    /// parsed from its text ([`super::tool_text`]); tool turns go as plain
    /// assistant and user messages.
    pub tools_in_prompt: bool,
}

/// How a JSON schema reaches an OpenAI-compatible server, most capable
/// first. A backend starts at [`JsonMode::JsonSchema`] and steps down when
/// the server rejects the field (llama-cpp-python accepts only `text` and
/// `json_object`, with an optional `schema` it turns into a grammar).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum JsonMode {
    /// `response_format: {"type": "json_schema", "json_schema": {…}}`.
    #[default]
    JsonSchema,
    /// `response_format: {"type": "json_object", "schema": {…}}`, plus the
    /// schema as an instruction in the system prompt.
    JsonObject,
    /// No `response_format`: the schema as an instruction only.
    PromptOnly,
}

impl JsonMode {
    /// The next less capable mode, if any.
    pub fn fallback(self) -> Option<Self> {
        match self {
            JsonMode::JsonSchema => Some(JsonMode::JsonObject),
            JsonMode::JsonObject => Some(JsonMode::PromptOnly),
            JsonMode::PromptOnly => None,
        }
    }

    /// The name used in logs: `json_schema`, `json_object` or `prompt`.
    pub fn as_str(self) -> &'static str {
        match self {
            JsonMode::JsonSchema => "json_schema",
            JsonMode::JsonObject => "json_object",
            JsonMode::PromptOnly => "prompt",
        }
    }
}

impl OpenAiOptions {
    /// Options for a model with `max_tokens` and no default limit; a
    /// reasoning model ([`is_reasoning_model`]) gets `max_completion_tokens`
    /// and no temperature.
    pub fn new(model: impl Into<String>) -> Self {
        let model = model.into();
        let reasoning = is_reasoning_model(&model);
        Self {
            model,
            default_max_tokens: None,
            max_completion_tokens_field: reasoning,
            sampling: !reasoning,
            json_mode: JsonMode::JsonSchema,
            tools_in_prompt: false,
        }
    }

    /// The options a backend with this config uses: OpenAI's own endpoint
    /// (no `base_url`, or `api.openai.com`) and reasoning models get
    /// `max_completion_tokens`; compatible servers `max_tokens`.
    pub fn from_config(cfg: &BackendConfig) -> Self {
        let mut options = Self::new(cfg.model_id());
        options.default_max_tokens = cfg.max_tokens;
        options.max_completion_tokens_field |= cfg.base_url.as_deref().is_none_or(|u| u.contains("api.openai.com"));
        options
    }
}

/// True for OpenAI's reasoning models — the o-series (`o1`, `o3-mini`,
/// `o4-mini`…) and GPT-5 (`gpt-5`, `gpt-5.1-mini`…), also behind a router
/// prefix (`openai/gpt-5`) — which reject `max_tokens` and any temperature
/// but the default.
///
/// ```
/// use nav_planner::vlm::wire::openai::is_reasoning_model;
/// assert!(is_reasoning_model("o4-mini") && is_reasoning_model("openai/gpt-5-mini"));
/// assert!(!is_reasoning_model("gpt-4o-mini") && !is_reasoning_model("qwen2.5-vl:7b"));
/// ```
pub fn is_reasoning_model(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    let o_series = name.strip_prefix('o').is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
    o_series || name.starts_with("gpt-5")
}

fn part_json(part: &Part) -> Value {
    match part {
        Part::Text(t) => json!({"type": "text", "text": t}),
        Part::Image { mime, data, detail } => json!({
            "type": "image_url",
            "image_url": {"url": format!("data:{mime};base64,{}", base64(data)), "detail": detail.as_str()},
        }),
    }
}

/// A user message's content: text alone goes as one plain string (its parts
/// joined by a blank line), which every compatible server accepts — chat
/// templates such as SmolLM2's under llama-cpp-python fail on list-form
/// content (HTTP 500 "can only concatenate str (not "list") to str") —
/// and a message with an image as content parts.
fn user_content(parts: &[Part]) -> Value {
    let texts: Option<Vec<&str>> = parts
        .iter()
        .map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            Part::Image { .. } => None,
        })
        .collect();
    match texts {
        Some(texts) => Value::String(texts.join("\n\n")),
        None => Value::Array(parts.iter().map(part_json).collect()),
    }
}

/// The request body.
pub fn encode(req: &VlmRequest, opts: &OpenAiOptions) -> Value {
    let mut messages = Vec::new();
    let mut system = req.system.clone();
    let tools = req.callable_tools();
    let prompt_tools = opts.tools_in_prompt && !tools.is_empty() && req.tool_choice != ToolChoice::None;
    let mut extra = Vec::new();
    if let (Some(spec), JsonMode::JsonObject | JsonMode::PromptOnly) = (&req.json_schema, opts.json_mode) {
        extra.push(json_instruction(spec));
    }
    if prompt_tools {
        extra.push(tool_text::tools_instruction(&tools));
    }
    for e in extra {
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(&e);
    }
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system}));
    }
    messages.push(json!({"role": "user", "content": user_content(&req.user)}));
    if opts.tools_in_prompt {
        messages.extend(req.turns.iter().map(text_turn));
    }
    for turn in req.turns.iter().filter(|_| !opts.tools_in_prompt) {
        match turn {
            Turn::Assistant { text, tool_calls } => {
                let mut m = Map::new();
                m.insert("role".into(), json!("assistant"));
                m.insert("content".into(), text.as_ref().map_or(Value::Null, |t| json!(t)));
                if !tool_calls.is_empty() {
                    let calls: Vec<Value> = tool_calls
                        .iter()
                        .map(|c| {
                            let args = match &c.arguments {
                                Value::String(raw) => raw.clone(),
                                other => other.to_string(),
                            };
                            json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": args}})
                        })
                        .collect();
                    m.insert("tool_calls".into(), Value::Array(calls));
                }
                messages.push(Value::Object(m));
            }
            Turn::ToolResult { call_id, content, .. } => {
                messages.push(json!({"role": "tool", "tool_call_id": call_id, "content": content}));
            }
        }
    }

    let mut body = Map::new();
    body.insert("model".into(), json!(opts.model));
    body.insert("messages".into(), Value::Array(messages));
    if !tools.is_empty() && !opts.tools_in_prompt {
        let tools: Vec<Value> = tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters, "strict": t.strict,
                }})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let choice = match &req.tool_choice {
            ToolChoice::Auto => "auto",
            ToolChoice::Required | ToolChoice::Only(_) => "required",
            ToolChoice::None => "none",
        };
        body.insert("tool_choice".into(), json!(choice));
        body.insert("parallel_tool_calls".into(), json!(false));
    }
    // the reply format: the request's schema, or one call of the prompt's tools
    let schema = match (&req.json_schema, prompt_tools) {
        (Some(spec), _) => Some((spec.name.as_str(), spec.schema.clone(), spec.strict)),
        (None, true) => Some(("tool_call", tool_text::call_schema(&tools), false)),
        (None, false) => None,
    };
    if let Some((name, schema, strict)) = schema {
        let format = match opts.json_mode {
            JsonMode::JsonSchema => Some(json!({"type": "json_schema", "json_schema":
                {"name": name, "schema": schema, "strict": strict}})),
            JsonMode::JsonObject => Some(json!({"type": "json_object", "schema": schema})),
            JsonMode::PromptOnly => None,
        };
        if let Some(format) = format {
            body.insert("response_format".into(), format);
        }
    }
    if let (true, Some(t)) = (opts.sampling, req.temperature) {
        body.insert("temperature".into(), f32_json(t));
    }
    if let Some(n) = req.max_tokens.or(opts.default_max_tokens) {
        let field = if opts.max_completion_tokens_field { "max_completion_tokens" } else { "max_tokens" };
        body.insert(field.into(), json!(n));
    }
    Value::Object(body)
}

/// A tool turn as plain text, for servers without native tools: the
/// assistant's call as the JSON it was asked to write (`{"name", "parameters"}`), a result as a user
/// message naming the tool.
fn text_turn(turn: &Turn) -> Value {
    match turn {
        Turn::Assistant { text, tool_calls } => {
            let mut content = text.clone().unwrap_or_default();
            for c in tool_calls {
                if !content.is_empty() {
                    content.push('\n');
                }
                content.push_str(&json!({"name": c.name, "parameters": c.arguments}).to_string());
            }
            json!({"role": "assistant", "content": content})
        }
        Turn::ToolResult { name, content, .. } => {
            json!({"role": "user", "content": format!("Result of {name}: {content}")})
        }
    }
}

fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        // Some compatible servers answer with content parts.
        Some(Value::Array(parts)) => {
            parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("")
        }
        _ => String::new(),
    }
}

/// Decodes a 2xx response body. Latency, attempts and cost are left for the
/// caller. A refusal with nothing usable, or a content-filter stop with no
/// output, is [`VlmError::Refused`].
pub fn decode(body: &[u8]) -> Result<VlmResponse, VlmError> {
    let v = parse_body(body)?;
    if let Some(e) = embedded_error(&v) {
        return Err(e);
    }
    let invalid = |message: &str| VlmError::InvalidResponse { message: message.to_string() };
    let choice = match v.get("choices") {
        Some(Value::Array(choices)) => {
            choices.first().ok_or_else(|| invalid("response has an empty `choices` array"))?
        }
        Some(_) => return Err(invalid("`choices` is not an array")),
        None => return Err(invalid("response has no `choices`")),
    };
    let message =
        choice.get("message").filter(|m| m.is_object()).ok_or_else(|| invalid("choice 0 has no `message`"))?;
    let text = content_text(message.get("content"));
    let mut tool_calls = Vec::new();
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        for (i, call) in calls.iter().enumerate() {
            let function = call.get("function");
            let name = function.and_then(|f| f.get("name")).and_then(Value::as_str).unwrap_or("");
            if name.is_empty() {
                return Err(VlmError::InvalidResponse { message: format!("tool call {i} has no function name") });
            }
            let arguments = match function.and_then(|f| f.get("arguments")) {
                Some(Value::String(s)) => arguments_from_text(s),
                Some(Value::Null) | None => json!({}),
                Some(other) => other.clone(),
            };
            let id = call.get("id").and_then(Value::as_str).filter(|s| !s.is_empty());
            tool_calls.push(RawToolCall::new(id.map_or_else(|| format!("call_{i}"), str::to_string), name, arguments));
        }
    }
    let refusal = message.get("refusal").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    let finish_reason = choice.get("finish_reason").and_then(Value::as_str).map(str::to_string);
    let nothing = text.trim().is_empty() && tool_calls.is_empty();
    if nothing {
        if let Some(r) = &refusal {
            return Err(VlmError::Refused { message: r.clone() });
        }
        if finish_reason.as_deref() == Some("content_filter") {
            return Err(VlmError::Refused { message: "the provider's content filter stopped the reply".into() });
        }
    }
    let usage = v.get("usage").map_or_else(Usage::default, |u| Usage {
        prompt_tokens: count(u, "prompt_tokens"),
        completion_tokens: count(u, "completion_tokens"),
        cached_tokens: u.get("prompt_tokens_details").map_or(0, |d| count(d, "cached_tokens")),
        cache_write_tokens: 0,
    });
    Ok(VlmResponse {
        text,
        tool_calls,
        usage,
        model: v.get("model").and_then(Value::as_str).unwrap_or("").to_string(),
        finish_reason,
        refusal,
        ..VlmResponse::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vlm::{ImageDetail, ToolSpec};

    #[test]
    fn restricted_choice_sends_only_allowed_tools() {
        let schema = json!({"type": "object", "properties": {}});
        let req = VlmRequest::new("s")
            .text("u")
            .tools(vec![ToolSpec::new("a", "A", schema.clone()), ToolSpec::new("b", "B", schema)])
            .tool_choice(ToolChoice::Only(vec!["b".into()]));
        let body = encode(&req, &OpenAiOptions::new("m"));
        assert_eq!(body["tools"].as_array().unwrap().len(), 1);
        assert_eq!(body["tools"][0]["function"]["name"], "b");
        assert_eq!(body["tool_choice"], "required");
        assert_eq!(body["messages"][1]["content"], "u");
    }

    #[test]
    fn text_only_content_is_one_string() {
        let req = VlmRequest::new("s").text("first").text("second");
        assert_eq!(encode(&req, &OpenAiOptions::new("m"))["messages"][1]["content"], "first\n\nsecond");
        let req = VlmRequest::new("").text("t").image(Part::png(vec![1], ImageDetail::Low));
        let content = &encode(&req, &OpenAiOptions::new("m"))["messages"][0]["content"];
        assert_eq!(content.as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn images_are_data_urls() {
        let req = VlmRequest::new("").image(Part::png(vec![1, 2, 3], ImageDetail::High)).text("t");
        let body = encode(
            &req,
            &OpenAiOptions {
                max_completion_tokens_field: true,
                default_max_tokens: Some(9),
                ..OpenAiOptions::new("m")
            },
        );
        assert_eq!(body["messages"][0]["role"], "user");
        assert_eq!(body["messages"][0]["content"][0]["image_url"]["url"], "data:image/png;base64,AQID");
        assert_eq!(body["messages"][0]["content"][0]["image_url"]["detail"], "high");
        assert_eq!(body["max_completion_tokens"], 9);
        assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
    }

    #[test]
    fn json_modes_step_down_to_the_prompt() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
        let req = VlmRequest::new("sys").text("u").json_schema("d", schema.clone(), true);
        let mut opts = OpenAiOptions::new("m");
        assert_eq!(encode(&req, &opts)["response_format"]["type"], "json_schema");
        assert_eq!(encode(&req, &opts)["messages"][0]["content"], "sys");
        opts.json_mode = JsonMode::JsonObject;
        let body = encode(&req, &opts);
        assert_eq!(body["response_format"], json!({"type": "json_object", "schema": schema}));
        assert!(body["messages"][0]["content"].as_str().unwrap().contains("JSON Schema"));
        opts.json_mode = JsonMode::PromptOnly;
        let body = encode(&req, &opts);
        assert!(body.get("response_format").is_none());
        assert!(body["messages"][0]["content"].as_str().unwrap().starts_with("sys\n\nReply with only one JSON"));
        assert_eq!(JsonMode::JsonSchema.fallback(), Some(JsonMode::JsonObject));
        assert_eq!(JsonMode::PromptOnly.fallback(), None);
    }

    #[test]
    fn reasoning_models_get_the_newer_limit_and_no_temperature() {
        let req = VlmRequest::new("s").text("u").temperature(0.2).max_tokens(50);
        let body = encode(&req, &OpenAiOptions::new("gpt-5-mini"));
        assert_eq!(body["max_completion_tokens"], 50);
        assert!(body.get("temperature").is_none() && body.get("max_tokens").is_none());
        let body = encode(&req, &OpenAiOptions::new("qwen2.5-vl"));
        assert_eq!((body["max_tokens"].clone(), body["temperature"].clone()), (json!(50), json!(0.2)));
    }

    #[test]
    fn decode_handles_odd_but_valid_replies() {
        let r = decode(
            br#"{"choices": [{"message": {"content": [{"type": "text", "text": "hi"}], "tool_calls": [
            {"function": {"name": "f", "arguments": "{bad"}}]}, "finish_reason": "tool_calls"}]}"#,
        )
        .unwrap();
        assert_eq!(r.text, "hi");
        assert_eq!(r.tool_calls[0], RawToolCall::new("call_0", "f", json!("{bad")));
        assert_eq!(r.usage, Usage::default());
        let e = decode(br#"{"choices": [{"message": {"content": null}, "finish_reason": "content_filter"}]}"#);
        assert!(matches!(e, Err(VlmError::Refused { .. })));
        let e = decode(br#"{"choices": [{"message": {"tool_calls": [{"function": {}}]}}]}"#).unwrap_err();
        assert_eq!(e.to_string(), "invalid VLM response: tool call 0 has no function name");
    }
}
