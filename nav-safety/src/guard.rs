//! The continuous guard of the 20 Hz control loop: from the current
//! velocity target and a fresh scan, the velocity that is safe to publish
//! now, and an [`Override`] record for every change.
//!
//! Checks, in order:
//!
//! 1. non-finite commands become zero; |linear| and |angular| are capped;
//! 2. **sensor loss**: a scan older than `sensors.max_scan_age_s` (5 s),
//!    with an unusable header, or with fewer than
//!    `clearance.min_valid_beams` usable beams (or fewer than
//!    `clearance.min_valid_fraction` of the beams) in the direction of
//!    motion stops all motion (NaN is invalid, REP-117);
//! 3. **emergency stop** below `clearance.stop_m` (0.3 m) in the direction
//!    of motion;
//! 4. **proportional scaling** between 0.3 and 1.0 m:
//!    `v ≤ v_fast · clamp((d − 0.3) / (1.0 − 0.3), 0, 1)` (nav-core
//!    [`proportional_speed`]), applied as a limit, so a slow command near an
//!    obstacle is only reduced when the limit is below it;
//! 5. **TTC tiers** from nav-core [`min_time_to_collision`] at the
//!    (already scaled) velocity: > 5 s no limit, 2–5 s medium, 1.2–2 s
//!    slow, 0.5–1.2 s creep, < 0.5 s stop. The tier is taken once, at
//!    the commanded velocity; slowing down only raises the TTC.
//!
//! **Direction of motion.** Forward motion checks the front, backward
//! motion the back. A curved command (curvature κ = ω / |v|) checks the
//! ±30° arc around the heading of motion *widened* to also cover the chord
//! to the point reached after `clearance.motion_lookahead_m` (0.5 m) of
//! travel, which lies at `κ · 0.5 / 2` rad from the heading (capped at
//! 90°). A **straight reverse** (ω = 0, v < 0, how a boxed-in robot backs
//! out) checks the corridor its footprint sweeps instead
//! (`clearance.reverse_corridor_half_width_m`), as the range-equivalent
//! distance `free travel + half width` (the range of a return straight
//! behind), so the same stop and slowdown distances apply while a box
//! beside the robot, outside that corridor, does not block the way out.
//! Every reduction scales linear and angular together, keeping the
//! curvature and hence the checked arc unchanged. A pure rotation (v = 0)
//! has no direction of motion and is only stopped by sensor loss.

use crate::config::SafetyConfig;
use crate::geofence::Geofence;
use nav_core::geometry::{Pose2, normalize_angle};
use nav_core::lidar::{
    ArcStat, LaserScan, arc_distance, corridor_clearance_dir, min_time_to_collision, proportional_speed,
};
use serde::{Deserialize, Serialize};
use std::f64::consts::{FRAC_PI_2, PI};

/// A velocity command for a duration: what the control loop applies.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct VelocityTarget {
    /// Forward speed, m/s (negative = backward).
    pub linear: f64,
    /// Yaw rate, rad/s (positive = counter-clockwise / left).
    pub angular: f64,
    /// How long to apply it, s.
    pub duration_s: f64,
}

impl VelocityTarget {
    /// The zero command.
    pub const STOP: VelocityTarget = VelocityTarget { linear: 0.0, angular: 0.0, duration_s: 0.0 };
}

/// What an override did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OverrideKind {
    /// A non-finite command was replaced by zero.
    InvalidCommand,
    /// |linear| above the configured maximum.
    SpeedCap,
    /// |angular| above the configured maximum.
    AngularCap,
    /// The scan is stale or unusable: stop.
    SensorLoss,
    /// No usable LiDAR beams in the direction of motion: stop.
    Blind,
    /// Obstacle nearer than the stop distance in the direction of motion.
    EmergencyStop,
    /// Proportional slowdown between the stop and full-speed distances.
    ProportionalSlowdown,
    /// Time-to-collision tier limit.
    TtcLimit,
    /// Time-to-collision below the stop tier.
    TtcStop,
    /// The executor downgraded the requested speed tier (clearance < 1 m).
    SpeedDowngrade,
    /// Steering geometry: |ω| limited to |v| / minimum turn radius.
    Kinematics,
    /// A geofence slowdown zone.
    GeofenceSlowdown,
    /// The motion would enter a keepout zone.
    GeofenceKeepout,
    /// A stop from the [`StopArbiter`](crate::arbiter::StopArbiter).
    Arbiter,
    /// Watchdog velocity decay.
    WatchdogDecay,
}

