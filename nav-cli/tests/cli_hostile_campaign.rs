//! Findings of a hostile-input campaign run as a new user would: every
//! named file a command reads refuses a FIFO instead of blocking on it,
//! arenas and suites are bounded before any work, and secrets never come
//! back in a message. Each run is under an address-space and a wall-clock
//! limit (`support/limited.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/limited.rs"]
mod limited;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const WALL: Duration = Duration::from_secs(60);

fn mkfifo(dir: &Path, name: &str) -> Option<PathBuf> {
    let fifo = dir.join(name);
    Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success()).then_some(fifo)
}

/// A FIFO with no writer blocks whoever opens it: every reader of a named
/// file (step logs and recordings, replies, configs, arenas, feedback)
/// refuses it with exit 2 naming the file, at once.
#[test]
fn every_named_input_refuses_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fifo) = mkfifo(dir.path(), "pipe") else { return };
    let Some(fifo_mcap) = mkfifo(dir.path(), "pipe.mcap") else { return };
    let (f, m) = (fifo.to_str().unwrap(), fifo_mcap.to_str().unwrap());
    let logs = dir.path().join("logs");
    let logs = logs.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["replay", f],
        vec!["replay", m],
        vec!["replay", f, "--plot", "x.svg"],
        vec!["parse", "--protocol", "objectnav", f],
        vec!["run", "--config", f],
        vec!["eval", "--config", f],
        vec!["prompt", "--config", f],
        vec!["rosmaster", "--config", f, "--dry-run"],
        vec!["run", "--arena-file", f],
        vec!["prompt", "--arena-file", f],
        vec!["run", "--experiment", "e", "--logs-dir", logs, "--feedback", f],
    ];
    for args in cases {
        let o = limited::nav_limited(&args, None, WALL);
        assert_eq!(o.code, Some(2), "{args:?}: {o:?}");
        assert!(o.stderr.contains("not a regular file") && o.stderr.contains("pipe"), "{args:?}: {o:?}");
        assert!(o.secs < 10.0, "{args:?} took {} s", o.secs);
    }
}

/// A FIFO with no reader blocks whoever opens it for writing: every named
/// output (the eval lines and table, the step log, the recording, a plot,
/// an exported arena) refuses it at once with an error naming it.
#[test]
fn every_named_output_refuses_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fifo) = mkfifo(dir.path(), "out") else { return };
    let Some(fifo_mcap) = mkfifo(dir.path(), "out.mcap") else { return };
    let Some(fifo_svg) = mkfifo(dir.path(), "out.svg") else { return };
    let (f, m, s) = (fifo.to_str().unwrap(), fifo_mcap.to_str().unwrap(), fifo_svg.to_str().unwrap());
    let cases: Vec<Vec<&str>> = vec![
        vec!["eval", "--arenas", "simple", "--configs", "explore:frontier:on", "--jsonl", f],
        vec!["eval", "--arenas", "simple", "--configs", "explore:frontier:on", "--markdown", f],
        vec!["run", "--arena", "simple", "--protocol", "explore", "--max-steps", "5", "--log", f],
        vec!["run", "--arena", "simple", "--protocol", "explore", "--max-steps", "5", "--record", m],
        vec!["run", "--arena", "simple", "--protocol", "explore", "--max-steps", "5", "--plot", s],
    ];
    for args in cases {
        let o = limited::nav_limited(&args, None, WALL);
        assert!(matches!(o.code, Some(2 | 3)), "{args:?}: {o:?}");
        assert!(o.stderr.contains("not a regular file") && o.stderr.contains("out"), "{args:?}: {o:?}");
        assert!(o.secs < 20.0, "{args:?} took {} s", o.secs);
    }
}

