//! The adaptive call schedule against the fixed-rate loop it replaces: the
//! same house, seed and three minutes of exploration with the offline
//! stand-in, once with `[explore.safety.schedule] mode = "fixed"` (a call
//! every 5 s, 0.2 Hz) and once with the default adaptive schedule. The
//! adaptive loop must make at least 30 % fewer calls and explore as much.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

struct Run {
    calls: u64,
    explored_m2: f64,
    logged_calls: usize,
}

fn explore(dir: &std::path::Path, mode: &str) -> Run {
    let config = dir.join(format!("{mode}.toml"));
    std::fs::write(&config, format!("[explore]\nmax_time_s = 180.0\n[explore.safety.schedule]\nmode = \"{mode}\"\n"))
        .unwrap();
    let log = dir.join(format!("{mode}.jsonl"));
    let out = Command::new(env!("CARGO_BIN_EXE_nav"))
        .args(["run", "--protocol", "explore", "--arena", "house_a", "--json", "--config"])
        .arg(&config)
        .arg("--log")
        .arg(&log)
        .output()
        .expect("nav runs");
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON summary");
    let text = std::fs::read_to_string(&log).unwrap();
    let logged_calls = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .flat_map(|r| r["events"].as_array().cloned().unwrap_or_default())
        .filter(|e| e["event"] == "planner_call")
        .count();
    Run {
        calls: summary["planner_calls"].as_u64().unwrap(),
        explored_m2: summary["explored_m2"].as_f64().expect("the simulator measures the explored area"),
        logged_calls,
    }
}

#[test]
fn the_adaptive_schedule_makes_30_percent_fewer_calls_than_a_fixed_0_2_hz_loop_and_explores_as_much() {
    let dir = tempfile::tempdir().unwrap();
    let (fixed, adaptive) = std::thread::scope(|s| {
        let f = s.spawn(|| explore(dir.path(), "fixed"));
        let a = s.spawn(|| explore(dir.path(), "adaptive"));
        (f.join().unwrap(), a.join().unwrap())
    });
    // every decision is a logged call, in both loops
    assert_eq!(fixed.logged_calls as u64, fixed.calls);
    assert_eq!(adaptive.logged_calls as u64, adaptive.calls);
    // 0.2 Hz over 180 s
    assert!((35..=37).contains(&fixed.calls), "fixed loop: {} calls", fixed.calls);
    assert!(
        adaptive.calls as f64 <= 0.7 * fixed.calls as f64,
        "adaptive {} calls against fixed {}",
        adaptive.calls,
        fixed.calls
    );
    assert!(
        adaptive.explored_m2 >= 0.95 * fixed.explored_m2,
        "adaptive explored {:.1} m² against fixed {:.1} m²",
        adaptive.explored_m2,
        fixed.explored_m2
    );
    println!(
        "house_a, 180 s: fixed {} calls, {:.1} m²; adaptive {} calls, {:.1} m²",
        fixed.calls, fixed.explored_m2, adaptive.calls, adaptive.explored_m2
    );
}
