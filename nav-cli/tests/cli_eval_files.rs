//! `nav eval --jsonl` on a full disk, `--resume` with merge's checks, and
//! FIFOs where files are read: the JSON-lines file always ends on a whole
//! line, the suite stops at the first failed write (exit 3), a resumed file
//! counts each episode once and only this suite's, and nothing blocks on a
//! FIFO.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/limited.rs"]
mod limited;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const SUITE: [&str; 10] = [
    "eval",
    "--arenas",
    "simple,dead_end,exploration",
    "--configs",
    "candidates:offline",
    "--seeds",
    "2",
    "--jobs",
    "1",
    "--json",
];

fn lines_of(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.is_empty() || text.ends_with('\n'), "ends on a whole line: {text:?}");
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// `nav ARGS` with writes past `bytes` failing (`EFBIG`, SIGXFSZ ignored as
/// a full disk would); `None` when prlimit is missing.
fn with_file_size_limit(bytes: u64, args: &[&str]) -> Option<std::process::Output> {
    if !Path::new("/usr/bin/prlimit").exists() {
        return None;
    }
    let nav = env!("CARGO_BIN_EXE_nav");
    let script = format!("trap '' XFSZ; exec /usr/bin/prlimit --fsize={bytes} -- \"$0\" \"$@\"");
    Some(Command::new("sh").arg("-c").arg(script).arg(nav).args(args).output().unwrap())
}

