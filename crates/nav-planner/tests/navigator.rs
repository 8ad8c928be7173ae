//! Integration tests of the three Navigator loops in the built-in simulator
//! with scripted model doubles (issue 7, "Tests"): each loop reaches its
//! goal; garbage replies lead to the documented fallback and the run goes
//! on; a model that goes silent stops the robot within 3 s of simulated
//! time and hands over to the frontier fallback after 10 s; pause stops
//! motion at once; the step log has one parseable line per step.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use async_trait::async_trait;
use nav_core::action::Action;
use nav_core::geometry::Pose2;
use nav_hal::arena::{Arena, Goal};
use nav_hal::hal::Sensors as _;
use nav_hal::sim::{SimConfig, SimHal, SimWorld};
use nav_memory::SceneObservation;
use nav_planner::episode::{EpisodeSpec, PlannerChoice, RunSummary, run_episode};
use nav_planner::navigator::candidates::CandidatesLoopConfig;
use nav_planner::navigator::explore::{ExploreEnd, ExploreLoop, ExploreLoopConfig, ExploreSignals, Pacing};
use nav_planner::navigator::objectnav::{ObjectNavLoopConfig, run_objectnav};
use nav_planner::navigator::policy::{LowLevelPolicy, PolicyAction, PolicyGoal, PolicyObservation};
use nav_planner::navigator::{Observer, StepLog, StepRecord, read_log};
use nav_planner::protocol::explore::{ExplorePromptConfig, VlmExplorePlanner};
use nav_planner::protocol::objectnav::{ObjectNavPromptConfig, VlmObjectNavPlanner};
use nav_planner::protocol::scene::{SceneAnalyzer, SceneInput};
use nav_planner::protocol::{CallRecord, ProtocolKind};
use nav_planner::vlm::{BackendInfo, FnVlm, Part, ScriptedVlm, VisionLanguageModel, VlmError, VlmRequest, VlmResponse};
use nav_safety::SafetyConfig;
use serde_json::{Value, json};
use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

// ---------------------------------------------------------------- helpers

