//! `nav eval --shard K/N`, `--resume` and `nav eval merge` (issue 21): the
//! shards of a suite, merged, give the report of the unsharded run, and a
//! resumed shard runs only what its JSON lines lack.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn nav(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nav")).args(args).output().expect("nav runs")
}

fn ok(o: &Output) -> String {
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{}\n{out}", String::from_utf8_lossy(&o.stderr));
    out
}

/// A small default suite (every kind of episode the default suite has).
const SUITE: [&str; 6] = ["--house-seeds", "1", "--procedural", "2", "--jobs", "2"];

/// The report without what wall-clock time decides (durations, jobs and
/// the measured local overhead).
fn deterministic(report: &str) -> Value {
    let mut v: Value = serde_json::from_str(report).unwrap();
    let o = v.as_object_mut().unwrap();
    o.remove("wall_s");
    o.remove("jobs");
    for a in o["aggregates"].as_array_mut().unwrap() {
        a.as_object_mut().unwrap().remove("median_overhead_ms");
    }
    for s in o["summaries"].as_array_mut().unwrap() {
        let s = s.as_object_mut().unwrap();
        s.remove("wall_ms");
        s.remove("median_overhead_ms");
    }
    v
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap().lines().map(str::to_string).collect()
}

#[test]
fn three_shards_merged_equal_the_unsharded_suite() {
    let dir = tempfile::tempdir().unwrap();
    let whole_md_path = dir.path().join("whole.md");
    let mut args = vec!["eval", "--json", "--markdown", whole_md_path.to_str().unwrap()];
    args.extend(SUITE);
    let whole = deterministic(&ok(&nav(&args)));
    let whole_md = std::fs::read_to_string(&whole_md_path).unwrap();
    let mut files = Vec::new();
    for k in 1..=3 {
        let path = dir.path().join(format!("shard-{k}.jsonl"));
        let shard = format!("{k}/3");
        let mut a = vec!["eval", "--shard", &shard, "--jsonl", path.to_str().unwrap()];
        a.extend(SUITE);
        ok(&nav(&a));
        files.push(path);
    }
    let mut merge = vec!["eval", "merge", "--json"];
    merge.extend(files.iter().map(|p| p.to_str().unwrap()));
    let merged = deterministic(&ok(&nav(&merge)));
    assert_eq!(merged, whole);
    // the Markdown table too, but for the header's wall time and the measured overhead
    let table = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with('|'))
            .map(|l| {
                let cells: Vec<&str> = l.split('|').collect();
                if cells.len() > 15 { cells[..cells.len() - 2].join("|") } else { l.to_string() }
            })
            .collect()
    };
    let merged_md =
        ok(&nav(&merge[..2].iter().copied().chain(files.iter().map(|p| p.to_str().unwrap())).collect::<Vec<_>>()));
    assert_eq!(table(&merged_md), table(&whole_md));
    // each episode ran in exactly one shard
    let total: usize = files.iter().map(|p| lines(p).len()).sum();
    assert_eq!(total, whole["summaries"].as_array().unwrap().len());
}

#[test]
fn resume_runs_only_the_missing_episodes_and_merge_counts_duplicates_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let p = path.to_str().unwrap();
    let mut a = vec!["eval", "--shard", "1/2", "--jsonl", p];
    a.extend(SUITE);
    ok(&nav(&a));
    let full = lines(&path);
    assert!(full.len() >= 3, "{full:?}");
    // an interrupted job: two episodes written
    std::fs::write(&path, format!("{}\n{}\n", full[0], full[1])).unwrap();
    let mut r = vec!["eval", "--shard", "1/2", "--jsonl", p, "--resume", "--json"];
    r.extend(SUITE);
    let report: Value = serde_json::from_str(&ok(&nav(&r))).unwrap();
    let after = lines(&path);
    assert_eq!(after.len(), full.len(), "each episode once");
    assert_eq!(&after[..2], &full[..2], "kept lines untouched");
    assert_eq!(report["summaries"].as_array().unwrap().len(), full.len());
    // merging the same file twice counts each episode once
    let o = nav(&["eval", "merge", "--json", p, p]);
    let merged: Value = serde_json::from_str(&ok(&o)).unwrap();
    assert_eq!(merged["summaries"].as_array().unwrap().len(), full.len());
    assert!(String::from_utf8_lossy(&o.stderr).contains("more than once"));
}

#[test]
fn bad_shards_and_bad_lines_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["0/3", "4/3", "x", "1/0"] {
        let o = nav(&["eval", "--shard", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
    }
    let o = nav(&["eval", "--resume"]);
    assert_eq!(o.status.code(), Some(2), "--resume needs --jsonl");
    let junk = dir.path().join("junk.jsonl");
    std::fs::write(&junk, "{\"arena\": 1}\n").unwrap();
    let o = nav(&["eval", "merge", junk.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("junk.jsonl, line 1"), "{err}");
    let o = nav(&["eval", "merge", "/nonexistent.jsonl"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn configs_without_arenas_run_in_the_default_suites_houses() {
    // the map baseline's row: the same houses the default suite's ObjectNav rows use
    let out = ok(&nav(&[
        "eval",
        "--configs",
        "objectnav:frontier:on",
        "--house-seeds",
        "1",
        "--procedural",
        "1",
        "--jobs",
        "2",
        "--json",
    ]));
    let v: Value = serde_json::from_str(&out).unwrap();
    let s = v["summaries"].as_array().unwrap();
    let mut arenas: Vec<&str> = s.iter().map(|e| e["arena"].as_str().unwrap()).collect();
    arenas.sort_unstable();
    assert_eq!(arenas, ["house_a", "house_b", "house_c", "proc_1"]);
    assert!(s.iter().all(|e| e["planner"] == "frontier" && e["protocol"] == "objectnav"), "{out}");
    let bad = nav(&["eval", "--configs", "objectnav:nosuch:on", "--house-seeds", "1", "--procedural", "0"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("nosuch"), "{}", String::from_utf8_lossy(&bad.stderr));
}
