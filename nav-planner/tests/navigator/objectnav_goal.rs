//! ObjectNav without a simulator oracle (issue 14): the episode ends only
//! with the agent's own STOP, after the planner said `goal_flag: true` and
//! the perception stage confirmed the target within reach. Scripted models:
//! never-goal, always-goal, a target behind a wall, a false sighting then
//! the correction, and the stop check's veto.

use crate::doubles::{objectnav_answer, objectnav_spec};
use crate::{events, run};
use async_trait::async_trait;
use nav_hal::sim::{SimConfig, SimHal, SimWorld};
use nav_planner::navigator::objectnav_loop::{ObjectNavEnd, ObjectNavLoop, ObjectNavLoopConfig, ObjectNavParts};
use nav_planner::navigator::pixel_policy::PixelGoalPolicy;
use nav_planner::navigator::{RunContext, StepLog, StepRecord};
use nav_planner::offline::{LabelBufferPerception, OfflineSceneAnalyzer};
use nav_planner::protocol::CallRecord;
use nav_planner::protocol::objectnav::{ObjectNavPromptConfig, VlmObjectNavPlanner};
use nav_planner::protocol::perception::{GoalPerception, PerceptionInput, PerceptionNeeds, PerceptionReply};
use nav_planner::vlm::{FnVlm, VisionLanguageModel, VlmRequest, VlmResponse};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn goal(flag: bool, angle: f64) -> Value {
    json!({"goal_flag": flag, "angle": angle, "discovered_context": {"goal_scene_type": "room", "why": "scripted"}})
}

fn model(f: impl Fn(&VlmRequest, usize) -> Value + Send + Sync + 'static) -> Arc<dyn VisionLanguageModel> {
    let n = Arc::new(AtomicUsize::new(0));
    Arc::new(FnVlm::new(move |r: &VlmRequest| {
        Ok(VlmResponse::from_text(f(r, n.fetch_add(1, Ordering::SeqCst)).to_string()))
    }))
}

fn stopped(records: &[StepRecord]) -> bool {
    records.iter().any(|r| r.action == "stop")
}

#[tokio::test]
async fn a_model_that_never_says_goal_flag_never_stops() {
    // the usual text-only model, but with the flag always false: it walks up to the toilet and looks at it
    let vlm = model(|r, _| {
        let mut a = objectnav_answer(r);
        a["goal_flag"] = json!(false);
        a
    });
    let (summary, records) = run(&objectnav_spec(vlm, "toilet", 150)).await;
    assert!(!summary.success, "{}", summary.report());
    assert_eq!(summary.end, "step_limit");
    assert!(!stopped(&records));
    assert_eq!(events(&records, "perception").count(), 0, "no goal_flag, no perception");
}

#[tokio::test]
async fn a_model_that_always_says_goal_flag_ahead_fails_where_the_target_is_not_there() {
    // house_a's start corridor: the toilet is in the bathroom, not ahead
    let vlm = model(|_, _| goal(true, 0.0));
    let (summary, records) = run(&objectnav_spec(vlm, "toilet", 80)).await;
    assert!(!summary.success && !stopped(&records), "{}", summary.report());
    let stops: Vec<&Value> = events(&records, "policy_stop").map(|(_, e)| &e["reason"]).collect();
    assert!(stops.iter().any(|r| *r == "not_seen"), "{stops:?}");
    assert!(events(&records, "perception").all(|(_, e)| e["answer"].is_null()));
}

#[tokio::test]
async fn a_model_that_always_says_goal_flag_ahead_succeeds_where_the_target_is_ahead() {
    // the tv 0.75 m in front of the robot in the living room
    let vlm = model(|_, _| goal(true, 0.0));
    let mut spec = objectnav_spec(vlm, "tv", 40);
    spec.arena.start.x = 1.5;
    spec.arena.start.y = 1.8;
    spec.arena.start.yaw_deg = 180.0;
    let (summary, records) = run(&spec).await;
    assert!(summary.success, "{}", summary.report());
    assert!(stopped(&records));
    let (_, seen) = events(&records, "perception").last().expect("the stop was perceived");
    assert!(seen["answer"]["range_m"].as_f64().unwrap() <= 0.8);
}

#[tokio::test]
async fn a_target_behind_a_wall_is_never_stopped_at() {
    // the model points at the toilet through the corridor's wall and insists it is visible
    let vlm = model(|_, _| goal(true, 60.0));
    let (summary, records) = run(&objectnav_spec(vlm, "toilet", 60)).await;
    assert!(!summary.success && !stopped(&records), "{}", summary.report());
    assert!(events(&records, "perception").count() >= 1);
    assert!(events(&records, "perception").all(|(_, e)| e["answer"].is_null()), "the wall hides it");
}