/// One change the safety layer made to a command. `from`/`to` are linear
/// speeds (m/s), except for [`OverrideKind::AngularCap`] and
/// [`OverrideKind::Kinematics`] (rad/s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Override {
    /// What happened.
    pub kind: OverrideKind,
    /// Value before.
    pub from: f64,
    /// Value after.
    pub to: f64,
    /// Short code for the feedback's `stopped_reason`, e.g.
    /// `obstacle_at_0.3m_ahead`.
    pub code: String,
    /// Human-readable explanation (also fed back to the VLM).
    pub reason: String,
}

impl Override {
    /// True when the override brought motion to a halt (everything but
    /// the turn-rate limits ends at zero only by stopping).
    pub fn is_stop(&self) -> bool {
        self.to == 0.0 && !matches!(self.kind, OverrideKind::AngularCap | OverrideKind::Kinematics)
    }
}

/// The output of the guard.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GuardedVelocity {
    /// Safe forward speed, m/s.
    pub linear: f64,
    /// Safe yaw rate, rad/s.
    pub angular: f64,
    /// Every change made, in order.
    pub overrides: Vec<Override>,
    /// Nearest obstacle in the direction of motion, m (`None` when not
    /// moving or nothing seen).
    pub clearance_m: Option<f64>,
    /// Minimum time to collision at the output velocity, s (`None` when
    /// nothing closes in).
    pub ttc_s: Option<f64>,
}

impl GuardedVelocity {
    /// The first override that stopped motion, if any.
    pub fn stop(&self) -> Option<&Override> {
        self.overrides.iter().find(|o| o.is_stop())
    }

    /// True when an override of this kind was applied.
    pub fn has(&self, kind: OverrideKind) -> bool {
        self.overrides.iter().any(|o| o.kind == kind)
    }

    fn halt(&mut self, kind: OverrideKind, code: String, reason: String) {
        let from = self.linear;
        self.linear = 0.0;
        self.angular = 0.0;
        self.overrides.push(Override { kind, from, to: 0.0, code, reason });
    }

    fn scale_to(&mut self, limit: f64, kind: OverrideKind, code: String, reason: String) {
        let from = self.linear;
        if limit <= 0.0 {
            self.halt(kind, code, reason);
            return;
        }
        let k = limit / from.abs();
        self.linear *= k;
        self.angular *= k;
        self.overrides.push(Override { kind, from, to: self.linear, code, reason });
    }
}

/// The arc `(center, half_width)` (radians, CCW) checked for a motion, or
/// `None` for a pure rotation. See the module docs.
pub fn motion_arc(linear: f64, angular: f64, half_width: f64, lookahead_m: f64) -> Option<(f64, f64)> {
    if linear == 0.0 || !linear.is_finite() {
        return None;
    }
    let offset = if angular.is_finite() {
        (angular / linear.abs() * lookahead_m / 2.0).clamp(-FRAC_PI_2, FRAC_PI_2)
    } else {
        0.0
    };
    let base = if linear > 0.0 { 0.0 } else { PI };
    Some((normalize_angle(base + offset / 2.0), half_width + offset.abs() / 2.0))
}

/// Number of usable beams (hit, no-return or too-close) within an arc.
pub fn usable_beams_in_arc(scan: &LaserScan, center: f64, half_width: f64) -> usize {
    scan.effective_beams().filter(|(a, _)| normalize_angle(a - center).abs() <= half_width + 1e-9).count()
}

/// `(valid, total)`: the usable beams (REP-117: hit, no return, too
/// close) and all beams within an arc (none for an unusable header).
pub fn valid_beams_in_arc(scan: &LaserScan, center: f64, half_width: f64) -> (usize, usize) {
    if !scan.header_is_valid() {
        return (0, 0);
    }
    let in_arc = |i: usize| normalize_angle(scan.angle(i) - center).abs() <= half_width + 1e-9;
    let (mut valid, mut total) = (0, 0);
    for (i, &r) in scan.ranges.iter().enumerate() {
        if in_arc(i) {
            total += 1;
            valid += usize::from(scan.effective(r).is_some());
        }
    }
    (valid, total)
}

