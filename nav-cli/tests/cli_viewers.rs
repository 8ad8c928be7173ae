//! Recordings and the live view against the viewers' own readers
//! (`ci/check_viewers.py`, in the venv `ci/setup-viewers.sh` makes):
//! - the official Python `mcap` reader with `mcap-protobuf-support` decodes
//!   every message of every Protobuf channel of a recording of each
//!   protocol into its Foxglove type;
//! - Rerun (`rerun-sdk`) loads the file and the camera, the LiDAR, the
//!   transforms, the poses and the scene's points come out as its typed
//!   archetypes, not raw messages;
//! - a Foxglove WebSocket client connects to `nav run --live`, subscribes
//!   and receives every channel while the run goes on.
//!
//! `NAVKIT_VIEWERS_PYTHON` (default `.venv-viewers/bin/python`); without it
//! these are skipped unless `NAVKIT_REQUIRE_VIEWERS=1` (CI sets it).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn nav(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nav")).args(args).output().expect("nav runs")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The viewers' Python, or `None` (skipped, said why) when it is absent and
/// not required.
fn viewers_python() -> Option<PathBuf> {
    let python = std::env::var_os("NAVKIT_VIEWERS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv-viewers/bin/python"));
    let required = std::env::var("NAVKIT_REQUIRE_VIEWERS").is_ok_and(|v| v == "1");
    let ok = python.exists()
        && Command::new(&python)
            .args(["-c", "import mcap, mcap_protobuf, rerun, websockets"])
            .output()
            .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            !required,
            "NAVKIT_REQUIRE_VIEWERS=1 but {} lacks the viewers (run ci/setup-viewers.sh)",
            python.display()
        );
        eprintln!("skipping: no viewers' venv at {} (run ci/setup-viewers.sh)", python.display());
        return None;
    }
    Some(python)
}

/// `ci/check_viewers.py ARGS...`'s JSON.
fn check(python: &Path, args: &[&str]) -> Value {
    let out = Command::new(python).arg(workspace_root().join("ci/check_viewers.py")).args(args).output().unwrap();
    assert!(out.status.success(), "check_viewers.py {args:?}: {}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn every_protobuf_channel_of_each_protocol_decodes_and_rerun_draws_typed_archetypes() {
    let Some(python) = viewers_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[&str], &[&str]); 3] = [
        ("objectnav", &[], &["/camera/image", "/camera/panorama", "/scan", "/scan/points", "/map", "/scene"]),
        ("candidates", &[], &["/camera/image", "/map", "/scene", "/scene/points"]),
        ("explore", &["--max-steps", "150"], &["/camera/image", "/scan", "/scan/points", "/map", "/scene"]),
    ];
    for (protocol, extra, expected) in cases {
        let rec = dir.path().join(format!("{protocol}.mcap"));
        let mut args = vec!["run", "--protocol", protocol, "--record", rec.to_str().unwrap()];
        args.extend(extra);
        let out = nav(&args);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{protocol}: {}", text(&out));

        // mcap + mcap-protobuf-support: every message of every Protobuf channel
        let m = check(&python, &["mcap", rec.to_str().unwrap()]);
        let channels = m["channels"].as_object().unwrap();
        for topic in expected.iter().chain(&["/pose", "/tf", "/ground_truth/pose", "/ground_truth/tf"]) {
            assert!(channels.get(*topic).is_some_and(|c| c["count"].as_u64() > Some(0)), "{protocol} {topic}: {m}");
        }
        for (topic, c) in channels {
            assert_eq!(c["decoded"], c["count"], "{protocol} {topic}: every message decoded");
            let own = topic == "/navkit/step" || topic == "/navkit/planner";
            assert_eq!(c["encoding"], if own { "json" } else { "protobuf" }, "{protocol} {topic}");
        }
        let samples = &m["samples"];
        assert_eq!(samples["/camera/image"]["type"], "foxglove.CompressedImage");
        assert_eq!(samples["/camera/image"]["format"], "png");
        assert!(samples["/camera/image"]["data_bytes"].as_u64() > Some(100));
        assert_eq!(samples["/tf"]["child_frame_id"], "base_link");
        assert_eq!(samples["/map"]["type"], "foxglove.Grid");
        let entities = samples["/scene"]["entities"].as_array().unwrap();
        assert!(entities.iter().any(|e| e == "path") && entities.iter().any(|e| e == "anchors"), "{samples}");
        if let Some(scan) = samples.get("/scan").filter(|s| !s.is_null()) {
            assert_eq!(scan["type"], "foxglove.LaserScan");
            assert!(scan["ranges"].as_u64() > Some(10));
        }

        // Rerun: typed archetypes, not raw messages
        let r = check(&python, &["rerun", rec.to_str().unwrap()]);
        let has = |entity: &str, component: &str| {
            r["entities"][entity].as_array().is_some_and(|cs| cs.iter().any(|c| c == component))
        };
        assert!(has("/camera/image", "EncodedImage:blob"), "{protocol}: camera as EncodedImage: {r}");
        assert!(has("/tf", "Transform3D:translation"), "{protocol}: transforms as Transform3D: {r}");
        assert!(has("/ground_truth/tf", "Transform3D:quaternion"), "{protocol}: {r}");
        assert!(has("/pose", "InstancePoses3D:translations"), "{protocol}: poses: {r}");
        assert!(has("/scene/points", "Points3D:positions"), "{protocol}: scene points as Points3D: {r}");
        if expected.contains(&"/scan/points") {
            assert!(has("/scan/points", "Points3D:positions"), "{protocol}: LiDAR as Points3D: {r}");
        }
        for typed in ["/camera/image", "/tf", "/pose", "/scene/points"] {
            assert!(!has(typed, "McapMessage:data"), "{protocol} {typed}: not a raw message: {r}");
        }
    }
}

