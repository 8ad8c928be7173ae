//! Parser properties across the three protocols (issue 6 "Parser
//! proptest"): any valid decision wrapped in random noise — prose before and
//! after (English and Korean, with stray braces), code fences, trailing
//! commas, `<think>` blocks holding decoy decisions, Korean text with braces
//! inside string fields — parses back to itself; arbitrary text never
//! panics; and an out-of-range angle goes through exactly one retry to the
//! seed's fallback in `VlmObjectNavPlanner`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use serde_json::{Value, json};

use nav_core::geometry::Pose2;
use nav_core::grid::{Correction, ObservedState};
use nav_planner::protocol::candidates::{
    ActionType, CandidateAction, CandidateDecision, FallbackAction, FallbackType, ParsePath, WorldModelUpdate,
};
use nav_planner::protocol::explore::parse_reply;
use nav_planner::protocol::json::extract_json_object;
use nav_planner::protocol::objectnav::{
    DiscoveredContext, ObjectNavDecision, ObjectNavObservation, ObjectNavPlanner, ObjectNavPromptConfig,
    VlmObjectNavPlanner,
};
use nav_planner::protocol::{ParseReport, ProtocolKind};
use nav_planner::vlm::ScriptedVlm;
use nav_safety::tools::ToolCall;

// ------------------------------------------------------------------ noise

/// Free text mixing English, Korean, punctuation and stray braces. It never
/// holds a JSON object of its own (that would be a different reply) and has
/// no quotes, colons, backticks or angle brackets (those would make it JSON
/// syntax, a fence or a tag rather than prose).
fn prose() -> impl Strategy<Value = String> {
    let words = prop_oneof![
        "[a-zA-Z ,.!?]{0,24}",
        "[가-힣 ,.!?]{0,16}",
        Just("방향 {왼쪽} 이 좋아 보입니다.".to_string()),
        Just("주방은 {kitchen 근처}".to_string()),
        Just("Here is my answer }".to_string()),
        Just("the set {a, b".to_string()),
        Just("Sure! [1] see below".to_string()),
    ];
    proptest::collection::vec(words, 0..4)
        .prop_map(|w| w.join(" "))
        .prop_filter("prose holds no JSON object", |p| extract_json_object(p).is_err())
}

/// How a JSON text is wrapped.
#[derive(Debug, Clone)]
struct Noise {
    pretty: bool,
    /// One flag per closing bracket: put a trailing comma before it.
    commas: Vec<bool>,
    fence: Option<&'static str>,
    before: String,
    after: String,
    /// `Some(true)`: a `<think>…</think>` block first; `Some(false)`: an
    /// orphan `…</think>` (a chat template opened the block).
    think: Option<bool>,
}

fn noise() -> impl Strategy<Value = Noise> {
    (
        any::<bool>(),
        proptest::collection::vec(any::<bool>(), 16),
        prop_oneof![Just(None), Just(Some("```json\n")), Just(Some("```JSON\n")), Just(Some("```\n"))],
        prose(),
        prose(),
        prop_oneof![Just(None), Just(Some(true)), Just(Some(false))],
    )
        .prop_map(|(pretty, commas, fence, before, after, think)| Noise {
            pretty,
            commas,
            fence,
            before,
            after,
            think,
        })
}

/// Inserts a comma before the closing brackets `commas` selects (outside
/// string literals).
fn add_trailing_commas(json: &str, commas: &[bool]) -> String {
    let mut out = String::with_capacity(json.len() + 8);
    let (mut in_str, mut escaped, mut k) = (false, false, 0usize);
    for c in json.chars() {
        if in_str {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
        } else if c == '"' {
            in_str = true;
        } else if c == '}' || c == ']' {
            if commas.get(k).copied().unwrap_or(false) {
                out.push(',');
            }
            k += 1;
        }
        out.push(c);
    }
    out
}