/// Why the robot cannot see in an arc, if it cannot: fewer than
/// `clearance.min_valid_beams` usable beams, or fewer than
/// `clearance.min_valid_fraction` of the arc's beams (a sensor fault).
/// `where_` names the arc in the message ("ahead", "in the left direction").
pub fn blind_in_arc(
    scan: &LaserScan,
    center: f64,
    half_width: f64,
    clearance: &crate::config::ClearanceConfig,
    where_: &str,
) -> Option<String> {
    let (valid, total) = valid_beams_in_arc(scan, center, half_width);
    let too_few = (valid as f64) < clearance.min_valid_fraction * total as f64;
    if valid >= clearance.min_valid_beams && !too_few {
        None
    } else if valid == 0 {
        Some(format!("no valid LiDAR readings {where_}"))
    } else {
        Some(format!(
            "only {valid} of {total} LiDAR readings {where_} are valid (at least {:.0}% needed; a sensor fault)",
            clearance.min_valid_fraction * 100.0
        ))
    }
}

/// Words for the side of the robot a motion goes to.
fn side(linear: f64) -> &'static str {
    if linear < 0.0 { "behind" } else { "ahead" }
}

/// The speed-limiting part of the control loop.
#[derive(Debug, Clone, PartialEq)]
pub struct ContinuousGuard {
    config: SafetyConfig,
}

impl ContinuousGuard {
    /// A guard with these parameters (validate the config first).
    pub fn new(config: SafetyConfig) -> Self {
        Self { config }
    }

    /// The parameters.
    pub fn config(&self) -> &SafetyConfig {
        &self.config
    }

    /// The arc checked for a motion under this configuration.
    pub fn motion_arc(&self, linear: f64, angular: f64) -> Option<(f64, f64)> {
        let c = &self.config.clearance;
        motion_arc(linear, angular, c.arc_half_width_deg.to_radians(), c.motion_lookahead_m)
    }

    /// The distance to the nearest obstacle in the direction of motion:
    /// the minimum over the motion's arc, or for a straight reverse the
    /// range-equivalent free travel of the footprint's corridor (module docs).
    fn distance_in_motion(&self, scan: &LaserScan, linear: f64, angular: f64, center: f64, half: f64) -> f64 {
        if linear < 0.0 && angular == 0.0 {
            let w = self.config.clearance.reverse_corridor_half_width_m;
            f64::from(corridor_clearance_dir(scan, PI, w)) + w
        } else {
            f64::from(arc_distance(scan, center, half, ArcStat::Min))
        }
    }

