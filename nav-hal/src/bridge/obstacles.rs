//! What the camera has shown, remembered: a simulator's camera misses a low
//! object once the robot is close to it (it drops below the image's bottom
//! edge 1–2 m away) and everything beside the robot outside its field of
//! view, so a scan made from the current depth image alone lets the robot
//! drive into both. [`SeenObstacles`] keeps every obstacle point depth and
//! detections showed this episode (pose-estimate frame, 5 cm cells) and
//! gives back those near the robot for the scan.

use nav_core::geometry::{Point2, Pose2};
use nav_core::lidar::LaserScan;
use std::collections::{HashSet, VecDeque};

/// Cell size of the remembered points, metres.
const CELL_M: f64 = 0.05;
/// Most cells remembered (the oldest go first): 20,000 cells of 5 cm are
/// 50 m², more wall and furniture than a simulated house shows up close.
const MAX_CELLS: usize = 20_000;
/// Scan returns farther than this are not remembered, metres (depth is
/// coarse far away, and far points do not matter for the next steps).
const REMEMBER_WITHIN_M: f32 = 4.0;

/// Obstacle points seen this episode, in 5 cm cells (see the module docs).
#[derive(Debug, Clone, Default)]
pub(crate) struct SeenObstacles {
    cells: HashSet<(i64, i64)>,
    order: VecDeque<(i64, i64)>,
}

impl SeenObstacles {
    /// Forgets everything (a new episode).
    pub(crate) fn clear(&mut self) {
        self.cells.clear();
        self.order.clear();
    }

    /// Remembers one point.
    pub(crate) fn add(&mut self, p: Point2) {
        if !(p.x.is_finite() && p.y.is_finite() && p.x.abs() < 1e6 && p.y.abs() < 1e6) {
            return;
        }
        let cell = ((p.x / CELL_M).floor() as i64, (p.y / CELL_M).floor() as i64);
        if self.cells.insert(cell) {
            self.order.push_back(cell);
            if self.order.len() > MAX_CELLS {
                if let Some(old) = self.order.pop_front() {
                    self.cells.remove(&old);
                }
            }
        }
    }

    /// Remembers the returns of a scan taken at `pose` (within 4 m).
    pub(crate) fn add_scan(&mut self, pose: Pose2, scan: &LaserScan) {
        for (i, r) in scan.ranges.iter().enumerate() {
            if r.is_finite() && *r >= scan.range_min && *r < scan.range_max && *r <= REMEMBER_WITHIN_M {
                let a = pose.yaw + scan.angle_min + i as f64 * scan.angle_increment;
                let r = f64::from(*r);
                self.add(Point2::new(pose.x + r * a.cos(), pose.y + r * a.sin()));
            }
        }
    }

    /// The remembered points within `within` metres of `pose`, as (bearing
    /// relative to the robot's front, distance).
    pub(crate) fn near(&self, pose: Pose2, within: f64) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.cells.iter().filter_map(move |&(i, j)| {
            let c = Point2::new((i as f64 + 0.5) * CELL_M, (j as f64 + 0.5) * CELL_M);
            let d = pose.position().distance(c);
            (d <= within).then(|| (pose.relative_bearing(c), d))
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
        seen.add_scan(Pose2::new(0.0, 0.0, 0.0), &scan(ranges));
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
    fn memory_is_bounded_and_bad_points_are_ignored() {
        let mut seen = SeenObstacles::default();
        for k in 0..(MAX_CELLS + 500) {
            seen.add(Point2::new(k as f64 * CELL_M * 2.0, 0.0));
        }
        seen.add(Point2::new(f64::NAN, 0.0));
        seen.add(Point2::new(1e300, 0.0));
        assert_eq!(seen.len(), MAX_CELLS);
    }
}
