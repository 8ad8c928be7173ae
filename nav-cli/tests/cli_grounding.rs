//! Grounding knowledge (seed 004) end to end through the real binary: an
//! episode with a feedback file leaves the seed's files, and the next
//! episode's system prompt carries the rendered grounding — with the
//! offline planner (the step log and `nav prompt` show the prompt) and with
//! a model behind a local OpenAI-compatible server that records what it
//! was sent.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};

const FEEDBACK: &str = r#"{"step_id": 1, "instruction": "find the tv", "status": "WiP", "feedback": {"spatial": "kitchen is green"}}
{"step_id": 3, "instruction": "find the tv", "status": "Failure", "feedback": {"user_preference": "stay away from the couch", "procedural": null}}
"#;

fn nav_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nav"))
        .current_dir(dir)
        .env("OPENAI_API_KEY", "sk-test")
        .args(args)
        .output()
        .expect("nav runs")
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        out(o),
        String::from_utf8_lossy(&o.stderr)
    );
    out(o)
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The files under `dir`, relative, sorted.
fn files(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, acc: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, acc);
            } else {
                acc.push(p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut acc = Vec::new();
    walk(dir, dir, &mut acc);
    acc.sort();
    acc
}

fn episode_dir(exp: &Path, n: u32) -> PathBuf {
    let prefix = format!("episode_{n}_");
    let e = std::fs::read_dir(exp).unwrap().map(|e| e.unwrap().path());
    let dirs: Vec<PathBuf> = e.filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&prefix)).collect();
    assert_eq!(dirs.len(), 1, "one directory for episode {n}: {dirs:?}");
    let name = dirs[0].file_name().unwrap().to_string_lossy().into_owned();
    // episode_<N>_<YYYYMMDD>_<HHMMSS>_nav
    let parts: Vec<&str> = name.split('_').collect();
    assert_eq!(parts.len(), 5, "{name}");
    assert!(parts[2].len() == 8 && parts[3].len() == 6 && parts[4] == "nav", "{name}");
    dirs[0].clone()
}

