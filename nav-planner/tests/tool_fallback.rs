//! Capability fallback for OpenAI-compatible servers without native tools:
//! a server that rejects `tools` (HTTP 400) and one that ignores them
//! (answers text). The backend then describes the tools in the system
//! prompt and reads the call from the reply text, remembers that for the
//! rest of the run and logs it once; an explore episode runs to its end.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;

use nav_hal::arena::Arena;
use nav_planner::navigator::StepLog;
use nav_planner::navigator::episode::{EpisodeSpec, PlannerChoice, run_episode};
use nav_planner::protocol::ProtocolKind;
use nav_planner::vlm::{BackendConfig, OpenAiBackend, Provider, VisionLanguageModel};
use serde_json::{Value, json};
use support::responder::{Responder, chat_text};
use support::{explore_request, follow_up_request, logs};

const CALL: &str =
    r#"{"name": "move_toward", "arguments": {"direction": "forward", "speed": "slow", "duration_s": 2}}"#;

fn backend(server: &Responder) -> OpenAiBackend {
    let mut cfg = BackendConfig::new(Provider::OpenAi);
    cfg.base_url = Some(server.base_url());
    cfg.model = Some("gpt-4o-mini".into());
    OpenAiBackend::new(&support::quick(cfg)).unwrap()
}

/// 400 for any body with `tools`; otherwise the call as JSON text.
fn rejecting(body: &Value) -> (u16, Value) {
    if body.get("tools").is_some() {
        return (
            400,
            json!({"error": {"message": "tools are not supported by this server", "type": "invalid_request_error"}}),
        );
    }
    (200, chat_text(CALL, 500, 30))
}

/// Ignores `tools`: prose without a call while they are sent natively;
/// the call as JSON text once they are described in the prompt.
fn ignoring(body: &Value) -> (u16, Value) {
    if body.get("tools").is_some() {
        return (200, chat_text("The corridor ahead looks open, so I would move forward.", 400, 20));
    }
    (200, chat_text(CALL, 500, 30))
}

fn described_in_prompt(body: &Value) -> bool {
    let system = body["messages"][0]["content"].as_str().unwrap_or("");
    body.get("tools").is_none()
        && body.get("tool_choice").is_none()
        && system.contains("Tools:\n- move_toward:")
        && body["response_format"]["json_schema"]["name"] == "tool_call"
}

#[tokio::test]
async fn a_server_that_rejects_tools_gets_them_in_the_prompt_for_the_rest_of_the_run() {
    let (log, _guard) = logs::capture();
    let server = Responder::start(rejecting).await;
    let vlm = backend(&server);
    let reply = vlm.complete(explore_request()).await.unwrap();
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].name, "move_toward");
    assert_eq!(reply.tool_calls[0].arguments["speed"], "slow");
    assert!(vlm.tools_in_prompt());
    // the follow-up turn (an earlier call and its result) goes as plain messages
    let follow = vlm.complete(follow_up_request()).await.unwrap();
    assert_eq!(follow.tool_calls[0].name, "move_toward");
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3, "one rejected request, then two with the tools in the prompt");
    assert!(bodies[0].get("tools").is_some());
    assert!(described_in_prompt(&bodies[1]) && described_in_prompt(&bodies[2]), "{:#}", bodies[2]);
    let roles: Vec<&str> =
        bodies[2]["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"], "no tool-role messages");
    assert!(bodies[2]["messages"][3]["content"].as_str().unwrap().starts_with("Result of check_path_clear:"));
    // the restricted choice lists only the allowed tools
    let system = bodies[2]["messages"][0]["content"].as_str().unwrap();
    assert!(!system.contains("- check_path_clear:"), "{system}");
    assert_eq!(log.text().matches("describing the tools in the prompt").count(), 1, "logged once:\n{}", log.text());
}

#[tokio::test]
async fn a_server_that_ignores_tools_is_asked_again_with_them_in_the_prompt_and_both_requests_are_billed() {
    let (log, _guard) = logs::capture();
    let server = Responder::start(ignoring).await;
    let vlm = backend(&server);
    let reply = vlm.complete(explore_request()).await.unwrap();
    assert_eq!(reply.tool_calls[0].name, "move_toward");
    assert_eq!((reply.usage.prompt_tokens, reply.usage.completion_tokens), (900, 50), "both answers billed");
    let priced = (900.0 * 0.15 + 50.0 * 0.60) / 1e6;
    assert!((reply.cost_usd.unwrap() - priced).abs() < 1e-12);
    vlm.complete(explore_request()).await.unwrap();
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3);
    assert!(bodies[0].get("tools").is_some() && described_in_prompt(&bodies[1]) && described_in_prompt(&bodies[2]));
    assert_eq!(log.text().matches("describing the tools in the prompt").count(), 1, "logged once:\n{}", log.text());
}

#[tokio::test]
async fn a_call_written_as_text_is_taken_at_once() {
    let server =
        Responder::start(|_: &Value| (200, chat_text(&format!("Forward is open.\n```json\n{CALL}\n```"), 400, 20)))
            .await;
    let vlm = backend(&server);
    let reply = vlm.complete(explore_request()).await.unwrap();
    assert_eq!(reply.tool_calls[0].name, "move_toward");
    assert_eq!(server.bodies().len(), 1, "no second request");
    assert!(vlm.tools_in_prompt(), "remembered: the next request describes the tools");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explore_episode_runs_to_its_end_against_a_server_without_tools() {
    for (name, double) in [("rejecting", rejecting as fn(&Value) -> (u16, Value)), ("ignoring", ignoring)] {
        let server = Responder::start(double).await;
        let mut spec = EpisodeSpec::new(Arena::builtin("exploration").unwrap(), "builtin:exploration");
        spec.protocol = ProtocolKind::Explore;
        spec.planner = PlannerChoice::Vlm;
        spec.max_steps = Some(4);
        spec.vlm = Some(Arc::new(backend(&server)) as Arc<dyn VisionLanguageModel>);
        let s = run_episode(&spec, &mut StepLog::null(), &mut |_| {}).await.unwrap();
        println!(
            "{name}: {} calls, {} fallbacks, {} requests, end {}",
            s.vlm_calls,
            s.fallbacks,
            server.bodies().len(),
            s.end
        );
        assert_eq!(s.fallbacks, 0, "{name}: every decision is the model's");
        assert_eq!(s.vlm_failures, 0, "{name}");
        assert_eq!(s.planner_calls, 4, "{name}");
        assert_eq!(server.bodies().len(), s.vlm_calls as usize + 1, "{name}: one extra request, the first one");
    }
}
