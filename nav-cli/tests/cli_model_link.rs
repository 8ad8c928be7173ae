//! A model that cannot be reached or used stops the run: `--base-url` to a
//! closed port, to a server answering 401 and to one answering 404 for the
//! model each end `nav run` within 10 s with exit 5 and one line naming the
//! URL and the cause, never the key; `nav eval` stops the suite on it
//! instead of failing every episode. A server whose errors spell the key
//! out in altered forms gets no piece of it into stderr, the step log or
//! the recording.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/vlm_server.rs"]
mod vlm_server;

use std::process::{Command, Output};
use std::time::{Duration, Instant};
use vlm_server::{StatusServer, closed_base_url};

const KEY: &str = "sk-test-secret-key-0123456789abcdef";

async fn nav(args: Vec<String>) -> (Output, Duration) {
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let out =
            Command::new(env!("CARGO_BIN_EXE_nav")).args(&args).env("OPENAI_API_KEY", KEY).output().expect("nav runs");
        (out, started.elapsed())
    })
    .await
    .unwrap()
}

fn run_args(base_url: &str) -> Vec<String> {
    ["run", "--arena", "house_a", "--planner", "vlm", "--vlm", "openai", "--base-url", base_url, "--model", "m"]
        .iter()
        .map(|s| (*s).to_string())
        .collect()
}

/// Exit 5 within 10 s, one `nav:` line naming the URL and `cause`, no key.
fn assert_link_failure(out: &Output, took: Duration, url: &str, cause: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "stderr:\n{stderr}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("nav:")).collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(lines[0].contains(url), "names the URL: {}", lines[0]);
    assert!(lines[0].contains(cause), "names the cause {cause:?}: {}", lines[0]);
    assert!(!stderr.contains(KEY) && !String::from_utf8_lossy(&out.stdout).contains(KEY), "no key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_port_ends_the_run_with_exit_5() {
    let url = closed_base_url();
    let (out, took) = nav(run_args(&url)).await;
    assert_link_failure(&out, took, &url, "connection refused");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_answering_401_ends_the_run_with_exit_5() {
    let server = StatusServer::start(401, "Incorrect API key provided").await;
    let (out, took) = nav(run_args(&server.base_url())).await;
    assert_link_failure(&out, took, &server.base_url(), "401");
    // a key that is refused is not tried again and again
    assert!(server.requests() <= 3, "{} requests", server.requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_answering_404_for_the_model_ends_the_run_with_exit_5() {
    let server = StatusServer::start(404, "The model `m` does not exist").await;
    let (out, took) = nav(run_args(&server.base_url())).await;
    assert_link_failure(&out, took, &server.base_url(), "404");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eval_stops_the_suite_on_a_closed_port() {
    let url = closed_base_url();
    let mut args: Vec<String> =
        ["eval", "--arenas", "house_a,house_b", "--seeds", "3", "--planner", "vlm", "--vlm", "openai", "--model", "m"]
            .iter()
            .map(|s| (*s).to_string())
            .collect();
    args.extend(["--base-url".to_string(), url.clone()]);
    let (out, took) = nav(args).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "stderr:\n{stderr}");
    assert!(took < Duration::from_secs(20), "took {took:?}");
    assert!(stderr.contains(&url) && stderr.contains("connection refused"), "stderr:\n{stderr}");
    assert!(!stderr.contains("episode(s) could not run"), "the suite stops, not every episode fails:\n{stderr}");
    assert!(!stderr.contains(KEY));
}

/// A server answering 400 with the key spelled out: one character at a
/// time (`s k - t e s t`), as a JSON array of its characters, in pieces of 7
/// and percent-encoded. Every form reached stderr, the step log and the
/// recording (zstd even stored the array's characters side by side, the
/// key in plain text).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_spelled_out_in_an_error_reaches_no_output() {
    let chars: Vec<String> = KEY.chars().map(String::from).collect();
    let forms = [
        chars.join(" "),
        serde_json::to_string(&chars).unwrap(),
        KEY.as_bytes().chunks(7).map(|c| std::str::from_utf8(c).unwrap()).collect::<Vec<_>>().join(" "),
        KEY.bytes().map(|b| format!("%{b:02X}")).collect(),
    ];
    let server = StatusServer::start(400, &format!("Incorrect API key provided: {}", forms.join(" or "))).await;
    let dir = tempfile::tempdir().unwrap();
    let (log, rec) = (dir.path().join("steps.jsonl"), dir.path().join("run.mcap"));
    let mut args = run_args(&server.base_url());
    args.extend(
        ["--max-steps", "3", "--log", log.to_str().unwrap(), "--record", rec.to_str().unwrap()].map(String::from),
    );
    let (out, _) = nav(args).await;
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(matches!(out.status.code(), Some(0 | 1)), "the run goes on with fallbacks: {stderr}");
    assert!(stderr.contains("HTTP 400") && stderr.contains("[REDACTED]"), "{stderr}");
    let letters = |t: &str| t.chars().filter(char::is_ascii_alphanumeric).collect::<String>();
    let secret = &letters(KEY)[6..];
    let recording = std::fs::read(&rec).unwrap();
    // the recording's messages as written (its chunks are compressed)
    let mut messages = String::new();
    for m in mcap::MessageStream::new(&recording).unwrap() {
        messages.push_str(&String::from_utf8_lossy(&m.unwrap().data));
    }
    assert!(messages.contains("HTTP 400"), "the recording holds the failed calls");
    for (what, text) in [
        ("stderr", stderr.clone()),
        ("stdout", String::from_utf8_lossy(&out.stdout).to_string()),
        ("step log", std::fs::read_to_string(&log).unwrap()),
        ("recording", String::from_utf8_lossy(&recording).to_string()),
        ("recorded messages", messages.clone()),
    ] {
        assert!(!letters(&text).contains(&secret[..10]), "{what}: {}", &text[..text.len().min(3000)]);
        assert!(!text.contains("%6B%2D%74"), "{what}");
    }
}