#[test]
fn two_episodes_feedback_then_grounding_in_the_next_system_prompt() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("feedback.jsonl"), FEEDBACK).unwrap();
    let first = ok(&nav_in(dir, &["run", "--experiment", "demo", "--episode", "1", "--feedback", "feedback.jsonl"]));
    assert!(first.contains("grounding: logs/demo/grounding/grounding_latest.json"), "{first}");

    let exp = dir.join("logs/demo");
    let ep1 = episode_dir(&exp, 1);
    let name = ep1.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(
        files(&exp),
        [
            format!("{name}/grounding_episode_1.json"),
            format!("{name}/grounding_episode_1.txt"),
            "grounding/grounding_latest.json".to_string(),
            "grounding/grounding_latest.txt".to_string(),
        ]
    );
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ep1.join("grounding_episode_1.json")).unwrap()).unwrap();
    assert_eq!(saved["expr_info"]["episode_id"], 1);
    assert_eq!(saved["grounding_per_step"].as_array().unwrap().len(), 2);
    assert_eq!(saved["stacked_grounding"]["spatial"][0], "[ Step1 - WiP ] : kitchen is green");
    assert_eq!(saved["stacked_grounding"]["user_preference"][0], "[ Step3 - Failure ] : stay away from the couch");
    assert_eq!(saved["final_grounding"]["spatial_grounding"]["content"], "Kitchen is green.");
    assert!(saved["final_grounding"]["generation_timestamp"].as_str().unwrap().ends_with('Z'));
    assert_eq!(
        std::fs::read(ep1.join("grounding_episode_1.json")).unwrap(),
        std::fs::read(exp.join("grounding/grounding_latest.json")).unwrap()
    );

    // what the seed's merge rules render for grounding_latest
    let rendered = ok(&nav_in(dir, &["grounding", "merge", "logs/demo/grounding/grounding_latest.json"]));
    let rendered = rendered.trim_end();
    assert!(rendered.starts_with("#### User Preference\n- Stay away from the couch."), "{rendered}");
    let section = format!("### Grounding knowledge from earlier episodes\n{rendered}");

    // episode 2 (number picked automatically): the grounding is in its system prompt
    ok(&nav_in(dir, &["run", "--experiment", "demo", "--log", "ep2.jsonl"]));
    episode_dir(&exp, 2);
    let log = std::fs::read_to_string(dir.join("ep2.jsonl")).unwrap();
    let head: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(head["info"]["grounding"], rendered);
    for protocol in ["objectnav", "candidates", "explore"] {
        let p = ok(&nav_in(dir, &["prompt", "--experiment", "demo", "--protocol", protocol]));
        let body: serde_json::Value = serde_json::from_str(&p).unwrap();
        let system = body["system"].as_str().unwrap();
        // in its slot before the output-format rule, which stays last
        assert!(system.contains(&format!("{section}\n\n")), "{protocol}: {system}");
        let rule = ["Rules:\n", "OUTPUT: exactly one JSON", "First say in 1-3 sentences"]
            .iter()
            .find_map(|r| system.find(r))
            .unwrap();
        assert!(system.find(&section).unwrap() < rule, "{protocol}: {system}");
    }
    // an episode without feedback leaves grounding_latest as it was
    assert_eq!(
        std::fs::read(ep1.join("grounding_episode_1.json")).unwrap(),
        std::fs::read(exp.join("grounding/grounding_latest.json")).unwrap()
    );
    // without an experiment the prompt is the default one
    let plain = ok(&nav_in(dir, &["prompt"]));
    assert!(!plain.contains("Grounding knowledge"));
    // the verbalized-entropy variant comes after the grounding
    let p = ok(&nav_in(dir, &["prompt", "--experiment", "demo", "--verbalized-entropy"]));
    let body: serde_json::Value = serde_json::from_str(&p).unwrap();
    let system = body["system"].as_str().unwrap();
    let (g, v) = (system.find(&section).unwrap(), system.find("\n\n### Verbalized uncertainty\n").unwrap());
    assert!(g < v, "{system}");

    // nav grounding generate rewrites a saved episode's final grounding (offline summary here)
    let ep1_json = ep1.join("grounding_episode_1.json");
    let printed = ok(&nav_in(dir, &["grounding", "generate", ep1_json.to_str().unwrap()]));
    let printed: serde_json::Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(printed["spatial_grounding"]["content"], "Kitchen is green.");
    let rewritten: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&ep1_json).unwrap()).unwrap();
    assert_eq!(rewritten["final_grounding"], printed);
    assert_eq!(rewritten["stacked_grounding"], saved["stacked_grounding"]);
    let o = nav_in(dir, &["grounding", "generate", "feedback.jsonl"]);
    assert_eq!(o.status.code(), Some(2), "not a grounding file");
}

