//! Steps 11–13 of the candidates loop: A* to the decision's target and the
//! LLMos HAL bridge table (docs/CANDIDATES.md). MOVE_TO / EXPLORE with a path
//! drive to the path's second waypoint; without a path the decision's
//! fallback runs (ROTATE_TO turns 90°, STOP stops, EXPLORE tries its
//! candidate and, with no path there either, nudges 10 cm forward when the
//! cell ahead is passable). ROTATE_TO turns to the requested yaw in closed
//! loop on odometry. Every motion command has the bridge's action timeout;
//! every result text says what the odometry shows afterwards.

use super::NavError;
use super::candidates_loop::ActionResult;
use crate::protocol::candidates::{ActionType, CandidateDecision, FallbackType};
use nav_core::astar::{CostMap, GridPlanner, PathResult};
use nav_core::candidates::{Candidate, CandidateKind};
use nav_core::geometry::{Point2, Pose2, normalize_angle};
use nav_core::time::Clock;
use nav_hal::hal::{MotionOutcome, Robot, VelocityCommand};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::future::Future;
use std::time::Duration;

/// The HAL bridge settings of the candidates loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BridgeConfig {
    /// Rotation speed of ROTATE_TO on robots with velocity control, °/s (45).
    /// Range: (0, 720].
    pub rotate_speed_dps: f64,
    /// A ROTATE_TO counts as done within this of the requested yaw, degrees (2).
    /// Range: (0, 45].
    pub yaw_tolerance_deg: f64,
    /// Forward nudge when MOVE_TO / EXPLORE has no path, metres (0.10).
    /// Range: [0, 1].
    pub nudge_m: f64,
    /// Longest time one motion command may take, seconds (3); on expiry
    /// the robot is stopped and the result is `timeout`.
    /// Range: (0, 3600].
    pub action_timeout_s: f64,
}

impl Default for BridgeConfig {
    fn default() -> Self {
        Self { rotate_speed_dps: 45.0, yaw_tolerance_deg: 2.0, nudge_m: 0.10, action_timeout_s: 3.0 }
    }
}

impl BridgeConfig {
    /// Checks the ranges in the field docs; errors name the key.
    pub fn validate(&self) -> Result<(), nav_core::config::ConfigError> {
        use nav_core::config::{in_range, in_range_above};
        in_range_above("rotate_speed_dps", self.rotate_speed_dps, 0.0, 720.0)?;
        in_range_above("yaw_tolerance_deg", self.yaw_tolerance_deg, 0.0, 45.0)?;
        in_range("nudge_m", self.nudge_m, 0.0, 1.0)?;
        in_range_above("action_timeout_s", self.action_timeout_s, 0.0, 3600.0)
    }
}

/// One executed action: its result, the details the model reads, metres
/// moved, and whether the run ends.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Execution {
    pub(crate) result: ActionResult,
    pub(crate) details: String,
    pub(crate) moved_m: f64,
    pub(crate) ends_run: bool,
}

impl Execution {
    pub(crate) fn new(result: ActionResult, details: impl Into<String>, moved_m: f64) -> Self {
        Self { result, details: details.into(), moved_m, ends_run: false }
    }
}

/// What path following needs besides the robot: the cost map, the planner,
/// the clock (planning budget), the bridge settings and the cycle's events.
pub(crate) struct Motion<'a> {
    pub(crate) costs: &'a CostMap,
    pub(crate) astar: &'a mut GridPlanner,
    pub(crate) clock: &'a dyn Clock,
    pub(crate) bridge: &'a BridgeConfig,
    pub(crate) events: &'a mut Vec<Value>,
}

/// A motion command that did not finish within the action timeout.
pub(crate) struct TimedOut;

/// Awaits one motion command under the action timeout (`None` on
/// expiry; the caller stops the robot).
async fn within<T>(
    timeout_s: f64,
    command: impl Future<Output = Result<T, nav_hal::HalError>>,
) -> Result<Option<T>, NavError> {
    match tokio::time::timeout(Duration::from_secs_f64(timeout_s), command).await {
        Ok(r) => Ok(Some(r?)),
        Err(_) => Ok(None),
    }
}

fn timeout_exec(what: &str, s: f64) -> Execution {
    Execution::new(ActionResult::Timeout, format!("{what} did not finish within {s:.1} s; stopped"), 0.0)
}

/// How a turn ended.
pub(crate) struct Turn {
    /// The heading odometry reports afterwards, radians.
    pub(crate) yaw: f64,
    /// Whether it is within the yaw tolerance of the request.
    pub(crate) exact: bool,
    /// Why not, when it is not.
    pub(crate) note: Option<String>,
}