/// `value` as a model might write it, with `decoy` (another complete reply)
/// hidden in the reasoning block.
fn wrap(value: &Value, decoy: &Value, n: &Noise) -> String {
    let json = if n.pretty { serde_json::to_string_pretty(value).unwrap() } else { value.to_string() };
    let json = add_trailing_commas(&json, &n.commas);
    let body = match n.fence {
        Some(open) => format!("{open}{json}\n```"),
        None => json,
    };
    let reply = format!("{}\n{body}\n{}", n.before, n.after);
    match n.think {
        Some(true) => format!("<think>The answer could be {decoy} but 확인 {{필요}}.</think>\n{reply}"),
        Some(false) => format!("I considered ```json\n{decoy}\n``` first.</think>{reply}"),
        None => reply,
    }
}

/// Text for string fields: Korean, braces, brackets, quotes, backslashes.
fn field_text(min: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!(r#"[a-zA-Z가-힣{{}}\[\] ,.:!?"\\]{{{min},40}}"#)).unwrap()
}

// -------------------------------------------------------------- objectnav

fn objectnav_decision() -> impl Strategy<Value = ObjectNavDecision> {
    let angle =
        prop_oneof![Just(-180.0), Just(180.0), Just(0.0), (-180i32..=180).prop_map(f64::from), -180.0f64..=180.0];
    (any::<bool>(), angle, field_text(1), field_text(0))
        .prop_filter("a scene type", |(_, _, scene, _)| !scene.trim().is_empty())
        .prop_map(|(goal_flag, angle, goal_scene_type, why)| ObjectNavDecision {
            goal_flag,
            angle,
            discovered_context: DiscoveredContext { goal_scene_type, why },
        })
}

fn objectnav_decoy() -> Value {
    json!({"goal_flag": true, "angle": 999, "discovered_context": {"goal_scene_type": "decoy", "why": "not me"}})
}

// ------------------------------------------------------------- candidates

fn candidate_decision() -> impl Strategy<Value = CandidateDecision> {
    let kind = prop_oneof![
        Just(ActionType::MoveTo),
        Just(ActionType::Explore),
        Just(ActionType::RotateTo),
        Just(ActionType::FollowWall),
        Just(ActionType::Stop),
    ];
    let if_failed = prop_oneof![Just(FallbackType::Explore), Just(FallbackType::RotateTo), Just(FallbackType::Stop)];
    let correction = (-10.0f64..10.0, -10.0f64..10.0, 0.0f64..=1.0, 0usize..3).prop_map(|(x, y, confidence, s)| {
        let observed_state = [ObservedState::Free, ObservedState::Obstacle, ObservedState::Unknown][s];
        Correction { pos_m: [x, y], observed_state, confidence }
    });
    (
        kind,
        if_failed,
        "[cfrw][1-9]",
        proptest::option::of((-20.0f64..20.0, -20.0f64..20.0)),
        -180.0f64..180.0,
        proptest::option::of("[cfrw][1-9]"),
        proptest::option::of(proptest::collection::vec(correction, 0..3)),
        field_text(1),
    )
        .prop_filter("an explanation", |t| !t.7.trim().is_empty())
        .prop_map(|(kind, if_failed, id, point, yaw, fb_target, corrections, explanation)| {
            let moving = kind == ActionType::MoveTo;
            CandidateDecision {
                action: CandidateAction {
                    kind,
                    target_id: (moving && point.is_none()).then_some(id),
                    target_m: point.filter(|_| moving).map(|(x, y)| [x, y]),
                    yaw_deg: (kind == ActionType::RotateTo).then_some(yaw),
                },
                fallback: FallbackAction { if_failed, target_id: fb_target },
                world_model_update: corrections.map(|corrections| WorldModelUpdate { corrections }),
                explanation,
            }
        })
}

fn candidate_decoy() -> Value {
    json!({"action": {"type": "STOP"}, "fallback": {"if_failed": "STOP"}, "explanation": "decoy"})
}

// ---------------------------------------------------------------- explore

/// A valid call of any of the seven tools (strict parse round trip).
fn tool_call() -> impl Strategy<Value = ToolCall> {
    let direction = prop_oneof![
        Just("forward"),
        Just("forward_left"),
        Just("left"),
        Just("forward_right"),
        Just("right"),
        Just("backward")
    ];
    let args = prop_oneof![
        (direction.clone(), prop_oneof![Just("slow"), Just("medium"), Just("fast")], 1.0f64..=8.0)
            .prop_map(|(d, s, t)| ("move_toward", json!({"direction": d, "speed": s, "duration_s": t}))),
        (0u32..20, field_text(0)).prop_map(|(id, reason)| (
            "navigate_to_goal",
            json!({"goal_type": "frontier", "frontier_id": id, "reason": reason})
        )),
        (-10.0f64..10.0, -10.0f64..10.0, field_text(0)).prop_map(|(x, y, reason)| (
            "navigate_to_goal",
            json!({"goal_type": "coordinates", "x": x, "y": y, "reason": reason})
        )),
        proptest::sample::select(vec![-180, -135, -90, -45, 45, 90, 135, 180])
            .prop_map(|d| ("rotate", json!({"degrees": d}))),
        proptest::sample::select(vec![
            "obstacle_detected",
            "exploration_complete",
            "need_to_observe",
            "user_requested",
            "uncertain"
        ])
        .prop_map(|r| ("stop_robot", json!({"reason": r}))),
        proptest::sample::select(vec!["general", "doorways", "obstacles", "objects", "floor_surface"])
            .prop_map(|f| ("observe_scene", json!({"focus": f}))),
        (direction, 0.5f64..=5.0).prop_map(|(d, m)| ("check_path_clear", json!({"direction": d, "distance_m": m}))),
        (
            field_text(1),
            field_text(0),
            proptest::sample::select(vec!["landmark", "room", "obstacle", "point_of_interest"])
        )
            .prop_map(|(label, notes, s)| (
                "report_discovery",
                json!({"label": label, "notes": notes, "significance": s})
            )),
    ];
    args.prop_filter_map("a valid tool call", |(name, args)| ToolCall::parse(name, &args).ok())
}

/// The shapes a tool call arrives in from `nav parse` users.
fn tool_call_json(call: &ToolCall, shape: u8) -> Value {
    match shape % 3 {
        0 => json!({"name": call.name(), "arguments": call.to_json()}),
        // OpenAI: arguments as a JSON string inside `tool_calls`.
        1 => json!({"tool_calls": [{"id": "call_1", "type": "function",
                     "function": {"name": call.name(), "arguments": call.to_json().to_string()}}]}),
        // Anthropic: a tool_use block in `content`, after reasoning text.
        _ => json!({"content": [{"type": "text", "text": "PERCEIVE {문} REASON"},
                     {"type": "tool_use", "id": "toolu_1", "name": call.name(), "input": call.to_json()}]}),
    }
}

fn explore_decoy() -> Value {
    json!({"name": "stop_robot", "arguments": {"reason": "user_requested"}})
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn objectnav_decision_in_noise_parses_back(d in objectnav_decision(), n in noise()) {
        let reply = wrap(&serde_json::to_value(&d).unwrap(), &objectnav_decoy(), &n);
        prop_assert_eq!(ObjectNavDecision::parse(&reply).map_err(|e| format!("{e}\n{reply}")), Ok(d.clone()));
        let report = ParseReport::parse(ProtocolKind::Objectnav, &reply);
        prop_assert!(report.ok);
        prop_assert_eq!(report.decision, serde_json::to_value(&d).unwrap());
    }

    #[test]
    fn candidate_decision_in_noise_parses_back(d in candidate_decision(), n in noise()) {
        let reply = wrap(&serde_json::to_value(&d).unwrap(), &candidate_decoy(), &n);
        let parsed = CandidateDecision::parse(&reply).map_err(|e| format!("{e}\n{reply}"));
        prop_assert_eq!(parsed, Ok((d, ParsePath::Strict)));
    }

    #[test]
    fn explore_tool_call_in_noise_parses_back(call in tool_call(), shape in any::<u8>(), n in noise()) {
        let reply = wrap(&tool_call_json(&call, shape), &explore_decoy(), &n);
        prop_assert_eq!(parse_reply(&reply).map_err(|e| format!("{e}\n{reply}")), Ok(call));
    }

    #[test]
    fn arbitrary_text_never_panics(s in ".*") {
        for protocol in [ProtocolKind::Objectnav, ProtocolKind::Candidates, ProtocolKind::Explore] {
            let report = ParseReport::parse(protocol, &s);
            prop_assert_eq!(report.ok, report.error.is_none());
        }
    }

    #[test]
    fn json_like_text_never_panics(s in r#"[{}\[\]",:\\a-z0-9 `<>/.\-]{0,200}"#) {
        for protocol in [ProtocolKind::Objectnav, ProtocolKind::Candidates, ProtocolKind::Explore] {
            let report = ParseReport::parse(protocol, &s);
            prop_assert!(report.ok || !report.decision.is_null(), "the fallback is always a decision");
        }
    }
}

// ------------------------------------------------ retry and fallback

fn observation() -> ObjectNavObservation<'static> {
    ObjectNavObservation {
        target: "chair",
        pose: Pose2::new(0.0, 0.0, 0.0),
        panorama: None,
        scan: None,
        context: None,
        instruction: None,
    }
}

