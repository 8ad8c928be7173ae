//! The low-level policy seam of the ObjectNav loop (seed 000 §5.1 step 3):
//! the planner says *which direction*, the policy turns that into discrete
//! actions. [`HeadingPolicy`] is the built-in default; PixelNav (through the
//! simulator bridge) or any learned policy implements [`LowLevelPolicy`].

use async_trait::async_trait;
use nav_core::action::{Action, StepConfig};
use nav_core::geometry::{Pose2, angle_diff_abs, normalize_angle};
use nav_core::lidar::{LaserScan, corridor_clearance, corridor_clearance_dir};
use nav_hal::hal::Detection;
use serde::{Deserialize, Serialize};

/// What the planner asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyGoal {
    /// The planner believes the target is visible.
    pub goal_flag: bool,
    /// Direction relative to the robot's front when the decision was made,
    /// radians, positive = left.
    pub angle_rad: f64,
    /// The target object's label.
    pub target: String,
    /// How far to go before asking again, metres (offline planners know;
    /// a VLM does not, and the policy's default applies).
    pub distance_hint_m: Option<f64>,
}

/// What the policy sees at one step.
#[derive(Debug, Clone, Copy)]
pub struct PolicyObservation<'a> {
    /// Current pose estimate (odometry or dead reckoning).
    pub pose: Pose2,
    /// Current LiDAR scan, if the robot has one.
    pub scan: Option<&'a LaserScan>,
    /// Free distance straight ahead (e.g. from depth) when there is no
    /// scan, metres.
    pub forward_clearance_m: Option<f64>,
    /// Detections in the current view.
    pub detections: &'a [Detection],
}

/// Why the policy handed control back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyStop {
    /// Within stopping distance of the target: the episode's STOP.
    Reached,
    /// Forward motion is blocked.
    Blocked,
    /// The commanded distance was covered.
    Arrived,
    /// Turned a full half circle without finding a way.
    NoProgress,
}

/// One decision of the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum PolicyAction {
    /// Execute this action.
    Step(Action),
    /// Hand control back (the loop re-plans, or ends the episode on
    /// [`PolicyStop::Reached`]).
    Done(PolicyStop),
}

/// A low-level navigation policy.
#[async_trait]
pub trait LowLevelPolicy: Send {
    /// Short name for logs.
    fn name(&self) -> &str;
    /// Starts following a new planner decision.
    fn reset(&mut self, goal: &PolicyGoal, pose: Pose2);
    /// The next action.
    async fn act(&mut self, obs: &PolicyObservation<'_>) -> PolicyAction;
}

/// Settings of [`HeadingPolicy`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HeadingPolicyConfig {
    /// Step sizes of the action space.
    pub step: StepConfig,
    /// Turn until the heading error is at most this, degrees (15, half a turn step).
    pub heading_tolerance_deg: f64,
    /// Forward steps before handing back when no distance hint is given (8 = 2 m).
    pub max_forward_steps: u32,
    /// Robot radius plus a safety margin: the half width of the corridor
    /// that must be free to step forward, metres.
    pub corridor_half_width_m: f64,
    /// Extra free distance required beyond one step, metres.
    pub forward_margin_m: f64,
    /// Stop this close to the target's surface, metres (success distance
    /// 1.0 minus a margin).
    pub stop_distance_m: f64,
    /// Success distance of the task, metres (1.0): when blocked this close
    /// to the target, stopping still succeeds.
    pub success_distance_m: f64,
    /// Turns allowed without progress before giving up (6 = 180°).
    pub max_turns: u32,
    /// Within this distance of a detected target the policy steers at it
    /// directly, metres (farther away it follows the planner's heading).
    pub approach_distance_m: f64,
}

impl Default for HeadingPolicyConfig {
    fn default() -> Self {
        Self {
            step: StepConfig::default(),
            heading_tolerance_deg: 15.0,
            max_forward_steps: 8,
            corridor_half_width_m: 0.22,
            forward_margin_m: 0.05,
            stop_distance_m: 0.8,
            success_distance_m: 1.0,
            max_turns: 6,
            approach_distance_m: 1.0,
        }
    }
}