/// The text parts of a request's user message, joined.
fn text_of(req: &VlmRequest) -> String {
    req.user
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            Part::Image { .. } => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One direction of the text-only panorama: `(angle°, free metres, [(label, metres)])`.
type View = (f64, Option<f64>, Vec<(String, f64)>);

/// Parses the `PANORAMA (text)` block of an objectnav request.
fn panorama_views(text: &str) -> Vec<View> {
    let Some(start) = text.find("PANORAMA (text)") else { return Vec::new() };
    text[start..]
        .lines()
        .skip(1)
        .filter_map(|line| {
            let (angle, rest) = line.trim().split_once(": ")?;
            let angle: f64 = angle.parse().ok()?;
            let (free, objects) = match rest.split_once("; ") {
                Some((f, o)) => (f, o),
                None => (rest, ""),
            };
            let free = free.strip_suffix('m').and_then(|f| f.parse().ok());
            let objects = objects
                .split(", ")
                .filter_map(|o| {
                    let (label, d) = o.rsplit_once(' ')?;
                    Some((label.to_string(), d.strip_suffix('m')?.parse().ok()?))
                })
                .collect();
            Some((angle, free, objects))
        })
        .collect()
}

/// Which objects share a room with which: the common sense a model brings.
const ROOMS: [&[&str]; 5] = [
    &["tv", "sofa", "coffee table", "armchair"],
    &["fridge", "oven", "sink", "dining table"],
    &["bed", "wardrobe", "nightstand", "lamp"],
    &["toilet", "sink", "bathtub"],
    &["desk", "chair", "bookshelf"],
];

/// A text-only objectnav "model" that answers from the request it gets:
/// toward the target when the panorama lists it, else toward an object that
/// usually shares its room, else the most open direction that is not behind
/// the robot. Like a model that sees door frames, it heads for the open
/// direction nearest to where it wants to go when the straight way is
/// blocked.
fn objectnav_answer(req: &VlmRequest) -> Value {
    let text = text_of(req);
    let target = text.lines().find_map(|l| l.strip_prefix("TARGET: ")).unwrap_or("").trim().to_string();
    let views = panorama_views(&text);
    let nearest = |want: &dyn Fn(&str) -> bool| {
        views
            .iter()
            .flat_map(|(a, f, objs)| objs.iter().filter(|(l, _)| want(l)).map(move |(_, d)| (*a, f.unwrap_or(0.0), *d)))
            .min_by(|x, y| x.2.total_cmp(&y.2))
    };
    // the open direction (1.5 m free) closest to `want`, when the way toward `want` is not open
    let toward = |want: f64, free: f64, dist: f64| {
        if free >= (dist - 0.8).clamp(0.3, 1.5) {
            return want;
        }
        let diff = |a: f64| ((a - want + 540.0) % 360.0 - 180.0).abs();
        views
            .iter()
            .filter(|(_, f, _)| f.is_some_and(|f| f >= 1.5))
            .map(|(a, _, _)| *a)
            .min_by(|x, y| diff(*x).total_cmp(&diff(*y)))
            .unwrap_or(want)
    };
    if let Some((angle, free, dist)) = nearest(&|l| l == target) {
        return json!({"goal_flag": true, "angle": toward(angle, free, dist),
            "discovered_context": {"goal_scene_type": "target", "why": format!("the {target} is in view")}});
    }
    let related: Vec<&str> =
        ROOMS.iter().filter(|r| r.contains(&target.as_str())).flat_map(|r| r.iter().copied()).collect();
    if let Some((angle, free, dist)) = nearest(&|l| related.contains(&l)) {
        return json!({"goal_flag": false, "angle": toward(angle, free, dist),
            "discovered_context": {"goal_scene_type": "room", "why": format!("objects that go with a {target}")}});
    }
    let open = views
        .iter()
        .filter(|(a, _, _)| a.abs() <= 120.0)
        .filter_map(|(a, f, _)| f.map(|f| (*a, f)))
        .max_by(|x, y| x.1.total_cmp(&y.1))
        .map_or(0.0, |(a, _)| a);
    json!({"goal_flag": false, "angle": open,
        "discovered_context": {"goal_scene_type": "corridor", "why": "the most open way"}})
}

/// An ObjectNav episode in `house_a` with a text-only model and `target`.
fn objectnav_spec(vlm: Arc<dyn VisionLanguageModel>, target: &str, max_steps: u32) -> EpisodeSpec {
    let mut spec = EpisodeSpec::new(Arena::builtin("house_a").unwrap(), "builtin:house_a");
    spec.arena.goal = Some(Goal::Object { label: target.to_string() });
    spec.protocol = ProtocolKind::Objectnav;
    spec.planner = PlannerChoice::Vlm;
    spec.vlm = Some(vlm);
    spec.text_only = true;
    spec.max_steps = Some(max_steps);
    spec
}

async fn run(spec: &EpisodeSpec) -> (RunSummary, Vec<StepRecord>) {
    let mut log = StepLog::memory();
    let summary = run_episode(spec, &mut log, &mut |_| {}).await.unwrap();
    (summary, log.records().to_vec())
}

fn events<'a>(records: &'a [StepRecord], kind: &'a str) -> impl Iterator<Item = (&'a StepRecord, &'a Value)> + 'a {
    records.iter().flat_map(move |r| r.events.iter().filter(move |e| e["event"] == kind).map(move |e| (r, e)))
}

fn assert_consecutive(records: &[StepRecord]) {
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.step, i as u64, "step numbers are consecutive from 0");
    }
}

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

/// A model built from `objectnav_answer`.
fn objectnav_model() -> Arc<dyn VisionLanguageModel> {
    Arc::new(FnVlm::new(|r: &VlmRequest| Ok(VlmResponse::from_text(objectnav_answer(r).to_string()))))
}

// ---------------------------------------------------------------- objectnav

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
    let mut planner = VlmObjectNavPlanner::new(
        objectnav_model(),
        ObjectNavPromptConfig { text_only: true, ..ObjectNavPromptConfig::default() },
    );
    let mut config = ObjectNavLoopConfig { max_steps: 30, replan_on_patterns, ..ObjectNavLoopConfig::default() };
    config.memory_config.place_update_period = place_period;
    config.memory_config.dwell_k = 1;
    let mut log = StepLog::memory();
    let (mut policy, mut scenes) = (Spinner, scenes);
    let out = run_objectnav(
        &mut hal,
        "tv",
        &mut planner,
        &mut policy,
        &mut scenes,
        &config,
        clock.as_ref(),
        &mut log,
        &mut Observer::new(),
    )
    .await
    .unwrap();
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

