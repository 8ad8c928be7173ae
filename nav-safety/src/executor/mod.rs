//! [`SafetyExecutor`]: every VLM tool call passes through here.
//!
//! The chain for each call: blocked-action check → sensor freshness →
//! pre-validation against the LiDAR → geofence → speed limit → translation
//! into a [`Target`] for the control loop. Nothing is ever executed here;
//! a refused call becomes a [`Target::Stop`] with feedback that says why.
//! The executor never fails: every input, however bad, produces an
//! [`ExecutionOutcome`].

mod feedback;
mod motion;
mod path_check;

pub use feedback::{Feedback, MotionReport, PositionReport};
pub use path_check::{ObstacleType, PathCheck, check_path};

use crate::blocked::{ActionKey, Allowance, BlockedActionMemory};
use crate::config::SafetyConfig;
use crate::error::SafetyError;
use crate::geofence::Geofence;
use crate::guard::{ContinuousGuard, Override, VelocityTarget};
use crate::tools::{GoalSpec, GoalType, ObserveFocus, ToolCall};
use nav_core::discovery::Significance;
use nav_core::geometry::{Point2, Pose2};
use nav_core::lidar::LaserScan;
use serde::Serialize;
use serde_json::{Value, json};

/// A frontier the VLM can name by id (from the sensor summary).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FrontierGoal {
    /// Id shown to the VLM.
    pub id: u32,
    /// Position in the map frame.
    pub position: Point2,
}

/// What the executor knows about the world at the time of a call.
#[derive(Debug, Clone, Copy)]
pub struct SafetySensors<'a> {
    /// The latest LiDAR scan.
    pub scan: &'a LaserScan,
    /// When it was taken, s (same clock as `now_s`).
    pub scan_stamp_s: f64,
    /// Current pose in the map frame.
    pub pose: Pose2,
    /// Current time, s (the caller's injected clock).
    pub now_s: f64,
    /// Frontiers currently offered to the VLM.
    pub frontiers: &'a [FrontierGoal],
    /// Where `navigate_to_goal(retrace)` should lead (e.g. the last place
    /// with unexplored exits, or the start); `None` when there is nothing
    /// to retrace.
    pub retrace_goal: Option<Point2>,
}

impl<'a> SafetySensors<'a> {
    /// Sensors with no frontiers and nothing to retrace.
    pub fn new(scan: &'a LaserScan, scan_stamp_s: f64, pose: Pose2, now_s: f64) -> Self {
        Self { scan, scan_stamp_s, pose, now_s, frontiers: &[], retrace_goal: None }
    }

    /// The same from a [`StampedScan`](nav_core::lidar::StampedScan).
    pub fn from_stamped(scan: &'a nav_core::lidar::StampedScan, pose: Pose2, now_s: f64) -> Self {
        Self::new(&scan.scan, scan.stamp_s, pose, now_s)
    }

    /// Adds the frontier list.
    pub fn with_frontiers(mut self, frontiers: &'a [FrontierGoal]) -> Self {
        self.frontiers = frontiers;
        self
    }

    /// Adds the retrace goal.
    pub fn with_retrace_goal(mut self, goal: Point2) -> Self {
        self.retrace_goal = Some(goal);
        self
    }

    /// Age of the scan, s (NaN-safe: a non-finite stamp gives infinity).
    pub fn scan_age_s(&self) -> f64 {
        nav_core::lidar::scan_age_s(self.scan_stamp_s, self.now_s)
    }
}

/// A navigation goal for the local planner (the control loop yields to it).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NavGoalTarget {
    /// Map x, m.
    pub x: f64,
    /// Map y, m.
    pub y: f64,
    /// How the VLM named it.
    pub goal_type: GoalType,
    /// The frontier id, for `frontier` goals.
    pub frontier_id: Option<u32>,
}

/// Stop moving and look (the caller runs the detailed analysis).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ObserveTarget {
    /// What to look at.
    pub focus: ObserveFocus,
}

