//! The candidates loop (seed 002 "Pipeline Overview", 13 steps per cycle):
//! goal check → stuck detection → candidates → world-model serialization
//! (+ optional map image) → inference with a timeout (timeout → STOP
//! fallback, confidence −0.3) → parse → guarded corrections → predictive
//! pass → A* → cycle result → HAL execution (the path's second waypoint;
//! 90° rotation on a ROTATE_TO fallback) → result fed back.
//!
//! [`CandidatesLoop::new`] validates the configuration;
//! [`CandidatesLoop::run`] drives one run over a robot.

use super::log::{PlannerRecord, StepRecord};
use super::{EpisodeStats, NavError, RunContext};
use crate::protocol::candidates::{
    ActionType, CandidateDecision, CandidateFrame, CandidatePlanner, FallbackType, HistoryEntry, LastAction, NavMode,
};
use crate::protocol::{CallRecord, PlannerReply};
use nav_core::astar::{CostMap, CostMapConfig, GridPlanner, PathResult, PlannerConfig};
use nav_core::candidates::{Candidate, CandidateConfig, CandidateInput, generate_candidates};
use nav_core::geometry::{Point2, Pose2, normalize_angle};
use nav_core::grid::{CellState, CorrectionGuard, OccupancyGrid, ScanIntegration};
use nav_core::predict::PredictiveModel;
use nav_core::stuck::{StuckConfig, StuckDetector};
use nav_core::time::Clock;
use nav_hal::arena::Arena;
use nav_hal::hal::{Robot, VelocityCommand};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Where the world model comes from (seed 002 "Two Modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorldModelMode {
    /// The arena rasterized once; unknown cells cost 5.
    GroundTruth,
    /// Built from LiDAR each cycle; unknown cells cost 50.
    Vision,
}

/// Settings of the candidates loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CandidatesLoopConfig {
    /// Cycle budget (the arena's criteria).
    /// Range: 1..=1000000.
    pub max_cycles: u32,
    /// World-model mode.
    pub world_model: WorldModelMode,
    /// Grid cell size, metres (0.1).
    /// Range: [0.01, 10].
    pub resolution_m: f64,
    /// Inference timeout, seconds (5).
    /// Range: (0, 3600].
    pub inference_timeout_s: f64,
    /// Goal tolerance, metres (0.3).
    /// Range: (0, 10].
    pub goal_tolerance_m: f64,
    /// Candidate weights and limits.
    pub candidates: CandidateConfig,
    /// Stuck detection (5 cm, 5 cycles).
    pub stuck: StuckConfig,
    /// Guards on model corrections (0.6 / 0.7).
    pub corrections: CorrectionGuard,
    /// Run the predictive model (vision mode).
    pub predictive: bool,
    /// Send a rendered map image with each request.
    pub map_image: bool,
    /// A* settings.
    pub planner: PlannerConfig,
    /// Hard inflation around obstacles for planning, metres (robot radius + margin).
    /// Range: [0, 10].
    pub inflation_m: f64,
    /// How LiDAR updates the vision-mode grid.
    pub integration: ScanIntegration,
    /// In exploration mode, stop once this coverage of the grid is known.
    /// Range: [0, 1].
    pub explore_until_known: f64,
}

impl Default for CandidatesLoopConfig {
    fn default() -> Self {
        Self {
            max_cycles: 100,
            world_model: WorldModelMode::Vision,
            resolution_m: 0.1,
            inference_timeout_s: 5.0,
            goal_tolerance_m: 0.3,
            candidates: CandidateConfig::default(),
            stuck: StuckConfig::default(),
            corrections: CorrectionGuard::default(),
            predictive: true,
            map_image: true,
            planner: PlannerConfig::default(),
            inflation_m: 0.33,
            integration: ScanIntegration { max_free_range_m: 6.0, ..ScanIntegration::default() },
            explore_until_known: 0.98,
        }
    }
}

/// How a candidates run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CandidatesEnd {
    /// Within tolerance of the goal.
    GoalReached,
    /// The planner chose STOP (or exploration is complete).
    Stopped,
    /// The cycle budget ran out.
    CycleLimit,
}

impl CandidatesEnd {
    /// The snake_case name the run summary and the step log use.
    pub fn as_str(self) -> &'static str {
        match self {
            CandidatesEnd::GoalReached => "goal_reached",
            CandidatesEnd::Stopped => "stopped",
            CandidatesEnd::CycleLimit => "cycle_limit",
        }
    }
}

