//! Grounding feedback is bounded: `--feedback FILE` and `--feedback -` read
//! at most a capped line and a capped total, every dropped line is named in
//! a warning (too long, not UTF-8, an unknown category), a typed line can
//! set the step's status, and what a run writes the next run can read.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/limited.rs"]
mod limited;

use proptest::prelude::*;
use std::path::Path;
use std::time::Duration;

const WALL: Duration = Duration::from_secs(120);

fn run_in(dir: &Path, experiment: &str, feedback: &str, stdin: Option<&Path>) -> limited::Limited {
    let logs = dir.join("logs");
    limited::nav_limited(
        &[
            "run",
            "--max-steps",
            "5",
            "--experiment",
            experiment,
            "--logs-dir",
            logs.to_str().unwrap(),
            "--feedback",
            feedback,
        ],
        stdin,
        WALL,
    )
}

#[test]
fn endless_or_huge_feedback_is_cut_and_the_next_run_still_reads_the_experiment() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // a file of zeros with no newline: the line limit, exit 2
    let o = run_in(dir, "zero", "/dev/zero", None);
    assert_eq!(o.code, Some(2), "{o:?}");
    assert!(o.stderr.contains("/dev/zero line 1") && o.stderr.contains("limit"), "{o:?}");
    // standard input: an endless stream is read up to the total limit, then the run goes on
    let o = run_in(dir, "zero", "-", Some(Path::new("/dev/zero")));
    assert!(matches!(o.code, Some(0 | 1)), "{o:?}");
    assert!(o.stderr.contains("line 1 dropped") && o.stderr.contains("the rest is not read"), "{o:?}");
    // a 20 MB stdin of long typed lines: each dropped and named, files stay readable
    let big = dir.join("big.txt");
    let line = format!("spatial: {}\n", "x".repeat(40_000));
    std::fs::write(&big, line.repeat(500)).unwrap();
    let o = run_in(dir, "big", "-", Some(&big));
    assert!(matches!(o.code, Some(0 | 1)), "{o:?}");
    assert!(o.stderr.contains("feedback line 1 dropped") && o.stderr.contains("feedback line 2 dropped"), "{o:?}");
    let again = run_in(dir, "big", "-", None);
    assert!(matches!(again.code, Some(0 | 1)), "the experiment is not bricked: {again:?}");
}

#[test]
fn dropped_lines_are_named_and_typed_status_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let input = dir.join("typed.txt");
    let mut bytes = b"Failure: spatial: the kitchen is not here\n".to_vec();
    bytes.extend_from_slice(b"\xff\xfe not utf-8\n");
    bytes.extend_from_slice(b"spacial: typo\nsuccess: found the tv\n");
    std::fs::write(&input, bytes).unwrap();
    let o = run_in(dir, "typed", "-", Some(&input));
    assert!(matches!(o.code, Some(0 | 1)), "{o:?}");
    assert!(o.stderr.contains("feedback line 2 dropped: it is not UTF-8"), "{o:?}");
    assert!(o.stderr.contains("spacial: typo"), "{o:?}");
    let json = std::fs::read_to_string(dir.join("logs/typed/grounding/grounding_latest.json")).unwrap();
    assert!(json.contains("[ Step1 - Failure ] : the kitchen is not here"), "{json}");
    assert!(json.contains("- Success ] : found the tv"), "{json}");
    // a file entry in an unknown category: dropped with a warning naming the line
    let file = dir.join("fb.jsonl");
    std::fs::write(
        &file,
        "{\"step_id\": 1, \"status\": \"WiP\", \"feedback\": {\"spacial\": \"x\", \"spatial\": \"y\"}}\n",
    )
    .unwrap();
    let o = run_in(dir, "typed", file.to_str().unwrap(), None);
    assert!(matches!(o.code, Some(0 | 1)), "{o:?}");
    assert!(o.stderr.contains("fb.jsonl line 1") && o.stderr.contains("\"spacial\" dropped"), "{o:?}");
}

