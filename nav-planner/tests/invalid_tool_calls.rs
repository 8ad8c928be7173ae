//! Tool calls the model can learn from: `rotate.degrees` is an enum of the
//! allowed angles in the strict schema, and a call that is invalid anyway
//! (a server without strict mode) is rejected with a result that says why;
//! the next request the model receives shows it, and the run summary
//! counts it. Tested against an OpenAI-compatible double.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use nav_hal::arena::Arena;
use nav_planner::navigator::StepLog;
use nav_planner::navigator::episode::{EpisodeSpec, PlannerChoice, run_episode};
use nav_planner::protocol::ProtocolKind;
use nav_planner::vlm::{BackendConfig, OpenAiBackend, Provider, VisionLanguageModel};
use serde_json::{Value, json};
use support::responder::{Responder, chat_tool_call};

fn backend(server: &Responder) -> OpenAiBackend {
    let mut cfg = BackendConfig::new(Provider::OpenAi);
    cfg.base_url = Some(server.base_url());
    cfg.model = Some("gpt-4o-mini".into());
    OpenAiBackend::new(&support::quick(cfg)).unwrap()
}

/// The text of every message of a request body, joined.
fn request_text(body: &Value) -> String {
    let mut s = String::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        match &m["content"] {
            Value::String(t) => s.push_str(t),
            Value::Array(parts) => {
                for p in parts {
                    s.push_str(p["text"].as_str().unwrap_or(""));
                }
            }
            _ => {}
        }
        s.push('\n');
    }
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_rotate_is_explained_in_the_next_request() {
    // the first answer turns by 30°, which no strict schema allows; then forward moves
    let asked = AtomicUsize::new(0);
    let server = Responder::start(move |_: &Value| {
        let call = if asked.fetch_add(1, Ordering::SeqCst) == 0 {
            chat_tool_call("rotate", &json!({"degrees": 30}), 500, 20)
        } else {
            chat_tool_call("move_toward", &json!({"direction": "forward", "speed": "slow", "duration_s": 2}), 500, 20)
        };
        (200, call)
    })
    .await;
    let mut spec = EpisodeSpec::new(Arena::builtin("exploration").unwrap(), "builtin:exploration");
    spec.protocol = ProtocolKind::Explore;
    spec.planner = PlannerChoice::Vlm;
    spec.text_only = true;
    spec.max_steps = Some(3);
    spec.vlm = Some(Arc::new(backend(&server)) as Arc<dyn VisionLanguageModel>);
    let mut log = StepLog::memory();
    let s = run_episode(&spec, &mut log, &mut |_| {}).await.unwrap();
    let bodies = server.bodies();
    assert!(bodies.len() >= 2, "{} requests", bodies.len());

    // strict mode cannot produce rotate(30): the schema is the enum of the allowed angles
    let tools = bodies[0]["tools"].as_array().unwrap();
    let rotate = tools.iter().find(|t| t["function"]["name"] == "rotate").unwrap();
    assert_eq!(rotate["function"]["strict"], true);
    assert_eq!(
        rotate["function"]["parameters"]["properties"]["degrees"],
        json!({"type": "integer", "enum": [-180, -135, -90, -45, 45, 90, 135, 180]})
    );

    // the next request says why the call was rejected, once
    let next = request_text(&bodies[1]);
    let line = next.lines().find(|l| l.starts_with("REJECTED: rotate(")).unwrap_or_else(|| panic!("{next}"));
    assert!(line.contains("`degrees` = 30 is not one of: -180, -135, -90, -45, 45, 90, 135, 180"), "{line}");
    assert!(line.contains("nothing was executed"), "{line}");
    for later in &bodies[2..] {
        assert!(!request_text(later).contains("REJECTED"), "shown once");
    }

    // counted: an invalid call (and its fallback), but an answer, not a model failure
    assert_eq!(s.invalid_tool_calls, 1);
    let fallbacks: Vec<Value> =
        log.records().iter().flat_map(|r| r.events.clone()).filter(|e| e["event"] == "fallback").collect();
    assert_eq!(s.fallbacks, 1, "{fallbacks:?}");
    assert_eq!(s.vlm_failures, 0);
    assert_eq!(s.vlm_calls as usize, bodies.len());
    let events = log.records().iter().flat_map(|r| r.events.clone()).collect::<Vec<_>>();
    let invalid: Vec<&Value> = events.iter().filter(|e| e["event"] == "invalid_tool_call").collect();
    assert_eq!(invalid.len(), 1, "{events:?}");
    assert_eq!(invalid[0]["command"], json!({"tool": "rotate", "degrees": 30}));
}
