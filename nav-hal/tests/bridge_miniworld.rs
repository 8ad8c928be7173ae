//! BridgeHal driving Farama MiniWorld through `navkit_bridge --backend
//! miniworld`. Skipped (with a printed reason) when miniworld cannot be
//! imported by the test Python (`$NAVKIT_PYTHON`, else `.venv/bin/python`,
//! else `python3`); `NAVKIT_REQUIRE_MINIWORLD=1` turns the skip into a
//! failure (CI sets it after `ci/setup-bridge.sh`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod bridge_support;

use bridge_support::{bridge_command, miniworld_available};
use nav_core::action::Action;
use nav_hal::bridge::{BridgeConfig, BridgeHal, EpisodeSpec};
use nav_hal::hal::{Actuators, Sensors};

fn config() -> BridgeConfig {
    BridgeConfig { depth: true, ground_truth_pose: true, ..BridgeConfig::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn miniworld_episodes_through_the_bridge() {
    if !miniworld_available("bridge_miniworld") {
        return;
    }
    let mut hal = BridgeHal::spawn_command(&bridge_command("miniworld", &["--scene", "fourrooms,house"]), config())
        .await
        .expect("miniworld bridge starts");
    let b = hal.backend().clone();
    assert_eq!((b.name.as_str(), b.simulator.as_str()), ("miniworld", "miniworld"));
    assert_eq!((b.step.forward_m, b.step.turn_deg), (0.25, 30.0));
    assert_eq!((b.width, b.height), (320, 240));
    assert_eq!(b.scenes, ["fourrooms", "house"]);

    // Episodes are addressable: the same index gives the same episode.
    let first = hal.reset(&EpisodeSpec::index(1)).await.unwrap();
    assert_eq!((first.scene_id.as_str(), first.episode_id.as_str()), ("house", "house-1"));
    let again = hal.reset(&EpisodeSpec::index(1)).await.unwrap();
    assert_eq!(first, again);

    let frame = hal.rgb().await.unwrap();
    assert_eq!((frame.frame.width(), frame.frame.height()), (320, 240));
    let distinct: std::collections::HashSet<_> = frame.frame.as_bytes().chunks(3).collect();
    assert!(distinct.len() > 50, "a rendered 3D view, not a flat image ({} colours)", distinct.len());
    let depth = hal.depth().await.unwrap();
    let finite: Vec<f32> = depth.depth_m.iter().copied().filter(|d| d.is_finite()).collect();
    assert!(finite.len() > depth.depth_m.len() / 2 && finite.iter().all(|d| *d > 0.0 && *d < 30.0));

    // A panorama: 12 views, detections inside each view's field of view.
    let pano = hal.panorama(12).await.unwrap();
    assert_eq!(pano.views.len(), 12);
    let half_fov = pano.views[0].frame.hfov_rad / 2.0;
    for dets in hal.last_panorama_detections() {
        for d in dets {
            assert!(d.bearing_rad.abs() < half_fov + 0.6, "{d:?}");
            let [x0, y0, x1, y1] = d.bbox.unwrap();
            assert!(x0 <= x1 && x1 < 320 && y0 <= y1 && y1 < 240, "{d:?}");
        }
    }
    assert_eq!(hal.steps(), 0);

    // STOP at once: a failure whose distance_to_goal is the geodesic.
    hal.act(Action::Stop).await.unwrap();
    let m = hal.episode_metrics().unwrap().clone();
    assert!(!m.success && m.spl == 0.0);
    let geodesic = m.extra["geodesic_m"].as_f64().unwrap();
    assert!(geodesic >= 2.0);
    assert!((m.distance_to_goal.unwrap() - geodesic).abs() < 1e-9);

    // Walk up to a target seen in the first panorama and stop: success.
    let mut successes = 0;
    for index in 0..8u64 {
        let info = hal.reset(&EpisodeSpec::index(index)).await.unwrap();
        if approach_seen_target(&mut hal, &info.target_object).await {
            hal.act(Action::Stop).await.unwrap();
            let m = hal.episode_metrics().unwrap();
            assert!(m.success, "stopped next to the {} in {}: {m:?}", info.target_object, info.episode_id);
            assert!(m.spl > 0.3 && m.spl <= 1.0, "{m:?}");
            let path = m.extra["path_length_m"].as_f64().unwrap();
            assert!(path > 0.0 && path <= 0.25 * f64::from(hal.steps()) + 1e-9, "{m:?}");
            successes += 1;
            if successes == 2 {
                break;
            }
        }
    }
    assert!(successes >= 1, "no episode among the first 8 had its target in view from the start");
    let pid = hal.child_id().unwrap();
    hal.close().await.unwrap();
    assert!(!bridge_support::process_alive(pid));
}

/// Turns to face the target if a panorama sees it, then walks towards it
/// steering by its detection until within 0.6 m of its surface. False
/// when the target is not in view or the walk is blocked.
async fn approach_seen_target(hal: &mut BridgeHal, target: &str) -> bool {
    hal.panorama(12).await.unwrap();
    let Some(view) = hal.last_panorama_detections().iter().position(|d| d.iter().any(|d| d.label == target)) else {
        return false;
    };
    let turns = if view <= 6 { (view, Action::TurnLeft) } else { (12 - view, Action::TurnRight) };
    for _ in 0..turns.0 {
        hal.act(turns.1).await.unwrap();
    }
    for _ in 0..80 {
        let dets = hal.detections().await.unwrap();
        let Some(d) = dets.iter().find(|d| d.label == target) else {
            return false;
        };
        if d.distance_m < 0.6 {
            return true;
        }
        let action = if d.bearing_rad > 0.27 {
            Action::TurnLeft
        } else if d.bearing_rad < -0.27 {
            Action::TurnRight
        } else {
            Action::Forward
        };
        if hal.act(action).await.unwrap().collided {
            return d.distance_m < 1.0;
        }
    }
    false
}