/// A free local port (bound and released; the run binds it again).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn a_foxglove_websocket_client_receives_every_channel_of_a_live_run() {
    let Some(python) = viewers_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let addr = format!("127.0.0.1:{}", free_port());
    let rec = dir.path().join("live.mcap");
    // the client first, retrying until the server is up
    let client = Command::new(&python)
        .arg(workspace_root().join("ci/check_viewers.py"))
        .args(["live", &addr, "8"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let args = ["run", "--protocol", "explore", "--live", &addr, "--record", rec.to_str().unwrap()];
    let run = nav(&args);
    assert!(matches!(run.status.code(), Some(0 | 1)), "{}", text(&run));
    assert!(text(&run).contains(&format!("live: ws://{addr}")), "{}", text(&run));
    let out = client.wait_with_output().unwrap();
    assert!(out.status.success(), "client: {}", text(&out));
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    for topic in ["/navkit/step", "/pose", "/tf", "/ground_truth/pose", "/scan", "/scan/points", "/map", "/scene"] {
        let c = &got["channels"][topic];
        assert!(c["count"].as_u64() > Some(0), "{topic} received live: {got}");
    }
    assert_eq!(got["channels"]["/scan"]["schema"], "foxglove.LaserScan");
    assert_eq!(got["channels"]["/scan"]["encoding"], "protobuf");
    assert_eq!(got["channels"]["/navkit/step"]["encoding"], "json");
    // the file is complete beside it
    assert!(!nav_planner::record::read::read_steps(&rec).unwrap().is_empty());
}

#[test]
fn live_refuses_other_addresses_than_loopback_unless_allowed() {
    let o = nav(&["run", "--max-steps", "2", "--live", "0.0.0.0:0"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--live-any-address"), "{}", text(&o));
    let o = nav(&["run", "--max-steps", "2", "--live", "not-an-address"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--live not-an-address"), "{}", text(&o));
    // a two-step episode ends unfinished: exit 1
    let o = nav(&["run", "--max-steps", "2", "--live", "0.0.0.0:0", "--live-any-address"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("warning: --live on 0.0.0.0"), "{}", text(&o));
    // port 0: any free port, named in the output
    let o = nav(&["run", "--max-steps", "2", "--live", "127.0.0.1:0"]);
    assert!(o.status.code() == Some(1) && text(&o).contains("live: ws://127.0.0.1:"), "{}", text(&o));
}