/// Publish zero velocity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StopTarget {
    /// The VLM's reason, or the safety layer's code for a refusal.
    pub reason: String,
}

/// A discovery for the caller to record (memory, log, speech).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportTarget {
    /// What was found.
    pub label: String,
    /// Notes.
    pub notes: String,
    /// Significance.
    pub significance: Significance,
    /// Where the robot was.
    pub position: Point2,
}

/// What the control loop should do next.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Target {
    /// Apply this velocity (through the continuous guard) for its duration.
    Velocity(VelocityTarget),
    /// Hand over to the local planner.
    NavGoal(NavGoalTarget),
    /// Stop and observe.
    Observe(ObserveTarget),
    /// Stop.
    Stop(StopTarget),
    /// Nothing to move: the answer of `check_path_clear`.
    PathCheck(PathCheck),
    /// Nothing to move: record a discovery.
    Report(ReportTarget),
}

/// The result of [`SafetyExecutor::execute`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecutionOutcome {
    /// The call as received.
    pub call: ToolCall,
    /// What to do.
    pub target: Target,
    /// The result record for the VLM (complete it with
    /// [`SafetyExecutor::finish`] once a motion has ended).
    pub feedback: Feedback,
    /// Every modification made before execution, for the log.
    pub adjustments: Vec<Override>,
    /// The blocked-memory key of the call, if it has one.
    pub key: Option<ActionKey>,
}

impl ExecutionOutcome {
    /// True when the safety layer refused the call.
    pub fn is_refused(&self) -> bool {
        !self.feedback.success
            && matches!(self.target, Target::Stop(_))
            && !matches!(self.call, ToolCall::StopRobot { .. })
    }

    /// The JSON to send back to the VLM as the tool result: the path check
    /// for `check_path_clear`, the feedback record otherwise.
    pub fn result_json(&self) -> Value {
        match &self.target {
            Target::PathCheck(p) => serde_json::to_value(p).unwrap_or(Value::Null),
            _ => serde_json::to_value(&self.feedback).unwrap_or(Value::Null),
        }
    }

    /// The result as one line for the next prompt (the action result's
    /// fields, none dropped but the pose, which the prompt's state line
    /// already gives): `success, moved 0.37m in 3.0s`;
    /// `SAFETY OVERRIDE, moved 0.12m in 0.8s: <the safety message>` (the
    /// reason's code in parentheses only when there is no message, the
    /// motion only when there was any); `success, modified by the safety layer, …: <what
    /// it changed>`; `failed (reason), …`; `stopped early (reason)`
    /// when a motion ended before its duration; for `check_path_clear`
    /// `clear, 1.2m wide` or `not clear: wall at 0.8m. <recommendation>`.
    pub fn result_line(&self) -> String {
        use std::fmt::Write as _;
        if let Target::PathCheck(p) = &self.target {
            return if p.clear {
                format!("clear, {:.1}m wide", p.traversable_width_m)
            } else {
                let at = p.obstacle_distance_m.map(|d| format!(" at {d:.1}m")).unwrap_or_default();
                let kind = serde_json::to_value(p.obstacle_type).ok();
                let kind = kind.as_ref().and_then(Value::as_str).unwrap_or("obstacle");
                format!("not clear: {kind}{at}. {}", p.recommendation)
            };
        }
        let f = &self.feedback;
        let reason = f.stopped_reason.as_deref().unwrap_or("unknown");
        let mut s = if f.safety_override && !f.success && f.safety_message.is_some() {
            // the message says what the reason's code says
            "SAFETY OVERRIDE".to_string()
        } else if f.safety_override && !f.success {
            format!("SAFETY OVERRIDE ({reason})")
        } else if f.safety_override {
            "success, modified by the safety layer".to_string()
        } else if !f.success {
            format!("failed ({reason})")
        } else if f.stopped_early {
            format!("success, stopped early ({reason})")
        } else {
            "success".to_string()
        };
        match (f.actual_distance_m, f.actual_duration_s) {
            // a command refused before it ran moved nothing: nothing to report
            (Some(d), Some(t)) if d.abs() < 0.005 && t < 0.05 => {}
            (Some(d), Some(t)) => {
                let _ = write!(s, ", moved {d:.2}m in {t:.1}s");
            }
            _ => {}
        }
        if let Some(m) = &f.safety_message {
            let _ = write!(s, ": {m}");
        }
        s
    }

