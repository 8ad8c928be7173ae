//! What a request *is*, for matching: its canonical JSON (the model, the
//! request kind and everything the model reads — system prompt, user text,
//! image digests, follow-up turns, tools, output constraints), the SHA-256
//! of that JSON, and a line-by-line rendering for divergence diffs.
//!
//! Deadlines and prompt-caching hints are left out: they change how a
//! request is sent, not what the model is asked.

use crate::vlm::{Part, VlmRequest};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The request as recordings keep it (`request` of a recorded model call):
/// system prompt, user parts (text, or an image's MIME type, size, detail
/// and SHA-256 — never its bytes), turns, tool names and full tool
/// specifications, tool choice, JSON schema, temperature and token limit.
pub fn canonical_request(req: &VlmRequest) -> Value {
    let user: Vec<Value> = req
        .user
        .iter()
        .map(|part| match part {
            Part::Text(t) => json!({"type": "text", "text": t}),
            Part::Image { mime, data, detail } => json!({
                "type": "image", "mime": mime, "bytes": data.len(), "detail": detail.as_str(),
                "sha256": sha256_hex(data),
            }),
        })
        .collect();
    json!({
        "system": req.system,
        "user": user,
        "turns": req.turns,
        "tools": req.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        "tool_specs": req.tools,
        "tool_choice": req.tool_choice,
        "json_schema": req.json_schema,
        "temperature": req.temperature,
        "max_tokens": req.max_tokens,
    })
}

/// The fields of a recorded request that take part in matching: the
/// canonical request without what a recorder adds (where an image was
/// written).
pub fn matching_part(recorded: &Value) -> Value {
    let mut v = recorded.clone();
    if let Some(parts) = v.get_mut("user").and_then(Value::as_array_mut) {
        for part in parts {
            if let Some(o) = part.as_object_mut() {
                o.remove("topic");
                o.remove("sequence");
            }
        }
    }
    v
}

/// The hash a request is matched on: SHA-256 (hex) of the canonical JSON
/// of `model`, `kind` and the request ([`canonical_request`]).
pub fn request_hash(model: &str, req: &VlmRequest) -> String {
    hash_of(model, req.kind.as_str(), &canonical_request(req))
}

/// [`request_hash`] of an already canonical request (a recorded one).
pub fn hash_of(model: &str, kind: &str, canonical: &Value) -> String {
    let doc = json!({"model": model, "kind": kind, "request": matching_part(canonical)});
    sha256_hex(doc.to_string().as_bytes())
}

/// SHA-256 of `bytes`, lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The sections of a request whose digests a step log keeps (it does not
/// keep the text): `system`, `user`, `turns`, `tools`, `output` (tool
/// choice, JSON schema, temperature, token limit).
pub const SECTIONS: [&str; 5] = ["system", "user", "turns", "tools", "output"];

/// The section digests of a canonical request (16 hex digits each), in
/// the order of [`SECTIONS`].
pub fn section_digests(canonical: &Value) -> Vec<String> {
    let c = matching_part(canonical);
    let get = |k: &str| c.get(k).cloned().unwrap_or(Value::Null);
    let output = json!([get("tool_choice"), get("json_schema"), get("temperature"), get("max_tokens")]);
    let values = [get("system"), get("user"), get("turns"), get("tool_specs"), output];
    values.iter().map(|v| sha256_hex(v.to_string().as_bytes())[..16].to_string()).collect()
}

/// The longest rendered line; longer ones are cut (with `…`).
const MAX_LINE_CHARS: usize = 4000;

