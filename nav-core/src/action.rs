//! Discrete actions (the Habitat action space) and action-based dead
//! reckoning (each action integrated as commanded).

use crate::geometry::{Pose2, normalize_angle};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// One discrete action, as in Habitat's ObjectNav task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Move forward by the configured step (default 0.25 m).
    Forward,
    /// Turn counter-clockwise by the configured angle (default 30°).
    TurnLeft,
    /// Turn clockwise by the configured angle (default 30°).
    TurnRight,
    /// End the episode (declare the goal found). No motion.
    Stop,
}

impl Action {
    /// All four actions.
    pub const ALL: [Action; 4] = [Action::Forward, Action::TurnLeft, Action::TurnRight, Action::Stop];

    /// The snake_case name used in logs and on the bridge wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Forward => "forward",
            Action::TurnLeft => "turn_left",
            Action::TurnRight => "turn_right",
            Action::Stop => "stop",
        }
    }

    /// True for the two rotations.
    pub fn is_turn(self) -> bool {
        matches!(self, Action::TurnLeft | Action::TurnRight)
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error for an action name that is not one of the four.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown action {0:?}: expected forward, turn_left, turn_right or stop")]
pub struct ParseActionError(pub String);

impl FromStr for Action {
    type Err = ParseActionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().replace(['-', ' '], "_").as_str() {
            "forward" | "move_forward" => Ok(Action::Forward),
            "turn_left" | "left" => Ok(Action::TurnLeft),
            "turn_right" | "right" => Ok(Action::TurnRight),
            "stop" => Ok(Action::Stop),
            _ => Err(ParseActionError(s.to_string())),
        }
    }
}

/// Step sizes of the discrete action space (defaults: 0.25 m / 30°).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StepConfig {
    /// Distance of one `forward`, metres; (0, 10].
    pub forward_m: f64,
    /// Angle of one turn, degrees; (0, 180].
    pub turn_deg: f64,
}

impl Default for StepConfig {
    fn default() -> Self {
        Self { forward_m: 0.25, turn_deg: 30.0 }
    }
}

impl StepConfig {
    /// Turn angle in radians.
    pub fn turn_rad(&self) -> f64 {
        self.turn_deg.to_radians()
    }

    /// Checks the ranges in the field docs; errors name the key.
    pub fn validate(&self) -> Result<(), crate::config::ConfigError> {
        crate::config::in_range_above("forward_m", self.forward_m, 0.0, 10.0)?;
        crate::config::in_range_above("turn_deg", self.turn_deg, 0.0, 180.0)
    }
}

/// Action-based dead reckoning: integrates discrete actions into a pose
/// starting from `(0, 0, 0)`. It never sees ground truth, so it drifts
/// whenever a commanded step is not fully executed (a collision, a slip).
///
/// ```
/// use nav_core::action::{Action, DeadReckoning};
/// let mut dr = DeadReckoning::default();
/// dr.apply(Action::TurnLeft);
/// dr.apply(Action::TurnLeft);
/// dr.apply(Action::TurnLeft); // now facing +y
/// dr.apply(Action::Forward);
/// let p = dr.pose();
/// assert!(p.x.abs() < 1e-9 && (p.y - 0.25).abs() < 1e-9);
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DeadReckoning {
    config: StepConfig,
    pose: Pose2,
}

impl DeadReckoning {
    /// Starts at the origin with the given step sizes.
    pub fn new(config: StepConfig) -> Self {
        Self { config, pose: Pose2::origin() }
    }

    /// Starts at an arbitrary pose.
    pub fn with_pose(config: StepConfig, pose: Pose2) -> Self {
        Self { config, pose }
    }

    /// The integrated pose.
    pub fn pose(&self) -> Pose2 {
        self.pose
    }

    /// The step configuration.
    pub fn config(&self) -> &StepConfig {
        &self.config
    }

    /// Integrates one action and returns the new pose.
    pub fn apply(&mut self, action: Action) -> Pose2 {
        self.pose = step_pose(self.pose, action, &self.config);
        self.pose
    }
}

/// Pose after executing `action` from `pose` with step sizes `config`
/// (forward: +d along yaw; turn_left: yaw + θ; turn_right: yaw − θ).
pub fn step_pose(pose: Pose2, action: Action, config: &StepConfig) -> Pose2 {
    match action {
        Action::Forward => {
            let (s, c) = pose.yaw.sin_cos();
            Pose2 { x: pose.x + config.forward_m * c, y: pose.y + config.forward_m * s, yaw: pose.yaw }
        }
        Action::TurnLeft => Pose2 { yaw: normalize_angle(pose.yaw + config.turn_rad()), ..pose },
        Action::TurnRight => Pose2 { yaw: normalize_angle(pose.yaw - config.turn_rad()), ..pose },
        Action::Stop => pose,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn forward_moves_along_yaw() {
        let p = step_pose(Pose2::origin(), Action::Forward, &StepConfig::default());
        assert!((p.x - 0.25).abs() < 1e-12 && p.y.abs() < 1e-12);
        let p = step_pose(Pose2::new(0.0, 0.0, std::f64::consts::FRAC_PI_2), Action::Forward, &StepConfig::default());
        assert!(p.x.abs() < 1e-12 && (p.y - 0.25).abs() < 1e-12);
    }

    #[test]
    fn turns_are_thirty_degrees() {
        let p = step_pose(Pose2::origin(), Action::TurnLeft, &StepConfig::default());
        assert!((p.yaw_deg() - 30.0).abs() < 1e-9);
        let p = step_pose(Pose2::origin(), Action::TurnRight, &StepConfig::default());
        assert!((p.yaw_deg() + 30.0).abs() < 1e-9);
    }

    #[test]
    fn parse_and_display_round_trip() {
        for a in Action::ALL {
            assert_eq!(a.as_str().parse::<Action>().unwrap(), a);
            assert_eq!(serde_json::to_string(&a).unwrap(), format!("\"{a}\""));
        }
        assert!("jump".parse::<Action>().is_err());
    }

    proptest! {
        #[test]
        fn twelve_left_turns_restore_yaw(yaw in -std::f64::consts::PI..std::f64::consts::PI, n in 0usize..5) {
            let cfg = StepConfig::default();
            let mut p = Pose2::new(1.0, -2.0, yaw);
            let start = p;
            for _ in 0..12 * (n + 1) {
                p = step_pose(p, Action::TurnLeft, &cfg);
            }
            prop_assert!(crate::geometry::angle_diff_abs(p.yaw, start.yaw) < 1e-9);
            prop_assert_eq!(p.x, start.x);
            prop_assert_eq!(p.y, start.y);
        }

        #[test]
        fn left_then_right_is_identity(yaw in -std::f64::consts::PI..std::f64::consts::PI) {
            let cfg = StepConfig::default();
            let p = Pose2::new(0.0, 0.0, yaw);
            let q = step_pose(step_pose(p, Action::TurnLeft, &cfg), Action::TurnRight, &cfg);
            prop_assert!(crate::geometry::angle_diff_abs(p.yaw, q.yaw) < 1e-9);
        }
    }
}
