//! `nav mcp` against the official MCP Python SDK (`mcp` on PyPI) as the
//! client, over stdio and Streamable HTTP (ci/mcp_client.py drives it).
//!
//! The venv comes from ci/setup-mcp.sh: `NAVKIT_MCP_PYTHON` names its
//! Python (default `.venv-mcp/bin/python`). Without it the tests are
//! skipped with a printed reason, unless `NAVKIT_REQUIRE_MCP=1` (CI sets
//! it), when they fail.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The venv's Python with `mcp` importable, or `None` (skip) when it is
/// missing and not required.
fn python() -> Option<PathBuf> {
    let python = std::env::var_os("NAVKIT_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv-mcp/bin/python"));
    let required = std::env::var("NAVKIT_REQUIRE_MCP").is_ok_and(|v| v == "1");
    let ok =
        python.exists() && Command::new(&python).args(["-c", "import mcp"]).output().is_ok_and(|o| o.status.success());
    if !ok {
        assert!(!required, "NAVKIT_REQUIRE_MCP=1 but {} cannot import mcp (run ci/setup-mcp.sh)", python.display());
        eprintln!("skipping: no MCP Python SDK at {} (run ci/setup-mcp.sh)", python.display());
        return None;
    }
    Some(python)
}

/// Runs a scenario of ci/mcp_client.py; its JSON.
fn scenario(python: &Path, name: &str, extra: &[&str]) -> Value {
    let out = Command::new(python)
        .arg(workspace_root().join("ci/mcp_client.py"))
        .arg(name)
        .args(["--nav", env!("CARGO_BIN_EXE_nav")])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "mcp_client.py {name}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `nav mcp --transport http` on a free loopback port; its URL.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_nav"))
            .args(["mcp", "--transport", "http", "--bind", "127.0.0.1:0"])
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert!(line.starts_with("http://127.0.0.1:"), "{line:?}");
        Self { child, url: line.trim().to_owned() }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

fn check_basic(v: &Value) {
    assert_eq!(v["server"], "navkit");
    let tools: Vec<&str> = v["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    for t in [
        "check_path_clear",
        "get_map",
        "get_state",
        "move_toward",
        "navigate_to_goal",
        "observe_scene",
        "report_discovery",
        "rotate",
        "stop_robot",
    ] {
        assert!(tools.contains(&t), "{t} missing from {tools:?}");
    }
    let schema = &v["move_toward_schema"];
    assert_eq!(schema["additionalProperties"], false, "{schema}");
    assert!(schema["properties"]["direction"]["enum"].as_array().unwrap().iter().any(|d| d == "forward_left"));
    assert!(schema["properties"]["speed"]["enum"].as_array().unwrap().iter().any(|d| d == "fast"));
    assert_eq!(v["move_is_error"], false, "{}", v["move_text"]);
    assert!(v["moved_m"].as_f64().unwrap() > 0.05, "the robot did not move: {v}");
    assert!(v["state_text"].as_str().unwrap().contains("LIDAR (12 sectors"), "{}", v["state_text"]);
    assert!(v["t_after"].as_f64().unwrap() > v["t_before"].as_f64().unwrap(), "simulated time stood still");
    assert_eq!(v["observe_images"], serde_json::json!(["image/jpeg"]), "{v}");
    assert_eq!(v["observe_jpeg"], true);
    assert_eq!(v["map_png"], true);
    assert_eq!(v["invalid_is_error"], true);
    assert!(v["invalid_text"].as_str().unwrap().contains("direction"), "{}", v["invalid_text"]);
    let resources = v["resources"].as_array().unwrap();
    assert_eq!(resources.len(), 2, "{resources:?}");
    assert!(v["memory"].as_str().unwrap().contains("MEMORY:"), "{}", v["memory"]);
    assert!(v["context"].as_str().unwrap().contains("NAVIGATION CONTEXT"), "{}", v["context"]);
    assert_eq!(v["stop_is_error"], false);
}

#[test]
fn stdio_initialize_tools_motion_and_images() {
    let Some(py) = python() else { return };
    let v = scenario(&py, "basic", &[]);
    check_basic(&v);
}

#[test]
fn http_initialize_tools_motion_and_images() {
    let Some(py) = python() else { return };
    let server = HttpServer::start(&[], &[]);
    let v = scenario(&py, "basic", &["--url", &server.url]);
    check_basic(&v);
}

#[test]
fn http_with_a_token_works_for_a_client_that_sends_it() {
    let Some(py) = python() else { return };
    let token = "tok-5e6f7a8b9c0d1e2f";
    let server = HttpServer::start(&[], &[("NAVKIT_MCP_TOKEN", token)]);
    let v = scenario(&py, "basic", &["--url", &server.url, "--token", token]);
    check_basic(&v);
}

