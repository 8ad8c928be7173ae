//! Anthropic Messages backend against a real HTTP server on loopback.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use serde_json::{Value, json};

use nav_planner::vlm::{BackendConfig, Provider, VisionLanguageModel, VlmError};
use support::server::{Recorded, Reply, ScriptedServer};
use support::{Kit, TEST_KEY, explore_request, faults, follow_up_request, json_request, unbase64};

fn message(content: Value, stop: &str) -> Value {
    json!({
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5-20251001",
        "content": content,
        "stop_reason": stop,
        "usage": {"input_tokens": 300, "output_tokens": 100, "cache_read_input_tokens": 1000,
                  "cache_creation_input_tokens": 0},
    })
}

fn ok_body() -> Value {
    message(json!([{"type": "text", "text": "ok"}]), "end_turn")
}

const KIT: Kit = Kit {
    name: "anthropic",
    config: |url| BackendConfig::new(Provider::Anthropic).with_base_url(url).with_api_key(TEST_KEY),
    env: |_| None,
    ok: ok_body,
    empty: || json!({"id": "msg_1", "type": "message", "stop_reason": "end_turn"}),
    empty_message: "response has no `content` array",
    refusal: || message(json!([]), "refusal"),
    refusal_message: "stop_reason refusal",
};

fn shape(r: &Recorded) -> Value {
    json!({
        "method": r.method,
        "path": r.path,
        "x-api-key": r.header("x-api-key").map(|v| v.replace(TEST_KEY, "[KEY]")),
        "anthropic-version": r.header("anthropic-version"),
        "body": r.body,
    })
}

#[tokio::test]
async fn explore_request_shape_and_tool_use_answer() {
    let body = message(
        json!([
            {"type": "text", "text": "A doorway opens to the left."},
            {"type": "tool_use", "id": "toolu_01", "name": "move_toward",
             "input": {"direction": "forward_left", "speed": "slow", "duration_s": 3.0}},
        ]),
        "tool_use",
    );
    let server = ScriptedServer::start(vec![Reply::json(body)]).await;
    let reply = KIT.backend(&server.url()).complete(explore_request()).await.unwrap();
    assert_eq!(reply.text, "A doorway opens to the left.");
    assert_eq!(reply.tool_calls[0].id, "toolu_01");
    assert_eq!(reply.tool_calls[0].arguments["direction"], "forward_left");
    assert_eq!(reply.finish_reason.as_deref(), Some("tool_use"));

    let request = server.only_request();
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some(TEST_KEY));
    assert_eq!(request.header("anthropic-version"), Some(nav_planner::vlm::ANTHROPIC_VERSION));
    assert_eq!(request.header("authorization"), None);
    let source = &request.body["messages"][0]["content"][0]["source"];
    assert_eq!(source["media_type"], "image/jpeg");
    assert_eq!(unbase64(source["data"].as_str().unwrap()), support::fake_jpeg());
    assert_eq!(request.body["system"][0]["cache_control"], json!({"type": "ephemeral"}));
    insta::assert_json_snapshot!("anthropic_explore_request", shape(&request), {
        ".body.messages[0].content[0].source.data" => "[image base64]",
    });
}

#[tokio::test]
async fn follow_up_turns_become_tool_use_and_tool_result_blocks() {
    let body = message(
        json!([{"type": "tool_use", "id": "toolu_02", "name": "rotate", "input": {"degrees": 90}}]),
        "tool_use",
    );
    let server = ScriptedServer::start(vec![Reply::json(body)]).await;
    let reply = KIT.backend(&server.url()).complete(follow_up_request()).await.unwrap();
    assert_eq!(reply.tool_calls[0].name, "rotate");
    let sent = server.only_request().body;
    assert_eq!(sent["messages"][2]["content"][0]["type"], "tool_result");
    assert_eq!(sent["tool_choice"], json!({"type": "any"}));
    insta::assert_json_snapshot!("anthropic_follow_up_request", sent);
}

#[tokio::test]
async fn json_mode_through_a_forced_tool_with_cache_usage() {
    let decision =
        json!({"goal_flag": false, "angle": 60, "discovered_context": {"goal_scene_type": "kitchen", "why": "fridge"}});
    let body = message(
        json!([{"type": "tool_use", "id": "toolu_03", "name": "objectnav_decision", "input": decision}]),
        "tool_use",
    );
    let server = ScriptedServer::start(vec![Reply::json(body)]).await;
    let reply = KIT.backend(&server.url()).complete(json_request()).await.unwrap();
    assert_eq!(serde_json::from_str::<Value>(&reply.text).unwrap(), decision);
    assert!(reply.tool_calls.is_empty(), "the JSON-mode tool is not a navigation tool call");
    assert_eq!(reply.model, "claude-haiku-4-5-20251001");
    assert_eq!(
        (reply.usage.prompt_tokens, reply.usage.cached_tokens, reply.usage.completion_tokens),
        (1300, 1000, 100)
    );
    // Haiku 4.5: 300 × $1 + 1000 × $0.10 + 100 × $5 per 1M tokens.
    let expected = (300.0 * 1.0 + 1000.0 * 0.10 + 100.0 * 5.0) / 1e6;
    assert!((reply.cost_usd.unwrap() - expected).abs() < 1e-12);
    let sent = server.only_request().body;
    assert_eq!(sent["tool_choice"], json!({"type": "tool", "name": "objectnav_decision"}));
    insta::assert_json_snapshot!("anthropic_json_request", sent);
}

#[tokio::test]
async fn strict_tools_send_the_beta_header() {
    let server = ScriptedServer::start(vec![Reply::json(ok_body())]).await;
    let vlm = KIT.backend_with(&server.url(), |c| c.anthropic.strict_tools = true);
    vlm.complete(explore_request()).await.unwrap();
    let request = server.only_request();
    assert_eq!(request.header("anthropic-beta"), Some("structured-outputs-2025-11-13"));
    assert_eq!(request.body["tools"][0]["strict"], true);
}

#[tokio::test]
async fn overloaded_529_is_retried() {
    let overloaded = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let server = ScriptedServer::start(vec![Reply::status(529, overloaded), Reply::json(ok_body())]).await;
    let reply = KIT.backend(&server.url()).complete(json_request()).await.unwrap();
    assert_eq!(reply.attempts, 2);
}

#[tokio::test]
async fn missing_key_is_named() {
    let err =
        nav_planner::vlm::build_backend_with_env(&BackendConfig::new(Provider::Anthropic), &|_| None).err().unwrap();
    assert!(matches!(&err, VlmError::MissingCredentials { env_vars, .. } if env_vars == &["ANTHROPIC_API_KEY"]));
}

macro_rules! fault_tests {
    ($kit:expr, $($name:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $name() {
                faults::$name(&$kit).await;
            }
        )*
    };
}

fault_tests!(
    KIT,
    slow_answer_times_out,
    hung_attempt_is_retried,
    rate_limit_honours_retry_after,
    rate_limit_exhausts_attempts,
    rate_limit_beyond_deadline_fails_fast,
    server_error_is_retried,
    server_errors_exhaust_attempts,
    client_error_is_not_retried,
    oversized_reply_is_rejected,
    reset_mid_body_is_retried,
    resets_exhaust_attempts,
    refused_connection,
    truncated_json_is_invalid,
    empty_answer_is_invalid,
    refusal_is_refused,
    secrets_never_leak,
);
