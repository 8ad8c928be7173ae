//! `--max-cost-usd` on `nav run` and `nav eval` against an OpenAI-compatible
//! double that answers every call with a valid candidates decision and
//! reports 900 prompt + 30 completion tokens, priced by the config at $1 per
//! million tokens each way: $0.00093 per answered call.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/vlm_server.rs"]
mod vlm_server;

use std::process::{Command, Output};
use vlm_server::SilentVlm;

/// A valid candidates decision for every cycle (c1 always exists).
const DECISION: &str = r#"{"action": {"type": "MOVE_TO", "target_id": "c1"}, "fallback": {"if_failed": "EXPLORE"}, "explanation": "c1 is open floor"}"#;
/// What one answered call costs at the config's prices.
const PER_CALL_USD: f64 = 930.0 / 1e6;

fn config(dir: &tempfile::TempDir, extra: &str) -> String {
    let path = dir.path().join("nav.toml");
    let toml = format!(
        "[vlm]\nprovider = \"openai\"\nmodel = \"test-model\"\n[vlm.prices.\"test-model\"]\n\
         input_per_mtok = 1.0\noutput_per_mtok = 1.0\n{extra}"
    );
    std::fs::write(&path, toml).unwrap();
    path.display().to_string()
}

async fn nav(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || Command::new(env!("CARGO_BIN_EXE_nav")).args(&args).output().expect("nav runs"))
        .await
        .unwrap()
}

fn strings(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| (*s).to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nav_run_stops_cleanly_when_the_measured_cost_reaches_the_cap() {
    let vlm = SilentVlm::start_text(usize::MAX, DECISION).await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&dir, "");
    let base = vlm.base_url();
    let out = nav(strings(&[
        "run",
        "--protocol",
        "candidates",
        "--arena",
        "exploration",
        "--planner",
        "vlm",
        "--vlm",
        "openai",
        "--base-url",
        &base,
        "--config",
        &cfg,
        "--max-cost-usd",
        "0.0025",
        "--json",
    ]))
    .await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "exit 4 documents the cost stop; stderr:\n{err}");
    assert!(err.contains("--max-cost-usd 0.0025 reached ($0.0028 spent"), "{err}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the summary so far is printed");
    assert_eq!(summary["end"], "cost_limit");
    // 2 calls cost $0.00186 < cap; the 3rd reaches it and the loop ends before a 4th
    assert_eq!(summary["vlm_calls"], 3, "{summary}");
    assert_eq!(vlm.arrivals().len(), 3, "no request is sent once the cap is reached");
    let cost = summary["cost_usd"].as_f64().unwrap();
    assert!((0.0025..0.0025 + PER_CALL_USD).contains(&cost), "{cost}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nav_eval_keeps_finished_episodes_and_stops_the_suite_at_the_cap() {
    let vlm = SilentVlm::start_text(usize::MAX, DECISION).await;
    let dir = tempfile::tempdir().unwrap();
    // two cycles per episode: $0.00186 an episode
    let cfg = config(&dir, "[candidates]\nmax_cycles = 2\n");
    let jsonl = dir.path().join("episodes.jsonl").display().to_string();
    let base = vlm.base_url();
    let out = nav(strings(&[
        "eval",
        "--arenas",
        "exploration",
        "--configs",
        "candidates:vlm",
        "--seeds",
        "4",
        "--vlm",
        "openai",
        "--base-url",
        &base,
        "--config",
        &cfg,
        "--max-cost-usd",
        "0.004",
        "--json",
        "--jsonl",
        &jsonl,
    ]))
    .await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "stderr:\n{err}");
    // episodes 1 and 2 finish ($0.00372); episode 3's first call reaches $0.004 and ends it; episode 4 never starts
    assert!(err.contains("2 episode(s) finished (in the table), 1 cut short, 1 not started"), "{err}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let episodes = report["summaries"].as_array().expect("summaries");
    assert_eq!(episodes.len(), 2, "{report}");
    assert_eq!(std::fs::read_to_string(&jsonl).unwrap().lines().count(), 2, "only finished episodes are kept");
    assert_eq!(vlm.arrivals().len(), 5);
}

#[test]
fn the_cap_needs_a_priced_model_and_a_model_planner() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nav.toml");
    std::fs::write(
        &path,
        "[vlm]\nprovider = \"openai\"\nmodel = \"my-local-llava\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    )
    .unwrap();
    let cfg = path.display().to_string();
    let run = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_nav")).args(args).output().unwrap();
    let out = run(&["run", "--planner", "vlm", "--config", &cfg, "--max-cost-usd", "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no price for model \"my-local-llava\""), "{err}");
    let out = run(&["run", "--max-cost-usd", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-cost-usd needs --planner vlm"));
    let out = run(&["run", "--planner", "vlm", "--vlm", "openai", "--max-cost-usd", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("positive number of US dollars"));
}