/// The default policy: turn toward the commanded angle in 30° steps,
/// advance while the swept corridor ahead is clear, and STOP within
/// stopping distance of a detected target (steering at it once seen) or
/// hand back when blocked or done.
#[derive(Debug, Clone)]
pub struct HeadingPolicy {
    config: HeadingPolicyConfig,
    target: String,
    heading: f64,
    forward_budget: u32,
    forward_done: u32,
    turns: u32,
    overshoot_tried: bool,
}

impl Default for HeadingPolicy {
    fn default() -> Self {
        Self::new(HeadingPolicyConfig::default())
    }
}

impl HeadingPolicy {
    /// A policy with the given settings.
    pub fn new(config: HeadingPolicyConfig) -> Self {
        Self {
            config,
            target: String::new(),
            heading: 0.0,
            forward_budget: 0,
            forward_done: 0,
            turns: 0,
            overshoot_tried: false,
        }
    }

    /// The settings.
    pub fn config(&self) -> &HeadingPolicyConfig {
        &self.config
    }

    fn forward_clear(&self, obs: &PolicyObservation<'_>) -> bool {
        let need = self.config.step.forward_m + self.config.forward_margin_m;
        let free = match obs.scan {
            Some(scan) => f64::from(corridor_clearance(scan, self.config.corridor_half_width_m)),
            None => obs.forward_clearance_m.unwrap_or(0.0),
        };
        free > need
    }

    fn turn_toward(&mut self, pose: Pose2, heading: f64) -> Option<Action> {
        let err = normalize_angle(heading - pose.yaw);
        if angle_diff_abs(heading, pose.yaw) <= self.config.heading_tolerance_deg.to_radians() + 1e-9 {
            return None;
        }
        self.turns += 1;
        Some(if err > 0.0 { Action::TurnLeft } else { Action::TurnRight })
    }
}

#[async_trait]
impl LowLevelPolicy for HeadingPolicy {
    fn name(&self) -> &str {
        "heading"
    }

    fn reset(&mut self, goal: &PolicyGoal, pose: Pose2) {
        self.target = goal.target.clone();
        self.heading = normalize_angle(pose.yaw + goal.angle_rad);
        self.forward_budget = match goal.distance_hint_m {
            Some(d) if d.is_finite() && d > 0.0 => {
                ((d / self.config.step.forward_m).ceil() as u32).clamp(1, self.config.max_forward_steps * 2)
            }
            _ => self.config.max_forward_steps,
        };
        self.forward_done = 0;
        self.turns = 0;
        self.overshoot_tried = false;
    }

