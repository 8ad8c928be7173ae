//! `check_path_clear`, answered from the LiDAR alone.
//!
//! - `clear`: no obstacle return in the direction's ±30° arc nearer than
//!   the requested distance (nor nearer than the reject clearance, 0.5 m);
//! - `obstacle_distance_m`: the nearest return in the arc (`null` when the
//!   arc has none);
//! - `obstacle_type`: `"wall"` when the surface of that nearest return is
//!   contiguous over at least `clearance.wall_min_width_m` (0.5 m) inside
//!   the arc, `"obstacle"` for a narrower object, `"none"` without a
//!   return, `"unknown"` without usable data. The type
//!   describes the surface, not the distance (a wall 1.2 m away is still
//!   a wall), so it is classified by extent;
//! - `traversable_width_m`: 0 when not clear; otherwise the free width of
//!   the corridor along the direction up to the requested distance — the
//!   nearest return on each side of the centre line among all beams whose
//!   projection on it lies in `(0, distance]`, each side capped at 2 m;
//! - `recommendation`: one sentence for the VLM.

use crate::config::ClearanceConfig;
use crate::config::SafetyConfig;
use crate::executor::feedback::round2;
use crate::guard::blind_in_arc;
use nav_core::geometry::normalize_angle;
use nav_core::lidar::{ArcStat, Direction, LaserScan, arc_distance};
use serde::{Deserialize, Serialize};

/// Kind of the nearest return in a checked direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObstacleType {
    /// A contiguous surface at least `wall_min_width_m` wide.
    Wall,
    /// A narrower object.
    Obstacle,
    /// Nothing returned in the arc.
    None,
    /// No usable (fresh, valid) LiDAR data.
    Unknown,
}

/// The perception result of `check_path_clear`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathCheck {
    /// Traversable up to the requested distance.
    pub clear: bool,
    /// Nearest return in the arc, m.
    pub obstacle_distance_m: Option<f64>,
    /// What it is.
    pub obstacle_type: ObstacleType,
    /// Free corridor width, m (0 when not clear).
    pub traversable_width_m: f64,
    /// Advice for the VLM.
    pub recommendation: String,
}

/// Cap on each side of the corridor width, m.
const SIDE_CAP_M: f64 = 2.0;

/// Answers `check_path_clear(direction, distance_m)`.
pub fn check_path(
    config: &SafetyConfig,
    scan: &LaserScan,
    scan_age_s: f64,
    direction: Direction,
    distance_m: f64,
) -> PathCheck {
    let cl = &config.clearance;
    let distance_m = if distance_m.is_finite() { distance_m.clamp(0.5, 5.0) } else { 0.5 };
    let half = cl.arc_half_width_deg.to_radians();
    let (center, _) = direction.arc();
    let fresh = scan_age_s.is_finite() && scan_age_s <= config.sensors.max_scan_age_s && scan.header_is_valid();
    let strict = ClearanceConfig { min_valid_beams: cl.min_valid_beams.max(1), ..cl.clone() };
    if !fresh || blind_in_arc(scan, center, half, &strict, "").is_some() {
        return PathCheck {
            clear: false,
            obstacle_distance_m: None,
            obstacle_type: ObstacleType::Unknown,
            traversable_width_m: 0.0,
            recommendation: format!(
                "No usable LiDAR data toward {}; cannot confirm the path. Stop and wait, or choose another direction.",
                direction.as_str()
            ),
        };
    }
    let d = f64::from(arc_distance(scan, center, half, ArcStat::Min));
    let clear = d >= distance_m && d >= cl.reject_m;
    let obstacle_type =
        if d.is_finite() { classify(scan, center, half, cl.wall_min_width_m) } else { ObstacleType::None };
    let width = if clear { corridor_width(scan, center, distance_m) } else { 0.0 };
    let recommendation = if clear {
        if width < 2.0 * cl.reject_m {
            format!("Path clear for {distance_m:.1}m but narrow ({width:.2}m wide); use slow speed.")
        } else {
            format!("Path clear for {distance_m:.1}m.")
        }
    } else {
        let alts = alternatives(config, scan, direction);
        let try_ = match alts.as_slice() {
            [] => "No other direction is clear either; consider rotate or navigate_to_goal.".to_owned(),
            [a] => format!("Try {a}."),
            [a, b, ..] => format!("Try {a} or {b}."),
        };
        if d >= cl.reject_m {
            format!("Obstacle at {d:.1}m {}: only short moves are possible. {try_}", direction.as_str())
        } else {
            format!("Direction blocked. {try_}")
        }
    };
    PathCheck {
        clear,
        obstacle_distance_m: d.is_finite().then(|| round2(d)),
        obstacle_type,
        traversable_width_m: round2(width),
        recommendation,
    }
}

/// The other directions whose arc clearance is at least the full-speed
/// distance (else at least the reject distance), best first, at most two.
fn alternatives(config: &SafetyConfig, scan: &LaserScan, exclude: Direction) -> Vec<&'static str> {
    let half = config.clearance.arc_half_width_deg.to_radians();
    let mut scored: Vec<(f64, Direction)> = Direction::ALL
        .iter()
        .filter(|&&d| d != exclude && d != Direction::Backward)
        .map(|&d| (f64::from(arc_distance(scan, d.arc().0, half, ArcStat::Min)), d))
        .filter(|(c, _)| *c >= config.clearance.reject_m)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(2).map(|(_, d)| d.as_str()).collect()
}