#[tokio::test]
async fn a_false_sighting_is_corrected_by_the_perception_stage_and_the_episode_goes_on() {
    // first reply: "the toilet is straight ahead" (it is not); afterwards the honest model
    let vlm = model(|r, n| if n == 0 { goal(true, 0.0) } else { objectnav_answer(r) });
    let (summary, records) = run(&objectnav_spec(vlm, "toilet", 250)).await;
    let first_perception = events(&records, "perception").next().expect("the flag made the policy look");
    assert!(first_perception.1["answer"].is_null());
    let (at, stop) = events(&records, "policy_stop").next().expect("a hand-back");
    assert_eq!(stop["reason"], "not_seen");
    assert_eq!(at.step, first_perception.0.step, "handed back at the first look");
    assert!(summary.planner_calls >= 2);
    assert!(summary.success, "{}", summary.report());
}

/// The simulator's perfect detector with a stop check that always vetoes.
struct Vetoing(LabelBufferPerception);

#[async_trait]
impl GoalPerception for Vetoing {
    fn name(&self) -> String {
        "vetoing".into()
    }
    fn needs(&self) -> PerceptionNeeds {
        self.0.needs()
    }
    async fn locate(&mut self, input: &PerceptionInput<'_>) -> PerceptionReply {
        self.0.locate(input).await
    }
    async fn confirm_stop(&mut self, _input: &PerceptionInput<'_>) -> Option<(bool, CallRecord)> {
        Some((false, CallRecord::default()))
    }
}

#[tokio::test]
async fn the_stop_check_can_veto_the_final_stop() {
    let mut arena = nav_hal::arena::Arena::builtin("house_a").unwrap();
    arena.start.x = 1.5;
    arena.start.y = 1.8;
    arena.start.yaw_deg = 180.0;
    let world = SimWorld::new(arena, SimConfig::default()).unwrap();
    let clock = world.clock();
    let mut hal = SimHal::new(world);
    let vlm = model(|_, _| goal(true, 0.0));
    let parts = ObjectNavParts {
        planner: Box::new(VlmObjectNavPlanner::new(
            vlm,
            ObjectNavPromptConfig { text_only: true, ..Default::default() },
        )),
        policy: Box::new(PixelGoalPolicy::default()),
        perception: Box::new(Vetoing(LabelBufferPerception::default())),
        scene: Box::new(OfflineSceneAnalyzer::new()),
    };
    let config = ObjectNavLoopConfig { max_steps: 20, ..ObjectNavLoopConfig::default() };
    let mut lp = ObjectNavLoop::new(config, "tv", parts).unwrap();
    let mut log = StepLog::memory();
    let out = lp.run(&mut hal, &mut RunContext::new(clock.as_ref(), &mut log)).await.unwrap();
    assert_eq!(out.end, ObjectNavEnd::StepLimit);
    let records = log.records().to_vec();
    assert!(!stopped(&records));
    assert!(events(&records, "stop_check").any(|(_, e)| e["answer"] == json!(false)));
}

/// `[scene]`: the scene analyzer asks its own backend, the planner's model
/// gets only decisions, and both are on the run's one bill.
#[tokio::test]
async fn the_scene_analyzer_has_its_own_backend_on_the_same_bill() {
    use nav_planner::vlm::{FnVlm, ScriptedVlm, VlmRequest, VlmResponse};
    use std::sync::atomic::{AtomicUsize, Ordering};

    let planner_calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&planner_calls);
    let planner = Arc::new(FnVlm::new(move |r: &VlmRequest| {
        counted.fetch_add(1, Ordering::SeqCst);
        let text = crate::doubles::text_of(r);
        assert!(!text.contains("What kind of place is this?"), "a scene request reached the planner's model");
        Ok(VlmResponse::from_text(objectnav_answer(r).to_string()))
    }));
    let scene = Arc::new(ScriptedVlm::new().then_text(r#"{"scene_type": "living room"}"#).repeat_last());
    let mut spec = objectnav_spec(planner, "toilet", 25);
    spec.text_only = false; // the scene analyzer needs the camera
    spec.scene_vlm = Some(scene.clone());
    let (summary, _) = run(&spec).await;
    assert!(scene.calls() >= 2, "scene analysis at step 0 and 20: {} calls", scene.calls());
    assert_eq!(u64::from(summary.vlm_calls), (planner_calls.load(Ordering::SeqCst) + scene.calls()) as u64);
}
