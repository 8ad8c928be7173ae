//! nav-planner VLM codec benchmarks: the per-decision work navkit adds on
//! top of the provider's latency — building each provider's request body for
//! an explore-style decision with an ~80 KB JPEG (base64 included),
//! decoding a tool-call reply, redacting a provider error body, and
//! converting the tool schemas to Gemini's dialect.
//!
//! Run: `cargo bench -p nav-planner --bench vlm`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

use nav_planner::vlm::wire::{anthropic, gemini, gemini_schema, openai};
use nav_planner::vlm::{ImageDetail, Part, ToolChoice, ToolSpec, VlmRequest, redact};

fn tools() -> Vec<ToolSpec> {
    let directions = json!(["forward", "forward_left", "left", "forward_right", "right", "backward"]);
    vec![
        ToolSpec::new(
            "move_toward",
            "Move in a direction at a speed.",
            json!({
                "type": "object",
                "properties": {
                    "direction": {"type": "string", "enum": directions},
                    "speed": {"type": "string", "enum": ["slow", "medium", "fast"]},
                    "duration_s": {"type": "number"},
                },
                "required": ["direction", "speed", "duration_s"], "additionalProperties": false,
            }),
        ),
        ToolSpec::new(
            "rotate",
            "Turn in place.",
            json!({
                "type": "object",
                "properties": {"degrees": {"type": "integer", "enum": [-180, -135, -90, -45, 45, 90, 135, 180]}},
                "required": ["degrees"], "additionalProperties": false,
            }),
        ),
        ToolSpec::new(
            "check_path_clear",
            "Query a direction.",
            json!({
                "type": "object",
                "properties": {"direction": {"type": "string", "enum": directions}, "distance_m": {"type": "number"}},
                "required": ["direction", "distance_m"], "additionalProperties": false,
            }),
        ),
    ]
}

fn request() -> VlmRequest {
    // ~80 KB, the size seed 003 §2.9 gives for a 640×480 JPEG at quality 80.
    let jpeg: Vec<u8> = (0..80_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    VlmRequest::new("You are the navigation brain of a small robot. ".repeat(40))
        .image(Part::jpeg(jpeg, ImageDetail::Low))
        .text("STATE: x=1.2 y=-0.4 heading 045° NE\nLIDAR: 000° front: 0.45 m ...\n".repeat(8))
        .tools(tools())
        .tool_choice(ToolChoice::Required)
        .cache_system(true)
}

fn bench(c: &mut Criterion) {
    let req = request();
    let oa = openai::OpenAiOptions::new("gpt-4o-mini");
    let an = anthropic::AnthropicOptions::new("claude-haiku-4-5");
    c.bench_function("encode+serialize openai (80 KB image)", |b| {
        b.iter(|| serde_json::to_vec(&openai::encode(black_box(&req), &oa)).unwrap().len())
    });
    c.bench_function("encode+serialize gemini (80 KB image)", |b| {
        b.iter(|| serde_json::to_vec(&gemini::encode(black_box(&req), None)).unwrap().len())
    });
    c.bench_function("encode+serialize anthropic (80 KB image)", |b| {
        b.iter(|| serde_json::to_vec(&anthropic::encode(black_box(&req), &an)).unwrap().len())
    });

    let reply = json!({
        "model": "gpt-4o-mini", "choices": [{"finish_reason": "tool_calls", "message": {
            "content": "The corridor ahead is blocked; a doorway opens on the left, so I turn toward it.",
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "move_toward",
                "arguments": "{\"direction\": \"forward_left\", \"speed\": \"slow\", \"duration_s\": 3.0}"}}]}}],
        "usage": {"prompt_tokens": 1200, "completion_tokens": 80, "prompt_tokens_details": {"cached_tokens": 600}},
    })
    .to_string();
    c.bench_function("decode openai tool-call reply", |b| {
        b.iter(|| openai::decode(black_box(reply.as_bytes())).unwrap())
    });

    let body = format!(
        "{{\"error\": {{\"message\": \"Incorrect API key provided: sk-proj-{}. You can find your API key at https://platform.openai.com/account/api-keys.\", \"type\": \"invalid_request_error\"}}}}",
        "x".repeat(40)
    );
    c.bench_function("redact a provider error body", |b| {
        b.iter(|| redact(black_box(&body), &["sk-configured-key-123"]))
    });

    let schemas: Vec<_> = tools().into_iter().map(|t| t.parameters).collect();
    c.bench_function("gemini schema conversion (3 tools)", |b| {
        b.iter(|| schemas.iter().map(|s| gemini_schema::to_gemini(black_box(s))).collect::<Vec<_>>())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
