//! Hostile input and hostile output (issue 20): a closed or full standard
//! output never panics, config errors never echo a credential, every reader
//! is bounded, `nav eval` keeps finished episodes and maps bad input to
//! exit 2.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn nav(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nav")).args(args).output().expect("nav runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Every subcommand that prints, with arguments that make it print.
fn printing_commands(dir: &Path) -> Vec<Vec<String>> {
    // a valid reply: `nav parse` exits 1 on an invalid one, whether or not its output was read
    let reply = write(
        dir,
        "reply.txt",
        r#"{"goal_flag": false, "angle": 30, "discovered_context": {"goal_scene_type": "hall", "why": "open"}}"#,
    );
    let grounding = write(dir, "g.txt", "the kitchen is north\n");
    let s = |v: &[&str]| v.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
    vec![
        s(&["run", "--json", "--max-steps", "3"]),
        s(&["run", "--max-steps", "3"]),
        s(&["eval", "--arenas", "house_a", "--seeds", "1", "--jobs", "1"]),
        s(&["eval", "--arenas", "house_a", "--seeds", "1", "--jobs", "1", "--json"]),
        s(&["prompt"]),
        s(&["parse", "--protocol", "objectnav", reply.to_str().unwrap()]),
        s(&["grounding", "merge", grounding.to_str().unwrap()]),
        // help and version, which clap prints
        s(&["--help"]),
        s(&["run", "--help"]),
        s(&["--version"]),
    ]
}

#[test]
fn a_full_stdout_is_exit_3_with_a_message_never_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    for args in printing_commands(dir.path()) {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_nav")).args(&args).stdout(full).output().unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(3), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.contains("writing standard output"), "{args:?}: {err}");
    }
}

#[test]
fn a_step_log_on_a_full_device_is_exit_3_naming_the_log() {
    let o = nav(&["run", "--max-steps", "3", "--log", "/dev/full"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("step log /dev/full") && err.contains("No space left"), "{err}");
    assert!(!err.contains("internal error") && !err.contains("panicked"), "{err}");
}

#[test]
fn a_closed_stdout_pipe_ends_quietly_with_0() {
    let dir = tempfile::tempdir().unwrap();
    for args in printing_commands(dir.path()) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_nav"))
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // `nav … | true`: the reader is gone before nav writes
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        let err = stderr(&o);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        // off a terminal `nav eval` prints progress lines; nothing else may appear
        let err: Vec<&str> = err.lines().filter(|l| !l.starts_with("nav eval: ")).collect();
        assert!(err.is_empty(), "{args:?}: quiet, like other Unix tools: {err:?}");
    }
}

/// A config file holding `key` in several broken ways; none of the errors
/// may print it, through `nav run` or `nav eval`.
#[test]
fn config_errors_never_print_the_api_key() {
    let dir = tempfile::tempdir().unwrap();
    let keys = [
        "sk-proj-Abc123SECRETsecret456",
        "sk-ant-api03-XyZ789secretVALUE",
        "AIzaSyD3adB33fSecretValue12345",
        "Qm9vZ2xlU2VjcmV0VG9rZW4xMjM0NTY3ODkw",
    ];
    for key in keys {
        let cases = [
            format!("[vlm]\nprovider = \"openai\"\napi_kee = \"{key}\"\n"),
            format!("[vlm]\nprovider = \"openai\"\napi_key = \"{key}\n"),
            format!("[sim]\napi_key = \"{key}\"\n"),
            format!("[vlm]\nprovider = \"openai\"\napi_key = [\"{key}\"]\n"),
            format!("[vlm]\nprovider = \"{key}\"\n"),
        ];
        for (i, text) in cases.iter().enumerate() {
            let cfg = write(dir.path(), &format!("c{i}.toml"), text);
            for cmd in ["run", "eval"] {
                let o = nav(&[cmd, "--config", cfg.to_str().unwrap()]);
                let err = stderr(&o);
                assert_eq!(o.status.code(), Some(2), "{cmd} {text}: {err}");
                assert!(err.contains("c") && err.contains("line"), "names the file and line: {err}");
                assert!(!err.contains(key), "{cmd} {text}: the key leaked: {err}");
                let tail = &key[key.len() - 8..];
                assert!(!err.contains(tail), "{cmd} {text}: part of the key leaked: {err}");
            }
        }
    }
}

