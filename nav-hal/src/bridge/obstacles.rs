//! What the camera has shown, remembered: a simulator's camera misses a low
//! object once the robot is close to it (it drops below the image's bottom
//! edge 1–2 m away) and everything beside the robot outside its field of
//! view, so a scan made from the current depth image alone lets the robot
//! drive into both. [`SeenObstacles`] keeps every obstacle point depth and
//! detections showed this episode (pose-estimate frame, 5 cm cells) and
//! gives back those near the robot for the scan. A point on an obstacle
//! lower than the camera (a box, a ball, not a wall) comes back grown by
//! [`LOW_GROWTH_M`]: a simulator's collision body reaches past the surface
//! the camera sees (MiniWorld's is the circle around the mesh's bounding
//! box, 0.125 m past a ball's surface).

use nav_core::geometry::{Point2, Pose2};
use nav_core::lidar::LaserScan;
use std::collections::{HashMap, VecDeque};

/// Cell size of the remembered points, metres.
const CELL_M: f64 = 0.05;
/// Most cells remembered (the oldest go first): 20,000 cells of 5 cm are
/// 50 m², more wall and furniture than a simulated house shows up close.
const MAX_CELLS: usize = 20_000;
/// Scan returns farther than this are not remembered, metres (depth is
/// coarse far away, and far points do not matter for the next steps).
const REMEMBER_WITHIN_M: f32 = 4.0;

/// How far a point on a low obstacle is grown, metres (see the module docs).
pub(crate) const LOW_GROWTH_M: f64 = 0.125;

/// Points of a ring of radius `r` around `p`, and `p` itself.
pub(crate) fn ring(p: Point2, r: f64) -> impl Iterator<Item = Point2> {
    const POINTS: u32 = 12;
    std::iter::once(p).chain((0..POINTS).map(move |k| {
        let a = f64::from(k) * std::f64::consts::TAU / f64::from(POINTS);
        Point2::new(p.x + r * a.cos(), p.y + r * a.sin())
    }))
}

/// Obstacle points seen this episode, in 5 cm cells (see the module docs).
#[derive(Debug, Clone, Default)]
pub(crate) struct SeenObstacles {
    /// Cell → on an obstacle lower than the camera (any sighting said so).
    cells: HashMap<(i64, i64), bool>,
    order: VecDeque<(i64, i64)>,
}

impl SeenObstacles {
    /// Forgets everything (a new episode).
    pub(crate) fn clear(&mut self) {
        self.cells.clear();
        self.order.clear();
    }

    /// Remembers one point, on a `low` obstacle or not.
    pub(crate) fn add(&mut self, p: Point2, low: bool) {
        if !(p.x.is_finite() && p.y.is_finite() && p.x.abs() < 1e6 && p.y.abs() < 1e6) {
            return;
        }
        let cell = ((p.x / CELL_M).floor() as i64, (p.y / CELL_M).floor() as i64);
        if let Some(was_low) = self.cells.get_mut(&cell) {
            *was_low |= low;
        } else {
            self.cells.insert(cell, low);
            self.order.push_back(cell);
            if self.order.len() > MAX_CELLS {
                if let Some(old) = self.order.pop_front() {
                    self.cells.remove(&old);
                }
            }
        }
    }

    /// Remembers the returns of a scan taken at `pose` (within 4 m), with
    /// per beam whether it hit a low obstacle (missing flags: not low).
    pub(crate) fn add_scan(&mut self, pose: Pose2, scan: &LaserScan, low: &[bool]) {
        for (i, r) in scan.ranges.iter().enumerate() {
            if r.is_finite() && *r >= scan.range_min && *r < scan.range_max && *r <= REMEMBER_WITHIN_M {
                let a = pose.yaw + scan.angle_min + i as f64 * scan.angle_increment;
                let r = f64::from(*r);
                self.add(Point2::new(pose.x + r * a.cos(), pose.y + r * a.sin()), low.get(i).copied().unwrap_or(false));
            }
        }
    }

    /// The remembered points within `within` metres of `pose` (a low
    /// obstacle's grown by [`LOW_GROWTH_M`]), as (bearing relative to the
    /// robot's front, distance).
    pub(crate) fn near(&self, pose: Pose2, within: f64) -> impl Iterator<Item = (f64, f64)> + '_ {
        let here = pose.position();
        self.cells
            .iter()
            .filter_map(move |(&(i, j), &low)| {
                let c = Point2::new((i as f64 + 0.5) * CELL_M, (j as f64 + 0.5) * CELL_M);
                (c.distance(here) <= within + LOW_GROWTH_M).then_some((c, low))
            })
            .flat_map(|(c, low)| ring(c, LOW_GROWTH_M).take(if low { 13 } else { 1 }))
            .filter_map(move |p| {
                let d = here.distance(p);
                (d <= within).then(|| (pose.relative_bearing(p), d))
            })
    }

    /// How many cells are remembered.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.cells.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(ranges: Vec<f32>) -> LaserScan {
        let n = ranges.len();
        LaserScan { angle_min: -0.5, angle_increment: 1.0 / (n - 1) as f64, range_min: 0.05, range_max: 10.0, ranges }
    }

    #[test]
    fn points_are_kept_in_the_world_frame_and_given_back_near_the_robot() {
        let mut seen = SeenObstacles::default();
        // straight ahead 1 m away, seen from the origin facing +x
        let mut ranges = vec![f32::NAN; 11];
        ranges[5] = 1.0;
        ranges[0] = 9.0; // too far to remember
        seen.add_scan(Pose2::new(0.0, 0.0, 0.0), &scan(ranges), &[]);
        assert_eq!(seen.len(), 1);
        // after turning left a quarter turn, the point is on the right
        let near: Vec<(f64, f64)> = seen.near(Pose2::new(0.0, 0.0, std::f64::consts::FRAC_PI_2), 3.0).collect();
        assert_eq!(near.len(), 1);
        assert!((near[0].0 + std::f64::consts::FRAC_PI_2).abs() < 0.1, "{near:?}");
        assert!((near[0].1 - 1.0).abs() < 0.05, "{near:?}");
        assert_eq!(seen.near(Pose2::new(5.0, 0.0, 0.0), 3.0).count(), 0);
        seen.clear();
        assert_eq!(seen.len(), 0);
    }

    #[test]
    fn a_low_obstacle_comes_back_grown() {
        let mut seen = SeenObstacles::default();
        seen.add(Point2::new(1.0, 0.0), true);
        seen.add(Point2::new(-1.0, 0.0), false);
        let near: Vec<(f64, f64)> = seen.near(Pose2::origin(), 3.0).collect();
        assert_eq!(near.len(), 14, "13 points around the low one, 1 for the other");
        let nearest = near.iter().map(|(_, d)| *d).fold(f64::INFINITY, f64::min);
        assert!((nearest - (1.025 - LOW_GROWTH_M)).abs() < 0.01, "{nearest}");
    }

    #[test]
    fn memory_is_bounded_and_bad_points_are_ignored() {
        let mut seen = SeenObstacles::default();
        for k in 0..(MAX_CELLS + 500) {
            seen.add(Point2::new(k as f64 * CELL_M * 2.0, 0.0), false);
        }
        seen.add(Point2::new(f64::NAN, 0.0), true);
        seen.add(Point2::new(1e300, 0.0), true);
        assert_eq!(seen.len(), MAX_CELLS);
    }
}
