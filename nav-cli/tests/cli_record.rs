//! `--record PATH.mcap` end to end: a recorded `nav run` of each protocol
//! read back with the Rust `mcap` crate and with the Python `mcap` reader
//! (`ci/check_mcap.py`, an independent implementation of the format),
//! `nav replay` drawing the same picture from the recording as from the
//! JSONL log of the same run, decimation, model calls, and bad recordings.
//!
//! The Python half needs the venv `ci/setup-vlm.sh` makes (it carries the
//! pinned `mcap` package): `NAVKIT_VLM_PYTHON` (default `.venv-vlm/bin/python`);
//! without it that half is skipped unless `NAVKIT_REQUIRE_SDKS=1` (CI sets it).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/vlm_server.rs"]
mod vlm_server;

use nav_planner::navigator::{StepRecord, read_log};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn nav(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nav")).args(args).output().expect("nav runs")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// One channel as read back: schema name and encoding, message encoding, count.
#[derive(Debug, Clone, PartialEq)]
struct Channel {
    schema: String,
    schema_encoding: String,
    message_encoding: String,
    count: u64,
}

/// A recording read with the Rust `mcap` crate.
struct Recorded {
    channels: BTreeMap<String, Channel>,
    /// (topic, log time ns) in file order.
    times: Vec<(String, u64)>,
    steps: Vec<StepRecord>,
    planner_calls: Vec<serde_json::Value>,
    /// Every message body, decompressed, one per line (Protobuf ones lossily as text).
    bodies: String,
}

fn read_back(path: &Path) -> Recorded {
    let bytes = std::fs::read(path).unwrap();
    let summary = mcap::Summary::read(&bytes).unwrap().expect("a summary section");
    assert!(summary.stats.is_some(), "statistics are written");
    let mut channels = BTreeMap::new();
    for ch in summary.channels.values() {
        let schema = ch.schema.as_ref().expect("every channel has a schema");
        let c = Channel {
            schema: schema.name.clone(),
            schema_encoding: schema.encoding.clone(),
            message_encoding: ch.message_encoding.clone(),
            count: 0,
        };
        if schema.encoding == "jsonschema" {
            serde_json::from_slice::<serde_json::Value>(&schema.data).expect("the schema is JSON");
        } else {
            assert_eq!(schema.encoding, "protobuf", "{}", ch.topic);
            assert!(!schema.data.is_empty(), "{}: a FileDescriptorSet", ch.topic);
        }
        channels.insert(ch.topic.clone(), c);
    }
    let (mut times, mut steps, mut planner_calls, mut bodies) = (Vec::new(), Vec::new(), Vec::new(), String::new());
    for m in mcap::MessageStream::new(&bytes).unwrap() {
        let m = m.unwrap();
        channels.get_mut(&m.channel.topic).unwrap().count += 1;
        times.push((m.channel.topic.clone(), m.log_time));
        bodies.push_str(&String::from_utf8_lossy(&m.data));
        bodies.push('\n');
        if m.channel.message_encoding != "json" {
            continue;
        }
        let body: serde_json::Value = serde_json::from_slice(&m.data).expect("every JSON message is JSON");
        match m.channel.topic.as_str() {
            "/navkit/step" => steps.push(serde_json::from_value(body).unwrap()),
            "/navkit/planner" => planner_calls.push(body),
            _ => {}
        }
    }
    Recorded { channels, times, steps, planner_calls, bodies }
}

/// The Python `mcap` reader's view (`ci/check_mcap.py`), or `None` when the
/// venv is absent and not required.
fn python_check(path: &Path) -> Option<serde_json::Value> {
    let python = std::env::var_os("NAVKIT_VLM_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv-vlm/bin/python"));
    let required = std::env::var("NAVKIT_REQUIRE_SDKS").is_ok_and(|v| v == "1");
    let has_mcap =
        python.exists() && Command::new(&python).args(["-c", "import mcap"]).output().is_ok_and(|o| o.status.success());
    if !has_mcap {
        assert!(!required, "NAVKIT_REQUIRE_SDKS=1 but {} cannot import mcap (run ci/setup-vlm.sh)", python.display());
        eprintln!("skipping the Python reader: no mcap package at {} (run ci/setup-vlm.sh)", python.display());
        return None;
    }
    let out = Command::new(&python).arg(workspace_root().join("ci/check_mcap.py")).arg(path).output().unwrap();
    assert!(out.status.success(), "check_mcap.py {}: {}", path.display(), text(&out));
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

fn assert_times_never_go_back(r: &Recorded) {
    for w in r.times.windows(2) {
        assert!(w[0].1 <= w[1].1, "log time goes back: {:?} then {:?}", w[0], w[1]);
    }
}

#[test]
fn a_recorded_run_of_each_protocol_has_its_channels_one_pose_per_step_and_replays_like_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[&str], &[&str]); 3] = [
        ("objectnav", &[], &["/camera/panorama", "/camera/image", "/scan", "/map", "/scene"]),
        ("candidates", &[], &["/camera/image", "/map", "/scene"]),
        ("explore", &["--max-steps", "150"], &["/camera/image", "/scan", "/map", "/scene"]),
    ];
    for (protocol, extra, sensors) in cases {
        let log = dir.path().join(format!("{protocol}.jsonl"));
        let rec = dir.path().join(format!("{protocol}.mcap"));
        let mut args = vec!["run", "--protocol", protocol, "--log", log.to_str().unwrap()];
        args.extend(["--record", rec.to_str().unwrap()]);
        args.extend(extra);
        let out = nav(&args);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{protocol}: {}", text(&out));
        assert!(text(&out).contains("recording: "), "the report names the recording: {}", text(&out));
        let (logged, _) = read_log(&log).unwrap();
        let r = read_back(&rec);

        // the step log, whole, on its own channel
        assert_eq!(r.steps, logged, "{protocol}: the recorded step records are the logged ones");
        let n = logged.len() as u64;
        for topic in ["/navkit/step", "/pose", "/tf", "/ground_truth/pose"] {
            assert_eq!(r.channels[topic].count, n, "{protocol}: one {topic} message per step");
        }
        assert_eq!(r.channels["/ground_truth/tf"].count, 1, "{protocol}: world -> odom once");
        assert_eq!(r.channels["/ground_truth/tf"].schema, "foxglove.FrameTransform");
        for topic in sensors {
            assert!(
                r.channels.get(*topic).is_some_and(|c| c.count > 0),
                "{protocol}: {topic} recorded: {:?}",
                r.channels
            );
        }
        for (topic, c) in &r.channels {
            let foxglove = !topic.starts_with("/navkit/") || topic == "/navkit/planner/image";
            // the Foxglove types in Protobuf, navkit's own records in JSON
            let encodings = if foxglove { ("protobuf", "protobuf") } else { ("jsonschema", "json") };
            assert_eq!((c.schema_encoding.as_str(), c.message_encoding.as_str()), encodings, "{topic}");
            assert_eq!(c.schema.starts_with("foxglove."), foxglove, "{topic}: {}", c.schema);
        }
        if let Some(scan) = r.channels.get("/scan") {
            assert_eq!(scan.schema, "foxglove.LaserScan");
            assert_eq!(r.channels["/scan/points"].schema, "foxglove.PointCloud");
            assert_eq!(r.channels["/scan/points"].count, scan.count);
        }
        assert_eq!(r.channels["/scene/points"].schema, "foxglove.PointCloud");
        assert_eq!(r.channels["/scene/points"].count, r.channels["/scene"].count);
        assert_eq!(r.channels["/map"].schema, "foxglove.Grid");
        assert_eq!(r.channels["/scene"].schema, "foxglove.SceneUpdate");
        assert_eq!(r.channels["/pose"].schema, "foxglove.PoseInFrame");
        assert_eq!(r.channels["/tf"].schema, "foxglove.FrameTransform");
        assert_eq!(r.channels["/camera/image"].schema, "foxglove.CompressedImage");

        // times come from the run's clock: a step is logged at its t_s
        assert_times_never_go_back(&r);
        let step_times: Vec<u64> = r.times.iter().filter(|(t, _)| t == "/navkit/step").map(|&(_, ns)| ns).collect();
        for (rec_ns, step) in step_times.iter().zip(&logged) {
            assert!((*rec_ns as f64 - step.t_s * 1e9).abs() < 1.0, "{protocol} step {}: {rec_ns} ns", step.step);
        }

        // the Python reader agrees on channels, schemas and counts
        if let Some(py) = python_check(&rec) {
            assert_eq!(py["steps"], n);
            for (topic, c) in &r.channels {
                let p = &py["channels"][topic];
                assert_eq!(p["count"], c.count, "{protocol} {topic}");
                assert_eq!(p["schema"], c.schema.as_str(), "{protocol} {topic}");
            }
            let actions: Vec<String> = logged.iter().map(|s| s.action.clone()).collect();
            assert_eq!(py["step_actions"], serde_json::json!(actions));
        }

        // nav replay draws the same picture from either file
        for ext in ["png", "svg"] {
            let from_log = dir.path().join(format!("{protocol}-log.{ext}"));
            let from_rec = dir.path().join(format!("{protocol}-rec.{ext}"));
            let a = nav(&["replay", log.to_str().unwrap(), "--plot", from_log.to_str().unwrap()]);
            let b = nav(&["replay", rec.to_str().unwrap(), "--plot", from_rec.to_str().unwrap()]);
            assert!(a.status.success() && b.status.success(), "{}\n{}", text(&a), text(&b));
            assert_eq!(std::fs::read(&from_log).unwrap(), std::fs::read(&from_rec).unwrap(), "{protocol} .{ext}");
        }
    }
}

