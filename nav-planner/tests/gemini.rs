//! Gemini backend (Google AI and Vertex AI) against a real HTTP server on
//! loopback.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use serde_json::{Value, json};

use nav_planner::vlm::{BackendConfig, CommandLine, Provider, VisionLanguageModel, VlmError, build_backend_with_env};
use support::server::{Recorded, Reply, ScriptedServer};
use support::{Kit, TEST_KEY, explore_request, faults, follow_up_request, json_request, quick, unbase64};

fn answer(parts: Value, finish: &str) -> Value {
    json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}],
        "usageMetadata": {"promptTokenCount": 1158, "candidatesTokenCount": 100, "cachedContentTokenCount": 0,
                          "totalTokenCount": 1258},
        "modelVersion": "gemini-2.5-flash-lite",
    })
}

fn ok_body() -> Value {
    answer(json!([{"text": "ok"}]), "STOP")
}

const KIT: Kit = Kit {
    name: "gemini",
    config: |url| BackendConfig::new(Provider::Gemini).with_base_url(url).with_api_key(TEST_KEY),
    env: |_| None,
    ok: ok_body,
    empty: || json!({"usageMetadata": {"promptTokenCount": 3}}),
    empty_message: "response has no candidates",
    refusal: || json!({"candidates": [{"finishReason": "SAFETY", "safetyRatings": []}]}),
    refusal_message: "finishReason SAFETY",
};

/// Vertex with a fixed token from the environment.
const VERTEX_KIT: Kit = Kit {
    name: "vertex",
    config: |url| {
        let mut cfg = BackendConfig::new(Provider::Vertex).with_base_url(url);
        cfg.vertex.project = Some("navkit-test".into());
        cfg.vertex.location = Some("us-central1".into());
        cfg
    },
    env: |var| (var == "VERTEX_ACCESS_TOKEN").then(|| TEST_KEY.to_string()),
    ok: ok_body,
    empty: || json!({"candidates": []}),
    empty_message: "response has no candidates",
    refusal: || json!({"candidates": [{"finishReason": "RECITATION"}]}),
    refusal_message: "finishReason RECITATION",
};

fn shape(r: &Recorded) -> Value {
    json!({
        "method": r.method,
        "path": r.path,
        "x-goog-api-key": r.header("x-goog-api-key").map(|v| v.replace(TEST_KEY, "[KEY]")),
        "authorization": r.header("authorization").map(|v| v.replace(TEST_KEY, "[KEY]")),
        "body": r.body,
    })
}

#[tokio::test]
async fn google_ai_request_shape_and_function_call_answer() {
    let reply_body = answer(
        json!([{"text": "Blocked ahead, turning."}, {"functionCall": {"name": "rotate", "args": {"degrees": -90}}}]),
        "STOP",
    );
    let server = ScriptedServer::start(vec![Reply::json(reply_body)]).await;
    let reply = KIT.backend(&server.url()).complete(explore_request()).await.unwrap();
    assert_eq!(reply.text, "Blocked ahead, turning.");
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!((reply.tool_calls[0].id.as_str(), reply.tool_calls[0].name.as_str()), ("call_0", "rotate"));
    assert_eq!(reply.tool_calls[0].arguments, json!({"degrees": -90}));

    let request = server.only_request();
    assert_eq!(request.path, "/v1beta/models/gemini-2.5-flash-lite:generateContent");
    assert_eq!(request.header("x-goog-api-key"), Some(TEST_KEY));
    assert!(!request.path.contains("key="), "the key never goes in the URL");
    let data = request.body["contents"][0]["parts"][0]["inlineData"]["data"].as_str().unwrap();
    assert_eq!(unbase64(data), support::fake_jpeg());
    // Gemini's schema dialect: no additionalProperties, integer enums moved to the description.
    let rotate = &request.body["tools"][0]["functionDeclarations"][1]["parameters"]["properties"]["degrees"];
    assert_eq!(
        rotate,
        &json!({"type": "integer", "description": "Allowed values: -180, -135, -90, -45, 45, 90, 135, 180."})
    );
    insta::assert_json_snapshot!("gemini_explore_request", shape(&request), {
        ".body.contents[0].parts[0].inlineData.data" => "[image base64]",
    });
}

#[tokio::test]
async fn follow_up_turns_and_allowed_function_names() {
    let body = answer(
        json!([{"functionCall": {"name": "move_toward", "args": {"direction": "left", "speed": "slow", "duration_s": 3}}}]),
        "STOP",
    );
    let server = ScriptedServer::start(vec![Reply::json(body)]).await;
    let reply = KIT.backend(&server.url()).complete(follow_up_request()).await.unwrap();
    assert_eq!(reply.tool_calls[0].name, "move_toward");
    let sent = server.only_request().body;
    assert_eq!(
        sent["toolConfig"]["functionCallingConfig"],
        json!({"mode": "ANY", "allowedFunctionNames": ["move_toward", "rotate"]})
    );
    insta::assert_json_snapshot!("gemini_follow_up_request", sent);
}

#[tokio::test]
async fn json_mode_usage_and_cost() {
    let decision = r#"{"goal_flag": true, "angle": -30, "discovered_context": {"goal_scene_type": "bedroom", "why": "bed visible"}}"#;
    let mut body = answer(json!([{"text": decision}]), "STOP");
    body["usageMetadata"] = json!({"promptTokenCount": 1158, "candidatesTokenCount": 60, "thoughtsTokenCount": 40,
                                   "cachedContentTokenCount": 158});
    let server = ScriptedServer::start(vec![Reply::json(body)]).await;
    let reply = KIT.backend(&server.url()).complete(json_request()).await.unwrap();
    assert_eq!(reply.text, decision);
    assert_eq!(reply.model, "gemini-2.5-flash-lite");
    assert_eq!((reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.cached_tokens), (1158, 100, 158));
    let expected = (1000.0 * 0.10 + 158.0 * 0.025 + 100.0 * 0.40) / 1e6;
    assert!((reply.cost_usd.unwrap() - expected).abs() < 1e-12);
    let sent = server.only_request().body;
    assert_eq!(sent["generationConfig"]["responseMimeType"], "application/json");
    insta::assert_json_snapshot!("gemini_json_request", sent);
}