#[test]
fn a_full_disk_under_jsonl_keeps_whole_lines_and_stops_the_suite() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.jsonl");
    let mut args: Vec<&str> = SUITE.to_vec();
    let out_s = out.to_str().unwrap().to_string();
    args.extend(["--jsonl", &out_s]);
    // room for about one and a half summaries
    let one = {
        let o = Command::new(env!("CARGO_BIN_EXE_nav"))
            .args(["eval", "--arenas", "simple", "--configs", "candidates:offline", "--json", "--jsonl", &out_s])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0));
        std::fs::metadata(&out).unwrap().len()
    };
    let Some(o) = with_file_size_limit(one + one / 2, &args) else { return };
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("suite stopped") && err.contains("last whole line"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let kept = lines_of(&out);
    assert_eq!(kept.len(), 1, "one whole summary kept");
    // merge and --resume read it
    let o = Command::new(env!("CARGO_BIN_EXE_nav")).args(["eval", "merge", &out_s, "--json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let mut resume: Vec<&str> = SUITE.to_vec();
    resume.extend(["--jsonl", &out_s, "--resume"]);
    let o = Command::new(env!("CARGO_BIN_EXE_nav")).args(&resume).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(lines_of(&out).len(), 6, "the suite completed");
}

/// Runs [`SUITE`] with `--jsonl DIR/out.jsonl` to the end: the file's path
/// and its name as text.
fn finished_suite(dir: &Path) -> (std::path::PathBuf, String) {
    let out = dir.join("out.jsonl");
    let out_s = out.to_str().unwrap().to_string();
    let o = Command::new(env!("CARGO_BIN_EXE_nav")).args(SUITE).args(["--jsonl", &out_s]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    (out, out_s)
}

#[test]
fn resume_counts_each_episode_once_ignores_other_suites_and_checks_values() {
    let dir = tempfile::tempdir().unwrap();
    let (out, out_s) = finished_suite(dir.path());
    let mut args: Vec<&str> = SUITE.to_vec();
    args.extend(["--jsonl", &out_s]);
    let mut text = std::fs::read_to_string(&out).unwrap();
    let first = text.lines().next().unwrap().to_string();
    // a duplicate, and an episode of another suite (another arena)
    let mut other: serde_json::Value = serde_json::from_str(&first).unwrap();
    other["arena"] = "somewhere_else".into();
    text.push_str(&format!("{first}\n{other}\n"));
    std::fs::write(&out, &text).unwrap();
    let mut resume = args.clone();
    resume.push("--resume");
    let o = Command::new(env!("CARGO_BIN_EXE_nav")).args(&resume).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("more than once") && err.contains("not in this suite"), "{err}");
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["summaries"].as_array().unwrap().len(), 6, "six episodes, not eight");
    // an SPL outside [0, 1] is refused, by --resume and by merge, naming the line
    let mut bad: serde_json::Value = serde_json::from_str(&first).unwrap();
    bad["spl"] = serde_json::json!(1.7e8);
    std::fs::write(&out, format!("{first}\n{bad}\n")).unwrap();
    for args in [resume.clone(), vec!["eval", "merge", &out_s]] {
        let o = Command::new(env!("CARGO_BIN_EXE_nav")).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("line 2") && err.contains("spl"), "{err}");
    }
    // more criteria passed than judged, a nameless arena
    for (key, value, needle) in
        [("passed_count", serde_json::json!(99), "passed_count"), ("arena", serde_json::json!(" "), "arena name")]
    {
        let mut bad: serde_json::Value = serde_json::from_str(&first).unwrap();
        bad[key] = value;
        std::fs::write(&out, format!("{first}\n{bad}\n")).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_nav")).args(["eval", "merge", &out_s]).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("line 2") && err.contains(needle), "{err}");
    }
    let o =
        Command::new(env!("CARGO_BIN_EXE_nav")).args(["eval", "--arenas", "simple", "--seeds", "0"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "--seeds 0 is refused");
}

/// A run killed mid-write (or a power loss) leaves a last line cut off or
/// NUL-padded: `--resume` drops it with a warning, cuts the file back to
/// its whole lines and runs that episode again; merge still refuses it.
#[test]
fn resume_drops_a_last_line_cut_off_by_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let (out, out_s) = finished_suite(dir.path());
    let mut args: Vec<&str> = SUITE.to_vec();
    args.extend(["--jsonl", &out_s]);
    let whole: Vec<String> = std::fs::read_to_string(&out).unwrap().lines().map(str::to_string).collect();
    let mut resume = args.clone();
    resume.push("--resume");
    // a whole last line without its newline: kept, and the next line not glued to it
    std::fs::write(&out, whole[..5].join("\n")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_nav")).args(&resume).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(lines_of(&out).len(), 6, "whole lines only");
    for tail in [whole[5][..40].to_string(), format!("{}{}", &whole[5][..40], "\0".repeat(64)), "\0".repeat(100)] {
        std::fs::write(&out, format!("{}\n{tail}", whole[..5].join("\n"))).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_nav")).args(["eval", "merge", &out_s]).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "merge refuses a damaged file");
        let o = Command::new(env!("CARGO_BIN_EXE_nav")).args(&resume).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{err}");
        assert!(err.contains("line 6 was cut off"), "{err}");
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(report["summaries"].as_array().unwrap().len(), 6);
        assert_eq!(lines_of(&out).len(), 6, "whole lines only");
    }
}

#[test]
fn fifos_are_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.jsonl");
    if !Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success()) {
        return;
    }
    let f = fifo.to_str().unwrap();
    let start = Instant::now();
    let wall = Duration::from_secs(60);
    let o = limited::nav_limited(&["eval", "merge", f], None, wall);
    assert_eq!(o.code, Some(2), "{o:?}");
    assert!(o.stderr.contains("not a regular file"), "{o:?}");
    let o = limited::nav_limited(
        &["eval", "--arenas", "simple", "--configs", "candidates:offline", "--jsonl", f, "--resume"],
        None,
        wall,
    );
    assert_eq!(o.code, Some(2), "{o:?}");
    let o = limited::nav_limited(&["grounding", "merge", f], None, wall);
    assert!(o.code.is_some(), "ended: {o:?}");
    assert!(o.stderr.contains("not a regular file"), "{o:?}");
    assert!(start.elapsed() < wall, "nothing blocked");
}
