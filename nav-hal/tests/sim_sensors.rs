//! Sensors: LiDAR against analytic distances, depth, detections, panoramas,
//! coverage, geodesic distances and success.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use nav_core::action::Action;
use nav_core::geometry::{Point2, Pose2, Segment, ray_circle, ray_segment};
use nav_core::similarity::frame_similarity;
use nav_hal::arena::Arena;
use nav_hal::sim::{NoiseConfig, SimConfig, SimLidarConfig, SimWorld};
use proptest::prelude::*;
use std::f64::consts::{FRAC_PI_2, PI};

fn lidar_world(extra: &str) -> SimWorld {
    let arena = Arena::from_json_str(&format!(
        r#"{{"name": "single", "bounds": [-50, -50, 50, 50], {extra}, "start": {{"x": -5.0, "y": -5.0}}}}"#
    ))
    .unwrap();
    let cfg =
        SimConfig { lidar: SimLidarConfig { beams: 720, range_min: 0.05, range_max: 10.0 }, ..SimConfig::default() };
    SimWorld::new(arena, cfg).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn lidar_matches_analytic_wall_distance(
        x in -4.0f64..4.0, y in -4.0f64..4.0, yaw in -PI..PI,
        wall in prop::array::uniform4(-3.0f64..3.0),
    ) {
        let seg = Segment::new(Point2::new(wall[0], wall[1]), Point2::new(wall[2], wall[3]));
        prop_assume!(seg.length() > 0.05 && seg.distance_to_point(Point2::new(x, y)) > 0.2);
        let mut w = lidar_world(&format!(r#""walls": [[{}, {}, {}, {}]]"#, wall[0], wall[1], wall[2], wall[3]));
        w.teleport(Pose2::new(x, y, yaw)).unwrap();
        let scan = w.scan().scan;
        let o = Point2::new(x, y);
        let mut hits = 0;
        for (i, &r) in scan.ranges.iter().enumerate() {
            let a = yaw + scan.angle_min + i as f64 * scan.angle_increment;
            let expect = ray_segment(o, Point2::new(a.cos(), a.sin()), &seg).filter(|t| *t <= 10.0);
            match expect {
                Some(t) => {
                    hits += 1;
                    // Grazing beams at the very end of the wall may go either way.
                    if r.is_finite() {
                        prop_assert!((f64::from(r) - t).abs() < 1e-4, "beam {}: {} vs {}", i, r, t);
                    }
                }
                None => prop_assert!(r == f32::INFINITY || (seg.distance_to_point(o + Point2::new(a.cos(), a.sin()).scale(f64::from(r)))) < 1e-4, "beam {} read {} but the ray misses", i, r),
            }
        }
        prop_assert!(hits > 0 || scan.ranges.iter().all(|r| r.is_infinite()));
    }

    #[test]
    fn lidar_matches_analytic_circle_distance(
        x in -4.0f64..4.0, y in -4.0f64..4.0, yaw in -PI..PI,
        cx in -3.0f64..3.0, cy in -3.0f64..3.0, cr in 0.05f64..1.0,
    ) {
        let c = Point2::new(cx, cy);
        prop_assume!(Point2::new(x, y).distance(c) > cr + 0.2);
        let mut w = lidar_world(&format!(r#""obstacles": [{{"x": {cx}, "y": {cy}, "r": {cr}}}]"#));
        w.teleport(Pose2::new(x, y, yaw)).unwrap();
        let scan = w.scan().scan;
        let o = Point2::new(x, y);
        for (i, &r) in scan.ranges.iter().enumerate() {
            let a = yaw + scan.angle_min + i as f64 * scan.angle_increment;
            match ray_circle(o, Point2::new(a.cos(), a.sin()), c, cr).filter(|t| *t <= 10.0) {
                Some(t) => prop_assert!(r.is_infinite() || (f64::from(r) - t).abs() < 1e-4, "beam {}: {} vs {}", i, r, t),
                None => prop_assert!(r.is_infinite(), "beam {} read {} but misses", i, r),
            }
        }
    }

    #[test]
    fn geodesic_is_never_shorter_than_euclidean(
        arena in prop::sample::select(vec!["simple", "dead_end", "narrow_corridor", "house_a", "house_c"]),
        fx in 0.0f64..1.0, fy in 0.0f64..1.0,
    ) {
        let w = SimWorld::builtin(arena, SimConfig::default()).unwrap();
        let [x0, y0, x1, y1] = w.arena().bounds;
        let p = Point2::new(x0 + fx * (x1 - x0), y0 + fy * (y1 - y0));
        if let Some(g) = w.geodesic_to_goal(p) {
            let e = (w.distance_to_goal(p).unwrap() - w.arena().success_distance_m()).max(0.0);
            prop_assert!(g >= e - 1e-9, "{}: geodesic {} < euclidean {} at {:?}", arena, g, e, p);
        }
    }
}

#[test]
fn lidar_noise_is_seeded_and_ros_conventions_hold() {
    let cfg = SimConfig {
        noise: NoiseConfig { range_std_m: 0.02, seed: 9, ..NoiseConfig::default() },
        ..SimConfig::default()
    };
    let mut a = SimWorld::builtin("simple", cfg.clone()).unwrap();
    let mut b = SimWorld::builtin("simple", cfg).unwrap();
    let mut clean = SimWorld::builtin("simple", SimConfig::default()).unwrap();
    let (sa, sb, sc) = (a.scan().scan, b.scan().scan, clean.scan().scan);
    assert_eq!(sa, sb);
    assert_ne!(sa, sc);
    let diff: f64 = sa.ranges.iter().zip(&sc.ranges).map(|(x, y)| f64::from((x - y).abs())).sum::<f64>() / 720.0;
    assert!(diff > 0.005 && diff < 0.04, "mean abs noise {diff}");
    assert!(sc.header_is_valid() && (sc.angle_min + PI).abs() < 1e-12);
    // A 5 x 5 m room seen with a 12 m LiDAR: every beam returns.
    assert!(sc.ranges.iter().all(|r| r.is_finite() && *r >= sc.range_min));
}

#[test]
fn depth_is_perpendicular_distance_and_converts_to_millimetres() {
    // dead_end: start (-1.5, 1.0) facing north, the bounds wall 1.5 m ahead.
    let mut w = SimWorld::builtin("dead_end", SimConfig::default()).unwrap();
    let (rgb, depth) = w.rgbd();
    assert_eq!((depth.width, depth.height), (320, 240));
    assert_eq!((rgb.frame.width(), rgb.frame.height()), (320, 240));
    for x in [100, 160, 220] {
        let d = depth.at(x, 110).unwrap();
        assert!((d - 1.5).abs() < 1e-4, "column {x}: {d}");
    }
    let mm = depth.to_millimetres();
    assert_eq!(mm[110 * 320 + 160], 1500);
    assert_eq!(depth.median_m(160, 110, 2), Some(depth.at(160, 110).unwrap()));
    // The floor at the bottom row: f·h / (row offset) = 160 · 0.88 / 119.5.
    assert!((depth.at(160, 239).unwrap() - 1.178_242_7).abs() < 1e-4);
    // Aligned with the LiDAR: the front beam reads the same distance.
    let scan = w.scan().scan;
    assert!((scan.ranges[360] - 1.5).abs() < 1e-4);
}

#[test]
fn detections_respect_field_of_view_and_occlusion() {
    let mut w = SimWorld::builtin("house_a", SimConfig::default()).unwrap();
    // In the living room facing west: the tv is 36.9° to the left.
    w.teleport(Pose2::new(2.0, 3.0, PI)).unwrap();
    let dets = w.detections();
    let tv = dets.iter().find(|d| d.label == "tv").unwrap_or_else(|| panic!("{dets:?}"));
    assert!(tv.ground_truth);
    assert!((tv.bearing_rad - 0.6435).abs() < 1e-3, "{}", tv.bearing_rad);
    assert!((tv.distance_m - 1.65).abs() < 1e-9);
    let [x0, y0, x1, y1] = tv.bbox.unwrap();
    assert!(x0 < x1 && y0 < y1 && x1 < 160, "left half: {:?}", tv.bbox);
    // The label is drawn: white pixels inside the box.
    let frame = w.rgb().frame;
    let white = (x0..=x1)
        .flat_map(|x| (y0..=y1).map(move |y| (x, y)))
        .filter(|&(x, y)| frame.get(i64::from(x), i64::from(y)) == Some(nav_core::raster::Rgb::WHITE))
        .count();
    assert!(white > 20, "{white} label pixels");
    // Turned away, nothing of it.
    w.teleport(Pose2::new(2.0, 3.0, 0.0)).unwrap();
    assert!(w.detections().iter().all(|d| d.label != "tv"));
    // From the corridor the toilet is behind the bathroom wall.
    w.teleport(Pose2::new(4.5, 4.25, FRAC_PI_2)).unwrap();
    let dets = w.detections();
    assert!(dets.iter().all(|d| d.label != "toilet" && d.label != "sink"), "{dets:?}");
    // Through the bathroom door, it appears.
    w.teleport(Pose2::new(5.1, 4.6, FRAC_PI_2 + 0.5)).unwrap();
    assert!(w.detections().iter().any(|d| d.label == "toilet"), "{:?}", w.detections());
}

#[test]
fn panorama_views_turn_left_from_the_front() {
    let mut w = SimWorld::builtin("house_b", SimConfig::default()).unwrap();
    let pano = w.panorama(12).unwrap();
    assert_eq!(pano.views.len(), 12);
    assert!((pano.views[1].heading_rad - PI / 6.0).abs() < 1e-12);
    assert_eq!(pano.views[0].frame, w.rgb());
    for _ in 0..3 {
        w.act(Action::TurnLeft);
    }
    let turned = w.rgb().frame;
    assert!(frame_similarity(&turned, &pano.views[3].frame.frame) > 0.99);
    assert!(frame_similarity(&turned, &pano.views[0].frame.frame) < 0.95);
}

#[test]
fn coverage_grows_with_what_the_sensors_see() {
    let mut cam = SimWorld::builtin("exploration", SimConfig::default()).unwrap();
    assert_eq!(cam.coverage(), 0.0);
    cam.rgb();
    let one_view = cam.coverage();
    assert!(one_view > 0.1 && one_view < 0.4, "{one_view}");
    cam.panorama(12).unwrap();
    let pano = cam.coverage();
    let mut lidar = SimWorld::builtin("exploration", SimConfig::default()).unwrap();
    lidar.scan();
    let scan = lidar.coverage();
    assert!(scan > 0.7 && scan <= 1.0, "{scan}");
    assert!((pano - scan).abs() < 0.05, "panorama {pano} vs scan {scan}");
    // Moving on reveals more; looking again from the same spot does not.
    lidar.scan();
    assert_eq!(lidar.coverage(), scan);
    for _ in 0..6 {
        lidar.act(Action::Forward);
        lidar.scan();
    }
    assert!(lidar.coverage() > scan);
}

#[test]
fn geodesic_distances_follow_the_walls() {
    let simple = SimWorld::builtin("simple", SimConfig::default()).unwrap();
    let l = simple.geodesic_start_to_goal().unwrap();
    let straight = 18f64.sqrt() - 0.3;
    assert!(l >= straight && l < straight * 1.06, "simple: {l} vs {straight}");
    let dead_end = SimWorld::builtin("dead_end", SimConfig::default()).unwrap();
    let l = dead_end.geodesic_start_to_goal().unwrap();
    assert!(l > 5.0 && l < 6.2, "dead_end: {l}");
    let exploration = SimWorld::builtin("exploration", SimConfig::default()).unwrap();
    assert_eq!(exploration.geodesic_start_to_goal(), None);
    let house = SimWorld::builtin("house_a", SimConfig::default()).unwrap();
    assert!(house.geodesic_start_to_goal().unwrap() > 0.5);
    // Inside the success region the distance is (nearly) zero.
    assert!(simple.geodesic_to_goal(Point2::new(1.5, 1.45)).unwrap() < 0.1);
}

#[test]
fn success_is_judged_per_spec() {
    let mut w = SimWorld::builtin("simple", SimConfig::default()).unwrap();
    assert!(!w.is_success(w.ground_truth_pose()));
    assert!(w.is_success(Pose2::new(1.3, 1.5, 0.0)));
    assert!(!w.is_success(Pose2::new(1.9, 1.9, 0.0)));
    w.teleport(Pose2::new(1.3, 1.5, 0.0)).unwrap();
    assert!(w.is_success(w.ground_truth_pose()));
    let house = SimWorld::builtin("house_a", SimConfig::default()).unwrap();
    // tv at (0.4, 1.8), r = 0.35: 0.95 m from its surface succeeds.
    assert!(house.is_success(Pose2::new(1.7, 1.8, 0.0)));
    assert!(!house.is_success(Pose2::new(1.8, 1.8, 0.0)));
    assert_eq!(house.room_at(Point2::new(1.0, 1.0)), Some("living room"));
    assert!(!SimWorld::builtin("exploration", SimConfig::default()).unwrap().is_success(Pose2::origin()));
}
