//! The candidates loop (the LLMos pipeline's 13-step cycle):
//! goal check → stuck detection → candidates → world-model serialization
//! (+ optional map image) → inference with a timeout (timeout → STOP
//! fallback, confidence −0.3) → parse → guarded corrections → predictive
//! pass → A* → cycle result → HAL execution (`candidates_exec`: the path's
//! second waypoint, the fallback on a planning failure, the 10 cm nudge,
//! ROTATE_TO in closed loop) → result fed back.
//!
//! The world model comes from one of three sources ([`WorldModelMode`]):
//! the rasterized arena, depth-camera frames (`candidates_vision`,
//! vision mode, the default) or a 360° LiDAR. Coverage is what
//! the camera saw (and, in LiDAR mode, the LiDAR). Candidates are offered only where the
//! planner can reach them under its inflation.
//!
//! [`CandidatesLoop::new`] validates the configuration;
//! [`CandidatesLoop::run`] drives one run over a robot.

use super::candidates_exec::{BridgeConfig, Execution, Motion, execute};
use super::candidates_vision::{CameraMapper, CameraMapping};
use super::log::{PlannerRecord, StepRecord};
use super::{EpisodeStats, NavError, RunContext};
use crate::protocol::candidates::{
    ActionType, CandidateDecision, CandidateFrame, CandidatePlanner, HistoryEntry, LastAction, NavMode, TopologySummary,
};
use crate::protocol::{CallRecord, PlannerReply};
use nav_core::astar::{CostMap, CostMapConfig, GridPlanner, PlannerConfig, distance_field};
use nav_core::candidates::{Candidate, CandidateConfig, CandidateInput, TopologyWaypoint, generate_candidates};
use nav_core::geometry::{Point2, Pose2};
use nav_core::grid::{CellState, CorrectionGuard, OccupancyGrid, ScanIntegration};
use nav_core::predict::PredictiveModel;
use nav_core::stuck::{StuckConfig, StuckDetector};
use nav_hal::arena::Arena;
use nav_hal::hal::Robot;
use nav_memory::{AnchorGraph, AnchorId, AnchorReason, PlaceId};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Where the world model comes from (docs/CANDIDATES.md, "World model").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorldModelMode {
    /// The arena rasterized once; unknown cells cost 5.
    GroundTruth,
    /// Vision mode (the default): built from depth-camera frames
    /// (60° field of view) after a 6 × 60° scan; unknown cells cost 50.
    Vision,
    /// Built from a 360° LiDAR each cycle (robots with a laser); unknown
    /// cells cost 50.
    Lidar,
}

impl WorldModelMode {
    /// Whether the grid is built from sensors (vision or LiDAR).
    pub fn is_sensed(self) -> bool {
        self != WorldModelMode::GroundTruth
    }
}

/// Which STOP decisions end a candidates run
/// ([`CandidatesLoopConfig::stop_ends_run`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopRule {
    /// navkit's default: a STOP the model chose ends the run in every mode
    /// (in exploration mode too); the STOP fallback of a failed, invalid or
    /// timed-out inference only holds the robot for that cycle.
    #[default]
    Chosen,
    /// The LLMos bridge's rule: any STOP decision, the fallback included,
    /// ends a run with a goal; in exploration mode (no goal) a STOP holds
    /// the robot for that cycle and the run goes on to its cycle limit.
    NonExploration,
}

impl StopRule {
    /// Whether a STOP ends the run, in a run with a goal or not, when it
    /// was (or was not) a fallback.
    pub fn ends_run(self, has_goal: bool, fallback: bool) -> bool {
        match self {
            StopRule::Chosen => !fallback,
            StopRule::NonExploration => has_goal,
        }
    }
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
    /// How a scan (LiDAR, or a camera frame's rays) updates the grid.
    pub integration: ScanIntegration,
    /// How camera frames update the grid in vision mode, and the coverage
    /// in every mode.
    pub camera: CameraMapping,
    /// The HAL bridge settings (rotation, nudge, action timeout).
    pub bridge: BridgeConfig,
    /// Spacing of the topology's anchors on the driven path, metres (1.0);
    /// 0 turns the topology and its `w` candidates off.
    /// Range: [0, 100].
    pub waypoint_spacing_m: f64,
    /// The Stuck Recovery criterion: the final stuck counter may be at
    /// most this (10).
    /// Range: 0..=1000000.
    pub max_stuck_counter: u32,
    /// In exploration mode, stop once this coverage of the grid is known.
    /// Range: [0, 1].
    pub explore_until_known: f64,
    /// Which STOP decisions end the run: `chosen` (default: a STOP the
    /// model chose, in every mode) or `non_exploration` (any STOP, the
    /// fallback included, in a run with a goal; none in exploration mode).
    pub stop_ends_run: StopRule,
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
            camera: CameraMapping::default(),
            bridge: BridgeConfig::default(),
            waypoint_spacing_m: 1.0,
            max_stuck_counter: 10,
            explore_until_known: 0.98,
            stop_ends_run: StopRule::Chosen,
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
    /// The caller asked the run to end ([`super::Observer::with_halt`]:
    /// a spending limit was reached).
    Halted,
}

