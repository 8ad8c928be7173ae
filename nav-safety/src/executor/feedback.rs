//! The feedback record (the tool call's result, or the override that
//! replaced it) that goes back to the VLM after every tool call.

use crate::guard::Override;
use nav_core::geometry::{Pose2, cardinal};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where the robot ended up (`new_position` of the action result).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PositionReport {
    /// Map x, m.
    pub x: f64,
    /// Map y, m.
    pub y: f64,
    /// Heading, degrees CCW from the map's x axis, in [0, 360).
    pub heading_deg: f64,
    /// Eight-point compass name of the heading (x = east).
    pub heading_cardinal: String,
}

impl PositionReport {
    /// Rounded (cm, whole degrees) report of a pose.
    pub fn from_pose(pose: Pose2) -> Self {
        let heading = pose.yaw.to_degrees().rem_euclid(360.0).round() % 360.0;
        Self {
            x: round2(pose.x),
            y: round2(pose.y),
            heading_deg: heading,
            heading_cardinal: cardinal(heading).to_owned(),
        }
    }
}

/// Rounds to centimetres / hundredths (the VLM needs no more).
pub(crate) fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The result record of one tool call. Empty optional fields are omitted
/// when serialized; the three booleans are always present.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Feedback {
    /// The command ran as asked (possibly slowed down).
    pub success: bool,
    /// Distance actually travelled, m (filled in by [`Feedback::complete`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual_distance_m: Option<f64>,
    /// Time actually spent, s (filled in by [`Feedback::complete`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual_duration_s: Option<f64>,
    /// The motion ended before its duration.
    pub stopped_early: bool,
    /// Short code for why it stopped or was refused
    /// (`obstacle_at_0.3m_ahead`, `action_suppressed`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_reason: Option<String>,
    /// Pose after the motion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_position: Option<PositionReport>,
    /// The safety layer modified or blocked the command.
    pub safety_override: bool,
    /// What the safety layer did and what to do instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety_message: Option<String>,
    /// The command as the VLM sent it (`{"tool": …, …}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_command: Option<Value>,
    /// The command as executed, when it differs in substance or carries
    /// the resulting velocities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executed_command: Option<Value>,
}

/// What the control loop reports when a command has finished.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MotionReport {
    /// Distance travelled, m.
    pub distance_m: f64,
    /// Time spent, s.
    pub duration_s: f64,
    /// Pose at the end.
    pub final_pose: Option<Pose2>,
    /// The guard override that halted the motion, if the safety layer
    /// ended it early.
    pub safety_stop: Option<Override>,
    /// Why the action ended short of its goal for another reason (no path,
    /// no progress, timed out): a short code; the action failed.
    pub interrupted: Option<String>,
}

impl Feedback {
    /// The action's outcome in one line, as the exploration memory keeps it:
    /// `safety_override: REASON`, `success, +0.50m` or `failed: REASON`.
    pub fn memory_summary(&self) -> String {
        if self.safety_override && !self.success {
            format!("safety_override: {}", self.stopped_reason.clone().unwrap_or_default())
        } else if self.success {
            format!("success, +{:.2}m", self.actual_distance_m.unwrap_or(0.0))
        } else {
            format!("failed: {}", self.stopped_reason.clone().unwrap_or_default())
        }
    }

    /// The result of a tool call that was never executed because it is
    /// invalid (an unknown tool, a missing, mistyped or disallowed
    /// argument), in the override-feedback format: not a success,
    /// `stopped_reason` `invalid_tool_call`, overridden by the safety layer,
    /// a message saying why and what to do instead, the command as the model
    /// sent it and no executed command.
    pub fn rejected_call(tool: &str, arguments: &Value, error: &crate::ToolError) -> Self {
        let mut original = serde_json::Map::new();
        original.insert("tool".into(), Value::String(tool.to_owned()));
        match arguments {
            Value::Object(m) => original.extend(m.iter().map(|(k, v)| (k.clone(), v.clone()))),
            Value::Null => {}
            other => {
                original.insert("arguments".into(), other.clone());
            }
        }
        Self {
            success: false,
            stopped_reason: Some("invalid_tool_call".into()),
            safety_override: true,
            safety_message: Some(format!(
                "Call rejected, nothing was executed: {error}. Call a listed tool with valid arguments."
            )),
            original_command: Some(Value::Object(original)),
            ..Self::default()
        }
    }

    /// Adds a sentence to the safety message.
    pub(crate) fn add_message(&mut self, text: &str) {
        match &mut self.safety_message {
            Some(m) if !m.is_empty() => {
                m.push(' ');
                m.push_str(text);
            }
            _ => self.safety_message = Some(text.to_owned()),
        }
    }

    /// Fills in the outcome of the motion: actual distance and duration,
    /// new position, and — when the guard halted it — the override (a
    /// "safety-overridden result").
    pub fn complete(&mut self, report: &MotionReport) {
        self.actual_distance_m = Some(round2(report.distance_m.max(0.0)));
        self.actual_duration_s = Some(round2(report.duration_s.max(0.0)));
        if let Some(p) = report.final_pose {
            if p.x.is_finite() && p.y.is_finite() && p.yaw.is_finite() {
                self.new_position = Some(PositionReport::from_pose(p));
            }
        }
        if let Some(stop) = &report.safety_stop {
            self.success = false;
            self.stopped_early = true;
            self.stopped_reason = Some(stop.code.clone());
            self.safety_override = true;
            self.add_message(&stop.reason);
        } else if let Some(why) = &report.interrupted {
            // a goal that was never reached (no path, no progress, timed
            // out) is a failure in the tool result, not a success
            self.success = false;
            self.stopped_early = true;
            self.stopped_reason = Some(why.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolCall;
    use serde_json::json;

    #[test]
    fn a_rejected_call_says_why_in_the_override_format() {
        let args = json!({"degrees": 30});
        let Err(e) = ToolCall::parse("rotate", &args) else { panic!("rotate(30) parsed") };
        let f = Feedback::rejected_call("rotate", &args, &e);
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["success"], false);
        assert_eq!(v["safety_override"], true);
        assert_eq!(v["stopped_reason"], "invalid_tool_call");
        assert_eq!(v["original_command"], json!({"tool": "rotate", "degrees": 30}));
        assert!(v.get("executed_command").is_none());
        let msg = v["safety_message"].as_str().unwrap();
        assert!(msg.contains("`degrees` = 30 is not one of: -180, -135, -90, -45, 45, 90, 135, 180"), "{msg}");
    }
}
