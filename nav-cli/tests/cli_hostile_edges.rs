//! Edges a third hostile-input pass found: merged eval lines that do not
//! add up, a grounding file rewritten by `nav grounding generate` (unknown
//! keys kept, a stored key not printed again, the grounding read limit), a
//! byte-order mark before a file, `nav replay` flags that only draw, and
//! step logs whose step numbers do not rise. Each run is under an
//! address-space and a wall-clock limit (`support/limited.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/limited.rs"]
mod limited;

use std::time::Duration;

const WALL: Duration = Duration::from_secs(60);

/// One real eval line, made once.
fn eval_line() -> serde_json::Value {
    static LINE: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    LINE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let jsonl = dir.path().join("e.jsonl");
        let o = limited::nav_limited(
            &["eval", "--arenas", "simple", "--configs", "explore:frontier:on", "--jsonl", jsonl.to_str().unwrap()],
            None,
            WALL,
        );
        assert_eq!(o.code, Some(0), "{o:?}");
        let text = std::fs::read_to_string(&jsonl).unwrap();
        serde_json::from_str(text.lines().next().unwrap()).unwrap()
    })
    .clone()
}

/// An eval line whose names are invisible, whose protocol is unknown, or
/// whose criteria do not add up is refused by `nav eval merge` (exit 2,
/// naming the field); the real line merges.
#[test]
fn merged_lines_must_add_up() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("e.jsonl");
    let j = jsonl.to_str().unwrap();
    let good = eval_line();
    std::fs::write(&jsonl, format!("{good}\n")).unwrap();
    let o = limited::nav_limited(&["eval", "merge", j], None, WALL);
    assert_eq!(o.code, Some(0), "{o:?}");
    let total = good["total_count"].as_u64().unwrap();
    assert!(total >= 1, "{good}");
    let cases: Vec<(&str, serde_json::Value, &str)> = vec![
        ("arena", serde_json::json!("\u{200b}"), "arena name"),
        ("arena", serde_json::json!(" \u{feff} "), "arena name"),
        ("arena", serde_json::json!("\u{3164}\u{202e}"), "arena name"),
        ("planner", serde_json::json!("\u{2800}\u{0301}\u{e0020}"), "planner name"),
        ("planner", serde_json::json!(""), "planner name"),
        ("protocol", serde_json::json!(""), "protocol"),
        ("protocol", serde_json::json!("teleport"), "protocol"),
        ("total_count", serde_json::json!(0), "total_count"),
    ];
    for (field, value, named) in cases {
        let mut line = good.clone();
        line[field] = value.clone();
        if field == "total_count" {
            line["passed_count"] = serde_json::json!(0);
        }
        std::fs::write(&jsonl, format!("{line}\n")).unwrap();
        let o = limited::nav_limited(&["eval", "merge", j], None, WALL);
        assert_eq!(o.code, Some(2), "{field}={value}: {o:?}");
        assert!(o.stderr.contains(named), "{field}={value}: {}", o.stderr);
    }
    // passed means every criterion passed
    let mut line = good.clone();
    line["passed"] = serde_json::json!(true);
    line["passed_count"] = serde_json::json!(total - 1);
    std::fs::write(&jsonl, format!("{line}\n")).unwrap();
    let o = limited::nav_limited(&["eval", "merge", j], None, WALL);
    assert_eq!(o.code, Some(2), "{o:?}");
    assert!(o.stderr.contains("passed is true but"), "{}", o.stderr);
}

/// `nav grounding generate` rewrites only the final grounding: keys it does
/// not know stay, a key pasted into the feedback is not printed or stored
/// again, and a file over the grounding read limit is refused before any
/// work (as every other reader of grounding files refuses it).
#[test]
fn grounding_generate_keeps_what_it_does_not_own() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("grounding_episode_3.json");
    let key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";
    let file = serde_json::json!({
        "expr_info": {"episode_id": 3},
        "grounding_per_step": [],
        "stacked_grounding": {"spatial": [format!("[ Step1 - WiP ] : the key is {key} and the kitchen is green")]},
        "final_grounding": null,
        "tool_version": "python-0.4",
        "notes": {"by": "hand"}
    });
    std::fs::write(&path, format!("\u{feff}{file}")).unwrap();
    let o = limited::nav_limited(&["grounding", "generate", path.to_str().unwrap()], None, WALL);
    assert_eq!(o.code, Some(0), "{o:?}");
    assert!(!o.stdout.contains(key) && !o.stderr.contains(key), "{o:?}");
    let text = std::fs::read_to_string(&path).unwrap();
    let saved: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(saved["tool_version"], "python-0.4");
    assert_eq!(saved["notes"]["by"], "hand");
    assert!(saved["final_grounding"].is_object(), "{saved}");
    assert!(!saved["final_grounding"].to_string().contains(key), "{saved}");
    // over the 16 MiB every grounding reader takes: refused, left as it was
    let big = serde_json::json!({"expr_info": {"episode_id": 4}, "pad": "x".repeat(17 << 20)});
    let big_path = dir.path().join("big.json");
    std::fs::write(&big_path, big.to_string()).unwrap();
    let before = std::fs::metadata(&big_path).unwrap().len();
    let o = limited::nav_limited(&["grounding", "generate", big_path.to_str().unwrap()], None, WALL);
    assert_eq!(o.code, Some(2), "{o:?}");
    assert!(o.stderr.contains("limit"), "{}", o.stderr);
    assert_eq!(std::fs::metadata(&big_path).unwrap().len(), before);
}

