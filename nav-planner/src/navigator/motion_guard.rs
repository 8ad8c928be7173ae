//! [`SafetyMotionGuard`]: nav-safety's continuous guard (and geofence) as
//! the HAL's [`MotionGuard`], so a HAL that runs discrete actions as
//! closed-loop velocity motions (the rosbridge robot) applies the same
//! checks to every Twist as the 20 Hz control loop: emergency stop at the
//! stop distance in the direction of motion, proportional slowdown,
//! time-to-collision tiers, stale or blind scans, keepout zones.

use nav_core::geometry::Pose2;
use nav_hal::hal::{GuardVerdict, MotionGuard, StampedScan, VelocityCommand};
use nav_safety::guard::{ContinuousGuard, VelocityTarget};
use nav_safety::{Geofence, SafetyConfig, SafetyError};

/// The safety layer's guard behind the HAL's [`MotionGuard`] trait.
#[derive(Debug, Clone)]
pub struct SafetyMotionGuard {
    guard: ContinuousGuard,
    fence: Geofence,
}

impl SafetyMotionGuard {
    /// A guard with these safety parameters, including their geofence.
    ///
    /// # Errors
    /// The configuration's first invalid value, named.
    pub fn new(config: SafetyConfig) -> Result<Self, SafetyError> {
        config.validate()?;
        let fence = Geofence::new(&config.geofence)?;
        Ok(Self { guard: ContinuousGuard::new(config), fence })
    }
}

impl MotionGuard for SafetyMotionGuard {
    fn check(&self, command: &VelocityCommand, scan: &StampedScan, scan_age_s: f64, pose: Pose2) -> GuardVerdict {
        let target =
            VelocityTarget { linear: command.linear, angular: command.angular, duration_s: command.duration_s };
        let g = self.guard.guard_with_zones(&target, &scan.scan, scan_age_s, pose, &self.fence);
        let decisive = g.stop().or(g.overrides.last());
        GuardVerdict {
            linear: g.linear,
            angular: g.angular,
            stopped: g.stop().is_some(),
            reason: decisive.map(|o| format!("{}: {}", o.code, o.reason)),
        }
    }
}