/// The result of a candidates run.
#[derive(Debug)]
pub struct CandidatesOutcome {
    /// How it ended.
    pub end: CandidatesEnd,
    /// Counters.
    pub stats: EpisodeStats,
    /// Final decision confidence (1.0 − 0.3 per inference timeout).
    pub confidence: f64,
    /// Predictions verified / wrong.
    pub predictions: (u32, u32),
    /// Final stuck counter.
    pub stuck_counter: u32,
    /// The final world model.
    pub grid: OccupancyGrid,
}

/// Rasterizes an arena into a ground-truth grid: walls (and the bounds)
/// as walls, obstacles and objects as obstacles, everything else free.
pub fn rasterize_arena(arena: &Arena, resolution: f64) -> Result<OccupancyGrid, nav_core::CoreError> {
    let [xmin, ymin, xmax, ymax] = arena.bounds;
    let mut g = OccupancyGrid::covering(xmin, ymin, xmax, ymax, resolution)?;
    let segs = arena.all_segments();
    let circles = arena.all_circles();
    let half = resolution * 0.5;
    for i in 0..g.width() * g.height() {
        let p = g.pos_of(i);
        let c = g.grid_to_world(p);
        let on_wall = segs.iter().any(|(s, _)| s.distance_to_point(c) <= half + 1e-9);
        let in_obstacle = circles.iter().any(|(center, r, _)| center.distance(c) <= r + half * 0.5);
        let st = if on_wall {
            CellState::Wall
        } else if in_obstacle {
            CellState::Obstacle
        } else {
            CellState::Free
        };
        g.set(p, st, 1.0);
    }
    Ok(g)
}

fn target_of(d: &CandidateDecision, cands: &[Candidate]) -> Option<Point2> {
    if let Some(id) = &d.action.target_id {
        if let Some(c) = cands.iter().find(|c| &c.id == id) {
            return Some(c.position);
        }
    }
    d.action.target_m.map(|[x, y]| Point2::new(x, y))
}

/// What one candidates run is for: the goal (none in exploration mode),
/// its text for the prompt, and the initial world model (the rasterized
/// arena in ground-truth mode, an unknown grid over the arena bounds in
/// vision mode).
#[derive(Debug, Clone)]
pub struct CandidatesTask {
    /// The point goal, if any.
    pub goal: Option<Point2>,
    /// The goal as the prompt states it.
    pub goal_text: String,
    /// The initial world model.
    pub grid: OccupancyGrid,
}

/// The seed-002 candidates loop over a robot (see the module docs).
pub struct CandidatesLoop {
    config: CandidatesLoopConfig,
    planner: Box<dyn CandidatePlanner>,
    task: CandidatesTask,
}

/// How a cycle's action went (the `result` the model reads next cycle).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionResult {
    /// The robot stopped (a STOP decision).
    Stopped,
    /// The robot turned in place.
    Rotated,
    /// The robot reached the target.
    Arrived,
    /// The robot moved toward the target.
    Moved,
    /// The robot touched something.
    Collision,
    /// No path: the decision's fallback ran instead.
    Blocked,
}

impl ActionResult {
    /// The lowercase name the prompt and the step log use.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionResult::Stopped => "stopped",
            ActionResult::Rotated => "rotated",
            ActionResult::Arrived => "arrived",
            ActionResult::Moved => "moved",
            ActionResult::Collision => "collision",
            ActionResult::Blocked => "blocked",
        }
    }
}

/// One executed action: its result, the details the model reads, metres
/// moved, and whether the run ends.
#[derive(Debug, Clone, PartialEq)]
struct Execution {
    result: ActionResult,
    details: String,
    moved_m: f64,
    ends_run: bool,
}

impl Execution {
    fn new(result: ActionResult, details: impl Into<String>, moved_m: f64) -> Self {
        Self { result, details: details.into(), moved_m, ends_run: false }
    }
}

/// The per-run state the cycles share.
struct RunState {
    stats: EpisodeStats,
    stuck: StuckDetector,
    predictive: PredictiveModel,
    astar: GridPlanner,
    confidence: f64,
    history: Vec<HistoryEntry>,
    last_action: Option<LastAction>,
    cost_cfg: CostMapConfig,
    grid: OccupancyGrid,
    t0: f64,
}

