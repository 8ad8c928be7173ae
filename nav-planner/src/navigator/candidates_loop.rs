//! The candidates loop (seed 002 "Pipeline Overview", 13 steps per cycle):
//! goal check → stuck detection → candidates → world-model serialization
//! (+ optional map image) → inference with a timeout (timeout → STOP
//! fallback, confidence −0.3) → parse → guarded corrections → predictive
//! pass → A* → cycle result → HAL execution (the path's second waypoint;
//! 90° rotation on a ROTATE_TO fallback) → result fed back.

use super::log::{PlannerRecord, StepLog, StepRecord};
use super::{EpisodeStats, NavError, Observer};
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
use nav_hal::hal::Robot;
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

/// Runs the candidates loop. `grid` is the initial world model: the
/// rasterized arena in ground-truth mode, an unknown grid over the arena
/// bounds in vision mode.
#[allow(clippy::too_many_arguments)]
pub async fn run_candidates<R: Robot + ?Sized>(
    robot: &mut R,
    goal: Option<Point2>,
    goal_text: &str,
    planner: &mut dyn CandidatePlanner,
    mut grid: OccupancyGrid,
    config: &CandidatesLoopConfig,
    clock: &dyn Clock,
    log: &mut StepLog,
    observer: &mut Observer<'_, R>,
) -> Result<CandidatesOutcome, NavError> {
    let t0 = clock.now_s();
    let caps = robot.capabilities();
    let mut stats = EpisodeStats::default();
    let mut stuck = StuckDetector::new(config.stuck);
    let mut predictive = PredictiveModel::default();
    let mut astar = GridPlanner::new(config.planner.clone());
    let mut confidence = 1.0f64;
    let mut history: Vec<HistoryEntry> = Vec::new();
    let mut last_action: Option<LastAction> = None;
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
        gt_pose: observer.gt_pose(robot).map(Into::into),
        ..StepRecord::default()
    };
    start.info = observer.info.clone();
    start.info.insert("goal".into(), json!(goal.map(|g| [g.x, g.y])));
    start.info.insert("world_model".into(), json!(config.world_model));
    log.write(&start)?;

    let mut cycle: u32 = 0;
    let end = loop {
        if cycle >= config.max_cycles {
            break CandidatesEnd::CycleLimit;
        }
        cycle += 1;
        let cycle_start = Instant::now();
        let pose = robot.odometry().await?.pose;
        let scan = if caps.lidar { Some(robot.scan().await?.scan) } else { None };
        if config.world_model == WorldModelMode::Vision {
            if let Some(s) = &scan {
                grid.integrate_scan(pose, s, &config.integration);
            }
        }
        grid.mark_visited(pose.position());
        let mut events: Vec<Value> = Vec::new();

        // 1. goal check
        if let Some(g) = goal {
            if pose.position().distance(g) <= config.goal_tolerance_m {
                robot.stop().await.ok();
                log.write(&StepRecord {
                    step: u64::from(cycle),
                    t_s: clock.now_s() - t0,
                    action: "STOP".into(),
                    pose: pose.into(),
                    gt_pose: observer.gt_pose(robot).map(Into::into),
                    events: vec![json!({"event": "goal_reached"})],
                    ..StepRecord::default()
                })?;
                stats.steps = cycle;
                break CandidatesEnd::GoalReached;
            }
        }
        // 2. stuck detection
        let is_stuck = stuck.update(pose.position());
        // 10a. verify earlier predictions against what the sensors now show
        if config.predictive && config.world_model == WorldModelMode::Vision {
            predictive.verify(&grid);
        }
        // 3. candidates
        let cands = generate_candidates(
            &CandidateInput { grid: &grid, clearance: None, robot: pose, goal, stuck: is_stuck, waypoints: &[] },
            &config.candidates,
        );
        let mode = if is_stuck {
            NavMode::Recovering
        } else if goal.is_some() {
            NavMode::Navigating
        } else {
            NavMode::Exploring
        };
        // exploration complete?
        if goal.is_none()
            && (cands.iter().all(|c| c.kind != nav_core::candidates::CandidateKind::Frontier))
            && grid.known_fraction() >= config.explore_until_known
        {
            events.push(json!({"event": "exploration_complete"}));
        }
        // 4–7. frame + inference with timeout
        let camera = if caps.rgb && config.map_image { robot.rgb().await.ok().map(|c| c.frame) } else { None };
        let objects: Vec<String> = Vec::new();
        let frame = CandidateFrame {
            cycle,
            goal_text,
            goal,
            goal_tolerance_m: config.goal_tolerance_m,
            pose,
            mode,
            stuck_cycles: is_stuck.then_some(stuck.counter()),
            last_action: last_action.as_ref(),
            grid: &grid,
            candidates: &cands,
            objects: &objects,
            history: &history,
            camera: camera.as_ref(),
            map_image: config.map_image,
        };
        let timeout = Duration::from_secs_f64(config.inference_timeout_s.max(0.01));
        let reply: PlannerReply<CandidateDecision> = match tokio::time::timeout(timeout, planner.decide(&frame)).await {
            Ok(r) => r,
            Err(_) => {
                confidence -= 0.3;
                let reason = format!("inference timed out after {:.1} s", timeout.as_secs_f64());
                events.push(json!({"event": "fallback", "reason": reason}));
                tracing::warn!(%reason, "candidates: STOP fallback");
                let record = CallRecord {
                    fallback: Some(reason.clone()),
                    errors: vec![reason.clone()],
                    ..CallRecord::default()
                };
                PlannerReply { decision: CandidateDecision::fallback(&reason), distance_hint_m: None, record }
            }
        };
        stats.add_call(&reply.record);
        let vlm_ms = reply.record.latency_ms;
        if let Some(r) = &reply.record.fallback {
            if !events.iter().any(|e| e["event"] == "fallback") {
                events.push(json!({"event": "fallback", "reason": r}));
            }
        }
        let d = reply.decision.clone();
        // 9. guarded corrections
        if let Some(w) = &d.world_model_update {
            let rep = grid.apply_corrections(&w.corrections, &config.corrections);
            events.push(json!({"event": "corrections", "report": rep}));
        }
        // 10b. predictive pass
        if config.predictive && config.world_model == WorldModelMode::Vision {
            let rep = predictive.predict(&mut grid);
            if rep.total() > 0 {
                events.push(json!({"event": "predictions", "new": rep.total(),
                    "verified": predictive.verified_count, "wrong": predictive.wrong_count}));
            }
        }
        // 11–13. plan and execute
        let costs = CostMap::from_grid(&grid, &cost_cfg);
        let action_text = match &d.action.target_id {
            Some(id) => format!("{} {id}", action_label(d.action.kind)),
            None => action_label(d.action.kind).to_string(),
        };
        let (result, details, moved, stop_run) =
            execute(robot, &d, &cands, pose, &costs, &mut astar, clock, &mut events).await?;
        if config.world_model == WorldModelMode::Vision {
            for e in &events {
                if let Some([x, y]) = e.get("contact").and_then(|c| serde_json::from_value::<[f64; 2]>(c.clone()).ok())
                {
                    if let Some(g) = grid.world_to_grid(Point2::new(x, y)) {
                        grid.set(g, CellState::Obstacle, 0.95);
                    }
                }
            }
        }
        let planner_rec = PlannerRecord {
            raw: reply.record.raw.clone(),
            parsed: serde_json::to_value(&d).unwrap_or(Value::Null),
            fallback: reply.record.fallback.clone(),
            vlm_calls: reply.record.vlm_calls,
            prompt_tokens: reply.record.usage.prompt_tokens,
            completion_tokens: reply.record.usage.completion_tokens,
            latency_ms: reply.record.latency_ms,
        };
        let after = robot.odometry().await.map(|o| o.pose).unwrap_or(pose);
        let mut info = serde_json::Map::new();
        info.insert("candidates".into(), json!(cands.iter().map(|c| c.to_prompt_line()).collect::<Vec<_>>()));
        info.insert("confidence".into(), json!(confidence));
        info.insert("result".into(), json!(result));
        log.write(&StepRecord {
            step: u64::from(cycle),
            t_s: clock.now_s() - t0,
            action: action_text.clone(),
            pose: after.into(),
            gt_pose: observer.gt_pose(robot).map(Into::into),
            planner_called: true,
            planner: Some(planner_rec),
            events,
            collided: result == "collision",
            info,
            ..StepRecord::default()
        })?;
        stats.steps = cycle;
        stats.record_overhead(cycle_start.elapsed().as_secs_f64() * 1000.0 - vlm_ms);
        observer.step(robot, u64::from(cycle));
        history.insert(0, HistoryEntry { cycle, action: action_text.clone(), result: result.to_string() });
        history.truncate(5);
        last_action = Some(LastAction { action: action_text, result: result.to_string(), details });
        let _ = moved;
        // a STOP the model chose ends the run; the STOP fallback for a failed or invalid inference only
        // holds the robot for this cycle (the cycle budget still bounds a model that keeps failing)
        if stop_run && reply.record.fallback.is_none() {
            break if goal.is_some_and(|g| after.position().distance(g) <= config.goal_tolerance_m) {
                CandidatesEnd::GoalReached
            } else {
                CandidatesEnd::Stopped
            };
        }
    };
    Ok(CandidatesOutcome {
        end,
        stats,
        confidence,
        predictions: (predictive.verified_count, predictive.wrong_count),
        stuck_counter: stuck.counter(),
        grid,
    })
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
/// turns 90°, EXPLORE tries the fallback candidate, STOP stops). Returns
/// (result, details, moved metres, stop the run).
#[allow(clippy::too_many_arguments)]
async fn execute<R: Robot + ?Sized>(
    robot: &mut R,
    d: &CandidateDecision,
    cands: &[Candidate],
    pose: Pose2,
    costs: &CostMap,
    astar: &mut GridPlanner,
    clock: &dyn Clock,
    events: &mut Vec<Value>,
) -> Result<(&'static str, String, f64, bool), NavError> {
    match d.action.kind {
        ActionType::Stop => {
            robot.stop().await.ok();
            return Ok(("stopped", String::new(), 0.0, true));
        }
        ActionType::RotateTo => {
            let yaw = d.action.yaw_deg.unwrap_or(pose.yaw.to_degrees() + 90.0).to_radians();
            let moved = rotate(robot, normalize_angle(yaw - pose.yaw)).await?;
            return Ok(("rotated", format!("now facing {:.0} degrees", yaw.to_degrees()), moved, false));
        }
        ActionType::FollowWall => {
            // follow the nearest wall: go along it using the best frontier or subgoal candidate
            if let Some(c) = cands.first() {
                return follow_path(robot, pose, c.position, costs, astar, clock, events).await;
            }
            let moved = rotate(robot, std::f64::consts::FRAC_PI_2).await?;
            return Ok(("rotated", "no wall candidate; turned 90 degrees".into(), moved, false));
        }
        ActionType::MoveTo | ActionType::Explore => {}
    }
    let Some(target) = target_of(d, cands) else {
        events.push(json!({"event": "fallback", "reason": "unknown target"}));
        return run_fallback(robot, d, cands, pose, costs, astar, clock, events).await;
    };
    let r = follow_path(robot, pose, target, costs, astar, clock, events).await?;
    if r.0 == "blocked" {
        return run_fallback(robot, d, cands, pose, costs, astar, clock, events).await;
    }
    Ok(r)
}

