//! The explore loop handing navigation goals to the robot's own
//! navigation stack (`Actuators::start_goal`, Nav2 on a ROS robot): a fake
//! stack over the simulator drives to the goal while the loop publishes
//! nothing; its success is the tool's success, its abort a failure in the
//! tool result the planner hears; a robot without a stack (the default
//! `Unsupported`) keeps the loop's own path. Simulated pacing: fast and
//! deterministic (`nav rosmaster`'s end-to-end tests cover real time).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// nav-planner declares Rust 1.88; its tests keep the workspace's 1.85 idioms (no let chains)

use async_trait::async_trait;
use nav_core::geometry::{Point2, Pose2};
use nav_core::time::ManualClock;
use nav_hal::HalError;
use nav_hal::hal::{
    Actuators, CameraFrame, Capabilities, DepthFrame, MotionOutcome, NavGoalState, Odometry, Sensors, StampedScan,
    VelocityCommand,
};
use nav_hal::sim::{SimConfig, SimHal};
use nav_planner::navigator::explore_loop::{ExploreLoop, ExploreLoopConfig, ExploreSignals};
use nav_planner::navigator::{RunContext, StepLog};
use nav_planner::protocol::PlannerReply;
use nav_planner::protocol::explore::{ExploreDecision, ExplorePlanner, ExploreSnapshot};
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// What the fake navigation stack does with a goal.
#[derive(Clone, Copy, PartialEq)]
enum Stack {
    /// None: `start_goal` is `Unsupported`.
    Absent,
    /// Drives to every goal.
    Drives,
    /// Drives for `n` polls, then aborts.
    AbortsAfter(u32),
}

/// The simulator with a fake navigation stack: while a goal is open, every
/// `goal_state` poll drives the simulated robot one tick toward it.
struct Nav2Like {
    sim: SimHal,
    clock: Arc<ManualClock>,
    stack: Stack,
    goal: Option<Pose2>,
    polls: u32,
    /// Goals handed over.
    goals: Vec<Pose2>,
    /// Cancels received.
    cancels: u32,
    /// Every command the loop published: (linear, angular, a goal was open).
    commands: Vec<(f64, f64, bool)>,
}

impl Nav2Like {
    fn new(stack: Stack) -> Self {
        let sim = SimHal::builtin("exploration", SimConfig::default()).unwrap();
        let clock = sim.clock();
        Self { sim, clock, stack, goal: None, polls: 0, goals: Vec::new(), cancels: 0, commands: Vec::new() }
    }
}

