//! Geofences: named keepout and slowdown polygons in the
//! map frame.
//!
//! A navigation goal inside a keepout zone is rejected with the zone's
//! name. A velocity command is checked by *sweeping* it: the unicycle
//! model is integrated exactly from the current pose over the command's
//! duration (the executor) or a short horizon (the continuous guard) and
//! every sample point is tested. The robot is treated as a point, so draw
//! zones with a margin of the robot's half width. A sweep that starts
//! inside a keepout zone may move within it — otherwise a robot that
//! finds itself inside a freshly drawn zone could never leave.
//!
//! ```
//! use nav_core::geometry::{Point2, Pose2};
//! use nav_safety::geofence::{Geofence, ZoneKind};
//! let mut fence = Geofence::default();
//! let square = |x: f64| vec![Point2::new(x, -1.0), Point2::new(x + 1.0, -1.0), Point2::new(x + 1.0, 1.0), Point2::new(x, 1.0)];
//! fence.add_zone("stairs", ZoneKind::Keepout, square(1.0))?;
//! assert_eq!(fence.check_goal(Point2::new(1.5, 0.0)).unwrap_err().zone, "stairs");
//! // 0.18 m/s for 8 s straight ahead reaches x = 1.44: inside the zone.
//! let sweep = fence.sweep(Pose2::origin(), 0.18, 0.0, 8.0);
//! assert_eq!(sweep.keepout.as_deref(), Some("stairs"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::config::GeofenceConfig;
/// Zone kinds are configuration data; they live with the rest of it in [`crate::config`].
pub use crate::config::ZoneKind;
use crate::error::SafetyError;
use nav_core::geometry::{Point2, Pose2, point_in_polygon};
use serde::{Deserialize, Serialize};

/// A named zone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Zone {
    /// Unique name.
    pub name: String,
    /// Keepout or slowdown.
    pub kind: ZoneKind,
    /// Vertices in the map frame (at least three, non-zero area).
    pub polygon: Vec<Point2>,
}

impl Zone {
    /// True when `p` lies inside the polygon.
    pub fn contains(&self, p: Point2) -> bool {
        point_in_polygon(p, &self.polygon)
    }
}

/// A rejected goal: it lies in a keepout zone.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GeofenceViolation {
    /// Name of the zone.
    pub zone: String,
    /// The message: "Goal is inside keepout zone 'NAME'".
    pub message: String,
}

/// The result of sweeping a velocity command.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Sweep {
    /// The first keepout zone the sweep enters (not counting zones that
    /// contain the start point).
    pub keepout: Option<String>,
    /// Time after the start at which it enters, s.
    pub enters_after_s: Option<f64>,
    /// The tightest slowdown limit along the sweep and its zone.
    pub speed_cap: Option<(f64, String)>,
}

/// The pose reached from `pose` after driving `linear` m/s and `angular`
/// rad/s for `t` seconds (exact unicycle arc).
pub fn integrate_unicycle(pose: Pose2, linear: f64, angular: f64, t: f64) -> Pose2 {
    let th = pose.yaw;
    if (angular * t).abs() < 1e-9 {
        return Pose2::new(pose.x + linear * t * th.cos(), pose.y + linear * t * th.sin(), th + angular * t);
    }
    let r = linear / angular;
    let th2 = th + angular * t;
    Pose2::new(pose.x + r * (th2.sin() - th.sin()), pose.y - r * (th2.cos() - th.cos()), th2)
}

/// The set of zones plus the sweep parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Geofence {
    zones: Vec<Zone>,
    horizon_s: f64,
    step_s: f64,
}

impl Default for Geofence {
    fn default() -> Self {
        let c = GeofenceConfig::default();
        Self { zones: Vec::new(), horizon_s: c.horizon_s, step_s: c.sample_step_s }
    }
}

/// At most this many samples per sweep (bounds the work for long commands).
const MAX_SAMPLES: usize = 4096;

impl Geofence {
    /// Builds the fence from a configuration, validating every zone.
    pub fn new(config: &GeofenceConfig) -> Result<Self, SafetyError> {
        let mut fence = Self { zones: Vec::new(), horizon_s: config.horizon_s, step_s: config.sample_step_s };
        for z in &config.zones {
            let polygon = z.polygon.iter().map(|&[x, y]| Point2::new(x, y)).collect();
            if fence.zone(&z.name).is_some() {
                return Err(SafetyError::InvalidZone { name: z.name.clone(), reason: "duplicate zone name".into() });
            }
            fence.add_zone(&z.name, z.kind, polygon)?;
        }
        Ok(fence)
    }

    /// Adds a zone, replacing one of the same name.
    pub fn add_zone(&mut self, name: &str, kind: ZoneKind, polygon: Vec<Point2>) -> Result<(), SafetyError> {
        if let Some(reason) = crate::config::zone_problem(name, kind, &polygon) {
            return Err(SafetyError::InvalidZone { name: name.to_owned(), reason: reason.to_owned() });
        }
        self.zones.retain(|z| z.name != name);
        self.zones.push(Zone { name: name.to_owned(), kind, polygon });
        Ok(())
    }

