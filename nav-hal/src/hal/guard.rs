//! [`MotionGuard`]: the safety check a HAL applies to every velocity of a
//! closed-loop motion it runs itself (discrete actions carried out over a
//! velocity interface, as [`RosbridgeHal`](crate::rosbridge) does).
//!
//! nav-hal sits below the safety layer, so the check is injected: a
//! navigator wraps nav-safety's continuous guard (the same check that
//! protects every `cmd_vel` of the 20 Hz control loop) in this trait and
//! hands it to the HAL.

use super::{StampedScan, VelocityCommand};
use nav_core::geometry::Pose2;

/// What the guard made of one velocity command.
#[derive(Debug, Clone, PartialEq)]
pub struct GuardVerdict {
    /// Safe forward speed, m/s.
    pub linear: f64,
    /// Safe yaw rate, rad/s.
    pub angular: f64,
    /// True when the guard halted the motion (an obstacle within the stop
    /// distance in the direction of motion, a stale or blind scan, ...).
    pub stopped: bool,
    /// Why the command was changed (`code: explanation`), if it was.
    pub reason: Option<String>,
}

/// A safety check for each velocity of a HAL-run closed-loop motion.
pub trait MotionGuard: Send + Sync + std::fmt::Debug {
    /// The safe version of `command` given the newest `scan` (acquired
    /// `scan_age_s` seconds ago) at the odometry `pose`.
    fn check(&self, command: &VelocityCommand, scan: &StampedScan, scan_age_s: f64, pose: Pose2) -> GuardVerdict;
}