    async fn act(&mut self, obs: &PolicyObservation<'_>) -> PolicyAction {
        // The target in view overrides the commanded heading.
        let target = obs
            .detections
            .iter()
            .filter(|d| d.label == self.target)
            .min_by(|a, b| a.distance_m.total_cmp(&b.distance_m));
        if let Some(t) = target.filter(|t| t.distance_m <= self.config.stop_distance_m) {
            let _ = t;
            return PolicyAction::Done(PolicyStop::Reached);
        }
        // steer at the target only when it is close and the straight way to it is open; otherwise
        // keep to the planner's heading (the planner routes around what is in the way)
        let target = target.filter(|t| t.distance_m <= self.config.approach_distance_m).filter(|t| match obs.scan {
            Some(scan) => {
                let free = f64::from(corridor_clearance_dir(scan, t.bearing_rad, self.config.corridor_half_width_m));
                free >= (t.distance_m - self.config.stop_distance_m).clamp(0.3, 1.5)
            }
            None => true,
        });
        if let Some(t) = target {
            self.heading = normalize_angle(obs.pose.yaw + t.bearing_rad);
            self.turns = 0;
            if let Some(turn) = self.turn_toward(obs.pose, self.heading) {
                return PolicyAction::Step(turn);
            }
            if self.forward_clear(obs) {
                self.forward_done += 1;
                return PolicyAction::Step(Action::Forward);
            }
            return PolicyAction::Done(if t.distance_m <= self.config.success_distance_m {
                PolicyStop::Reached
            } else {
                PolicyStop::Blocked
            });
        }
        // more turns than a half circle (a commanded 180° takes exactly max_turns, then goes forward)
        if self.turns > self.config.max_turns && self.forward_done == 0 {
            return PolicyAction::Done(PolicyStop::NoProgress);
        }
        if !self.overshoot_tried {
            if let Some(turn) = self.turn_toward(obs.pose, self.heading) {
                return PolicyAction::Step(turn);
            }
        }
        if self.forward_done >= self.forward_budget {
            return PolicyAction::Done(PolicyStop::Arrived);
        }
        if self.forward_clear(obs) {
            self.forward_done += 1;
            PolicyAction::Step(Action::Forward)
        } else if !self.overshoot_tried && angle_diff_abs(self.heading, obs.pose.yaw) > 1e-3 {
            // blocked a few degrees off the commanded heading: try the 30° step on the other side
            // of it before giving up (turns are quantized, the way may be open there)
            self.overshoot_tried = true;
            let err = normalize_angle(self.heading - obs.pose.yaw);
            PolicyAction::Step(if err > 0.0 { Action::TurnLeft } else { Action::TurnRight })
        } else {
            PolicyAction::Done(PolicyStop::Blocked)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn goal(angle_deg: f64) -> PolicyGoal {
        PolicyGoal { goal_flag: false, angle_rad: angle_deg.to_radians(), target: "bed".into(), distance_hint_m: None }
    }

    fn run(p: &mut HeadingPolicy, obs: &PolicyObservation<'_>) -> PolicyAction {
        futures_lite_block_on(p.act(obs))
    }

    fn futures_lite_block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().build().expect("runtime").block_on(f)
    }

    #[test]
    fn turns_in_thirty_degree_steps_then_advances() {
        let mut p = HeadingPolicy::default();
        let open = LaserScan::full_circle(360, 0.05, 12.0, f32::INFINITY);
        let mut pose = Pose2::origin();
        p.reset(&goal(90.0), pose);
        let cfg = StepConfig::default();
        let mut actions = Vec::new();
        for _ in 0..20 {
            let obs = PolicyObservation { pose, scan: Some(&open), forward_clearance_m: None, detections: &[] };
            match run(&mut p, &obs) {
                PolicyAction::Step(a) => {
                    actions.push(a);
                    pose = nav_core::action::step_pose(pose, a, &cfg);
                }
                PolicyAction::Done(s) => {
                    assert_eq!(s, PolicyStop::Arrived);
                    break;
                }
            }
        }
        assert_eq!(&actions[..3], &[Action::TurnLeft; 3]);
        assert_eq!(actions.len(), 3 + 8);
        assert!((pose.y - 2.0).abs() < 1e-9);
    }

    #[test]
    fn blocked_and_reached() {
        let mut p = HeadingPolicy::default();
        let mut wall = LaserScan::full_circle(360, 0.05, 12.0, f32::INFINITY);
        wall.ranges[180] = 0.4; // 0.4 m straight ahead
        p.reset(&goal(0.0), Pose2::origin());
        let obs =
            PolicyObservation { pose: Pose2::origin(), scan: Some(&wall), forward_clearance_m: None, detections: &[] };
        assert_eq!(run(&mut p, &obs), PolicyAction::Done(PolicyStop::Blocked));
        let bed = Detection { label: "bed".into(), bearing_rad: 0.0, distance_m: 0.5, bbox: None, ground_truth: true };
        let obs = PolicyObservation { detections: std::slice::from_ref(&bed), ..obs };
        assert_eq!(run(&mut p, &obs), PolicyAction::Done(PolicyStop::Reached));
    }
}
