//! BridgeHal's depth-derived scans and merged panorama detections, against
//! the `openroom` backend (an 8 × 8 m room; standard library Python only).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod bridge_support;

use bridge_support::bridge_command;
use nav_core::action::Action;
use nav_core::lidar::LaserScan;
use nav_hal::HalError;
use nav_hal::bridge::{BridgeConfig, BridgeHal, EpisodeSpec};
use nav_hal::hal::{Actuators, Sensors};

async fn openroom(config: BridgeConfig) -> BridgeHal {
    BridgeHal::spawn_command(&bridge_command("openroom", &[]), config).await.expect("openroom bridge starts")
}

fn covered(scan: &LaserScan) -> usize {
    scan.ranges.iter().filter(|r| !r.is_nan()).count()
}

fn beam(scan: &LaserScan, angle: f64) -> f32 {
    let n = scan.len() as f64;
    let i = ((angle - scan.angle_min) / scan.angle_increment).round().rem_euclid(n) as usize;
    scan.ranges[i]
}

#[tokio::test]
async fn scans_come_from_depth_a_fan_per_step_and_a_circle_after_a_panorama() {
    // what depth showed earlier is left out here (see the test after this one)
    let mut hal = openroom(BridgeConfig { depth: true, remember_obstacles: false, ..BridgeConfig::default() }).await;
    assert!(hal.capabilities().lidar, "with depth, the bridge offers scans");
    hal.reset(&EpisodeSpec::index(2)).await.unwrap();

    // the current view: a 90° fan of a closed room, no data elsewhere
    let fan = hal.scan().await.unwrap().scan;
    assert_eq!(fan.len(), 720);
    let n = covered(&fan);
    assert!((178..=184).contains(&n), "a 90° camera covers ~180 of 720 beams, got {n}");
    assert!(beam(&fan, 0.0).is_finite() && beam(&fan, 0.0) > 0.1 && beam(&fan, 0.0) < 8.0 * 1.5);
    assert!(beam(&fan, std::f64::consts::PI).is_nan());
    assert!(fan.ranges.iter().all(|r| r.is_nan() || (*r >= fan.range_min && *r <= 12.0)));

    // after a panorama: the full circle, agreeing with the fan where they overlap
    hal.panorama(12).await.unwrap();
    let circle = hal.scan().await.unwrap().scan;
    assert_eq!(covered(&circle), 720, "12 views of 90° cover everything");
    // (openroom's columns are ~6° wide, and where views overlap the nearest reading wins, so the circle may
    // read a little nearer than one view)
    let agrees = |circle: f32, view: f32| circle <= view + 0.05 && circle >= 0.8 * view;
    for deg in [-40.0f64, -20.0, 0.0, 20.0, 40.0] {
        let a = deg.to_radians();
        assert!(agrees(beam(&circle, a), beam(&fan, a)), "{deg}°: {} vs {}", beam(&circle, a), beam(&fan, a));
    }
    // an 8 m square room: nothing farther than its diagonal
    assert!(circle.ranges.iter().all(|r| *r > 0.1 && f64::from(*r) < 8.0 * 2f64.sqrt() + 0.1));

    // acting ends the panorama's validity: the scan is the new view's fan again
    hal.act(Action::TurnLeft).await.unwrap();
    let fan2 = hal.scan().await.unwrap().scan;
    assert!(covered(&fan2) < 200);
    // turning left 30° moved what was 30° left of the front to straight ahead, and so on round the circle
    assert!(agrees(beam(&circle, 30f64.to_radians()), beam(&fan2, 0.0)));
    for k in 2..12 {
        hal.act(Action::TurnLeft).await.unwrap();
        let fan = hal.scan().await.unwrap().scan;
        let a = f64::from(k) * 30f64.to_radians();
        assert!(agrees(beam(&circle, a), beam(&fan, 0.0)), "{}°: {} vs {}", k * 30, beam(&circle, a), beam(&fan, 0.0));
    }
    hal.close().await.unwrap();
}

/// What depth showed stays in the scan after the robot turns away: every
/// wall point within 3 m that the panorama saw is in the next step's scan,
/// beyond the camera's view too; nothing farther is added.
#[tokio::test]
async fn what_depth_showed_stays_in_the_scan_within_3_m() {
    let mut hal = openroom(BridgeConfig { depth: true, ..BridgeConfig::default() }).await;
    let mut checked = 0;
    for index in 0..8 {
        hal.reset(&EpisodeSpec::index(index)).await.unwrap();
        hal.panorama(12).await.unwrap();
        let circle = hal.scan().await.unwrap().scan;
        hal.act(Action::TurnLeft).await.unwrap();
        let fan = hal.scan().await.unwrap().scan;
        let turn = 30f64.to_radians();
        for i in 0..circle.len() {
            let (a, r) = (circle.angle(i), circle.ranges[i]);
            // seen by the panorama within 3 m (5 cm cells: a little slack), now at a - 30°
            if r.is_finite() && r < 2.8 {
                // remembered points are 5 cm cells: look a cell either side
                let half = (0.075 / f64::from(r)).atan().max(1.5f64.to_radians());
                let beams = (half / 0.5f64.to_radians()).ceil() as i32;
                let now = (-beams..=beams)
                    .map(|k| beam(&fan, a - turn + f64::from(k) * 0.5f64.to_radians()))
                    .filter(|r| r.is_finite())
                    .fold(f32::INFINITY, f32::min);
                assert!(now <= r + 0.1, "episode {index}, {:.0}°: {r} then {now}", a.to_degrees());
                checked += 1;
            }
        }
        // outside the ~90° view only remembered points, all within 3 m
        for i in 0..fan.len() {
            let off = fan.angle(i).abs();
            if off > 50f64.to_radians() && fan.ranges[i].is_finite() {
                assert!(fan.ranges[i] <= 3.05, "{}", fan.ranges[i]);
            }
        }
    }
    assert!(checked > 0, "some start lies within 3 m of a wall");
    hal.close().await.unwrap();
}

