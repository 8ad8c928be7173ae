//! What a run needs from its robot and its model, checked before step 1:
//! a missing method or a declined request kind is an error naming it, the
//! robot (or model) and the alternatives — never a silent SR 0.

use crate::navigator::candidates_loop::WorldModelMode;
use crate::navigator::episode::{EpisodeError, EpisodeSpec, PerceptionChoice, PlannerChoice};
use crate::protocol::ProtocolKind;
use crate::vlm::{RequestKind, VisionLanguageModel};
use nav_hal::HalError;
use nav_hal::hal::{Capabilities, Robot};

/// A HAL method a run calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Method {
    /// `Sensors::odometry`.
    Odometry,
    /// `Sensors::scan`.
    Scan,
    /// `Sensors::rgb`.
    Rgb,
    /// `Sensors::depth`.
    Depth,
    /// `Sensors::panorama` (and `Capabilities::panorama`).
    Panorama,
    /// `Sensors::labels`.
    Labels,
    /// `Actuators::act` (and `Capabilities::discrete_actions`).
    Act,
    /// `Actuators::drive` (and `Capabilities::velocity`).
    Drive,
    /// `Actuators::move_to` or `Actuators::drive` (`Capabilities::move_to`
    /// or `velocity`).
    MoveToOrDrive,
    /// `Actuators::stop`.
    Stop,
}

impl Method {
    /// The method as a reader finds it in the trait docs.
    pub fn name(self) -> &'static str {
        match self {
            Method::Odometry => "odometry()",
            Method::Scan => "scan()",
            Method::Rgb => "rgb()",
            Method::Depth => "depth()",
            Method::Panorama => "panorama(views)",
            Method::Labels => "labels()",
            Method::Act => "act(action)",
            Method::Drive => "drive(command)",
            Method::MoveToOrDrive => "move_to(point) or drive(command)",
            Method::Stop => "stop()",
        }
    }
}

/// One thing a run needs from the robot: the method, what it is for, and
/// what else would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    /// The method.
    pub method: Method,
    /// What needs it (`"ObjectNav with label perception"`).
    pub needed_by: &'static str,
    /// What to do instead of implementing it (may be empty).
    pub alternatives: &'static str,
}

const fn need(method: Method, needed_by: &'static str, alternatives: &'static str) -> Need {
    Need { method, needed_by, alternatives }
}

/// The robot methods `spec`'s protocol, perception stage and world model
/// call. The HAL trait docs list the same, per method (a test keeps them
/// in step).
pub fn robot_needs(spec: &EpisodeSpec) -> Vec<Need> {
    let mut needs = Vec::new();
    match spec.protocol {
        ProtocolKind::Objectnav => {
            needs.push(need(Method::Odometry, "ObjectNav", ""));
            needs.push(need(
                Method::Scan,
                "ObjectNav (the map, and the free distance the planner sees per direction)",
                "",
            ));
            needs.push(need(Method::Act, "ObjectNav (its low-level policy takes discrete steps)", ""));
            needs.push(need(
                Method::Panorama,
                "ObjectNav (the planner looks around: images, or objects per direction as text)",
                "",
            ));
            match effective_perception(spec) {
                PerceptionChoice::Sim => {
                    let alt = "or use perception = vlm (the model finds the target in the camera image)";
                    needs.push(need(Method::Labels, "ObjectNav with label perception", alt));
                    needs.push(need(Method::Depth, "ObjectNav with label perception", alt));
                    needs.push(need(Method::Rgb, "ObjectNav with label perception", alt));
                }
                PerceptionChoice::Vlm => needs.push(need(Method::Rgb, "ObjectNav with model perception", "")),
                PerceptionChoice::External => needs.push(need(Method::Rgb, "ObjectNav with a detector worker", "")),
            }
        }
        ProtocolKind::Explore => {
            needs.push(need(Method::Odometry, "exploration", ""));
            needs.push(need(Method::Scan, "exploration (the safety layer reads the LiDAR)", ""));
            needs.push(need(Method::Drive, "exploration (the 20 Hz control task)", ""));
            needs.push(need(Method::Stop, "exploration (every stop)", ""));
        }
        ProtocolKind::Candidates => {
            needs.push(need(Method::Odometry, "the candidates protocol", ""));
            needs.push(need(Method::MoveToOrDrive, "the candidates protocol", ""));
            match spec.candidates.world_model {
                WorldModelMode::Lidar => needs.push(need(
                    Method::Scan,
                    "the candidates protocol with the LiDAR world model",
                    "or use world_model = vision (depth camera)",
                )),
                WorldModelMode::Vision => needs.push(need(
                    Method::Depth,
                    "the candidates protocol with the vision world model",
                    "or use world_model = lidar",
                )),
                WorldModelMode::GroundTruth => {}
            }
        }
    }
    needs
}

