//! Every request body navkit sends, checked against the providers' official
//! Python SDK request types (`ci/validate_bodies.py`): all three protocols'
//! start-of-episode requests with and without images, the explore protocol's
//! tool-turn follow-up (with a Gemini thought signature), for OpenAI (its own
//! endpoint, a reasoning model, a local server), Anthropic and Gemini.
//!
//! Needs the venv `ci/setup-vlm.sh` makes: `NAVKIT_VLM_PYTHON` names its
//! Python (default `.venv-vlm/bin/python` at the workspace root). Without it
//! the test skips, unless `NAVKIT_REQUIRE_SDKS=1` (CI sets it).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/vlm_venv.rs"]
mod vlm_venv;

use std::path::PathBuf;

use std::process::Command;
use vlm_venv::workspace_root;

use serde_json::json;

use nav_hal::arena::Arena;
use nav_planner::navigator::episode::{EpisodeSpec, initial_request};
use nav_planner::protocol::ProtocolKind;
use nav_planner::protocol::explore::ACTION_TOOLS;
use nav_planner::vlm::{BackendConfig, Provider, RawToolCall, ToolChoice, Turn, VlmRequest, wire};

/// The SDK venv's Python, or `None` (skip) when it is absent and not required.
fn sdk_python() -> Option<PathBuf> {
    vlm_venv::python(None, "the SDK venv")
}

async fn start_request(protocol: ProtocolKind, text_only: bool) -> VlmRequest {
    let arena = match protocol {
        ProtocolKind::Objectnav => "house_a",
        ProtocolKind::Candidates => "simple",
        ProtocolKind::Explore => "exploration",
    };
    let mut spec = EpisodeSpec::new(Arena::builtin(arena).unwrap(), format!("builtin:{arena}"));
    spec.protocol = protocol;
    spec.memory = true;
    spec.text_only = text_only;
    initial_request(&spec).await.unwrap()
}

/// The explore protocol's second call: the model's perception call (signed,
/// as Gemini 3 replies are), its result, then action tools only.
fn follow_up(req: &VlmRequest) -> VlmRequest {
    let call = RawToolCall::new("call_1", "observe_scene", json!({"focus": "doorways"}))
        .with_thought_signature("c2lnbmF0dXJlLTE=");
    req.clone()
        .turn(Turn::Assistant { text: Some("Checking the doorway first.".into()), tool_calls: vec![call] })
        .turn(Turn::ToolResult {
            call_id: "call_1".into(),
            name: "observe_scene".into(),
            content: r#"{"summary": "a doorway 2 m ahead on the left"}"#.into(),
        })
        .tool_choice(ToolChoice::Only(ACTION_TOOLS.iter().map(|s| s.to_string()).collect()))
}

/// The backend configs whose bodies differ: file prefix and config.
fn configs() -> Vec<(&'static str, BackendConfig)> {
    vec![
        ("openai-gpt4o", BackendConfig::new(Provider::OpenAi).with_model("gpt-4o-mini")),
        ("openai-gpt5", BackendConfig::new(Provider::OpenAi).with_model("gpt-5-mini")),
        (
            "openai-local",
            BackendConfig::new(Provider::OpenAi).with_model("smollm2").with_base_url("http://127.0.0.1:8080/v1"),
        ),
        ("anthropic", BackendConfig::new(Provider::Anthropic)),
        ("gemini", BackendConfig::new(Provider::Gemini)),
    ]
}

#[tokio::test]
async fn every_body_validates_against_the_official_sdk_types() {
    let Some(python) = sdk_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut written = 0;
    for protocol in [ProtocolKind::Objectnav, ProtocolKind::Candidates, ProtocolKind::Explore] {
        for text_only in [false, true] {
            let start = start_request(protocol, text_only).await;
            assert_eq!(start.image_count() == 0, text_only);
            let mut cases = vec![(format!("{protocol}-{}", if text_only { "text" } else { "images" }), start.clone())];
            if protocol == ProtocolKind::Explore {
                cases.push((
                    format!("explore-followup-{}", if text_only { "text" } else { "images" }),
                    follow_up(&start),
                ));
            }
            for (case, req) in cases {
                req.validate().unwrap();
                for (prefix, cfg) in configs() {
                    let body = wire::request_body(&cfg, &req);
                    let path = dir.path().join(format!("{prefix}-{case}.json"));
                    std::fs::write(&path, serde_json::to_vec_pretty(&body).unwrap()).unwrap();
                    written += 1;
                }
            }
        }
    }
    assert_eq!(written, 5 * 8);
    let out = Command::new(&python)
        .arg(workspace_root().join("ci/validate_bodies.py"))
        .arg(dir.path())
        .output()
        .expect("run ci/validate_bodies.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "SDK type violations:\n{stdout}\n{stderr}");
    assert!(stdout.contains("bodies: 40 passed, 0 failed"), "{stdout}");
}

#[test]
fn the_validator_catches_what_providers_reject() {
    let Some(python) = sdk_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let bad = [
        // the current Anthropic API has no sampling parameters
        (
            "anthropic-temperature",
            json!({"model": "m", "max_tokens": 10, "temperature": 0.2,
                   "messages": [{"role": "user", "content": "hi"}]}),
        ),
        ("openai-unknown-key", json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "foo": 1})),
        ("openai-bad-role", json!({"model": "m", "messages": [{"role": "robot", "content": "hi"}]})),
        ("gemini-snake-key", json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "generation_cfg": {}})),
        ("gemini-bad-part", json!({"contents": [{"role": "user", "parts": [{"txt": "hi"}]}]})),
    ];
    for (name, body) in &bad {
        std::fs::write(dir.path().join(format!("{name}.json")), body.to_string()).unwrap();
    }
    let out = Command::new(&python)
        .arg(workspace_root().join("ci/validate_bodies.py"))
        .arg(dir.path())
        .output()
        .expect("run ci/validate_bodies.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("bodies: 0 passed, 5 failed"), "{stdout}");
    assert!(stdout.contains("anthropic-temperature.json: body: unknown key `temperature`"), "{stdout}");
    assert!(stdout.contains("openai-unknown-key.json: body: unknown key `foo`"), "{stdout}");
}