/// What one cycle saw before the model was asked.
struct CycleView {
    cycle: u32,
    pose: Pose2,
    stuck: bool,
    cands: Vec<Candidate>,
    events: Vec<Value>,
}

/// How a cycle ended, for its step-log line.
struct CycleDone<'a> {
    reply: &'a PlannerReply<CandidateDecision>,
    exec: &'a Execution,
    action_text: &'a str,
    after: Pose2,
}

/// What path following needs besides the robot: the cost map, the planner,
/// the clock (planning budget) and the cycle's event list.
struct Motion<'a> {
    costs: &'a CostMap,
    astar: &'a mut GridPlanner,
    clock: &'a dyn Clock,
    events: &'a mut Vec<Value>,
}

impl CandidatesLoop {
    /// A loop for `task` deciding with `planner`.
    ///
    /// # Errors
    /// [`NavError::InvalidConfig`] naming the key when the configuration is
    /// out of range.
    pub fn new(
        config: CandidatesLoopConfig,
        planner: Box<dyn CandidatePlanner>,
        task: CandidatesTask,
    ) -> Result<Self, NavError> {
        config.validate().map_err(|e| e.under("candidates"))?;
        Ok(Self { config, planner, task })
    }

    /// The configuration the loop runs with.
    pub fn config(&self) -> &CandidatesLoopConfig {
        &self.config
    }

    /// Runs cycles until the goal is reached, the model stops, or the cycle
    /// budget runs out.
    ///
    /// # Errors
    /// A robot or step-log failure.
    pub async fn run<R: Robot + ?Sized>(
        &mut self,
        robot: &mut R,
        ctx: &mut RunContext<'_, R>,
    ) -> Result<CandidatesOutcome, NavError> {
        let mut st = self.begin(robot, ctx).await?;
        let mut cycle: u32 = 0;
        let end = loop {
            if cycle >= self.config.max_cycles {
                break CandidatesEnd::CycleLimit;
            }
            cycle += 1;
            if let Some(end) = self.cycle(robot, ctx, &mut st, cycle).await? {
                break end;
            }
        };
        Ok(CandidatesOutcome {
            end,
            stats: st.stats,
            confidence: st.confidence,
            predictions: (st.predictive.verified_count, st.predictive.wrong_count),
            stuck_counter: st.stuck.counter(),
            grid: st.grid,
        })
    }

    async fn begin<R: Robot + ?Sized>(&self, robot: &mut R, ctx: &mut RunContext<'_, R>) -> Result<RunState, NavError> {
        let config = &self.config;
        let cost_cfg = CostMapConfig {
            robot_radius_m: config.inflation_m,
            ..match config.world_model {
                WorldModelMode::GroundTruth => CostMapConfig::ground_truth(),
                WorldModelMode::Vision => CostMapConfig::vision(),
            }
        };
        let mut start = StepRecord {
            action: "start".into(),
            pose: robot.odometry().await.map(|o| o.pose).unwrap_or_default().into(),
            gt_pose: ctx.observer.gt_pose(robot).map(Into::into),
            ..StepRecord::default()
        };
        start.info = ctx.observer.info.clone();
        start.info.insert("goal".into(), json!(self.task.goal.map(|g| [g.x, g.y])));
        start.info.insert("world_model".into(), json!(config.world_model));
        ctx.log.write(&start)?;
        Ok(RunState {
            stats: EpisodeStats::default(),
            stuck: StuckDetector::new(config.stuck),
            predictive: PredictiveModel::default(),
            astar: GridPlanner::new(config.planner.clone()),
            confidence: 1.0,
            history: Vec::new(),
            last_action: None,
            cost_cfg,
            grid: self.task.grid.clone(),
            t0: ctx.clock.now_s(),
        })
    }