#[async_trait]
impl Sensors for Nav2Like {
    fn capabilities(&self) -> Capabilities {
        Capabilities { pose_is_ground_truth: false, detections: false, ..self.sim.capabilities() }
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
}

#[async_trait]
impl Actuators for Nav2Like {
    async fn drive(&mut self, command: VelocityCommand) -> Result<MotionOutcome, HalError> {
        self.commands.push((command.linear, command.angular, self.goal.is_some()));
        self.sim.drive(command).await?;
        Ok(MotionOutcome { distance_m: 0.0, duration_s: 0.0, collided: false, stopped_early: false })
    }
    async fn stop(&mut self) -> Result<(), HalError> {
        self.sim.stop().await
    }
    async fn start_goal(&mut self, goal: Pose2) -> Result<(), HalError> {
        if self.stack == Stack::Absent {
            return Err(HalError::unsupported("a navigation stack"));
        }
        self.goal = Some(goal);
        self.polls = 0;
        self.goals.push(goal);
        Ok(())
    }
    async fn goal_state(&mut self) -> Result<NavGoalState, HalError> {
        let Some(goal) = self.goal else {
            return Err(HalError::invalid_command("goal_state", "no goal"));
        };
        self.polls += 1;
        if let Stack::AbortsAfter(n) = self.stack {
            if self.polls > n {
                self.goal = None;
                return Ok(NavGoalState::Failed { code: "aborted".into(), reason: "no path".into() });
            }
        }
        let pose = self.sim.odometry().await?.pose;
        if pose.position().distance(goal.position()) <= 0.15 {
            self.goal = None;
            return Ok(NavGoalState::Succeeded);
        }
        // the stack's controller: one tick toward the goal
        let bearing = pose.relative_bearing(Point2::new(goal.x, goal.y));
        let v = if bearing.abs() < 0.5 { 0.15 } else { 0.0 };
        let command = VelocityCommand { linear: v, angular: (2.0 * bearing).clamp(-1.0, 1.0), duration_s: 0.05 };
        self.sim.drive(command).await?;
        Ok(NavGoalState::Active)
    }
    async fn cancel_goal(&mut self) -> Result<(), HalError> {
        self.cancels += 1;
        self.goal = None;
        Ok(())
    }
}

/// Asks for the same point goal (0.8 m ahead of the start, in open space)
/// every time, keeping the previous result each snapshot carried.
struct GoalAhead {
    results: Arc<Mutex<Vec<Value>>>,
}

#[async_trait]
impl ExplorePlanner for GoalAhead {
    fn name(&self) -> String {
        "goal-ahead".into()
    }
    fn is_instant(&self) -> bool {
        true
    }
    async fn decide(&mut self, snap: &ExploreSnapshot) -> PlannerReply<ExploreDecision> {
        if let Some(r) = &snap.previous_result {
            self.results.lock().unwrap().push(serde_json::from_str(r).unwrap_or(Value::Null));
        }
        let args = serde_json::json!({"goal_type": "coordinates", "x": 0.0, "y": 0.8, "reason": "ahead"});
        let call = nav_safety::tools::ToolCall::parse("navigate_to_goal", &args).unwrap();
        PlannerReply::offline(ExploreDecision::action(call))
    }
}

/// Runs the loop for `max_time_s`; the previous results the planner heard.
async fn run(robot: &mut Nav2Like, max_time_s: f64) -> Vec<Value> {
    let results = Arc::new(Mutex::new(Vec::new()));
    let planner = Box::new(GoalAhead { results: Arc::clone(&results) });
    let config = ExploreLoopConfig { max_time_s, ..ExploreLoopConfig::default() };
    let mut lp = ExploreLoop::new(config, planner, ExploreSignals::default()).unwrap();
    let mut log = StepLog::memory();
    let clock = Arc::clone(&robot.clock);
    lp.run(robot, &mut RunContext::new(clock.as_ref(), &mut log)).await.unwrap();
    results.lock().unwrap().clone()
}

fn navigate_results(results: &[Value]) -> Vec<&Value> {
    results.iter().filter(|r| r["action"] == "navigate_to_goal" || r.get("stopped_reason").is_some()).collect()
}

#[tokio::test]
async fn the_stack_drives_and_its_success_is_the_tools_success() {
    let mut robot = Nav2Like::new(Stack::Drives);
    let results = run(&mut robot, 40.0).await;
    assert!(!robot.goals.is_empty(), "goals were handed over");
    let moving_while_open = robot.commands.iter().filter(|c| c.2 && (c.0 != 0.0 || c.1 != 0.0)).count();
    assert_eq!(moving_while_open, 0, "the loop published no motion while the stack drove");
    let moved = robot.sim.world().path_length_m();
    assert!((0.6..1.0).contains(&moved), "the stack drove the robot to the goal: {moved:.2} m");
    assert_eq!(robot.goals.len(), 1, "one goal handed over (the same place asked again is the same goal)");
    let successes = results.iter().filter(|r| r["success"] == true && r["actual_distance_m"].as_f64() > Some(0.3));
    assert!(successes.count() >= 1, "a reached goal is a success with its distance: {results:?}");
    assert_eq!(robot.sim.world().collisions(), 0);
}

#[tokio::test]
async fn an_abort_is_a_failure_in_the_tool_result() {
    let mut robot = Nav2Like::new(Stack::AbortsAfter(20));
    let results = run(&mut robot, 10.0).await;
    let aborted: Vec<&Value> = results.iter().filter(|r| r["stopped_reason"] == "nav2_aborted").collect();
    assert!(!aborted.is_empty(), "the planner hears the abort: {:?}", navigate_results(&results));
    assert!(aborted.iter().all(|r| r["success"] == false), "{aborted:?}");
}

#[tokio::test]
async fn without_a_stack_the_loop_drives_its_own_path() {
    let mut robot = Nav2Like::new(Stack::Absent);
    run(&mut robot, 20.0).await;
    assert!(robot.goals.is_empty());
    assert!(robot.commands.iter().any(|c| c.0 > 0.01), "the loop drove itself");
    assert_eq!(robot.cancels, 0);
}