    /// The safe velocity for `target` given a scan `scan_age_s` seconds old.
    pub fn guard(&self, target: &VelocityTarget, scan: &LaserScan, scan_age_s: f64) -> GuardedVelocity {
        let sp = &self.config.speeds;
        let cl = &self.config.clearance;
        let mut g = GuardedVelocity {
            linear: target.linear,
            angular: target.angular,
            overrides: Vec::new(),
            clearance_m: None,
            ttc_s: None,
        };
        if !g.linear.is_finite() || !g.angular.is_finite() {
            let reason = "Command contained a non-finite velocity; replaced by zero.".to_owned();
            g.linear = 0.0;
            g.angular = 0.0;
            g.overrides.push(Override {
                kind: OverrideKind::InvalidCommand,
                from: f64::NAN,
                to: 0.0,
                code: "invalid_command".into(),
                reason,
            });
            return g;
        }
        if g.linear.abs() > sp.max_linear_mps {
            let to = sp.max_linear_mps.copysign(g.linear);
            g.overrides.push(Override {
                kind: OverrideKind::SpeedCap,
                from: g.linear,
                to,
                code: "speed_capped".into(),
                reason: format!("Speed capped at {:.2} m/s.", sp.max_linear_mps),
            });
            g.angular *= to / g.linear;
            g.linear = to;
        }
        if g.angular.abs() > sp.max_angular_rad_s {
            let to = sp.max_angular_rad_s.copysign(g.angular);
            g.overrides.push(Override {
                kind: OverrideKind::AngularCap,
                from: g.angular,
                to,
                code: "turn_rate_capped".into(),
                reason: format!("Turn rate capped at {:.2} rad/s.", sp.max_angular_rad_s),
            });
            g.angular = to;
        }
        if g.linear == 0.0 && g.angular == 0.0 {
            return g;
        }
        let fresh = scan_age_s.is_finite() && scan_age_s <= self.config.sensors.max_scan_age_s;
        if !fresh || !scan.header_is_valid() {
            let why = if fresh {
                "the LiDAR scan is unusable".to_owned()
            } else {
                format!("no LiDAR scan for {scan_age_s:.1} s")
            };
            g.halt(OverrideKind::SensorLoss, "sensor_loss".into(), format!("Movement stopped: {why}."));
            return g;
        }
        let Some((center, half)) = self.motion_arc(g.linear, g.angular) else {
            return g; // pure rotation
        };
        let where_ = side(g.linear);
        if let Some(why) = blind_in_arc(scan, center, half, cl, where_) {
            g.halt(OverrideKind::Blind, format!("no_lidar_readings_{where_}"), format!("Movement stopped: {why}."));
            return g;
        }
        let d = self.distance_in_motion(scan, g.linear, g.angular, center, half);
        g.clearance_m = d.is_finite().then_some(d);
        if d < cl.stop_m {
            g.halt(
                OverrideKind::EmergencyStop,
                format!("obstacle_at_{d:.1}m_{where_}"),
                format!(
                    "Movement stopped: obstacle detected {d:.2}m {where_} in the direction of motion. \
                     Consider turning or choosing a different direction."
                ),
            );
            return g;
        }
        let limit = proportional_speed(sp.fast_mps, d, cl.stop_m, cl.full_speed_m);
        if g.linear.abs() > limit {
            g.scale_to(
                limit,
                OverrideKind::ProportionalSlowdown,
                format!("slowed_obstacle_at_{d:.1}m_{where_}"),
                format!("Speed limited to {limit:.2} m/s: obstacle {d:.2}m {where_}."),
            );
            if g.linear == 0.0 {
                return g;
            }
        }
        let ttc = min_time_to_collision(scan, g.linear, g.angular);
        let t = &self.config.ttc;
        let cap = if ttc > t.full_s {
            None
        } else if ttc >= t.medium_s {
            Some(sp.medium_mps)
        } else if ttc >= t.slow_s {
            Some(sp.slow_mps)
        } else if ttc >= t.stop_s {
            Some(sp.creep_mps)
        } else {
            Some(0.0)
        };
        if let Some(cap) = cap {
            if g.linear.abs() > cap {
                let (kind, code, reason) = if cap == 0.0 {
                    (
                        OverrideKind::TtcStop,
                        "collision_predicted".to_owned(),
                        format!("Movement stopped: collision predicted in {ttc:.1} s."),
                    )
                } else {
                    (
                        OverrideKind::TtcLimit,
                        format!("ttc_{ttc:.1}s"),
                        format!("Speed limited to {cap:.2} m/s: time to collision {ttc:.1} s."),
                    )
                };
                g.scale_to(cap, kind, code, reason);
            }
        }
        if g.linear != 0.0 {
            let out = min_time_to_collision(scan, g.linear, g.angular);
            g.ttc_s = out.is_finite().then_some(out);
        }
        g
    }

    /// [`Self::guard`] plus the geofence: a motion whose sweep over the
    /// fence's horizon (1 s) from `pose` enters a keepout zone is stopped,
    /// and slowdown zones along it cap the speed.
    pub fn guard_with_zones(
        &self,
        target: &VelocityTarget,
        scan: &LaserScan,
        scan_age_s: f64,
        pose: Pose2,
        fence: &Geofence,
    ) -> GuardedVelocity {
        let mut g = self.guard(target, scan, scan_age_s);
        if g.linear == 0.0 {
            return g;
        }
        let sweep = fence.sweep(pose, g.linear, g.angular, fence.horizon_s());
        if let Some(zone) = sweep.keepout {
            g.halt(
                OverrideKind::GeofenceKeepout,
                "geofence_violation".into(),
                format!("Movement stopped: the path enters keepout zone '{zone}'."),
            );
            return g;
        }
        if let Some((cap, zone)) = sweep.speed_cap {
            if g.linear.abs() > cap {
                g.scale_to(
                    cap,
                    OverrideKind::GeofenceSlowdown,
                    "geofence_slowdown".into(),
                    format!("Speed limited to {cap:.2} m/s in slowdown zone '{zone}'."),
                );
            }
        }
        g
    }
}

#[cfg(test)]
pub(crate) mod tests;
