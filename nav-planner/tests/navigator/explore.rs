//! The explore loop: frontier goals and coverage, a model that goes
//! silent (watchdog tiers), pause and resume.

use crate::doubles::to_frontier;
use crate::{assert_consecutive, run};
use nav_hal::arena::Arena;
use nav_hal::hal::Sensors as _;
use nav_hal::sim::{SimConfig, SimHal, SimWorld};
use nav_planner::navigator::episode::{EpisodeSpec, PlannerChoice};
use nav_planner::navigator::explore_loop::{ExploreEnd, ExploreLoop, ExploreLoopConfig, ExploreSignals, Pacing};
use nav_planner::navigator::{Observer, RunContext, StepLog, StepRecord};
use nav_planner::protocol::ProtocolKind;
use nav_planner::protocol::explore::{ExplorePromptConfig, VlmExplorePlanner};
use nav_planner::vlm::{RawToolCall, ScriptStep, ScriptedVlm, VisionLanguageModel, VlmResponse};
use nav_safety::SafetyConfig;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

fn explore_config(max_time_s: f64) -> ExploreLoopConfig {
    ExploreLoopConfig {
        max_time_s,
        pacing: Pacing::Simulated { time_scale: 20.0 },
        use_camera: false,
        ..ExploreLoopConfig::default()
    }
}

/// Coverage of `arena` after one scan at the start.
async fn start_coverage(arena: &str) -> f64 {
    let mut hal = SimHal::builtin(arena, SimConfig::default()).unwrap();
    hal.scan().await.unwrap();
    hal.world().coverage()
}

#[tokio::test]
async fn explore_drives_to_frontiers_and_coverage_grows() {
    let vlm = Arc::new(to_frontier(ScriptedVlm::new()).repeat_last());
    let mut spec = EpisodeSpec::new(Arena::builtin("exploration").unwrap(), "builtin:exploration");
    spec.protocol = ProtocolKind::Explore;
    spec.planner = PlannerChoice::Vlm;
    spec.vlm = Some(vlm.clone());
    spec.text_only = true;
    spec.max_steps = Some(12);
    spec.explore = explore_config(240.0);
    let (summary, records) = run(&spec).await;
    let c0 = start_coverage("exploration").await;
    // the arena's own criteria: 0 collisions, >= 80 % coverage; the first scan already sees 88 %
    assert!(summary.passed, "{}", summary.report());
    assert!(summary.coverage >= 0.95 && summary.coverage > c0 + 0.05, "coverage {c0:.2} -> {:.2}", summary.coverage);
    assert_eq!(summary.fallbacks, 0);
    assert_eq!(summary.vlm_calls as usize, vlm.calls());
    assert_eq!(summary.planner_calls, 12, "{}", summary.report());
    assert_consecutive(&records);
    let goals = records.iter().filter(|r| r.action == "navigate_to_goal").count();
    assert_eq!(goals as u32, summary.planner_calls);
    // the robot moved on its own between decisions: the control loop drives at 20 Hz
    assert!(records.windows(2).all(|w| (w[1].t_s - w[0].t_s - 0.05).abs() < 1e-6 || w[0].step == 0));
}

/// Runs the explore loop in `arena` with `vlm` (text only, `timeout_s` of
/// wall time per call) until `stop` (fed every record as it is written,
/// with the pause/shutdown signals) says to shut down or `max_time_s` of
/// simulated time pass.
async fn explore_run(
    arena: &str,
    vlm: Arc<dyn VisionLanguageModel>,
    timeout_s: f64,
    max_time_s: f64,
    stop: impl FnMut(&StepRecord, &ExploreSignals) + Send + 'static,
) -> (ExploreEnd, Vec<StepRecord>, SimHal) {
    let world = SimWorld::builtin(arena, SimConfig::default()).unwrap();
    let clock = world.clock();
    let mut hal = SimHal::new(world);
    let planner = VlmExplorePlanner::new(
        vlm,
        ExplorePromptConfig { text_only: true, timeout_s, ..ExplorePromptConfig::default() },
        SafetyConfig::default(),
    );
    let signals = ExploreSignals::default();
    let mut lp = ExploreLoop::new(explore_config(max_time_s), Box::new(planner), signals.clone()).unwrap();
    let mut stop = stop;
    let mut log = StepLog::memory().with_tap(move |r| stop(r, &signals));
    let gt = |h: &SimHal| Some(h.world().ground_truth_pose());
    let mut ctx = RunContext::new(clock.as_ref(), &mut log).with_observer(Observer::new().with_ground_truth(&gt));
    let out = lp.run(&mut hal, &mut ctx).await.unwrap();
    (out.end, log.records().to_vec(), hal)
}

