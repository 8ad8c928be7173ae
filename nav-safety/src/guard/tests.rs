use super::*;
use nav_core::lidar::{ArcStat, arc_distance};
use proptest::prelude::*;
use std::f64::consts::TAU;

fn guard() -> ContinuousGuard {
    ContinuousGuard::new(SafetyConfig::default())
}

/// 360 beams, one per degree, beam `i` at `-180° + i`; `range_min` 1 cm.
fn ring() -> LaserScan {
    LaserScan::full_circle(360, 0.01, 12.0, f32::INFINITY)
}

/// Index of the beam at `deg` (CCW) in [`ring`].
fn at(deg: i32) -> usize {
    (180 + deg).rem_euclid(360) as usize
}

fn fwd(v: f64) -> VelocityTarget {
    VelocityTarget { linear: v, angular: 0.0, duration_s: 3.0 }
}

#[test]
fn free_space_passes_unchanged() {
    let g = guard().guard(&fwd(0.18), &ring(), 0.1);
    assert_eq!((g.linear, g.angular), (0.18, 0.0));
    assert!(g.overrides.is_empty());
    assert_eq!(g.clearance_m, None);
}

#[test]
fn emergency_stop_in_the_direction_of_motion_only() {
    let mut s = ring();
    s.ranges[at(0)] = 0.28;
    let g = guard().guard(&fwd(0.12), &s, 0.0);
    assert_eq!((g.linear, g.angular), (0.0, 0.0));
    let stop = g.stop().unwrap();
    assert_eq!(stop.kind, OverrideKind::EmergencyStop);
    assert_eq!(stop.code, "obstacle_at_0.3m_ahead");
    assert_eq!(stop.from, 0.12);
    // Backing away from it is allowed.
    let g = guard().guard(&fwd(-0.12), &s, 0.0);
    assert_eq!(g.linear, -0.12);
    // An obstacle behind stops backward motion, not forward motion.
    let mut s = ring();
    s.ranges[at(180)] = 0.2;
    assert_eq!(guard().guard(&fwd(-0.08), &s, 0.0).stop().unwrap().code, "obstacle_at_0.2m_behind");
    assert_eq!(guard().guard(&fwd(0.08), &s, 0.0).linear, 0.08);
    // A pure rotation next to a wall is not stopped.
    let mut s = ring();
    s.ranges.iter_mut().for_each(|r| *r = 0.15);
    let spin = VelocityTarget { linear: 0.0, angular: 0.5, duration_s: 2.0 };
    assert_eq!(guard().guard(&spin, &s, 0.0).angular, 0.5);
}

#[test]
fn curved_motion_checks_the_turn_side() {
    // Obstacle at 50° left, 0.25 m: outside the straight ±30° arc, inside
    // the arc of a tight left curve.
    let mut s = ring();
    s.ranges[at(50)] = 0.25;
    assert_eq!(guard().guard(&fwd(0.06), &s, 0.0).linear, 0.06);
    let left = VelocityTarget { linear: 0.06, angular: 0.45, duration_s: 3.0 };
    assert_eq!(guard().guard(&left, &s, 0.0).stop().unwrap().kind, OverrideKind::EmergencyStop);
    let right = VelocityTarget { linear: 0.06, angular: -0.45, duration_s: 3.0 };
    assert_ne!(guard().guard(&right, &s, 0.0).linear, 0.0);
}

#[test]
fn proportional_scaling_between_stop_and_full_distance() {
    let mut s = ring();
    s.ranges[at(0)] = 0.65;
    let g = guard().guard(&VelocityTarget { linear: 0.18, angular: 0.2, duration_s: 3.0 }, &s, 0.0);
    assert!((g.linear - 0.09).abs() < 1e-6, "{g:?}");
    assert!((g.angular - 0.1).abs() < 1e-6, "curvature kept: {g:?}");
    assert_eq!(g.overrides[0].kind, OverrideKind::ProportionalSlowdown);
    // A slow command already below the limit is left alone.
    let g = guard().guard(&fwd(0.08), &s, 0.0);
    assert_eq!(g.linear, 0.08);
    assert!(g.overrides.is_empty());
}

