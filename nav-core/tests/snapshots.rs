//! Snapshot tests of the text nav-core produces for prompts: the LiDAR
//! summary for three hand-made scans and the grid run-length encoding.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use nav_core::geometry::Point2;
use nav_core::grid::{CellState, GridPos, OccupancyGrid};
use nav_core::lidar::{AffordanceScores, LaserScan, LidarConfig, LidarSummary};
use std::f64::consts::PI;

/// Range to a square room's walls (half-size `h`) from its centre.
fn square_room(n: usize, h: f64) -> LaserScan {
    let mut s = LaserScan::full_circle(n, 0.05, 12.0, f32::INFINITY);
    for i in 0..n {
        let a = s.angle(i);
        let (c, sn) = (a.cos().abs(), a.sin().abs());
        s.ranges[i] = (h / c.max(sn)) as f32;
    }
    s
}

#[test]
fn lidar_summary_corridor_with_doorway() {
    // A 1.2 m wide corridor along x; a 0.9 m doorway on the left at x ∈ [1.55, 2.45].
    let mut s = LaserScan::full_circle(720, 0.05, 12.0, f32::INFINITY);
    for i in 0..720 {
        let a = s.angle(i);
        let (c, sn) = (a.cos(), a.sin());
        let mut r = f64::INFINITY;
        if sn > 1e-9 {
            let t = 0.6 / sn;
            let x = t * c;
            r = if (1.55..=2.45).contains(&x) { 4.0 / sn } else { t };
        } else if sn < -1e-9 {
            r = 0.6 / -sn;
        }
        if c < -1e-9 {
            r = r.min(3.0 / -c); // the corridor is closed 3 m behind
        }
        s.ranges[i] = if r.is_finite() && r <= 12.0 { r as f32 } else { f32::INFINITY };
    }
    let sum = LidarSummary::from_scan(&s, &LidarConfig::default());
    insta::assert_snapshot!(sum.to_text());
}

#[test]
fn lidar_summary_square_room_off_centre() {
    let mut s = square_room(360, 2.0);
    // a chair 0.7 m to the right, 20 cm wide
    for i in 0..360 {
        let a = s.angle(i);
        if (a + PI / 2.0).abs() < 0.14 {
            s.ranges[i] = 0.7;
        }
    }
    let sum = LidarSummary::from_scan(&s, &LidarConfig::default());
    insta::assert_snapshot!(format!("{}\n{}", sum.to_text(), AffordanceScores::from_scan(&s).to_text()));
}

#[test]
fn lidar_summary_dirty_scan() {
    // An open space with sensor junk: NaN, zeros, -inf near the front-left and a blind back sector.
    let mut s = LaserScan::full_circle(720, 0.15, 8.0, f32::INFINITY);
    for i in 0..720 {
        let a = s.angle(i).to_degrees();
        s.ranges[i] = match i % 5 {
            0 => f32::NAN,
            1 => 0.0,
            _ if (25.0..35.0).contains(&a) => f32::NEG_INFINITY,
            _ if a.abs() > 170.0 => f32::NAN,
            _ if (-80.0..-40.0).contains(&a) => 1.4,
            _ => f32::INFINITY,
        };
    }
    let sum = LidarSummary::from_scan(&s, &LidarConfig::default());
    insta::assert_snapshot!(sum.to_text());
}

#[test]
fn grid_rle_encoding() {
    let mut g = OccupancyGrid::new(12, 6, 0.1, Point2::new(0.0, 0.0)).unwrap();
    for x in 0..12 {
        g.set(GridPos::new(x, 0), CellState::Wall, 1.0);
        g.set(GridPos::new(x, 5), CellState::Wall, 1.0);
    }
    for y in 1..5 {
        for x in 0..7 {
            g.set(GridPos::new(x, y), CellState::Free, 0.8);
        }
    }
    for x in 1..4 {
        g.mark_visited(g.grid_to_world(GridPos::new(x, 2)));
    }
    g.set(GridPos::new(5, 3), CellState::Obstacle, 0.9);
    let rle = g.to_rle();
    assert_eq!(OccupancyGrid::decode_rle(&rle, 12, 6).unwrap().len(), 72);
    insta::assert_snapshot!(rle);
}
