//! `nav replay` trusts nothing in a step log: the arena in step 0 is
//! validated as `--arena-file` is (an obstacle covering the start is exit 2
//! naming it), and poses far outside the arena cost a line to the
//! picture's edge, not kilometres of rasterizing. The summary prints the
//! log's strings escaped and cut, and counts its events in linear time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/limited.rs"]
mod limited;

use serde_json::{Value, json};
use std::time::Duration;

const WALL: Duration = Duration::from_secs(20);

fn house_a() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../nav-hal/arenas/house_a.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn line(step: u64, x: f64, info: Option<Value>) -> String {
    let mut r = json!({"step": step, "t_s": step as f64, "action": if step == 0 { "start" } else { "forward" },
        "pose": {"x": x, "y": 0.0, "yaw_deg": 0.0}, "planner_called": false});
    if let Some(i) = info {
        r["info"] = i;
    }
    r.to_string()
}

fn replay(lines: &[String]) -> limited::Limited {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.jsonl");
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let plot = dir.path().join("run.png");
    let o = limited::nav_limited(&["replay", log.to_str().unwrap(), "--plot", plot.to_str().unwrap()], None, WALL);
    drop(dir);
    o
}

#[test]
fn a_logged_arena_is_validated_before_it_is_drawn() {
    let mut arena = house_a();
    arena["obstacles"] = json!([{"x": 5.0, "y": 4.0, "r": 1600.0}]);
    let o = replay(&[line(0, 0.0, Some(json!({"arena_json": arena}))), line(1, 0.25, None)]);
    assert_eq!(o.code, Some(2), "{o:?}");
    assert!(o.stderr.contains("step 0's arena"), "{}", o.stderr);
}

#[test]
fn poses_kilometres_away_are_drawn_at_the_edge_quickly() {
    let mut lines = vec![line(0, 0.0, Some(json!({"arena_json": house_a(), "arena": "house_a"})))];
    for step in 1..=100u64 {
        lines.push(line(step, if step % 2 == 0 { 80_000.0 } else { -80_000.0 }, None));
    }
    let o = replay(&lines);
    assert_eq!(o.code, Some(0), "{o:?}");
}

/// A shared log is input from outside: its strings reached the terminal
/// raw (an escape sequence in the target retitled it, a 100,000-character
/// target was printed whole), and a log of 200,000 distinct event names
/// took minutes to count (each name was looked for in a list).
#[test]
fn the_summary_escapes_cuts_and_counts_in_linear_time() {
    let target = format!("\u{1b}]0;pwned\u{7}{}", "t".repeat(100_000));
    let mut lines = vec![line(0, 0.0, Some(json!({"arena": "house_a", "target": target, "protocol": "a\u{1b}[2Jb"})))];
    for step in 1..=200u64 {
        let mut r: Value = serde_json::from_str(&line(step, 0.0, None)).unwrap();
        r["events"] = (0..1000).map(|k| json!({"event": format!("e{step}_{k}")})).collect();
        r["action"] = json!("stop\u{1b}[31m");
        lines.push(r.to_string());
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.jsonl");
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let o = limited::nav_limited(&["replay", log.to_str().unwrap()], None, WALL);
    assert_eq!(o.code, Some(0), "{o:?}");
    assert!(!o.stdout.contains('\u{1b}') && !o.stdout.contains('\u{7}'), "{}", &o.stdout[..500]);
    assert!(o.stdout.contains("target \\u{1b}]0;pwned\\u{7}ttt"), "{}", &o.stdout[..500]);
    assert!(o.stdout.contains("last action: stop\\u{1b}[31m"), "{}", o.stdout);
    assert!(o.stdout.contains("e1_0 1, e1_1 1") && o.stdout.contains("and 199968 more kinds"), "{}", o.stdout);
    assert!(o.stdout.lines().all(|l| l.chars().count() < 2000), "{}", o.stdout);
}
