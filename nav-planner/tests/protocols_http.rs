//! The three planner protocols end to end over the three HTTP backends: the
//! VLM planners build their real requests (simulator start states, with
//! images), the backends send them to the scripted loopback server, and the
//! server answers in each provider's wire format. Covers valid replies,
//! objectnav's single retry and fallback, the candidates parser's tolerance
//! and STOP fallback, and the explore protocol's perception sub-call with
//! the follow-up restricted to action tools.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/states.rs"]
mod states;
mod support;

use serde_json::{Value, json};

use nav_core::lidar::Direction;
use nav_planner::navigator::episode::initial_request;
use nav_planner::protocol::candidates::{
    ActionType, CandidateDecision, CandidatePlanner, CandidatePromptConfig, VlmCandidatePlanner,
    build_request as cand_request,
};
use nav_planner::protocol::explore::{
    ACTION_TOOLS, ExplorePlanner, ExplorePromptConfig, VlmExplorePlanner, build_request as explore_request,
};
use nav_planner::protocol::objectnav::{
    ObjectNavDecision, ObjectNavPlanner, ObjectNavPromptConfig, VlmObjectNavPlanner, build_request as objectnav_request,
};
use nav_planner::protocol::{CallRecord, ProtocolKind};
use nav_planner::vlm::{BackendConfig, Part, Provider, VisionLanguageModel, VlmRequest, build_backend_with_env};
use nav_safety::SafetyConfig;
use nav_safety::executor::check_path;
use nav_safety::tools::{RotateDegrees, Speed, StopReason, ToolCall};
use support::server::{Reply, ScriptedServer};
use support::{TEST_KEY, logs, quick, unbase64};

/// A scripted tool call: `(id, name, arguments)`.
type ScriptedCall<'a> = (&'a str, &'a str, Value);

/// How one provider speaks: its backend config and its answer shapes, and
/// where its request bodies keep images, user text and follow-up turns.
struct Dialect {
    name: &'static str,
    config: fn(&str) -> BackendConfig,
    /// An answer whose text is the argument.
    text: fn(&str) -> Value,
    /// A JSON-mode answer carrying this object (Anthropic: the forced tool).
    json: fn(&Value) -> Value,
    /// An answer with reasoning text and tool calls `(id, name, arguments)`.
    tools: fn(&str, &[ScriptedCall<'_>]) -> Value,
    /// Usage one answer reports: (prompt, completion) tokens.
    usage: (u64, u64),
    /// The image bytes in a request body, in order.
    images: fn(&Value) -> Vec<Vec<u8>>,
    /// The text parts of the first user message.
    user_texts: fn(&Value) -> Vec<String>,
    /// Checks a follow-up body: the model's perception call with `id`, its
    /// `result`, and only the action tools callable.
    follow_up: fn(&Value, &str, &str),
}

fn openai_completion(message: Value, finish: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 1200, "completion_tokens": 60, "total_tokens": 1260},
    })
}

fn gemini_answer(parts: Value) -> Value {
    json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 1300, "candidatesTokenCount": 70, "totalTokenCount": 1370},
        "modelVersion": "gemini-2.5-flash-lite",
    })
}

fn anthropic_message(content: Value, stop: &str) -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5-20251001",
        "content": content, "stop_reason": stop,
        "usage": {"input_tokens": 1500, "output_tokens": 80},
    })
}