    /// One 13-step cycle; `Some(end)` when the run ends.
    async fn cycle<R: Robot + ?Sized>(
        &mut self,
        robot: &mut R,
        ctx: &mut RunContext<'_, R>,
        st: &mut RunState,
        cycle: u32,
    ) -> Result<Option<CandidatesEnd>, NavError> {
        let cycle_start = Instant::now();
        let Some(mut view) = self.sense(robot, ctx, st, cycle).await? else {
            return Ok(Some(CandidatesEnd::GoalReached));
        };
        let reply = self.infer(robot, st, &mut view).await;
        st.stats.add_call(&reply.record);
        let d = &reply.decision;
        self.update_world_model(st, d, &mut view.events);
        // 11–13. plan and execute
        let costs = CostMap::from_grid(&st.grid, &st.cost_cfg);
        let action_text = match &d.action.target_id {
            Some(id) => format!("{} {id}", action_label(d.action.kind)),
            None => action_label(d.action.kind).to_string(),
        };
        let mut motion = Motion { costs: &costs, astar: &mut st.astar, clock: ctx.clock, events: &mut view.events };
        let exec = execute(robot, d, &view.cands, view.pose, &mut motion).await?;
        self.mark_contacts(st, &view.events);
        let after = robot.odometry().await.map(|o| o.pose).unwrap_or(view.pose);
        self.log_cycle(
            robot,
            ctx,
            st,
            view,
            CycleDone { reply: &reply, exec: &exec, action_text: &action_text, after },
        )?;
        st.stats.steps = cycle;
        st.stats.record_overhead(cycle_start.elapsed().as_secs_f64() * 1000.0 - reply.record.latency_ms);
        ctx.observer.step(robot, u64::from(cycle));
        st.history.insert(0, HistoryEntry { cycle, action: action_text.clone(), result: exec.result.as_str().into() });
        st.history.truncate(5);
        st.last_action =
            Some(LastAction { action: action_text, result: exec.result.as_str().to_string(), details: exec.details });
        // a STOP the model chose ends the run; the STOP fallback for a failed or invalid inference only
        // holds the robot for this cycle (the cycle budget still bounds a model that keeps failing)
        if exec.ends_run && reply.record.fallback.is_none() {
            let reached = self.task.goal.is_some_and(|g| after.position().distance(g) <= self.config.goal_tolerance_m);
            return Ok(Some(if reached { CandidatesEnd::GoalReached } else { CandidatesEnd::Stopped }));
        }
        Ok(None)
    }

    /// Steps 1–3: sense, integrate, goal check (`None`: goal reached and
    /// logged), stuck detection, prediction check and candidates.
    async fn sense<R: Robot + ?Sized>(
        &self,
        robot: &mut R,
        ctx: &mut RunContext<'_, R>,
        st: &mut RunState,
        cycle: u32,
    ) -> Result<Option<CycleView>, NavError> {
        let config = &self.config;
        let goal = self.task.goal;
        let caps = robot.capabilities();
        let pose = robot.odometry().await?.pose;
        let scan = if caps.lidar { Some(robot.scan().await?.scan) } else { None };
        if config.world_model == WorldModelMode::Vision {
            if let Some(s) = &scan {
                st.grid.integrate_scan(pose, s, &config.integration);
            }
        }
        st.grid.mark_visited(pose.position());
        // 1. goal check
        if goal.is_some_and(|g| pose.position().distance(g) <= config.goal_tolerance_m) {
            robot.stop().await.ok();
            ctx.log.write(&StepRecord {
                step: u64::from(cycle),
                t_s: ctx.clock.now_s() - st.t0,
                action: "STOP".into(),
                pose: pose.into(),
                gt_pose: ctx.observer.gt_pose(robot).map(Into::into),
                events: vec![json!({"event": "goal_reached"})],
                ..StepRecord::default()
            })?;
            st.stats.steps = cycle;
            return Ok(None);
        }
        // 2. stuck detection
        let stuck = st.stuck.update(pose.position());
        // 10a. verify earlier predictions against what the sensors now show
        if config.predictive && config.world_model == WorldModelMode::Vision {
            st.predictive.verify(&st.grid);
        }
        // 3. candidates
        let cands = generate_candidates(
            &CandidateInput { grid: &st.grid, clearance: None, robot: pose, goal, stuck, waypoints: &[] },
            &config.candidates,
        );
        let mut events = Vec::new();
        if goal.is_none()
            && (cands.iter().all(|c| c.kind != nav_core::candidates::CandidateKind::Frontier))
            && st.grid.known_fraction() >= config.explore_until_known
        {
            events.push(json!({"event": "exploration_complete"}));
        }
        Ok(Some(CycleView { cycle, pose, stuck, cands, events }))
    }

