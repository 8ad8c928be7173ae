//! A full standard error (`2>/dev/full`) never panics and never costs the
//! standard output: every diagnostic of `nav` goes through a checked
//! writer, and the log subscriber's own fallback (`eprintln!`) is off.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output, Stdio};

fn with_full_stderr(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nav"));
    cmd.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(full);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn stdout_json(o: &Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("one JSON object on stdout ({e}): {text}"))
}

#[test]
fn eval_merge_warnings_into_a_full_stderr_keep_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("a.jsonl");
    let o = Command::new(env!("CARGO_BIN_EXE_nav"))
        .args(["eval", "--arenas", "house_a", "--seeds", "1", "--jobs", "1", "--json", "--jsonl"])
        .arg(&lines)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let path = lines.to_str().unwrap();
    // the same file twice: a duplicates warning on stderr
    let o = with_full_stderr(&["eval", "merge", path, path, "--json"], &[]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout_json(&o)["summaries"].as_array().map(Vec::len), Some(1), "each episode once");
}

#[test]
fn debug_logging_into_a_full_stderr_keeps_the_run_summary() {
    let o = with_full_stderr(&["run", "--max-steps", "5", "--json"], &[("RUST_LOG", "debug")]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{:?}", o.status);
    assert!(stdout_json(&o).get("spl").is_some());
}

#[cfg(feature = "habitat")]
#[test]
fn habitat_json_report_survives_a_full_stderr() {
    let o = with_full_stderr(
        &["habitat", "--bridge", "python3 -m navkit_bridge --backend openroom", "--episodes", "2", "--json"],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", o.status);
    assert_eq!(stdout_json(&o)["episodes"].as_array().map(Vec::len), Some(2));
}