fn texts_of(parts: &Value, kind: Option<&str>) -> Vec<String> {
    parts
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|p| kind.is_none_or(|k| p["type"] == k))
                .filter_map(|p| p["text"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn action_tool_names() -> Vec<String> {
    ACTION_TOOLS.iter().map(|s| s.to_string()).collect()
}

fn names(tools: &Value, key: &str) -> Vec<String> {
    tools.as_array().unwrap().iter().map(|t| t.pointer(key).unwrap().as_str().unwrap().to_string()).collect()
}

const OPENAI: Dialect = Dialect {
    name: "openai",
    config: |url| BackendConfig::new(Provider::OpenAi).with_base_url(format!("{url}/v1")).with_api_key(TEST_KEY),
    text: |t| openai_completion(json!({"role": "assistant", "content": t}), "stop"),
    json: |v| openai_completion(json!({"role": "assistant", "content": v.to_string()}), "stop"),
    tools: |text, calls| {
        let calls: Vec<Value> = calls
            .iter()
            .map(|(id, name, args)| {
                json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
            })
            .collect();
        openai_completion(json!({"role": "assistant", "content": text, "tool_calls": calls}), "tool_calls")
    },
    usage: (1200, 60),
    images: |body| {
        body["messages"][1]["content"]
            .as_array()
            .map(|parts| {
                parts
                    .iter()
                    .filter_map(|p| p["image_url"]["url"].as_str())
                    .map(|url| unbase64(url.split_once(";base64,").unwrap().1))
                    .collect()
            })
            .unwrap_or_default()
    },
    user_texts: |body| match &body["messages"][1]["content"] {
        Value::String(s) => vec![s.clone()],
        parts => texts_of(parts, Some("text")),
    },
    follow_up: |body, id, result| {
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 4, "system, user, assistant tool call, tool result");
        let assistant = &messages[2];
        assert_eq!(assistant["role"], "assistant");
        assert_eq!(assistant["tool_calls"][0]["id"], id);
        assert_eq!(assistant["tool_calls"][0]["type"], "function");
        assert_eq!(assistant["tool_calls"][0]["function"]["name"], "check_path_clear");
        let args: Value = serde_json::from_str(assistant["tool_calls"][0]["function"]["arguments"].as_str().unwrap())
            .expect("arguments travel as a JSON string");
        assert_eq!(args, json!({"direction": "forward", "distance_m": 2.0}));
        assert_eq!(messages[3], json!({"role": "tool", "tool_call_id": id, "content": result}));
        assert_eq!(names(&body["tools"], "/function/name"), action_tool_names(), "only the action tools are sent");
        assert!(body["tools"].as_array().unwrap().iter().all(|t| t["function"]["strict"] == true));
        assert_eq!(body["tool_choice"], "required");
    },
};

const GEMINI: Dialect = Dialect {
    name: "gemini",
    config: |url| BackendConfig::new(Provider::Gemini).with_base_url(url).with_api_key(TEST_KEY),
    text: |t| gemini_answer(json!([{"text": t}])),
    json: |v| gemini_answer(json!([{"text": v.to_string()}])),
    tools: |text, calls| {
        let mut parts = vec![json!({"text": text})];
        // Gemini function calls carry no ids: the backend numbers them.
        parts.extend(calls.iter().map(|(_, name, args)| json!({"functionCall": {"name": name, "args": args}})));
        gemini_answer(Value::Array(parts))
    },
    usage: (1300, 70),
    images: |body| {
        body["contents"][0]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["inlineData"]["data"].as_str())
            .map(unbase64)
            .collect()
    },
    user_texts: |body| texts_of(&body["contents"][0]["parts"], None),
    follow_up: |body, _id, result| {
        let contents = body["contents"].as_array().unwrap();
        assert_eq!(contents.len(), 3, "user, model function call, function response");
        let call = contents[1]["parts"].as_array().unwrap().iter().find_map(|p| p.get("functionCall")).unwrap();
        assert_eq!(contents[1]["role"], "model");
        assert_eq!(call, &json!({"name": "check_path_clear", "args": {"direction": "forward", "distance_m": 2.0}}));
        let response: Value = serde_json::from_str(result).unwrap();
        assert_eq!(
            contents[2],
            json!({"role": "user", "parts": [{"functionResponse": {"name": "check_path_clear", "response": response}}]})
        );
        // Gemini keeps every declaration and restricts the callable ones.
        assert_eq!(names(&body["tools"][0]["functionDeclarations"], "/name").len(), 7);
        assert_eq!(
            body["toolConfig"]["functionCallingConfig"],
            json!({"mode": "ANY", "allowedFunctionNames": action_tool_names()})
        );
    },
};