// ---------------------------------------------------------------- candidates

/// A candidates "model": MOVE_TO the best-scored candidate listed in the
/// request, EXPLORE as the fallback.
fn candidates_answer(req: &VlmRequest) -> Value {
    let text = text_of(req);
    let block = text.split("CANDIDATES:").nth(1).unwrap_or("");
    let best = block
        .lines()
        .filter_map(|l| {
            let (id, rest) = l.trim().split_once(' ')?;
            let score: f64 = rest.split("score=").nth(1)?.split_whitespace().next()?.parse().ok()?;
            Some((id.to_string(), score))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1));
    match best {
        Some((id, _)) => json!({"action": {"type": "MOVE_TO", "target_id": id},
            "fallback": {"if_failed": "EXPLORE"}, "explanation": "the best-scored candidate"}),
        None => json!({"action": {"type": "STOP"}, "fallback": {"if_failed": "STOP"}, "explanation": "no candidates"}),
    }
}

fn candidates_spec(vlm: Arc<dyn VisionLanguageModel>) -> EpisodeSpec {
    let mut spec = EpisodeSpec::new(Arena::builtin("simple").unwrap(), "builtin:simple");
    spec.protocol = ProtocolKind::Candidates;
    spec.planner = PlannerChoice::Vlm;
    spec.vlm = Some(vlm);
    spec.text_only = true;
    spec
}

#[tokio::test]
async fn candidates_reaches_the_goal_choosing_the_best_candidate() {
    let vlm = Arc::new(FnVlm::new(|r: &VlmRequest| Ok(VlmResponse::from_text(candidates_answer(r).to_string()))));
    let (summary, records) = run(&candidates_spec(vlm)).await;
    assert!(summary.success && summary.passed, "{}", summary.report());
    assert_eq!((summary.end.as_str(), summary.collisions, summary.fallbacks), ("goalreached", 0, 0));
    assert_consecutive(&records);
    let last = records.last().unwrap();
    assert!(events(std::slice::from_ref(last), "goal_reached").next().is_some());
    let gt = last.gt_pose.unwrap();
    assert!(((gt.x - 1.5).powi(2) + (gt.y - 1.5).powi(2)).sqrt() <= 0.3);
    // every cycle but the last asked the model and moved to the candidate it named
    for r in &records[1..records.len() - 1] {
        let p = r.planner.as_ref().unwrap();
        assert_eq!(p.parsed["action"]["type"], "MOVE_TO");
        assert_eq!(r.action, format!("MOVE_TO {}", p.parsed["action"]["target_id"].as_str().unwrap()));
    }
    assert_eq!(summary.vlm_calls as usize, records.len() - 2);
}

#[tokio::test]
async fn candidates_garbage_replies_fall_back_to_stop_and_the_run_goes_on() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let vlm = Arc::new(FnVlm::new(move |r: &VlmRequest| {
        Ok(VlmResponse::from_text(match c.fetch_add(1, Ordering::SeqCst) {
            1 => "I would rather not say.".to_string(),
            2 => r#"{"action": {"type": "FLY", "target_id": "c1"}, "fallback": {"if_failed": "STOP"}}"#.to_string(),
            _ => candidates_answer(r).to_string(),
        }))
    }));
    let (summary, records) = run(&candidates_spec(vlm)).await;
    for cycle in [2, 3] {
        let r = &records[cycle];
        let p = r.planner.as_ref().unwrap();
        let reason = p.fallback.as_deref().expect("a fallback with its reason");
        assert_eq!(p.parsed["action"]["type"], "STOP");
        assert_eq!(p.parsed["fallback"]["if_failed"], "STOP");
        assert!(p.parsed["explanation"].as_str().unwrap().starts_with("Fallback: "));
        assert_eq!(r.action, "STOP");
        assert!(r.events.iter().any(|e| e["event"] == "fallback" && e["reason"] == reason), "{:?}", r.events);
        // the robot held still for the fallback cycle
        assert_eq!(r.gt_pose, records[cycle - 1].gt_pose);
    }
    assert!(records[3].planner.as_ref().unwrap().fallback.as_deref().unwrap().contains("FLY"));
    assert_eq!(summary.fallbacks, 2);
    assert!(summary.success, "the run goes on after the fallbacks: {}", summary.report());
    assert_eq!(summary.end, "goalreached");
    assert_consecutive(&records);
}