#[allow(clippy::too_many_arguments)]
async fn run_fallback<R: Robot + ?Sized>(
    robot: &mut R,
    d: &CandidateDecision,
    cands: &[Candidate],
    pose: Pose2,
    costs: &CostMap,
    astar: &mut GridPlanner,
    clock: &dyn Clock,
    events: &mut Vec<Value>,
) -> Result<(&'static str, String, f64, bool), NavError> {
    match d.fallback.if_failed {
        FallbackType::Stop => {
            robot.stop().await.ok();
            Ok(("blocked", "path planning failed; fallback STOP".into(), 0.0, false))
        }
        FallbackType::RotateTo => {
            let moved = rotate(robot, std::f64::consts::FRAC_PI_2).await?;
            Ok(("blocked", "path planning failed; fallback rotated 90 degrees".into(), moved, false))
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
                    let r = follow_path(robot, pose, t, costs, astar, clock, events).await?;
                    Ok(("blocked", format!("fallback EXPLORE: {}", r.1), r.2, false))
                }
                None => {
                    let moved = rotate(robot, std::f64::consts::FRAC_PI_2).await?;
                    Ok(("blocked", "no fallback target; rotated 90 degrees".into(), moved, false))
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
        let out = robot
            .drive(nav_hal::hal::VelocityCommand { linear: 0.0, angular: w, duration_s: angle.abs() / 0.6 })
            .await?;
        Ok(out.distance_m)
    }
}

async fn follow_path<R: Robot + ?Sized>(
    robot: &mut R,
    pose: Pose2,
    target: Point2,
    costs: &CostMap,
    astar: &mut GridPlanner,
    clock: &dyn Clock,
    events: &mut Vec<Value>,
) -> Result<(&'static str, String, f64, bool), NavError> {
    // start from the robot's cell, or the nearest passable cell when the robot stands in the
    // inflated zone (after brushing past something)
    let here = costs.world_to_grid(pose.position());
    let start = if costs.cost(here).is_finite() { here } else { nearest_passable(costs, here, 4).unwrap_or(here) };
    let goal = costs.world_to_grid(target);
    let path: PathResult = astar.plan(costs, start, goal, clock);
    if !path.success {
        let why = path.error.map(|e| e.to_string()).unwrap_or_default();
        tracing::debug!(%why, "Path planning failed");
        events.push(json!({"event": "path_failed", "reason": why}));
        return Ok(("blocked", format!("Path planning failed: {why}"), 0.0, false));
    }
    // The seed drives to the path's second waypoint (one waypoint spacing ahead). We take the
    // farthest path point within that spacing that the robot can reach in a straight line, so a
    // shortcut never cuts an obstacle's corner.
    let spacing = costs.resolution() * astar.config().waypoint_spacing.max(1) as f64;
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
        events.push(json!({"event": "collision", "contact": [contact.x, contact.y]}));
        // back off along the contact normal so the next motion starts free
        let away = Point2::new(now.x - 0.1 * dir.cos(), now.y - 0.1 * dir.sin());
        let back = robot.move_to(away).await?;
        events.push(json!({"event": "back_off", "moved_m": back.distance_m, "collided": back.collided}));
        return Ok(("collision", format!("collided after {:.2} m", out.distance_m), out.distance_m, false));
    }
    let result = if wp.distance(target) < 0.05 { "arrived" } else { "moved" };
    Ok((result, format!("moved {:.2} m toward ({:.2}, {:.2})", out.distance_m, wp.x, wp.y), out.distance_m, false))
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
