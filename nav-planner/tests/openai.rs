//! OpenAI Chat Completions backend against a real HTTP server on loopback.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use serde_json::{Value, json};

use nav_planner::vlm::{
    BackendConfig, ImageDetail, Part, Provider, VisionLanguageModel, VlmError, build_backend_with_env,
};
use support::server::{Recorded, Reply, ScriptedServer};
use support::{Kit, TEST_KEY, explore_request, faults, follow_up_request, json_request, quick, unbase64};

fn ok_body() -> Value {
    completion(json!({"role": "assistant", "content": "ok"}), "stop")
}

fn completion(message: Value, finish: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100,
                  "prompt_tokens_details": {"cached_tokens": 400}},
    })
}

const KIT: Kit = Kit {
    name: "openai",
    config: |url| BackendConfig::new(Provider::OpenAi).with_base_url(format!("{url}/v1")).with_api_key(TEST_KEY),
    env: |_| None,
    ok: ok_body,
    empty: || json!({"id": "x", "choices": [], "usage": {"prompt_tokens": 5}}),
    empty_message: "empty `choices` array",
    refusal: || completion(json!({"role": "assistant", "content": null, "refusal": "I can't help with that."}), "stop"),
    refusal_message: "the model refused: I can't help with that.",
};

/// The recorded request as a snapshot document: method, path, the headers
/// that matter (credential redacted) and the body (image bytes redacted).
fn shape(r: &Recorded) -> Value {
    json!({
        "method": r.method,
        "path": r.path,
        "authorization": r.header("authorization").map(|v| v.replace(TEST_KEY, "[KEY]")),
        "content-type": r.header("content-type"),
        "body": r.body,
    })
}

#[tokio::test]
async fn explore_request_shape_and_tool_call_answer() {
    let answer = completion(
        json!({"role": "assistant", "content": "The path ahead is blocked; turning left.", "tool_calls": [
            {"id": "call_abc", "type": "function", "function": {"name": "rotate", "arguments": "{\"degrees\": -90}"}}
        ]}),
        "tool_calls",
    );
    let server = ScriptedServer::start(vec![Reply::json(answer)]).await;
    let vlm = KIT.backend(&server.url());
    let reply = vlm.complete(explore_request()).await.unwrap();

    assert_eq!(reply.text, "The path ahead is blocked; turning left.");
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].id, "call_abc");
    assert_eq!(reply.tool_calls[0].name, "rotate");
    assert_eq!(reply.tool_calls[0].arguments, json!({"degrees": -90}));
    assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));

    let request = server.only_request();
    assert_eq!(request.header("authorization"), Some(format!("Bearer {TEST_KEY}").as_str()));
    let url = request.body["messages"][1]["content"][0]["image_url"]["url"].as_str().unwrap();
    let data = url.strip_prefix("data:image/jpeg;base64,").expect("a JPEG data URL");
    assert_eq!(unbase64(data), support::fake_jpeg(), "image bytes survive the trip");
    insta::assert_json_snapshot!("openai_explore_request", shape(&request), {
        ".body.messages[1].content[0].image_url.url" => "[image data URL]",
    });
}

#[tokio::test]
async fn follow_up_turns_and_restricted_tool_choice() {
    let answer = completion(
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_2", "type": "function", "function": {"name": "move_toward",
             "arguments": "{\"direction\": \"left\", \"speed\": \"slow\", \"duration_s\": 3.0}"}}
        ]}),
        "tool_calls",
    );
    let server = ScriptedServer::start(vec![Reply::json(answer)]).await;
    let reply = KIT.backend(&server.url()).complete(follow_up_request()).await.unwrap();
    assert_eq!(reply.tool_calls[0].arguments["direction"], "left");
    assert_eq!(reply.text, "");
    let body = server.only_request().body;
    let names: Vec<&str> =
        body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["move_toward", "rotate"], "only the allowed tools are offered");
    insta::assert_json_snapshot!("openai_follow_up_request", body);
}

#[tokio::test]
async fn json_mode_text_usage_and_cost() {
    let decision =
        r#"{"goal_flag": false, "angle": 30, "discovered_context": {"goal_scene_type": "living room", "why": "sofa"}}"#;
    let server =
        ScriptedServer::start(vec![Reply::json(completion(json!({"role": "assistant", "content": decision}), "stop"))])
            .await;
    let vlm = KIT.backend(&server.url());
    let reply = vlm.complete(json_request()).await.unwrap();
    assert_eq!(reply.text, decision);
    assert!(reply.tool_calls.is_empty());
    assert_eq!(reply.model, "gpt-4o-mini-2024-07-18");
    assert_eq!(reply.attempts, 1);
    assert!(reply.latency_ms > 0.0);
    assert_eq!((reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.cached_tokens), (1000, 100, 400));
    // gpt-4o-mini: 600 × $0.15 + 400 × $0.075 + 100 × $0.60 per 1M tokens.
    let expected = (600.0 * 0.15 + 400.0 * 0.075 + 100.0 * 0.60) / 1e6;
    assert!((reply.cost_usd.unwrap() - expected).abs() < 1e-12);
    let body = server.only_request().body;
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(body["response_format"]["json_schema"]["strict"], true);
    insta::assert_json_snapshot!("openai_json_request", body);
}

