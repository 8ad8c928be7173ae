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