/// An output of `nav run` naming one of its inputs (the step log over the
/// memory file, the recording over the feedback) is refused before anything
/// is opened: the input is left as it was.
#[test]
fn run_outputs_never_overwrite_its_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let mem = dir.path().join("m.yaml");
    let o = limited::nav_limited(
        &["run", "--protocol", "explore", "--max-steps", "3", "--memory-file", mem.to_str().unwrap()],
        None,
        WALL,
    );
    assert!(matches!(o.code, Some(0 | 1)), "{o:?}");
    let before = std::fs::read(&mem).unwrap();
    let m = mem.to_str().unwrap();
    for (flag, out) in [("--log", m), ("--plot", m), ("--record", m)] {
        let o = limited::nav_limited(
            &["run", "--protocol", "explore", "--max-steps", "3", "--memory-file", m, flag, out],
            None,
            WALL,
        );
        assert_eq!(o.code, Some(2), "{flag}: {o:?}");
        assert!(o.stderr.contains("also the input") || o.stderr.contains("must end in"), "{flag}: {o:?}");
        assert_eq!(std::fs::read(&mem).unwrap(), before, "{flag}: the memory file is untouched");
    }
}

/// A small valid arena as JSON, to be made hostile.
fn arena() -> serde_json::Value {
    serde_json::json!({
        "name": "tiny",
        "bounds": [-2.5, -2.5, 2.5, 2.5],
        "obstacles": [{"x": -0.5, "y": -0.5, "r": 0.2}],
        "objects": [{"label": "chair", "x": 1.5, "y": 1.5, "r": 0.25}],
        "rooms": [{"name": "office", "polygon": [[-2.5, -2.5], [2.5, -2.5], [2.5, 2.5], [-2.5, 2.5]]}],
        "start": {"x": -1.5, "y": -1.5, "yaw_deg": 45.0},
        "goal": {"object": "chair"}
    })
}

/// A change to [`arena`]'s JSON.
type Edit<'a> = Box<dyn Fn(&mut serde_json::Value) + 'a>;

/// The simulator casts every ray against every feature: an arena file of
/// 500,000 tiny obstacles (under the 16 MiB file limit) made the explore
/// protocol run for minutes, and a 1 MB label half a minute. Lists, names
/// and polygons are capped and named in the error, before any work.
#[test]
fn arena_lists_and_names_are_capped_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let obstacle = serde_json::json!({"x": 2.4, "y": 2.4, "r": 0.01});
    let cases: Vec<(&str, Edit<'_>, &str)> = vec![
        (
            "obstacles",
            Box::new(|a| a["obstacles"] = vec![obstacle.clone(); 5000].into()),
            "obstacles: 5000 entries, at most 4096",
        ),
        (
            "walls",
            Box::new(|a| a["walls"] = vec![[2.0, 2.0, 2.1, 2.1]; 5000].into()),
            "walls: 5000 entries, at most 4096",
        ),
        (
            "label",
            Box::new(|a| {
                a["objects"][0]["label"] = "c".repeat(300).into();
                a["goal"]["object"] = "c".repeat(300).into();
            }),
            "objects[0].label: 300 characters, at most 256",
        ),
        ("name", Box::new(|a| a["name"] = "evil\u{1b}[2Jname".into()), "name: must not contain control characters"),
        ("room", Box::new(|a| a["rooms"][0]["name"] = "r".repeat(1000).into()), "rooms[0].name: 1000 characters"),
        (
            "polygon",
            Box::new(|a| {
                let pts: Vec<[f64; 2]> =
                    (0..2000).map(|i| [f64::from(i % 2) - 0.5, f64::from((i / 2) % 2) - 0.5]).collect();
                a["rooms"][0]["polygon"] = serde_json::json!(pts);
            }),
            "rooms[0].polygon: 2000 points, at most 1024",
        ),
        (
            "description",
            Box::new(|a| a["description"] = "d".repeat(5000).into()),
            "description: 5000 characters, at most 4096",
        ),
        (
            "bounds",
            Box::new(|a| a["bounds"] = serde_json::json!([-1e300, -1e300, 1e300, 1e300])),
            "2.0e300 m × 2.0e300 m is too large",
        ),
    ];
    for (name, edit, expected) in cases {
        let mut a = arena();
        edit(&mut a);
        let path = dir.path().join(format!("{name}.json"));
        std::fs::write(&path, a.to_string()).unwrap();
        for protocol in ["objectnav", "explore"] {
            let o = limited::nav_limited(
                &["run", "--protocol", protocol, "--arena-file", path.to_str().unwrap()],
                None,
                WALL,
            );
            assert_eq!(o.code, Some(2), "{name} {protocol}: {o:?}");
            assert!(o.stderr.contains(expected), "{name} {protocol}: {}", o.stderr);
            assert!(o.stderr.len() < 2000, "{name}: a short message: {}", o.stderr);
            assert!(o.secs < 10.0, "{name} {protocol} took {} s", o.secs);
        }
    }
    // at the caps an arena still runs
    let mut a = arena();
    a["obstacles"] = vec![obstacle.clone(); 4096].into();
    let path = dir.path().join("at_cap.json");
    std::fs::write(&path, a.to_string()).unwrap();
    let o = limited::nav_limited(&["run", "--arena-file", path.to_str().unwrap(), "--max-steps", "20"], None, WALL);
    assert!(matches!(o.code, Some(0 | 1)), "{o:?}");
}