const ANTHROPIC: Dialect = Dialect {
    name: "anthropic",
    config: |url| BackendConfig::new(Provider::Anthropic).with_base_url(url).with_api_key(TEST_KEY),
    text: |t| anthropic_message(json!([{"type": "text", "text": t}]), "end_turn"),
    // JSON mode is a forced tool named after the schema.
    json: |v| {
        anthropic_message(
            json!([{"type": "tool_use", "id": "toolu_json", "name": "objectnav_decision", "input": v}]),
            "tool_use",
        )
    },
    tools: |text, calls| {
        let mut content = vec![json!({"type": "text", "text": text})];
        content.extend(
            calls.iter().map(|(id, name, args)| json!({"type": "tool_use", "id": id, "name": name, "input": args})),
        );
        anthropic_message(Value::Array(content), "tool_use")
    },
    usage: (1500, 80),
    images: |body| {
        body["messages"][0]["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "image")
            .map(|b| unbase64(b["source"]["data"].as_str().unwrap()))
            .collect()
    },
    user_texts: |body| texts_of(&body["messages"][0]["content"], Some("text")),
    follow_up: |body, id, result| {
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3, "user, assistant tool_use, user tool_result");
        let tool_use = messages[1]["content"].as_array().unwrap().iter().find(|b| b["type"] == "tool_use").unwrap();
        assert_eq!(messages[1]["role"], "assistant");
        assert_eq!(
            tool_use,
            &json!({"type": "tool_use", "id": id, "name": "check_path_clear",
                    "input": {"direction": "forward", "distance_m": 2.0}})
        );
        assert_eq!(
            messages[2],
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": result}]})
        );
        assert_eq!(names(&body["tools"], "/name"), action_tool_names(), "only the action tools are sent");
        assert_eq!(body["tool_choice"], json!({"type": "any"}));
    },
};

fn backend(d: &Dialect, server: &ScriptedServer) -> Box<dyn VisionLanguageModel> {
    build_backend_with_env(&quick((d.config)(&server.url())), &|_| None).unwrap()
}

/// The image bytes of a provider-neutral request.
fn request_images(req: &VlmRequest) -> Vec<Vec<u8>> {
    req.user
        .iter()
        .filter_map(|p| match p {
            Part::Image { data, .. } => Some(data.clone()),
            Part::Text(_) => None,
        })
        .collect()
}

/// No credential anywhere in a call record.
fn assert_no_key(record: &CallRecord) {
    let text = format!("{} {record:?}", serde_json::to_string(record).unwrap());
    assert!(!text.contains(TEST_KEY) && !text.contains("5ecret"), "the key leaked into a call record: {text}");
}

/// Checks the record's bookkeeping for `calls` answered model calls.
fn assert_accounted(d: &Dialect, record: &CallRecord, calls: u32) {
    assert_eq!(record.vlm_calls, calls, "{}", d.name);
    assert_eq!(record.raw.len(), calls as usize, "{}: one raw reply per call", d.name);
    assert_eq!(record.usage.prompt_tokens, d.usage.0 * u64::from(calls), "{}", d.name);
    assert_eq!(record.usage.completion_tokens, d.usage.1 * u64::from(calls), "{}", d.name);
    assert!(record.cost_usd.is_some_and(|c| c > 0.0), "{}: the default models have prices", d.name);
    assert!(record.latency_ms > 0.0, "{}", d.name);
    assert_no_key(record);
}

fn decision_json(goal_flag: bool, angle: f64, scene: &str, why: &str) -> Value {
    json!({"goal_flag": goal_flag, "angle": angle, "discovered_context": {"goal_scene_type": scene, "why": why}})
}

// ---------------------------------------------------------------- objectnav

/// The loopback server with its script, and the house_a start state.
async fn objectnav_setup(script: Vec<Reply>) -> (ScriptedServer, states::ObjectNavStart) {
    let server = ScriptedServer::start(script).await;
    let start = states::ObjectNavStart::new(&states::spec("house_a", ProtocolKind::Objectnav)).await;
    (server, start)
}