fn has_event(r: &StepRecord, kind: &str) -> bool {
    r.events.iter().any(|e| e["event"] == kind)
}

fn moved(a: &StepRecord, b: &StepRecord) -> f64 {
    let (p, q) = (a.gt_pose.unwrap(), b.gt_pose.unwrap());
    ((p.x - q.x).powi(2) + (p.y - q.y).powi(2)).sqrt() + (p.yaw_deg - q.yaw_deg).abs().to_radians()
}

/// A model that never answers: the watchdog reaches RETURN_HOME and the
/// robot is brought home, and the run is a failure with its own end, however
/// much the fallback explorer covered meanwhile.
#[tokio::test]
async fn a_model_that_never_answers_ends_model_unavailable_and_fails_even_at_home() {
    let vlm = Arc::new(ScriptedVlm::new().then_silence());
    let mut spec = EpisodeSpec::new(Arena::builtin("exploration").unwrap(), "builtin:exploration");
    spec.protocol = ProtocolKind::Explore;
    spec.planner = PlannerChoice::Vlm;
    spec.text_only = true;
    spec.vlm = Some(vlm.clone() as Arc<dyn VisionLanguageModel>);
    spec.call_timeout_s = Some(0.2);
    spec.explore.max_time_s = 600.0;
    spec.explore.pacing = Pacing::Simulated { time_scale: 100.0 };
    let (summary, records) = run(&spec).await;
    assert_eq!(summary.end, "model_unavailable", "{}", summary.report());
    assert!(!summary.success, "a model outage is a failure");
    assert!(records.iter().any(|r| r.events.iter().any(|e| e["tier"] == "RETURN_HOME")));
    assert!(vlm.calls() > 0 && summary.vlm_calls == 0, "no call was ever answered");
    // the robot got home: the run ended there, not at a budget
    let (first, last) = (records[0].gt_pose.unwrap(), records.last().unwrap().gt_pose.unwrap());
    let from_start = ((last.x - first.x).powi(2) + (last.y - first.y).powi(2)).sqrt();
    assert!(from_start <= spec.explore.goal_tolerance_m + 0.05, "{from_start:.2} m from the start");
}