#[tokio::test]
async fn local_servers_need_no_key_and_get_no_auth_header() {
    let server = ScriptedServer::start(vec![Reply::json(ok_body())]).await;
    let cfg = quick(
        BackendConfig::new(Provider::OpenAi).with_model("qwen2.5-vl:7b").with_base_url(format!("{}/v1/", server.url())),
    );
    let vlm = build_backend_with_env(&cfg, &|_| None).unwrap();
    assert_eq!(vlm.describe().model, "qwen2.5-vl:7b");
    let reply = vlm.complete(json_request()).await.unwrap();
    assert_eq!(reply.text, "ok");
    let request = server.only_request();
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.body["model"], "qwen2.5-vl:7b");
    assert!(request.body.get("max_completion_tokens").is_none());
}

#[tokio::test]
async fn remote_servers_need_a_key() {
    let cfg = BackendConfig::new(Provider::OpenAi).with_base_url("https://openrouter.ai/api/v1");
    let err = build_backend_with_env(&cfg, &|_| None).err().unwrap();
    assert_eq!(
        err,
        VlmError::MissingCredentials {
            provider: "openai".into(),
            env_vars: vec!["OPENROUTER_API_KEY".into(), "OPENAI_API_KEY".into()],
            hint: "`api_key` in the backend config".into(),
        }
    );
    let found = build_backend_with_env(&cfg, &|v| (v == "OPENROUTER_API_KEY").then(|| "or-key".to_string()));
    assert_eq!(found.unwrap().describe().endpoint.as_deref(), Some("https://openrouter.ai/api/v1"));
}

