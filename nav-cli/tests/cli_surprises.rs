//! Small things a user should not have to discover: `nav replay LOG` without
//! `--plot` summarizes the run, the text report of a run without a goal
//! says SPL n/a (the JSON keeps a number), an explore run's "Reached at"
//! counts decisions, and `nav eval` / `nav eval --estimate` print progress
//! lines when stderr is not a terminal (CI, cluster job logs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};

fn nav(args: &[&str]) -> Output {
    // output() pipes stderr: not a terminal, as in CI
    Command::new(env!("CARGO_BIN_EXE_nav")).args(args).output().expect("nav runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn field<'a>(text: &'a str, label: &str) -> &'a str {
    let start = text.find(label).unwrap_or_else(|| panic!("no {label:?} in {text}")) + label.len();
    text[start..].split([' ', '\n', '(']).next().unwrap_or("")
}

#[test]
fn replay_without_plot_prints_a_summary_matching_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.jsonl");
    let o = nav(&["run", "--arena", "simple", "--protocol", "candidates", "--log", log.to_str().unwrap(), "--json"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let run: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();

    let o = nav(&["replay", log.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("simple | protocol candidates"), "{text}");
    assert_eq!(field(&text, "steps "), run["steps"].to_string(), "{text}");
    assert_eq!(field(&text, "planner calls "), run["planner_calls"].to_string(), "{text}");
    assert_eq!(field(&text, "collisions "), run["collisions"].to_string(), "{text}");
    let truth: f64 = field(&text, "(ground truth ").parse().unwrap();
    let path = run["path_length_m"].as_f64().unwrap();
    assert!((truth - path).abs() < 0.05, "ground-truth path {truth} vs the run's {path}: {text}");
    assert!(text.contains("success: the loop logged goal_reached"), "{text}");
    assert!(!text.contains("--plot"), "no longer asks for --plot: {text}");

    // with --plot it still draws
    let svg = dir.path().join("run.svg");
    let o = nav(&["replay", log.to_str().unwrap(), "--plot", svg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
}

#[test]
fn a_run_without_a_goal_reports_spl_as_not_applicable() {
    let o = nav(&["run", "--arena", "exploration", "--protocol", "explore", "--max-steps", "3"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let report = stdout(&o);
    assert!(report.contains("SPL n/a"), "{report}");
    assert!(!report.contains("SPL 0.00"), "{report}");

    let o = nav(&["run", "--arena", "exploration", "--protocol", "explore", "--max-steps", "3", "--json"]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert!(v["spl"].is_number(), "the JSON field stays a number: {v}");
    assert!(v["geodesic_m"].is_null(), "{v}");
}

#[test]
fn an_explore_run_that_reaches_its_goal_counts_decisions() {
    // `simple` has a point goal; the explore protocol's limit is in decisions
    let o = nav(&["run", "--arena", "simple", "--protocol", "explore", "--max-steps", "60"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let report = stdout(&o);
    let reached = report.lines().find(|l| l.contains("Goal Reached")).unwrap_or_else(|| panic!("{report}"));
    let decision: u64 = field(reached, "Reached at decision ").parse().unwrap();
    let step: u64 = field(reached, "(step ").trim_end_matches(')').parse().unwrap();
    let limit = report.lines().find(|l| l.contains("Cycle Limit")).unwrap();
    let used: u64 = field(limit, "Cycle Limit: ").parse().unwrap();
    assert_eq!(decision, used, "the same unit as the cycle limit: {report}");
    assert!(limit.contains("decisions"), "{limit}");
    assert!(step > decision, "the step count is given as such: {reached}");
}

#[test]
fn eval_prints_a_progress_line_per_episode_off_a_terminal() {
    let o = nav(&["eval", "--arenas", "simple,dead_end", "--configs", "candidates:offline", "--jobs", "1", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("nav eval: ")).collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines[0].starts_with("nav eval: 1/2 episodes (50%"), "{err}");
    assert!(lines[1].starts_with("nav eval: 2/2 episodes (100%"), "{err}");
    assert!(lines.iter().all(|l| l.contains("candidates offline")), "each names its episode: {err}");
    // stdout is still exactly the JSON
    let _: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
}

#[test]
fn eval_estimate_prints_progress_lines_too() {
    let o = nav(&[
        "eval",
        "--arenas",
        "simple",
        "--configs",
        "candidates:vlm",
        "--vlm",
        "openai",
        "--model",
        "gpt-4o-mini",
        "--estimate",
        "--jobs",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.lines().any(|l| l.starts_with("nav eval --estimate: 1/1 episodes (100%")), "{err}");
}
