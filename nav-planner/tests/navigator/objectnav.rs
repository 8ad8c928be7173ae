//! The ObjectNav loop: the goal with a text-only model, the fallback after
//! two invalid replies, every call in the log, re-planning on STUCK/ABABA
//! and the DC queue.

use crate::doubles::{objectnav_answer, objectnav_model, objectnav_spec, text_of};
use crate::{assert_consecutive, events, run};
use async_trait::async_trait;
use nav_core::action::Action;
use nav_core::geometry::Pose2;
use nav_hal::sim::{SimConfig, SimHal, SimWorld};
use nav_memory::SceneObservation;
use nav_planner::navigator::objectnav_loop::{ObjectNavLoop, ObjectNavLoopConfig, ObjectNavParts};
use nav_planner::navigator::policy::{LowLevelPolicy, PolicyAction, PolicyGoal, PolicyObservation};
use nav_planner::navigator::{RunContext, StepLog, StepRecord};
use nav_planner::offline::LabelBufferPerception;
use nav_planner::protocol::CallRecord;
use nav_planner::protocol::objectnav::{ObjectNavPromptConfig, VlmObjectNavPlanner};
use nav_planner::protocol::scene::{SceneAnalyzer, SceneInput};
use nav_planner::vlm::{FnVlm, ScriptedVlm, VlmRequest, VlmResponse};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The DC queue of every line holds at most 5 records, indexed 1..N; the
/// newest one is the decision of the step that called the planner. Returns
/// the longest queue seen.
fn assert_dc_queue(records: &[StepRecord]) -> usize {
    let mut longest = 0;
    for r in records {
        assert!(r.dc_queue.len() <= 5, "step {}: DC queue of {}", r.step, r.dc_queue.len());
        let idx: Vec<usize> = r.dc_queue.iter().map(|d| d.idx).collect();
        assert_eq!(idx, (1..=r.dc_queue.len()).collect::<Vec<_>>(), "step {}: DC queue indices", r.step);
        if let Some(p) = &r.planner {
            let newest = r.dc_queue.last().expect("a planner call pushes a DC record");
            let dc = &p.parsed["discovered_context"];
            assert_eq!(newest.goal_flag, p.parsed["goal_flag"].as_bool().unwrap());
            assert_eq!(newest.goal_scene_type, dc["goal_scene_type"].as_str().unwrap());
            assert_eq!(newest.why, dc["why"].as_str().unwrap());
        }
        longest = longest.max(r.dc_queue.len());
    }
    longest
}

#[tokio::test]
async fn objectnav_reaches_the_target_with_a_text_only_model() {
    // the toilet is in the bathroom, through a door off the corridor the robot starts in
    let (summary, records) = run(&objectnav_spec(objectnav_model(), "toilet", 200)).await;
    assert!(summary.success, "{}", summary.report());
    assert_eq!((summary.end.as_str(), summary.collisions, summary.fallbacks), ("stopped", 0, 0));
    assert!(summary.planner_calls >= 3, "{}", summary.report());
    assert_eq!(summary.vlm_calls, summary.planner_calls);
    assert_consecutive(&records);
    assert_eq!(records.len() as u32, summary.steps + 1);
    assert_eq!(records[0].info["target"], "toilet");
    assert_eq!(records.last().unwrap().action, "stop");
    // every logged call carries the model's raw reply and the decision parsed from it
    let calls: Vec<_> = records.iter().filter_map(|r| r.planner.as_ref()).collect();
    assert!(!calls.is_empty() && records.iter().all(|r| r.planner_called == r.planner.is_some()));
    for p in &calls {
        assert_eq!(p.raw.len(), 1);
        assert_eq!(serde_json::from_str::<Value>(&p.raw[0]).unwrap(), p.parsed);
        assert!(p.fallback.is_none());
    }
    // the model saw the toilet before the end and said so
    assert!(calls.last().unwrap().parsed["goal_flag"].as_bool().unwrap());
    assert_dc_queue(&records);
}

