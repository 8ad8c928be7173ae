//! `BridgeWorker` against real Python worker processes: the bundled
//! colour-threshold detector and a fault-injecting one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod bridge_support;

use bridge_support::{package_dir, python, script_command};
use nav_core::raster::{Rgb, RgbFrame};
use nav_hal::HalError;
use nav_hal::bridge::{BridgeCommand, BridgeEndpoint, BridgeWorker, WorkerConfig, view_json};
use nav_hal::hal::{CameraFrame, DepthFrame};
use serde_json::{Map, Value, json};

fn module_command(module: &str) -> BridgeCommand {
    BridgeCommand::new(python()).args(["-m", module]).env("PYTHONPATH", package_dir().to_string_lossy())
}

fn fast() -> WorkerConfig {
    WorkerConfig { hello_timeout_s: 30.0, request_timeout_s: 5.0, ..WorkerConfig::default() }
}

/// A grey 64 × 48 view with a red rectangle over columns 40..=49, rows 10..=29.
fn red_box_view() -> (CameraFrame, DepthFrame) {
    let (w, h) = (64, 48);
    let mut frame = RgbFrame::new(w, h, Rgb([120, 120, 115]));
    let bytes = frame.as_bytes_mut();
    for y in 10..30 {
        for x in 40..50 {
            let i = 3 * (y * w + x);
            bytes[i..i + 3].copy_from_slice(&[200, 30, 35]);
        }
    }
    let depth = DepthFrame { width: w, height: h, depth_m: vec![2.0; w * h], stamp_s: 0.0 };
    (CameraFrame { frame, hfov_rad: 90f64.to_radians(), stamp_s: 0.0 }, depth)
}

fn detect_fields(target: &str, frame: &CameraFrame, depth: &DepthFrame) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("target".into(), json!(target));
    m.insert("view".into(), view_json(Some(frame), Some(depth)));
    m
}

#[tokio::test]
async fn the_colour_detector_finds_the_red_region_and_nothing_else() {
    let ep = BridgeEndpoint::Command(module_command("navkit_bridge.colour_detector"));
    let mut w = BridgeWorker::connect(&ep, "detector", "detect", fast()).await.expect("worker starts");
    assert_eq!(w.info().name, "colour-detector");
    assert_eq!(w.info().ops, vec!["detect".to_string()]);
    let (frame, depth) = red_box_view();
    let red = w.call("detect", detect_fields("red box", &frame, &depth)).await.unwrap();
    assert_eq!(red["seen"], json!(true));
    assert_eq!(red["bbox"], json!([40, 10, 49, 29]));
    let green = w.call("detect", detect_fields("green ball", &frame, &depth)).await.unwrap();
    assert_eq!(green["seen"], json!(false));
    // a label without a colour word is "not seen", never a guess
    let chair = w.call("detect", detect_fields("chair", &frame, &depth)).await.unwrap();
    assert_eq!(chair["seen"], json!(false));
    // a malformed view is a bad_request error reply; the session goes on
    let mut bad = Map::new();
    bad.insert("target".into(), json!("red box"));
    bad.insert("view".into(), json!({"rgb": {"encoding": "raw", "shape": [2, 2, 3], "data": "AAAA"}}));
    let err = w.call("detect", bad).await.unwrap_err();
    assert!(matches!(&err, HalError::InvalidCommand { message, .. } if message.contains("view.rgb.data")), "{err}");
    assert!(w.call("detect", detect_fields("red box", &frame, &depth)).await.is_ok());
    w.close().await.unwrap();
    w.close().await.unwrap();
}

#[tokio::test]
async fn a_worker_without_the_op_is_refused_at_the_handshake() {
    let ep = BridgeEndpoint::Command(module_command("navkit_bridge.colour_detector"));
    let err = BridgeWorker::connect(&ep, "policy", "act", fast()).await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("does not serve the op \"act\"") && text.contains("detect"), "{text}");
}

#[tokio::test]
async fn timeouts_garbage_and_crashes_are_errors_not_hangs() {
    let ep = BridgeEndpoint::Command(script_command("faulty_worker.py", &["--slow-s", "1.5"]));
    let cfg = WorkerConfig { request_timeout_s: 0.5, ..fast() };
    let mut w = BridgeWorker::connect(&ep, "detector", "detect", cfg).await.expect("worker starts");
    let (frame, depth) = red_box_view();
    let err = w.call("detect", detect_fields("slow", &frame, &depth)).await.unwrap_err();
    assert!(matches!(err, HalError::Timeout { .. }), "{err}");
    // the late reply is skipped by its id; the next request gets its own answer
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    let ok = w.call("detect", detect_fields("red box", &frame, &depth)).await.unwrap();
    assert_eq!(ok["bbox"], json!([40, 10, 49, 29]));
    let err = w.call("detect", detect_fields("garbage", &frame, &depth)).await.unwrap_err();
    assert!(matches!(&err, HalError::Protocol { message } if message.contains("not a JSON reply")), "{err}");
    let err = w.call("detect", detect_fields("crash", &frame, &depth)).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, HalError::Disconnected { .. }), "{text}");
    assert!(text.contains("exit status: 7") && text.contains("simulated crash"), "{text}");
    // every later call fails at once with the same reason
    let again = w.call("detect", detect_fields("red box", &frame, &depth)).await.unwrap_err();
    assert!(again.to_string().contains("exit status: 7"), "{again}");
}

#[tokio::test]
async fn a_worker_that_keeps_timing_out_is_given_up() {
    let ep = BridgeEndpoint::Command(script_command("faulty_worker.py", &["--slow-s", "1.5"]));
    let cfg = WorkerConfig { request_timeout_s: 0.3, ..fast() };
    let mut w = BridgeWorker::connect(&ep, "detector", "detect", cfg).await.expect("worker starts");
    let (frame, depth) = red_box_view();
    for _ in 0..nav_hal::bridge::MAX_TIMEOUTS_IN_A_ROW {
        let err = w.call("detect", detect_fields("slow", &frame, &depth)).await.unwrap_err();
        assert!(matches!(err, HalError::Timeout { .. }), "{err}");
    }
    // then every call fails at once, naming why, instead of waiting out the timeout again
    let started = std::time::Instant::now();
    let err = w.call("detect", detect_fields("red box", &frame, &depth)).await.unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_millis(250), "{:?}", started.elapsed());
    assert!(matches!(&err, HalError::Disconnected { reason, .. } if reason.contains("timed out")), "{err}");
}

#[tokio::test]
async fn a_missing_program_is_an_error() {
    let ep = BridgeEndpoint::Command(BridgeCommand::new("/nonexistent/navkit-detector"));
    let err = BridgeWorker::connect(&ep, "detector", "detect", fast()).await.unwrap_err();
    assert!(err.to_string().contains("/nonexistent/navkit-detector"), "{err}");
}

#[test]
fn bad_worker_settings_are_refused() {
    let cfg = WorkerConfig { request_timeout_s: f64::NAN, ..WorkerConfig::default() };
    assert!(cfg.validate().unwrap_err().to_string().contains("request_timeout_s"));
}