#[test]
fn eval_with_a_protocol_the_arena_cannot_host_is_bad_input() {
    let o = nav(&["eval", "--arenas", "simple", "--seeds", "2"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("EpisodeSpec {"), "no debug dump: {err}");
    assert!(err.contains("builtin:simple objectnav offline") && err.contains("no object goal"), "{err}");
}

#[test]
fn the_unknown_arena_message_lists_the_built_in_arenas_once() {
    for args in [&["run", "--arena", "nope"][..], &["prompt", "--arena", "nope"], &["eval", "--arenas", "nope"]] {
        let o = nav(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(err.matches("house_a").count(), 1, "{args:?}: {err}");
    }
}

fn jsonl_lines(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    assert!(text.is_empty() || text.ends_with('\n'), "whole lines only: {text:?}");
    text.lines().map(|l| serde_json::from_str(l).expect("each line is one summary")).collect()
}

#[test]
fn eval_jsonl_keeps_every_finished_episode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("episodes.jsonl");
    let o = nav(&[
        "eval",
        "--arenas",
        "house_a,simple",
        "--configs",
        "candidates:offline",
        "--seeds",
        "2",
        "--jsonl",
        path.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines = jsonl_lines(&path);
    assert_eq!(lines.len(), 4);
    assert!(lines.iter().all(|l| l["arena"].is_string()), "{lines:?}");
    // a full device: exit 3 naming the file, no panic
    let o = nav(&["eval", "--arenas", "simple", "--configs", "candidates:offline", "--jsonl", "/dev/full"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("/dev/full") && !err.contains("panicked"), "{err}");
}

#[test]
fn sigint_during_eval_keeps_the_finished_episodes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("episodes.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_nav"))
        .args(["eval", "--arenas", "house_a", "--seeds", "400", "--jobs", "1", "--jsonl", path.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while jsonl_lines(&path).len() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let kill = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert!(!status.success(), "interrupted before 400 episodes finished");
    let lines = jsonl_lines(&path);
    assert!(lines.len() >= 2, "the finished episodes survive the signal: {}", lines.len());
}

/// Runs `nav` with `input` on standard input (written from a thread; nav
/// may stop reading early).
fn nav_stdin(args: &[&str], input: Vec<u8>) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_nav"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let o = child.wait_with_output().unwrap();
    writer.join().unwrap();
    o
}

#[test]
fn every_reader_is_bounded_and_names_its_limit() {
    let dir = tempfile::tempdir().unwrap();
    let grounding = write(dir.path(), "g.txt", "ok\n");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["run", "--arena-file", "/dev/zero"], "16 MiB limit"),
        (vec!["prompt", "--arena-file", "/dev/zero"], "16 MiB limit"),
        (vec!["replay", "/dev/zero", "--plot", "x.svg"], "64 MiB limit"),
        (vec!["run", "--config", "/dev/zero"], "1 MiB limit"),
        (vec!["eval", "--config", "/dev/zero"], "1 MiB limit"),
        (vec!["grounding", "merge", grounding.to_str().unwrap(), "/dev/zero"], "16 MiB limit"),
        (vec!["parse", "--protocol", "objectnav", "/dev/zero"], "4 MiB limit"),
    ];
    for (args, limit) in cases {
        let o = nav(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(limit), "{args:?}: {err}");
    }
    // a reply on standard input: the default limit, and --max-bytes
    let big = vec![b' '; (4 << 20) + 10];
    let o = nav_stdin(&["parse", "--protocol", "objectnav"], big.clone());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("4 MiB limit") && stderr(&o).contains("--max-bytes"), "{}", stderr(&o));
    let o = nav_stdin(&["parse", "--protocol", "objectnav", "--max-bytes", "8388608"], big);
    // read in full; blanks are no decision, so "ok": false and exit 1
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o =
        nav_stdin(&["parse", "--protocol", "objectnav", "--max-bytes", "10"], b"{\"action\": \"forward\"}".to_vec());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("10-byte limit"), "{}", stderr(&o));
}