/// The perception stage `spec` runs with: its choice, else the model's
/// with a model planner, else the label buffer.
pub fn effective_perception(spec: &EpisodeSpec) -> PerceptionChoice {
    match (spec.perception, spec.planner) {
        (Some(p), _) => p,
        (None, PlannerChoice::Vlm) => PerceptionChoice::Vlm,
        (None, _) => PerceptionChoice::Sim,
    }
}

/// The request kinds `spec` sends its model (empty without a model
/// planner), each with what declining it would break and the alternative.
pub fn model_needs(spec: &EpisodeSpec) -> Vec<(RequestKind, &'static str)> {
    if spec.planner != PlannerChoice::Vlm {
        return Vec::new();
    }
    let mut kinds = vec![(RequestKind::Planner, "every decision is a planner request")];
    if spec.protocol == ProtocolKind::Objectnav {
        if !spec.text_only {
            kinds.push((
                RequestKind::Scene,
                "the scene analyzer names the places; answer scene requests, or run text-only (`Runner::text_only(true)`, `--text-only`)",
            ));
        }
        if effective_perception(spec) == PerceptionChoice::Vlm {
            let alt =
                "the perception stage finds the target; answer them, or use perception = sim (a robot with labels())";
            kinds.push((RequestKind::Perception, alt));
            kinds.push((RequestKind::StopCheck, alt));
        }
    }
    kinds
}

/// The short name of a type, for messages (`MyRobot`, not
/// `my_crate::robot::MyRobot`).
pub fn short_type_name<R: ?Sized>() -> &'static str {
    let full = std::any::type_name::<R>();
    let head = full.split('<').next().unwrap_or(full);
    head.rsplit("::").next().unwrap_or(head)
}

/// Whether `robot` offers `method`: actuators by their capability flag
/// (they cannot be tried without moving), sensors by asking once (an
/// [`HalError::Unsupported`] answer is a no; any other answer, even an
/// error, means the method exists).
async fn offers<R: Robot + ?Sized>(robot: &mut R, caps: &Capabilities, method: Method) -> bool {
    let supported = |r: Result<(), HalError>| !matches!(r, Err(HalError::Unsupported { .. }));
    match method {
        Method::Odometry => supported(robot.odometry().await.map(drop)),
        Method::Scan => supported(robot.scan().await.map(drop)),
        Method::Rgb => supported(robot.rgb().await.map(drop)),
        Method::Depth => supported(robot.depth().await.map(drop)),
        Method::Labels => supported(robot.labels().await.map(drop)),
        Method::Panorama => caps.panorama,
        Method::Act => caps.discrete_actions,
        Method::Drive => caps.velocity,
        Method::MoveToOrDrive => caps.move_to || caps.velocity,
        Method::Stop => supported(robot.stop().await),
    }
}

/// The `Capabilities` flag that announces `method`, if it has one.
fn flag_of(method: Method) -> Option<&'static str> {
    match method {
        Method::Panorama => Some("panorama"),
        Method::Act => Some("discrete_actions"),
        Method::Drive => Some("velocity"),
        Method::MoveToOrDrive => Some("move_to or velocity"),
        _ => None,
    }
}

/// Checks, before step 1, that `robot` offers every method
/// [`robot_needs`] lists and that the model answers every kind
/// [`model_needs`] lists.
///
/// # Errors
/// [`EpisodeError::Capability`] listing every missing method and declined
/// kind at once (one line each).
pub async fn check<R: Robot + ?Sized>(spec: &EpisodeSpec, robot: &mut R) -> Result<(), EpisodeError> {
    let caps = robot.capabilities();
    let mut gaps = Vec::new();
    for n in robot_needs(spec) {
        if !offers(robot, &caps, n.method).await {
            let flag = flag_of(n.method).map_or(String::new(), |f| format!(" (and set `Capabilities::{f}`)"));
            let alternatives = if n.alternatives.is_empty() { String::new() } else { format!(", {}", n.alternatives) };
            gaps.push(format!(
                "{} needs `{}`; {} does not provide it: implement it{flag}{alternatives}",
                n.needed_by,
                n.method.name(),
                short_type_name::<R>(),
            ));
        }
    }
    if let Some(model) = &spec.vlm {
        for (kind, why) in model_needs(spec) {
            if !model.answers(kind) {
                gaps.push(format!(
                    "the model {} declines {kind} requests, which this run sends: {why}",
                    model.describe()
                ));
            }
        }
    }
    if gaps.is_empty() { Ok(()) } else { Err(EpisodeError::Capability(gaps.join("\n"))) }
}
