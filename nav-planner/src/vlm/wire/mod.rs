//! The providers' JSON wire formats: one `encode` (request body) and one
//! `decode` (response body) per provider, as pure functions. The HTTP
//! backends use them; so can `nav prompt` (to print the exact body a backend
//! would send) and offline tests.
//!
//! - [`openai`] — Chat Completions (also OpenRouter, Ollama, vLLM, llama.cpp).
//! - [`gemini`] — `generateContent` for Google AI and Vertex AI, with the
//!   JSON Schema → OpenAPI-subset conversion in [`gemini_schema`].
//! - [`anthropic`] — the Messages API.

pub mod anthropic;
pub mod gemini;
pub mod gemini_schema;
pub mod openai;
pub mod tool_text;

use base64::Engine as _;
use serde_json::Value;

use super::{BackendConfig, JsonSchemaSpec, Provider, VlmError, VlmRequest, redact::truncate_chars};

/// The exact JSON body the configured backend sends for `req` (the model id
/// of Gemini and Vertex goes in the URL, not the body). The HTTP backends
/// build their bodies through the same options, so `nav prompt` prints what
/// is sent.
///
/// ```
/// use nav_planner::vlm::{BackendConfig, Provider, VlmRequest, wire};
///
/// let cfg = BackendConfig::new(Provider::Anthropic);
/// let body = wire::request_body(&cfg, &VlmRequest::new("s").text("u").temperature(0.2));
/// assert_eq!(body["model"], "claude-haiku-4-5");
/// assert!(body.get("temperature").is_none()); // opt-in: [vlm.anthropic] sampling = true
/// ```
pub fn request_body(cfg: &BackendConfig, req: &VlmRequest) -> Value {
    match cfg.provider {
        Provider::OpenAi => openai::encode(req, &openai::OpenAiOptions::from_config(cfg)),
        Provider::Gemini | Provider::Vertex => gemini::encode(req, cfg.max_tokens),
        Provider::Anthropic => anthropic::encode(req, &anthropic::AnthropicOptions::from_config(cfg)),
    }
}

/// Base64 (standard alphabet, padded) of image bytes.
pub(crate) fn base64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// A temperature as JSON without `f32` → `f64` noise (0.2, not
/// 0.20000000298023224).
pub fn f32_json(v: f32) -> Value {
    v.to_string().parse::<f64>().ok().and_then(serde_json::Number::from_f64).map_or(Value::Null, Value::Number)
}

/// The instruction appended to the system prompt where a provider cannot
/// combine its native JSON mode with tools.
pub fn json_instruction(spec: &JsonSchemaSpec) -> String {
    format!(
        "Reply with only one JSON object that matches this JSON Schema (no prose, no code fences):\n{}",
        spec.schema
    )
}

/// Parses a response body as JSON, describing truncation and non-JSON
/// bodies precisely.
pub(crate) fn parse_body(body: &[u8]) -> Result<Value, VlmError> {
    serde_json::from_slice(body).map_err(|e| {
        let what = if e.is_eof() { "truncated JSON" } else { "malformed JSON" };
        let excerpt = truncate_chars(&String::from_utf8_lossy(body), 120);
        VlmError::InvalidResponse {
            message: format!("{what} in the response body ({} bytes): {e}; body starts {excerpt:?}", body.len()),
        }
    })
}

/// A provider error object inside a 2xx body (`{"error": {...}}`, as
/// OpenRouter sends for upstream failures), as [`VlmError::Http`].
pub(crate) fn embedded_error(v: &Value) -> Option<VlmError> {
    let err = v.get("error").filter(|e| !e.is_null())?;
    let status = err
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c))
        .unwrap_or(502);
    Some(VlmError::Http { status, message: error_text(err) })
}

/// The human-readable part of a provider error body (`error.message`, with
/// the provider's type or status in brackets), or the raw text, truncated to
/// 300 characters. Not redacted: pass it through [`redact`](crate::vlm::redact)
/// before showing it.
pub fn error_message(body: &[u8]) -> String {
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => match v.get("error") {
            Some(err) => error_text(err),
            None => truncate_chars(&v.to_string(), 300),
        },
        Err(_) => {
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            if text.is_empty() { "(empty body)".to_string() } else { truncate_chars(text, 300) }
        }
    }
}

fn error_text(err: &Value) -> String {
    let message = err.get("message").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| match err {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    let kind = err.get("type").or_else(|| err.get("status")).and_then(Value::as_str);
    let text = match kind {
        Some(k) => format!("[{k}] {message}"),
        None => message,
    };
    truncate_chars(&text, 300)
}

/// Reads a non-negative token count; an absent (or null) count is 0, a
/// negative or malformed one `u64::MAX`, which
/// [`Usage::is_plausible`](crate::vlm::Usage::is_plausible) then rejects.
pub(crate) fn count(v: &Value, key: &str) -> u64 {
    match v.get(key) {
        None | Some(Value::Null) => 0,
        Some(n) => n.as_u64().unwrap_or(u64::MAX),
    }
}

/// Tool-call arguments as JSON: the parsed text, `{}` for empty text, or the
/// text itself as a JSON string when it does not parse.
pub(crate) fn arguments_from_text(text: &str) -> Value {
    if text.trim().is_empty() {
        return Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// Tool-call arguments as the object providers require in follow-up turns:
/// objects as they are, JSON text parsed, anything else under `"value"`.
pub(crate) fn arguments_object(args: &Value) -> Value {
    match args {
        Value::Object(_) => args.clone(),
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => v,
            _ => serde_json::json!({ "value": s }),
        },
        Value::Null => Value::Object(serde_json::Map::new()),
        other => serde_json::json!({ "value": other }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn body_errors_say_truncated_or_malformed() {
        let e = parse_body(br#"{"choices": [{"mess"#).unwrap_err().to_string();
        assert!(e.starts_with("invalid VLM response: truncated JSON in the response body (19 bytes)"), "{e}");
        let e = parse_body(b"<html>502 Bad Gateway</html>").unwrap_err().to_string();
        assert!(e.contains("malformed JSON") && e.contains("<html>502"), "{e}");
    }

    #[test]
    fn error_messages_are_extracted() {
        let body = br#"{"error": {"message": "Invalid image", "type": "invalid_request_error"}}"#;
        assert_eq!(error_message(body), "[invalid_request_error] Invalid image");
        let google = br#"{"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}}"#;
        assert_eq!(error_message(google), "[RESOURCE_EXHAUSTED] Quota exceeded");
        assert_eq!(error_message(b""), "(empty body)");
        assert_eq!(error_message(b"upstream timeout"), "upstream timeout");
        let embedded = embedded_error(&json!({"error": {"code": 503, "message": "upstream down"}})).unwrap();
        assert_eq!(embedded, VlmError::Http { status: 503, message: "upstream down".into() });
        assert!(embedded_error(&json!({"error": null})).is_none());
    }

    #[test]
    fn arguments_survive_bad_text() {
        assert_eq!(arguments_from_text(r#"{"a": 1}"#), json!({"a": 1}));
        assert_eq!(arguments_from_text(""), json!({}));
        assert_eq!(arguments_from_text("{oops"), json!("{oops"));
        assert_eq!(arguments_object(&json!("{\"a\": 2}")), json!({"a": 2}));
        assert_eq!(arguments_object(&json!("{oops")), json!({"value": "{oops"}));
        assert_eq!(f32_json(0.2), json!(0.2));
    }
}
