//! `--vlm replay`: a run recorded with a model (an OpenAI-compatible double)
//! and replayed from its recording or its step log gives the same summary,
//! step log and trajectory; a changed prompt stops the replay at the step it
//! changed with a diff; `--replay-miss live` carries on with the live model;
//! `nav eval --replay DIR` replays a suite episode by episode.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/vlm_server.rs"]
mod vlm_server;

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};
use vlm_server::SilentVlm;

/// An objectnav decision (the angle the robot turns to, no target yet).
const OBJECTNAV: &str = r#"{"goal_flag": false, "angle": 30, "discovered_context": "a hallway", "reason": "explore"}"#;
/// A candidates decision (c1 always exists).
const CANDIDATES: &str = r#"{"action": {"type": "MOVE_TO", "target_id": "c1"}, "fallback": {"if_failed": "EXPLORE"}, "explanation": "c1 is open floor"}"#;

async fn nav(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_nav"))
            .args(&args)
            .env("OPENAI_API_KEY", "sk-test-replay")
            .output()
            .expect("nav runs")
    })
    .await
    .unwrap()
}

fn s(a: &[&str]) -> Vec<String> {
    a.iter().map(|x| (*x).to_string()).collect()
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The summary without its wall-clock fields.
fn summary(o: &Output) -> Value {
    let mut v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)));
    for k in ["wall_ms", "median_overhead_ms"] {
        v.as_object_mut().unwrap().remove(k);
    }
    v
}

fn log(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn write(dir: &Path, name: &str, body: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p.display().to_string()
}

/// Records `protocol` with the double, then replays it from the MCAP file
/// and from the step log: same summary (but wall-clock time), same step log.
async fn replays_exactly(protocol: &str, server: &SilentVlm, config: &str) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = write(d, "nav.toml", config);
    let (rec, log_a, log_b, log_c) = (d.join("a.mcap"), d.join("a.jsonl"), d.join("b.jsonl"), d.join("c.jsonl"));
    let base = server.base_url();
    let common = s(&["run", "--protocol", protocol, "--config", &cfg, "--planner", "vlm", "--json"]);
    let mut live = common.clone();
    live.extend(s(&["--vlm", "openai", "--model", "test-model", "--base-url", &base]));
    live.extend(s(&["--record", rec.to_str().unwrap(), "--log", log_a.to_str().unwrap()]));
    let a = nav(live).await;
    assert!(matches!(a.status.code(), Some(0 | 1)), "{protocol}: {}", text(&a));
    let calls = server.arrivals().len();
    assert!(calls > 0, "{protocol}: the model was asked");
    for (from, out_log) in [(&rec, &log_b), (&log_a, &log_c)] {
        let mut replay = common.clone();
        replay.extend(s(&["--replay", from.to_str().unwrap(), "--log", out_log.to_str().unwrap()]));
        let b = nav(replay).await;
        assert_eq!(b.status.code(), a.status.code(), "{protocol} from {}: {}", from.display(), text(&b));
        assert_eq!(summary(&b), summary(&a), "{protocol} from {}", from.display());
        assert_eq!(log(out_log), log(&log_a), "{protocol} from {}: the step log, trajectory included", from.display());
        let err = String::from_utf8_lossy(&b.stderr);
        assert!(err.contains(&format!("replay: {n} of {n} request(s) answered", n = log_a_calls(&log_a))), "{err}");
        assert_eq!(server.arrivals().len(), calls, "{protocol}: a replay sends nothing");
    }
}

