//! The peer's Nav2 emulation ([`PeerConfig::nav2`](super::PeerConfig::nav2)):
//! goals on the goal topic become NavigateToPose goals with ids of their
//! own, listed on the action's status topic; the emulation plans an A*
//! path on a costmap it builds from the simulated LiDAR (replanned every
//! second), follows it with pure pursuit on the arcs the base allows,
//! succeeds within [`GOAL_TOLERANCE_M`], aborts when it finds no path or
//! something is within [`BLOCKED_M`] ahead, and honours the cancel service,
//! like Nav2's bt_navigator, planner and controller servers do from a
//! client's point of view.

use crate::rosbridge::msg::action_msgs::GoalStatus;
use crate::rosbridge::msg::geometry_msgs::{PoseStamped, Twist};
use crate::sim::SimWorld;
use base64::Engine as _;
use nav_core::geometry::{Point2, normalize_angle};
use nav_core::local_map::{LocalMap, LocalMapConfig};
use serde::Serialize;
use serde_json::{Value, json};

/// A goal is reached within this distance, m.
pub const GOAL_TOLERANCE_M: f64 = 0.15;
/// The emulated controller gives up (aborts) when the LiDAR sees something
/// this close within ±20° ahead, m.
pub const BLOCKED_M: f64 = 0.25;
/// Forward speed of the emulated controller, m/s.
const SPEED_MPS: f64 = 0.15;
/// Yaw-rate limit of the emulated controller, rad/s (0.3 m turning radius
/// at [`SPEED_MPS`]).
const MAX_YAW_RATE: f64 = 0.5;
/// Look-ahead of the emulated path follower, m.
const LOOKAHEAD_M: f64 = 0.4;
/// The status topic lists this many of the newest goals (Nav2's action
/// server forgets ended goals after its result timeout), so a long session
/// of `nav sim-robot --nav2` does not publish an ever longer list.
const STATUS_GOALS: usize = 32;

/// One NavigateToPose goal the emulation received.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Nav2GoalRecord {
    /// Its id on the status topic.
    pub id: Vec<u8>,
    /// Where to (the odometry frame of the simulated robot).
    pub target: Point2,
    /// The frame the client named.
    pub frame_id: String,
    /// Its [`GoalStatus`] (executing, succeeded, canceled or aborted).
    pub status: i8,
    /// When it was accepted, s since the peer started.
    pub accepted_s: f64,
    /// When it ended, if it has.
    pub ended_s: Option<f64>,
}

impl Nav2GoalRecord {
    /// True while the emulated Nav2 drives toward it.
    pub fn running(&self) -> bool {
        self.ended_s.is_none()
    }
}

/// The emulation's state (inside the peer's simulation lock).
#[derive(Debug, Default)]
pub(crate) struct Nav2Sim {
    pub goals: Vec<Nav2GoalRecord>,
    next_id: u8,
    /// Its costmap, built from the simulated LiDAR in the odometry frame
    /// (Nav2's local and global costmaps in one).
    map: Option<LocalMap>,
    /// The planned path to the running goal and when it was planned.
    path: Vec<Point2>,
    planned_s: f64,
    ticks: u64,
}

impl Nav2Sim {
    /// The running goal, if any.
    fn running(&mut self) -> Option<&mut Nav2GoalRecord> {
        self.goals.iter_mut().rev().find(|g| g.running())
    }

    /// Ends the running goal with `status`; true if there was one.
    pub fn end(&mut self, status: i8, now_s: f64) -> bool {
        match self.running() {
            Some(g) => {
                g.status = status;
                g.ended_s = Some(now_s);
                true
            }
            None => false,
        }
    }

    /// A goal arrived on the goal topic: the running one is preempted
    /// (aborted, as Nav2's action server terminates it), the new one runs.
    pub fn accept(&mut self, msg: &Value, now_s: f64) -> Result<(), String> {
        let goal: PoseStamped =
            serde_json::from_value(msg.clone()).map_err(|e| format!("not a geometry_msgs/PoseStamped: {e}"))?;
        let target = Point2::new(goal.pose.position.x, goal.pose.position.y);
        if !target.is_finite() {
            return Err("the goal position is not finite".into());
        }
        self.end(GoalStatus::ABORTED, now_s);
        self.path.clear();
        self.next_id = self.next_id.wrapping_add(1);
        let id = (0..16u8).map(|i| self.next_id.wrapping_mul(31).wrapping_add(i)).collect();
        self.goals.push(Nav2GoalRecord {
            id,
            target,
            frame_id: goal.header.frame_id,
            status: GoalStatus::EXECUTING,
            accepted_s: now_s,
            ended_s: None,
        });
        Ok(())
    }

