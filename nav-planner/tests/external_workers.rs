//! The external perception stage and the external low-level policy over
//! real Python worker processes (docs/BRIDGE.md, "Workers"): the bundled
//! colour-threshold detector, a fault-injecting detector and the rule
//! policy; and a whole bridge run on the `openroom` backend where both
//! decide.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// nav-planner declares Rust 1.88; its tests keep the workspace's 1.85 idioms (no let chains)

#[path = "../../nav-hal/tests/bridge_support/mod.rs"]
mod bridge_support;

use bridge_support::{bridge_command, package_dir, python, script_command};
use nav_core::action::{Action, StepConfig};
use nav_core::geometry::Pose2;
use nav_core::lidar::LaserScan;
use nav_core::raster::{Rgb, RgbFrame};
use nav_hal::bridge::{BridgeCommand, BridgeConfig, BridgeEndpoint, BridgeHal, WorkerConfig};
use nav_hal::hal::{CameraFrame, DepthFrame};
use nav_planner::navigator::StepLog;
use nav_planner::navigator::bridge_run::{BridgeRunConfig, BridgeRunner, PolicySetup};
use nav_planner::navigator::episode::PerceptionChoice;
use nav_planner::navigator::external::{
    ExternalGoalPerception, ExternalPolicy, ExternalPolicyConfig, SharedWorker, connect_worker,
};
use nav_planner::navigator::policy::{LowLevelPolicy, PolicyAction, PolicyGoal, PolicyObservation, PolicyStop};
use nav_planner::protocol::perception::{GoalPerception, GoalSighting, PerceptionInput};

fn module(module: &str, extra: &[&str]) -> BridgeEndpoint {
    BridgeEndpoint::Command(
        BridgeCommand::new(python())
            .args(["-m", module])
            .args(extra.iter().copied())
            .env("PYTHONPATH", package_dir().to_string_lossy()),
    )
}

fn worker_config(timeout_s: f64) -> WorkerConfig {
    WorkerConfig { hello_timeout_s: 30.0, request_timeout_s: timeout_s, ..WorkerConfig::default() }
}

/// A grey 64 × 48 view, 2 m of depth everywhere, a red rectangle over
/// columns 40..=49, rows 10..=29.
fn red_box_view() -> (CameraFrame, DepthFrame) {
    let (w, h) = (64, 48);
    let mut frame = RgbFrame::new(w, h, Rgb([120, 120, 115]));
    let bytes = frame.as_bytes_mut();
    for y in 10..30 {
        for x in 40..50 {
            let i = 3 * (y * w + x);
            bytes[i..i + 3].copy_from_slice(&[200, 30, 35]);
        }
    }
    let depth = DepthFrame { width: w, height: h, depth_m: vec![2.0; w * h], stamp_s: 0.0 };
    (CameraFrame { frame, hfov_rad: 90f64.to_radians(), stamp_s: 0.0 }, depth)
}

async fn locate(p: &mut ExternalGoalPerception, target: &str) -> (Option<GoalSighting>, Option<String>) {
    let (frame, depth) = red_box_view();
    let input = PerceptionInput { target, frame: Some(&frame), depth: Some(&depth), labels: None };
    let reply = p.locate(&input).await;
    (reply.sighting, reply.record.fallback)
}

#[tokio::test]
async fn the_external_detector_finds_the_target_and_depth_gives_its_range() {
    let w = connect_worker(&module("navkit_bridge.colour_detector", &[]), "detector", "detect", worker_config(10.0))
        .await
        .unwrap();
    let mut p = ExternalGoalPerception::new(w, 0.0);
    assert_eq!(p.name(), "external:colour-detector");
    assert!(!p.needs().labels, "an external detector reads no simulator labels");
    let (s, fallback) = locate(&mut p, "red box").await;
    assert_eq!(fallback, None);
    let s = s.expect("seen");
    assert_eq!(s.bbox, Some([40, 10, 49, 29]));
    assert_eq!(s.pixel, [44, 19]);
    assert!(s.bearing_rad < 0.0, "right of centre is negative: {}", s.bearing_rad);
    let range = s.range_m.unwrap();
    assert!((2.0..2.6).contains(&range), "2 m of depth along an off-axis ray: {range}");
    let (none, fallback) = locate(&mut p, "green ball").await;
    assert_eq!((none, fallback), (None, None), "a clean 'not seen' is no fallback");
}