    /// Steps 4–8: the frame, inference with the timeout (timeout → STOP
    /// fallback, confidence −0.3), the parsed decision.
    async fn infer<R: Robot + ?Sized>(
        &mut self,
        robot: &mut R,
        st: &mut RunState,
        view: &mut CycleView,
    ) -> PlannerReply<CandidateDecision> {
        let config = &self.config;
        let caps = robot.capabilities();
        let stuck = view.stuck;
        let mode = if stuck {
            NavMode::Recovering
        } else if self.task.goal.is_some() {
            NavMode::Navigating
        } else {
            NavMode::Exploring
        };
        let camera = if caps.rgb && config.map_image { robot.rgb().await.ok().map(|c| c.frame) } else { None };
        let objects: Vec<String> = Vec::new();
        let frame = CandidateFrame {
            cycle: view.cycle,
            goal_text: &self.task.goal_text,
            goal: self.task.goal,
            goal_tolerance_m: config.goal_tolerance_m,
            pose: view.pose,
            mode,
            stuck_cycles: stuck.then_some(st.stuck.counter()),
            last_action: st.last_action.as_ref(),
            grid: &st.grid,
            candidates: &view.cands,
            objects: &objects,
            history: &st.history,
            camera: camera.as_ref(),
            map_image: config.map_image,
        };
        let timeout = Duration::from_secs_f64(config.inference_timeout_s);
        let reply = match tokio::time::timeout(timeout, self.planner.decide(&frame)).await {
            Ok(r) => r,
            Err(_) => {
                st.confidence -= 0.3;
                let reason = format!("inference timed out after {:.1} s", timeout.as_secs_f64());
                view.events.push(json!({"event": "fallback", "reason": reason}));
                tracing::warn!(%reason, "candidates: STOP fallback");
                let record = CallRecord {
                    fallback: Some(reason.clone()),
                    errors: vec![reason.clone()],
                    ..CallRecord::default()
                };
                PlannerReply { decision: CandidateDecision::fallback(&reason), distance_hint_m: None, record }
            }
        };
        if let Some(r) = &reply.record.fallback {
            if !view.events.iter().any(|e| e["event"] == "fallback") {
                view.events.push(json!({"event": "fallback", "reason": r}));
            }
        }
        reply
    }

    /// Steps 9–10: guarded corrections and the predictive pass.
    fn update_world_model(&self, st: &mut RunState, d: &CandidateDecision, events: &mut Vec<Value>) {
        if let Some(w) = &d.world_model_update {
            let rep = st.grid.apply_corrections(&w.corrections, &self.config.corrections);
            events.push(json!({"event": "corrections", "report": rep}));
        }
        if self.config.predictive && self.config.world_model == WorldModelMode::Vision {
            let rep = st.predictive.predict(&mut st.grid);
            if rep.total() > 0 {
                events.push(json!({"event": "predictions", "new": rep.total(),
                    "verified": st.predictive.verified_count, "wrong": st.predictive.wrong_count}));
            }
        }
    }

    /// Seed 002: a contact point becomes an obstacle for future planning.
    fn mark_contacts(&self, st: &mut RunState, events: &[Value]) {
        if self.config.world_model != WorldModelMode::Vision {
            return;
        }
        for e in events {
            if let Some([x, y]) = e.get("contact").and_then(|c| serde_json::from_value::<[f64; 2]>(c.clone()).ok()) {
                if let Some(g) = st.grid.world_to_grid(Point2::new(x, y)) {
                    st.grid.set(g, CellState::Obstacle, 0.95);
                }
            }
        }
    }

    fn log_cycle<R: Robot + ?Sized>(
        &self,
        robot: &R,
        ctx: &mut RunContext<'_, R>,
        st: &RunState,
        view: CycleView,
        done: CycleDone<'_>,
    ) -> Result<(), NavError> {
        let CycleDone { reply, exec, action_text, after } = done;
        let planner_rec = PlannerRecord {
            raw: reply.record.raw.clone(),
            parsed: serde_json::to_value(&reply.decision).unwrap_or(Value::Null),
            fallback: reply.record.fallback.clone(),
            vlm_calls: reply.record.vlm_calls,
            prompt_tokens: reply.record.usage.prompt_tokens,
            completion_tokens: reply.record.usage.completion_tokens,
            latency_ms: reply.record.latency_ms,
        };
        let mut info = serde_json::Map::new();
        info.insert("candidates".into(), json!(view.cands.iter().map(|c| c.to_prompt_line()).collect::<Vec<_>>()));
        info.insert("confidence".into(), json!(st.confidence));
        info.insert("result".into(), json!(exec.result.as_str()));
        ctx.log.write(&StepRecord {
            step: u64::from(view.cycle),
            t_s: ctx.clock.now_s() - st.t0,
            action: action_text.to_string(),
            pose: after.into(),
            gt_pose: ctx.observer.gt_pose(robot).map(Into::into),
            planner_called: true,
            planner: Some(planner_rec),
            events: view.events,
            collided: exec.result == ActionResult::Collision,
            info,
            ..StepRecord::default()
        })?;
        Ok(())
    }
}