#[test]
fn ttc_tier_boundaries() {
    // Obstacle at 60°: closing speed 0.18 · cos 60° = 0.09 m/s, outside the
    // ±30° arc so that only TTC acts. TTC = r / 0.09.
    let cases = [
        (5.1, 0.18, None),
        (4.9, 0.12, Some(OverrideKind::TtcLimit)),
        (2.1, 0.12, Some(OverrideKind::TtcLimit)),
        (1.9, 0.08, Some(OverrideKind::TtcLimit)),
        (1.3, 0.08, Some(OverrideKind::TtcLimit)),
        (1.1, 0.05, Some(OverrideKind::TtcLimit)),
        (0.6, 0.05, Some(OverrideKind::TtcLimit)),
        (0.4, 0.0, Some(OverrideKind::TtcStop)),
    ];
    for (ttc, want, kind) in cases {
        let mut s = ring();
        s.ranges[at(60)] = (ttc * 0.09) as f32;
        let g = guard().guard(&fwd(0.18), &s, 0.0);
        assert!((g.linear - want).abs() < 1e-9, "ttc {ttc}: {g:?}");
        assert_eq!(g.overrides.first().map(|o| o.kind), kind, "ttc {ttc}");
    }
}

#[test]
fn stale_or_blind_scans_stop_motion() {
    let g = guard().guard(&fwd(0.1), &ring(), 5.5);
    assert_eq!(g.stop().unwrap().kind, OverrideKind::SensorLoss);
    assert_eq!(g.stop().unwrap().reason, "Movement stopped: no LiDAR scan for 5.5 s.");
    assert_eq!(guard().guard(&fwd(0.1), &ring(), f64::NAN).linear, 0.0);
    let spin = VelocityTarget { linear: 0.0, angular: 0.3, duration_s: 1.0 };
    assert_eq!(guard().guard(&spin, &ring(), 9.0).angular, 0.0);
    let mut s = ring();
    s.ranges.iter_mut().for_each(|r| *r = f32::NAN);
    let g = guard().guard(&fwd(0.1), &s, 0.0);
    assert_eq!(g.stop().unwrap().kind, OverrideKind::Blind);
    let mut bad = ring();
    bad.angle_increment = 0.0;
    assert_eq!(guard().guard(&fwd(0.1), &bad, 0.0).stop().unwrap().kind, OverrideKind::SensorLoss);
}

#[test]
fn too_few_valid_beams_in_the_direction_of_motion_is_a_sensor_fault() {
    // two thirds of the front arc invalid (NaN: rosbridge's null), the rest open
    let mut s = ring();
    for deg in -30..=10 {
        s.ranges[at(deg)] = f32::NAN;
    }
    // the default only asks for one valid beam: this still drives
    assert_eq!(guard().guard(&fwd(0.1), &s, 0.0).linear, 0.1);
    let strict = SafetyConfig {
        clearance: crate::config::ClearanceConfig { min_valid_fraction: 0.5, ..Default::default() },
        ..SafetyConfig::default()
    };
    let g = ContinuousGuard::new(strict.clone()).guard(&fwd(0.1), &s, 0.0);
    let stop = g.stop().expect("a sensor fault ahead stops");
    assert_eq!(stop.kind, OverrideKind::Blind);
    assert!(stop.reason.contains("only 20 of 61 LiDAR readings ahead are valid"), "{}", stop.reason);
    // backing away from the fault is allowed (the rear is valid)
    assert_eq!(ContinuousGuard::new(strict.clone()).guard(&fwd(-0.1), &s, 0.0).linear, -0.1);
    // a fully valid front drives at the strict setting too
    assert_eq!(ContinuousGuard::new(strict).guard(&fwd(0.1), &ring(), 0.0).linear, 0.1);
    assert_eq!(valid_beams_in_arc(&s, 0.0, 30f64.to_radians()), (20, 61));
}

