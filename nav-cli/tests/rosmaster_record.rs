//! What recording and the live view cost `nav rosmaster`'s 20 Hz loop,
//! measured side by side in one run against two rosbridge test peers: one
//! `nav rosmaster` plain, one with `--record` and `--live` and a Foxglove
//! WebSocket viewer that subscribes to every channel and then stops
//! reading for 30 s. Both must keep `cmd_vel` at 20 Hz with no longer gap,
//! the hooks must take ≤ 1 ms a tick (median) on the loop's thread, and the
//! recording process's memory must stay flat while the viewer hangs.
//! Prints the numbers (docs/BENCHMARKS.md keeps them).
//!
//! The viewer is `ci/check_viewers.py live` in the venv `ci/setup-viewers.sh`
//! makes (`NAVKIT_VIEWERS_PYTHON`, default `.venv-viewers/bin/python`);
//! without it this is skipped unless `NAVKIT_REQUIRE_VIEWERS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/rosmaster_process.rs"]
#[allow(dead_code)]
mod rosmaster_process;

use nav_hal::rosbridge::testing::{PeerConfig, RosbridgePeer};
use nav_hal::sim::{SimConfig, SimWorld};
use rosmaster_process::Nav;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// No depth camera; exploring on after the arena is covered (the runs last their 45 s).
const DEFAULTS: &str = "[rosbridge]\ndepth_enabled = false\n[explore]\nstop_when_complete = false\n";

async fn peer() -> RosbridgePeer {
    let world = SimWorld::builtin("exploration", SimConfig::default().ackermann(0.3)).unwrap();
    RosbridgePeer::start_with(world, PeerConfig::default()).await.unwrap()
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn viewers_python() -> Option<PathBuf> {
    let python = std::env::var_os("NAVKIT_VIEWERS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv-viewers/bin/python"));
    let required = std::env::var("NAVKIT_REQUIRE_VIEWERS").is_ok_and(|v| v == "1");
    let ok = python.exists()
        && Command::new(&python).args(["-c", "import websockets"]).output().is_ok_and(|o| o.status.success());
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

/// Resident memory of `pid`, KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find(|l| l.starts_with("VmRSS:"))?.split_whitespace().nth(1)?.parse().ok()
}

/// Rate (Hz), longest gap (s) and span (s) of the Twists from 2 s after
/// the first to 1 s before the last (the start and the stop burst left out).
fn cadence(peer: &RosbridgePeer) -> (f64, f64, f64) {
    let twists = peer.twists();
    let (first, last) = (twists.first().expect("Twists arrived").0 + 2.0, twists.last().unwrap().0 - 1.0);
    let window: Vec<f64> = twists.iter().map(|(t, _)| *t).filter(|t| (first..last).contains(t)).collect();
    let gap = window.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
    (window.len() as f64 / (last - first), gap, last - first)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recording_and_a_viewer_that_stops_reading_leave_the_20_hz_loop_alone() {
    let Some(python) = viewers_python() else { return };
    let (plain_peer, rec_peer) = (peer().await, peer().await);
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("run.mcap");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let plain = Nav::start(&plain_peer.url(), DEFAULTS, &["--max-time", "45"]);
    let recorded = Nav::start(
        &rec_peer.url(),
        DEFAULTS,
        &["--max-time", "45", "--record", rec.to_str().unwrap(), "--live", &addr],
    );
    // the viewer: subscribes to every channel, reads nothing for 30 s, then reads for 5 s
    let viewer = Command::new(&python)
        .arg(workspace_root().join("ci/check_viewers.py"))
        .args(["live", &addr, "5", "30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = recorded.pid().unwrap();
    let mut rss = Vec::new();
    for _ in 0..44 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        rss.extend(rss_kib(pid));
    }
    let (a, a_out, a_err) = plain.finish(30.0).await;
    println!("plain: {}", a_out.lines().find(|l| l.contains("ended")).unwrap_or_default().trim());
    let (b, b_out, b_err) = recorded.finish(30.0).await;
    assert!(a.success(), "plain: {a_err}");
    assert!(b.success(), "recorded: {b_err}");
    let seen = viewer.wait_with_output().unwrap();
    assert!(seen.status.success(), "viewer: {}", String::from_utf8_lossy(&seen.stderr));
    let got: serde_json::Value = serde_json::from_slice(&seen.stdout).unwrap();
    assert!(got["channels"]["/scan"]["count"].as_u64() > Some(0), "the viewer got scans after its pause: {got}");

    let (rate_a, gap_a, span_a) = cadence(&plain_peer);
    let (rate_b, gap_b, span_b) = cadence(&rec_peer);
    let line = b_out.lines().find(|l| l.contains("recording: ")).unwrap_or_default().to_string();
    let ended = |out: &str| out.lines().find(|l| l.contains("ended")).unwrap_or_default().trim().to_string();
    println!("plain:    cmd_vel {rate_a:.2} Hz over {span_a:.0} s, longest gap {:.0} ms", gap_a * 1000.0);
    println!("recorded: cmd_vel {rate_b:.2} Hz over {span_b:.0} s, longest gap {:.0} ms; {line}", gap_b * 1000.0);
    println!("recorded: {}", ended(&b_out));
    println!("recorded, RSS every second (KiB): {rss:?}");
    for (name, rate, gap) in [("plain", rate_a, gap_a), ("recorded", rate_b, gap_b)] {
        assert!((18.0..=22.0).contains(&rate), "{name}: cmd_vel at {rate:.2} Hz");
        assert!(gap < 0.3, "{name}: cmd_vel paused for {gap:.3} s");
    }
    // the hooks' time on the loop's thread, from the report: "… µs a step in the loop"
    let median_us: f64 = line
        .split("; ")
        .find(|p| p.contains("a step in the loop"))
        .and_then(|p| p.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no hook time in {line:?}"));
    assert!(median_us <= 1000.0, "the hooks take {median_us} µs a tick");
    // memory flat while the viewer hangs: from 5 s in to the end, within 32 MiB
    let settled = rss.iter().skip(5).copied();
    let (lo, hi) = settled.clone().fold((u64::MAX, 0), |(lo, hi), v| (lo.min(v), hi.max(v)));
    assert!(hi.saturating_sub(lo) < 32 * 1024, "memory grew from {lo} to {hi} KiB while the viewer hung");
    assert!(!line.contains("dropped"), "the writer kept up: {line}");
}