/// A suite is built whole before its first episode: `--seeds 4000000000`
/// aborted on a failed allocation and `--procedural 4000000000` built
/// houses forever. The size is checked first, exit 2 naming the options.
#[test]
fn suite_size_is_checked_before_the_suite_is_built() {
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["eval", "--arenas", "simple", "--configs", "candidates:offline", "--seeds", "4000000000"], "--seeds"),
        (vec!["eval", "--procedural", "4000000000", "--estimate"], "--procedural"),
        (vec!["eval", "--house-seeds", "18446744073709551615", "--shard", "1/1000"], "--house-seeds"),
    ];
    for (args, option) in &cases {
        let o = limited::nav_limited(args, None, WALL);
        assert_eq!(o.code, Some(2), "{args:?}: {o:?}");
        assert!(o.stderr.contains("more than 100000") && o.stderr.contains(option), "{args:?}: {}", o.stderr);
        assert!(o.secs < 10.0, "{args:?} took {} s", o.secs);
    }
}

/// What a user typed and what a bridge said can hold a key: the final
/// message of every command is scrubbed of the credential variables'
/// values and of key-shaped tokens.
#[test]
fn final_messages_never_quote_a_key() {
    let key = "sk-campaign-0123456789abcdefghijKLMNOP";
    let bad_url = format!("not a url {key}");
    let o = Command::new(env!("CARGO_BIN_EXE_nav"))
        .args(["run", "--planner", "vlm", "--vlm", "openai", "--base-url", &bad_url, "--max-steps", "2"])
        .env("OPENAI_API_KEY", key)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("vlm.base_url") && err.contains("[REDACTED]"), "{err}");
    assert!(!err.contains("0123456789abcdef") && !err.contains("campaign-0123"), "{err}");
    // the key given as the model id by mistake: the run summary on standard output (a server that
    // takes the connection and never answers: the calls time out, the run goes on and prints its summary)
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}/v1", silent.local_addr().unwrap());
    let o = Command::new(env!("CARGO_BIN_EXE_nav"))
        .args(["run", "--planner", "vlm", "--vlm", "openai", "--model", key, "--max-steps", "2", "--timeout", "1"])
        .args(["--base-url", &silent_url])
        .env("OPENAI_API_KEY", key)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("vlm:openai/[REDACTED]"), "{out}");
    assert!(!out.contains("0123456789abcdef") && !String::from_utf8_lossy(&o.stderr).contains("0123456789abcdef"));
    // a progress line quoting a URL with the key in it (nothing listens on port 1)
    let url = format!("ws://user:{key}@127.0.0.1:1");
    let o = Command::new(env!("CARGO_BIN_EXE_nav"))
        .args(["rosmaster", "--url", &url, "--dry-run", "--max-time", "1"])
        .env("OPENAI_API_KEY", key)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("connecting to ws://user:[REDACTED]@127.0.0.1:1"), "{err}");
    // the link's log line, when the connect attempt fails in time to be logged
    assert!(
        !err.contains("connect failed") || err.contains("ws://user:[REDACTED]@127.0.0.1:1: connect failed"),
        "{err}"
    );
    assert!(!err.contains("0123456789abcdef") && !err.contains("campaign-0123"), "{err}");
    // a key-shaped token a bridge sends back in its error
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("bridge.py");
    std::fs::write(
        &script,
        "import sys, json\nfor line in sys.stdin:\n    r = json.loads(line)\n    \
         print(json.dumps({'id': r['id'], 'error': {'kind': 'backend', 'message': 'auth failed for sk-bridgeleak0123456789abcdef'}}), flush=True)\n",
    )
    .unwrap();
    let Ok(py) = Command::new("python3").arg("--version").output() else { return };
    if !py.status.success() {
        return;
    }
    let bridge = format!("python3 {}", script.display());
    let o = limited::nav_limited(&["habitat", "--bridge", &bridge, "--episodes", "1"], None, WALL);
    assert_eq!(o.code, Some(2), "{o:?}");
    assert!(o.stderr.contains("auth failed for [REDACTED]") && !o.stderr.contains("bridgeleak"), "{}", o.stderr);
}

