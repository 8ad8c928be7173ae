//! BridgeHal against a real Python child process: the `navkit_bridge`
//! package's `openroom` backend (standard library only, so these run
//! wherever `python3` exists) and fault-injecting servers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod bridge_support;

use bridge_support::{bridge_command, package_dir, process_alive, python, script_command};
use nav_core::action::Action;
use nav_hal::HalError;
use nav_hal::bridge::{BridgeCommand, BridgeConfig, BridgeHal, EpisodeSpec, RgbEncoding};
use nav_hal::hal::{Actuators, Panorama, Sensors};
use std::io::BufRead;
use std::time::Duration;

fn config() -> BridgeConfig {
    BridgeConfig { depth: true, step_timeout_s: 20.0, ..BridgeConfig::default() }
}

async fn openroom(config: BridgeConfig) -> BridgeHal {
    BridgeHal::spawn_command(&bridge_command("openroom", &[]), config).await.expect("openroom bridge starts")
}

#[tokio::test]
async fn python_unit_tests_pass() {
    let out = std::process::Command::new(python())
        .args(["-m", "unittest", "discover", "-s", "tests", "-t", "."])
        .current_dir(package_dir())
        .output()
        .expect("python runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "python unittest failed:\n{stderr}");
    assert!(stderr.contains("OK"), "{stderr}");
}

#[tokio::test]
async fn handshake_reports_backend_and_action_space() {
    let mut hal = openroom(config()).await;
    let b = hal.backend().clone();
    assert_eq!(b.name, "openroom");
    assert_eq!((b.step.forward_m, b.step.turn_deg), (0.25, 30.0));
    assert_eq!((b.width, b.height), (16, 12));
    assert!(b.observation.depth && !b.observation.pose && b.observation.detections);
    let caps = hal.capabilities();
    assert!(caps.discrete_actions && caps.rgb && caps.depth && caps.panorama && caps.detections);
    assert!(!caps.pose_is_ground_truth && !caps.velocity);
    // no laser, but with depth on `scan` is derived from depth
    assert!(caps.lidar);
    assert_eq!((b.agent_radius_m, b.camera_height_m), (Some(0.2), None));
    assert!(hal.child_id().is_some());
    let t = hal.ping().await.unwrap();
    assert!(t.round_trip >= t.backend);
    hal.close().await.unwrap();
}

#[tokio::test]
async fn reset_step_and_panorama_round_trips() {
    let mut hal = openroom(config()).await;
    let info = hal.reset(&EpisodeSpec::index(3)).await.unwrap();
    assert_eq!((info.episode_id.as_str(), info.scene_id.as_str()), ("openroom-3", "openroom"));
    assert_eq!((info.index, info.seed, info.max_steps), (Some(3), Some(3), Some(500)));
    assert!(!info.target_object.is_empty());
    let frame = hal.rgb().await.unwrap();
    assert_eq!((frame.frame.width(), frame.frame.height()), (16, 12));
    assert!((frame.hfov_rad - 90f64.to_radians()).abs() < 1e-9);
    let depth = hal.depth().await.unwrap();
    assert_eq!((depth.width, depth.height), (16, 12));
    assert!(depth.depth_m.iter().all(|d| d.is_finite() && *d > 0.0 && *d < 12.0));

    let out = hal.act(Action::Forward).await.unwrap();
    let odom = hal.odometry().await.unwrap();
    assert!(!odom.ground_truth);
    if !out.collided {
        assert!((out.moved_m - 0.25).abs() < 1e-9);
        assert!((odom.pose.x - 0.25).abs() < 1e-9 && odom.pose.y.abs() < 1e-9);
    }
    hal.act(Action::TurnLeft).await.unwrap();
    let odom = hal.odometry().await.unwrap();
    assert!((odom.pose.yaw_deg() - 30.0).abs() < 1e-9);
    assert_eq!(hal.steps(), 2);

    let pano = hal.panorama(12).await.unwrap();
    assert_eq!(pano.views.len(), 12);
    for (view, heading) in pano.views.iter().zip(Panorama::headings(12)) {
        assert!((view.heading_rad - heading).abs() < 1e-9, "{} vs {heading}", view.heading_rad);
        assert_eq!(view.frame.frame.width(), 16);
    }
    // The target is somewhere around: some view sees it.
    assert!(hal.last_panorama_detections().iter().flatten().any(|d| d.label == info.target_object));
    assert_eq!(hal.steps(), 2, "panorama turns are not steps");
    assert_eq!(hal.odometry().await.unwrap().pose, odom.pose, "panorama restores the heading");

    hal.act(Action::Stop).await.unwrap();
    assert!(hal.episode_done());
    let m = hal.episode_metrics().unwrap();
    assert!(!m.success && m.spl == 0.0);
    assert!(m.distance_to_goal.unwrap() > 0.5);
    assert!(m.extra.contains_key("path_length_m"));
    let err = hal.act(Action::Forward).await.unwrap_err();
    assert!(matches!(err, HalError::InvalidCommand { .. }), "{err}");
    assert!(err.to_string().contains("episode_over"), "{err}");
    // A new episode starts cleanly.
    hal.reset(&EpisodeSpec::next()).await.unwrap();
    assert!(!hal.episode_done() && hal.episode_metrics().is_none() && hal.steps() == 0);
    assert_eq!(hal.odometry().await.unwrap().pose, nav_core::geometry::Pose2::origin());
    hal.close().await.unwrap();
}

#[tokio::test]
async fn ground_truth_pose_is_relative_to_the_episode_start() {
    let cfg = BridgeConfig { ground_truth_pose: true, rgb: RgbEncoding::Png, ..config() };
    let mut hal = openroom(cfg).await;
    hal.reset(&EpisodeSpec::seed(9)).await.unwrap();
    assert!(hal.capabilities().pose_is_ground_truth);
    let o = hal.odometry().await.unwrap();
    assert!(o.ground_truth && o.pose.x.abs() < 1e-12 && o.pose.y.abs() < 1e-12 && o.pose.yaw.abs() < 1e-12);
    hal.act(Action::TurnRight).await.unwrap();
    let out = hal.act(Action::Forward).await.unwrap();
    let o = hal.odometry().await.unwrap();
    assert!((o.pose.yaw_deg() + 30.0).abs() < 1e-6);
    let d = out.moved_m;
    assert!((o.pose.x - d * (-30f64).to_radians().cos()).abs() < 1e-6);
    assert!((o.pose.y - d * (-30f64).to_radians().sin()).abs() < 1e-6);
    assert_eq!(hal.rgb().await.unwrap().frame.width(), 16, "png images decode too");
    hal.close().await.unwrap();
}

#[tokio::test]
async fn bad_requests_get_error_replies_and_the_session_goes_on() {
    let mut hal = openroom(config()).await;
    let err = hal.act(Action::Forward).await.unwrap_err();
    assert!(matches!(err, HalError::InvalidCommand { .. }), "{err}");
    let spec = EpisodeSpec { scene: Some("mars".into()), ..EpisodeSpec::default() };
    let err = hal.reset(&spec).await.unwrap_err();
    assert!(matches!(&err, HalError::InvalidCommand { field, .. } if field == "reset"), "{err}");
    assert!(err.to_string().contains("mars"), "{err}");
    assert!(hal.panorama(0).await.is_err());
    hal.reset(&EpisodeSpec::index(0)).await.unwrap();
    hal.act(Action::TurnLeft).await.unwrap();
    hal.close().await.unwrap();
}

#[tokio::test]
async fn a_step_timeout_is_reported_and_the_late_reply_skipped() {
    let cfg = BridgeConfig { step_timeout_s: 0.3, ..config() };
    let mut hal =
        BridgeHal::spawn_command(&script_command("faulty_server.py", &["--slow-step-s", "1.5"]), cfg).await.unwrap();
    hal.reset(&EpisodeSpec::index(1)).await.unwrap();
    let err = hal.act(Action::TurnLeft).await.unwrap_err();
    assert!(matches!(&err, HalError::Timeout { what, .. } if what.contains("step")), "{err}");
    tokio::time::sleep(Duration::from_millis(1600)).await;
    // The step's late reply is in the pipe before this reset's reply.
    let info = hal.reset(&EpisodeSpec::index(2)).await.unwrap();
    assert_eq!(info.episode_id, "openroom-2");
    hal.close().await.unwrap();
}

#[tokio::test]
async fn a_crashed_child_names_its_exit_status_and_last_stderr_lines() {
    let cmd = script_command("faulty_server.py", &["--crash-after-steps", "2"]);
    let mut hal = BridgeHal::spawn_command(&cmd, config()).await.unwrap();
    hal.reset(&EpisodeSpec::index(0)).await.unwrap();
    hal.act(Action::TurnLeft).await.unwrap();
    let err = hal.act(Action::TurnLeft).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, HalError::Disconnected { .. }), "{text}");
    assert!(text.contains("exit status: 7"), "{text}");
    assert!(text.contains("simulated crash in step 2"), "{text}");
    assert!(text.contains("during step"), "{text}");
    // The partial episode is still there for the log; later calls fail fast.
    assert_eq!(hal.episode().unwrap().episode_id, "openroom-0");
    assert_eq!(hal.steps(), 1);
    assert!(hal.rgb().await.is_ok(), "the last observation stays readable");
    let again = hal.reset(&EpisodeSpec::next()).await.unwrap_err();
    assert!(again.to_string().contains("exit status: 7"), "{again}");
    hal.close().await.unwrap();
}