#[test]
fn hammering_a_wall_never_collides_and_every_refusal_says_why() {
    let Some(py) = python() else { return };
    let v = scenario(&py, "wall", &["--seconds", "25", "--", "--arena", "dead_end"]);
    let calls = v["calls"].as_array().unwrap();
    assert!(calls.len() >= 20, "{}", calls.len());
    let refused: Vec<&Value> = calls.iter().filter(|c| c["error"] == true).collect();
    assert!(!refused.is_empty(), "never refused: {v}");
    for c in &refused {
        let text = c["text"].as_str().unwrap();
        assert!(text.contains("SAFETY OVERRIDE") || text.contains("Refused"), "{text}");
        let msg = c["json"]["safety_message"].as_str().unwrap_or("");
        assert!(!msg.is_empty(), "a refusal without its reason: {c}");
    }
    // the blocked-direction memory: suppressed after its retries
    assert!(
        refused
            .iter()
            .any(|c| c["text"].as_str().unwrap().contains("blocked") && c["text"].as_str().unwrap().contains("times")),
        "no suppression: {refused:?}"
    );
    assert_eq!(v["final"]["collisions"], 0, "{}", v["final_text"]);
    assert!(v["memory"].as_str().unwrap().contains("blocked at"), "no dead end in the memory: {}", v["memory"]);
}

#[test]
fn a_silent_client_leaves_the_robot_at_zero_velocity_within_the_watchdog_time() {
    let Some(py) = python() else { return };
    let v = scenario(&py, "silent", &["--seconds", "6", "--", "--arena", "exploration"]);
    assert_eq!(v["move_is_error"], false, "{}", v["move_text"]);
    let t_call = v["t_call"].as_f64().unwrap();
    let watchdog = v["watchdog_s"].as_f64().unwrap();
    let samples = v["samples"].as_array().unwrap();
    assert!(samples.iter().any(|s| s["speed"].as_f64().unwrap() > 0.0), "never moved: {v}");
    // from the watchdog's time on (plus the 50 ms tick) the velocity commanded is zero, and the
    // speed measured from odometry (the motion of the tick before) is zero a tick later
    let t = |s: &Value| s["t"].as_f64().unwrap();
    let late: Vec<&Value> = samples.iter().filter(|s| t(s) >= t_call + watchdog + 0.06).collect();
    assert!(late.len() >= 10, "too few samples after the watchdog time: {v}");
    for s in &late {
        assert_eq!(s["cmd"].as_f64().unwrap(), 0.0, "a velocity commanded at {s} (motion call at {t_call})");
        if t(s) >= t_call + watchdog + 0.11 {
            assert_eq!(s["speed"].as_f64().unwrap(), 0.0, "still moving at {s} (motion call at {t_call})");
        }
    }
}

#[test]
fn a_second_client_cannot_drive_while_the_first_holds_the_lease() {
    let Some(py) = python() else { return };
    let server = HttpServer::start(&[], &[]);
    let v = scenario(&py, "lease", &["--url", &server.url]);
    assert_eq!(v["a_is_error"], false, "{v}");
    assert_eq!(v["b_is_error"], true, "{v}");
    let text = v["b_text"].as_str().unwrap();
    assert!(text.contains("motion lease") && text.contains("driver-a"), "{text}");
    assert_eq!(v["b_state_ok"], true);
    assert!(v["b_state_text"].as_str().unwrap().contains("held by client"), "{}", v["b_state_text"]);
    assert_eq!(v["a_again_is_error"], false, "{v}");
    assert_eq!(v["b_stop_is_error"], false, "stop_robot must always work: {v}");
    assert_eq!(v["a_after_b_left_is_error"], false, "{v}");
    assert_eq!(v["c_after_a_left_is_error"], false, "the lease was not freed when its holder left: {v}");
}

/// Tool call latency against the simulator, over stdio and over HTTP:
/// median and p95 per tool, printed (docs/BENCHMARKS.md records them).
#[test]
fn tool_call_latency() {
    let Some(py) = python() else { return };
    // the benchmark's back-to-back calls are far above the default rate limit
    let server = HttpServer::start(&["--rate-limit", "100000"], &[]);
    for (transport, extra) in [("stdio", vec![]), ("http", vec!["--url", server.url.as_str()])] {
        let mut args = vec!["--n", "200"];
        args.extend(extra);
        let v = scenario(&py, "latency", &args);
        for tool in ["get_state", "check_path_clear", "rotate"] {
            let t = &v[tool];
            let (median, p95) = (t["median_ms"].as_f64().unwrap(), t["p95_ms"].as_f64().unwrap());
            eprintln!("{transport} {tool}: median {median:.2} ms, p95 {p95:.2} ms over {} calls", t["n"]);
            assert!(median > 0.0 && p95 >= median);
        }
    }
}
