//! `nav run`, `nav replay` and `nav eval` through the real binary: the
//! README's main job, exit codes, the summary contract (SPEC §6), bad arena
//! files, the step log and pictures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};

fn nav(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nav")).args(args).output().expect("nav runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn main_job_succeeds_with_the_summary_contract() {
    let o = nav(&["run", "--json"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("one JSON object");
    for key in [
        "arena",
        "protocol",
        "planner",
        "seed",
        "success",
        "spl",
        "steps",
        "path_length_m",
        "geodesic_m",
        "collisions",
        "coverage",
        "ababa",
        "stuck",
        "vlm_calls",
        "prompt_tokens",
        "completion_tokens",
        "fallbacks",
        "wall_ms",
    ] {
        assert!(v.get(key).is_some(), "summary lacks {key}: {v}");
    }
    assert_eq!(v["arena"], "house_a");
    assert_eq!(v["protocol"], "objectnav");
    assert_eq!(v["planner"], "offline");
    assert_eq!(v["success"], true);
    assert_eq!(v["collisions"], 0);
    assert!(v["spl"].as_f64().unwrap() > 0.0);
    assert_eq!(v["vlm_calls"], 0);
}

#[test]
fn text_report_follows_the_seed_layout() {
    let o = nav(&["run", "--protocol", "candidates", "--arena", "simple"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("=== Navigation Evaluation: simple ==="), "{out}");
    assert!(out.contains("RESULT: PASSED"), "{out}");
    assert!(out.contains("[PASS] Goal Reached"), "{out}");
    assert!(out.contains("[PASS] Collisions: 0 collisions"), "{out}");
    assert!(out.contains("SPL"), "{out}");
}

#[test]
fn failed_criteria_exit_one() {
    let o = nav(&["run", "--max-steps", "3", "--json"]);
    assert_eq!(o.status.code(), Some(1), "stdout {} stderr {}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["success"], false);
}

#[test]
fn bad_arenas_exit_two_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let good = nav_hal::arena::Arena::builtin("simple").unwrap().to_json_pretty();
    let mut unknown: serde_json::Value = serde_json::from_str(&good).unwrap();
    unknown["colour"] = serde_json::json!("red");
    let mut no_start: serde_json::Value = serde_json::from_str(&good).unwrap();
    no_start.as_object_mut().unwrap().remove("start");
    let mut inverted: serde_json::Value = serde_json::from_str(&good).unwrap();
    inverted["bounds"] = serde_json::json!([2.5, -2.5, -2.5, 2.5]);
    let cases: [(&str, String, &str); 5] = [
        ("unknown.json", unknown.to_string(), "colour"),
        ("nostart.json", no_start.to_string(), "start"),
        ("inverted.json", inverted.to_string(), "bounds"),
        ("empty.json", String::new(), "empty"),
        ("notjson.json", "walls: yes".to_string(), "JSON"),
    ];
    for (name, text, needle) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let o = nav(&["run", "--arena-file", path.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(needle), "{name}: message should name {needle:?}: {err}");
    }
    let o = nav(&["run", "--arena", "no_such_arena"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("house_a"), "lists the built-ins: {}", stderr(&o));
    let o = nav(&["run", "--plot", "picture.gif"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn step_log_and_pictures_round_trip_through_replay() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.jsonl");
    let svg = dir.path().join("run.svg");
    let o =
        nav(&["run", "--arena", "house_b", "--log", log.to_str().unwrap(), "--plot", svg.to_str().unwrap(), "--json"]);
    assert!(o.status.code() == Some(0) || o.status.code() == Some(1), "{}", stderr(&o));
    let summary: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    // one parseable line per step, numbered from 0, consecutive
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<serde_json::Value> =
        text.lines().map(|l| serde_json::from_str(l).expect("parseable line")).collect();
    assert_eq!(lines.len() as u64, summary["steps"].as_u64().unwrap() + 1);
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(l["step"].as_u64(), Some(i as u64));
        assert!(l["pose"]["x"].is_number() && l["action"].is_string());
    }
    assert_eq!(lines[0]["info"]["arena"], "house_b");
    assert!(lines.iter().any(|l| l["planner_called"] == true && l["planner"]["parsed"]["angle"].is_number()));
    assert!(lines.iter().any(|l| l["dc_queue"].as_array().is_some_and(|q| !q.is_empty())));
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    // replay draws the same run from the log alone
    let png = dir.path().join("replay.png");
    let o = nav(&["replay", log.to_str().unwrap(), "--plot", png.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[1..4], b"PNG");
    // a missing log is bad input
    let o = nav(&["replay", "/nonexistent/run.jsonl", "--plot", png.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(Path::new(&png).exists());
}

#[test]
fn eval_tabulates_configurations() {
    let o = nav(&["eval", "--arenas", "simple,dead_end", "--configs", "candidates:offline", "--jobs", "2", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["summaries"].as_array().unwrap().len(), 2);
    let aggs = v["aggregates"].as_array().unwrap();
    assert!(!aggs.is_empty());
    for s in v["summaries"].as_array().unwrap() {
        assert_eq!(s["passed"], true, "{s}");
    }
    let o = nav(&["eval", "--arenas", "simple", "--configs", "candidates:offline"]);
    assert!(stdout(&o).contains("| configuration |"), "{}", stdout(&o));
    let o = nav(&["eval", "--arenas", "simple", "--configs", "teleport:offline"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn timeout_must_be_a_positive_number_of_seconds() {
    for bad in ["0", "-3", "soon", "NaN", "4000"] {
        let o = nav(&["run", &format!("--timeout={bad}")]);
        assert_eq!(o.status.code(), Some(2), "--timeout {bad}");
        assert!(stderr(&o).contains("--timeout"), "{}", stderr(&o));
    }
    let o = nav(&["run", "--protocol", "candidates", "--timeout", "30", "--json"]);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
    let o = nav(&["eval", "--arenas", "simple", "--configs", "candidates:offline", "--timeout", "2.5", "--json"]);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
}

/// `nav run ARGS` with `lines` written to its standard input (`None` = a
/// pause of 300 ms between lines), then stdin closed.
fn nav_with_stdin(args: &[&str], lines: &[Option<&str>]) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_nav"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("nav runs");
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        match line {
            // the run may have ended already: a closed pipe is fine
            Some(l) => drop(writeln!(stdin, "{l}")),
            None => std::thread::sleep(std::time::Duration::from_millis(300)),
        }
    }
    drop(stdin);
    child.wait_with_output().unwrap()
}

#[test]
fn voice_on_stdin_pauses_resumes_instructs_and_stops_an_explore_run() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.jsonl");
    let log_arg = log.to_str().unwrap();
    // the simulator's clock runs on during the pause: a long budget keeps the run going until "stop"
    let config = dir.path().join("nav.toml");
    std::fs::write(&config, "[explore]\nmax_time_s = 100000\n").unwrap();
    let config_arg = config.to_str().unwrap();
    let args = ["run", "--protocol", "explore", "--voice", "stdin", "--json", "--log", log_arg, "--config", config_arg];
    let lines = [Some("pause"), None, Some("look for the kitchen"), Some("RESUME"), Some("stop")];
    let o = nav_with_stdin(&args, &lines);
    let err = stderr(&o);
    // the exit status follows the criteria (no collisions...), as for any run
    assert_eq!(o.status.code(), Some(0), "stderr: {err}");
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("one JSON object");
    assert_eq!(v["end"], "operator_stop", "{v}");
    assert_eq!(v["success"], false, "a stop is no success: {v}");
    let events: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .flat_map(|r| r["events"].as_array().cloned().unwrap_or_default())
        .collect();
    let voice: Vec<&str> =
        events.iter().filter(|e| e["event"] == "voice").filter_map(|e| e["command"].as_str()).collect();
    assert_eq!(voice, ["pause", "instruction", "resume", "stop"], "stderr: {err}");
    assert!(events.iter().any(|e| e["event"] == "paused") && events.iter().any(|e| e["event"] == "resumed"));
    for line in
        ["voice: pause", "say: Paused. Say resume to continue.", "say: Resuming.", "say: Run ended: operator stop."]
    {
        assert!(err.contains(line), "{line:?} in stderr: {err}");
    }
}

#[test]
fn voice_needs_explore_or_objectnav_and_stdin_to_itself() {
    let o = nav(&["run", "--protocol", "candidates", "--voice", "stdin"]);
    assert_eq!(o.status.code(), Some(2), "stderr: {}", stderr(&o));
    assert!(stderr(&o).contains("--voice works with --protocol explore or objectnav"), "{}", stderr(&o));
    let o = nav(&["run", "--voice", "stdin", "--experiment", "x", "--feedback", "-"]);
    assert_eq!(o.status.code(), Some(2), "stderr: {}", stderr(&o));
    assert!(stderr(&o).contains("both read standard input"), "{}", stderr(&o));
}
