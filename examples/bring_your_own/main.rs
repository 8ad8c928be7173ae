//! Your model + your robot + navkit's runner (checks before step 1, the ObjectNav loop, a summary
//! with SR and SPL from your judge). Run: `cargo run -p navkit-examples --example bring_your_own`
use async_trait::async_trait;
use nav_core::{action::Action, geometry::Pose2};
use nav_hal::hal::{self, Actuators, Capabilities, Sensors, StepOutcome};
use nav_hal::{HalError, arena::Arena, sim::SimConfig, sim::SimHal, sim::SimWorld};
use nav_planner::navigator::{StepLog, episode::PerceptionChoice, runner::*};
use nav_planner::vlm::{BackendInfo, RequestKind, VisionLanguageModel, VlmError, VlmRequest, VlmResponse};
use std::sync::Arc;

/// Your robot: here a wrapper around the simulator, forwarding what ObjectNav needs.
struct MyRobot(SimHal);

#[rustfmt::skip]
#[async_trait]
impl Sensors for MyRobot {
    fn capabilities(&self) -> Capabilities { self.0.capabilities() }
    async fn odometry(&mut self) -> Result<hal::Odometry, HalError> { self.0.odometry().await }
    async fn scan(&mut self) -> Result<hal::StampedScan, HalError> { self.0.scan().await }
    async fn rgb(&mut self) -> Result<hal::CameraFrame, HalError> { self.0.rgb().await }
    async fn depth(&mut self) -> Result<hal::DepthFrame, HalError> { self.0.depth().await }
    async fn panorama(&mut self, views: usize) -> Result<hal::Panorama, HalError> { self.0.panorama(views).await }
    async fn labels(&mut self) -> Result<hal::LabelFrame, HalError> { self.0.labels().await }
}

#[rustfmt::skip]
#[async_trait]
impl Actuators for MyRobot {
    async fn act(&mut self, action: Action) -> Result<StepOutcome, HalError> { self.0.act(action).await }
    async fn stop(&mut self) -> Result<(), HalError> { self.0.stop().await }
}

/// Your judge: ground truth the robot never sees (SR, SPL, collisions).
struct MyJudge;

#[rustfmt::skip]
#[async_trait]
impl Judge<MyRobot> for MyJudge {
    fn ground_truth_pose(&self, r: &MyRobot) -> Option<Pose2> { SimJudge.ground_truth_pose(&r.0) }
    async fn verdict(&self, r: &mut MyRobot) -> Result<Verdict, HalError> { SimJudge.verdict(&mut r.0).await }
}

/// Your model: reads the text panorama, heads for the target if listed, else for the most open view.
struct MyModel;

#[async_trait]
impl VisionLanguageModel for MyModel {
    async fn complete(&self, req: VlmRequest) -> Result<VlmResponse, VlmError> {
        let text = req.user_text();
        let target = text.lines().find_map(|l| l.strip_prefix("TARGET: ")).unwrap_or("?").trim().to_string();
        let parse = |l: &str| {
            let (angle, rest) = l.trim().split_once(": ")?;
            let free: f64 = rest.split(['m', ';']).next()?.parse().ok()?;
            Some((angle.parse::<f64>().ok()?, free, rest.contains(&target)))
        };
        let views: Vec<_> = text.lines().skip_while(|l| !l.starts_with("PANORAMA")).skip(1).filter_map(parse).collect();
        let seen = views.iter().find(|v| v.2);
        let open = views.iter().max_by(|a, b| a.1.total_cmp(&b.1));
        let (angle, flag) = seen.map(|v| (v.0, true)).or(open.map(|v| (v.0, false))).unwrap_or((0.0, false));
        let dc = r#"{"goal_scene_type": "unknown", "why": "exploring"}"#;
        Ok(VlmResponse::from_text(format!(r#"{{"goal_flag": {flag}, "angle": {angle}, "discovered_context": {dc}}}"#)))
    }
    fn describe(&self) -> BackendInfo {
        BackendInfo::new("mine", "panorama-reader")
    }
    fn answers(&self, kind: RequestKind) -> bool {
        kind == RequestKind::Planner
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arena = Arena::builtin("house_a")?;
    let mut robot = MyRobot(SimHal::new(SimWorld::new(arena.clone(), SimConfig::default())?));
    let mut runner = Runner::new(Task::of_arena(&arena)).model(Arc::new(MyModel)).perception(PerceptionChoice::Sim);
    runner.spec_mut().text_only = true; // only planner requests: MyModel answers nothing else
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let summary = rt.block_on(runner.run(&mut robot, Some(&MyJudge), &mut StepLog::null()))?;
    println!("{}\nSR {} | SPL {:.2}", summary.report(), u8::from(summary.success), summary.spl);
    Ok(())
}