#[tokio::test]
async fn objectnav_two_garbage_replies_fall_back_and_the_run_goes_on() {
    let calls = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(Mutex::new(Vec::<String>::new()));
    let (c, q) = (calls.clone(), requests.clone());
    let vlm = Arc::new(FnVlm::new(move |r: &VlmRequest| {
        q.lock().unwrap().push(text_of(r));
        Ok(VlmResponse::from_text(match c.fetch_add(1, Ordering::SeqCst) {
            0 => "The toilet is probably to the left.".to_string(),
            1 => {
                r#"{"goal_flag": "no", "angle": 45, "discovered_context": {"goal_scene_type": "bathroom", "why": "x"}}"#
                    .to_string()
            }
            _ => objectnav_answer(r).to_string(),
        }))
    }));
    let (summary, records) = run(&objectnav_spec(vlm, "toilet", 200)).await;

    // the first decision is the seed's fallback, after exactly one retry
    let first = records[1].planner.as_ref().expect("the planner is called at the first step");
    assert_eq!(first.vlm_calls, 2);
    assert_eq!(first.raw.len(), 2);
    assert_eq!(
        first.parsed,
        json!({"goal_flag": false, "angle": 0.0, "discovered_context": {"goal_scene_type": "corridor", "why": "fallback"}})
    );
    let reason = first.fallback.as_deref().expect("the fallback reason is logged");
    assert!(reason.contains("goal_flag"), "the reason names the bad field: {reason}");
    let (at, ev) = events(&records, "fallback").next().expect("a fallback event");
    assert_eq!((at.step, ev["reason"].as_str()), (1, Some(reason)));
    assert_eq!(events(&records, "fallback").count(), 1);
    let asked = requests.lock().unwrap().clone();
    assert!(asked[1].contains("Your previous reply was invalid"), "the retry says why: {}", asked[1]);
    // the fallback is the oldest DC record, and the episode went on to find the toilet
    assert_eq!(records[1].dc_queue[0].why, "fallback");
    assert_eq!(summary.fallbacks, 1);
    assert_eq!(summary.vlm_calls, summary.planner_calls + 1);
    assert!(summary.planner_calls >= 3, "{}", summary.report());
    assert!(summary.success, "{}", summary.report());
    assert!(records[2..].iter().filter_map(|r| r.planner.as_ref()).all(|p| p.fallback.is_none()));
    assert_consecutive(&records);
    assert_dc_queue(&records);
}

#[tokio::test]
async fn objectnav_logs_every_planner_call_even_when_the_policy_hands_back_at_once() {
    // the robot starts facing the corridor's north wall, 0.45 m away: the fallback's "straight ahead" is
    // blocked at once, so the loop asks again before it takes a step
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let vlm = Arc::new(FnVlm::new(move |r: &VlmRequest| {
        Ok(VlmResponse::from_text(match c.fetch_add(1, Ordering::SeqCst) {
            0 | 1 => "no idea".to_string(),
            _ => objectnav_answer(r).to_string(),
        }))
    }));
    let mut spec = objectnav_spec(vlm, "toilet", 200);
    spec.arena.start.y = 4.55;
    spec.arena.start.yaw_deg = 90.0;
    let (summary, records) = run(&spec).await;
    assert_eq!(summary.fallbacks, 1);
    assert!(summary.planner_calls >= 3, "{}", summary.report());
    let first = &records[1];
    assert!(first.events.iter().any(|e| e["event"] == "policy_stop" && e["reason"] == "blocked"), "{:?}", first.events);
    // every model call is in the log with its raw reply: the step's own record, or a `replanned` event for a
    // call superseded before the robot moved
    let superseded: Vec<&Value> = events(&records, "replanned").map(|(_, e)| &e["planner"]).collect();
    let (at, fallback) = events(&records, "replanned").next().expect("the fallback was superseded");
    let reason = first.events.iter().find(|e| e["event"] == "fallback").unwrap()["reason"].as_str();
    assert_eq!((at.step, fallback["planner"]["fallback"].as_str()), (1, reason));
    assert_eq!(fallback["planner"]["raw"], json!(["no idea", "no idea"]));
    assert_eq!(fallback["planner"]["parsed"]["discovered_context"]["why"], "fallback");
    let logged: u64 = records.iter().filter_map(|r| r.planner.as_ref()).map(|p| u64::from(p.vlm_calls)).sum::<u64>()
        + superseded.iter().map(|p| p["vlm_calls"].as_u64().unwrap()).sum::<u64>();
    assert_eq!(logged, u64::from(summary.vlm_calls));
    assert_eq!(
        records.iter().filter(|r| r.planner.is_some()).count() + superseded.len(),
        summary.planner_calls as usize
    );
}

#[tokio::test]
async fn objectnav_turning_around_on_the_planners_word_then_goes_forward() {
    // facing the west end of the corridor, the model says "behind you" (180°): the policy turns
    // around in six 30° steps and then follows the open corridor east, without asking again
    let reply = |angle: f64| {
        json!({"goal_flag": false, "angle": angle,
            "discovered_context": {"goal_scene_type": "corridor", "why": "the corridor goes on there"}})
    };
    let vlm = Arc::new(ScriptedVlm::new().then_json(reply(180.0)).then_json(reply(0.0)).repeat_last());
    let mut spec = objectnav_spec(vlm, "toilet", 12);
    spec.arena.start.yaw_deg = 180.0;
    let (_, records) = run(&spec).await;
    let actions: Vec<&str> = records[1..].iter().map(|r| r.action.as_str()).collect();
    assert_eq!(actions[..7], ["turn_left"; 6].iter().copied().chain(["forward"]).collect::<Vec<_>>()[..]);
    assert!(records[2..=7].iter().all(|r| !r.planner_called), "no second call before moving on");
    assert!(events(&records[..=7], "policy_stop").next().is_none());
}