    /// The `action_msgs/GoalStatusArray` of the newest [`STATUS_GOALS`]
    /// goals (the running one among them), ids in base64 as rosbridge sends
    /// `uint8[16]`.
    pub fn status_msg(&self) -> Value {
        let b64 = base64::engine::general_purpose::STANDARD;
        let list: Vec<Value> = self.goals[self.goals.len().saturating_sub(STATUS_GOALS)..]
            .iter()
            .map(|g| {
                json!({
                    "goal_info": { "goal_id": { "uuid": b64.encode(&g.id) }, "stamp": { "sec": 0, "nanosec": 0 } },
                    "status": g.status,
                })
            })
            .collect();
        json!({ "status_list": list })
    }

    /// This tick's Twist while a goal runs (`None` when none does): toward
    /// the goal on the tightest arc the base allows; the goal succeeds
    /// within [`GOAL_TOLERANCE_M`] and aborts when blocked ahead. `changed`
    /// says a goal ended this tick.
    pub fn control(&mut self, world: &mut SimWorld, now_s: f64, changed: &mut bool) -> Option<Twist> {
        let pose = world.odometry().pose;
        self.ticks += 1;
        let scan = (self.ticks % 5 == 0 || self.map.is_none()).then(|| world.scan().scan);
        if let Some(scan) = &scan {
            let map = match &mut self.map {
                Some(m) => m,
                None => self.map.insert(LocalMap::new(LocalMapConfig::default(), pose.position()).ok()?),
            };
            map.integrate(pose, scan);
        }
        let target = self.running()?.target;
        if pose.position().distance(target) <= GOAL_TOLERANCE_M {
            *changed = self.end(GoalStatus::SUCCEEDED, now_s);
            return Some(Twist::default());
        }
        if self.path.is_empty() || now_s - self.planned_s >= 1.0 {
            self.planned_s = now_s;
            let map = self.map.as_mut()?;
            let costs = map.costmap();
            let plan = map.plan(&costs, pose.position(), target);
            self.path =
                if plan.success { plan.cells.iter().map(|c| costs.grid_to_world(*c)).collect() } else { Vec::new() };
            if self.path.is_empty() {
                // the planner finds no way: Nav2 aborts the goal
                *changed = self.end(GoalStatus::ABORTED, now_s);
                return Some(Twist::default());
            }
        }
        let scan = scan.unwrap_or_else(|| world.scan().scan);
        let blocked = (0..scan.len())
            .filter(|&i| normalize_angle(scan.angle(i)).abs() <= 20f64.to_radians())
            .filter_map(|i| scan.obstacle(scan.ranges[i]))
            .any(|r| f64::from(r) < BLOCKED_M);
        if blocked {
            *changed = self.end(GoalStatus::ABORTED, now_s);
            return Some(Twist::default());
        }
        // pure pursuit: the first path point at least LOOKAHEAD_M away, after the nearest one
        let nearest = (0..self.path.len())
            .min_by(|&a, &b| self.path[a].distance(pose.position()).total_cmp(&self.path[b].distance(pose.position())))
            .unwrap_or(0);
        let aim =
            self.path[nearest..].iter().find(|p| p.distance(pose.position()) >= LOOKAHEAD_M).copied().unwrap_or(target);
        let alpha = pose.relative_bearing(aim);
        let w = (2.0 * SPEED_MPS * alpha.sin() / LOOKAHEAD_M).clamp(-MAX_YAW_RATE, MAX_YAW_RATE);
        let w = if alpha.abs() > std::f64::consts::FRAC_PI_2 { MAX_YAW_RATE.copysign(alpha) } else { w };
        Some(Twist::planar(SPEED_MPS, w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_lists_the_newest_goals_with_distinct_ids() {
        let mut sim = Nav2Sim::default();
        let goal = json!({"header": {"frame_id": "odom"}, "pose": {"position": {"x": 1.0, "y": 2.0}}});
        for i in 0..300 {
            sim.accept(&goal, f64::from(i)).unwrap();
        }
        assert_eq!(sim.goals.len(), 300, "every goal is kept for the tests");
        let status = sim.status_msg();
        let list = status["status_list"].as_array().unwrap();
        assert_eq!(list.len(), STATUS_GOALS);
        let mut ids: Vec<&str> = list.iter().map(|g| g["goal_info"]["goal_id"]["uuid"].as_str().unwrap()).collect();
        assert_eq!(list.last().unwrap()["status"], GoalStatus::EXECUTING, "the running goal is listed");
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), STATUS_GOALS, "ids repeat only every 256 goals");
    }
}
