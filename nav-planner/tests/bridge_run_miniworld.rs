//! The bridge runner in Farama MiniWorld (a real 3D simulator): a few
//! ObjectNav episodes with the offline planner, judged by the simulator.
//! Skipped with a printed reason when miniworld is not importable by the
//! test Python (`$NAVKIT_PYTHON`, else `.venv/bin/python`, else
//! `python3`); `NAVKIT_REQUIRE_MINIWORLD=1` turns the skip into a failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// nav-planner declares Rust 1.88; its tests keep the workspace's 1.85 idioms (no let chains)

// the bridge test helpers are nav-hal's, shared by path
#[path = "../../nav-hal/tests/bridge_support/mod.rs"]
mod bridge_support;

use bridge_support::{bridge_command, miniworld_available};
use nav_hal::bridge::{BridgeConfig, BridgeHal};
use nav_planner::navigator::StepLog;
use nav_planner::navigator::bridge_run::{BridgeRunConfig, BridgeRunner};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_objectnav_in_miniworld() {
    if !miniworld_available("bridge_run_miniworld") {
        return;
    }
    let bridge = BridgeConfig { depth: true, ..BridgeConfig::default() };
    let mut hal = BridgeHal::spawn_command(&bridge_command("miniworld", &[]), bridge).await.expect("miniworld starts");
    let b = hal.backend().clone();
    assert_eq!(b.simulator, "miniworld");
    assert_eq!((b.agent_radius_m, b.camera_height_m), (Some(0.4), Some(1.5)), "the backend reports its agent");
    let mut runner = BridgeRunner::new(BridgeRunConfig { episodes: 4, ..BridgeRunConfig::default() }).unwrap();
    let report = runner.run(&mut hal, &mut StepLog::null(), &mut |_| {}).await.unwrap();
    eprintln!("{}", report.table());
    for e in &report.episodes {
        eprintln!("{}", e.line(4));
    }
    assert_eq!(report.aborted, None);
    assert_eq!(report.episodes.len(), 4);
    for e in &report.episodes {
        assert!(e.judged_by_simulator, "{e:?}");
        // MiniWorld's own geometry: geodesic from the start, path walked, collisions
        let geodesic = e.sim_metrics["geodesic_m"].as_f64().unwrap();
        assert!(geodesic >= 2.0, "targets are at least 2 m away: {e:?}");
        let path = e.sim_metrics["path_length_m"].as_f64().unwrap();
        assert!(path <= 0.25 * f64::from(e.steps) + 1e-9);
        if e.success {
            assert!(e.spl > 0.0 && e.spl <= 1.0 && (e.spl - geodesic / path.max(geodesic)).abs() < 1e-6, "{e:?}");
        } else {
            assert_eq!(e.spl, 0.0);
        }
    }
    assert!(report.aggregate.successes >= 1, "{}", report.table());
    hal.close().await.unwrap();
}