#[test]
fn record_every_n_thins_frames_and_scenes_but_keeps_every_step() {
    let dir = tempfile::tempdir().unwrap();
    let every = dir.path().join("every.mcap");
    let fifth = dir.path().join("fifth.mcap");
    for (path, n) in [(&every, "1"), (&fifth, "5")] {
        let out = nav(&["run", "--record", path.to_str().unwrap(), "--record-every", n]);
        assert!(out.status.success(), "{}", text(&out));
    }
    let (a, b) = (read_back(&every), read_back(&fifth));
    assert_eq!(a.steps, b.steps, "recording does not change the run");
    let steps = b.steps.len() as u64;
    assert_eq!(b.channels["/pose"].count, steps);
    let kept = b.steps.iter().filter(|s| s.step % 5 == 0).count() as u64;
    assert_eq!(b.channels["/scene"].count, kept, "one scene every 5 steps");
    assert_eq!(a.channels["/scene"].count, steps);
    assert!(b.channels["/map"].count <= kept + 1);
    assert!(std::fs::metadata(&fifth).unwrap().len() < std::fs::metadata(&every).unwrap().len());
    let bad = nav(&["run", "--record", every.to_str().unwrap(), "--record-every", "0"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    let bad = nav(&["run", "--record", dir.path().join("run.bag").to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad).contains(".mcap"), "{}", text(&bad));
}

/// A recording written before navkit used the Foxglove SDK (every channel
/// JSON, `tests/data/json-encoded-recording.mcap`, with the JSONL log of the
/// same run) still replays: the same picture from either file.
#[test]
fn a_json_encoded_recording_of_an_earlier_version_still_replays() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let (rec, log) = (data.join("json-encoded-recording.mcap"), data.join("json-encoded-recording.jsonl"));
    let old = read_back(&rec);
    assert!(old.channels.values().all(|c| c.message_encoding == "json"), "{:?}", old.channels);
    let steps = nav_planner::record::read::read_steps(&rec).unwrap();
    assert_eq!(steps, read_log(&log).unwrap().0);
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("log.svg"), dir.path().join("rec.svg"));
    let from_log = nav(&["replay", log.to_str().unwrap(), "--plot", a.to_str().unwrap()]);
    let from_rec = nav(&["replay", rec.to_str().unwrap(), "--plot", b.to_str().unwrap()]);
    assert!(from_log.status.success() && from_rec.status.success(), "{}\n{}", text(&from_log), text(&from_rec));
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

#[test]
fn a_bad_recording_is_exit_2_naming_the_file_and_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.mcap");
    let out = nav(&["run", "--record", good.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let bytes = std::fs::read(&good).unwrap();
    let plot = dir.path().join("x.png");
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("truncated.mcap", bytes[..bytes.len() / 2].to_vec(), "truncated"),
        ("cut-footer.mcap", bytes[..bytes.len() - 10].to_vec(), "MCAP"),
        ("empty.mcap", Vec::new(), "not an MCAP file"),
        ("garbage.mcap", b"{\"step\": 0}\nnot an mcap".to_vec(), "not an MCAP file"),
        (
            "flipped.mcap",
            {
                let mut b = bytes.clone();
                for x in &mut b[40..bytes.len() / 3] {
                    *x ^= 0x5a;
                }
                b
            },
            "MCAP",
        ),
    ];
    for (name, data, needle) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, data).unwrap();
        let out = nav(&["replay", path.to_str().unwrap(), "--plot", plot.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(name) && err.contains(needle), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
    }
    // an MCAP file by its magic bytes, whatever its name
    let renamed = dir.path().join("run.log");
    std::fs::copy(&good, &renamed).unwrap();
    let out = nav(&["replay", renamed.to_str().unwrap(), "--plot", plot.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_run_records_every_request_and_reply() {
    let server = vlm_server::SilentVlm::start(
        1000,
        "move_toward",
        serde_json::json!({"direction": "forward", "speed": "slow", "duration_s": 1.0}),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("vlm.mcap");
    let base_url = server.base_url();
    let rec_arg = rec.to_str().unwrap().to_string();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_nav"))
            .args(["run", "--protocol", "explore", "--planner", "vlm", "--vlm", "openai", "--model", "test-model"])
            .args(["--base-url", &base_url, "--max-steps", "60", "--record", &rec_arg])
            .env("OPENAI_API_KEY", "sk-test-recording")
            .output()
    })
    .await
    .unwrap()
    .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    let r = read_back(&rec);
    let served = server.arrivals().len();
    assert!(served > 0, "the model was called");
    assert_eq!(r.planner_calls.len(), served, "one /navkit/planner message per model call");
    let first = &r.planner_calls[0];
    assert_eq!(first["backend"]["model"], "test-model");
    assert!(first["request"]["system"].as_str().is_some_and(|s| !s.is_empty()), "the system prompt");
    assert!(first["request"]["tools"].as_array().is_some_and(|t| t.iter().any(|n| n == "move_toward")));
    assert_eq!(first["reply"]["ok"], true);
    assert_eq!(first["reply"]["response"]["tool_calls"][0]["name"], "move_toward");
    // images are on their own channel, referenced from the request
    let images: Vec<&serde_json::Value> = r
        .planner_calls
        .iter()
        .flat_map(|c| c["request"]["user"].as_array().unwrap().iter().filter(|p| p["type"] == "image"))
        .collect();
    assert_eq!(r.channels.get("/navkit/planner/image").map_or(0, |c| c.count), images.len() as u64);
    for img in &images {
        assert_eq!(img["topic"], "/navkit/planner/image");
        assert!(img["sequence"].as_u64().is_some_and(|s| s >= 1));
        assert!(img.get("data").is_none(), "image bytes are not duplicated in the request");
    }
    assert!(!r.bodies.contains("sk-test-recording"), "no API key in the recording");
    assert_times_never_go_back(&r);
    if let Some(py) = python_check(&rec) {
        assert_eq!(py["planner_calls"].as_array().unwrap().len(), served);
    }
}