    /// [`Self::result_json`] as compact text with the fields in
    /// order (`success` first), ready to be a tool-result message.
    pub fn result_text(&self) -> String {
        let text = match &self.target {
            Target::PathCheck(p) => serde_json::to_string(p),
            _ => serde_json::to_string(&self.feedback),
        };
        text.unwrap_or_else(|_| self.result_json().to_string())
    }
}

/// The sequencer between the VLM and the control loop.
#[derive(Debug, Clone)]
pub struct SafetyExecutor {
    config: SafetyConfig,
    guard: ContinuousGuard,
    blocked: BlockedActionMemory,
    geofence: Geofence,
}

impl SafetyExecutor {
    /// Validates the configuration and builds the executor (with the
    /// configured geofence zones).
    pub fn new(config: SafetyConfig) -> Result<Self, SafetyError> {
        let geofence = Geofence::new(&config.geofence)?;
        config.validate()?;
        Ok(Self {
            guard: ContinuousGuard::new(config.clone()),
            blocked: BlockedActionMemory::new(config.blocked.clone()),
            geofence,
            config,
        })
    }

    /// The parameters.
    pub fn config(&self) -> &SafetyConfig {
        &self.config
    }

    /// The continuous guard with the same parameters, for the control loop.
    pub fn guard(&self) -> &ContinuousGuard {
        &self.guard
    }

    /// The geofence.
    pub fn geofence(&self) -> &Geofence {
        &self.geofence
    }

    /// The geofence, to add or remove zones.
    pub fn geofence_mut(&mut self) -> &mut Geofence {
        &mut self.geofence
    }

    /// The blocked-action memory (mutable: reading it expires old entries).
    pub fn blocked_mut(&mut self) -> &mut BlockedActionMemory {
        &mut self.blocked
    }

    /// Validates one tool call and translates it into a target.
    pub fn execute(&mut self, call: &ToolCall, sensors: &SafetySensors<'_>) -> ExecutionOutcome {
        let key = ActionKey::of(call);
        let mut out = ExecutionOutcome {
            call: call.clone(),
            target: Target::Stop(StopTarget { reason: String::new() }),
            feedback: Feedback { success: true, original_command: Some(call.to_command_json()), ..Feedback::default() },
            adjustments: Vec::new(),
            key: key.clone(),
        };
        if let Some(k) = &key {
            match self.blocked.check(k, sensors.now_s) {
                Allowance::Suppressed { message, .. } => {
                    return refuse(out, "action_suppressed", message, true);
                }
                Allowance::Warned { message, .. } => out.feedback.add_message(&message),
                Allowance::Allowed => {}
            }
        }
        let moves =
            matches!(call, ToolCall::MoveToward { .. } | ToolCall::Rotate { .. } | ToolCall::NavigateToGoal { .. });
        let age = sensors.scan_age_s();
        if moves && !(age <= self.config.sensors.max_scan_age_s && sensors.scan.header_is_valid()) {
            let why = if sensors.scan.header_is_valid() {
                format!("no LiDAR scan for {age:.1} s (sensor loss)")
            } else {
                "the LiDAR scan is unusable (sensor loss)".to_owned()
            };
            return refuse(out, "sensor_loss", format!("Command rejected before execution: {why}."), true);
        }
        match call {
            ToolCall::MoveToward { direction, speed, duration_s } => {
                motion::move_toward(self, out, sensors, *direction, *speed, *duration_s)
            }
            ToolCall::Rotate { degrees } => motion::rotate(self, out, sensors, *degrees),
            ToolCall::NavigateToGoal { goal, .. } => self.navigate(out, sensors, *goal),
            ToolCall::StopRobot { reason } => {
                out.target = Target::Stop(StopTarget { reason: reason.as_str().to_owned() });
                out
            }
            ToolCall::ObserveScene { focus } => {
                out.target = Target::Observe(ObserveTarget { focus: *focus });
                out
            }
            ToolCall::CheckPathClear { direction, distance_m } => {
                out.target = Target::PathCheck(check_path(&self.config, sensors.scan, age, *direction, *distance_m));
                out
            }
            ToolCall::ReportDiscovery { label, notes, significance } => {
                out.target = Target::Report(ReportTarget {
                    label: label.clone(),
                    notes: notes.clone(),
                    significance: *significance,
                    position: sensors.pose.position(),
                });
                out
            }
        }
    }