#[tokio::test]
async fn bad_detector_replies_fall_back_to_not_seen_with_the_reason() {
    let ep = BridgeEndpoint::Command(script_command("faulty_worker.py", &["--slow-s", "1.0"]));
    let w = connect_worker(&ep, "detector", "detect", worker_config(0.4)).await.unwrap();
    let mut p = ExternalGoalPerception::new(w, 0.0);
    for (target, reason) in [
        ("bad box", "bbox[2]"),
        ("bad score", "score"),
        ("no seen", "seen"),
        ("garbage", "not a JSON reply"),
        ("slow", "timed out"),
    ] {
        let (s, fallback) = locate(&mut p, target).await;
        assert_eq!(s, None, "{target}");
        let fallback = fallback.unwrap_or_else(|| panic!("{target}: no fallback recorded"));
        assert!(fallback.contains(reason), "{target}: {fallback}");
    }
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    assert!(locate(&mut p, "red box").await.0.is_some(), "the late reply was skipped");
    let (s, fallback) = locate(&mut p, "crash").await;
    assert_eq!(s, None);
    assert!(fallback.unwrap().contains("exit status: 7"));
    let started = std::time::Instant::now();
    let (s, fallback) = locate(&mut p, "red box").await;
    assert_eq!(s, None);
    assert!(fallback.unwrap().contains("exit status: 7"));
    assert!(started.elapsed().as_secs_f64() < 0.5, "a dead worker fails fast");
}

/// A scan with everything 5 m away except `front_m` within ±25° ahead.
fn scan(front_m: f32) -> LaserScan {
    let mut s = LaserScan::full_circle(360, 0.05, 10.0, 5.0);
    for i in 0..s.len() {
        if s.angle(i).abs() < 25f64.to_radians() {
            s.ranges[i] = front_m;
        }
    }
    s
}

async fn rule_policy(extra: &[&str]) -> SharedWorker {
    connect_worker(&module("navkit_bridge.rule_policy", extra), "policy", "act", worker_config(10.0)).await.unwrap()
}

fn sighting(pixel_x: u32, range_m: f64) -> GoalSighting {
    GoalSighting { pixel: [pixel_x, 20], bbox: None, bearing_rad: 0.0, range_m: Some(range_m), below_view: false }
}

#[tokio::test]
async fn the_policy_worker_chooses_and_navkit_guards() {
    let (frame, depth) = red_box_view();
    fn obs<'a>(s: &'a LaserScan, frame: &'a CameraFrame, depth: &'a DepthFrame) -> PolicyObservation<'a> {
        PolicyObservation {
            pose: Pose2::origin(),
            scan: Some(s),
            forward_clearance_m: None,
            frame: Some(frame),
            depth: Some(depth),
        }
    }
    let (clear, wall) = (scan(5.0), scan(0.2));
    let cfg = ExternalPolicyConfig {
        max_steps_per_goal: 3,
        ..ExternalPolicyConfig::for_task(StepConfig::default(), 0.22, 1.0)
    };
    let mut p = ExternalPolicy::new(rule_policy(&[]).await, cfg);
    assert!(p.needs_view().rgb, "a pixel-goal policy looks at the view");
    let goal = PolicyGoal { goal_flag: true, angle_rad: 0.0, target: "red box".into(), distance_hint_m: None };
    p.reset(&goal, Pose2::origin());
    assert_eq!(p.act(&obs(&clear, &frame, &depth)).await, PolicyAction::Perceive, "a new goal starts with perception");
    // goal pixel far right of centre: the worker turns right
    p.perceived(Some(&sighting(60, 3.0)), Pose2::origin());
    assert_eq!(p.act(&obs(&clear, &frame, &depth)).await, PolicyAction::Step(Action::TurnRight));
    assert_eq!(p.act(&obs(&clear, &frame, &depth)).await, PolicyAction::Perceive, "re-perceives every step by default");
    // centred: the worker says forward; with a wall 0.2 m ahead navkit vetoes it
    p.perceived(Some(&sighting(32, 3.0)), Pose2::origin());
    assert_eq!(p.act(&obs(&wall, &frame, &depth)).await, PolicyAction::Done(PolicyStop::Blocked));
    assert_eq!(p.act(&obs(&clear, &frame, &depth)).await, PolicyAction::Step(Action::Forward));
    // within reach with goal_flag: the worker is told, stops, and that is the final STOP
    p.perceived(Some(&sighting(32, 0.5)), Pose2::origin());
    assert_eq!(p.act(&obs(&clear, &frame, &depth)).await, PolicyAction::Done(PolicyStop::Reached));
    // the per-goal step budget: after 3 executed actions navkit hands back
    p.reset(&goal, Pose2::origin());
    for _ in 0..3 {
        assert_eq!(p.act(&obs(&clear, &frame, &depth)).await, PolicyAction::Perceive);
        p.perceived(Some(&sighting(32, 3.0)), Pose2::origin());
        assert_eq!(p.act(&obs(&clear, &frame, &depth)).await, PolicyAction::Step(Action::Forward));
    }
    assert_eq!(p.act(&obs(&clear, &frame, &depth)).await, PolicyAction::Done(PolicyStop::NoProgress));
}