/// A byte-order mark before a memory file, a config or an arena file is
/// not content: the file is read as without it.
#[test]
fn a_byte_order_mark_is_not_content() {
    let dir = tempfile::tempdir().unwrap();
    let memory = dir.path().join("s.yaml");
    let m = memory.to_str().unwrap();
    let o = limited::nav_limited(&["run", "--protocol", "explore", "--max-steps", "3", "--memory-file", m], None, WALL);
    assert!(o.code.is_some_and(|c| c <= 1), "{o:?}");
    let text = std::fs::read_to_string(&memory).unwrap();
    std::fs::write(&memory, format!("\u{feff}{text}")).unwrap();
    let o = limited::nav_limited(&["run", "--protocol", "explore", "--max-steps", "3", "--memory-file", m], None, WALL);
    assert!(o.code.is_some_and(|c| c <= 1), "{o:?}");
    // a step log and an eval file
    let log = dir.path().join("r.jsonl");
    let o = limited::nav_limited(&["run", "--max-steps", "3", "--log", log.to_str().unwrap()], None, WALL);
    assert!(o.code.is_some_and(|c| c <= 1), "{o:?}");
    std::fs::write(&log, format!("\u{feff}{}", std::fs::read_to_string(&log).unwrap())).unwrap();
    let o = limited::nav_limited(&["replay", log.to_str().unwrap()], None, WALL);
    assert_eq!(o.code, Some(0), "{o:?}");
    let jsonl = dir.path().join("e.jsonl");
    std::fs::write(&jsonl, format!("\u{feff}{}\n", eval_line())).unwrap();
    let o = limited::nav_limited(&["eval", "merge", jsonl.to_str().unwrap()], None, WALL);
    assert_eq!(o.code, Some(0), "{o:?}");
    let config = dir.path().join("c.toml");
    std::fs::write(&config, "\u{feff}[objectnav]\n").unwrap();
    let o = limited::nav_limited(&["run", "--max-steps", "3", "--config", config.to_str().unwrap()], None, WALL);
    assert!(o.code.is_some_and(|c| c <= 1), "{o:?}");
}

/// `--arena` and `--arena-file` only choose what `--plot` draws on: without
/// `--plot` they are a usage error, not silently ignored (a missing file
/// went unnoticed); step numbers that do not rise are warned about.
#[test]
fn replay_flags_that_only_draw_and_steps_out_of_order() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("r.jsonl");
    let l = log.to_str().unwrap();
    let o = limited::nav_limited(&["run", "--max-steps", "5", "--log", l], None, WALL);
    assert!(o.code.is_some_and(|c| c <= 1), "{o:?}");
    for extra in [["--arena-file", "/nonexistent/arena.json"], ["--arena", "simple"]] {
        let o = limited::nav_limited(&["replay", l, extra[0], extra[1]], None, WALL);
        assert_eq!(o.code, Some(2), "{o:?}");
        assert!(o.stderr.contains("--plot"), "{}", o.stderr);
    }
    let o = limited::nav_limited(&["replay", l], None, WALL);
    assert_eq!(o.code, Some(0), "{o:?}");
    assert!(!o.stderr.contains("do not rise"), "{}", o.stderr);
    // the records reversed (the first, with the run's info, stays first), then one duplicated
    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[1..].reverse();
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let o = limited::nav_limited(&["replay", l], None, WALL);
    assert_eq!(o.code, Some(0), "{o:?}");
    assert!(o.stderr.contains("step numbers do not rise"), "{}", o.stderr);
    lines[1..].reverse();
    lines.insert(2, lines[1]);
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let o = limited::nav_limited(&["replay", l], None, WALL);
    assert!(o.stderr.contains("step numbers do not rise") && o.stderr.contains("1 time(s)"), "{}", o.stderr);
}

/// An output never replaces a file the configuration reads: the config
/// file itself or one of its `[grounding] files`, for `nav eval --jsonl` /
/// `--markdown` and `nav run --log` alike (exit 2, the file unchanged).
#[test]
fn outputs_never_replace_what_the_config_reads() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.toml");
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "The kitchen is green.\n").unwrap();
    std::fs::write(&config, "[grounding]\nfiles = [\"notes.txt\"]\n").unwrap();
    let (c, n) = (config.to_str().unwrap(), notes.to_str().unwrap());
    let before = (std::fs::read(&config).unwrap(), std::fs::read(&notes).unwrap());
    let eval = ["eval", "--arenas", "simple", "--configs", "candidates:offline", "--config", c];
    for (flag, target) in [("--jsonl", c), ("--markdown", c), ("--jsonl", n)] {
        let mut args = eval.to_vec();
        args.extend([flag, target]);
        let o = limited::nav_limited(&args, None, WALL);
        assert_eq!(o.code, Some(2), "{flag} {target}: {o:?}");
    }
    let o = limited::nav_limited(&["run", "--max-steps", "3", "--config", c, "--log", n], None, WALL);
    assert_eq!(o.code, Some(2), "{o:?}");
    assert_eq!((std::fs::read(&config).unwrap(), std::fs::read(&notes).unwrap()), before);
}
