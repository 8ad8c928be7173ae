//! `nav run --protocol explore --memory-file PATH` (issue 16 item 2): the
//! exploration memory is saved atomically at the end (YAML, or JSON for a
//! `.json` name), loaded by the next run, and a bad file or a misplaced flag
//! is a usage error (exit 2) naming the problem.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};

fn nav(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nav")).args(args).output().expect("nav runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn explore(path: &str) -> Output {
    nav(&["run", "--protocol", "explore", "--max-steps", "4", "--memory-file", path])
}

#[test]
fn the_session_file_is_written_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["session.yaml", "session.json"] {
        let path = dir.path().join(name);
        let p = path.to_str().unwrap();
        let first = explore(p);
        assert!(first.status.code().is_some_and(|c| c <= 1), "{}", stderr(&first));
        let text = std::fs::read_to_string(&path).unwrap();
        let memory = nav_memory::ExplorationMemory::load(&path).unwrap();
        assert!(memory.duration_s() > 0.0, "{text}");
        if name.ends_with(".yaml") {
            assert!(text.starts_with("format: navkit-exploration\n"), "{text}");
        } else {
            assert!(text.trim_start().starts_with('{'), "{text}");
        }
        // the next session starts from it and goes on
        let second = explore(p);
        assert!(second.status.code().is_some_and(|c| c <= 1), "{}", stderr(&second));
        let again = nav_memory::ExplorationMemory::load(&path).unwrap();
        assert!(again.duration_s() > memory.duration_s(), "{} then {}", memory.duration_s(), again.duration_s());
    }
}

#[test]
fn a_bad_file_or_a_misplaced_flag_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.yaml");
    std::fs::write(&path, "format: navkit-exploration\nversion: 1\nexploration: [").unwrap();
    let out = explore(path.to_str().unwrap());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--memory-file") && stderr(&out).contains("broken.yaml"), "{}", stderr(&out));
    // the broken file is left as it was
    assert!(std::fs::read_to_string(&path).unwrap().ends_with('['));
    let out = nav(&["run", "--max-steps", "2", "--memory-file", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--protocol explore"), "{}", stderr(&out));
}

#[path = "support/limited.rs"]
mod limited;

/// A real saved session's text, made once.
fn saved_session() -> String {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.yaml");
        let o = explore(path.to_str().unwrap());
        assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
        std::fs::read_to_string(&path).unwrap()
    })
    .clone()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 12, failure_persistence: None, ..Default::default() })]

    /// Deep nesting (also behind a tag, or under JSON-style keys), huge
    /// item counts and non-finite coordinates are each exit 2 naming the
    /// file, quickly, under a 4 GiB address-space limit.
    #[test]
    fn hostile_memory_files_are_exit_2(
        kind in 0u8..6,
        depth in 33usize..60_000,
        items in 20_001usize..150_000,
        bad in proptest::sample::select(vec![".nan", ".inf", "-.inf", ".NaN"]),
    ) {
        let text = match kind {
            0 => format!("format: navkit-exploration\nversion: 1\nexploration: {}", "[".repeat(depth)),
            1 => format!(
                "format: navkit-exploration\nversion: 1\nexploration:\n{}",
                (0..depth.min(2000)).map(|i| format!("{}- x\n", " ".repeat(2 * i))).collect::<String>()
            ),
            2 => format!("format: navkit-exploration\nversion: 1\nexploration:\n  rooms:\n{}", "  - 1\n".repeat(items)),
            3 => format!("format: navkit-exploration\nversion: 1\nexploration: !!seq {}", "[".repeat(depth)),
            4 => format!("format: navkit-exploration\nversion: 1\nexploration: {{\"rooms\":{}", "[".repeat(depth)),
            _ => {
                let s = saved_session();
                // the first coordinate of the file (a room's entry point)
                let at = s.find("x: ").unwrap() + 3;
                let end = at + s[at..].find('\n').unwrap();
                format!("{}{bad}{}", &s[..at], &s[end..])
            }
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hostile.yaml");
        std::fs::write(&path, &text).unwrap();
        let p = path.to_str().unwrap();
        let o = limited::nav_limited(
            &["run", "--protocol", "explore", "--max-steps", "4", "--memory-file", p],
            None,
            std::time::Duration::from_secs(30),
        );
        proptest::prop_assert_eq!(o.code, Some(2), "{:?}", o);
        proptest::prop_assert!(o.stderr.contains("hostile.yaml"), "{}", o.stderr);
        proptest::prop_assert!(o.secs < 20.0, "{} s", o.secs);
        // and it is left as it was, never saved back
        proptest::prop_assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }
}

#[test]
fn a_memory_file_that_cannot_be_written_is_exit_3_after_the_summary_a_picture_exit_2_before() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_dir = dir.path().join("plain.txt");
    std::fs::write(&not_a_dir, "a file, not a folder").unwrap();
    let memory = not_a_dir.join("session.yaml");
    let o =
        nav(&["run", "--protocol", "explore", "--max-steps", "4", "--json", "--memory-file", memory.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("--memory-file"), "{}", stderr(&o));
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(summary["output_error"].as_str().is_some_and(|e| e.contains("plain.txt")), "{summary}");
    // a picture whose folder is a file is refused before the run (nothing to lose)
    let plot = not_a_dir.join("x.svg");
    let o = nav(&["run", "--max-steps", "4", "--plot", plot.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--plot") && stderr(&o).contains("not a folder"), "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "nothing ran");
}
