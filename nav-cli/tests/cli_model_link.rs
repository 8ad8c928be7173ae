//! A model that cannot be reached or used stops the run: `--base-url` to a
//! closed port, to a server answering 401 and to one answering 404 for the
//! model each end `nav run` within 10 s with exit 5 and one line naming the
//! URL and the cause, never the key; `nav eval` stops the suite on it
//! instead of failing every episode.
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