#[tokio::test]
async fn explore_silent_model_stops_the_robot_within_3s_and_local_nav_drives_after_10s() {
    const GOOD: usize = 3;
    let mut script = ScriptedVlm::new();
    for _ in 0..GOOD {
        script = to_frontier(script);
    }
    let vlm = Arc::new(script.then_silence());
    // shut down 16 s (simulated) after the first unanswered call. Each silent call times out after 0.5 s
    // of wall time, at least 10 ticks (0.5 s simulated) with the loop's pacing: a failed call is no
    // response, the loop asks again and the watchdog keeps counting.
    let mut calls = 0;
    let mut silent_from: Option<f64> = None;
    let (end, records, _) = explore_run("house_a", vlm.clone(), 0.5, 120.0, move |r, signals| {
        if has_event(r, "planner_call") {
            calls += 1;
            if calls == GOOD + 1 {
                silent_from = Some(r.t_s);
            }
        }
        if silent_from.is_some_and(|t| r.t_s >= t + 16.0) {
            signals.shutdown.store(true, Ordering::SeqCst);
        }
    })
    .await;
    assert_eq!(end, ExploreEnd::Shutdown);
    assert_consecutive(&records);
    // the good replies were applied; after them only timeouts came back, each logged as a fallback
    let decided: Vec<&StepRecord> =
        records.iter().filter(|r| r.planner.as_ref().is_some_and(|p| p.fallback.is_none())).collect();
    assert_eq!(decided.len(), GOOD, "no reply after the silence began");
    assert!(decided.iter().all(|r| r.action == "navigate_to_goal"));
    let call = records.iter().filter(|r| has_event(r, "planner_call")).nth(GOOD).expect("a call after the good ones");
    let timeouts: Vec<&StepRecord> = records.iter().filter(|r| r.planner.is_some() && r.step > call.step).collect();
    assert!(!timeouts.is_empty() && vlm.calls() > GOOD + 1, "the silent call timed out and the loop asked again");
    for r in &timeouts {
        let reason = r.planner.as_ref().unwrap().fallback.as_deref().expect("a timeout is a fallback");
        assert!(reason.contains("timed out"), "{reason}");
        assert!(r.events.iter().any(|e| e["event"] == "fallback" && e["reason"] == reason));
    }
    // the tick that started the call ran at t_s - tick
    let t_call = call.t_s - 0.05;
    let after = |dt: f64| records.iter().filter(move |r| r.t_s - 0.05 >= t_call + dt - 1e-9);
    // the control loop kept ticking at 20 Hz while the model was silent
    let silent: Vec<&StepRecord> = after(0.0).collect();
    assert!(silent.windows(2).all(|w| (w[1].t_s - w[0].t_s - 0.05).abs() < 1e-6));
    // the robot was moving when the model went silent
    assert!(records.iter().filter(|r| r.t_s <= call.t_s).any(|r| r.velocity.is_some_and(|v| v[0] > 0.0)));

    // within 3 s: STOP_WAIT, zero velocity, the robot still
    let stop_wait = records.iter().find(|r| r.events.iter().any(|e| e["tier"] == "STOP_WAIT")).unwrap();
    let t_stop = stop_wait.t_s - 0.05 - t_call;
    assert!((2.9..=3.0 + 1e-9).contains(&t_stop), "STOP_WAIT {t_stop:.2} s after the call");
    let held: Vec<&StepRecord> = after(3.0).take_while(|r| r.t_s - 0.05 < t_call + 9.95).collect();
    assert!(held.len() >= 130);
    for w in held.windows(2) {
        assert_eq!(w[1].velocity, Some([0.0, 0.0]), "t = {:.2}", w[1].t_s);
        assert!(moved(w[0], w[1]) < 1e-9, "the robot moved at t = {:.2}", w[1].t_s);
    }

    // from 10 s: LOCAL_NAV hands over to the frontier planner, which drives
    let local = records.iter().find(|r| r.events.iter().any(|e| e["tier"] == "LOCAL_NAV")).unwrap();
    let t_local = local.t_s - 0.05 - t_call;
    assert!((9.9..=10.0 + 1e-9).contains(&t_local), "LOCAL_NAV {t_local:.2} s after the call");
    assert!(has_event(local, "local_nav_goal"), "{:?}", local.events);
    let driving: Vec<&StepRecord> = after(10.0).collect();
    assert!(driving.iter().any(|r| r.velocity.is_some_and(|v| v[0] > 0.0)));
    let travelled: f64 = driving.windows(2).map(|w| moved(w[0], w[1])).sum();
    assert!(travelled > 0.5, "LOCAL_NAV moved the robot {travelled:.2} (m + rad)");
    assert!(driving.iter().filter_map(|r| r.planner.as_ref()).all(|p| p.fallback.is_some()));
}