#[tokio::test]
async fn a_killed_child_is_a_clear_disconnect() {
    let mut hal = openroom(config()).await;
    hal.reset(&EpisodeSpec::index(0)).await.unwrap();
    let pid = hal.child_id().unwrap();
    let status = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
    assert!(status.success());
    let err = hal.act(Action::Forward).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, HalError::Disconnected { .. }), "{text}");
    assert!(text.contains("signal: 9"), "{text}");
}

#[tokio::test]
async fn a_garbage_reply_is_a_protocol_error() {
    let cmd = script_command("faulty_server.py", &["--garbage-step"]);
    let mut hal = BridgeHal::spawn_command(&cmd, config()).await.unwrap();
    hal.reset(&EpisodeSpec::index(0)).await.unwrap();
    let err = hal.act(Action::Forward).await.unwrap_err();
    assert!(matches!(err, HalError::Protocol { .. }), "{err}");
    assert!(err.to_string().contains("this is not json"), "{err}");
    hal.close().await.unwrap();
}

#[tokio::test]
async fn close_leaves_no_process_and_drop_kills() {
    let mut hal = openroom(config()).await;
    let pid = hal.child_id().unwrap();
    assert!(process_alive(pid));
    hal.close().await.unwrap();
    assert!(!process_alive(pid), "the server exited");
    hal.close().await.unwrap();
    assert!(matches!(hal.act(Action::Forward).await.unwrap_err(), HalError::Disconnected { .. }));

    let hal = openroom(config()).await;
    let pid = hal.child_id().unwrap();
    drop(hal);
    for _ in 0..100 {
        if !process_alive(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("dropping BridgeHal did not kill the server {pid}");
}

#[tokio::test]
async fn version_mismatch_and_missing_programs_fail_the_handshake() {
    let fake = "import sys; sys.stdin.readline(); \
        print('{\"id\":1,\"result\":{\"protocol\":\"navkit-bridge\",\"version\":2,\"backend\":{\"name\":\"x\",\"version\":\"0\",\
\"simulator\":\"x\",\"simulator_version\":\"0\"},\"capabilities\":{},\"actions\":[\"forward\",\"turn_left\",\"turn_right\",\"stop\"],\
\"step\":{\"forward_m\":0.25,\"turn_deg\":30},\"camera\":{\"width\":1,\"height\":1,\"hfov_deg\":90},\
\"observation\":{\"rgb\":\"png\",\"depth\":false,\"pose\":false,\"detections\":false}}}', flush=True); sys.stdin.readline()";
    let err = BridgeHal::spawn_command(&BridgeCommand::new(python()).args(["-c", fake]), config()).await.unwrap_err();
    assert!(matches!(err, HalError::Protocol { .. }), "{err}");
    assert!(err.to_string().contains("version 2"), "{err}");

    let err = BridgeHal::spawn("/nonexistent/python -m navkit_bridge", config()).await.unwrap_err();
    assert!(matches!(err, HalError::Io { .. }), "{err}");

    let err = BridgeHal::spawn("python3 -c 'import sys; sys.exit(4)'", config()).await.unwrap_err();
    assert!(err.to_string().contains("exit status: 4"), "{err}");
}

#[tokio::test]
async fn a_missing_simulator_is_reported_as_unsupported_with_install_steps() {
    let err = BridgeHal::spawn_command(&bridge_command("habitat", &["--config", "objectnav.yaml"]), config())
        .await
        .unwrap_err();
    // Unless Habitat happens to be installed, the server answers hello with "unavailable".
    if let HalError::Unsupported { what } = &err {
        assert!(what.contains("pip install habitat-lab"), "{what}");
    } else {
        assert!(err.to_string().contains("habitat"), "{err}");
    }
}

#[tokio::test]
async fn attach_over_tcp() {
    let mut server = std::process::Command::new(python())
        .args(["-m", "navkit_bridge", "--backend", "openroom", "--listen", "127.0.0.1:0", "--once"])
        .env("PYTHONPATH", package_dir())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(server.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let announced: serde_json::Value = serde_json::from_str(&line).unwrap();
    let addr = announced["listening"].as_str().unwrap().to_string();
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    let endpoint = nav_hal::bridge::BridgeEndpoint::parse(&addr).unwrap();
    let mut hal = BridgeHal::connect(&endpoint, config()).await.unwrap();
    assert_eq!(hal.endpoint(), format!("tcp://{addr}"));
    assert!(hal.child_id().is_none());
    hal.reset(&EpisodeSpec::index(5)).await.unwrap();
    hal.act(Action::TurnRight).await.unwrap();
    hal.close().await.unwrap();
    // --once: the server exits when its only client leaves.
    let status = server.wait().unwrap();
    assert!(status.success(), "{status}");
}
