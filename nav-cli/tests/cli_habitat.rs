//! `nav habitat` through the real binary against the bridge's `openroom`
//! backend (standard-library Python only): the report contract, text and
//! JSON output, TCP attach, the config file, and exit 2 when the bridge
//! cannot start.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn nav(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nav")).args(args).env_remove("PYTHONPATH").output().expect("nav runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The bridge command users type; `nav` adds the checkout's package to
/// PYTHONPATH itself.
const OPENROOM: &str = "python3 -m navkit_bridge --backend openroom";

#[test]
fn json_report_has_every_episode_judged_by_the_simulator() {
    let o = nav(&["habitat", "--bridge", OPENROOM, "--episodes", "3", "--json"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("one JSON object on stdout");
    assert_eq!(v["backend"], "openroom");
    assert_eq!(v["planner"], "offline");
    assert_eq!(v["requested"], 3);
    assert!(v["aborted"].is_null());
    let eps = v["episodes"].as_array().unwrap();
    assert_eq!(eps.len(), 3);
    for e in eps {
        assert_eq!(e["judged_by_simulator"], true, "{e}");
        for key in ["success", "spl", "distance_to_goal", "sim_metrics", "steps", "planner_calls", "ababa", "stuck"] {
            assert!(e.get(key).is_some(), "{key} missing in {e}");
        }
        assert!(e["sim_metrics"]["geodesic_m"].as_f64().unwrap() > 0.0);
    }
    let a = &v["aggregate"];
    for key in ["sr", "spl", "ababa", "stuck", "planner_calls", "mean_planner_calls", "median_step_overhead_ms"] {
        assert!(a.get(key).is_some(), "{key} missing in {a}");
    }
    let successes = eps.iter().filter(|e| e["success"] == true).count() as f64;
    assert!((a["sr"].as_f64().unwrap() - successes / 3.0).abs() < 1e-9);
    // progress lines go to stderr with --json
    assert!(stderr(&o).contains("[1/3] openroom-0: "), "{}", stderr(&o));
}

#[test]
fn text_output_has_a_line_per_episode_and_the_table() {
    let o = nav(&["habitat", "--bridge", OPENROOM, "--episodes", "2", "--first-index", "4", "--memory", "off"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("[1/2] openroom-4: ") && out.contains("[2/2] openroom-5: "), "{out}");
    assert!(out.contains("| episodes | SR | SPL |"), "{out}");
    assert!(out.contains("planner offline") && out.contains("memory off"), "{out}");
}

#[test]
fn attaches_to_a_listening_bridge() {
    let package = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../nav-hal/bridge");
    let mut server = Command::new("python3")
        .args(["-m", "navkit_bridge", "--backend", "openroom", "--listen", "127.0.0.1:0", "--once"])
        .env("PYTHONPATH", &package)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let v: serde_json::Value = serde_json::from_str(line.trim()).expect("the listening line");
    let addr = v["listening"].as_str().unwrap().to_string();
    let o = nav(&["habitat", "--bridge", &addr, "--episodes", "1", "--json"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["episodes"].as_array().unwrap().len(), 1);
    assert!(server.wait().unwrap().success(), "--once: the server exits after the client leaves");
}

#[test]
fn the_config_file_sets_the_run_and_flags_override_it() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("nav.toml");
    std::fs::write(&cfg, "[habitat]\nepisodes = 2\nseed = 100\n\n[bridge]\nstep_timeout_s = 10.0\n").unwrap();
    let o = nav(&["habitat", "--bridge", OPENROOM, "--config", cfg.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let eps = v["episodes"].as_array().unwrap();
    assert_eq!(eps.len(), 2);
    assert_eq!(eps[1]["episode_id"], "openroom-101", "episode k from seed 100 + k");
    let o = nav(&["habitat", "--bridge", OPENROOM, "--config", cfg.to_str().unwrap(), "--episodes", "1", "--json"]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["episodes"].as_array().unwrap().len(), 1);
    // an unknown key is bad input naming the key
    std::fs::write(&cfg, "[habitat]\nepisode = 2\n").unwrap();
    let o = nav(&["habitat", "--bridge", OPENROOM, "--config", cfg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("episode"), "{}", stderr(&o));
}

#[test]
fn a_bridge_that_cannot_start_is_exit_2_with_the_reason() {
    // Habitat is not installed here: the backend's install message comes through
    let o =
        nav(&["habitat", "--bridge", "python3 -m navkit_bridge --backend habitat --config x.yaml", "--episodes", "1"]);
    assert_eq!(o.status.code(), Some(2), "stderr: {}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("the bridge could not start") && err.contains("habitat-sim"), "{err}");
    // no such program
    let o = nav(&["habitat", "--bridge", "no-such-simulator-program --serve"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no-such-simulator-program"), "{}", stderr(&o));
    // a command line that does not parse
    let o = nav(&["habitat", "--bridge", "python3 'unterminated"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--bridge"), "{}", stderr(&o));
    // a VLM planner without a provider
    let o = nav(&["habitat", "--bridge", OPENROOM, "--planner", "vlm"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--vlm"), "{}", stderr(&o));
}

#[test]
fn a_recording_holds_every_episode_one_after_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let (log, rec) = (dir.path().join("h.jsonl"), dir.path().join("h.mcap"));
    let o = nav(&[
        "habitat",
        "--bridge",
        OPENROOM,
        "--episodes",
        "2",
        "--log",
        log.to_str().unwrap(),
        "--record",
        rec.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    assert!(stdout(&o).contains("recording: "), "{}", stdout(&o));
    let logged = nav_planner::navigator::read_log(&log).unwrap().0;
    let bytes = std::fs::read(&rec).unwrap();
    let (mut steps, mut topics, mut last) = (Vec::new(), std::collections::BTreeSet::new(), 0);
    for m in mcap::MessageStream::new(&bytes).unwrap() {
        let m = m.unwrap();
        assert!(m.log_time >= last, "log times never go back, across episodes too");
        last = m.log_time;
        topics.insert(m.channel.topic.clone());
        if m.channel.topic == "/navkit/step" {
            steps.push(serde_json::from_slice::<nav_planner::navigator::StepRecord>(&m.data).unwrap());
        }
    }
    assert_eq!(steps, logged, "both episodes' step records, in order");
    assert_eq!(steps.iter().filter(|s| s.step == 0).count(), 2, "two episodes");
    for t in ["/pose", "/tf", "/camera/panorama", "/scene"] {
        assert!(topics.contains(t), "{t} in {topics:?}");
    }
    // nav replay reads the recording (the first episode's arena info is the bridge's)
    let plot = dir.path().join("h.png");
    let r = nav(&["replay", rec.to_str().unwrap(), "--plot", plot.to_str().unwrap()]);
    let l = nav(&["replay", log.to_str().unwrap(), "--plot", plot.to_str().unwrap()]);
    assert_eq!(r.status.code(), l.status.code(), "replay treats the recording as the log: {}", stderr(&r));
}

/// After `cargo install` there is no checkout next to `nav`: the bridge
/// package built into the binary is written to the cache and used.
#[test]
fn a_nav_away_from_the_checkout_uses_its_built_in_bridge_package() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let moved = bin.join("nav");
    std::fs::copy(env!("CARGO_BIN_EXE_nav"), &moved).unwrap();
    let cache = tmp.path().join("cache");
    let run = |args: &[&str]| away_from_the_checkout(&moved, tmp.path(), &cache).args(args).output().unwrap();
    let help = stdout(&run(&["habitat", "--help"]));
    assert!(help.contains("XDG_CACHE_HOME"), "--help says where the package goes: {help}");
    for _ in 0..2 {
        let o = run(&["habitat", "--bridge", OPENROOM, "--episodes", "1", "--json"]);
        assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert_eq!(v["episodes"].as_array().unwrap().len(), 1, "{v}");
    }
    // one copy, named after the version and the files' content, reused by the second run
    let copies: Vec<PathBuf> = std::fs::read_dir(cache.join("navkit")).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(copies.len(), 1, "{copies:?}");
    let name = copies[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with(&format!("bridge-{}-", env!("CARGO_PKG_VERSION"))), "{name}");
    assert!(copies[0].join("navkit_bridge/__main__.py").is_file());
}

/// `nav` at `moved`, run in `cwd` (not the checkout) with `XDG_CACHE_HOME`
/// at `cache` and nothing from cargo's environment (`CARGO_MANIFEST_DIR`,
/// …) or a `PYTHONPATH` to find the checkout's package by.
fn away_from_the_checkout(moved: &std::path::Path, cwd: &std::path::Path, cache: &std::path::Path) -> Command {
    let mut cmd = Command::new(moved);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("CARGO") {
            cmd.env_remove(&key);
        }
    }
    cmd.current_dir(cwd).env_remove("PYTHONPATH").env("XDG_CACHE_HOME", cache);
    cmd
}

/// The same without Python: a copied `nav`, away from the checkout, writes
/// the package built into it to the cache (every file, as built) and hands
/// the bridge's child a PYTHONPATH that starts with that copy (an inherited
/// PYTHONPATH follows it). The child here is `sh`, standing in for
/// `python -m navkit_bridge`: it writes down its PYTHONPATH and exits, and
/// nav reports a bridge that could not start (exit 2).
#[cfg(unix)]
#[test]
fn away_from_the_checkout_the_bridge_child_gets_the_written_package_on_pythonpath() {
    let tmp = tempfile::tempdir().unwrap();
    let moved = tmp.path().join("nav");
    std::fs::copy(env!("CARGO_BIN_EXE_nav"), &moved).unwrap();
    let cache = tmp.path().join("cache");
    let seen = tmp.path().join("pythonpath.txt");
    let inherited = tmp.path().join("elsewhere");
    // `navkit_bridge` among the arguments: nav treats it as the bridge module's command
    let bridge = format!("sh -c 'printf %s \"$PYTHONPATH\" > {}' navkit_bridge", seen.display());
    let o = away_from_the_checkout(&moved, tmp.path(), &cache)
        .env("PYTHONPATH", &inherited)
        .args(["habitat", "--bridge", &bridge, "--episodes", "1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "a bridge that exits at once: stderr: {}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    let path = std::fs::read_to_string(&seen).expect("the child ran and wrote its PYTHONPATH");
    let (first, rest) = path.split_once(':').expect("the package, then the inherited PYTHONPATH");
    assert_eq!(rest, inherited.to_str().unwrap(), "{path}");
    let dir = PathBuf::from(first);
    let root = std::fs::canonicalize(cache.join("navkit")).unwrap();
    assert_eq!(std::fs::canonicalize(&dir).unwrap().parent(), Some(root.as_path()), "the cache's copy: {path}");
    assert!(
        dir.file_name().unwrap().to_string_lossy().starts_with(&format!("bridge-{}-", env!("CARGO_PKG_VERSION"))),
        "{path}"
    );
    for (file, text) in nav_hal::bridge::package::FILES {
        let written = std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(&written, text, "{file} as built into nav");
    }
}

/// A step log the disk cannot take aborts the run: exit 3 with the log and
/// the cause named (and the report of what ran still printed), never
/// "internal error".
#[test]
fn a_step_log_on_a_full_disk_aborts_with_the_cause_named() {
    let o = nav(&["habitat", "--bridge", OPENROOM, "--episodes", "1", "--log", "/dev/full"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("the run was aborted") && err.contains("/dev/full") && err.contains("No space left"), "{err}");
    assert!(!err.contains("internal error") && !err.contains("panicked"), "{err}");
}