fn plan(vlm: &ScriptedVlm) -> nav_planner::protocol::PlannerReply<ObjectNavDecision> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut planner = VlmObjectNavPlanner::new(vlm, ObjectNavPromptConfig::default());
    runtime.block_on(async { planner.plan(&observation()).await })
}

fn out_of_range() -> impl Strategy<Value = f64> {
    prop_oneof![180.000_001f64..1.0e9, -1.0e9..-180.000_001f64, Just(181.0), Just(-181.0), Just(360.0)]
}

fn reply_with_angle(angle: f64) -> String {
    json!({"goal_flag": false, "angle": angle, "discovered_context": {"goal_scene_type": "bedroom", "why": "bed"}})
        .to_string()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Two out-of-range angles: one retry, then the seed's fallback, with
    /// both reasons recorded.
    #[test]
    fn out_of_range_angle_retries_then_falls_back(a in out_of_range(), b in out_of_range()) {
        let vlm = ScriptedVlm::new().then_text(reply_with_angle(a)).then_text(reply_with_angle(b));
        let reply = plan(&vlm);
        prop_assert_eq!(vlm.calls(), 2);
        prop_assert_eq!(&reply.decision, &ObjectNavDecision::fallback());
        prop_assert_eq!(reply.record.vlm_calls, 2);
        prop_assert_eq!(reply.record.errors.len(), 2);
        for e in &reply.record.errors {
            prop_assert!(e.starts_with("angle: ") && e.ends_with(" is outside [-180, 180]"), "{}", e);
        }
        prop_assert_eq!(reply.record.fallback.as_ref(), reply.record.errors.last());
        // The retry tells the model what was wrong.
        let retry = vlm.requests()[1].clone();
        let Some(nav_planner::vlm::Part::Text(last)) = retry.user.last() else { panic!("a text part") };
        prop_assert!(last.starts_with("Your previous reply was invalid (angle: "), "{}", last);
    }

    /// An out-of-range angle then a valid reply: the retry's decision is used.
    #[test]
    fn out_of_range_angle_then_valid_uses_the_retry(a in out_of_range(), good in -180.0f64..=180.0) {
        let vlm = ScriptedVlm::new().then_text(reply_with_angle(a)).then_text(reply_with_angle(good));
        let reply = plan(&vlm);
        prop_assert_eq!(vlm.calls(), 2);
        prop_assert_eq!(reply.decision.angle, good);
        prop_assert_eq!(reply.record.fallback, None);
        prop_assert_eq!(reply.record.errors.len(), 1);
    }
}

/// The seed's fallback exactly: `{false, 0, "corridor", "fallback"}`.
#[test]
fn fallback_is_the_seed_fallback() {
    let vlm = ScriptedVlm::new().then_text("no").then_text("still no");
    let reply = plan(&vlm);
    assert_eq!(
        serde_json::to_value(&reply.decision).unwrap(),
        json!({"goal_flag": false, "angle": 0.0, "discovered_context": {"goal_scene_type": "corridor", "why": "fallback"}})
    );
    assert_eq!(reply.record.fallback.as_deref(), Some("no JSON object in reply"));
}