#[tokio::test]
async fn vertex_model_path_and_bearer_token() {
    let server = ScriptedServer::start(vec![Reply::json(ok_body())]).await;
    let vlm = VERTEX_KIT.backend(&server.url());
    assert_eq!(vlm.describe().provider, "vertex");
    assert_eq!(vlm.complete(json_request()).await.unwrap().text, "ok");
    let request = server.only_request();
    assert_eq!(
        request.path,
        "/v1/projects/navkit-test/locations/us-central1/publishers/google/models/gemini-2.5-flash-lite:generateContent"
    );
    assert_eq!(request.header("authorization"), Some(format!("Bearer {TEST_KEY}").as_str()));
    assert_eq!(request.header("x-goog-api-key"), None);
}

#[tokio::test]
async fn vertex_endpoint_with_a_cached_token_command() {
    let dir = std::env::temp_dir().join(format!("navkit-vertex-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let runs = dir.join("runs");
    let _ = std::fs::remove_file(&runs);
    let script = format!("echo run >> {}; echo ya29.token-$(wc -l < {})", runs.display(), runs.display());
    let server = ScriptedServer::start(vec![
        Reply::json(ok_body()),
        Reply::json(ok_body()),
        Reply::status(401, json!({"error": {"code": 401, "message": "token expired", "status": "UNAUTHENTICATED"}})),
        Reply::json(ok_body()),
    ])
    .await;
    let mut cfg = quick(BackendConfig::new(Provider::Vertex).with_base_url(server.url()));
    cfg.vertex.project = Some("navkit-test".into());
    cfg.vertex.location = Some("europe-west4".into());
    cfg.vertex.endpoint_id = Some("4242".into());
    cfg.vertex.token_command = Some(CommandLine::Args(vec!["sh".into(), "-c".into(), script]));
    let vlm = build_backend_with_env(&cfg, &|_| None).unwrap();
    assert_eq!(vlm.describe().model, "endpoints/4242");

    vlm.complete(json_request()).await.unwrap();
    vlm.complete(json_request()).await.unwrap();
    let err = vlm.complete(json_request()).await.unwrap_err();
    assert_eq!(err, VlmError::Http { status: 401, message: "[UNAUTHENTICATED] token expired".into() });
    vlm.complete(json_request()).await.unwrap();

    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/projects/navkit-test/locations/europe-west4/endpoints/4242:generateContent");
    let tokens: Vec<&str> = requests.iter().map(|r| r.header("authorization").unwrap()).collect();
    assert_eq!(tokens, ["Bearer ya29.token-1", "Bearer ya29.token-1", "Bearer ya29.token-1", "Bearer ya29.token-2"]);
    assert_eq!(std::fs::read_to_string(&runs).unwrap().lines().count(), 2, "run once, again after the 401");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn vertex_needs_a_project_and_credentials() {
    let cfg = BackendConfig::new(Provider::Vertex);
    let err = build_backend_with_env(&cfg, &|_| None).err().unwrap();
    assert!(err.to_string().contains("vlm.vertex.project is required"), "{err}");
    let err = build_backend_with_env(&cfg, &|v| (v == "GOOGLE_CLOUD_PROJECT").then(|| "p".to_string())).err().unwrap();
    assert_eq!(
        err.to_string(),
        "no credentials for vertex: set VERTEX_ACCESS_TOKEN or GOOGLE_OAUTH_ACCESS_TOKEN or `api_key` or \
         `vertex.token_command` (e.g. \"gcloud auth print-access-token\") in the backend config"
    );
    let err = build_backend_with_env(&BackendConfig::new(Provider::Gemini), &|_| None).err().unwrap();
    assert!(matches!(err, VlmError::MissingCredentials { .. }));
    let key =
        build_backend_with_env(&BackendConfig::new(Provider::Gemini), &|v| (v == "GOOGLE_API_KEY").then(|| "k".into()));
    assert_eq!(key.unwrap().describe().endpoint.as_deref(), Some("https://generativelanguage.googleapis.com"));
}

#[tokio::test]
async fn blocked_prompt_is_a_refusal() {
    let server =
        ScriptedServer::start(vec![Reply::json(json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}))])
            .await;
    let err = KIT.backend(&server.url()).complete(json_request()).await.unwrap_err();
    assert_eq!(err, VlmError::Refused { message: "the prompt was blocked (PROHIBITED_CONTENT)".into() });
}

#[tokio::test]
async fn google_retry_info_is_honoured() {
    let quota = json!({"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED",
        "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.3s"}]}});
    let server = ScriptedServer::start(vec![Reply::status(429, quota), Reply::json(ok_body())]).await;
    let reply = KIT.backend(&server.url()).complete(json_request()).await.unwrap();
    assert_eq!(reply.attempts, 2);
    let r = server.requests();
    assert!(r[1].at - r[0].at >= std::time::Duration::from_millis(300));
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

mod vertex {
    use super::*;

    fault_tests!(
        VERTEX_KIT,
        slow_answer_times_out,
        server_error_is_retried,
        reset_mid_body_is_retried,
        truncated_json_is_invalid,
        empty_answer_is_invalid,
        refusal_is_refused,
        secrets_never_leak,
    );
}