/// A candidates model that takes 2 s (tokio time) to answer its `slow`-th call.
struct SlowOnce {
    calls: AtomicUsize,
    slow: usize,
}

#[async_trait]
impl VisionLanguageModel for SlowOnce {
    async fn complete(&self, req: VlmRequest) -> Result<VlmResponse, VlmError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == self.slow {
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        Ok(VlmResponse::from_text(candidates_answer(&req).to_string()))
    }
    fn describe(&self) -> BackendInfo {
        BackendInfo::new("test", "slow-once")
    }
}

#[tokio::test(start_paused = true)]
async fn candidates_inference_timeout_falls_back_and_lowers_confidence() {
    let mut spec = candidates_spec(Arc::new(SlowOnce { calls: AtomicUsize::new(0), slow: 1 }));
    spec.candidates = CandidatesLoopConfig { inference_timeout_s: 0.5, ..CandidatesLoopConfig::default() };
    let (summary, records) = run(&spec).await;
    let r = &records[2];
    let p = r.planner.as_ref().unwrap();
    assert_eq!(p.fallback.as_deref(), Some("inference timed out after 0.5 s"));
    assert_eq!(p.parsed["action"]["type"], "STOP");
    assert_eq!(records[1].info["confidence"], 1.0);
    assert!((r.info["confidence"].as_f64().unwrap() - 0.7).abs() < 1e-9);
    assert_eq!(summary.fallbacks, 1);
    assert!(summary.success, "{}", summary.report());
}

// ---------------------------------------------------------------- explore

/// `navigate_to_goal` on frontier 1 (the nearest), as a tool call.
fn to_frontier(vlm: ScriptedVlm) -> ScriptedVlm {
    vlm.then_tool_call("navigate_to_goal", json!({"goal_type": "frontier", "frontier_id": 1, "reason": "unexplored"}))
}

fn explore_config(max_time_s: f64) -> ExploreLoopConfig {
    ExploreLoopConfig {
        max_time_s,
        pacing: Pacing::Simulated { time_scale: 20.0 },
        use_camera: false,
        ..ExploreLoopConfig::default()
    }
}

/// Coverage of `arena` after one scan at the start.
async fn start_coverage(arena: &str) -> f64 {
    let mut hal = SimHal::builtin(arena, SimConfig::default()).unwrap();
    hal.scan().await.unwrap();
    hal.world().coverage()
}

#[tokio::test]
async fn explore_drives_to_frontiers_and_coverage_grows() {
    let vlm = Arc::new(to_frontier(ScriptedVlm::new()).repeat_last());
    let mut spec = EpisodeSpec::new(Arena::builtin("exploration").unwrap(), "builtin:exploration");
    spec.protocol = ProtocolKind::Explore;
    spec.planner = PlannerChoice::Vlm;
    spec.vlm = Some(vlm.clone());
    spec.text_only = true;
    spec.max_steps = Some(12);
    spec.explore = explore_config(240.0);
    let (summary, records) = run(&spec).await;
    let c0 = start_coverage("exploration").await;
    // the arena's own criteria: 0 collisions, >= 80 % coverage; the first scan already sees 88 %
    assert!(summary.passed, "{}", summary.report());
    assert!(summary.coverage >= 0.95 && summary.coverage > c0 + 0.05, "coverage {c0:.2} -> {:.2}", summary.coverage);
    assert_eq!(summary.fallbacks, 0);
    assert_eq!(summary.vlm_calls as usize, vlm.calls());
    assert_eq!(summary.planner_calls, 12, "{}", summary.report());
    assert_consecutive(&records);
    let goals = records.iter().filter(|r| r.action == "navigate_to_goal").count();
    assert_eq!(goals as u32, summary.planner_calls);
    // the robot moved on its own between decisions: the control loop drives at 20 Hz
    assert!(records.windows(2).all(|w| (w[1].t_s - w[0].t_s - 0.05).abs() < 1e-6 || w[0].step == 0));
}