#[tokio::test]
async fn detections_around_are_merged_and_relative_to_the_front() {
    let mut hal = openroom(BridgeConfig { depth: true, ..BridgeConfig::default() }).await;
    for index in 0..6 {
        let info = hal.reset(&EpisodeSpec::index(index)).await.unwrap();
        let around = hal.detections_around(12).await.unwrap();
        let targets: Vec<_> = around.iter().filter(|d| d.label == info.target_object).collect();
        assert_eq!(targets.len(), 1, "one target, seen by several overlapping views: {around:?}");
        let t = targets[0].clone();
        assert!(t.bearing_rad.abs() <= std::f64::consts::PI && t.distance_m > 0.0);
        // turn toward it; the current view then sees it at about the bearing left to turn
        let turns = (t.bearing_rad.to_degrees() / 30.0).round() as i32;
        let action = if turns > 0 { Action::TurnLeft } else { Action::TurnRight };
        for _ in 0..turns.abs() {
            hal.act(action).await.unwrap();
        }
        let now = hal.detections().await.unwrap();
        let seen = now.iter().find(|d| d.label == info.target_object).expect("in view after turning toward it");
        let left = t.bearing_rad - f64::from(turns) * 30f64.to_radians();
        assert!((seen.bearing_rad - left).abs() < 0.05, "{} vs {left}", seen.bearing_rad);
        assert!((seen.distance_m - t.distance_m).abs() < 0.3, "{} vs {}", seen.distance_m, t.distance_m);
    }
    hal.close().await.unwrap();
}

#[tokio::test]
async fn a_blocked_step_is_a_contact_in_the_scan() {
    // (what depth showed is left out: the wall ran into would be remembered too)
    let mut hal = openroom(BridgeConfig { depth: true, remember_obstacles: false, ..BridgeConfig::default() }).await;
    hal.reset(&EpisodeSpec::index(1)).await.unwrap();
    let mut blocked = false;
    for _ in 0..60 {
        if hal.act(Action::Forward).await.unwrap().collided {
            blocked = true;
            break;
        }
    }
    assert!(blocked, "walking straight on reaches a wall or the target");
    // openroom's agent radius is 0.2 m: the contact sits 0.2 + 0.75 × 0.25 m straight ahead
    assert_eq!(hal.contacts().len(), 1);
    let scan = hal.scan().await.unwrap().scan;
    // (the wall it ran into may read nearer than that: the nearer hit wins)
    assert!(beam(&scan, 0.0) <= 0.3875 + 1e-4, "{}", beam(&scan, 0.0));
    // it stays where it was as the robot turns: 90° to the right after a left turn of 90°, grown by
    // 0.1 m (where the body met the obstacle is a guess)
    for _ in 0..3 {
        hal.act(Action::TurnLeft).await.unwrap();
    }
    let scan = hal.scan().await.unwrap().scan;
    let right = beam(&scan, -std::f64::consts::FRAC_PI_2);
    assert!((0.2875 - 0.01..=0.3875 + 1e-3).contains(&right), "{right}");
    // a new episode forgets it; with the bumper off there is none
    hal.reset(&EpisodeSpec::index(1)).await.unwrap();
    assert!(hal.contacts().is_empty());
    hal.close().await.unwrap();
    let mut hal = openroom(BridgeConfig { depth: true, bumper: false, ..BridgeConfig::default() }).await;
    hal.reset(&EpisodeSpec::index(1)).await.unwrap();
    for _ in 0..60 {
        if hal.act(Action::Forward).await.unwrap().collided {
            break;
        }
    }
    assert!(hal.contacts().is_empty());
    hal.close().await.unwrap();
}

#[tokio::test]
async fn without_depth_there_is_no_scan() {
    let mut hal = openroom(BridgeConfig::default()).await;
    assert!(!hal.capabilities().lidar);
    hal.reset(&EpisodeSpec::index(0)).await.unwrap();
    let err = hal.scan().await.unwrap_err();
    assert!(matches!(err, HalError::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("BridgeConfig::depth"), "{err}");
    // a bad depth-scan setting is refused before anything starts
    let bad = BridgeConfig {
        depth_scan: nav_hal::depth_scan::DepthScanConfig { beams: 1, ..Default::default() },
        ..BridgeConfig::default()
    };
    let err = BridgeHal::spawn_command(&bridge_command("openroom", &[]), bad).await.unwrap_err();
    assert!(err.to_string().contains("bridge.depth_scan.beams"), "{err}");
    hal.close().await.unwrap();
}