async fn objectnav_valid(d: &Dialect) {
    let decision = decision_json(false, 60.0, "living room", "a doorway on the left leads to a sofa {거실}");
    let (server, start) = objectnav_setup(vec![Reply::json((d.json)(&decision))]).await;
    let mut planner = VlmObjectNavPlanner::new(backend(d, &server), ObjectNavPromptConfig::default());
    let reply = planner.plan(&start.observation()).await;

    assert_eq!(serde_json::to_value(&reply.decision).unwrap(), decision, "{}", d.name);
    assert_eq!(reply.record.fallback, None);
    assert!(reply.record.errors.is_empty(), "{:?}", reply.record.errors);
    assert_accounted(d, &reply.record, 1);
    // The stitched panorama and the context text travel as built.
    let built = objectnav_request(&start.observation(), &ObjectNavPromptConfig::default());
    let sent = server.only_request().body;
    assert_eq!((d.images)(&sent), request_images(&built), "{}: the panorama JPEG arrives intact", d.name);
    let texts = (d.user_texts)(&sent);
    assert!(texts.last().unwrap().starts_with("TARGET: tv\n\nNAVIGATION CONTEXT"), "{}: {texts:?}", d.name);
}

async fn objectnav_retry_then_valid(d: &Dialect) {
    let decision = decision_json(true, -30.0, "living room", "the tv is on the right");
    let script = vec![
        Reply::json((d.text)("I would go towards the living room, it usually has a TV.")),
        Reply::json((d.json)(&decision)),
    ];
    let (server, start) = objectnav_setup(script).await;
    let mut planner = VlmObjectNavPlanner::new(backend(d, &server), ObjectNavPromptConfig::default());
    let reply = planner.plan(&start.observation()).await;

    assert_eq!(serde_json::to_value(&reply.decision).unwrap(), decision, "{}", d.name);
    assert_eq!(reply.record.fallback, None, "{}", d.name);
    assert_eq!(reply.record.errors, ["no JSON object in reply"], "{}", d.name);
    assert_accounted(d, &reply.record, 2);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{}: exactly one retry", d.name);
    let first = (d.user_texts)(&requests[0].body);
    let second = (d.user_texts)(&requests[1].body);
    assert_eq!(second.len(), first.len() + 1, "{}: the retry adds one instruction", d.name);
    assert_eq!(
        second.last().unwrap(),
        "Your previous reply was invalid (no JSON object in reply). Reply with the JSON object only."
    );
    assert_eq!((d.images)(&requests[1].body), (d.images)(&requests[0].body), "{}: same panorama", d.name);
}

async fn objectnav_two_invalid_fall_back(d: &Dialect) {
    let script = vec![
        Reply::json((d.json)(&decision_json(false, 270.0, "kitchen", "behind"))),
        Reply::json((d.json)(&json!({"angle": 0, "discovered_context": {"goal_scene_type": "kitchen", "why": "w"}}))),
    ];
    let (server, start) = objectnav_setup(script).await;
    let mut planner = VlmObjectNavPlanner::new(backend(d, &server), ObjectNavPromptConfig::default());
    let reply = planner.plan(&start.observation()).await;

    assert_eq!(reply.decision, ObjectNavDecision::fallback(), "{}", d.name);
    assert_eq!(server.request_count(), 2, "{}: one retry, then the fallback", d.name);
    assert_eq!(reply.record.errors, ["angle: 270 is outside [-180, 180]", "goal_flag: missing"], "{}", d.name);
    assert_eq!(reply.record.fallback.as_deref(), Some("goal_flag: missing"), "{}: the reason is recorded", d.name);
    assert_accounted(d, &reply.record, 2);
}

