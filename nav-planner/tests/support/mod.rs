//! Shared pieces of the backend tests: the scripted HTTP server, a tracing
//! capture, request fixtures and the fault suite every backend runs.
#![allow(dead_code)]

pub mod faults;
pub mod logs;
pub mod responder;
pub mod server;

use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use nav_planner::vlm::{
    BackendConfig, ImageDetail, Part, RawToolCall, ToolChoice, ToolSpec, Turn, VisionLanguageModel, VlmRequest,
    build_backend_with_env,
};

/// The key every test backend is configured with; it must never show up in
/// an error message or a log line.
pub const TEST_KEY: &str = "sk-test-NAVKIT-5ecret-0123456789abcdef";

/// Bytes standing in for a JPEG frame.
pub fn fake_jpeg() -> Vec<u8> {
    let mut bytes = vec![0xFF, 0xD8, 0xFF, 0xE0];
    bytes.extend((0u8..60).map(|i| i.wrapping_mul(37)));
    bytes.extend([0xFF, 0xD9]);
    bytes
}

/// Decodes base64 found in a request body.
pub fn unbase64(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(text).expect("valid base64")
}

/// Two of seed 003's navigation tools.
pub fn nav_tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec::new(
            "move_toward",
            "Move the robot in a direction at a specified speed.",
            json!({
                "type": "object",
                "properties": {
                    "direction": {"type": "string", "enum": ["forward", "forward_left", "left", "forward_right", "right", "backward"]},
                    "speed": {"type": "string", "enum": ["slow", "medium", "fast"]},
                    "duration_s": {"type": "number", "description": "Movement duration in seconds (1.0-8.0)"},
                },
                "required": ["direction", "speed", "duration_s"],
                "additionalProperties": false,
            }),
        ),
        ToolSpec::new(
            "rotate",
            "Turn in place.",
            json!({
                "type": "object",
                "properties": {"degrees": {"type": "integer", "enum": [-180, -135, -90, -45, 45, 90, 135, 180]}},
                "required": ["degrees"],
                "additionalProperties": false,
            }),
        ),
    ]
}

/// An explore-style decision request: image + context, tools required,
/// cached system prompt.
pub fn explore_request() -> VlmRequest {
    VlmRequest::new("You are the navigation brain of a small robot. Always call exactly one tool.")
        .image(Part::jpeg(fake_jpeg(), ImageDetail::Low))
        .text("LiDAR: 000° front: 0.45 m (blocked). Previous action: move_toward forward, stopped early.")
        .tools(nav_tools())
        .tool_choice(ToolChoice::Required)
        .temperature(0.2)
        .max_tokens(300)
        .cache_system(true)
        .timeout(Duration::from_secs(2))
}

/// The explore protocol's follow-up after a perception call: the model's
/// tool call and its result, then only action tools are allowed.
pub fn follow_up_request() -> VlmRequest {
    let mut tools = nav_tools();
    tools.push(ToolSpec::new(
        "check_path_clear",
        "Query whether a direction is traversable.",
        json!({"type": "object", "properties": {"direction": {"type": "string"}}, "required": ["direction"]}),
    ));
    VlmRequest::new("You are the navigation brain of a small robot.")
        .text("Where next?")
        .tools(tools)
        .tool_choice(ToolChoice::Only(vec!["move_toward".into(), "rotate".into()]))
        .turn(Turn::Assistant {
            text: Some("Checking the left side first.".into()),
            tool_calls: vec![RawToolCall::new("call_7", "check_path_clear", json!({"direction": "left"}))],
        })
        .turn(Turn::ToolResult {
            call_id: "call_7".into(),
            name: "check_path_clear".into(),
            content: r#"{"clear": true, "obstacle_distance_m": 2.4}"#.into(),
        })
        .timeout(Duration::from_secs(2))
}

/// A JSON-mode request (the objectnav decision schema).
pub fn json_request() -> VlmRequest {
    VlmRequest::new("Answer with the planner decision.")
        .text("Target: chair.")
        .json_schema(
            "objectnav_decision",
            json!({
                "type": "object",
                "properties": {
                    "goal_flag": {"type": "boolean"},
                    "angle": {"type": "number"},
                    "discovered_context": {
                        "type": "object",
                        "properties": {"goal_scene_type": {"type": "string"}, "why": {"type": "string"}},
                        "required": ["goal_scene_type", "why"],
                        "additionalProperties": false,
                    },
                },
                "required": ["goal_flag", "angle", "discovered_context"],
                "additionalProperties": false,
            }),
            true,
        )
        .timeout(Duration::from_secs(2))
}

/// Test settings: short deadlines and back-off so faults finish quickly.
pub fn quick(cfg: BackendConfig) -> BackendConfig {
    BackendConfig { timeout_s: 2.0, connect_timeout_s: 1.0, retry_base_delay_s: 0.01, max_retry_delay_s: 1.0, ..cfg }
}

/// A provider's test kit: how to configure its backend against the server
/// and what its success, empty and refusal answers look like.
pub struct Kit {
    pub name: &'static str,
    /// The backend config for a server at `base_url`.
    pub config: fn(&str) -> BackendConfig,
    /// The environment the backend sees.
    pub env: fn(&str) -> Option<String>,
    /// A successful text answer "ok".
    pub ok: fn() -> Value,
    /// An answer with no choices/candidates/content, and the expected
    /// message fragment.
    pub empty: fn() -> Value,
    pub empty_message: &'static str,
    /// A refusal, and the expected message fragment.
    pub refusal: fn() -> Value,
    pub refusal_message: &'static str,
}

impl Kit {
    pub fn backend(&self, base_url: &str) -> Box<dyn VisionLanguageModel> {
        self.backend_with(base_url, |_| {})
    }

    pub fn backend_with(&self, base_url: &str, tweak: impl FnOnce(&mut BackendConfig)) -> Box<dyn VisionLanguageModel> {
        let mut cfg = quick((self.config)(base_url));
        tweak(&mut cfg);
        build_backend_with_env(&cfg, &self.env).expect("backend builds")
    }
}