/// Output that cannot be written is exit 3 naming what and why, not an
/// "internal error": a `--logs-dir` that is a file, a recording on a full
/// device (the first failure's cause, `No space left on device`, named in
/// the final message, and the recording stopped there).
#[test]
fn unwritable_outputs_name_what_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "x").unwrap();
    let o = limited::nav_limited(
        &["run", "--experiment", "e", "--logs-dir", file.to_str().unwrap(), "--max-steps", "3"],
        None,
        WALL,
    );
    assert_eq!(o.code, Some(3), "{o:?}");
    assert!(o.stderr.contains("--logs-dir") && !o.stderr.contains("internal error"), "{}", o.stderr);
    if Path::new("/dev/full").exists() {
        let full = dir.path().join("full.mcap");
        std::os::unix::fs::symlink("/dev/full", &full).unwrap();
        let o = limited::nav_limited(&["run", "--record", full.to_str().unwrap(), "--max-steps", "30"], None, WALL);
        assert_eq!(o.code, Some(3), "{o:?}");
        // the final message names the first failure (it said "attempted another
        // write after a write method failed"), and the recording stops there
        // (the writer warned once per message: 290 lines for 30 steps)
        let last = o.stderr.lines().last().unwrap_or_default();
        assert!(last.contains("full.mcap") && last.contains("No space left"), "{}", o.stderr);
        assert!(o.stderr.lines().filter(|l| l.contains("WARN")).count() <= 2, "{}", o.stderr);
        assert!(!o.stderr.contains("internal error"), "{}", o.stderr);
        // recordings that cannot be written stop the suite at the first (each episode ran in full,
        // a model paid, then failed at its end, and every queued episode did the same)
        let rec = dir.path().join("rec");
        std::fs::create_dir(&rec).unwrap();
        for seed in 0..3 {
            let name = format!("builtin_simple-candidates-offline-memon-seed{seed}.mcap");
            std::os::unix::fs::symlink("/dev/full", rec.join(name)).unwrap();
        }
        let o = limited::nav_limited(
            &["eval", "--arenas", "simple", "--configs", "candidates:offline", "--seeds", "3", "--jobs", "1"]
                .into_iter()
                .chain(["--record-dir", rec.to_str().unwrap()])
                .collect::<Vec<_>>(),
            None,
            WALL,
        );
        assert_eq!(o.code, Some(3), "{o:?}");
        assert!(o.stderr.contains("No space left") && o.stderr.contains("the suite stopped"), "{}", o.stderr);
        assert!(!o.stderr.contains("internal error"), "{}", o.stderr);
        assert_eq!(o.stderr.matches("could not run").count(), 1, "one episode tried: {}", o.stderr);
        let o = limited::nav_limited(
            &["eval", "--arenas", "simple", "--configs", "candidates:offline", "--jsonl", "/dev/full"],
            None,
            WALL,
        );
        assert_eq!(o.code, Some(3), "{o:?}");
        assert!(
            o.stderr.contains("the file could not be cut back") || o.stderr.contains("the file is cut back"),
            "{}",
            o.stderr
        );
    }
}

