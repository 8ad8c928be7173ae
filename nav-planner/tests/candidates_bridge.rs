//! The candidates loop's HAL bridge over a robot double (issue 18): a base
//! whose `move_to` never completes is stopped when the bridge's action
//! timeout expires, and the result the model reads next cycle is `timeout`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use async_trait::async_trait;
use nav_core::action::Action;
use nav_core::geometry::{Point2, Pose2};
use nav_core::grid::OccupancyGrid;
use nav_hal::HalError;
use nav_hal::hal::{
    Actuators, CameraFrame, Capabilities, DepthFrame, Detection, MotionOutcome, Odometry, Panorama, Sensors,
    StampedScan, StepOutcome, VelocityCommand,
};
use nav_hal::sim::{SimConfig, SimHal};
use nav_planner::navigator::candidates_loop::{CandidatesLoop, CandidatesLoopConfig, CandidatesTask};
use nav_planner::navigator::{RunContext, StepLog, StepRecord};
use nav_planner::protocol::candidates::{CandidateDecision, CandidateFrame, CandidatePlanner, frame_text};
use nav_planner::protocol::{CallRecord, PlannerReply};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// The simulator with a drive that accepts `move_to` and never reports it
/// done (a stalled base); every `stop` is counted.
struct StalledBase {
    sim: SimHal,
    move_tos: usize,
    stops: usize,
}

#[async_trait]
impl Sensors for StalledBase {
    fn capabilities(&self) -> Capabilities {
        self.sim.capabilities()
    }
    async fn odometry(&mut self) -> Result<Odometry, HalError> {
        self.sim.odometry().await
    }
    async fn scan(&mut self) -> Result<StampedScan, HalError> {
        self.sim.scan().await
    }
    async fn rgb(&mut self) -> Result<CameraFrame, HalError> {
        self.sim.rgb().await
    }
    async fn depth(&mut self) -> Result<DepthFrame, HalError> {
        self.sim.depth().await
    }
    async fn panorama(&mut self, views: usize) -> Result<Panorama, HalError> {
        self.sim.panorama(views).await
    }
    async fn detections(&mut self) -> Result<Vec<Detection>, HalError> {
        self.sim.detections().await
    }
    async fn detections_around(&mut self, views: usize) -> Result<Vec<Detection>, HalError> {
        self.sim.detections_around(views).await
    }
}

#[async_trait]
impl Actuators for StalledBase {
    async fn act(&mut self, action: Action) -> Result<StepOutcome, HalError> {
        self.sim.act(action).await
    }
    async fn drive(&mut self, command: VelocityCommand) -> Result<MotionOutcome, HalError> {
        self.sim.drive(command).await
    }
    async fn move_to(&mut self, _target: Point2) -> Result<MotionOutcome, HalError> {
        self.move_tos += 1;
        std::future::pending().await
    }
    async fn stop(&mut self) -> Result<(), HalError> {
        self.stops += 1;
        self.sim.stop().await
    }
}

/// A model that always moves to `c1` (falling back to STOP) and keeps
/// every prompt text it was shown.
struct MoveToFirst {
    prompts: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl CandidatePlanner for MoveToFirst {
    fn name(&self) -> String {
        "move-to-first".into()
    }
    async fn decide(&mut self, frame: &CandidateFrame<'_>) -> PlannerReply<CandidateDecision> {
        self.prompts.lock().unwrap().push(frame_text(frame));
        let reply = json!({"action": {"type": "MOVE_TO", "target_id": "c1"}, "fallback": {"if_failed": "STOP"},
                           "explanation": "the best candidate"});
        let (decision, _) = CandidateDecision::parse(&reply.to_string()).unwrap();
        PlannerReply { decision, distance_hint_m: None, record: CallRecord::default() }
    }
}

fn events<'a>(records: &'a [StepRecord], name: &'a str) -> impl Iterator<Item = (&'a StepRecord, &'a Value)> + 'a {
    records.iter().flat_map(move |r| r.events.iter().filter(move |e| e["event"] == name).map(move |e| (r, e)))
}

#[tokio::test(start_paused = true)]
async fn a_motion_that_never_completes_is_stopped_and_reported_as_timeout() {
    let sim = SimHal::builtin("simple", SimConfig::default()).unwrap();
    let clock = sim.clock();
    let mut robot = StalledBase { sim, move_tos: 0, stops: 0 };
    let start: Pose2 = robot.sim.world().ground_truth_pose();
    let config = CandidatesLoopConfig { max_cycles: 3, ..CandidatesLoopConfig::default() };
    let timeout_s = config.bridge.action_timeout_s;
    let grid = OccupancyGrid::covering(-2.5, -2.5, 2.5, 2.5, config.resolution_m).unwrap();
    let task = CandidatesTask { goal: Some(Point2::new(1.5, 1.5)), goal_text: "Reach the goal".into(), grid };
    let prompts = Arc::new(Mutex::new(Vec::new()));
    let planner = Box::new(MoveToFirst { prompts: Arc::clone(&prompts) });
    let mut lp = CandidatesLoop::new(config, planner, task).unwrap();
    let mut log = StepLog::memory();
    let t0 = tokio::time::Instant::now();
    let out = lp.run(&mut robot, &mut RunContext::new(clock.as_ref(), &mut log)).await.unwrap();
    let records = log.records().to_vec();

    // every cycle's move was cut off at the timeout and the robot was stopped each time
    assert_eq!(out.stats.steps, 3, "the run went on after the timeouts");
    assert!(robot.move_tos >= 3, "{} move_to commands", robot.move_tos);
    assert!(robot.stops >= robot.move_tos, "{} stops for {} stalled moves", robot.stops, robot.move_tos);
    let waited = t0.elapsed().as_secs_f64();
    assert!(waited >= 3.0 * timeout_s && waited < 3.0 * timeout_s + 5.0, "waited {waited} s");
    for r in &records[1..] {
        assert_eq!(r.info["result"], "timeout", "cycle {}: {:?}", r.step, r.info);
    }
    // the robot did not move, and the model read `timeout` the next cycle
    let end = robot.sim.world().ground_truth_pose();
    assert!(end.position().distance(start.position()) < 1e-9);
    let prompts = prompts.lock().unwrap();
    assert_eq!(prompts.len(), 3);
    for p in &prompts[1..] {
        assert!(p.contains("LAST ACTION: MOVE_TO c1 -> timeout"), "{p}");
        assert!(p.contains(&format!("the move did not finish within {timeout_s:.1} s; stopped")), "{p}");
    }
    assert!(events(&records, "fallback").next().is_none(), "a timeout is not a model fallback");
}
