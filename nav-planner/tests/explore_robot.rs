//! The explore loop over a robot that behaves like a real one (the
//! simulator behind a wrapper): `drive` publishes and returns at once with
//! no motion report, the link can drop (`Disconnected`), and the base can be
//! car-like (Ackermann). Simulated pacing keeps these tests fast and
//! deterministic; `nav rosmaster`'s end-to-end tests cover real time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use async_trait::async_trait;
use nav_core::time::{Clock, ManualClock};
use nav_hal::HalError;
use nav_hal::hal::{
    Actuators, CameraFrame, Capabilities, DepthFrame, Detection, MotionOutcome, Odometry, Sensors, StampedScan,
    VelocityCommand,
};
use nav_hal::sim::{SimConfig, SimHal};
use nav_planner::navigator::explore_loop::{ExploreEnd, ExploreLoop, ExploreLoopConfig, ExploreSignals};
use nav_planner::navigator::{RunContext, StepLog, StepRecord};
use nav_planner::offline::OfflineExplorePlanner;
use nav_planner::protocol::PlannerReply;
use nav_planner::protocol::explore::{ExploreDecision, ExplorePlanner, ExploreSnapshot};
use nav_safety::WatchdogTier;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// The simulator as a real robot looks: one command per `drive`, no
/// motion report; optionally unreachable during `outage` (sim seconds).
struct RobotLike {
    sim: SimHal,
    clock: Arc<ManualClock>,
    outage: Option<(f64, f64)>,
    /// The LiDAR is blind (a sensor fault) during this window (sim seconds).
    blind: Option<(f64, f64)>,
    /// Every command the loop tried to publish: (time, linear, angular, link up).
    commands: Vec<(f64, f64, f64, bool)>,
    /// Calls of `stop`.
    stops: u32,
}

impl RobotLike {
    fn new(arena: &str, config: SimConfig) -> Self {
        let sim = SimHal::builtin(arena, config).unwrap();
        let clock = sim.clock();
        Self { sim, clock, outage: None, blind: None, commands: Vec::new(), stops: 0 }
    }

    fn down(&self) -> bool {
        let t = self.clock.now_s();
        self.outage.is_some_and(|(a, b)| t >= a && t < b)
    }

    fn check(&self) -> Result<(), HalError> {
        if self.down() {
            Err(HalError::Disconnected { endpoint: "ws://robot:9090".into(), reason: "link lost".into() })
        } else {
            Ok(())
        }
    }
}

#[async_trait]
impl Sensors for RobotLike {
    fn capabilities(&self) -> Capabilities {
        Capabilities { pose_is_ground_truth: false, detections: false, ..self.sim.capabilities() }
    }
    async fn odometry(&mut self) -> Result<Odometry, HalError> {
        self.check()?;
        self.sim.odometry().await
    }
    async fn scan(&mut self) -> Result<StampedScan, HalError> {
        self.check()?;
        let t = self.clock.now_s();
        if self.blind.is_some_and(|(a, b)| t >= a && t < b) {
            let message = "only 0 of 720 beams valid".to_string();
            return Err(HalError::SensorFault { what: "LiDAR /scan".into(), message });
        }
        self.sim.scan().await
    }
    async fn rgb(&mut self) -> Result<CameraFrame, HalError> {
        self.check()?;
        self.sim.rgb().await
    }
    async fn depth(&mut self) -> Result<DepthFrame, HalError> {
        self.check()?;
        self.sim.depth().await
    }
    async fn detections(&mut self) -> Result<Vec<Detection>, HalError> {
        Err(HalError::unsupported("detections"))
    }
}

#[async_trait]
impl Actuators for RobotLike {
    async fn drive(&mut self, command: VelocityCommand) -> Result<MotionOutcome, HalError> {
        let up = !self.down();
        self.commands.push((self.clock.now_s(), command.linear, command.angular, up));
        if !up {
            // time passes while the link is down; the robot stands still
            self.clock.advance(command.duration_s);
            return Err(HalError::Disconnected { endpoint: "ws://robot:9090".into(), reason: "link lost".into() });
        }
        self.sim.drive(command).await?;
        // a real robot's drive publishes one Twist and reports nothing
        Ok(MotionOutcome { distance_m: 0.0, duration_s: 0.0, collided: false, stopped_early: false })
    }
    async fn stop(&mut self) -> Result<(), HalError> {
        self.stops += 1;
        self.sim.stop().await
    }
}