impl CandidatesEnd {
    /// The snake_case name the run summary and the step log use.
    pub fn as_str(self) -> &'static str {
        match self {
            CandidatesEnd::GoalReached => "goal_reached",
            CandidatesEnd::Stopped => "stopped",
            CandidatesEnd::CycleLimit => "cycle_limit",
            CandidatesEnd::Halted => "halted",
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
    /// Fraction of the grid's cells the sensors saw (exploration coverage:
    /// known cells / total cells): the camera in every mode, and the LiDAR in
    /// LiDAR mode; never predictions, model corrections or a rasterized map.
    pub coverage: f64,
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

/// What the model is shown at cycle 1 ([`CandidatesLoop::preview`]).
#[derive(Debug, Clone)]
pub struct CandidatesPreview {
    /// The world model.
    pub grid: OccupancyGrid,
    /// The robot's pose.
    pub pose: Pose2,
    /// The candidates offered.
    pub candidates: Vec<Candidate>,
    /// The OBJECTS lines.
    pub objects: Vec<String>,
    /// The topology graph's size (the WAYPOINTS line).
    pub topology: Option<TopologySummary>,
}

/// The candidates loop over a robot (see the module docs).
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
    /// A motion command did not finish within the action timeout.
    Timeout,
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
            ActionResult::Timeout => "timeout",
        }
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
    /// What the sensors saw (coverage only): camera frames in every mode,
    /// LiDAR scans in LiDAR mode.
    seen: OccupancyGrid,
    camera: CameraMapper,
    /// The topology: anchors on the driven path (the `w` candidates).
    topology: Topology,
    t0: f64,
}

/// The anchor graph the loop keeps of where the robot has been; its
/// anchors are offered as topology waypoints (`w` candidates).
struct Topology {
    graph: AnchorGraph,
    current: Option<AnchorId>,
    spacing_m: f64,
}

impl Topology {
    fn new(spacing_m: f64) -> Self {
        Self { graph: AnchorGraph::new(spacing_m.max(0.1)), current: None, spacing_m }
    }

    /// Records the robot at `pose` on `cycle`: the nearest anchor within half
    /// the spacing becomes current (linked to the previous one), else a new
    /// anchor once the robot is a spacing away from every anchor.
    fn visit(&mut self, pose: Pose2, cycle: u64) {
        if self.spacing_m <= 0.0 {
            return;
        }
        let near = self.graph.within(pose.position(), self.spacing_m);
        let closest = near.iter().min_by(|a, b| a.1.total_cmp(&b.1)).copied();
        match closest {
            Some((id, d)) if d <= 0.5 * self.spacing_m => {
                if let (Some(cur), true) = (self.current, self.current != Some(id)) {
                    self.graph.link(cur, id);
                }
                self.current = Some(id);
            }
            Some(_) => {}
            None => {
                let reason = if self.graph.is_empty() { AnchorReason::Start } else { AnchorReason::Distance };
                self.current = Some(self.graph.add(pose, PlaceId(0), cycle, reason, self.current));
            }
        }
    }

    /// The graph's size for the prompt's WAYPOINTS line; `None` before the
    /// first anchor.
    fn summary(&self) -> Option<TopologySummary> {
        let anchors = self.graph.anchors();
        if anchors.is_empty() {
            return None;
        }
        let edges = anchors.iter().map(|a| a.neighbors.len()).sum::<usize>() / 2;
        Some(TopologySummary { waypoints: anchors.len(), edges })
    }