#[tokio::test]
async fn explore_pause_stops_motion_at_once_and_resume_continues() {
    let vlm = Arc::new(to_frontier(ScriptedVlm::new()).repeat_last());
    // pause at the first moving tick after 2 s, resume 2 s later, shut down 4 s after that
    let mut paused_at: Option<u64> = None;
    let mut last: Option<StepRecord> = None;
    let (end, records, hal) = explore_run("house_a", vlm, 8.0, 60.0, move |r, signals| {
        let moving = last.as_ref().is_some_and(|l| r.gt_pose.is_some() && moved(l, r) > 1e-6);
        match paused_at {
            None if r.t_s >= 2.0 && moving => {
                signals.pause.store(true, Ordering::SeqCst);
                paused_at = Some(r.step);
            }
            Some(p) if r.step == p + 40 => signals.pause.store(false, Ordering::SeqCst),
            Some(p) if r.step >= p + 120 => signals.shutdown.store(true, Ordering::SeqCst),
            _ => {}
        }
        last = Some(r.clone());
    })
    .await;
    assert_eq!(end, ExploreEnd::Shutdown);
    assert_consecutive(&records);
    let p = records.iter().position(|r| r.t_s >= 2.0 && r.step > 0 && moved(&records[r.step as usize - 1], r) > 1e-6);
    let p = p.expect("the robot moves within the run");
    assert!(records[p].velocity.is_some_and(|v| v != [0.0, 0.0]));
    // the very next tick publishes zero velocity and the robot stands still, for the whole pause
    for r in &records[p + 1..=p + 40] {
        assert_eq!(r.velocity, Some([0.0, 0.0]), "step {}", r.step);
        assert!(moved(&records[p], r) < 1e-9, "the robot moved while paused (step {})", r.step);
        assert!(!has_event(r, "planner_call"), "no decisions while paused (step {})", r.step);
    }
    // cleared: it moves again
    let resumed: f64 = records[p + 41..].windows(2).map(|w| moved(&w[0], &w[1])).sum();
    assert!(resumed > 0.1, "moved {resumed:.2} after the pause");
    assert!(records[p + 41..].iter().any(|r| r.velocity.is_some_and(|v| v[0] > 0.0)));
    // shutdown ends the loop before another tick
    assert_eq!(records.last().unwrap().step, records[p].step + 120);
    assert_eq!(hal.world().collisions(), 0);
}

#[tokio::test]
async fn explore_keeps_one_call_in_flight_and_applies_each_reply_to_its_own_request() {
    // every reply takes 0.3 s of wall time: many ticks pass while a call is in flight
    const DELAY_MS: u64 = 300;
    let reply = VlmResponse::from_tool_calls(vec![RawToolCall::new(
        "",
        "navigate_to_goal",
        json!({"goal_type": "frontier", "frontier_id": 1, "reason": "unexplored"}),
    )]);
    let step = ScriptStep::Reply(reply);
    let vlm = Arc::new(ScriptedVlm::new().then_delayed(Duration::from_millis(DELAY_MS), step).repeat_last());
    let (end, records, _) = explore_run("house_a", vlm.clone(), 8.0, 30.0, |_, _| {}).await;
    assert_ne!(end, ExploreEnd::Shutdown);
    assert_consecutive(&records);
    // the planner task picks up a request still queued when the run ended
    tokio::time::sleep(Duration::from_millis(100)).await;
    let calls = records.iter().filter(|r| has_event(r, "planner_call")).count();
    let replies: Vec<&StepRecord> = records.iter().filter(|r| r.planner.is_some()).collect();
    assert!(replies.len() >= 3, "{} replies", replies.len());
    // one logged call per model request, and every reply answers the one call in flight
    assert_eq!(calls, vlm.calls(), "planner_call events vs model requests");
    assert!(calls == replies.len() || calls == replies.len() + 1, "{calls} calls, {} replies", replies.len());
    let mut in_flight: Option<u64> = None;
    for r in &records {
        if r.planner.is_some() {
            let call = in_flight.take().unwrap_or_else(|| panic!("a reply with no call in flight (step {})", r.step));
            assert!(r.step > call, "the reply came on a later tick than its call (step {})", r.step);
        }
        if has_event(r, "planner_call") {
            assert!(in_flight.is_none(), "a second call while one is in flight (step {})", r.step);
            in_flight = Some(r.step);
        }
    }
    for p in replies.iter().filter_map(|r| r.planner.as_ref()) {
        assert!(p.fallback.is_none(), "{:?}", p.fallback);
        assert!(p.latency_ms >= DELAY_MS as f64, "latency {} ms", p.latency_ms);
    }
}