/// The offline explorer, remembering the previous result each snapshot
/// carried (the feedback a VLM would read).
struct Recording {
    inner: OfflineExplorePlanner,
    results: Arc<Mutex<Vec<String>>>,
    /// Run inline (true) or on the loop's decision task like a VLM (false).
    instant: bool,
}

#[async_trait]
impl ExplorePlanner for Recording {
    fn name(&self) -> String {
        "recording".into()
    }
    fn is_instant(&self) -> bool {
        self.instant
    }
    async fn decide(&mut self, snap: &ExploreSnapshot) -> PlannerReply<ExploreDecision> {
        if let Some(r) = &snap.previous_result {
            self.results.lock().unwrap().push(r.clone());
        }
        self.inner.decide(snap).await
    }
}

async fn run(
    robot: &mut RobotLike,
    max_time_s: f64,
    results: Arc<Mutex<Vec<String>>>,
) -> (nav_planner::navigator::explore_loop::ExploreOutcome, Vec<StepRecord>) {
    run_with(robot, max_time_s, Recording { inner: OfflineExplorePlanner::new(), results, instant: true }).await
}

async fn run_with(
    robot: &mut RobotLike,
    max_time_s: f64,
    planner: Recording,
) -> (nav_planner::navigator::explore_loop::ExploreOutcome, Vec<StepRecord>) {
    let config = ExploreLoopConfig { max_time_s, ..ExploreLoopConfig::default() };
    let planner = Box::new(planner);
    let mut lp = ExploreLoop::new(config, planner, ExploreSignals::default()).unwrap();
    let mut log = StepLog::memory();
    let clock = Arc::clone(&robot.clock);
    let out = lp.run(robot, &mut RunContext::new(clock.as_ref(), &mut log)).await.unwrap();
    (out, log.records().to_vec())
}

fn events<'a>(records: &'a [StepRecord], name: &'a str) -> impl Iterator<Item = (&'a StepRecord, &'a Value)> + 'a {
    records.iter().flat_map(move |r| r.events.iter().filter(move |e| e["event"] == name).map(move |e| (r, e)))
}

#[tokio::test]
async fn feedback_distances_come_from_odometry_when_drive_reports_none() {
    let mut robot = RobotLike::new("exploration", SimConfig::default());
    let results = Arc::new(Mutex::new(Vec::new()));
    let (out, _) = run(&mut robot, 60.0, Arc::clone(&results)).await;
    assert_eq!(out.collisions, 0);
    let travelled = robot.sim.world().path_length_m();
    assert!(travelled > 1.0, "the robot explored: {travelled} m");
    let distances: Vec<f64> = results
        .lock()
        .unwrap()
        .iter()
        .filter_map(|r| serde_json::from_str::<Value>(r).ok())
        .filter_map(|v| v["actual_distance_m"].as_f64())
        .collect();
    assert!(!distances.is_empty(), "the planner heard about finished actions");
    // a call carries the latest finished action's result; with calls spaced out while a goal
    // progresses, not every action's result reaches a prompt, so the sum is below the path
    let reported: f64 = distances.iter().sum();
    assert!(distances.iter().any(|d| *d > 0.1), "feedback reports the motion odometry saw: {distances:?}");
    assert!(reported <= travelled * 1.2 + 0.1, "and not more: {reported} of {travelled} m");
}