#[test]
fn an_overlong_or_control_character_experiment_name_is_refused_before_the_episode() {
    let tmp = tempfile::tempdir().unwrap();
    let name = "e".repeat(256);
    let o =
        limited::nav_limited(&["run", "--experiment", &name, "--logs-dir", tmp.path().to_str().unwrap()], None, WALL);
    assert_eq!(o.code, Some(2), "{o:?}");
    assert!(o.stderr.contains("255") && !o.stderr.contains("internal error"), "{o:?}");
    // a line break or an escape sequence would become part of a folder name
    for name in ["a\nb", "\u{1b}[31mred", "tab\there"] {
        let o = limited::nav_limited(
            &["run", "--experiment", name, "--logs-dir", tmp.path().to_str().unwrap(), "--max-steps", "3"],
            None,
            WALL,
        );
        assert_eq!(o.code, Some(2), "{name:?}: {o:?}");
        assert!(o.stderr.contains("control characters") && !o.stderr.contains('\u{1b}'), "{o:?}");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "no folder made");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, failure_persistence: None, ..ProptestConfig::default() })]

    /// Many feedback lines of random sizes and bytes: linear, bounded, and
    /// the grounding files written are ones the next run reads.
    #[test]
    fn random_feedback_streams_end_cleanly(
        lines in proptest::collection::vec((0usize..30_000, any::<u8>(), 0u8..4), 1..400),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let mut bytes = Vec::new();
        for (len, b, kind) in &lines {
            match kind {
                0 => bytes.extend_from_slice(format!("spatial: fact {len}").as_bytes()),
                1 => bytes.extend(std::iter::repeat_n(*b, *len)),
                2 => bytes.extend_from_slice(format!("general: {}", "y".repeat(*len)).as_bytes()),
                _ => bytes.extend_from_slice(b"wip: procedural: slow down"),
            }
            bytes.push(b'\n');
        }
        let input = dir.join("in.txt");
        std::fs::write(&input, &bytes).unwrap();
        let o = run_in(dir, "p", "-", Some(&input));
        prop_assert!(matches!(o.code, Some(0 | 1)), "{:?}", o);
        let next = run_in(dir, "p", "-", None);
        prop_assert!(matches!(next.code, Some(0 | 1)), "{:?}", next);
    }
}

/// `nav grounding generate` adds a final grounding to a file and writes it
/// back: when that would pass the 16 MiB every reader of grounding files
/// takes, it writes nothing (the experiment stays readable) and says why.
#[test]
fn grounding_generate_never_writes_a_file_the_next_run_cannot_read() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("grounding_latest.json");
    let entries: Vec<String> =
        (0..150_000).map(|i| format!("[ Step{i} - WiP ] : fact number {i} {}", "x".repeat(40))).collect();
    let doc = serde_json::json!({"expr_info": {"episode_id": 1}, "stacked_grounding": {"spatial": entries}});
    std::fs::write(&path, doc.to_string()).unwrap();
    let before = std::fs::read(&path).unwrap();
    assert!(before.len() < 16 << 20);
    let o = limited::nav_limited(&["grounding", "generate", path.to_str().unwrap()], None, WALL);
    assert_eq!(o.code, Some(2), "{o:?}");
    assert!(o.stderr.contains("16 MiB") && o.stderr.contains("nothing was written"), "{o:?}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "the file is unchanged");
}

/// Feedback is kept in the experiment's files, printed by `grounding merge`
/// and put into later system prompts: a key typed into it by mistake (a
/// known key shape) is never kept.
#[test]
fn a_key_typed_into_feedback_is_never_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let key = "sk-proj-abcdEFGH1234ijklMNOP5678";
    let typed = dir.join("typed.txt");
    std::fs::write(&typed, format!("spatial: the kitchen; my key is {key}\n")).unwrap();
    let o = run_in(dir, "k1", "-", Some(&typed));
    assert!(matches!(o.code, Some(0 | 1)), "{o:?}");
    let file = dir.join("fb.jsonl");
    let entry = serde_json::json!({"step_id": 1, "status": "WiP", "feedback": {"general": format!("use {key}")}});
    std::fs::write(&file, format!("{entry}\n")).unwrap();
    let o = run_in(dir, "k2", file.to_str().unwrap(), None);
    assert!(matches!(o.code, Some(0 | 1)), "{o:?}");
    for exp in ["k1", "k2"] {
        let json = std::fs::read_to_string(dir.join(format!("logs/{exp}/grounding/grounding_latest.json"))).unwrap();
        assert!(!json.contains(key) && json.contains("[REDACTED]"), "{exp}: {json}");
    }
}