#[test]
fn caps_and_invalid_commands() {
    let g = guard().guard(&VelocityTarget { linear: 1.0, angular: 2.0, duration_s: 1.0 }, &ring(), 0.0);
    assert_eq!(g.linear, 0.18);
    assert_eq!(g.angular, 0.36);
    assert_eq!(g.overrides.iter().map(|o| o.kind).collect::<Vec<_>>(), [OverrideKind::SpeedCap]);
    let g = guard().guard(&VelocityTarget { linear: 0.1, angular: 0.9, duration_s: 1.0 }, &ring(), 0.0);
    assert_eq!(g.angular, 0.5);
    let g = guard().guard(&VelocityTarget { linear: f64::NAN, angular: 0.1, duration_s: 1.0 }, &ring(), 0.0);
    assert_eq!((g.linear, g.angular), (0.0, 0.0));
    assert_eq!(g.overrides[0].kind, OverrideKind::InvalidCommand);
}

#[test]
fn zones_stop_and_slow() {
    use crate::geofence::ZoneKind;
    use nav_core::geometry::Point2;
    let mut fence = Geofence::default();
    let rect = |x0: f64, x1: f64| {
        vec![Point2::new(x0, -1.0), Point2::new(x1, -1.0), Point2::new(x1, 1.0), Point2::new(x0, 1.0)]
    };
    fence.add_zone("stairs", ZoneKind::Keepout, rect(0.15, 1.0)).unwrap();
    let g = guard().guard_with_zones(&fwd(0.18), &ring(), 0.0, Pose2::origin(), &fence);
    assert_eq!(g.stop().unwrap().kind, OverrideKind::GeofenceKeepout);
    assert!(g.stop().unwrap().reason.contains("'stairs'"));
    let mut fence = Geofence::default();
    fence.add_zone("kitchen", ZoneKind::Slowdown { max_speed_mps: 0.05 }, rect(0.1, 3.0)).unwrap();
    let g = guard().guard_with_zones(&fwd(0.18), &ring(), 0.0, Pose2::origin(), &fence);
    assert_eq!(g.linear, 0.05);
    assert_eq!(g.overrides[0].kind, OverrideKind::GeofenceSlowdown);
}

fn arb_range() -> impl Strategy<Value = f32> {
    prop_oneof![
        6 => 0.0f32..4.0,
        1 => Just(f32::NAN),
        1 => Just(f32::INFINITY),
        1 => Just(f32::NEG_INFINITY),
        1 => Just(0.0f32),
        1 => 12.0f32..100.0,
    ]
}

pub(crate) fn arb_scan() -> impl Strategy<Value = LaserScan> {
    (36usize..=360, -PI..PI, prop::bool::weighted(0.95)).prop_flat_map(|(n, angle_min, full)| {
        let inc = if full { TAU / n as f64 } else { 0.5 * TAU / n as f64 };
        proptest::collection::vec(arb_range(), n).prop_map(move |ranges| LaserScan {
            angle_min,
            angle_increment: inc,
            range_min: 0.05,
            range_max: 12.0,
            ranges,
        })
    })
}