#[tokio::test]
async fn invalid_requests_never_reach_the_server() {
    let server = ScriptedServer::start(vec![]).await;
    let vlm = KIT.backend(&server.url());
    let err = vlm.complete(nav_planner::vlm::VlmRequest::new("no user message")).await.unwrap_err();
    assert!(matches!(err, VlmError::Config { .. }), "{err:?}");
    assert_eq!(server.request_count(), 0);
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

#[tokio::test]
async fn structured_output_falls_back_and_remembers_what_worked() {
    let decision = r#"{"goal_flag": false, "angle": 30}"#;
    let llama_rejects = || {
        Reply::status(
            500,
            json!({"error": {"message": "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), \
                'msg': \"Input should be 'text' or 'json_object'\"}]", "type": "internal_server_error"}}),
        )
    };
    let answer = || Reply::json(completion(json!({"role": "assistant", "content": decision}), "stop"));
    // json_schema rejected (the transport's retries of the 500 included),
    // then json_object with the schema answers, and the next call starts
    // there.
    let server =
        ScriptedServer::start(vec![llama_rejects(), llama_rejects(), llama_rejects(), answer(), answer()]).await;
    let vlm = KIT.backend_with(&server.url(), |c| c.max_attempts = 3);
    assert_eq!(vlm.complete(json_request()).await.unwrap().text, decision);
    assert_eq!(vlm.complete(json_request()).await.unwrap().text, decision);
    let formats: Vec<Value> = server.requests().iter().map(|r| r.body["response_format"]["type"].clone()).collect();
    assert_eq!(
        formats,
        vec![
            json!("json_schema"),
            json!("json_schema"),
            json!("json_schema"),
            json!("json_object"),
            json!("json_object")
        ]
    );
    let body = &server.requests()[3].body;
    assert_eq!(body["response_format"]["schema"], json_request().json_schema.unwrap().schema);
    assert!(body["messages"][0]["content"].as_str().unwrap().contains("Reply with only one JSON object"));

    // a server that rejects json_object too ends with the schema in the prompt only
    let rejects =
        |what: &str| Reply::status(400, json!({"error": {"message": format!("unsupported response_format {what}")}}));
    let server = ScriptedServer::start(vec![rejects("json_schema"), rejects("json_object"), answer()]).await;
    let vlm = KIT.backend(&server.url());
    assert_eq!(vlm.complete(json_request()).await.unwrap().text, decision);
    let last = server.requests().pop().unwrap().body;
    assert!(last.get("response_format").is_none(), "{last}");
    // other errors are not a capability problem
    let server = ScriptedServer::start(vec![Reply::status(400, json!({"error": {"message": "bad image"}}))]).await;
    let e = KIT.backend(&server.url()).complete(json_request()).await.unwrap_err();
    assert!(matches!(e, VlmError::Http { status: 400, .. }), "{e:?}");
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn a_reply_that_echoes_the_key_is_scrubbed() {
    let echo = format!("your key is {TEST_KEY}, going left");
    let mut answer = completion(
        json!({"role": "assistant", "content": echo, "tool_calls": [
            {"id": TEST_KEY, "type": "function", "function": {"name": "f", "arguments": format!("{{\"note\": \"{TEST_KEY}\"}}")}}]}),
        TEST_KEY,
    );
    answer["model"] = json!(TEST_KEY);
    let server = ScriptedServer::start(vec![Reply::json(answer)]).await;
    let reply = KIT.backend(&server.url()).complete(json_request()).await.unwrap();
    assert_eq!(reply.text, "your key is [REDACTED], going left");
    assert_eq!(reply.tool_calls[0].arguments, json!({"note": "[REDACTED]"}));
    // every field a server fills in that nav prints or logs
    let shown = serde_json::to_string(&reply).unwrap();
    assert!(!shown.contains(TEST_KEY), "{shown}");
    assert_eq!((reply.model.as_str(), reply.tool_calls[0].id.as_str()), ("[REDACTED]", "[REDACTED]"));
}

#[tokio::test]
async fn a_priced_reply_without_usage_is_billed_on_a_high_estimate() {
    let mut answer = completion(json!({"role": "assistant", "content": "ok"}), "stop");
    answer.as_object_mut().unwrap().remove("usage");
    let server = ScriptedServer::start(vec![Reply::json(answer.clone())]).await;
    let req = json_request().image(Part::jpeg(support::fake_jpeg(), ImageDetail::Low));
    let reply = KIT.backend(&server.url()).complete(req.clone()).await.unwrap();
    assert!(reply.usage_estimated, "no usage from a priced model is estimated, not $0");
    let text_chars = (req.system.len() + req.user_text().len()) as u64;
    assert!(reply.usage.prompt_tokens >= nav_planner::vlm::Usage::ESTIMATED_IMAGE_TOKENS + text_chars / 4);
    assert!(reply.usage.completion_tokens >= 1);
    assert!(reply.cost_usd.unwrap() > 0.0, "{:?}", reply.cost_usd);

    // zero prompt tokens with a few completion tokens: estimated the same way
    let mut zero_in = completion(json!({"role": "assistant", "content": "ok"}), "stop");
    for (prompt, completion) in [(0, 1), (1, 0), (3, 1)] {
        zero_in["usage"] = json!({"prompt_tokens": prompt, "completion_tokens": completion});
        let server = ScriptedServer::start(vec![Reply::json(zero_in.clone())]).await;
        let reply = KIT.backend(&server.url()).complete(req.clone()).await.unwrap();
        assert!(reply.usage_estimated && reply.usage.prompt_tokens >= nav_planner::vlm::Usage::ESTIMATED_IMAGE_TOKENS);
    }
    // a count the request's text can be is believed
    assert!(nav_planner::vlm::Usage::prompt_floor(&req) < 1000);

    // a local model (no price) that leaves usage out stays at zero
    let mut local = completion(json!({"role": "assistant", "content": "ok"}), "stop");
    local.as_object_mut().unwrap().remove("usage");
    local["model"] = json!("qwen2.5-vl:7b");
    let server = ScriptedServer::start(vec![Reply::json(local)]).await;
    let cfg = quick(
        BackendConfig::new(Provider::OpenAi).with_model("qwen2.5-vl:7b").with_base_url(format!("{}/v1/", server.url())),
    );
    let reply = build_backend_with_env(&cfg, &|_| None).unwrap().complete(json_request()).await.unwrap();
    assert!(!reply.usage_estimated);
    assert_eq!(reply.usage, nav_planner::vlm::Usage::default());
}

#[tokio::test]
async fn a_negative_or_text_usage_is_billed_on_the_estimate_not_free() {
    // a spending limit must see the call: counted as a reply without usage
    for bad in [json!(-5), json!(-5000), json!(2.5), json!("many"), json!(true), json!(1e30)] {
        for field in ["prompt_tokens", "completion_tokens"] {
            let mut answer = completion(json!({"role": "assistant", "content": "ok"}), "stop");
            answer["usage"][field] = bad.clone();
            let server = ScriptedServer::start(vec![Reply::json(answer)]).await;
            let reply = KIT.backend(&server.url()).complete(json_request()).await.unwrap();
            assert!(reply.usage_estimated, "{field} {bad}");
            assert!(reply.usage.prompt_tokens > 0 && reply.usage.prompt_tokens < u64::MAX, "{field} {bad}");
            assert!(reply.cost_usd.unwrap() > 0.0, "{field} {bad}: {:?}", reply.cost_usd);
        }
    }
}
