//! `nav parse`, `nav prompt` and `nav grounding merge` through the real
//! binary (SPEC §5): the `{"ok", "decision", "error"}` contract with each
//! protocol's fallback, input from a file and from standard input, exit
//! codes, the request `nav prompt` prints for each protocol and provider,
//! and the seed-004 merge of a mixed JSON + TXT set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn nav(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nav")).args(args).output().expect("nav runs")
}

/// Runs `nav` with `input` on standard input.
fn nav_stdin(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nav"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nav starts");
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The one JSON object `nav parse` prints (exactly one line, exactly the
/// three keys), after checking the exit code: 0 when `ok`, 1 when not.
fn report(o: &Output) -> Value {
    assert!(matches!(o.status.code(), Some(0 | 1)), "stderr: {}", stderr(o));
    let out = stdout(o);
    assert_eq!(out.lines().count(), 1, "exactly one line: {out}");
    let v: Value = serde_json::from_str(out.trim()).expect("one JSON object");
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["decision", "error", "ok"]);
    assert_eq!(v["ok"].as_bool().unwrap(), v["error"].is_null(), "error exactly when not ok: {v}");
    let expected = if v["ok"] == true { 0 } else { 1 };
    assert_eq!(o.status.code(), Some(expected), "exit 0 when ok, 1 when not: {v}");
    v
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn parse_file(protocol: &str, reply: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "reply.txt", reply);
    report(&nav(&["parse", "--protocol", protocol, path.to_str().unwrap()]))
}

const OBJECTNAV_FALLBACK: fn() -> Value = || json!({"goal_flag": false, "angle": 0.0, "discovered_context": {"goal_scene_type": "corridor", "why": "fallback"}});

// ------------------------------------------------------------------ parse

#[test]
fn objectnav_valid_reply_from_a_file() {
    let reply = "```json\n{\"goal_flag\": true, \"angle\": -45, \"discovered_context\": \
                 {\"goal_scene_type\": \"kitchen\", \"why\": \"주방 {싱크대} 이 보임\"},}\n```";
    let v = parse_file("objectnav", reply);
    assert_eq!(v["ok"], true);
    assert_eq!(
        v["decision"],
        json!({"goal_flag": true, "angle": -45.0,
               "discovered_context": {"goal_scene_type": "kitchen", "why": "주방 {싱크대} 이 보임"}})
    );
    assert_eq!(v["error"], Value::Null);
}

#[test]
fn objectnav_invalid_reply_from_stdin_gives_the_seed_fallback() {
    for args in [&["parse", "--protocol", "objectnav", "-"][..], &["parse", "--protocol", "objectnav"][..]] {
        let v = report(&nav_stdin(args, "I think the kitchen is to the left."));
        assert_eq!(v["ok"], false, "{args:?}");
        assert_eq!(v["decision"], OBJECTNAV_FALLBACK(), "{args:?}");
        assert_eq!(v["error"], "no JSON object in reply");
    }
    let valid =
        r#"{"goal_flag": false, "angle": 90, "discovered_context": {"goal_scene_type": "hall", "why": "open"}}"#;
    let v = report(&nav_stdin(&["parse", "-p", "objectnav"], valid));
    assert_eq!((v["ok"].clone(), v["decision"]["angle"].clone()), (json!(true), json!(90.0)));
}

#[test]
fn unknown_extra_fields_are_ignored() {
    let reply = r#"{"goal_flag": false, "angle": 30, "confidence": 0.9, "notes": ["a", {"b": 1}],
        "discovered_context": {"goal_scene_type": "bedroom", "why": "bed", "extra": true}}"#;
    let v = parse_file("objectnav", reply);
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(
        v["decision"],
        json!({"goal_flag": false, "angle": 30.0, "discovered_context": {"goal_scene_type": "bedroom", "why": "bed"}}),
        "extra fields are dropped from the decision"
    );
    let v = parse_file(
        "candidates",
        r#"{"action": {"type": "EXPLORE", "speed": "fast"}, "fallback": {"if_failed": "STOP"}, "explanation": "x", "mood": 1}"#,
    );
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["decision"]["action"], json!({"type": "EXPLORE"}));
    let v = parse_file("explore", r#"{"name": "rotate", "arguments": {"degrees": 90}, "id": "call_1", "x": 2}"#);
    assert_eq!(v["ok"], true, "{v}");
}