/// The model calls a step log carries.
fn log_a_calls(path: &Path) -> usize {
    log(path).iter().map(|r| r["model_calls"].as_array().map_or(0, Vec::len)).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_protocol_replays_exactly_from_its_recording_and_from_its_step_log() {
    let objectnav = SilentVlm::start_text(usize::MAX, OBJECTNAV).await;
    replays_exactly("objectnav", &objectnav, "[objectnav]\nmax_steps = 40\n").await;
    let candidates = SilentVlm::start_text(usize::MAX, CANDIDATES).await;
    replays_exactly("candidates", &candidates, "[candidates]\nmax_cycles = 4\n").await;
    let args = serde_json::json!({"direction": "forward", "speed": "slow", "duration_s": 1.0});
    let explore = SilentVlm::start(usize::MAX, "move_toward", args).await;
    replays_exactly("explore", &explore, "[explore]\nmax_decisions = 5\n").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_word_stops_the_replay_at_step_0_and_live_carries_on() {
    let server = SilentVlm::start_text(usize::MAX, OBJECTNAV).await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "hints.txt", "Doors on the left lead to the kitchen.\n");
    let cfg = write(d, "nav.toml", "[objectnav]\nmax_steps = 30\n[grounding]\nfiles = [\"hints.txt\"]\n");
    let rec = d.join("a.mcap").display().to_string();
    let base = server.base_url();
    let run = s(&["run", "--config", &cfg, "--planner", "vlm", "--json"]);
    let mut live = run.clone();
    live.extend(s(&["--vlm", "openai", "--model", "test-model", "--base-url", &base, "--record", &rec]));
    let a = nav(live).await;
    assert!(matches!(a.status.code(), Some(0 | 1)), "{}", text(&a));
    let recorded = server.arrivals().len();

    // one word of the system prompt changes
    write(d, "hints.txt", "Doors on the right lead to the kitchen.\n");
    let mut replay = run.clone();
    replay.extend(s(&["--replay", &rec]));
    let b = nav(replay.clone()).await;
    let err = String::from_utf8_lossy(&b.stderr);
    assert_eq!(b.status.code(), Some(6), "{}", text(&b));
    assert!(b.stdout.is_empty(), "no summary of a run that left its recording");
    assert!(
        err.contains("nav: replay diverged at step 0: the planner request (call 1 of this run) is not in"),
        "{err}"
    );
    assert!(err.contains("\n  - system: Doors on the left lead to the kitchen.\n"), "{err}");
    assert!(err.contains("\n  + system: Doors on the right lead to the kitchen.\n"), "{err}");
    assert_eq!(server.arrivals().len(), recorded, "nothing was sent");

    // --replay-miss live: the changed request and the rest go to the double, and are recorded
    let rec2 = d.join("b.mcap").display().to_string();
    let mut carry_on = replay.clone();
    carry_on.extend(s(&["--replay-miss", "live", "--base-url", &base, "--record", &rec2]));
    let c = nav(carry_on).await;
    assert!(matches!(c.status.code(), Some(0 | 1)), "{}", text(&c));
    let err = String::from_utf8_lossy(&c.stderr);
    assert!(
        err.contains("replay diverged at step 0")
            && err.contains("sending this request and every later one to the live model"),
        "{err}"
    );
    let sent = server.arrivals().len() - recorded;
    assert!(sent > 0, "the live model answered");
    assert_eq!(summary(&c)["planner"], "vlm:openai/test-model");
    // the new recording replays the changed prompt exactly
    let mut again = run.clone();
    again.extend(s(&["--replay", &rec2]));
    let e = nav(again).await;
    assert_eq!(summary(&e), summary(&c), "{}", text(&e));
    assert_eq!(server.arrivals().len() - recorded, sent, "nothing more was sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evaluation_replays_episode_by_episode() {
    let server = SilentVlm::start_text(usize::MAX, OBJECTNAV).await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = write(d, "nav.toml", "[objectnav]\nmax_steps = 25\n");
    let recs = d.join("recs").display().to_string();
    let base = server.base_url();
    let suite = s(&["eval", "--arenas", "house_a,house_b", "--configs", "objectnav:vlm", "--config", &cfg, "--json"]);
    let mut live = suite.clone();
    live.extend(s(&["--vlm", "openai", "--model", "test-model", "--base-url", &base, "--record-dir", &recs]));
    let a = nav(live).await;
    assert_eq!(a.status.code(), Some(0), "{}", text(&a));
    let sent = server.arrivals().len();
    let mut replay = suite.clone();
    replay.extend(s(&["--replay", &recs]));
    let b = nav(replay.clone()).await;
    assert_eq!(b.status.code(), Some(0), "{}", text(&b));
    let (ra, rb): (Value, Value) =
        (serde_json::from_slice(&a.stdout).unwrap(), serde_json::from_slice(&b.stdout).unwrap());
    let strip = |v: &Value| -> Vec<Value> {
        v["summaries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let mut s = s.clone();
                s.as_object_mut().unwrap().remove("wall_ms");
                s.as_object_mut().unwrap().remove("median_overhead_ms");
                s
            })
            .collect()
    };
    assert_eq!(strip(&rb), strip(&ra));
    assert_eq!(rb["replay"]["episodes"].as_array().unwrap().len(), 2, "{}", rb["replay"]);
    assert!(
        rb["replay"]["episodes"].as_array().unwrap().iter().all(|e| e[1]["outcome"] == "exact"),
        "{}",
        rb["replay"]
    );
    assert_eq!(server.arrivals().len(), sent, "a replay sends nothing");

    // house_a's recording replaced by house_b's (other images from step 0 on), house_b's gone
    let files: Vec<_> = std::fs::read_dir(&recs).unwrap().map(|e| e.unwrap().path()).collect();
    let a_file = files.iter().find(|p| p.to_string_lossy().contains("house_a")).unwrap();
    let b_file = files.iter().find(|p| p.to_string_lossy().contains("house_b")).unwrap();
    std::fs::rename(b_file, a_file).unwrap();
    let c = nav(replay).await;
    assert_eq!(c.status.code(), Some(6), "a diverged episode: {}", text(&c));
    let rc: Value = serde_json::from_slice(&c.stdout).unwrap();
    let outcomes: Vec<&Value> = rc["replay"]["episodes"].as_array().unwrap().iter().map(|e| &e[1]).collect();
    assert!(outcomes.contains(&&serde_json::json!({"outcome": "missing"})), "{outcomes:?}");
    assert!(
        outcomes.contains(&&serde_json::json!({"outcome": "diverged", "step": 0, "finished": false})),
        "{outcomes:?}"
    );
    let err = String::from_utf8_lossy(&c.stderr);
    assert!(err.contains("1 diverged, 0 ended early, 1 missing"), "{err}");

    // a folder with no recording of this suite replays nothing: exit 2, not a success
    let empty = d.join("empty");
    std::fs::create_dir(&empty).unwrap();
    let mut none = suite.clone();
    none.extend(s(&["--replay", empty.to_str().unwrap()]));
    let e = nav(none).await;
    let err = String::from_utf8_lossy(&e.stderr);
    assert_eq!(e.status.code(), Some(2), "{err}");
    assert!(err.contains("no recording of any episode of this suite"), "{err}");
}

#[test]
fn replay_flags_are_checked() {
    let run = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_nav")).args(args).output().unwrap();
    let out = run(&["run", "--planner", "vlm", "--vlm", "replay"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--vlm replay needs --replay PATH"), "{}", text(&out));
    let out = run(&["run", "--planner", "vlm", "--vlm", "openai", "--replay", "x.mcap"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let dir = tempfile::tempdir().unwrap();
    let junk = write(dir.path(), "junk.mcap", "not a recording");
    let out = run(&["run", "--planner", "vlm", "--replay", &junk]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("junk.mcap"), "{}", text(&out));
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = run(&["run", "--planner", "vlm", "--replay", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no .mcap or .jsonl"), "{}", text(&out));
    let out = run(&["run", "--planner", "vlm", "--replay", &junk, "--max-cost-usd", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

/// Drops the fields a wall clock decides, at any depth.
fn without_wall_clock(v: &mut Value) {
    match v {
        Value::Object(o) => {
            o.retain(|k, _| !(k.contains("wall") || k.starts_with("median_step") || k == "t_s"));
            o.values_mut().for_each(without_wall_clock);
        }
        Value::Array(a) => a.iter_mut().for_each(without_wall_clock),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridge_run_replays_exactly() {
    let server = SilentVlm::start_text(usize::MAX, OBJECTNAV).await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (rec, log_a, log_b) = (d.join("h.mcap"), d.join("a.jsonl"), d.join("b.jsonl"));
    let base = server.base_url();
    let bridge = s(&["habitat", "--bridge", "python3 -m navkit_bridge --backend openroom", "--episodes", "2"]);
    let mut live = bridge.clone();
    live.extend(s(&["--planner", "vlm", "--vlm", "openai", "--model", "test-model", "--base-url", &base, "--json"]));
    live.extend(s(&["--record", rec.to_str().unwrap(), "--log", log_a.to_str().unwrap()]));
    let a = nav(live).await;
    assert_eq!(a.status.code(), Some(0), "{}", text(&a));
    let sent = server.arrivals().len();
    let mut replay = bridge.clone();
    replay.extend(s(&["--planner", "vlm", "--replay", rec.to_str().unwrap(), "--json"]));
    replay.extend(s(&["--log", log_b.to_str().unwrap()]));
    let b = nav(replay).await;
    assert_eq!(b.status.code(), Some(0), "{}", text(&b));
    let parse = |o: &Output| -> Value {
        let mut v: Value = serde_json::from_slice(&o.stdout).unwrap();
        without_wall_clock(&mut v);
        v
    };
    assert_eq!(parse(&b), parse(&a));
    let steps = |p: &Path| -> Vec<Value> {
        let mut v = log(p);
        v.iter_mut().for_each(without_wall_clock);
        v
    };
    assert_eq!(steps(&log_b), steps(&log_a), "the trajectory and every decision");
    assert_eq!(server.arrivals().len(), sent, "a replay sends nothing");
}