#[tokio::test]
async fn a_policy_stop_without_goal_flag_or_sighting_hands_back() {
    let (frame, depth) = red_box_view();
    let clear = scan(5.0);
    let obs = PolicyObservation {
        pose: Pose2::origin(),
        scan: Some(&clear),
        forward_clearance_m: None,
        frame: Some(&frame),
        depth: Some(&depth),
    };
    // the worker stops after one action on a goal
    let mut p = ExternalPolicy::new(rule_policy(&["--max-steps", "1"]).await, ExternalPolicyConfig::default());
    let explore = PolicyGoal { goal_flag: false, angle_rad: 0.0, target: "red box".into(), distance_hint_m: None };
    p.reset(&explore, Pose2::origin());
    assert_eq!(p.act(&obs).await, PolicyAction::Perceive);
    p.perceived(Some(&sighting(32, 0.5)), Pose2::origin());
    assert_eq!(p.act(&obs).await, PolicyAction::Step(Action::Forward));
    p.perceived(Some(&sighting(32, 0.5)), Pose2::origin());
    // target near, but the planner did not say goal_flag: not the final STOP
    assert_eq!(p.act(&obs).await, PolicyAction::Done(PolicyStop::Arrived));
    let seek = PolicyGoal { goal_flag: true, ..explore };
    p.reset(&seek, Pose2::origin());
    assert_eq!(p.act(&obs).await, PolicyAction::Perceive);
    p.perceived(None, Pose2::origin());
    assert_eq!(p.act(&obs).await, PolicyAction::Step(Action::Forward));
    p.perceived(None, Pose2::origin());
    assert_eq!(p.act(&obs).await, PolicyAction::Done(PolicyStop::NotSeen));
}

#[tokio::test]
async fn a_bridge_run_with_both_workers_executes_the_policy_workers_actions() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let trace_arg = trace.to_string_lossy().into_owned();
    let detector =
        connect_worker(&module("navkit_bridge.colour_detector", &[]), "detector", "detect", worker_config(10.0))
            .await
            .unwrap();
    let policy = rule_policy(&["--trace", &trace_arg]).await;
    let mut hal = BridgeHal::spawn_command(
        &bridge_command("openroom", &["--max-steps", "120"]),
        BridgeConfig { depth: true, ..BridgeConfig::default() },
    )
    .await
    .unwrap();
    let cfg = BridgeRunConfig { episodes: 4, perception: Some(PerceptionChoice::External), ..Default::default() };
    let mut runner = BridgeRunner::new(cfg).unwrap().with_detector(detector).with_policy(
        "external",
        std::sync::Arc::new(move |s: &PolicySetup| -> Box<dyn LowLevelPolicy> {
            let cfg = ExternalPolicyConfig::for_task(s.step, s.corridor_half_width_m, s.success_distance_m);
            Box::new(ExternalPolicy::new(policy.clone(), cfg))
        }),
    );
    let mut log = StepLog::memory();
    let report = runner.run(&mut hal, &mut log, &mut |_| {}).await.unwrap();
    hal.close().await.unwrap();
    assert_eq!(report.aborted, None);
    assert_eq!(report.policy, "external");
    for e in &report.episodes {
        assert!(e.steps <= 120, "the episode budget applies: {e:?}");
    }
    let chosen: Vec<String> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["action"].as_str().unwrap().to_string())
        .collect();
    let records = log.records();
    let executed: Vec<&str> = records.iter().map(|r| r.action.as_str()).filter(|a| *a != "start").collect();
    let vetoed = records
        .iter()
        .flat_map(|r| &r.events)
        .filter(|e| e["event"] == "policy_stop" && e["reason"] == "blocked")
        .count();
    // every executed action is the worker's next choice; a choice not executed
    // is a forward navkit vetoed (blocked) or a stop that was not final
    let mut next = executed.iter().peekable();
    let (mut skipped_forwards, mut skipped_stops) = (0, 0);
    for c in &chosen {
        if next.peek().is_some_and(|e| **e == c.as_str()) {
            next.next();
        } else if c == "forward" {
            skipped_forwards += 1;
        } else {
            assert_eq!(c, "stop", "a chosen {c} was not executed");
            skipped_stops += 1;
        }
    }
    assert_eq!(next.next(), None, "an executed action the worker never chose");
    assert_eq!(skipped_forwards, vetoed, "only safety vetoes drop a chosen forward");
    let _ = skipped_stops;
    assert!(chosen.iter().any(|a| a == "forward") && chosen.iter().any(|a| a.starts_with("turn_")));
    assert!(report.episodes.iter().any(|e| e.success), "{:#?}", report.episodes);
}
