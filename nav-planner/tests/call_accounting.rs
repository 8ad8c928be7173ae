//! Honest call accounting in the explore loop: every request the model
//! server receives — a decision's first request and the follow-up after a
//! perception sub-call — counts in the run's statistics (the summary's
//! answered and failed calls) and in the run's statistics line, and calls
//! made while the robot is idle go through the same scheduler (named and
//! counted). Against an OpenAI-compatible double.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use nav_hal::sim::{SimConfig, SimHal, SimWorld};
use nav_planner::navigator::explore_loop::{ExploreLoop, ExploreLoopConfig, ExploreSignals, Pacing};
use nav_planner::navigator::{RunContext, StepLog};
use nav_planner::protocol::explore::{ExplorePromptConfig, VlmExplorePlanner};
use nav_planner::vlm::{BackendConfig, OpenAiBackend, Provider, VisionLanguageModel};
use nav_safety::SafetyConfig;
use serde_json::{Value, json};
use support::responder::{Responder, chat_tool_call};

fn backend(server: &Responder) -> OpenAiBackend {
    let mut cfg = BackendConfig::new(Provider::OpenAi);
    cfg.base_url = Some(server.base_url());
    cfg.model = Some("gpt-4o-mini".into());
    OpenAiBackend::new(&support::quick(cfg)).unwrap()
}

/// A follow-up request carries the perception sub-call's result.
fn is_follow_up(body: &Value) -> bool {
    body["messages"].as_array().into_iter().flatten().any(|m| m["role"] == "tool")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_sent_is_counted_in_the_summary_and_the_stats_line() {
    // every third decision checks the path first (two requests), the others move at once
    let firsts = AtomicUsize::new(0);
    let server = Responder::start(move |body: &Value| {
        let moving = json!({"direction": "forward", "speed": "slow", "duration_s": 2});
        if is_follow_up(body) {
            return (200, chat_tool_call("move_toward", &moving, 400, 20));
        }
        let n = firsts.fetch_add(1, Ordering::SeqCst);
        let reply = if n % 3 == 1 {
            chat_tool_call("check_path_clear", &json!({"direction": "forward", "distance_m": 1.5}), 400, 20)
        } else {
            chat_tool_call("move_toward", &moving, 400, 20)
        };
        (200, reply)
    })
    .await;
    let world = SimWorld::builtin("house_a", SimConfig::default()).unwrap();
    let clock = world.clock();
    let mut hal = SimHal::new(world);
    let vlm: Arc<dyn VisionLanguageModel> = Arc::new(backend(&server));
    let planner = VlmExplorePlanner::new(
        vlm,
        ExplorePromptConfig { text_only: true, ..ExplorePromptConfig::default() },
        SafetyConfig::default(),
    );
    let config = ExploreLoopConfig {
        max_time_s: 600.0,
        max_decisions: 9,
        pacing: Pacing::Simulated { time_scale: 100.0 },
        use_camera: false,
        ..ExploreLoopConfig::default()
    };
    let mut lp = ExploreLoop::new(config, Box::new(planner), ExploreSignals::default()).unwrap();
    let mut log = StepLog::memory();
    let mut ctx = RunContext::new(clock.as_ref(), &mut log);
    let out = lp.run(&mut hal, &mut ctx).await.unwrap();

    let bodies = server.bodies();
    let follow_ups = bodies.iter().filter(|b| is_follow_up(b)).count();
    assert!(follow_ups >= 2, "the double was asked {follow_ups} follow-ups");
    let sent = bodies.len() as u64;
    // the summary's calls: answered + failed
    assert_eq!(u64::from(out.stats.vlm_calls + out.stats.vlm_failures), sent, "{}", out.stats_line);
    // the run's statistics line
    let counted: u64 = out
        .stats_line
        .strip_prefix("VLM stats for the run: ")
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", out.stats_line));
    assert_eq!(counted, sent, "{}", out.stats_line);

    // every call is the scheduler's: one sooner than the base period is a trigger's or an idle robot's
    let calls: Vec<(f64, &Value)> = log
        .records()
        .iter()
        .flat_map(|r| r.events.iter().filter(|e| e["event"] == "planner_call").map(move |e| (r.t_s, e)))
        .collect();
    assert!(calls.len() >= 9, "{} calls", calls.len());
    let reason = |e: &Value, r: &str| e["reasons"].as_array().into_iter().flatten().any(|x| x["reason"] == r);
    for w in calls.windows(2) {
        let dt = w[1].0 - w[0].0;
        let named = reason(w[1].1, "trigger") || reason(w[1].1, "idle");
        assert!(named || dt >= 5.0 - 1e-6, "a call {dt:.2} s after the previous one: {}", w[1].1);
    }
    assert!(calls.iter().any(|(_, e)| reason(e, "idle")), "the robot was idle between actions");
}