/// A fake bridge: a valid protocol-1 server except for what `mode` spoils.
const FAKE_BRIDGE: &str = r#"
import sys, json, base64, struct
mode = sys.argv[1]
W, H = 16, 12
def obs(step):
    dets = [{"label": "red box", "bearing_rad": 0.0, "distance_m": 1.5, "bbox": [4, 4, 10, 10], "ground_truth": True}]
    return {"step": step, "hfov_deg": 75.0, "detections": dets if mode == "det" else [],
            "rgb": {"encoding": "raw", "shape": [H, W, 3], "data": base64.b64encode(bytes(W * H * 3)).decode()},
            "depth": {"encoding": "f32le", "shape": [H, W], "data": base64.b64encode(struct.pack("<f", 2.0) * (W * H)).decode()}}
step = 0
if mode == "stderr":
    import subprocess
    # 3 GB of zero bytes on our stderr, never a newline, before the handshake
    subprocess.run(["head", "-c", "3000000000", "/dev/zero"], stdout=2)
for line in sys.stdin:
    req = json.loads(line); i = req["id"]; op = req["op"]
    if op == "hello":
        res = {"protocol": "navkit-bridge", "version": "v" * (20 << 20) if mode == "bigtype" else 1, "server_version": "0",
               "backend": {"name": "fake", "version": "0", "simulator": "fake", "simulator_version": "0"},
               "capabilities": {"rgb": True, "depth": True, "pose": False, "detections": True, "panorama": True, "metrics": True},
               "actions": ["forward", "turn_left", "turn_right", "stop"],
               "step": {"forward_m": -1.0 if mode == "step" else 0.25, "turn_deg": 30.0},
               "camera": {"width": W, "height": H, "hfov_deg": 0.0 if mode == "hfov" else 75.0},
               "observation": req.get("observation", {}), "max_steps": 500, "scenes": ["x"]}
        r = {"id": i, "result": res}
    elif op == "reset" and mode == "bigreset":
        r = {"id": i, "result": {"episode": "e" * (20 << 20)}}
    elif op == "reset" and mode == "leak":
        r = {"id": i, "error": {"kind": "backend", "message": "reset failed for sk-resetleak0123456789abcdef"}}
    elif op == "reset":
        step = 0
        ep = {"episode_id": "e-1", "scene_id": "s", "target_object": "t" * 100000 if mode == "target" else "red box",
              "index": 0, "seed": 0, "max_steps": 500, "success_distance_m": -1.0 if mode == "distance" else 1.0}
        r = {"id": i, "result": {"episode": ep, "observation": obs(0), "done": False}}
    elif op == "step":
        step += 1
        done = req.get("action") == "stop" or step >= 20
        res = {"observation": obs(step), "info": {"collided": False, "moved_m": 0.25, "steps": step}, "done": done}
        if done:
            res["metrics"] = {"success": "yes" if mode == "success" else True, "spl": 55.0 if mode == "spl" else 0.5, "distance_to_goal": 0.0}
        r = {"id": i, "result": res}
    elif op == "panorama":
        n = req.get("views", 12)
        r = {"id": i, "result": {"views": [dict(obs(step), heading_deg=(k * 360 / n + 180) % 360 - 180) for k in range(n)]}}
    else:
        r = {"id": i, "result": {}}
    print(json.dumps(r), flush=True)
    if op == "close":
        break
"#;

