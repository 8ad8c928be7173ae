//! The explore loop with models that answer like real ones: in 0.2 s,
//! 1.5 s, 4 s, or never, under simulated pacing (time scale 1) and real-time
//! pacing. Whatever the latency: one model request per decision, each
//! request built from the snapshot of the tick that asked, every reply
//! applied to the call in flight with the frontier list that call showed
//! the model; and while replies arrive within 3 s, no watchdog tier.

use crate::assert_consecutive;
use async_trait::async_trait;
use nav_core::geometry::Pose2;
use nav_hal::sim::{SimConfig, SimHal, SimWorld};
use nav_planner::navigator::explore_loop::{ExploreLoop, ExploreLoopConfig, ExploreOutcome, ExploreSignals, Pacing};
use nav_planner::navigator::{RunContext, StepLog, StepRecord};
use nav_planner::protocol::PlannerReply;
use nav_planner::protocol::explore::{
    ExploreDecision, ExploreFrontier, ExplorePlanner, ExplorePromptConfig, ExploreSnapshot, VlmExplorePlanner,
};
use nav_planner::vlm::{RawToolCall, ScriptStep, ScriptedVlm, VlmResponse};
use nav_safety::{SafetyConfig, WatchdogTier};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the planner was handed for one decision.
#[derive(Debug, Clone)]
struct Seen {
    pose: Pose2,
    elapsed_s: f64,
    frontiers: Vec<ExploreFrontier>,
}

/// The VLM planner, remembering every snapshot it is handed.
struct Spy {
    inner: VlmExplorePlanner<Arc<ScriptedVlm>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

#[async_trait]
impl ExplorePlanner for Spy {
    fn name(&self) -> String {
        self.inner.name()
    }
    async fn decide(&mut self, snap: &ExploreSnapshot) -> PlannerReply<ExploreDecision> {
        let seen = Seen { pose: snap.pose, elapsed_s: snap.elapsed_s, frontiers: snap.frontiers.clone() };
        self.seen.lock().unwrap().push(seen);
        self.inner.decide(snap).await
    }
}

struct LatencyRun {
    outcome: ExploreOutcome,
    records: Vec<StepRecord>,
    seen: Vec<Seen>,
    requests: usize,
}

/// A model answering `navigate_to_goal(frontier 1)` after `latency`, or
/// never (`None`; each call then times out after 6 s).
fn model(latency: Option<f64>) -> ScriptedVlm {
    let reply = VlmResponse::from_tool_calls(vec![RawToolCall::new(
        "",
        "navigate_to_goal",
        json!({"goal_type": "frontier", "frontier_id": 1, "reason": "unexplored"}),
    )]);
    match latency {
        Some(s) => ScriptedVlm::new().then_delayed(Duration::from_secs_f64(s), ScriptStep::Reply(reply)).repeat_last(),
        None => ScriptedVlm::new().then_silence(),
    }
}

async fn latency_run(latency: Option<f64>, pacing: Pacing, max_time_s: f64) -> LatencyRun {
    let world = SimWorld::builtin("house_a", SimConfig::default()).unwrap();
    let clock = world.clock();
    let mut hal = SimHal::new(world);
    let vlm = Arc::new(model(latency));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let prompt = ExplorePromptConfig { text_only: true, timeout_s: 6.0, ..ExplorePromptConfig::default() };
    let inner = VlmExplorePlanner::new(Arc::clone(&vlm), prompt, SafetyConfig::default());
    let planner = Spy { inner, seen: Arc::clone(&seen) };
    // calls every few seconds even while the answered goal progresses, so these short runs see several
    let mut safety = SafetyConfig::default();
    safety.schedule.base_period_s = 2.5;
    safety.schedule.max_interval_s = 5.0;
    safety.schedule.goal_max_interval_s = 5.0;
    let config = ExploreLoopConfig { max_time_s, pacing, use_camera: false, safety, ..ExploreLoopConfig::default() };
    let mut lp = ExploreLoop::new(config, Box::new(planner), ExploreSignals::default()).unwrap();
    let mut log = StepLog::memory();
    let outcome = lp.run(&mut hal, &mut RunContext::new(clock.as_ref(), &mut log)).await.unwrap();
    // a request still queued when the run ended reaches the model shortly after
    tokio::time::sleep(Duration::from_millis(50)).await;
    let seen = seen.lock().unwrap().clone();
    LatencyRun { outcome, records: log.records().to_vec(), seen, requests: vlm.calls() }
}

fn has_event(r: &StepRecord, kind: &str) -> bool {
    r.events.iter().any(|e| e["event"] == kind)
}

fn event<'a>(r: &'a StepRecord, kind: &str) -> Option<&'a Value> {
    r.events.iter().find(|e| e["event"] == kind)
}