/// A canonical request as lines for a diff: the model and kind, then the
/// system prompt line by line, each user part (text line by line; an image
/// as one line with its digest), each turn, each tool, and the output
/// constraints. Two requests that match render the same lines.
pub fn request_lines(model: &str, kind: &str, canonical: &Value) -> Vec<String> {
    let c = matching_part(canonical);
    let mut lines = vec![format!("model: {model}"), format!("kind: {kind}")];
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
    for line in text(c.get("system")).lines() {
        lines.push(format!("system: {line}"));
    }
    for (i, part) in c.get("user").and_then(Value::as_array).into_iter().flatten().enumerate() {
        if part.get("type").and_then(Value::as_str) == Some("image") {
            let field = |k: &str| part.get(k).map(|v| v.to_string().trim_matches('"').to_string()).unwrap_or_default();
            lines.push(format!(
                "user[{i}]: image {} {} bytes detail {} sha256 {}",
                field("mime"),
                field("bytes"),
                field("detail"),
                field("sha256")
            ));
        } else {
            for line in text(part.get("text")).lines() {
                lines.push(format!("user[{i}]: {line}"));
            }
        }
    }
    for (i, turn) in c.get("turns").and_then(Value::as_array).into_iter().flatten().enumerate() {
        lines.push(format!("turns[{i}]: {turn}"));
    }
    for (i, tool) in c.get("tool_specs").and_then(Value::as_array).into_iter().flatten().enumerate() {
        lines.push(format!("tools[{i}]: {tool}"));
    }
    for key in ["tool_choice", "json_schema", "temperature", "max_tokens"] {
        lines.push(format!("{key}: {}", c.get(key).unwrap_or(&Value::Null)));
    }
    for line in &mut lines {
        if line.chars().count() > MAX_LINE_CHARS {
            *line = line.chars().take(MAX_LINE_CHARS).chain(std::iter::once('…')).collect();
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vlm::{ImageDetail, RequestKind, ToolSpec};

    fn req() -> VlmRequest {
        VlmRequest::new("You steer a robot.\nBe brief.")
            .image(Part::jpeg(vec![1, 2, 3], ImageDetail::Low))
            .text("Where is the kitchen?")
            .tools(vec![ToolSpec::new("rotate", "turn", json!({"type": "object"}))])
            .temperature(0.2)
    }

    #[test]
    fn the_hash_follows_what_the_model_reads_and_not_how_it_is_sent() {
        let a = request_hash("m", &req());
        assert_eq!(a, request_hash("m", &req().timeout(std::time::Duration::from_secs(3)).cache_system(true)));
        assert_ne!(a, request_hash("m2", &req()));
        assert_ne!(a, request_hash("m", &req().of_kind(RequestKind::Scene)));
        assert_ne!(a, request_hash("m", &VlmRequest { system: "You steer a car.\nBe brief.".into(), ..req() }));
        let mut other_image = req();
        other_image.user[0] = Part::jpeg(vec![1, 2, 4], ImageDetail::Low);
        assert_ne!(a, request_hash("m", &other_image));
    }

    #[test]
    fn a_recorded_request_hashes_like_the_live_one() {
        let mut recorded = canonical_request(&req());
        // what a recorder adds: where the image went
        recorded["user"][0]["topic"] = json!("/navkit/planner/image");
        recorded["user"][0]["sequence"] = json!(7);
        let through_text: Value = serde_json::from_str(&recorded.to_string()).unwrap();
        assert_eq!(hash_of("m", "planner", &through_text), request_hash("m", &req()));
        assert_eq!(section_digests(&through_text), section_digests(&canonical_request(&req())));
    }

    #[test]
    fn lines_show_the_prompt_line_by_line_and_images_by_digest() {
        let lines = request_lines("m", "planner", &canonical_request(&req()));
        assert_eq!(lines[2], "system: You steer a robot.");
        assert_eq!(lines[3], "system: Be brief.");
        assert!(lines[4].starts_with("user[0]: image image/jpeg 3 bytes detail low sha256 "), "{}", lines[4]);
        assert_eq!(lines[5], "user[1]: Where is the kitchen?");
        assert!(lines.iter().any(|l| l.starts_with("tools[0]: {")));
    }
}
