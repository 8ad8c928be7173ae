//! [`DoorwayDetector`]: notices the robot passing through a narrow opening
//! (a door, the mouth of a corridor) from its LiDAR, so the spatial memory
//! can look at the scene right after a likely room change instead of
//! waiting for its periodic analysis.
//!
//! A step is *narrow* when the robot moves toward open space (the front
//! arc is free for at least [`DoorwayConfig::front_open_m`]) while the
//! nearest obstacles on its left and right (the arcs 45°–135° either side)
//! add up to at most [`DoorwayConfig::narrow_m`]: a door's two jambs, or
//! the walls of a narrow passage. A *crossing* is reported once the robot
//! has advanced [`DoorwayConfig::advance_m`] past the narrowest point and
//! the space around it has opened by [`DoorwayConfig::opening_m`]: the
//! LiDAR narrowed, then opened. Turning in place never counts (the front
//! must be open and the robot must advance), so facing a wall does not
//! look like a door.
//!
//! ```
//! use nav_core::doorway::{DoorwayConfig, DoorwayDetector};
//! use nav_core::geometry::Pose2;
//! use nav_core::lidar::LaserScan;
//!
//! // side walls `half` metres away, open ahead and behind
//! let corridor = |half: f32| {
//!     let mut s = LaserScan::full_circle(360, 0.05, 12.0, f32::INFINITY);
//!     for i in 0..s.len() {
//!         let a = s.angle(i);
//!         if a.sin().abs() > 0.3 {
//!             s.ranges[i] = half / a.sin().abs() as f32;
//!         }
//!     }
//!     s
//! };
//! let mut d = DoorwayDetector::new(DoorwayConfig::default());
//! assert!(!d.observe(Pose2::new(0.0, 0.0, 0.0), &corridor(2.0))); // a room
//! assert!(!d.observe(Pose2::new(0.25, 0.0, 0.0), &corridor(0.45))); // the door
//! assert!(!d.observe(Pose2::new(0.5, 0.0, 0.0), &corridor(2.0))); // just through
//! assert!(d.observe(Pose2::new(0.75, 0.0, 0.0), &corridor(2.0))); // inside: crossed
//! assert!(!d.observe(Pose2::new(1.0, 0.0, 0.0), &corridor(2.0))); // once
//! ```

use crate::geometry::{Point2, Pose2};
use crate::lidar::{ArcStat, LaserScan, arc_distance};
use serde::{Deserialize, Serialize};
use std::f64::consts::FRAC_PI_2;

/// Thresholds of [`DoorwayDetector`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DoorwayConfig {
    /// Left plus right clearance at or below this is a narrow passage,
    /// metres (1.2: doors are 0.8–1.2 m wide).
    pub narrow_m: f64,
    /// The front arc (±15°) must be free at least this far for a step to
    /// count as passing through, metres (0.6).
    pub front_open_m: f64,
    /// Distance to advance past the narrowest point before a crossing is
    /// reported, metres (0.4).
    pub advance_m: f64,
    /// How much wider than the narrowest point the space must be after it,
    /// metres (0.35).
    pub opening_m: f64,
}

impl Default for DoorwayConfig {
    fn default() -> Self {
        Self { narrow_m: 1.2, front_open_m: 0.6, advance_m: 0.4, opening_m: 0.35 }
    }
}

impl DoorwayConfig {
    /// Checks that every threshold is finite and positive.
    pub fn validate(&self) -> Result<(), crate::config::ConfigError> {
        use crate::config::in_range_above;
        in_range_above("narrow_m", self.narrow_m, 0.0, 10.0)?;
        in_range_above("front_open_m", self.front_open_m, 0.0, 10.0)?;
        in_range_above("advance_m", self.advance_m, 0.0, 10.0)?;
        in_range_above("opening_m", self.opening_m, 0.0, 10.0)
    }
}

/// See the [module docs](self).
#[derive(Debug, Clone, PartialEq)]
pub struct DoorwayDetector {
    config: DoorwayConfig,
    /// The narrowest passage width seen since the last crossing, and where.
    narrowest: Option<(f64, Point2)>,
}

impl DoorwayDetector {
    /// A detector with `config`.
    pub fn new(config: DoorwayConfig) -> Self {
        Self { config, narrowest: None }
    }