/// Provider errors that echo the credential: the planner falls back, and
/// neither its record nor its log lines carry the key.
async fn objectnav_errors_never_carry_the_key(d: &Dialect) {
    let (captured, _guard) = logs::capture();
    let echo = Reply::status(
        401,
        json!({"error": {"message": format!("Incorrect API key provided: {TEST_KEY}"), "type": "invalid_request_error"}}),
    );
    let (server, start) = objectnav_setup(vec![echo.clone(), echo]).await;
    let mut planner = VlmObjectNavPlanner::new(backend(d, &server), ObjectNavPromptConfig::default());
    let reply = planner.plan(&start.observation()).await;

    assert_eq!(reply.decision, ObjectNavDecision::fallback());
    assert_eq!(server.request_count(), 2, "{}: 401 is not retried by the transport; the planner retries once", d.name);
    // both calls failed: none was answered, both are failures
    assert_eq!((reply.record.vlm_calls, reply.record.vlm_failures), (0, 2));
    assert_eq!(reply.record.errors.len(), 2);
    assert!(reply.record.errors.iter().all(|e| e.contains("HTTP 401")), "{:?}", reply.record.errors);
    assert!(reply.record.fallback.as_deref().is_some_and(|f| f.contains("HTTP 401")));
    assert_no_key(&reply.record);
    // (Only absence is asserted: tracing's per-callsite interest cache makes
    // thread-local capture of a given line unreliable under parallel tests.)
    let log = captured.text();
    assert!(!log.contains(TEST_KEY) && !log.contains("5ecret"), "the key leaked into the log: {log}");
}

// --------------------------------------------------------------- candidates

async fn candidates_tolerant_parse(d: &Dialect) {
    let reply_text = "Looking at the map, c1 is the goal itself and the path is free.\n```json\n{\n  \"action\": \
                      {\"type\": \"MOVE_TO\", \"target_id\": \"c1\",},\n  \"fallback\": {\"if_failed\": \"EXPLORE\"},\n  \
                      \"explanation\": \"c1 {the goal} is straight ahead\",\n}\n```\nLet me know if you need more.";
    let server = ScriptedServer::start(vec![Reply::json((d.text)(reply_text))]).await;
    let start = states::CandidatesStart::new(&states::spec("simple", ProtocolKind::Candidates)).await;
    assert!(start.candidates.iter().any(|c| c.id == "c1"), "the simple arena offers c1");
    let mut planner = VlmCandidatePlanner::new(backend(d, &server), CandidatePromptConfig::default());
    let reply = planner.decide(&start.frame()).await;

    assert_eq!(reply.decision.action.kind, ActionType::MoveTo, "{}", d.name);
    assert_eq!(reply.decision.action.target_id.as_deref(), Some("c1"));
    assert_eq!(reply.decision.explanation, "c1 {the goal} is straight ahead");
    assert_eq!(reply.record.fallback, None);
    assert_eq!(reply.record.raw, [reply_text]);
    assert_accounted(d, &reply.record, 1);
    // The map (PNG) and camera view (JPEG) travel with the frame text.
    let built = cand_request(&start.frame(), &CandidatePromptConfig::default());
    let sent = server.only_request().body;
    let images = (d.images)(&sent);
    assert_eq!(images, request_images(&built), "{}", d.name);
    assert_eq!(images.len(), 2);
    assert!(images[0].starts_with(b"\x89PNG") && images[1].starts_with(&[0xFF, 0xD8]));
    assert!((d.user_texts)(&sent).last().unwrap().starts_with("=== CYCLE 1 ===\nGOAL: Reach the goal at (1.5, 1.5)"));
}

async fn candidates_garbage_stops(d: &Dialect) {
    let server = ScriptedServer::start(vec![Reply::json((d.text)("I cannot decide {really}, sorry."))]).await;
    let start = states::CandidatesStart::new(&states::spec("simple", ProtocolKind::Candidates)).await;
    let mut planner = VlmCandidatePlanner::new(backend(d, &server), CandidatePromptConfig::default());
    let reply = planner.decide(&start.frame()).await;

    let reason = reply.record.fallback.clone().expect("a fallback reason");
    assert!(reason.starts_with("malformed JSON"), "{}: {reason}", d.name);
    assert_eq!(reply.decision, CandidateDecision::fallback(&reason));
    assert_eq!(reply.decision.action.kind, ActionType::Stop);
    assert_eq!(reply.record.errors, [reason]);
    assert_accounted(d, &reply.record, 1);
}