/// Turns in place to `target` (radians): closed loop on odometry with
/// velocity commands where the base can turn in place; otherwise the
/// nearest yaw the discrete turn step reaches; otherwise no turn.
pub(crate) async fn rotate_to<R: Robot + ?Sized>(
    robot: &mut R,
    target: f64,
    bridge: &BridgeConfig,
) -> Result<Result<Turn, TimedOut>, NavError> {
    let caps = robot.capabilities();
    let tol = bridge.yaw_tolerance_deg.to_radians();
    let yaw_now = |o: Result<nav_hal::hal::Odometry, nav_hal::HalError>| o.map(|o| o.pose.yaw);
    let mut yaw = yaw_now(robot.odometry().await)?;
    if caps.velocity && caps.drive.can_turn_in_place() {
        let w = bridge.rotate_speed_dps.to_radians();
        for _ in 0..4 {
            let err = normalize_angle(target - yaw);
            if err.abs() <= tol {
                break;
            }
            let cmd = VelocityCommand { linear: 0.0, angular: w.copysign(err), duration_s: err.abs() / w };
            let budget = bridge.action_timeout_s.max(cmd.duration_s + 1.0);
            if within(budget, robot.drive(cmd)).await?.is_none() {
                robot.stop().await.ok();
                return Ok(Err(TimedOut));
            }
            yaw = yaw_now(robot.odometry().await)?;
        }
        let exact = normalize_angle(target - yaw).abs() <= tol.max(5f64.to_radians());
        let note = (!exact).then(|| "the base did not reach the requested yaw".to_string());
        return Ok(Ok(Turn { yaw, exact, note }));
    }
    if caps.discrete_actions {
        let step = caps.step.map_or(30f64.to_radians(), |s| s.turn_rad());
        let err = normalize_angle(target - yaw);
        let n = (err.abs() / step).round() as u32;
        let a = if err > 0.0 { nav_core::action::Action::TurnLeft } else { nav_core::action::Action::TurnRight };
        for _ in 0..n {
            if within(bridge.action_timeout_s, robot.act(a)).await?.is_none() {
                robot.stop().await.ok();
                return Ok(Err(TimedOut));
            }
        }
        yaw = yaw_now(robot.odometry().await)?;
        let exact = normalize_angle(target - yaw).abs() <= 5f64.to_radians();
        let note =
            (!exact).then(|| format!("nearest reachable yaw: this robot turns in {:.0}° steps", step.to_degrees()));
        return Ok(Ok(Turn { yaw, exact, note }));
    }
    Ok(Ok(Turn {
        yaw,
        exact: normalize_angle(target - yaw).abs() <= tol,
        note: Some("this robot cannot turn in place".into()),
    }))
}

/// A turn as the model reads it.
async fn turn_exec<R: Robot + ?Sized>(
    robot: &mut R,
    target: f64,
    bridge: &BridgeConfig,
    result: ActionResult,
    prefix: &str,
) -> Result<Execution, NavError> {
    match rotate_to(robot, target, bridge).await? {
        Err(TimedOut) => Ok(timeout_exec("the turn", bridge.action_timeout_s)),
        Ok(t) => {
            let mut details = format!(
                "{prefix}now facing {:.0} degrees (requested {:.0})",
                t.yaw.to_degrees(),
                normalize_angle(target).to_degrees()
            );
            if !t.exact {
                details.push_str("; ");
                details.push_str(t.note.as_deref().unwrap_or("not within 5 degrees of the request"));
            }
            Ok(Execution::new(result, details, 0.0))
        }
    }
}

fn target_of(d: &CandidateDecision, cands: &[Candidate]) -> Option<Point2> {
    if let Some(id) = &d.action.target_id {
        if let Some(c) = cands.iter().find(|c| &c.id == id) {
            return Some(c.position);
        }
    }
    d.action.target_m.map(|[x, y]| Point2::new(x, y))
}

/// Steps 11–13 (see the module docs).
pub(crate) async fn execute<R: Robot + ?Sized>(
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
            let yaw = d.action.yaw_deg.map_or(pose.yaw + std::f64::consts::FRAC_PI_2, f64::to_radians);
            return turn_exec(robot, yaw, motion.bridge, ActionResult::Rotated, "").await;
        }
        ActionType::FollowWall => {
            // follow the nearest wall: go along it using the best frontier or subgoal candidate
            if let Some(c) = cands.first() {
                let r = follow_path(robot, pose, c.position, motion).await?;
                if r.result != ActionResult::Blocked {
                    return Ok(r);
                }
            }
            let yaw = pose.yaw + std::f64::consts::FRAC_PI_2;
            return turn_exec(robot, yaw, motion.bridge, ActionResult::Rotated, "no wall to follow; ").await;
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

/// The failure handling: the decision's fallback, reported `blocked`.
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
            let t = turn_exec(robot, pose.yaw + std::f64::consts::FRAC_PI_2, motion.bridge, ActionResult::Blocked, "")
                .await?;
            blocked(format!("path planning failed; fallback ROTATE_TO 90 degrees: {}", t.details), 0.0)
        }
        FallbackType::Explore => {
            let t = d
                .fallback
                .target_id
                .as_ref()
                .and_then(|id| cands.iter().find(|c| &c.id == id))
                .or_else(|| cands.iter().find(|c| c.kind == CandidateKind::Frontier))
                .map(|c| c.position);
            if let Some(t) = t {
                let r = follow_path(robot, pose, t, motion).await?;
                if r.result != ActionResult::Blocked {
                    return blocked(format!("path planning failed; fallback EXPLORE: {}", r.details), r.moved_m);
                }
            }
            let r = nudge(robot, pose, motion).await?;
            blocked(format!("path planning failed; fallback EXPLORE without a path: {}", r.details), r.moved_m)
        }
    }
}