/// Runs the explore loop in `arena` with `vlm` (text only, `timeout_s` of
/// wall time per call) until `stop` (fed every record as it is written,
/// with the pause/shutdown signals) says to shut down or `max_time_s` of
/// simulated time pass.
async fn explore_run(
    arena: &str,
    vlm: Arc<dyn VisionLanguageModel>,
    timeout_s: f64,
    max_time_s: f64,
    stop: impl FnMut(&StepRecord, &ExploreSignals) + Send + 'static,
) -> (ExploreEnd, Vec<StepRecord>, SimHal) {
    let world = SimWorld::builtin(arena, SimConfig::default()).unwrap();
    let clock = world.clock();
    let mut hal = SimHal::new(world);
    let planner = VlmExplorePlanner::new(
        vlm,
        ExplorePromptConfig { text_only: true, timeout_s, ..ExplorePromptConfig::default() },
        SafetyConfig::default(),
    );
    let signals = ExploreSignals::default();
    let mut lp = ExploreLoop::new(explore_config(max_time_s), Box::new(planner), signals.clone());
    let mut stop = stop;
    let mut log = StepLog::memory().with_tap(move |r| stop(r, &signals));
    let gt = |h: &SimHal| h.world().ground_truth_pose();
    let out = lp.run(&mut hal, clock.as_ref(), &mut log, &mut Observer::new().with_ground_truth(&gt)).await.unwrap();
    (out.end, log.records().to_vec(), hal)
}

fn has_event(r: &StepRecord, kind: &str) -> bool {
    r.events.iter().any(|e| e["event"] == kind)
}

fn moved(a: &StepRecord, b: &StepRecord) -> f64 {
    let (p, q) = (a.gt_pose.unwrap(), b.gt_pose.unwrap());
    ((p.x - q.x).powi(2) + (p.y - q.y).powi(2)).sqrt() + (p.yaw_deg - q.yaw_deg).abs().to_radians()
}