// ------------------------------------------------------------------ explore

async fn explore_snapshot() -> nav_planner::protocol::explore::ExploreSnapshot {
    states::explore_snapshot(&states::spec("exploration", ProtocolKind::Explore)).await
}

fn explore_planner(d: &Dialect, server: &ScriptedServer) -> VlmExplorePlanner<Box<dyn VisionLanguageModel>> {
    VlmExplorePlanner::new(backend(d, server), ExplorePromptConfig::default(), SafetyConfig::default())
}

async fn explore_tool_call(d: &Dialect) {
    let answer = (d.tools)(
        "PERCEIVE: open floor ahead, walls 0.8 m left and right. REASON: forward keeps exploring the corridor.",
        &[("call_a1", "move_toward", json!({"direction": "forward", "speed": "medium", "duration_s": 3.0}))],
    );
    let server = ScriptedServer::start(vec![Reply::json(answer)]).await;
    let snap = explore_snapshot().await;
    let reply = explore_planner(d, &server).decide(&snap).await;

    assert_eq!(
        reply.decision.action,
        ToolCall::MoveToward { direction: Direction::Forward, speed: Speed::Medium, duration_s: 3.0 },
        "{}",
        d.name
    );
    assert!(reply.decision.reasoning.starts_with("PERCEIVE: open floor ahead"));
    assert_eq!(reply.decision.perception, None);
    assert_eq!(reply.record.fallback, None);
    assert_accounted(d, &reply.record, 1);
    let built = explore_request(&snap, &ExplorePromptConfig::default());
    let sent = server.only_request().body;
    assert_eq!((d.images)(&sent), request_images(&built), "{}: the annotated frame arrives intact", d.name);
    assert!((d.user_texts)(&sent).last().unwrap().starts_with("STATE: ("));
}

