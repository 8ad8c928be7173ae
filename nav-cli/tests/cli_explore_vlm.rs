//! `nav run --protocol explore --planner vlm` against an OpenAI-compatible
//! double that answers every call with a valid `navigate_to_goal` in 1.5 s,
//! like a real model: every request is answered and counted (`vlm_calls`),
//! and the watchdog never leaves CONTINUE.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/vlm_server.rs"]
mod vlm_server;

use std::process::{Command, Output};
use std::time::Duration;
use vlm_server::SilentVlm;

async fn nav(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || Command::new(env!("CARGO_BIN_EXE_nav")).args(&args).output().expect("nav runs"))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explore_with_a_model_answering_in_1_5_s_answers_every_request_and_keeps_the_watchdog_quiet() {
    let args = serde_json::json!({"goal_type": "frontier", "frontier_id": 1, "reason": "unexplored"});
    let vlm = SilentVlm::start_slow(Duration::from_millis(1500), "navigate_to_goal", args).await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("steps.jsonl");
    let base = vlm.base_url();
    let log_arg = log.display().to_string();
    let args: Vec<String> = [
        "run",
        "--protocol",
        "explore",
        "--arena",
        "house_a",
        "--planner",
        "vlm",
        "--vlm",
        "openai",
        "--model",
        "test-model",
        "--base-url",
        &base,
        "--text-only",
        "--max-steps",
        "4",
        "--log",
        &log_arg,
        "--json",
    ]
    .iter()
    .map(|s| (*s).to_string())
    .collect();
    let out = nav(args).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 1)), "stderr:\n{err}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON summary");
    // every request the model received was answered and counted
    let requests = vlm.arrivals().len();
    assert!(requests >= 3, "{requests} requests; {summary}");
    assert_eq!(summary["vlm_calls"].as_u64(), Some(requests as u64), "{summary}");
    assert_eq!(summary["fallbacks"].as_u64(), Some(0), "{summary}");
    // answers within 1.5 s: no watchdog tier at any point
    let text = std::fs::read_to_string(&log).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let tiers: Vec<&serde_json::Value> = records
        .iter()
        .flat_map(|r| r["events"].as_array().into_iter().flatten())
        .filter(|e| e["event"] == "watchdog")
        .collect();
    assert!(tiers.is_empty(), "{tiers:?}");
    let answered = records.iter().filter(|r| r["planner"].is_object()).count();
    assert_eq!(answered, requests, "one answered planner record per request");
    println!(
        "nav run explore, 1.5 s model: {requests} requests, vlm_calls {}, {answered} answers, 0 watchdog events",
        summary["vlm_calls"]
    );
}