#[test]
fn wrong_types_and_out_of_range_values_are_invalid() {
    let cases = [
        (r#"{"goal_flag": true, "angle": "15", "discovered_context": {"goal_scene_type": "a", "why": "b"}}"#, "angle"),
        (r#"{"goal_flag": true, "angle": 181, "discovered_context": {"goal_scene_type": "a", "why": "b"}}"#, "angle"),
        (
            r#"{"goal_flag": true, "angle": -180.5, "discovered_context": {"goal_scene_type": "a", "why": "b"}}"#,
            "angle",
        ),
        (
            r#"{"goal_flag": "yes", "angle": 0, "discovered_context": {"goal_scene_type": "a", "why": "b"}}"#,
            "goal_flag",
        ),
        (r#"{"goal_flag": true, "angle": 0, "discovered_context": "kitchen"}"#, "discovered_context"),
        (
            r#"{"goal_flag": true, "angle": 0, "discovered_context": {"why": "b"}}"#,
            "discovered_context.goal_scene_type",
        ),
    ];
    for (reply, field) in cases {
        let v = parse_file("objectnav", reply);
        assert_eq!(v["ok"], false, "{reply}");
        assert_eq!(v["decision"], OBJECTNAV_FALLBACK(), "{reply}");
        let error = v["error"].as_str().unwrap();
        assert!(error.starts_with(&format!("{field}: ")), "{reply}: the error names {field}: {error}");
    }
    let v = parse_file("objectnav", cases[1].0);
    assert_eq!(v["error"], "angle: 181 is outside [-180, 180]");

    // Candidates: a confidence outside [0, 1]; explore: a rotate angle that is not allowed.
    let v = parse_file(
        "candidates",
        r#"{"action": {"type": "STOP"}, "fallback": {"if_failed": "STOP"}, "explanation": "x",
            "world_model_update": {"corrections": [{"pos_m": [1, 2], "observed_state": "free", "confidence": 1.5}]}}"#,
    );
    assert_eq!(v["ok"], false);
    assert!(v["error"].as_str().unwrap().contains("confidence"), "{v}");
    let v = parse_file("explore", r#"{"name": "rotate", "arguments": {"degrees": 33}}"#);
    assert_eq!(v["ok"], false);
    assert_eq!(v["decision"], json!({"tool": "stop_robot", "arguments": {"reason": "uncertain"}}));
}

#[test]
fn candidates_parse_and_stop_fallback() {
    let reply = "<think>c2 or c1? {hmm}</think>Looking at the map, c1 is best.\n```json\n{\"action\": {\"type\": \
                 \"MOVE_TO\", \"target_id\": \"c1\",}, \"fallback\": {\"if_failed\": \"EXPLORE\"}, \"explanation\": \
                 \"closest to the goal\",}\n```";
    let v = parse_file("candidates", reply);
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(
        v["decision"],
        json!({"action": {"type": "MOVE_TO", "target_id": "c1"}, "fallback": {"if_failed": "EXPLORE"},
               "explanation": "closest to the goal"})
    );
    // The free-form normalizer (seed 002 synonym table) maps names to a valid decision…
    let v = parse_file("candidates", r#"{"action": "go_to", "target": "c2", "fallback": "scan", "reason": "closer"}"#);
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["decision"]["action"], json!({"type": "MOVE_TO", "target_id": "c2"}));
    assert_eq!(v["decision"]["fallback"], json!({"if_failed": "EXPLORE"}));
    // …and a free-form reply without a fallback gets the default fallback STOP (LLMos's
    // normalizeLLMResponse)…
    let v = parse_file("candidates", r#"{"action": "navigate", "candidate": "c2", "reasoning": "closer"}"#);
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(
        v["decision"],
        json!({"action": {"type": "MOVE_TO", "target_id": "c2"}, "fallback": {"if_failed": "STOP"},
               "explanation": "closer"})
    );
    // …but a structured reply (an action object) without a fallback is invalid (seed 002
    // validation rules).
    let v = parse_file("candidates", r#"{"action": {"type": "MOVE_TO", "target_id": "c2"}, "reason": "closer"}"#);
    assert_eq!(v["ok"], false, "{v}");
    assert!(v["error"].as_str().unwrap().starts_with("fallback"), "{v}");

    let v = report(&nav_stdin(&["parse", "--protocol", "candidates", "-"], "let me think {"));
    assert_eq!(v["ok"], false);
    assert_eq!(v["decision"]["action"], json!({"type": "STOP"}));
    assert_eq!(v["decision"]["fallback"], json!({"if_failed": "STOP"}));
    let error = v["error"].as_str().unwrap();
    assert_eq!(v["decision"]["explanation"], format!("Fallback: {error}"));
}

#[test]
fn explore_parse_and_stop_robot_fallback() {
    let openai = r#"{"role": "assistant", "content": "Doorway ahead.", "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "move_toward", "arguments": "{\"direction\": \"forward\", \"speed\": \"slow\", \"duration_s\": 2}"}}]}"#;
    let v = parse_file("explore", openai);
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(
        v["decision"],
        json!({"tool": "move_toward", "arguments": {"direction": "forward", "speed": "slow", "duration_s": 2.0}})
    );
    let v = report(&nav_stdin(&["parse", "--protocol", "explore"], "I would move forward slowly."));
    assert_eq!(v["ok"], false);
    assert_eq!(v["decision"], json!({"tool": "stop_robot", "arguments": {"reason": "uncertain"}}));
    assert!(v["error"].is_string());
}

#[test]
fn exit_status_is_0_when_ok_and_1_when_not_as_help_says() {
    let valid =
        r#"{"goal_flag": true, "angle": 0, "discovered_context": {"goal_scene_type": "kitchen", "why": "sink"}}"#;
    let o = nav_stdin(&["parse", "-p", "objectnav"], valid);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = nav_stdin(&["parse", "-p", "objectnav"], "no idea");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!((v["ok"].clone(), v["decision"].clone()), (json!(false), OBJECTNAV_FALLBACK()), "still printed");
    assert!(stderr(&o).is_empty(), "the JSON says why; nothing on stderr: {}", stderr(&o));
    let help = stdout(&nav(&["parse", "--help"]));
    assert!(help.contains("1 when it is not"), "--help documents the exit status: {help}");
}

#[test]
fn unreadable_file_is_exit_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no_such_reply.txt");
    let o = nav(&["parse", "--protocol", "objectnav", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stdout(&o).is_empty(), "nothing on stdout: {}", stdout(&o));
    assert!(stderr(&o).contains("no_such_reply.txt"), "stderr names the file: {}", stderr(&o));

    let o = nav(&["parse", "--protocol", "candidates", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "a directory is not a reply");
    assert!(stderr(&o).contains(dir.path().to_str().unwrap()), "{}", stderr(&o));

    let o = nav(&["parse", "--protocol", "teleport", "-"]);
    assert_eq!(o.status.code(), Some(2), "an unknown protocol is bad usage");
    assert!(stderr(&o).contains("teleport"), "{}", stderr(&o));
}

// ----------------------------------------------------------------- prompt

fn prompt(args: &[&str]) -> Value {
    let mut all = vec!["prompt"];
    all.extend_from_slice(args);
    let o = nav(&all);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    let out = stdout(&o);
    assert!(out.len() < 40_000, "{args:?}: images are summarized, not dumped ({} bytes)", out.len());
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {out}"))
}

fn texts(parts: &Value) -> String {
    parts
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn prompt_neutral_requests() {
    let v = prompt(&["--protocol", "objectnav"]);
    assert_eq!(v["json_schema"]["name"], "objectnav_decision");
    assert_eq!(v["json_schema"]["strict"], true);
    assert_eq!(v["json_schema"]["schema"]["required"], json!(["goal_flag", "angle", "discovered_context"]));
    assert!(v["system"].as_str().unwrap().contains("ObjectNav"));
    let images: Vec<&Value> = v["user"].as_array().unwrap().iter().filter(|p| p["type"] == "image").collect();
    assert_eq!(images.len(), 1, "the stitched panorama");
    assert!(images[0]["bytes"].as_u64().unwrap() > 1000);
    assert!(texts(&v["user"]).starts_with("TARGET: tv\n\nNAVIGATION CONTEXT"));

    let v = prompt(&["--protocol", "explore"]);
    let tools = v["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 7);
    assert!(tools.iter().all(|t| t["strict"] == true && t["parameters"]["additionalProperties"] == false));
    assert_eq!(v["tool_choice"], "required");
    assert!(texts(&v["user"]).contains("LIDAR m: "));

    let v = prompt(&["--protocol", "candidates"]);
    let text = texts(&v["user"]);
    let mut at = 0;
    for heading in ["=== CYCLE 1 ===", "GOAL:", "STATE:", "LAST ACTION:", "WORLD MODEL:", "CANDIDATES:", "HISTORY:"] {
        let found = text[at..].find(heading).unwrap_or_else(|| panic!("{heading} missing or out of order in {text}"));
        at += found + heading.len();
    }
    // the decision's schema, for servers that constrain their output to it
    assert_eq!(v["json_schema"]["name"], "navigation_decision");
    assert_eq!(v["json_schema"]["strict"], true);
    assert!(v["tools"].as_array().unwrap().is_empty());
    assert_eq!(v["temperature"].to_string(), "0.3", "the f32 temperature prints as written");

    let v = prompt(&["--protocol", "objectnav", "--text-only"]);
    assert!(v["user"].as_array().unwrap().iter().all(|p| p["type"] == "text"), "no images with --text-only");
    assert!(texts(&v["user"]).contains("PANORAMA (text)"));
}

#[test]
fn prompt_openai_wire_bodies() {
    let v = prompt(&["--protocol", "objectnav", "--vlm", "openai"]);
    assert_eq!(v["model"], "gpt-4o-mini");
    assert_eq!(v["response_format"]["type"], "json_schema");
    assert_eq!(v["response_format"]["json_schema"]["name"], "objectnav_decision");
    assert_eq!(v["response_format"]["json_schema"]["strict"], true);
    let url = v["messages"][1]["content"][0]["image_url"]["url"].as_str().unwrap();
    assert!(url.starts_with("data:") && url.contains("redacted"), "{url}");

    let v = prompt(&["--protocol", "explore", "--vlm", "openai"]);
    let tools = v["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 7);
    assert!(tools.iter().all(|t| t["type"] == "function" && t["function"]["strict"] == true));
    assert_eq!(v["tool_choice"], "required");
    assert_eq!(v["parallel_tool_calls"], false);

    let v = prompt(&["--protocol", "candidates", "--vlm", "openai", "--model", "qwen2.5-vl:7b"]);
    assert_eq!(v["model"], "qwen2.5-vl:7b");
    assert!(texts(&v["messages"][1]["content"]).contains("=== CYCLE 1 ==="));
    assert_eq!(v["temperature"].to_string(), "0.3");
    assert!(v.get("max_completion_tokens").is_some(), "OpenAI's own endpoint gets the newer limit: {v}");

    // a local server gets `max_tokens`; a reasoning model no temperature
    let args = ["--protocol", "candidates", "--vlm", "openai", "--base-url", "http://127.0.0.1:8080/v1"];
    let v = prompt(&args);
    assert!(v.get("max_tokens").is_some() && v.get("max_completion_tokens").is_none(), "{v}");
    let v = prompt(&["--protocol", "candidates", "--vlm", "openai", "--model", "gpt-5-mini"]);
    assert!(v.get("temperature").is_none() && v.get("max_completion_tokens").is_some(), "{v}");
}

#[test]
fn prompt_gemini_wire_bodies() {
    let v = prompt(&["--protocol", "objectnav", "--vlm", "gemini"]);
    assert_eq!(v["generationConfig"]["responseMimeType"], "application/json");
    assert_eq!(
        v["generationConfig"]["responseSchema"]["required"],
        json!(["goal_flag", "angle", "discovered_context"])
    );
    assert!(v["contents"][0]["parts"][0]["inlineData"]["data"].as_str().unwrap().contains("redacted"));

    let v = prompt(&["--protocol", "explore", "--vlm", "gemini"]);
    assert_eq!(v["tools"][0]["functionDeclarations"].as_array().unwrap().len(), 7);
    assert_eq!(v["toolConfig"]["functionCallingConfig"]["mode"], "ANY");
    assert!(v["systemInstruction"]["parts"][0]["text"].as_str().unwrap().contains("STRATEGY: "));

    let v = prompt(&["--protocol", "candidates", "--vlm", "gemini"]);
    assert!(texts(&v["contents"][0]["parts"]).contains("CANDIDATES:"));
}

#[test]
fn prompt_anthropic_wire_bodies() {
    let v = prompt(&["--protocol", "objectnav", "--vlm", "anthropic"]);
    assert_eq!(v["model"], "claude-haiku-4-5");
    assert_eq!(v["tool_choice"], json!({"type": "tool", "name": "objectnav_decision"}), "JSON mode is a forced tool");
    assert_eq!(v["system"][0]["cache_control"], json!({"type": "ephemeral"}));
    assert!(v["messages"][0]["content"][0]["source"]["data"].as_str().unwrap().contains("redacted"));

    let v = prompt(&["--protocol", "explore", "--vlm", "anthropic"]);
    assert_eq!(v["tools"].as_array().unwrap().len(), 7);
    assert_eq!(v["tool_choice"], json!({"type": "any"}));
    assert!(v["tools"].as_array().unwrap().iter().all(|t| t["input_schema"]["additionalProperties"] == false));

    let v = prompt(&["--protocol", "candidates", "--vlm", "anthropic"]);
    assert!(texts(&v["messages"][0]["content"]).contains("HISTORY:"));
    assert!(v.get("temperature").is_none(), "current Claude models reject sampling parameters: {v}");
}

#[test]
fn prompt_rejects_an_unknown_provider() {
    let o = nav(&["prompt", "--protocol", "objectnav", "--vlm", "skynet"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("skynet"), "{}", stderr(&o));
}

// -------------------------------------------------------------- grounding

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../nav-memory/tests/fixtures/grounding")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

#[test]
fn grounding_merge_of_json_and_txt() {
    let files =
        [fixture("grounding_episode_1.json"), fixture("grounding_episode_2.json"), fixture("custom_grounding.txt")];
    let mut args = vec!["grounding", "merge"];
    args.extend(files.iter().map(String::as_str));
    let o = nav(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    let out = stdout(&o);
    for line in [
        "#### User Preference",
        "- Drive slowly near the sofa.",
        "#### Spatial",
        "- The green room is the kitchen.",
        "- The bathroom is left of the stairs.",
        "#### Procedural",
        "#### General Rules",
        "- Ask the user when an instruction is ambiguous.",
        "Never enter the garage; the door is fragile.",
    ] {
        assert!(out.contains(line), "{line:?} missing from\n{out}");
    }
    assert_eq!(out.matches("kitchen is green").count(), 1, "feedback shared by both episodes appears once:\n{out}");
    let spatial = out.find("#### Spatial").unwrap();
    assert!(out.find("---").unwrap() > spatial, "the TXT knowledge comes after the merged JSON sections");
}

#[test]
fn grounding_merge_warns_about_a_corrupt_json() {
    let files = [fixture("grounding_episode_1.json"), fixture("corrupt.json"), fixture("custom_grounding.txt")];
    let mut args = vec!["grounding", "merge"];
    args.extend(files.iter().map(String::as_str));
    let o = nav(&args);
    assert_eq!(o.status.code(), Some(0), "a corrupt file is skipped, not fatal: {}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("warning") && err.contains("corrupt.json"), "the warning names the file: {err}");
    assert_eq!(err.matches("corrupt.json").count(), 1, "the warning is printed once: {err}");
    assert!(!err.contains('\u{1b}'), "no colour codes in a redirected log: {err:?}");
    let out = stdout(&o);
    assert!(out.contains("- Drive slowly near the sofa.") && out.contains("Never enter the garage"), "{out}");
    assert!(!out.contains("bathroom"), "nothing from other files leaks in:\n{out}");
}