fn action_label(kind: ActionType) -> &'static str {
    match kind {
        ActionType::MoveTo => "MOVE_TO",
        ActionType::Explore => "EXPLORE",
        ActionType::RotateTo => "ROTATE_TO",
        ActionType::FollowWall => "FOLLOW_WALL",
        ActionType::Stop => "STOP",
    }
}

/// Steps 11–13: A* to the decision's target, then move to the path's second
/// waypoint; on a planning failure the decision's fallback runs (ROTATE_TO
/// turns 90°, EXPLORE tries the fallback candidate, STOP stops).
async fn execute<R: Robot + ?Sized>(
    robot: &mut R,
    d: &CandidateDecision,
    cands: &[Candidate],
    pose: Pose2,
    motion: &mut Motion<'_>,
) -> Result<Execution, NavError> {
    match d.action.kind {
        ActionType::Stop => {
            robot.stop().await.ok();
            return Ok(Execution { ends_run: true, ..Execution::new(ActionResult::Stopped, "", 0.0) });
        }
        ActionType::RotateTo => {
            let yaw = d.action.yaw_deg.unwrap_or(pose.yaw.to_degrees() + 90.0).to_radians();
            let moved = rotate(robot, normalize_angle(yaw - pose.yaw)).await?;
            let details = format!("now facing {:.0} degrees", yaw.to_degrees());
            return Ok(Execution::new(ActionResult::Rotated, details, moved));
        }
        ActionType::FollowWall => {
            // follow the nearest wall: go along it using the best frontier or subgoal candidate
            if let Some(c) = cands.first() {
                return follow_path(robot, pose, c.position, motion).await;
            }
            let moved = rotate(robot, std::f64::consts::FRAC_PI_2).await?;
            return Ok(Execution::new(ActionResult::Rotated, "no wall candidate; turned 90 degrees", moved));
        }
        ActionType::MoveTo | ActionType::Explore => {}
    }
    let Some(target) = target_of(d, cands) else {
        motion.events.push(json!({"event": "fallback", "reason": "unknown target"}));
        return run_fallback(robot, d, cands, pose, motion).await;
    };
    let r = follow_path(robot, pose, target, motion).await?;
    if r.result == ActionResult::Blocked {
        return run_fallback(robot, d, cands, pose, motion).await;
    }
    Ok(r)
}

async fn run_fallback<R: Robot + ?Sized>(
    robot: &mut R,
    d: &CandidateDecision,
    cands: &[Candidate],
    pose: Pose2,
    motion: &mut Motion<'_>,
) -> Result<Execution, NavError> {
    let blocked = |details: String, moved: f64| Ok(Execution::new(ActionResult::Blocked, details, moved));
    match d.fallback.if_failed {
        FallbackType::Stop => {
            robot.stop().await.ok();
            blocked("path planning failed; fallback STOP".into(), 0.0)
        }
        FallbackType::RotateTo => {
            let moved = rotate(robot, std::f64::consts::FRAC_PI_2).await?;
            blocked("path planning failed; fallback rotated 90 degrees".into(), moved)
        }
        FallbackType::Explore => {
            let t = d
                .fallback
                .target_id
                .as_ref()
                .and_then(|id| cands.iter().find(|c| &c.id == id))
                .or_else(|| cands.iter().find(|c| c.kind == nav_core::candidates::CandidateKind::Frontier))
                .map(|c| c.position);
            match t {
                Some(t) => {
                    let r = follow_path(robot, pose, t, motion).await?;
                    blocked(format!("fallback EXPLORE: {}", r.details), r.moved_m)
                }
                None => {
                    let moved = rotate(robot, std::f64::consts::FRAC_PI_2).await?;
                    blocked("no fallback target; rotated 90 degrees".into(), moved)
                }
            }
        }
    }
}

