//! The public runner on robots and models of a user's own: a robot that
//! lacks a method the run calls, and a model that declines a request kind
//! the run sends, each end before step 1 with an error naming it and the
//! alternatives — never a silent SR 0; with what they need, they run and
//! are judged by a judge of the user's own; request kinds are counted per
//! kind and fallbacks come with their first reasons.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use async_trait::async_trait;
use nav_core::action::Action;
use nav_core::geometry::Pose2;
use nav_hal::HalError;
use nav_hal::arena::Arena;
use nav_hal::hal::{
    Actuators, CameraFrame, Capabilities, DepthFrame, LabelFrame, Odometry, Panorama, Sensors, StampedScan, StepOutcome,
};
use nav_hal::sim::{SimConfig, SimHal, SimWorld};
use nav_planner::navigator::StepLog;
use nav_planner::navigator::episode::{EpisodeError, PerceptionChoice};
use nav_planner::navigator::runner::{Judge, Runner, SimJudge, Task, Verdict};
use nav_planner::vlm::{BackendInfo, RequestKind, VisionLanguageModel, VlmError, VlmRequest, VlmResponse};
use std::sync::Arc;

/// A robot wrapper forwarding the methods a reader would call required
/// (odometry, scan, rgb, depth, panorama, act, stop) and, when `labels` is
/// set, the label buffer too.
struct MyRobot {
    sim: SimHal,
    labels: bool,
}

#[async_trait]
impl Sensors for MyRobot {
    fn capabilities(&self) -> Capabilities {
        self.sim.capabilities()
    }
    async fn odometry(&mut self) -> Result<Odometry, HalError> {
        self.sim.odometry().await
    }
    async fn scan(&mut self) -> Result<StampedScan, HalError> {
        self.sim.scan().await
    }
    async fn rgb(&mut self) -> Result<CameraFrame, HalError> {
        self.sim.rgb().await
    }
    async fn depth(&mut self) -> Result<DepthFrame, HalError> {
        self.sim.depth().await
    }
    async fn panorama(&mut self, views: usize) -> Result<Panorama, HalError> {
        self.sim.panorama(views).await
    }
    async fn labels(&mut self) -> Result<LabelFrame, HalError> {
        if self.labels { self.sim.labels().await } else { Err(HalError::unsupported("label buffer")) }
    }
}

#[async_trait]
impl Actuators for MyRobot {
    async fn act(&mut self, action: Action) -> Result<StepOutcome, HalError> {
        self.sim.act(action).await
    }
    async fn stop(&mut self) -> Result<(), HalError> {
        self.sim.stop().await
    }
}

/// A judge of the user's own: the wrapped simulator's ground truth.
struct MyJudge;

#[async_trait]
impl Judge<MyRobot> for MyJudge {
    fn ground_truth_pose(&self, robot: &MyRobot) -> Option<Pose2> {
        SimJudge.ground_truth_pose(&robot.sim)
    }
    async fn verdict(&self, robot: &mut MyRobot) -> Result<Verdict, HalError> {
        SimJudge.verdict(&mut robot.sim).await
    }
}

fn house_a() -> Arena {
    Arena::builtin("house_a").unwrap()
}

fn my_robot(labels: bool) -> MyRobot {
    MyRobot { sim: SimHal::new(SimWorld::new(house_a(), SimConfig::default()).unwrap()), labels }
}

#[tokio::test]
async fn a_robot_without_labels_ends_before_step_1_naming_the_method_and_the_alternative() {
    let mut robot = my_robot(false);
    let mut log = StepLog::memory();
    let err = Runner::new(Task::of_arena(&house_a())).run(&mut robot, Some(&MyJudge), &mut log).await.unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, EpisodeError::Capability(_)), "{err:?}");
    for part in ["ObjectNav with label perception", "`labels()`", "MyRobot", "perception = vlm"] {
        assert!(msg.contains(part), "{part:?} in {msg}");
    }
    assert!(log.records().is_empty(), "no step ran");
}

#[tokio::test]
async fn the_same_robot_with_labels_runs_and_is_judged_by_its_own_judge() {
    let mut robot = my_robot(true);
    let runner = Runner::new(Task::of_arena(&house_a())).max_steps(300);
    let summary = runner.run(&mut robot, Some(&MyJudge), &mut StepLog::null()).await.unwrap();
    assert!(summary.success, "{}", summary.report());
    assert!(summary.spl > 0.0 && summary.geodesic_m.is_some());
    // without a judge the goal cannot be judged, and the summary says so
    let mut robot = my_robot(true);
    let summary = runner.run(&mut robot, None, &mut StepLog::null()).await.unwrap();
    assert!(!summary.success);
    let goal = summary.criteria.iter().find(|c| c.name == "Goal Reached").unwrap();
    assert!(goal.actual.contains("not judged"), "{goal:?}");
}

/// A model of the user's own that answers planner requests only.
struct PlannerOnly;

#[async_trait]
impl VisionLanguageModel for PlannerOnly {
    async fn complete(&self, req: VlmRequest) -> Result<VlmResponse, VlmError> {
        match req.kind {
            RequestKind::Planner => Ok(VlmResponse::from_text(
                r#"{"goal_flag": false, "angle": 0, "discovered_context": {"goal_scene_type": "living room", "why": "tv rooms"}}"#,
            )),
            other => Err(VlmError::Declined { kind: other.to_string() }),
        }
    }
    fn describe(&self) -> BackendInfo {
        BackendInfo::new("mine", "planner-only")
    }
    fn answers(&self, kind: RequestKind) -> bool {
        kind == RequestKind::Planner
    }
}