#[tokio::test]
async fn explore_silent_model_stops_the_robot_within_3s_and_local_nav_drives_after_10s() {
    const GOOD: usize = 3;
    let mut script = ScriptedVlm::new();
    for _ in 0..GOOD {
        script = to_frontier(script);
    }
    let vlm = Arc::new(script.then_silence());
    // shut down 16 s (simulated) after the first unanswered call. Each silent call times out after 0.5 s
    // of wall time, at least 10 ticks (0.5 s simulated) with the loop's pacing: a failed call is no
    // response, the loop asks again and the watchdog keeps counting.
    let mut calls = 0;
    let mut silent_from: Option<f64> = None;
    let (end, records, _) = explore_run("house_a", vlm.clone(), 0.5, 120.0, move |r, signals| {
        if has_event(r, "planner_call") {
            calls += 1;
            if calls == GOOD + 1 {
                silent_from = Some(r.t_s);
            }
        }
        if silent_from.is_some_and(|t| r.t_s >= t + 16.0) {
            signals.shutdown.store(true, Ordering::SeqCst);
        }
    })
    .await;
    assert_eq!(end, ExploreEnd::Shutdown);
    assert_consecutive(&records);
    // the good replies were applied; after them only timeouts came back, each logged as a fallback
    let decided: Vec<&StepRecord> =
        records.iter().filter(|r| r.planner.as_ref().is_some_and(|p| p.fallback.is_none())).collect();
    assert_eq!(decided.len(), GOOD, "no reply after the silence began");
    assert!(decided.iter().all(|r| r.action == "navigate_to_goal"));
    let call = records.iter().filter(|r| has_event(r, "planner_call")).nth(GOOD).expect("a call after the good ones");
    let timeouts: Vec<&StepRecord> = records.iter().filter(|r| r.planner.is_some() && r.step > call.step).collect();
    assert!(!timeouts.is_empty() && vlm.calls() > GOOD + 1, "the silent call timed out and the loop asked again");
    for r in &timeouts {
        let reason = r.planner.as_ref().unwrap().fallback.as_deref().expect("a timeout is a fallback");
        assert!(reason.contains("timed out"), "{reason}");
        assert!(r.events.iter().any(|e| e["event"] == "fallback" && e["reason"] == reason));
    }
    // the tick that started the call ran at t_s - tick
    let t_call = call.t_s - 0.05;
    let after = |dt: f64| records.iter().filter(move |r| r.t_s - 0.05 >= t_call + dt - 1e-9);
    // the control loop kept ticking at 20 Hz while the model was silent
    let silent: Vec<&StepRecord> = after(0.0).collect();
    assert!(silent.windows(2).all(|w| (w[1].t_s - w[0].t_s - 0.05).abs() < 1e-6));
    // the robot was moving when the model went silent
    assert!(records.iter().filter(|r| r.t_s <= call.t_s).any(|r| r.velocity.is_some_and(|v| v[0] > 0.0)));

    // within 3 s: STOP_WAIT, zero velocity, the robot still
    let stop_wait = records.iter().find(|r| r.events.iter().any(|e| e["tier"] == "STOP_WAIT")).unwrap();
    let t_stop = stop_wait.t_s - 0.05 - t_call;
    assert!((2.9..=3.0 + 1e-9).contains(&t_stop), "STOP_WAIT {t_stop:.2} s after the call");
    let held: Vec<&StepRecord> = after(3.0).take_while(|r| r.t_s - 0.05 < t_call + 9.95).collect();
    assert!(held.len() >= 130);
    for w in held.windows(2) {
        assert_eq!(w[1].velocity, Some([0.0, 0.0]), "t = {:.2}", w[1].t_s);
        assert!(moved(w[0], w[1]) < 1e-9, "the robot moved at t = {:.2}", w[1].t_s);
    }

    // from 10 s: LOCAL_NAV hands over to the frontier planner, which drives
    let local = records.iter().find(|r| r.events.iter().any(|e| e["tier"] == "LOCAL_NAV")).unwrap();
    let t_local = local.t_s - 0.05 - t_call;
    assert!((9.9..=10.0 + 1e-9).contains(&t_local), "LOCAL_NAV {t_local:.2} s after the call");
    assert!(has_event(local, "local_nav_goal"), "{:?}", local.events);
    let driving: Vec<&StepRecord> = after(10.0).collect();
    assert!(driving.iter().any(|r| r.velocity.is_some_and(|v| v[0] > 0.0)));
    let travelled: f64 = driving.windows(2).map(|w| moved(w[0], w[1])).sum();
    assert!(travelled > 0.5, "LOCAL_NAV moved the robot {travelled:.2} (m + rad)");
    assert!(driving.iter().filter_map(|r| r.planner.as_ref()).all(|p| p.fallback.is_some()));
}

#[tokio::test]
async fn explore_pause_stops_motion_at_once_and_resume_continues() {
    let vlm = Arc::new(to_frontier(ScriptedVlm::new()).repeat_last());
    // pause at the first moving tick after 2 s, resume 2 s later, shut down 4 s after that
    let mut paused_at: Option<u64> = None;
    let mut last: Option<StepRecord> = None;
    let (end, records, hal) = explore_run("house_a", vlm, 8.0, 60.0, move |r, signals| {
        let moving = last.as_ref().is_some_and(|l| r.gt_pose.is_some() && moved(l, r) > 1e-6);
        match paused_at {
            None if r.t_s >= 2.0 && moving => {
                signals.pause.store(true, Ordering::SeqCst);
                paused_at = Some(r.step);
            }
            Some(p) if r.step == p + 40 => signals.pause.store(false, Ordering::SeqCst),
            Some(p) if r.step >= p + 120 => signals.shutdown.store(true, Ordering::SeqCst),
            _ => {}
        }
        last = Some(r.clone());
    })
    .await;
    assert_eq!(end, ExploreEnd::Shutdown);
    assert_consecutive(&records);
    let p = records.iter().position(|r| r.t_s >= 2.0 && r.step > 0 && moved(&records[r.step as usize - 1], r) > 1e-6);
    let p = p.expect("the robot moves within the run");
    assert!(records[p].velocity.is_some_and(|v| v != [0.0, 0.0]));
    // the very next tick publishes zero velocity and the robot stands still, for the whole pause
    for r in &records[p + 1..=p + 40] {
        assert_eq!(r.velocity, Some([0.0, 0.0]), "step {}", r.step);
        assert!(moved(&records[p], r) < 1e-9, "the robot moved while paused (step {})", r.step);
        assert!(!has_event(r, "planner_call"), "no decisions while paused (step {})", r.step);
    }
    // cleared: it moves again
    let resumed: f64 = records[p + 41..].windows(2).map(|w| moved(&w[0], &w[1])).sum();
    assert!(resumed > 0.1, "moved {resumed:.2} after the pause");
    assert!(records[p + 41..].iter().any(|r| r.velocity.is_some_and(|v| v[0] > 0.0)));
    // shutdown ends the loop before another tick
    assert_eq!(records.last().unwrap().step, records[p].step + 120);
    assert_eq!(hal.world().collisions(), 0);
}