    fn navigate(&mut self, mut out: ExecutionOutcome, sensors: &SafetySensors<'_>, goal: GoalSpec) -> ExecutionOutcome {
        let (point, frontier_id) = match goal {
            GoalSpec::Coordinates { x, y } if x.is_finite() && y.is_finite() => (Point2::new(x, y), None),
            GoalSpec::Coordinates { .. } => {
                return refuse(out, "invalid_goal", "The goal coordinates are not finite numbers.".into(), false);
            }
            GoalSpec::Frontier { id } => match sensors.frontiers.iter().find(|f| f.id == id) {
                Some(f) => (f.position, Some(id)),
                None => {
                    let known: Vec<String> = sensors.frontiers.iter().map(|f| f.id.to_string()).collect();
                    let known = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
                    let msg = format!("Frontier {id} is not in the current frontier list (known: {known}).");
                    return refuse(out, "unknown_frontier", msg, false);
                }
            },
            GoalSpec::Retrace => match sensors.retrace_goal {
                Some(p) => (p, None),
                None => {
                    return refuse(
                        out,
                        "nothing_to_retrace",
                        "There is no travelled path to retrace yet.".into(),
                        false,
                    );
                }
            },
        };
        if let Err(v) = self.geofence.check_goal(point) {
            if let Some(k) = &out.key {
                self.blocked.record_blocked(k, sensors.now_s);
            }
            return refuse(out, "geofence_violation", v.message, true);
        }
        out.feedback.executed_command = Some(json!({
            "tool": "navigate_to_goal",
            "goal_type": goal.goal_type().as_str(),
            "x": feedback::round2(point.x),
            "y": feedback::round2(point.y),
        }));
        out.target =
            Target::NavGoal(NavGoalTarget { x: point.x, y: point.y, goal_type: goal.goal_type(), frontier_id });
        out
    }

    /// Completes an outcome once the control loop has finished the motion:
    /// fills in the feedback (see [`Feedback::complete`]) and, when the
    /// guard had to halt the motion, records the action as blocked.
    pub fn finish(&mut self, outcome: &mut ExecutionOutcome, report: &MotionReport, now_s: f64) {
        outcome.feedback.complete(report);
        if report.safety_stop.is_some() {
            if let Some(k) = &outcome.key {
                self.blocked.record_blocked(k, now_s);
            }
        }
    }
}

/// Turns an outcome into a refusal: stop, with the reason and message.
fn refuse(mut out: ExecutionOutcome, code: &str, message: String, safety: bool) -> ExecutionOutcome {
    out.target = Target::Stop(StopTarget { reason: code.to_owned() });
    out.feedback.success = false;
    out.feedback.stopped_reason = Some(code.to_owned());
    out.feedback.safety_override = safety;
    out.feedback.safety_message = Some(message);
    out.feedback.executed_command = None;
    out
}

#[cfg(test)]
mod tests;