/// A policy that turns left forever and never hands back: the loop only
/// re-plans when memory patterns ask it to.
struct Spinner;

#[async_trait]
impl LowLevelPolicy for Spinner {
    fn name(&self) -> &str {
        "spinner"
    }
    fn reset(&mut self, _goal: &PolicyGoal, _pose: Pose2) {}
    async fn act(&mut self, _obs: &PolicyObservation<'_>) -> PolicyAction {
        PolicyAction::Step(Action::TurnLeft)
    }
}

/// A scene analyzer that reports the given labels in turn.
struct Scenes(Vec<&'static str>, usize);

#[async_trait]
impl SceneAnalyzer for Scenes {
    fn name(&self) -> String {
        "scenes".into()
    }
    async fn analyze(&mut self, _input: &SceneInput<'_>) -> (Option<SceneObservation>, CallRecord) {
        let label = self.0[self.1 % self.0.len()];
        self.1 += 1;
        (Some(SceneObservation::new(label)), CallRecord::default())
    }
}

/// Runs 30 steps of the objectnav loop in `house_a` with the spinner.
async fn spin(scenes: Scenes, replan_on_patterns: bool, place_period: u32) -> (u32, Vec<StepRecord>) {
    let world = SimWorld::builtin("house_a", SimConfig::default()).unwrap();
    let clock = world.clock();
    let mut hal = SimHal::new(world);
    let planner = VlmObjectNavPlanner::new(
        objectnav_model(),
        ObjectNavPromptConfig { text_only: true, ..ObjectNavPromptConfig::default() },
    );
    let mut config = ObjectNavLoopConfig { max_steps: 30, replan_on_patterns, ..ObjectNavLoopConfig::default() };
    config.memory_config.place_update_period = place_period;
    config.memory_config.dwell_k = 1;
    let mut log = StepLog::memory();
    let parts = ObjectNavParts {
        planner: Box::new(planner),
        policy: Box::new(Spinner),
        perception: Box::new(LabelBufferPerception::default()),
        scene: Box::new(scenes),
    };
    let mut objectnav = ObjectNavLoop::new(config, "tv", parts).unwrap();
    let out = objectnav.run(&mut hal, &mut RunContext::new(clock.as_ref(), &mut log)).await.unwrap();
    assert_eq!(out.stats.steps, 30);
    (out.stats.planner_calls, log.records().to_vec())
}

/// Steps whose line reports one of the pattern events.
fn pattern_steps(records: &[StepRecord], kind: &str) -> Vec<u64> {
    events(records, kind).map(|(r, _)| r.step).collect()
}

#[tokio::test]
async fn replan_on_patterns_adds_planner_calls_on_stuck_and_ababa() {
    // STUCK: turning in place keeps the robot at one anchor; W = 10 steps
    let (calls_off, off) = spin(Scenes(vec!["corridor"], 0), false, 20).await;
    let (calls_on, on) = spin(Scenes(vec!["corridor"], 0), true, 20).await;
    assert_eq!(pattern_steps(&off, "stuck"), [10]);
    assert_eq!(pattern_steps(&on, "stuck"), [10]);
    assert_eq!(calls_off, 1, "without replan_on_patterns only the episode start calls the planner");
    assert_eq!(off.iter().filter(|r| r.planner_called).map(|r| r.step).collect::<Vec<_>>(), [1]);
    assert_eq!(calls_on, 2);
    assert_eq!(on.iter().filter(|r| r.planner_called).map(|r| r.step).collect::<Vec<_>>(), [1, 11]);

    // ABABA: the scene alternates every step, each change is confirmed at once (k = 1)
    let labels = || Scenes(vec!["kitchen", "bedroom"], 0);
    let (calls_off, off) = spin(labels(), false, 1).await;
    let (calls_on, on) = spin(labels(), true, 1).await;
    let ababa = pattern_steps(&on, "ababa");
    assert!(!ababa.is_empty(), "alternating places are an ABABA pattern");
    assert_eq!(pattern_steps(&off, "ababa"), ababa);
    assert!(pattern_steps(&on, "stuck").is_empty());
    assert_eq!(calls_off, 1);
    let called: Vec<u64> = on.iter().filter(|r| r.planner_called).map(|r| r.step).collect();
    let expected: Vec<u64> = std::iter::once(1).chain(ababa.iter().map(|s| s + 1).filter(|s| *s <= 30)).collect();
    assert_eq!(called, expected, "each ABABA event re-plans at the next step");
    assert_eq!(calls_on as usize, expected.len());
    // many calls: the DC queue stays capped at N = 5 and re-indexed
    assert_eq!(assert_dc_queue(&on), 5);
    assert_dc_queue(&off);
}