/// What a bridge says about its steps, camera, episode and metrics is
/// checked: a negative step, a zero field of view, a 100,000-character
/// target, a negative success distance or an SPL of 55 is an error naming
/// the field, never a report built on it.
#[test]
fn bridge_values_out_of_range_are_named() {
    if !Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("fake_bridge.py");
    std::fs::write(&script, FAKE_BRIDGE).unwrap();
    let run = |mode: &str| {
        let bridge = format!("python3 {} {mode}", script.display());
        limited::nav_limited(&["habitat", "--bridge", &bridge, "--episodes", "1"], None, WALL)
    };
    let o = run("ok");
    assert_eq!(o.code, Some(0), "the fake bridge is valid: {o:?}");
    // an error at a reset ends the run: its report (standard output) and message quote no key
    let o = run("leak");
    assert_eq!(o.code, Some(3), "{o:?}");
    assert!(o.stdout.contains("reset failed for [REDACTED]"), "{}", o.stdout);
    assert!(!o.stdout.contains("resetleak") && !o.stderr.contains("resetleak"), "{o:?}");
    for (mode, field) in [
        ("step", "step.forward_m"),
        ("hfov", "camera.hfov_deg"),
        ("target", "episode.target_object"),
        ("distance", "episode.success_distance_m"),
        ("spl", "metrics.spl"),
        ("success", "metrics.success must be a boolean, got \"yes\""),
        // a 20 MB string where a number belongs: the parser's error quoted it whole
        ("bigtype", "\", expected u32 at line 1"),
    ] {
        let o = run(mode);
        assert!(matches!(o.code, Some(2 | 3)), "{mode}: {o:?}");
        assert!(o.stderr.contains(field), "{mode}: {}", &o.stderr[..o.stderr.len().min(3000)]);
        assert!(o.stderr.len() < 4000, "{mode}: a short message, not {} bytes", o.stderr.len());
        assert!(!o.stderr.contains("Some("), "{mode}: {}", o.stderr);
        assert!(mode != "bigtype" || o.stderr.contains("characters in all"), "{}", o.stderr);
    }
    // the same at a reset: the --json report (standard output) carries the cut reason
    let bridge = format!("python3 {} bigreset", script.display());
    let o = limited::nav_limited(&["habitat", "--bridge", &bridge, "--episodes", "1", "--json"], None, WALL);
    assert_eq!(o.code, Some(3), "{}", &o.stderr[..o.stderr.len().min(3000)]);
    assert!(o.stdout.len() < 10_000 && o.stdout.contains("characters in all"), "{} bytes", o.stdout.len());
    assert!(o.stderr.len() < 4000 && !o.stderr.contains("index Some"), "{} bytes", o.stderr.len());
}

/// A bridge whose stderr does not end a line (a progress bar, a crashing
/// simulator's binary output): the line was kept growing until the
/// allocator aborted (2.2 GB in 4 s, exit 134); now it is skipped past the
/// limit and the episode runs.
#[test]
fn a_bridge_stderr_without_newlines_is_skipped() {
    if !Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("fake_bridge.py");
    std::fs::write(&script, FAKE_BRIDGE).unwrap();
    let bridge = format!("python3 {} stderr", script.display());
    let o = limited::nav_limited(&["habitat", "--bridge", &bridge, "--episodes", "1"], None, WALL);
    assert_eq!(o.code, Some(0), "{}", &o.stderr[..o.stderr.len().min(3000)]);
    assert!(o.stdout.contains("SUCCESS"), "{}", o.stdout);
}

/// A key with a line break inside (`OPENAI_API_KEY="$(cat key.txt)"` of a
/// two-line file) failed every call of the run, which went on with
/// fallbacks and exit 1: now exit 2 before the run, naming the variable,
/// never the value.
#[test]
fn a_key_a_header_cannot_carry_is_exit_2_naming_its_variable() {
    let o = Command::new(env!("CARGO_BIN_EXE_nav"))
        .args(["run", "--planner", "vlm", "--vlm", "openai", "--base-url", "http://127.0.0.1:1/v1", "--max-steps", "2"])
        .env("OPENAI_API_KEY", "sk-firstline0123\nsecondline4567")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("OPENAI_API_KEY") && err.contains("HTTP header"), "{err}");
    assert!(!err.contains("firstline") && !err.contains("secondline"), "{err}");
}

/// A detector worker whose every answer is an error quoting the key it
/// inherited and a key-shaped token.
const LEAKY_WORKER: &str = r#"
import sys, json, os
for line in sys.stdin:
    req = json.loads(line); i = req["id"]; op = req["op"]
    if op == "hello":
        r = {"id": i, "result": {"protocol": "navkit-bridge", "version": 1, "server_version": "0",
                                 "worker": {"name": "w", "version": "0"}, "ops": ["detect"]}}
    elif op == "detect":
        r = {"id": i, "error": {"kind": "backend",
             "message": "boom sk-workerleak0123456789abcdef and " + os.environ.get("OPENAI_API_KEY", "")}}
    else:
        r = {"id": i, "result": {}}
    print(json.dumps(r), flush=True)
    if op == "close":
        break
"#;