async fn explore_perception_then_action(d: &Dialect) {
    let script = vec![
        Reply::json((d.tools)(
            "Not sure the corridor ahead is clear.",
            &[("call_p1", "check_path_clear", json!({"direction": "forward", "distance_m": 2.0}))],
        )),
        Reply::json((d.tools)(
            "Clear ahead; turning to face the frontier.",
            &[("call_r1", "rotate", json!({"degrees": 45}))],
        )),
    ];
    let server = ScriptedServer::start(script).await;
    let snap = explore_snapshot().await;
    let reply = explore_planner(d, &server).decide(&snap).await;

    assert_eq!(reply.decision.action, ToolCall::Rotate { degrees: RotateDegrees::new(45).unwrap() }, "{}", d.name);
    let (perception, result) = reply.decision.perception.clone().expect("the perception call and its result");
    assert_eq!(perception, ToolCall::CheckPathClear { direction: Direction::Forward, distance_m: 2.0 });
    // The result is the LiDAR check of the snapshot's scan, answered locally.
    let expected = check_path(&SafetyConfig::default(), &snap.scan, snap.scan_age_s, Direction::Forward, 2.0);
    assert_eq!(result, serde_json::to_string(&expected).unwrap());
    assert_eq!(reply.record.fallback, None);
    assert_accounted(d, &reply.record, 2);
    assert_eq!(
        reply.decision.reasoning,
        "Not sure the corridor ahead is clear.\nClear ahead; turning to face the frontier."
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{}: the decision and one follow-up", d.name);
    let call_id = if d.name == "gemini" { "call_0" } else { "call_p1" };
    (d.follow_up)(&requests[1].body, call_id, &result);
    assert_eq!((d.images)(&requests[1].body), (d.images)(&requests[0].body), "{}: same image", d.name);
}

async fn explore_no_tool_call_stops(d: &Dialect) {
    // An OpenAI-compatible server that answers a required call in prose ignores native tools: the
    // backend asks once more with the tools in the prompt, billing both answers (tests/tool_fallback.rs).
    let asks = if d.name == "openai" { 2 } else { 1 };
    let server = ScriptedServer::start(vec![Reply::json((d.text)("I think I should move forward.")); asks]).await;
    let snap = explore_snapshot().await;
    let reply = explore_planner(d, &server).decide(&snap).await;

    assert_eq!(reply.decision.action, ToolCall::StopRobot { reason: StopReason::Uncertain }, "{}", d.name);
    assert_eq!(reply.record.fallback.as_deref(), Some("the model called no tool"));
    assert_eq!(reply.decision.reasoning, "I think I should move forward.");
    assert_eq!(server.request_count(), asks, "{}: no follow-up without a perception call", d.name);
    if asks == 1 {
        assert_accounted(d, &reply.record, 1);
    } else {
        assert_eq!(reply.record.vlm_calls, 1, "{}: one call of the protocol", d.name);
        assert_eq!(reply.record.usage.prompt_tokens, d.usage.0 * 2, "{}: both answers billed", d.name);
    }
}

macro_rules! provider_tests {
    ($module:ident, $dialect:expr, $path:expr) => {
        mod $module {
            use super::*;

            #[tokio::test]
            async fn objectnav_valid_reply() {
                objectnav_valid(&$dialect).await;
            }

            #[tokio::test]
            async fn objectnav_one_retry_then_valid() {
                objectnav_retry_then_valid(&$dialect).await;
            }

            #[tokio::test]
            async fn objectnav_two_invalid_replies_fall_back() {
                objectnav_two_invalid_fall_back(&$dialect).await;
            }

            #[tokio::test]
            async fn objectnav_errors_keep_the_key_out() {
                objectnav_errors_never_carry_the_key(&$dialect).await;
            }

            #[tokio::test]
            async fn candidates_prose_fence_trailing_comma() {
                candidates_tolerant_parse(&$dialect).await;
            }

            #[tokio::test]
            async fn candidates_garbage_is_stop() {
                candidates_garbage_stops(&$dialect).await;
            }

            #[tokio::test]
            async fn explore_action_tool_call() {
                explore_tool_call(&$dialect).await;
            }

            #[tokio::test]
            async fn explore_perception_sub_call_then_action_only() {
                explore_perception_then_action(&$dialect).await;
            }

            #[tokio::test]
            async fn explore_no_tool_call_is_stop_robot() {
                explore_no_tool_call_stops(&$dialect).await;
            }

            #[tokio::test]
            async fn requests_go_to_the_provider_endpoint() {
                let server = ScriptedServer::start(vec![Reply::json(($dialect.text)("{}"))]).await;
                let snap = explore_snapshot().await;
                let _ = explore_planner(&$dialect, &server).decide(&snap).await;
                // (an OpenAI-compatible server is asked again with the tools in the prompt)
                let request = server.requests().remove(0);
                assert_eq!((request.method.as_str(), request.path.as_str()), ("POST", $path));
            }
        }
    };
}

provider_tests!(openai, OPENAI, "/v1/chat/completions");
provider_tests!(gemini, GEMINI, "/v1beta/models/gemini-2.5-flash-lite:generateContent");
provider_tests!(anthropic, ANTHROPIC, "/v1/messages");

/// The start states these tests drive the planners with are exactly what
/// `initial_request` (and so `nav prompt`) builds.
#[tokio::test]
async fn states_match_initial_request() {
    let spec = states::spec("house_a", ProtocolKind::Objectnav);
    let start = states::ObjectNavStart::new(&spec).await;
    let built = objectnav_request(&start.observation(), &ObjectNavPromptConfig::default());
    assert_eq!(built, initial_request(&spec).await.unwrap());

    let spec = states::spec("simple", ProtocolKind::Candidates);
    let start = states::CandidatesStart::new(&spec).await;
    assert_eq!(cand_request(&start.frame(), &CandidatePromptConfig::default()), initial_request(&spec).await.unwrap());

    let spec = states::spec("exploration", ProtocolKind::Explore);
    let snap = states::explore_snapshot(&spec).await;
    assert_eq!(explore_request(&snap, &ExplorePromptConfig::default()), initial_request(&spec).await.unwrap());
}