#[tokio::test]
async fn a_lost_link_holds_the_robot_still_while_the_watchdog_tiers_run() {
    let mut robot = RobotLike::new("exploration", SimConfig::default());
    robot.outage = Some((5.0, 40.0));
    let (out, records) = run(&mut robot, 50.0, Arc::new(Mutex::new(Vec::new()))).await;
    // nothing that moves is published while the link is down
    let during: Vec<_> = robot.commands.iter().filter(|c| !c.3).collect();
    assert!(during.len() > 500, "the control loop kept ticking: {} ticks", during.len());
    assert!(during.iter().all(|c| c.1 == 0.0 && c.2 == 0.0), "only zero velocity while disconnected");
    // the watchdog went through every tier during the outage, in order
    let tiers: Vec<(f64, String)> =
        events(&records, "watchdog").map(|(r, e)| (r.t_s, e["tier"].as_str().unwrap_or("").to_string())).collect();
    let in_outage: Vec<&str> =
        tiers.iter().filter(|(t, _)| (5.0..40.5).contains(t)).map(|(_, tier)| tier.as_str()).collect();
    assert_eq!(in_outage[..3], ["STOP_WAIT", "LOCAL_NAV", "RETURN_HOME"], "tiers: {tiers:?}");
    let first = tiers.iter().find(|(_, t)| t == "STOP_WAIT").unwrap().0;
    assert!((7.9..8.3).contains(&first), "STOP_WAIT 3 s after the link dropped: {first}");
    assert_eq!(out.worst_tier, WatchdogTier::ReturnHome);
    assert!(events(&records, "sensor_error").count() > 500);
    // after the outage the loop decides again and drives
    let resumed = records.iter().any(|r| r.t_s > 40.0 && r.planner_called);
    assert!(resumed, "a decision after the link came back");
    assert!(robot.commands.iter().any(|c| c.0 > 40.0 && c.3 && c.1 != 0.0), "motion after the link came back");
    assert!(matches!(out.end, ExploreEnd::TimeLimit | ExploreEnd::Complete), "{:?}", out.end);
}