/// A worker inherits the credential variables: its error text, which goes
/// to the log and into the step log as the fallback's reason, is scrubbed
/// of them and of key-shaped tokens.
#[test]
fn a_worker_error_never_puts_a_key_in_the_logs() {
    if !Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bridge = dir.path().join("fake_bridge.py");
    std::fs::write(&bridge, FAKE_BRIDGE).unwrap();
    let worker = dir.path().join("worker.py");
    std::fs::write(&worker, LEAKY_WORKER).unwrap();
    let log = dir.path().join("steps.jsonl");
    let o = Command::new(env!("CARGO_BIN_EXE_nav"))
        .args(["habitat", "--bridge", &format!("python3 {} det", bridge.display()), "--episodes", "1"])
        .args(["--perception", "external", "--detector", &format!("python3 {}", worker.display())])
        .args(["--log", log.to_str().unwrap()])
        .env("OPENAI_API_KEY", "sk-inherited-ABCDEFGH12345678")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let steps = std::fs::read_to_string(&log).unwrap();
    assert!(steps.contains("boom [REDACTED]"), "the worker's error is in the step log");
    for text in [err.as_ref(), steps.as_str()] {
        assert!(
            !text.contains("workerleak") && !text.contains("ABCDEFGH12345678"),
            "{}",
            &text[..text.len().min(2000)]
        );
    }
}

/// `--record-dir` that is a file is exit 2 before any episode (each
/// episode failed with "File exists"); a "step log" of one line of junk
/// says its line is not a step record.
#[test]
fn a_record_dir_that_is_a_file_and_a_junk_log_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, b"\xff\xfe\x00garbage\n").unwrap();
    let f = file.to_str().unwrap();
    let o = limited::nav_limited(
        &["eval", "--arenas", "simple", "--configs", "candidates:offline", "--record-dir", f],
        None,
        WALL,
    );
    assert_eq!(o.code, Some(2), "{o:?}");
    assert!(o.stderr.contains("--record-dir") && o.stderr.contains("not a directory"), "{}", o.stderr);
    assert!(!o.stderr.contains("episodes (100%"), "no episode ran: {}", o.stderr);
    let o = limited::nav_limited(&["replay", f], None, WALL);
    assert_eq!(o.code, Some(2), "{o:?}");
    assert!(o.stderr.contains("not a step record"), "{}", o.stderr);
}

/// A step log that grows while `nav replay` reads it (a run still writing,
/// or a huge log) held every record in memory until the allocator aborted:
/// now the reader stops at 256 MiB or 500,000 steps, exit 2 naming the
/// limit, in bounded memory.
#[test]
fn a_step_log_that_grows_while_read_ends_with_exit_2() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.jsonl");
    let o = limited::nav_limited(&["run", "--max-steps", "40", "--log", log.to_str().unwrap()], None, WALL);
    assert!(matches!(o.code, Some(0 | 1)), "{o:?}");
    let lines = std::fs::read(&log).unwrap();
    let block = lines.repeat((4 << 20) / lines.len() + 1);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (stop, path) = (stop.clone(), log.clone());
        std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
            let mut written = 0usize;
            // far past the limit, unless nav stopped reading first
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && written < 600 << 20 {
                f.write_all(&block).unwrap();
                written += block.len();
            }
        })
    };
    let o = limited::nav_limited(&["replay", log.to_str().unwrap()], None, WALL);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert_eq!(o.code, Some(2), "{o:?}");
    assert!(o.stderr.contains("256 MiB") && o.stderr.contains("500000 steps"), "{}", o.stderr);
}

/// 40,000 `[vlm.extra_headers]` (a 400 KB config, under its 1 MiB limit)
/// panicked inside the HTTP client's header map: now a config error naming
/// the table, exit 2.
#[test]
fn too_many_extra_headers_are_a_config_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut text =
        String::from("[vlm]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\n[vlm.extra_headers]\n");
    for i in 0..40_000 {
        text.push_str(&format!("h{i} = \"v\"\n"));
    }
    let config = dir.path().join("headers.toml");
    std::fs::write(&config, text).unwrap();
    let c = config.to_str().unwrap();
    for args in [
        vec!["run", "--planner", "vlm", "--config", c, "--max-steps", "2"],
        vec!["prompt", "--vlm", "openai", "--config", c],
    ] {
        let o = limited::nav_limited(&args, None, WALL);
        assert_eq!(o.code, Some(2), "{args:?}: {o:?}");
        assert!(o.stderr.contains("extra_headers") && o.stderr.contains("at most 64"), "{}", o.stderr);
        assert!(!o.stderr.contains("panicked"), "{}", o.stderr);
    }
}