    /// Left plus right clearance: the nearest obstacle in the arcs 45°–135°
    /// to either side, added. `None` when a side sees nothing (open space).
    pub fn passage_width(scan: &LaserScan) -> Option<f64> {
        let side = |c: f64| f64::from(arc_distance(scan, c, std::f64::consts::FRAC_PI_4, ArcStat::Min));
        let w = side(FRAC_PI_2) + side(-FRAC_PI_2);
        w.is_finite().then_some(w)
    }

    /// Takes the scan of one step at `pose` (odometry); true when this
    /// step completed a crossing.
    pub fn observe(&mut self, pose: Pose2, scan: &LaserScan) -> bool {
        let c = &self.config;
        let here = pose.position();
        let width = Self::passage_width(scan);
        let front = f64::from(arc_distance(scan, 0.0, 15f64.to_radians(), ArcStat::Min));
        if let Some(w) = width.filter(|w| *w <= c.narrow_m && front >= c.front_open_m) {
            if self.narrowest.is_none_or(|(n, _)| w <= n) {
                self.narrowest = Some((w, here));
            }
            return false;
        }
        let Some((narrow, at)) = self.narrowest else { return false };
        let opened = width.is_none_or(|w| w >= narrow + c.opening_m);
        if opened && here.distance(at) >= c.advance_m {
            self.narrowest = None;
            return true;
        }
        // wandered off without passing through (backed out, turned away)
        if here.distance(at) > 3.0 {
            self.narrowest = None;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walls(left: f32, right: f32, front: f32) -> LaserScan {
        let mut s = LaserScan::full_circle(360, 0.05, 12.0, f32::INFINITY);
        for i in 0..s.len() {
            let a = s.angle(i);
            let (sn, cs) = a.sin_cos();
            let mut r = f32::INFINITY;
            if sn > 0.3 {
                r = r.min(left / sn as f32);
            }
            if sn < -0.3 {
                r = r.min(right / -sn as f32);
            }
            if cs > 0.3 {
                r = r.min(front / cs as f32);
            }
            s.ranges[i] = r;
        }
        s
    }

    #[test]
    fn turning_to_face_a_wall_is_not_a_door() {
        let mut d = DoorwayDetector::new(DoorwayConfig::default());
        // in a corner: walls close left and right, but a wall 0.4 m ahead
        for k in 0..6 {
            assert!(!d.observe(Pose2::new(0.0, 0.0, f64::from(k)), &walls(0.4, 0.5, 0.4)));
        }
        assert!(!d.observe(Pose2::new(0.0, 0.0, 0.0), &walls(3.0, 3.0, 3.0)));
    }

    #[test]
    fn a_corridor_entered_through_a_door_counts_once() {
        let mut d = DoorwayDetector::new(DoorwayConfig::default());
        let mut x = 0.0;
        let mut step = |d: &mut DoorwayDetector, l: f32, r: f32| {
            x += 0.25;
            d.observe(Pose2::new(x, 0.0, 0.0), &walls(l, r, 5.0))
        };
        assert!(!step(&mut d, 2.0, 2.0));
        assert!(!step(&mut d, 0.45, 0.45)); // door 0.9 m
        assert!(!step(&mut d, 0.75, 0.75)); // corridor 1.5 m wide, 0.25 m on
        assert!(step(&mut d, 0.75, 0.75)); // 0.5 m on: crossed
        for _ in 0..10 {
            assert!(!step(&mut d, 0.75, 0.75), "a corridor is not one door after another");
        }
    }

    #[test]
    fn backing_out_forgets_the_door() {
        let mut d = DoorwayDetector::new(DoorwayConfig::default());
        assert!(!d.observe(Pose2::new(0.0, 0.0, 0.0), &walls(0.45, 0.45, 5.0)));
        assert!(!d.observe(Pose2::new(0.1, 0.0, 0.0), &walls(2.0, 2.0, 5.0)), "not advanced far enough");
        // away from the door without passing it: still narrow-ish, not opened, more than 3 m off
        assert!(!d.observe(Pose2::new(3.5, 0.0, 0.0), &walls(0.5, 0.5, 0.3)));
        assert!(!d.observe(Pose2::new(3.8, 0.0, 0.0), &walls(3.0, 3.0, 5.0)), "forgotten");
    }
}