/// The 10 cm nudge for MOVE_TO / EXPLORE without a path, taken
/// only when the cell ahead is passable in the cost map.
async fn nudge<R: Robot + ?Sized>(robot: &mut R, pose: Pose2, motion: &mut Motion<'_>) -> Result<Execution, NavError> {
    let step = motion.bridge.nudge_m;
    let ahead = Point2::new(pose.x + step * pose.yaw.cos(), pose.y + step * pose.yaw.sin());
    if step <= 0.0 || !motion.costs.cost(motion.costs.world_to_grid(ahead)).is_finite() {
        motion.events.push(json!({"event": "nudge", "skipped": "the cell ahead is blocked"}));
        return Ok(Execution::new(ActionResult::Blocked, "no nudge: the cell ahead is blocked", 0.0));
    }
    let timeout_s = motion.bridge.action_timeout_s;
    let out = if robot.capabilities().velocity {
        // a timed creep covers the whole step; `move_to` would stop within its arrival threshold
        let cmd = VelocityCommand { linear: NUDGE_SPEED_MPS, angular: 0.0, duration_s: step / NUDGE_SPEED_MPS };
        within(timeout_s.max(cmd.duration_s + 1.0), robot.drive(cmd)).await?
    } else {
        within(timeout_s, robot.move_to(ahead)).await?
    };
    let Some(mut out) = out else {
        robot.stop().await.ok();
        return Ok(timeout_exec("the nudge", timeout_s));
    };
    // what odometry saw (a real base's `drive` reports no distance)
    if let Ok(o) = robot.odometry().await {
        out.distance_m = o.pose.position().distance(pose.position());
    }
    motion.events.push(json!({"event": "nudge", "moved_m": out.distance_m, "collided": out.collided}));
    if out.collided {
        return collided(robot, pose, ahead, out, motion).await;
    }
    Ok(Execution::new(ActionResult::Moved, format!("nudged {:.2} m forward", out.distance_m), out.distance_m))
}

/// The nudge's forward speed where the base takes velocity commands, m/s.
const NUDGE_SPEED_MPS: f64 = 0.10;

/// On contact: report `collision`; the contact point (one robot
/// radius ahead along the motion) is marked an obstacle by the loop; the
/// robot backs off 10 cm so the next motion starts free.
async fn collided<R: Robot + ?Sized>(
    robot: &mut R,
    pose: Pose2,
    toward: Point2,
    out: MotionOutcome,
    motion: &mut Motion<'_>,
) -> Result<Execution, NavError> {
    let now = robot.odometry().await.map(|o| o.pose).unwrap_or(pose);
    let dir = if now.position().distance(toward) > 1e-6 { now.position().bearing_to(toward) } else { now.yaw };
    let contact = Point2::new(now.x + 0.2 * dir.cos(), now.y + 0.2 * dir.sin());
    motion.events.push(json!({"event": "collision", "contact": [contact.x, contact.y]}));
    let away = Point2::new(now.x - 0.1 * dir.cos(), now.y - 0.1 * dir.sin());
    let back = match within(motion.bridge.action_timeout_s, robot.move_to(away)).await? {
        Some(b) => json!({"event": "back_off", "moved_m": b.distance_m, "collided": b.collided}),
        None => {
            robot.stop().await.ok();
            json!({"event": "back_off", "timeout": true})
        }
    };
    motion.events.push(back);
    Ok(Execution::new(ActionResult::Collision, format!("collided after {:.2} m", out.distance_m), out.distance_m))
}

/// Plans to `target` and drives one waypoint spacing along the path.
pub(crate) async fn follow_path<R: Robot + ?Sized>(
    robot: &mut R,
    pose: Pose2,
    target: Point2,
    motion: &mut Motion<'_>,
) -> Result<Execution, NavError> {
    let costs = motion.costs;
    // start from the robot's cell, or the nearest passable cell when the robot stands in the
    // inflated zone (after brushing past something)
    let here = costs.world_to_grid(pose.position());
    let start = costs.nearest_passable(here, 4).unwrap_or(here);
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
    let Some(out) = within(motion.bridge.action_timeout_s, robot.move_to(wp)).await? else {
        robot.stop().await.ok();
        return Ok(timeout_exec("the move", motion.bridge.action_timeout_s));
    };
    if out.collided {
        return collided(robot, pose, wp, out, motion).await;
    }
    let now = robot.odometry().await.map(|o| o.pose.position()).unwrap_or(wp);
    let result = if wp.distance(target) < 0.05 && now.distance(target) < 0.1 {
        ActionResult::Arrived
    } else {
        ActionResult::Moved
    };
    let details =
        format!("moved {:.2} m toward ({:.2}, {:.2}); now at ({:.2}, {:.2})", out.distance_m, wp.x, wp.y, now.x, now.y);
    Ok(Execution::new(result, details, out.distance_m))
}