/// The invariants every latency keeps; returns the watchdog tiers logged.
fn check_bookkeeping(run: &LatencyRun, label: &str) -> Vec<String> {
    let records = &run.records;
    assert_consecutive(records);
    let calls: Vec<&StepRecord> = records.iter().filter(|r| has_event(r, "planner_call")).collect();
    assert!(calls.len() >= 2, "{label}: {} calls", calls.len());
    // one model request per decision, and one snapshot per request
    assert_eq!(calls.len(), run.requests, "{label}: planner_call events vs model requests");
    assert_eq!(calls.len(), run.seen.len(), "{label}: planner_call events vs snapshots handed to the planner");
    // each request carries the snapshot of the tick that asked (the tick ran at t_s - tick)
    for (k, (r, s)) in calls.iter().zip(&run.seen).enumerate() {
        assert!(
            (s.elapsed_s - (r.t_s - 0.05)).abs() < 1e-6,
            "{label}: request {k} taken at {} s, sent at {}",
            s.elapsed_s,
            r.t_s
        );
        assert!((s.pose.x - r.pose.x).abs() < 1e-4 && (s.pose.y - r.pose.y).abs() < 1e-4, "{label}: request {k} pose");
    }
    // every reply answers the one call in flight, on a later tick, with that call's frontier list
    let mut in_flight: Option<(u64, usize)> = None;
    let mut calls_made = 0;
    let mut goals = 0;
    for r in records {
        if r.planner.is_some() {
            let (step, k) =
                in_flight.take().unwrap_or_else(|| panic!("{label}: a reply with no call in flight ({})", r.step));
            assert!(r.step > step, "{label}: the reply came on a later tick than its call (step {})", r.step);
            if let Some(goal) = event(r, "nav_goal") {
                assert_eq!(goal["frontier_id"], 1, "{label}: {goal}");
                let f = run.seen[k].frontiers.iter().find(|f| f.id == 1).expect("frontier 1 was shown");
                let (x, y) = (goal["x"].as_f64().unwrap(), goal["y"].as_f64().unwrap());
                assert!(
                    (x - f.position.x).abs() < 1e-9 && (y - f.position.y).abs() < 1e-9,
                    "{label}: goal ({x}, {y}) is not the frontier 1 the model saw: {:?}",
                    f.position
                );
                goals += 1;
            }
        }
        if has_event(r, "planner_call") {
            assert!(in_flight.is_none(), "{label}: a second call while one is in flight (step {})", r.step);
            in_flight = Some((r.step, calls_made));
            calls_made += 1;
        }
    }
    let answered = records.iter().filter(|r| r.planner.as_ref().is_some_and(|p| p.fallback.is_none())).count();
    if answered > 0 {
        assert!(goals > 0, "{label}: an answered frontier goal was followed");
    }
    records.iter().filter_map(|r| event(r, "watchdog")).map(|e| e["tier"].as_str().unwrap_or("").to_string()).collect()
}

fn answering(run: &LatencyRun, label: &str, latency: f64) {
    let tiers = check_bookkeeping(run, label);
    assert!(tiers.is_empty(), "{label}: replies within 3 s keep the watchdog quiet: {tiers:?}");
    assert_eq!(run.outcome.worst_tier, WatchdogTier::Continue, "{label}");
    let replies: Vec<_> = run.records.iter().filter_map(|r| r.planner.as_ref()).collect();
    assert!(replies.len() >= 2, "{label}: {} replies", replies.len());
    for p in replies {
        assert!(p.fallback.is_none(), "{label}: {:?}", p.fallback);
        assert!(p.latency_ms >= latency * 1000.0, "{label}: latency {} ms", p.latency_ms);
    }
    assert_eq!(run.outcome.stats.fallbacks, 0, "{label}");
}

fn slow(run: &LatencyRun, label: &str) {
    let tiers = check_bookkeeping(run, label);
    assert!(tiers.iter().any(|t| t == "STOP_WAIT"), "{label}: 4 s without a reply is STOP_WAIT: {tiers:?}");
    assert!(!tiers.iter().any(|t| t == "LOCAL_NAV" || t == "RETURN_HOME"), "{label}: {tiers:?}");
    assert!(run.records.iter().filter_map(|r| r.planner.as_ref()).all(|p| p.fallback.is_none()), "{label}");
}

fn silent(run: &LatencyRun, label: &str) {
    let tiers = check_bookkeeping(run, label);
    assert_eq!(tiers[..2], ["STOP_WAIT", "LOCAL_NAV"], "{label}: {tiers:?}");
    assert!(run.records.iter().filter_map(|r| r.planner.as_ref()).all(|p| p.fallback.is_some()), "{label}");
    // a 6 s timeout each: about one request per 6 s, not one per tick
    let t_end = run.records.last().unwrap().t_s;
    assert!(run.requests as f64 <= t_end / 5.0 + 1.0, "{label}: {} requests in {t_end:.1} s", run.requests);
}

const SIM: Pacing = Pacing::Simulated { time_scale: 1.0 };

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explore_model_answering_in_0_2_s() {
    answering(&latency_run(Some(0.2), SIM, 12.0).await, "0.2 s, simulated", 0.2);
    answering(&latency_run(Some(0.2), Pacing::RealTime, 6.0).await, "0.2 s, real time", 0.2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explore_model_answering_in_1_5_s() {
    answering(&latency_run(Some(1.5), SIM, 14.0).await, "1.5 s, simulated", 1.5);
    answering(&latency_run(Some(1.5), Pacing::RealTime, 8.0).await, "1.5 s, real time", 1.5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explore_model_answering_in_4_s() {
    slow(&latency_run(Some(4.0), SIM, 14.0).await, "4 s, simulated");
    slow(&latency_run(Some(4.0), Pacing::RealTime, 10.0).await, "4 s, real time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explore_model_never_answering() {
    silent(&latency_run(None, SIM, 13.0).await, "never, simulated");
    silent(&latency_run(None, Pacing::RealTime, 12.0).await, "never, real time");
}