/// Classifies the surface of the nearest return in the arc by its extent.
fn classify(scan: &LaserScan, center: f64, half: f64, wall_min_width_m: f64) -> ObstacleType {
    // Beams in the arc in angular order: (relative angle, angle, obstacle range).
    let mut beams: Vec<(f64, f64, Option<f64>)> = (0..scan.len())
        .filter_map(|i| {
            let a = scan.angle(i);
            let rel = normalize_angle(a - center);
            (rel.abs() <= half + 1e-9).then(|| (rel, a, scan.obstacle(scan.ranges[i]).map(f64::from)))
        })
        .collect();
    beams.sort_by(|x, y| x.0.total_cmp(&y.0));
    let Some(i0) = beams
        .iter()
        .enumerate()
        .filter_map(|(i, b)| b.2.map(|r| (i, r)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
    else {
        return ObstacleType::None;
    };
    let joined = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(x), Some(y)) => (x - y).abs() <= 0.1 + 0.1 * x.min(y),
        _ => false,
    };
    let (mut lo, mut hi) = (i0, i0);
    while lo > 0 && joined(beams[lo - 1].2, beams[lo].2) {
        lo -= 1;
    }
    while hi + 1 < beams.len() && joined(beams[hi].2, beams[hi + 1].2) {
        hi += 1;
    }
    let point = |(_, a, r): (f64, f64, Option<f64>)| {
        let r = r.unwrap_or(0.0);
        (r * a.cos(), r * a.sin())
    };
    let (p, q) = (point(beams[lo]), point(beams[hi]));
    let width = (p.0 - q.0).hypot(p.1 - q.1);
    if width >= wall_min_width_m { ObstacleType::Wall } else { ObstacleType::Obstacle }
}

/// Free width across the direction `center` over `(0, length]` ahead.
fn corridor_width(scan: &LaserScan, center: f64, length: f64) -> f64 {
    let (s, c) = center.sin_cos();
    let (mut left, mut right) = (SIDE_CAP_M, SIDE_CAP_M);
    for (a, r) in scan.obstacle_beams() {
        let r = f64::from(r);
        let (x, y) = (r * a.cos(), r * a.sin());
        let along = x * c + y * s;
        let lateral = -x * s + y * c;
        if along > 0.0 && along <= length {
            if lateral >= 0.0 {
                left = left.min(lateral);
            } else {
                right = right.min(-lateral);
            }
        }
    }
    left + right
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_of(f: impl Fn(f64) -> f32) -> LaserScan {
        let mut s = LaserScan::full_circle(720, 0.05, 12.0, 0.0);
        for i in 0..720 {
            s.ranges[i] = f(s.angle(i));
        }
        s
    }

    #[test]
    fn wall_ahead_is_a_wall_and_blocks() {
        // A wall across the front at 1.2 m, corridor walls at ±0.6 m.
        let s = scan_of(|a| {
            let front = if a.cos() > 0.0 { 1.2 / a.cos() } else { f64::INFINITY };
            let side = 0.6 / a.sin().abs().max(1e-9);
            front.min(side) as f32
        });
        let cfg = SafetyConfig::default();
        let r = check_path(&cfg, &s, 0.0, Direction::Forward, 2.0);
        assert!(!r.clear);
        assert_eq!(r.obstacle_distance_m, Some(1.2));
        assert_eq!(r.obstacle_type, ObstacleType::Wall);
        assert_eq!(r.traversable_width_m, 0.0);
        // Only 1.2 m is checked: clear, and the corridor is 1.2 m wide.
        let r = check_path(&cfg, &s, 0.0, Direction::Forward, 1.0);
        assert!(r.clear, "{r:?}");
        assert!((r.traversable_width_m - 1.2).abs() < 0.02, "{r:?}");
        assert_eq!(r.recommendation, "Path clear for 1.0m.");
    }

    #[test]
    fn a_post_is_an_obstacle_and_alternatives_are_named() {
        // Open room (4 m), a 10 cm post 0.4 m straight ahead.
        let s = scan_of(|a| {
            let y = 0.4 * a.tan();
            if a.cos() > 0.0 && y.abs() < 0.05 { (0.4 / a.cos()) as f32 } else { 4.0 }
        });
        let r = check_path(&SafetyConfig::default(), &s, 0.0, Direction::Forward, 1.0);
        assert!(!r.clear);
        assert_eq!(r.obstacle_type, ObstacleType::Obstacle);
        assert!(r.recommendation.starts_with("Direction blocked. Try "), "{}", r.recommendation);
        assert!(!r.recommendation.contains("Try forward "));
        // Free space: none.
        let open = LaserScan::full_circle(360, 0.05, 12.0, f32::INFINITY);
        let r = check_path(&SafetyConfig::default(), &open, 0.0, Direction::Left, 5.0);
        assert!(r.clear);
        assert_eq!((r.obstacle_type, r.obstacle_distance_m, r.traversable_width_m), (ObstacleType::None, None, 4.0));
        // Stale data: unknown.
        let r = check_path(&SafetyConfig::default(), &open, 9.0, Direction::Left, 5.0);
        assert_eq!((r.clear, r.obstacle_type), (false, ObstacleType::Unknown));
    }
}