pub(crate) fn arb_speed() -> impl Strategy<Value = f64> {
    prop_oneof![8 => -0.5f64..0.5, 1 => Just(0.0), 1 => Just(f64::NAN), 1 => Just(f64::INFINITY), 1 => Just(-1e9)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    #[test]
    fn guard_invariants(
        scan in arb_scan(),
        linear in arb_speed(),
        angular in prop_oneof![8 => -2.0f64..2.0, 1 => Just(0.0), 1 => Just(f64::NAN)],
        age in prop_oneof![9 => 0.0f64..7.0, 1 => Just(f64::NAN)],
    ) {
        let gd = guard();
        let cfg = gd.config().clone();
        let target = VelocityTarget { linear, angular, duration_s: 3.0 };
        let g = gd.guard(&target, &scan, age);
        // Caps, finiteness, never faster, never reversed.
        prop_assert!(g.linear.is_finite() && g.angular.is_finite());
        prop_assert!(g.linear.abs() <= cfg.speeds.max_linear_mps + 1e-12);
        prop_assert!(g.angular.abs() <= cfg.speeds.max_angular_rad_s + 1e-12);
        if linear.is_finite() && angular.is_finite() {
            prop_assert!(g.linear.abs() <= linear.abs() + 1e-12);
            prop_assert!(g.linear * linear >= 0.0);
        }
        if g.linear != 0.0 {
            // Never any motion toward an obstacle nearer than the stop
            // distance in the direction of motion, nor blind, nor stale.
            prop_assert!(age <= cfg.sensors.max_scan_age_s && scan.header_is_valid());
            // (a straight reverse measures its footprint's corridor instead of the arc)
            let (c, h) = gd.motion_arc(g.linear, g.angular).unwrap();
            let d = if g.linear < 0.0 && g.angular == 0.0 {
                let w = cfg.clearance.reverse_corridor_half_width_m;
                f64::from(nav_core::lidar::corridor_clearance_dir(&scan, PI, w)) + w
            } else {
                f64::from(arc_distance(&scan, c, h, ArcStat::Min))
            };
            prop_assert!(d >= cfg.clearance.stop_m, "moving at {} toward an obstacle at {}", g.linear, d);
            prop_assert!(usable_beams_in_arc(&scan, c, h) >= 1);
            let limit = proportional_speed(cfg.speeds.fast_mps, d, cfg.clearance.stop_m, cfg.clearance.full_speed_m);
            prop_assert!(g.linear.abs() <= limit + 1e-9);
            prop_assert!(min_time_to_collision(&scan, g.linear, g.angular) >= cfg.ttc.stop_s);
        }
        if g.linear == 0.0 && g.angular == 0.0 && (linear != 0.0 || angular != 0.0) {
            prop_assert!(!g.overrides.is_empty(), "a stop without an override record");
        }
    }
}

/// [`ring`] with walls along both sides at `lateral` metres, from 1 m
/// behind to 0.3 m ahead (a slot the robot backs out of).
fn slot(lateral: f64) -> LaserScan {
    let mut s = ring();
    for i in 0..s.ranges.len() {
        let a = s.angle(i);
        if a.sin().abs() < 1e-6 {
            continue;
        }
        let r = lateral / a.sin().abs();
        if (-1.0..=0.3).contains(&(r * a.cos())) {
            s.ranges[i] = r as f32;
        }
    }
    s
}

#[test]
fn a_straight_reverse_checks_its_swept_corridor_not_the_arc() {
    // Boxes 0.22 m either side (4 cm beside a 0.18 m robot): the ±30° arc
    // behind sees them at 0.44 m and would slow the back-out to a crawl;
    // the 0.2 m corridor behind is clear.
    let s = slot(0.22);
    assert!(f64::from(arc_distance(&s, PI, 30f64.to_radians(), ArcStat::Min)) < 0.45);
    let g = guard().guard(&fwd(-0.12), &s, 0.0);
    assert!(g.stop().is_none() && !g.has(OverrideKind::ProportionalSlowdown), "{g:?}");
    assert!(g.linear < 0.0);
    // Boxes inside the corridor (0.15 m either side) stop it at once.
    let g = guard().guard(&fwd(-0.12), &slot(0.15), 0.0);
    assert_eq!(g.stop().map(|o| o.kind), Some(OverrideKind::EmergencyStop), "{g:?}");
    // A return straight behind keeps its range as the distance: 0.28 m stops, 0.6 m slows.
    let mut s = ring();
    s.ranges[at(180)] = 0.28;
    assert_eq!(guard().guard(&fwd(-0.12), &s, 0.0).stop().unwrap().code, "obstacle_at_0.3m_behind");
    s.ranges[at(180)] = 0.6;
    let g = guard().guard(&fwd(-0.18), &s, 0.0);
    assert!((g.clearance_m.unwrap() - 0.6).abs() < 1e-6 && g.has(OverrideKind::ProportionalSlowdown), "{g:?}");
    // A curved reverse still checks its (widened) arc: the side box stops it.
    let curve = VelocityTarget { linear: -0.12, angular: 0.4, duration_s: 1.0 };
    assert!(guard().guard(&curve, &slot(0.22), 0.0).stop().is_some());
}