// ---------------------------------------------------------------- the step log

/// The lines of a log file.
fn lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap().lines().map(str::to_string).collect()
}

#[tokio::test]
async fn the_step_log_has_one_parseable_line_per_step_even_when_a_run_is_cut_short() {
    let dir = tempfile::tempdir().unwrap();

    // a step budget that ends the episode early: start + 5 steps, each its own complete line
    let path = dir.path().join("objectnav.jsonl");
    let mut log = StepLog::create(&path).unwrap();
    let spec = objectnav_spec(objectnav_model(), "toilet", 5);
    let summary = run_episode(&spec, &mut log, &mut |_| {}).await.unwrap();
    assert_eq!((summary.steps, summary.end.as_str(), summary.success), (5, "steplimit", false));
    let (records, truncated) = read_log(&path).unwrap();
    assert!(!truncated);
    assert_eq!(records.len(), 6);
    assert_eq!(lines(&path).len(), 6);
    assert_consecutive(&records);
    assert_eq!((records[0].action.as_str(), records[0].info["arena"].as_str()), ("start", Some("house_a")));
    assert!(records[1].planner_called && records[1].planner.is_some());
    for (line, r) in lines(&path).iter().zip(&records) {
        assert_eq!(&serde_json::from_str::<StepRecord>(line).unwrap(), r);
    }

    // a run dropped mid-way (as on Ctrl-C): every line written so far is complete
    let path = dir.path().join("explore.jsonl");
    let world = SimWorld::builtin("exploration", SimConfig::default()).unwrap();
    let clock = world.clock();
    let mut hal = SimHal::new(world);
    let vlm = Arc::new(to_frontier(ScriptedVlm::new()).repeat_last());
    let planner = VlmExplorePlanner::new(
        vlm,
        ExplorePromptConfig { text_only: true, ..ExplorePromptConfig::default() },
        SafetyConfig::default(),
    );
    // real-time pacing: 20 ticks a second, so 0.5 s of wall time is about 10 of them
    let config = ExploreLoopConfig { pacing: Pacing::RealTime, use_camera: false, ..ExploreLoopConfig::default() };
    let mut lp = ExploreLoop::new(config, Box::new(planner), ExploreSignals::default());
    let mut log = StepLog::create(&path).unwrap();
    let mut observer = Observer::new();
    let run = lp.run(&mut hal, clock.as_ref(), &mut log, &mut observer);
    assert!(tokio::time::timeout(Duration::from_millis(500), run).await.is_err(), "the run was cut short");
    drop(log);
    let (records, truncated) = read_log(&path).unwrap();
    assert!(!truncated);
    assert!(records.len() >= 3, "{} lines", records.len());
    assert_eq!(records.len(), lines(&path).len());
    assert_consecutive(&records);
    assert!(records[1..].iter().all(|r| r.velocity.is_some()));

    // a line cut mid-write (the process killed): the complete lines still read back
    let text = std::fs::read_to_string(&path).unwrap();
    let cut = text.trim_end().len() - 10;
    std::fs::write(&path, &text[..cut]).unwrap();
    let (partial, truncated) = read_log(&path).unwrap();
    assert!(truncated);
    assert_eq!(partial[..], records[..records.len() - 1]);
    // a broken line that is not the last is an error naming the line
    let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    writeln!(f, "\n{}", serde_json::to_string(&records[0]).unwrap()).unwrap();
    match read_log(&path) {
        Err(nav_planner::navigator::LogError::Parse { line, .. }) => assert_eq!(line, records.len()),
        other => panic!("expected a parse error, got {other:?}"),
    }
}