#[test]
fn config_files_are_relative_to_the_config_file_and_bad_ones_are_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let conf = dir.join("conf");
    std::fs::create_dir(&conf).unwrap();
    std::fs::write(conf.join("rules.txt"), "Never enter the garage.\n").unwrap();
    std::fs::write(conf.join("latin1.txt"), b"caf\xe9 on the left\n").unwrap();
    std::fs::write(
        conf.join("nav.toml"),
        "[grounding]\nfiles = [\"rules.txt\", \"latin1.txt\"]\nformat = \"txt\"\nsave_format = \"json\"\n",
    )
    .unwrap();
    let o = nav_in(dir, &["prompt", "--protocol", "explore", "--config", "conf/nav.toml"]);
    let body: serde_json::Value = serde_json::from_str(&ok(&o)).unwrap();
    assert!(body["system"].as_str().unwrap().contains("earlier episodes\nNever enter the garage.\n\nFirst say"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("latin1.txt") && err.contains("not UTF-8"), "{err}");
    // save_format = "json": only the JSON files
    std::fs::write(dir.join("fb.jsonl"), FEEDBACK).unwrap();
    ok(&nav_in(dir, &["run", "--experiment", "j", "--config", "conf/nav.toml", "--feedback", "fb.jsonl"]));
    let written = files(&dir.join("logs/j"));
    assert_eq!(written.len(), 2, "{written:?}");
    assert!(written.iter().all(|f| f.ends_with(".json")), "{written:?}");
    std::fs::write(conf.join("bad.toml"), "[grounding]\nsave_format = \"yaml\"\n").unwrap();
    let o = nav_in(dir, &["run", "--experiment", "j", "--config", "conf/bad.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("save_format"));
}

#[test]
fn typed_feedback_on_stdin_and_bad_feedback_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut child = Command::new(env!("CARGO_BIN_EXE_nav"))
        .current_dir(dir)
        .args(["run", "--experiment", "typed", "--feedback", "-", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"feedback : spatial: kitchen is green\nspacial: typo\nopen doors slowly\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stderr).contains("spacial: typo"));
    let txt = std::fs::read_to_string(dir.join("logs/typed/grounding/grounding_latest.txt")).unwrap();
    assert!(txt.contains("#### Spatial\n- Kitchen is green."), "{txt}");
    assert!(txt.contains("#### General Rules\n- Open doors slowly."), "{txt}");

    std::fs::write(dir.join("bad.jsonl"), "{\"step_id\": 1, \"status\": \"Maybe\"}\n").unwrap();
    let o = nav_in(dir, &["run", "--experiment", "typed", "--feedback", "bad.jsonl"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("bad.jsonl line 1"));
    let o = nav_in(dir, &["run", "--feedback", "bad.jsonl"]);
    assert_eq!(o.status.code(), Some(2));
}

/// A local OpenAI-compatible server: records every request body; answers
/// the grounding call with a final grounding and every other call with an
/// objectnav decision.
fn recording_vlm() -> (String, Arc<Mutex<Vec<serde_json::Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let shared = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            let body: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let system = body["messages"][0]["content"].as_str().unwrap_or_default().to_string();
            shared.lock().unwrap().push(body);
            let content = if system.contains("reusable knowledge") {
                r#"{"user_preference_grounding": {"content": "Keep clear of the couch."}, "spatial_grounding": {"content": "The green room is the kitchen."}, "procedural_grounding": {"content": ""}, "general_grounding_rules": {"content": ""}}"#
            } else {
                r#"{"goal_flag": false, "angle": 30, "discovered_context": {"goal_scene_type": "living room", "why": "unsure"}}"#
            };
            let reply = serde_json::json!({
                "id": "chatcmpl-test", "object": "chat.completion", "model": "test-model",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
            })
            .to_string();
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                reply.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    (url, seen)
}

#[test]
fn with_a_model_the_vlm_writes_the_grounding_and_reads_it_next_time() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("feedback.jsonl"), FEEDBACK).unwrap();
    let (url, seen) = recording_vlm();
    let vlm = ["--planner", "vlm", "--vlm", "openai", "--base-url", &url, "--model", "test-model", "--text-only"];
    let run = |extra: &[&str]| {
        let args = [&["run", "--experiment", "demo", "--max-steps", "4"][..], &vlm[..], extra].concat();
        let o = nav_in(dir, &args);
        assert!(matches!(o.status.code(), Some(0 | 1)), "stderr:\n{}", String::from_utf8_lossy(&o.stderr));
    };
    run(&["--feedback", "feedback.jsonl"]);
    let latest = std::fs::read_to_string(dir.join("logs/demo/grounding/grounding_latest.json")).unwrap();
    let latest: serde_json::Value = serde_json::from_str(&latest).unwrap();
    assert_eq!(latest["final_grounding"]["spatial_grounding"]["content"], "The green room is the kitchen.");
    let first = seen.lock().unwrap().clone();
    let grounding_calls: Vec<_> = first
        .iter()
        .filter(|b| b["messages"][0]["content"].as_str().unwrap_or_default().contains("reusable knowledge"))
        .collect();
    assert_eq!(grounding_calls.len(), 1, "one generation call at the end");
    let user = grounding_calls[0]["messages"][1].to_string();
    assert!(user.contains("kitchen is green") && user.contains("stay away from the couch"), "{user}");
    // episode 1's decision calls had no grounding yet
    assert!(!first[0]["messages"][0]["content"].as_str().unwrap().contains("Grounding knowledge"));

    seen.lock().unwrap().clear();
    run(&[]);
    let second = seen.lock().unwrap().clone();
    let system = second[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains(
            "### Grounding knowledge from earlier episodes\n#### User Preference\n- Keep clear of the couch."
        ),
        "{system}"
    );
    assert!(system.contains("#### Spatial\n- The green room is the kitchen."), "{system}");
}