/// A warning quoting a file: a grounding file that is one 200 KB JSON
/// string was skipped with a 200 KB warning (a parser's error quotes the
/// whole value); every diagnostic is cut to its start and end.
#[test]
fn a_diagnostic_quoting_a_huge_value_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("huge.json");
    std::fs::write(&file, serde_json::to_string(&"[".repeat(200_000)).unwrap()).unwrap();
    let o = limited::nav_limited(&["grounding", "merge", file.to_str().unwrap()], None, WALL);
    assert_eq!(o.code, Some(0), "{o:?}");
    assert!(
        o.stderr.contains("skipped") && o.stderr.contains("huge.json"),
        "{}",
        &o.stderr[..o.stderr.len().min(3000)]
    );
    assert!(o.stderr.len() < 5000 && o.stderr.contains("characters in all"), "{} bytes", o.stderr.len());
}

/// Text from outside that nav prints (an eval file's arena name here; a
/// bridge's episode id, a server's error body) never carries control
/// characters to the terminal: ESC, BEL and C1 codes come out as `?`.
#[test]
fn printed_text_from_files_carries_no_control_characters() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("e.jsonl");
    let j = jsonl.to_str().unwrap();
    let o = limited::nav_limited(
        &["eval", "--arenas", "simple", "--configs", "explore:frontier:on", "--jsonl", j],
        None,
        WALL,
    );
    assert_eq!(o.code, Some(0), "{o:?}");
    let text = std::fs::read_to_string(&jsonl).unwrap();
    let mut line: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    line["arena"] = serde_json::json!("simple\u{1b}[2J\u{1b}]0;pwned\u{7}\u{9b}31m");
    std::fs::write(&jsonl, format!("{line}\n")).unwrap();
    let o = limited::nav_limited(&["eval", "merge", j], None, WALL);
    assert_eq!(o.code, Some(0), "{o:?}");
    assert!(o.stdout.contains("simple?[2J?]0;pwned??31m"), "{}", o.stdout);
    // the report never overwrites the file it was merged from, by any name
    let before = std::fs::read(&jsonl).unwrap();
    let hard = dir.path().join("hard.jsonl");
    std::fs::hard_link(&jsonl, &hard).unwrap();
    for md in [j, hard.to_str().unwrap()] {
        let o = limited::nav_limited(&["eval", "merge", j, "--markdown", md], None, WALL);
        assert_eq!(o.code, Some(2), "{o:?}");
        assert!(o.stderr.contains("also the input"), "{o:?}");
        assert_eq!(std::fs::read(&jsonl).unwrap(), before);
    }
    // a directory or a missing folder is refused before any work
    for md in [dir.path().to_str().unwrap().to_string(), dir.path().join("nosuch/x.md").display().to_string()] {
        let o = limited::nav_limited(&["eval", "merge", j, "--markdown", &md], None, WALL);
        assert_eq!(o.code, Some(2), "{o:?}");
        assert!(o.stderr.contains("directory") || o.stderr.contains("does not exist"), "{o:?}");
    }
    // a name cannot break the Markdown table
    line["arena"] = serde_json::json!("a|b\nc");
    std::fs::write(&jsonl, format!("{line}\n")).unwrap();
    let md = dir.path().join("t.md");
    let o = limited::nav_limited(&["eval", "merge", j, "--markdown", md.to_str().unwrap()], None, WALL);
    assert_eq!(o.code, Some(0), "{o:?}");
    let table = std::fs::read_to_string(&md).unwrap();
    assert!(table.contains("| a\\|b c |"), "{table}");
    assert!(!o.stdout.chars().any(|c| c.is_control() && c != '\n' && c != '\t'), "{:?}", o.stdout);
}