#[tokio::test]
async fn an_ackermann_robot_explores_on_arcs_without_turning_in_place() {
    let mut robot = RobotLike::new("exploration", SimConfig::default().ackermann(0.3));
    let (out, _) = run(&mut robot, 240.0, Arc::new(Mutex::new(Vec::new()))).await;
    let world = robot.sim.world();
    assert_eq!(world.collisions(), 0);
    assert!(world.coverage() > 0.6, "coverage {:.2}", world.coverage());
    for &(t, v, w, _) in &robot.commands {
        assert!(w.abs() <= v.abs() / 0.3 + 1e-6, "t={t:.2}: ({v:.3}, {w:.3}) is tighter than the 0.3 m radius");
    }
    assert!(robot.commands.iter().any(|c| c.1 > 0.0), "it drove");
    assert_eq!(out.collisions, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_counts_from_the_start_of_the_run_not_the_clock_epoch() {
    // a robot clock that has been running for a while (a monotonic clock started with the HAL)
    let mut robot = RobotLike::new("exploration", SimConfig::default());
    robot.clock.advance(1000.0);
    let planner = Recording { inner: OfflineExplorePlanner::new(), results: Arc::default(), instant: false };
    let (out, records) = run_with(&mut robot, 15.0, planner).await;
    let tiers: Vec<_> = events(&records, "watchdog").map(|(r, e)| (r.t_s, e["tier"].clone())).collect();
    assert!(tiers.is_empty(), "a planner that answers keeps the watchdog quiet: {tiers:?}");
    assert_eq!(out.worst_tier, WatchdogTier::Continue);
    assert!(out.stats.planner_calls >= 1);
}

/// Asks for the same point goal every time and records each result.
struct GoalEveryTime {
    goal: (f64, f64),
    results: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl ExplorePlanner for GoalEveryTime {
    fn name(&self) -> String {
        "goal-every-time".into()
    }
    fn is_instant(&self) -> bool {
        true
    }
    async fn decide(&mut self, snap: &ExploreSnapshot) -> PlannerReply<ExploreDecision> {
        if let Some(r) = &snap.previous_result {
            self.results.lock().unwrap().push(r.clone());
        }
        let args = serde_json::json!({
            "goal_type": "coordinates", "x": self.goal.0, "y": self.goal.1, "reason": "the room to the left",
        });
        let call = nav_safety::tools::ToolCall::parse("navigate_to_goal", &args).unwrap();
        PlannerReply::offline(ExploreDecision::action(call))
    }
}

/// A car-like robot (radius 0.18 m) in a slot 0.46 m wide — 5 cm to the
/// box on either side — with a wall 0.45 m ahead; open behind.
fn boxed_in_arena() -> nav_hal::arena::Arena {
    let text = r#"{
      "name": "boxed_in", "description": "boxed-in start",
      "bounds": [-3.0, -3.0, 3.0, 3.0],
      "walls": [[0.45, -0.6, 0.45, 0.6], [-0.3, 0.23, 0.45, 0.23], [-0.3, -0.23, 0.45, -0.23]],
      "obstacles": [], "objects": [], "rooms": [],
      "start": {"x": 0.0, "y": 0.0, "yaw_deg": 0.0}
    }"#;
    nav_hal::arena::Arena::from_json_str(text).unwrap()
}

#[tokio::test]
async fn a_boxed_in_car_backs_out_straight_and_hands_the_goal_back() {
    let world = nav_hal::sim::SimWorld::new(boxed_in_arena(), SimConfig::default().ackermann(0.3)).unwrap();
    let sim = SimHal::new(world);
    let clock = sim.clock();
    let mut robot = RobotLike { sim, clock, outage: None, blind: None, commands: Vec::new(), stops: 0 };
    let results = Arc::new(Mutex::new(Vec::new()));
    let planner = GoalEveryTime { goal: (0.0, 1.5), results: Arc::clone(&results) };
    let config = ExploreLoopConfig { max_time_s: 20.0, ..ExploreLoopConfig::default() };
    let mut lp = ExploreLoop::new(config, Box::new(planner), ExploreSignals::default()).unwrap();
    let mut log = StepLog::memory();
    let clock = Arc::clone(&robot.clock);
    let out = lp.run(&mut robot, &mut RunContext::new(clock.as_ref(), &mut log)).await.unwrap();
    let records = log.records().to_vec();
    // the reason is in the log, then the hand-back with the distance backed out
    let (_, why) = events(&records, "boxed_in").next().expect("a boxed_in event");
    assert!(why["reason"].as_str().unwrap().contains("backing out"), "{why}");
    let (_, back) = events(&records, "goal_boxed_in").next().expect("the goal handed back");
    let backed = back["backed_out_m"].as_f64().unwrap();
    assert!(backed >= 0.35, "backed out {backed} m: {back}");
    // the planner heard it as a failure naming the reason
    let results = results.lock().unwrap();
    let first: Value = serde_json::from_str(&results[0]).unwrap();
    assert_eq!(first["success"], false, "{first}");
    assert_eq!(first["stopped_reason"], "boxed_in", "{first}");
    // straight back (no steering into the boxes), and no collision
    let reversing: Vec<_> = robot.commands.iter().filter(|c| c.1 < 0.0).collect();
    assert!(!reversing.is_empty(), "it reversed");
    assert!(robot.sim.world().trajectory().iter().any(|p| p.x < -0.3), "left the slot backwards");
    assert_eq!(robot.sim.world().collisions(), 0);
    assert_eq!(out.collisions, 0);
}

#[tokio::test]
async fn a_pause_on_a_real_robot_sends_one_stop_burst_then_nothing_until_resume() {
    let mut robot = RobotLike::new("exploration", SimConfig::default());
    let signals = ExploreSignals::default();
    let config = ExploreLoopConfig { max_time_s: 20.0, ..ExploreLoopConfig::default() };
    let planner = Recording { inner: OfflineExplorePlanner::new(), results: Arc::default(), instant: true };
    let mut lp = ExploreLoop::new(config, Box::new(planner), signals.clone()).unwrap();
    // pause after step 100 (the robot is driving by then), resume after step 140
    let mut log = StepLog::memory().with_tap(move |r: &StepRecord| match r.step {
        100 => signals.pause.store(true, std::sync::atomic::Ordering::SeqCst),
        140 => signals.pause.store(false, std::sync::atomic::Ordering::SeqCst),
        _ => {}
    });
    let clock = Arc::clone(&robot.clock);
    lp.run(&mut robot, &mut RunContext::new(clock.as_ref(), &mut log)).await.unwrap();
    let records = log.records().to_vec();
    assert!(records[..=100].iter().any(|r| r.velocity.is_some_and(|v| v[0] != 0.0)), "it drove before the pause");
    assert!(records[101].events.iter().any(|e| e["event"] == "paused"));
    for r in &records[101..=140] {
        assert_eq!(r.velocity, None, "nothing is published while paused (step {})", r.step);
        assert!(!r.planner_called, "no decisions while paused (step {})", r.step);
    }
    assert!(records[141].events.iter().any(|e| e["event"] == "resumed"));
    assert!(records[141].velocity.is_some());
    // one stop burst for the pause, one at the end of the run; every other tick published once
    assert_eq!(robot.stops, 2);
    let published = records.iter().filter(|r| r.velocity.is_some()).count();
    assert_eq!(robot.commands.len(), published);
    assert!(records[141..].iter().any(|r| r.velocity.is_some_and(|v| v[0] != 0.0)), "it drives after resuming");
}

/// What a snapshot told the planner: (elapsed s, sensor fault, frontiers, context text).
type Told = (f64, Option<String>, usize, String);

/// Remembers what each snapshot told the planner about the LiDAR, then asks
/// the offline explorer.
struct BlindSpy {
    inner: OfflineExplorePlanner,
    seen: Arc<Mutex<Vec<Told>>>,
}

#[async_trait]
impl ExplorePlanner for BlindSpy {
    fn name(&self) -> String {
        "blind-spy".into()
    }
    fn is_instant(&self) -> bool {
        true
    }
    async fn decide(&mut self, snap: &ExploreSnapshot) -> PlannerReply<ExploreDecision> {
        let text = snap.context_text(&nav_core::lidar::LidarConfig::default());
        self.seen.lock().unwrap().push((snap.elapsed_s, snap.sensor_fault.clone(), snap.frontiers.len(), text));
        self.inner.decide(snap).await
    }
}

#[tokio::test]
async fn a_blind_lidar_holds_the_robot_and_the_planner_is_told_why_without_frontiers() {
    let mut robot = RobotLike::new("exploration", SimConfig::default());
    robot.blind = Some((5.0, 25.0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let planner = BlindSpy { inner: OfflineExplorePlanner::new(), seen: Arc::clone(&seen) };
    let config = ExploreLoopConfig { max_time_s: 35.0, ..ExploreLoopConfig::default() };
    let mut lp = ExploreLoop::new(config, Box::new(planner), ExploreSignals::default()).unwrap();
    let mut log = StepLog::memory();
    let clock = Arc::clone(&robot.clock);
    let out = lp.run(&mut robot, &mut RunContext::new(clock.as_ref(), &mut log)).await.unwrap();
    let records = log.records().to_vec();
    // motion held at zero while blind (from the first blind tick on)
    let blind: Vec<_> = robot.commands.iter().filter(|c| (5.0..25.0).contains(&c.0)).collect();
    assert!(blind.len() > 300, "{} ticks", blind.len());
    assert!(blind.iter().all(|c| c.1 == 0.0 && c.2 == 0.0), "only zero velocity while the LiDAR is blind");
    // the planner was told, with the reason and no frontiers, at most once per base period (5 s)
    let seen = seen.lock().unwrap();
    let told: Vec<_> = seen.iter().filter(|s| s.1.is_some()).collect();
    assert!(!told.is_empty(), "a decision came due while blind");
    println!(
        "blind 20 s: {} calls told the LiDAR is blind, at {:?}",
        told.len(),
        told.iter().map(|t| t.0).collect::<Vec<_>>()
    );
    assert!(told.len() <= 5, "{} blind calls in 20 s", told.len());
    for (t, fault, frontiers, text) in &told {
        assert!(fault.as_deref().unwrap().contains("sensor fault: only 0 of 720 beams valid"), "{fault:?}");
        assert_eq!(*frontiers, 0, "t = {t}");
        assert!(text.contains("LIDAR BLIND: LiDAR /scan: sensor fault"), "{text}");
        assert!(!text.contains("FRONTIERS"), "{text}");
    }
    for w in told.windows(2) {
        assert!(w[1].0 - w[0].0 >= 5.0 - 1e-6, "blind calls {:.2} s apart", w[1].0 - w[0].0);
    }
    let dropped = records.iter().flat_map(|r| &r.events).filter(|e| e["event"] == "decision_dropped").count();
    assert_eq!(dropped, told.len(), "every blind decision was dropped, none executed");
    // sight back: it explores again
    assert!(seen.iter().any(|s| s.0 > 25.0 && s.1.is_none() && s.2 > 0));
    assert!(robot.commands.iter().any(|c| c.0 > 25.0 && c.1 != 0.0));
    assert_eq!(out.collisions, 0);
}

/// Asks for the same call every time.
struct Always(nav_safety::ToolCall);

#[async_trait]
impl ExplorePlanner for Always {
    fn name(&self) -> String {
        "always".into()
    }
    fn is_instant(&self) -> bool {
        true
    }
    async fn decide(&mut self, _snap: &ExploreSnapshot) -> PlannerReply<ExploreDecision> {
        PlannerReply::offline(ExploreDecision::action(self.0.clone()))
    }
}

#[tokio::test]
async fn refusals_are_counted_and_the_model_is_not_asked_again_on_the_next_tick() {
    // facing a wall 0.45 m ahead, a model insisting on driving forward fast
    let world = nav_hal::sim::SimWorld::new(boxed_in_arena(), SimConfig::default()).unwrap();
    let sim = SimHal::new(world);
    let clock = sim.clock();
    let mut robot = RobotLike { sim, clock, outage: None, blind: None, commands: Vec::new(), stops: 0 };
    let args = serde_json::json!({"direction": "forward", "speed": "fast", "duration_s": 2.0});
    let planner = Always(nav_safety::ToolCall::parse("move_toward", &args).unwrap());
    let config = ExploreLoopConfig { max_time_s: 10.0, ..ExploreLoopConfig::default() };
    let mut lp = ExploreLoop::new(config, Box::new(planner), ExploreSignals::default()).unwrap();
    let mut log = StepLog::memory();
    let clock = Arc::clone(&robot.clock);
    let out = lp.run(&mut robot, &mut RunContext::new(clock.as_ref(), &mut log)).await.unwrap();
    let records = log.records().to_vec();
    let refusals: Vec<f64> =
        events(&records, "safety_override").filter(|(_, e)| e["tool"] == "move_toward").map(|(r, _)| r.t_s).collect();
    assert!(refusals.len() >= 3, "{refusals:?}");
    // the refusal cooldown (2 s): not 8 calls in 0.45 s
    for w in refusals.windows(2) {
        assert!(w[1] - w[0] >= 2.0 - 1e-6, "refusals {:.2} s apart: {refusals:?}", w[1] - w[0]);
    }
    println!(
        "refusals at {refusals:?}; {} calls in 10 s; {} safety overrides",
        out.stats.planner_calls, out.stats.safety_overrides
    );
    assert!(out.stats.planner_calls <= 6, "{} calls in 10 s", out.stats.planner_calls);
    // every refusal is a safety override in the summary
    assert!(out.stats.safety_overrides as usize >= refusals.len(), "{} overrides", out.stats.safety_overrides);
    assert!(robot.commands.iter().all(|c| c.1 <= 0.0), "it never drove into the wall");
}

#[tokio::test]
async fn the_decision_statistics_are_logged_every_60_s() {
    let mut robot = RobotLike::new("exploration", SimConfig::default());
    let config = ExploreLoopConfig { max_time_s: 125.0, stop_when_complete: false, ..ExploreLoopConfig::default() };
    let planner = Recording { inner: OfflineExplorePlanner::new(), results: Arc::default(), instant: true };
    let mut lp = ExploreLoop::new(config, Box::new(planner), ExploreSignals::default()).unwrap();
    let mut log = StepLog::memory();
    let clock = Arc::clone(&robot.clock);
    let out = lp.run(&mut robot, &mut RunContext::new(clock.as_ref(), &mut log)).await.unwrap();
    assert_eq!(out.end, ExploreEnd::TimeLimit);
    let records = log.records().to_vec();
    let lines: Vec<(f64, String)> =
        events(&records, "vlm_stats").map(|(r, e)| (r.t_s, e["line"].as_str().unwrap().to_string())).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!((lines[0].0 - 60.0).abs() < 0.2 && (lines[1].0 - lines[0].0 - 60.0).abs() < 0.1, "{lines:?}");
    for (_, line) in &lines {
        assert!(
            line.starts_with("VLM stats: ")
                && line.contains("calls/min")
                && line.contains("avg latency")
                && line.contains(", tier "),
            "{line}"
        );
    }
}