#[tokio::test]
async fn a_model_that_answers_only_planner_requests_is_told_which_kinds_the_run_sends() {
    let model: Arc<dyn VisionLanguageModel> = Arc::new(PlannerOnly);
    let task = Task::of_arena(&house_a());
    let mut robot = my_robot(true);
    let err = Runner::new(task.clone()).model(Arc::clone(&model)).run(&mut robot, None, &mut StepLog::null()).await;
    let msg = err.unwrap_err().to_string();
    assert!(msg.contains("mine/planner-only") && msg.contains("declines scene requests"), "{msg}");
    // label perception and no images: only planner requests, and it runs
    let mut runner = Runner::new(task).model(model).perception(PerceptionChoice::Sim).max_steps(30);
    runner.spec_mut().text_only = true;
    let summary = runner.run(&mut robot, Some(&MyJudge), &mut StepLog::null()).await.unwrap();
    assert_eq!(summary.requests.keys().collect::<Vec<_>>(), ["planner"], "{:?}", summary.requests);
    assert_eq!(summary.requests["planner"], u64::from(summary.vlm_calls + summary.vlm_failures));
}

#[tokio::test]
async fn requests_are_counted_per_kind_and_fallbacks_carry_their_first_reasons() {
    // a model that always believes the target is ahead but answers every other kind with prose:
    // the perception stage asks it, and those requests fall back
    let model = Arc::new(nav_planner::vlm::FnVlm::new(|req: &VlmRequest| {
        Ok(VlmResponse::from_text(match req.kind {
            RequestKind::Planner => {
                r#"{"goal_flag": true, "angle": 0, "discovered_context": {"goal_scene_type": "living room", "why": "tv rooms"}}"#
            }
            _ => "I think so.",
        }))
    }));
    let mut robot = SimHal::new(SimWorld::new(house_a(), SimConfig::default()).unwrap());
    let runner = Runner::new(Task::of_arena(&house_a())).model(model).max_steps(30);
    let summary = runner.run(&mut robot, Some(&SimJudge), &mut StepLog::null()).await.unwrap();
    for kind in ["planner", "scene", "perception"] {
        assert!(summary.requests.get(kind).is_some_and(|n| *n > 0), "{kind}: {:?}", summary.requests);
    }
    assert!(summary.fallbacks > 0);
    assert!(!summary.fallback_reasons.is_empty() && summary.fallback_reasons.len() <= 5);
    assert!(summary.report().contains("model requests: "), "{}", summary.report());
}

#[tokio::test]
async fn a_refused_connection_before_the_first_reply_ends_the_run_at_once() {
    let model = Arc::new(nav_planner::vlm::FnVlm::new(|_: &VlmRequest| {
        Err(VlmError::Connection { message: "tcp connect error: Connection refused (os error 111)".into() })
    }));
    let mut robot = SimHal::new(SimWorld::new(house_a(), SimConfig::default()).unwrap());
    let mut log = StepLog::memory();
    let err = Runner::new(Task::of_arena(&house_a())).model(model).run(&mut robot, Some(&SimJudge), &mut log).await;
    match err {
        Err(EpisodeError::ModelLink(f)) => {
            assert_eq!(f.fault, nav_planner::vlm::LinkFault::Refused);
            assert!(f.to_string().contains("connection refused"), "{f}");
        }
        other => panic!("expected a model link failure, got {other:?}"),
    }
    assert!(log.records().len() <= 3, "the loop ended at its next step: {} records", log.records().len());
}

/// The doc comment of `async fn NAME` in the HAL traits' source.
fn hal_doc(source: &str, name: &str) -> String {
    let at = source.find(&format!("async fn {name}(")).unwrap_or_else(|| panic!("no method {name}"));
    let before: Vec<&str> = source[..at].lines().collect();
    let doc: Vec<&str> = before.iter().rev().skip(1).take_while(|l| l.trim().starts_with("///")).copied().collect();
    doc.into_iter().rev().collect::<Vec<_>>().join("\n")
}

#[test]
fn the_hal_docs_name_every_method_each_protocol_needs() {
    use nav_planner::navigator::candidates_loop::WorldModelMode;
    use nav_planner::navigator::episode::{EpisodeSpec, PlannerChoice};
    use nav_planner::navigator::runner::needs::{Method, robot_needs};
    use nav_planner::protocol::ProtocolKind;
    let source = include_str!("../../nav-hal/src/hal/mod.rs");
    let mut checked = 0;
    for protocol in [ProtocolKind::Objectnav, ProtocolKind::Explore, ProtocolKind::Candidates] {
        for perception in [PerceptionChoice::Sim, PerceptionChoice::Vlm] {
            for world in [WorldModelMode::Lidar, WorldModelMode::Vision] {
                let mut spec = EpisodeSpec::new(house_a(), "test");
                (spec.protocol, spec.perception, spec.planner) = (protocol, Some(perception), PlannerChoice::Offline);
                spec.candidates.world_model = world;
                for need in robot_needs(&spec) {
                    let names: &[&str] = match need.method {
                        Method::MoveToOrDrive => &["move_to", "drive"],
                        m => &[m.name().split('(').next().unwrap()],
                    };
                    for name in names {
                        let doc = hal_doc(source, name);
                        let word = protocol.as_str();
                        assert!(
                            doc.contains("Needed by:") && doc.contains(word),
                            "`{name}` docs do not say {word} needs it:\n{doc}"
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 20);
}
