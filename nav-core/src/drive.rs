//! How a robot base steers under velocity commands, and the yaw-rate
//! limit that follows from it. One definition for every crate: the
//! simulator moves by it, the HAL adapters report it, the safety layer
//! limits commands by it and path following plans turns with it.
//!
//! ```
//! use nav_core::drive::DriveKind;
//!
//! let car = DriveKind::Ackermann { min_turn_radius_m: 0.3 };
//! // a car-like base cannot turn in place and turns at most v / R
//! assert_eq!(car.max_yaw_rate(0.0), 0.0);
//! assert!((car.max_yaw_rate(0.15) - 0.5).abs() < 1e-12);
//! assert_eq!(car.limit_yaw_rate(0.15, -2.0), -0.5);
//! // a differential base may spin in place
//! assert_eq!(DriveKind::Differential.limit_yaw_rate(0.0, 1.0), 1.0);
//! assert!(DriveKind::default().can_turn_in_place());
//! ```

use serde::{Deserialize, Serialize};

/// Drive kinematics of a robot base.
///
/// The default is [`DriveKind::Differential`], the most permissive
/// kinematics (the built-in simulator and most research bases); a robot
/// that steers like a car (the ROSMASTER A1) says so through its HAL
/// capabilities or its adapter's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DriveKind {
    /// Unicycle / differential drive: any (v, ω), turning in place allowed.
    #[default]
    Differential,
    /// Car-like steering (ROSMASTER A1): `|ω| ≤ |v| / min_turn_radius_m`,
    /// no turning in place.
    Ackermann {
        /// Smallest turning radius, metres (> 0).
        min_turn_radius_m: f64,
    },
}

impl DriveKind {
    /// Whether the base can change heading without moving.
    pub fn can_turn_in_place(self) -> bool {
        match self {
            DriveKind::Differential => true,
            DriveKind::Ackermann { min_turn_radius_m } => min_turn_radius_m <= 0.0,
        }
    }

    /// The largest yaw rate (rad/s, magnitude) the kinematics allow at
    /// forward speed `linear_mps`: unbounded for a differential base,
    /// `|v| / R` for an Ackermann base.
    pub fn max_yaw_rate(self, linear_mps: f64) -> f64 {
        match self {
            DriveKind::Ackermann { min_turn_radius_m } if min_turn_radius_m > 0.0 => {
                linear_mps.abs() / min_turn_radius_m
            }
            _ => f64::INFINITY,
        }
    }

    /// `angular_rps` clamped to [`Self::max_yaw_rate`] at `linear_mps`,
    /// keeping its sign.
    pub fn limit_yaw_rate(self, linear_mps: f64, angular_rps: f64) -> f64 {
        let max = self.max_yaw_rate(linear_mps);
        angular_rps.clamp(-max, max)
    }

    /// The tightest turning radius in metres (0 for a differential base).
    pub fn min_turn_radius_m(self) -> f64 {
        match self {
            DriveKind::Differential => 0.0,
            DriveKind::Ackermann { min_turn_radius_m } => min_turn_radius_m.max(0.0),
        }
    }
}

impl std::fmt::Display for DriveKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DriveKind::Differential => f.write_str("differential"),
            DriveKind::Ackermann { min_turn_radius_m } => write!(f, "ackermann (turning radius {min_turn_radius_m} m)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_shape_is_tagged_by_kind() {
        let car: DriveKind = serde_json::from_str(r#"{"kind": "ackermann", "min_turn_radius_m": 0.3}"#).unwrap();
        assert_eq!(car, DriveKind::Ackermann { min_turn_radius_m: 0.3 });
        let diff: DriveKind = serde_json::from_str(r#"{"kind": "differential"}"#).unwrap();
        assert_eq!(diff, DriveKind::Differential);
    }

    #[test]
    fn limits_follow_the_kinematics() {
        let car = DriveKind::Ackermann { min_turn_radius_m: 0.5 };
        assert_eq!(car.max_yaw_rate(-0.2), 0.4);
        assert_eq!(car.limit_yaw_rate(0.2, 1.0), 0.4);
        assert!(!car.can_turn_in_place());
        assert_eq!(DriveKind::Differential.max_yaw_rate(0.0), f64::INFINITY);
        assert_eq!(car.to_string(), "ackermann (turning radius 0.5 m)");
    }
}