    /// Removes a zone; true when it existed.
    pub fn remove_zone(&mut self, name: &str) -> bool {
        let before = self.zones.len();
        self.zones.retain(|z| z.name != name);
        self.zones.len() != before
    }

    /// All zones in insertion order.
    pub fn zones(&self) -> &[Zone] {
        &self.zones
    }

    /// A zone by name.
    pub fn zone(&self, name: &str) -> Option<&Zone> {
        self.zones.iter().find(|z| z.name == name)
    }

    /// The sweep horizon of the continuous guard, s.
    pub fn horizon_s(&self) -> f64 {
        self.horizon_s
    }

    /// The first keepout zone containing `p`.
    pub fn keepout_at(&self, p: Point2) -> Option<&Zone> {
        self.zones.iter().find(|z| z.kind == ZoneKind::Keepout && z.contains(p))
    }

    /// The tightest slowdown limit at `p` and its zone.
    pub fn speed_cap_at(&self, p: Point2) -> Option<(f64, &Zone)> {
        self.zones
            .iter()
            .filter_map(|z| match z.kind {
                ZoneKind::Slowdown { max_speed_mps } if z.contains(p) => Some((max_speed_mps, z)),
                _ => None,
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
    }

    /// Rejects a navigation goal inside a keepout zone.
    pub fn check_goal(&self, goal: Point2) -> Result<(), GeofenceViolation> {
        match self.keepout_at(goal) {
            Some(z) => Err(GeofenceViolation {
                zone: z.name.clone(),
                message: format!("Goal is inside keepout zone '{}'", z.name),
            }),
            None => Ok(()),
        }
    }

    /// Sweeps a velocity command from `pose` for `duration_s` seconds.
    /// Non-finite input sweeps nothing (the guard stops such commands).
    pub fn sweep(&self, pose: Pose2, linear: f64, angular: f64, duration_s: f64) -> Sweep {
        let mut out = Sweep::default();
        if self.zones.is_empty()
            || !(linear.is_finite() && angular.is_finite() && duration_s.is_finite() && duration_s > 0.0)
            || !(pose.x.is_finite() && pose.y.is_finite() && pose.yaw.is_finite())
        {
            return out;
        }
        let start = pose.position();
        let inside_at_start: Vec<bool> = self.zones.iter().map(|z| z.contains(start)).collect();
        let n = ((duration_s / self.step_s).ceil() as usize).clamp(1, MAX_SAMPLES);
        let dt = duration_s / n as f64;
        let moving = linear != 0.0;
        for k in 0..=n {
            let t = k as f64 * dt;
            let p = if k == 0 { start } else { integrate_unicycle(pose, linear, angular, t).position() };
            for (z, &inside0) in self.zones.iter().zip(&inside_at_start) {
                if !z.contains(p) {
                    continue;
                }
                match z.kind {
                    ZoneKind::Keepout if moving && !inside0 && out.keepout.is_none() => {
                        out.keepout = Some(z.name.clone());
                        out.enters_after_s = Some(t);
                    }
                    ZoneKind::Slowdown { max_speed_mps }
                        if out.speed_cap.as_ref().is_none_or(|c| max_speed_mps < c.0) =>
                    {
                        out.speed_cap = Some((max_speed_mps, z.name.clone()));
                    }
                    _ => {}
                }
            }
            if out.keepout.is_some() {
                break;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ZoneConfig;
    use proptest::prelude::*;
    use std::f64::consts::FRAC_PI_2;

    fn rect(x0: f64, y0: f64, x1: f64, y1: f64) -> Vec<Point2> {
        vec![Point2::new(x0, y0), Point2::new(x1, y0), Point2::new(x1, y1), Point2::new(x0, y1)]
    }

    #[test]
    fn unicycle_quarter_circle() {
        // ω = v / r with r = 1: after a quarter period the robot is at (1, 1) facing +y.
        let p = integrate_unicycle(Pose2::origin(), 1.0, 1.0, FRAC_PI_2);
        assert!((p.x - 1.0).abs() < 1e-12 && (p.y - 1.0).abs() < 1e-12 && (p.yaw - FRAC_PI_2).abs() < 1e-12);
        let q = integrate_unicycle(Pose2::new(1.0, 2.0, FRAC_PI_2), 0.5, 0.0, 2.0);
        assert!((q.x - 1.0).abs() < 1e-12 && (q.y - 3.0).abs() < 1e-12);
    }

    #[test]
    fn zones_validate_and_load_from_config() {
        let mut f = Geofence::default();
        assert!(matches!(
            f.add_zone("", ZoneKind::Keepout, rect(0.0, 0.0, 1.0, 1.0)),
            Err(SafetyError::InvalidZone { .. })
        ));
        assert!(
            f.add_zone(
                "line",
                ZoneKind::Keepout,
                vec![Point2::new(0.0, 0.0), Point2::new(1.0, 1.0), Point2::new(2.0, 2.0)]
            )
            .is_err()
        );
        assert!(
            f.add_zone(
                "nan",
                ZoneKind::Keepout,
                vec![Point2::new(f64::NAN, 0.0), Point2::new(1.0, 0.0), Point2::new(1.0, 1.0)]
            )
            .is_err()
        );
        assert!(f.add_zone("neg", ZoneKind::Slowdown { max_speed_mps: -1.0 }, rect(0.0, 0.0, 1.0, 1.0)).is_err());
        let cfg = GeofenceConfig {
            zones: vec![
                ZoneConfig {
                    name: "a".into(),
                    kind: ZoneKind::Keepout,
                    polygon: vec![[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]],
                },
                ZoneConfig {
                    name: "a".into(),
                    kind: ZoneKind::Keepout,
                    polygon: vec![[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]],
                },
            ],
            ..GeofenceConfig::default()
        };
        assert!(matches!(Geofence::new(&cfg), Err(SafetyError::InvalidZone { .. })));
        assert!(f.add_zone("z", ZoneKind::Keepout, rect(0.0, 0.0, 1.0, 1.0)).is_ok());
        assert!(f.add_zone("z", ZoneKind::Slowdown { max_speed_mps: 0.05 }, rect(0.0, 0.0, 1.0, 1.0)).is_ok());
        assert_eq!(f.zones().len(), 1);
        assert!(f.remove_zone("z") && !f.remove_zone("z"));
    }

    #[test]
    fn sweeps_find_keepouts_and_slowdowns() {
        let mut f = Geofence::default();
        f.add_zone("kitchen", ZoneKind::Slowdown { max_speed_mps: 0.05 }, rect(0.5, -1.0, 3.0, 1.0)).unwrap();
        f.add_zone("stairs", ZoneKind::Keepout, rect(2.0, -1.0, 3.0, 1.0)).unwrap();
        let s = f.sweep(Pose2::origin(), 0.18, 0.0, 1.0);
        assert_eq!(s, Sweep::default());
        let s = f.sweep(Pose2::origin(), 0.18, 0.0, 5.0);
        assert_eq!(s.speed_cap, Some((0.05, "kitchen".into())));
        assert_eq!(s.keepout, None);
        let s = f.sweep(Pose2::origin(), 0.18, 0.0, 12.0);
        assert_eq!(s.keepout.as_deref(), Some("stairs"));
        let t = s.enters_after_s.unwrap();
        assert!((t - 2.0 / 0.18).abs() < 0.06, "{t}");
        // Facing away: nothing.
        assert_eq!(f.sweep(Pose2::new(0.0, 0.0, std::f64::consts::PI), 0.18, 0.0, 12.0).keepout, None);
        // Starting inside the keepout: free to move (and leave).
        assert_eq!(f.sweep(Pose2::new(2.5, 0.0, 0.0), -0.18, 0.0, 8.0).keepout, None);
        // Spinning in place never enters.
        assert_eq!(f.sweep(Pose2::new(1.95, 0.0, 0.0), 0.0, 0.5, 8.0).keepout, None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]

        #[test]
        fn goals_inside_keepouts_are_always_rejected(
            x0 in -5.0f64..5.0, y0 in -5.0f64..5.0, w in 0.1f64..3.0, h in 0.1f64..3.0,
            gx in -10.0f64..10.0, gy in -10.0f64..10.0,
        ) {
            let mut f = Geofence::default();
            f.add_zone("z", ZoneKind::Keepout, rect(x0, y0, x0 + w, y0 + h)).unwrap();
            let inside = gx > x0 && gx < x0 + w && gy > y0 && gy < y0 + h;
            let r = f.check_goal(Point2::new(gx, gy));
            if inside {
                prop_assert_eq!(r.map_err(|v| v.zone), Err("z".to_owned()));
            }
        }

        #[test]
        fn accepted_sweeps_never_end_inside_a_keepout(
            x in -3.0f64..3.0, y in -3.0f64..3.0, yaw in -3.2f64..3.2,
            v in -0.2f64..0.2, w in -0.6f64..0.6, d in 0.0f64..8.0,
        ) {
            let mut f = Geofence::default();
            f.add_zone("z", ZoneKind::Keepout, rect(-0.5, -0.5, 0.5, 0.5)).unwrap();
            let pose = Pose2::new(x, y, yaw);
            let s = f.sweep(pose, v, w, d);
            let start_inside = f.keepout_at(pose.position()).is_some();
            if s.keepout.is_none() && !start_inside && v != 0.0 {
                let end = integrate_unicycle(pose, v, w, d);
                prop_assert!(f.keepout_at(end.position()).is_none());
            }
        }
    }
}