async fn rotate<R: Robot + ?Sized>(robot: &mut R, angle: f64) -> Result<f64, NavError> {
    let caps = robot.capabilities();
    if caps.discrete_actions {
        let step = caps.step.map_or(30f64.to_radians(), |s| s.turn_rad());
        let n = (angle.abs() / step).round() as u32;
        let a = if angle > 0.0 { nav_core::action::Action::TurnLeft } else { nav_core::action::Action::TurnRight };
        for _ in 0..n {
            robot.act(a).await?;
        }
        Ok(0.0)
    } else {
        let w = 0.6f64.copysign(angle);
        let out = robot.drive(VelocityCommand { linear: 0.0, angular: w, duration_s: angle.abs() / 0.6 }).await?;
        Ok(out.distance_m)
    }
}

async fn follow_path<R: Robot + ?Sized>(
    robot: &mut R,
    pose: Pose2,
    target: Point2,
    motion: &mut Motion<'_>,
) -> Result<Execution, NavError> {
    let costs = motion.costs;
    // start from the robot's cell, or the nearest passable cell when the robot stands in the
    // inflated zone (after brushing past something)
    let here = costs.world_to_grid(pose.position());
    let start = if costs.cost(here).is_finite() { here } else { nearest_passable(costs, here, 4).unwrap_or(here) };
    let goal = costs.world_to_grid(target);
    let path: PathResult = motion.astar.plan(costs, start, goal, motion.clock);
    if !path.success {
        let why = path.error.map(|e| e.to_string()).unwrap_or_default();
        tracing::debug!(%why, "Path planning failed");
        motion.events.push(json!({"event": "path_failed", "reason": why}));
        return Ok(Execution::new(ActionResult::Blocked, format!("Path planning failed: {why}"), 0.0));
    }
    // The seed drives to the path's second waypoint (one waypoint spacing ahead). We take the
    // farthest path point within that spacing that the robot can reach in a straight line, so a
    // shortcut never cuts an obstacle's corner.
    let spacing = costs.resolution() * motion.astar.config().waypoint_spacing.max(1) as f64;
    let wp = if start != here {
        costs.grid_to_world(start)
    } else {
        nav_core::local_map::LocalMap::lookahead(costs, pose.position(), &path, spacing + 1e-9)
            .or_else(|| path.waypoints.get(1).map(|w| Point2::new(w.x, w.y)))
            .unwrap_or(target)
    };
    let out = robot.move_to(wp).await?;
    if out.collided {
        // where the robot touched: one radius ahead along the motion (seed 002: mark it as an
        // obstacle for future avoidance)
        let now = robot.odometry().await.map(|o| o.pose).unwrap_or(pose);
        let dir = if now.position().distance(wp) > 1e-6 { now.position().bearing_to(wp) } else { now.yaw };
        let contact = Point2::new(now.x + 0.2 * dir.cos(), now.y + 0.2 * dir.sin());
        motion.events.push(json!({"event": "collision", "contact": [contact.x, contact.y]}));
        // back off along the contact normal so the next motion starts free
        let away = Point2::new(now.x - 0.1 * dir.cos(), now.y - 0.1 * dir.sin());
        let back = robot.move_to(away).await?;
        motion.events.push(json!({"event": "back_off", "moved_m": back.distance_m, "collided": back.collided}));
        let details = format!("collided after {:.2} m", out.distance_m);
        return Ok(Execution::new(ActionResult::Collision, details, out.distance_m));
    }
    let result = if wp.distance(target) < 0.05 { ActionResult::Arrived } else { ActionResult::Moved };
    let details = format!("moved {:.2} m toward ({:.2}, {:.2})", out.distance_m, wp.x, wp.y);
    Ok(Execution::new(result, details, out.distance_m))
}

/// The passable cell nearest to `c` within `r` cells.
fn nearest_passable(costs: &CostMap, c: nav_core::grid::GridPos, r: i32) -> Option<nav_core::grid::GridPos> {
    let mut best: Option<(nav_core::grid::GridPos, i32)> = None;
    for dy in -r..=r {
        for dx in -r..=r {
            let g = nav_core::grid::GridPos::new(c.x + dx, c.y + dy);
            let d = dx * dx + dy * dy;
            if costs.cost(g).is_finite() && best.is_none_or(|(_, bd)| d < bd) {
                best = Some((g, d));
            }
        }
    }
    best.map(|(g, _)| g)
}