    /// Every anchor but the current one, as a named waypoint.
    fn waypoints(&self) -> Vec<TopologyWaypoint> {
        self.graph
            .anchors()
            .iter()
            .filter(|a| Some(a.id) != self.current)
            .map(|a| TopologyWaypoint {
                name: format!("{} (visited at cycle {})", a.id, a.step),
                position: a.pose.position(),
            })
            .collect()
    }
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
            if ctx.observer.halted() {
                robot.stop().await.ok();
                break CandidatesEnd::Halted;
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
            coverage: st.seen.known_fraction(),
            grid: st.grid,
        })
    }

    async fn begin<R: Robot + ?Sized>(&self, robot: &mut R, ctx: &mut RunContext<'_, R>) -> Result<RunState, NavError> {
        let mut start = StepRecord {
            action: "start".into(),
            pose: robot.odometry().await.map(|o| o.pose).unwrap_or_default().into(),
            gt_pose: ctx.observer.gt_pose(robot).map(Into::into),
            ..StepRecord::default()
        };
        start.info = ctx.observer.info.clone();
        start.info.insert("goal".into(), json!(self.task.goal.map(|g| [g.x, g.y])));
        start.info.insert("world_model".into(), json!(self.config.world_model));
        let (st, views) = self.prepare(robot, ctx.clock.now_s()).await?;
        if views > 0 {
            start.events.push(json!({"event": "initial_scan", "views": views}));
        }
        ctx.log.write(&start)?;
        Ok(st)
    }

    /// The run state at the start, after the initial scan in vision mode
    /// (returns the views it took).
    async fn prepare<R: Robot + ?Sized>(&self, robot: &mut R, t0: f64) -> Result<(RunState, u32), NavError> {
        let config = &self.config;
        let cost_cfg = CostMapConfig {
            robot_radius_m: config.inflation_m,
            ..match config.world_model {
                WorldModelMode::GroundTruth => CostMapConfig::ground_truth(),
                WorldModelMode::Vision | WorldModelMode::Lidar => CostMapConfig::vision(),
            }
        };
        let g = &self.task.grid;
        let seen = OccupancyGrid::new(g.width(), g.height(), g.resolution(), g.origin())
            .map_err(|e| NavError::Config(format!("candidates world model: {e}")))?;
        let mut st = RunState {
            stats: EpisodeStats::default(),
            stuck: StuckDetector::new(config.stuck),
            predictive: PredictiveModel::default(),
            astar: GridPlanner::new(config.planner.clone()),
            confidence: 1.0,
            history: Vec::new(),
            last_action: None,
            cost_cfg,
            grid: self.task.grid.clone(),
            seen,
            camera: CameraMapper::new(&config.camera, &config.integration),
            topology: Topology::new(config.waypoint_spacing_m),
            t0,
        };
        let mut views = 0;
        if config.world_model == WorldModelMode::Vision && config.camera.initial_scan_views > 0 {
            views = self.initial_scan(robot, &mut st).await?;
        }
        Ok((st, views))
    }

    /// What the model is shown at cycle 1 (`nav prompt`): the world model
    /// after the initial scan and the first frame, the pose, the candidates
    /// and the visible objects. The robot turns in place for the scan.
    ///
    /// # Errors
    /// A robot failure.
    pub async fn preview<R: Robot + ?Sized>(&self, robot: &mut R) -> Result<CandidatesPreview, NavError> {
        let (mut st, _) = self.prepare(robot, 0.0).await?;
        let pose = self.observe(robot, &mut st).await?;
        let candidates = self.offer(&st, pose, false);
        let objects = if robot.capabilities().detections { visible_objects(robot, pose).await } else { Vec::new() };
        let topology = st.topology.summary();
        Ok(CandidatesPreview { grid: st.grid, pose, candidates, objects, topology })
    }

    /// Sensing of step 1: a camera frame (vision mode and coverage), a LiDAR
    /// scan (LiDAR mode), the robot's cell marked visited; returns the pose.
    async fn observe<R: Robot + ?Sized>(&self, robot: &mut R, st: &mut RunState) -> Result<Pose2, NavError> {
        self.camera_update(robot, st).await?;
        let pose = robot.odometry().await?.pose;
        if self.config.world_model == WorldModelMode::Lidar && robot.capabilities().lidar {
            let scan = robot.scan().await?.scan;
            st.grid.integrate_scan(pose, &scan, &self.config.integration);
            // in LiDAR mode the LiDAR builds the map, so what it sees counts as explored too
            st.seen.integrate_scan(pose, &scan, &self.config.integration);
        }
        st.grid.mark_visited(pose.position());
        st.seen.mark_visited(pose.position());
        st.topology.visit(pose, st.stats.steps.into());
        Ok(pose)
    }

    /// Step 3: candidates the planner can reach under its inflation.
    fn offer(&self, st: &RunState, pose: Pose2, stuck: bool) -> Vec<Candidate> {
        let costs = CostMap::from_grid(&st.grid, &st.cost_cfg);
        let here = costs.world_to_grid(pose.position());
        let start = costs.nearest_passable(here, 4).unwrap_or(here);
        let reachable: Vec<bool> = distance_field(&costs, start).iter().map(|d| d.is_finite()).collect();
        let waypoints = st.topology.waypoints();
        generate_candidates(
            &CandidateInput {
                grid: &st.grid,
                clearance: None,
                robot: pose,
                goal: self.task.goal,
                stuck,
                waypoints: &waypoints,
                reachable: Some(&reachable),
            },
            &self.config.candidates,
        )
    }

    /// The initial 360° scan: a camera frame, then a turn of
    /// 360°/n, n times; returns the views taken.
    async fn initial_scan<R: Robot + ?Sized>(&self, robot: &mut R, st: &mut RunState) -> Result<u32, NavError> {
        let n = self.config.camera.initial_scan_views;
        let step = std::f64::consts::TAU / f64::from(n);
        let yaw0 = robot.odometry().await?.pose.yaw;
        for k in 1..=n {
            self.camera_update(robot, st).await?;
            // the last turn brings the robot back to its start heading
            let target = yaw0 + step * f64::from(k);
            if super::candidates_exec::rotate_to(robot, target, &self.config.bridge).await?.is_err() {
                return Ok(k);
            }
        }
        Ok(n)
    }

    /// One camera frame into the seen grid and, in vision mode, the world model.
    async fn camera_update<R: Robot + ?Sized>(&self, robot: &mut R, st: &mut RunState) -> Result<(), NavError> {
        let pose = robot.odometry().await?.pose;
        if let Some(scan) = st.camera.frame(robot).await? {
            st.camera.integrate(&mut st.seen, pose, &scan);
            if self.config.world_model == WorldModelMode::Vision {
                st.camera.integrate(&mut st.grid, pose, &scan);
            }
        }
        Ok(())
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
        let mut motion = Motion {
            costs: &costs,
            astar: &mut st.astar,
            clock: ctx.clock,
            bridge: &self.config.bridge,
            events: &mut view.events,
        };
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
        // by default a STOP the model chose ends the run; the STOP fallback for a failed or invalid
        // inference only holds the robot for this cycle (the cycle budget still bounds a model that keeps
        // failing). `stop_ends_run` picks the other rule (StopRule).
        let fallback = reply.record.fallback.is_some();
        if exec.ends_run && self.config.stop_ends_run.ends_run(self.task.goal.is_some(), fallback) {
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
        let pose = self.observe(robot, st).await?;
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
        // 2. stuck detection (a STUCK event when the detector fires)
        let was_stuck = st.stuck.is_stuck();
        let stuck = st.stuck.update(pose.position());
        let mut events = Vec::new();
        if stuck && !was_stuck {
            st.stats.stuck += 1;
            events.push(json!({"event": "STUCK", "cycles": st.stuck.counter()}));
        }
        // 10a. verify earlier predictions against what the sensors now show
        if config.predictive && config.world_model.is_sensed() {
            st.predictive.verify(&st.grid);
        }
        // 3. candidates the planner can reach under its inflation
        let cands = self.offer(st, pose, stuck);
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
        let objects = if caps.detections { visible_objects(robot, view.pose).await } else { Vec::new() };
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
            topology: st.topology.summary(),
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
        if self.config.predictive && self.config.world_model.is_sensed() {
            let rep = st.predictive.predict(&mut st.grid);
            if rep.total() > 0 {
                events.push(json!({"event": "predictions", "new": rep.total(),
                    "verified": st.predictive.verified_count, "wrong": st.predictive.wrong_count}));
            }
        }
    }

    /// A contact point becomes an obstacle for future planning.
    fn mark_contacts(&self, st: &mut RunState, events: &[Value]) {
        if !self.config.world_model.is_sensed() {
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
        let planner_rec =
            PlannerRecord::of(&reply.record, serde_json::to_value(&reply.decision).unwrap_or(Value::Null));
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

/// The objects the robot's detector reports in view, as the OBJECTS block
/// lists them: `label (x, y) d.dm away`, positions in the odometry frame.
async fn visible_objects<R: Robot + ?Sized>(robot: &mut R, pose: Pose2) -> Vec<String> {
    let Ok(dets) = robot.detections().await else { return Vec::new() };
    dets.iter()
        .filter(|d| d.distance_m.is_finite() && d.bearing_rad.is_finite())
        .take(20)
        .map(|d| {
            let a = pose.yaw + d.bearing_rad;
            let (x, y) = (pose.x + d.distance_m * a.cos(), pose.y + d.distance_m * a.sin());
            format!("{} ({x:.2}, {y:.2}) {:.1}m away", d.label, d.distance_m)
        })
        .collect()
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
