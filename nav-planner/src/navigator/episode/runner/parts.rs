//! Building and running a protocol's loop on any robot: the planner,
//! perception stage, scene analyzer and low-level policy a configuration
//! asks for, and what the loop leaves for judging.

use super::body::{Body, PolicyMaker, pixel_goal_for};
use crate::navigator::candidates_loop::{
    CandidatesEnd, CandidatesLoop, CandidatesLoopConfig, CandidatesTask, WorldModelMode, rasterize_arena,
};
use crate::navigator::episode::{EpisodeError, EpisodeSpec, PerceptionChoice, PlannerChoice};
use crate::navigator::explore_loop::{ExploreEnd, ExploreLoop, ExploreLoopConfig, ExploreSignals};
use crate::navigator::objectnav_loop::PlaceStep;
use crate::navigator::objectnav_loop::{ObjectNavEnd, ObjectNavLoop, ObjectNavLoopConfig, ObjectNavParts};
use crate::navigator::pixel_policy::{PixelGoalConfig, PixelGoalPolicy};
use crate::navigator::policy::LowLevelPolicy;
use crate::navigator::{EpisodeStats, RunContext};
use crate::offline::{
    FrontierPlanner, LabelBufferPerception, MapObjectNavConfig, MapObjectNavPlanner, OfflineCandidatePlanner,
    OfflineExplorePlanner, OfflineObjectNavConfig, OfflineObjectNavPlanner, OfflineSceneAnalyzer,
};
use crate::protocol::ProtocolKind;
use crate::protocol::candidates::{CandidatePlanner, CandidatePromptConfig, VlmCandidatePlanner};
use crate::protocol::explore::{ExplorePlanner, ExplorePromptConfig, VlmExplorePlanner};
use crate::protocol::objectnav::{ObjectNavPlanner, ObjectNavPromptConfig, VlmObjectNavPlanner};
use crate::protocol::perception::{GoalPerception, VlmGoalPerception, VlmPerceptionConfig};
use crate::protocol::scene::{SceneAnalyzer, VlmSceneAnalyzer};
use crate::vlm::VisionLanguageModel;
use nav_core::geometry::Point2;
use nav_core::grid::OccupancyGrid;
use nav_hal::arena::{Arena, Goal};
use nav_hal::hal::Robot;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Checks the simulator's and the protocol's loop configuration, keys
/// prefixed with their `nav --config` section.
pub(crate) fn check_configs(spec: &EpisodeSpec) -> Result<(), nav_core::config::ConfigError> {
    spec.sim.validate().map_err(|e| e.under("sim"))?;
    match spec.protocol {
        ProtocolKind::Objectnav => spec.objectnav.validate().map_err(|e| e.under("objectnav")),
        ProtocolKind::Candidates => spec.candidates.validate().map_err(|e| e.under("candidates")),
        ProtocolKind::Explore => spec.explore.validate().map_err(|e| e.under("explore")),
    }
}

/// How a loop's end and the judge's verdict make the episode's success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SuccessRule {
    /// Success when the robot is at the goal (point goals).
    AtGoal,
    /// Success when the loop stopped believing it had arrived and the robot
    /// is at the goal (object goals).
    StoppedAtGoal {
        /// Whether the loop ended with the robot's own STOP.
        stopped: bool,
    },
    /// A failure whatever the judge says (a model outage).
    Fails,
    /// Coverage decides (exploration).
    Coverage,
}

/// What a protocol's loop left for judging.
pub(crate) struct LoopResult {
    pub(crate) stats: EpisodeStats,
    /// How the loop ended (`stopped`, `step_limit`, …).
    pub(crate) end: String,
    /// How success is decided.
    pub(crate) success: SuccessRule,
    /// The loop's own coverage (candidates: what the camera saw, the LLMos
    /// known cells / total cells); `None` uses the judge's.
    pub(crate) coverage: Option<f64>,
    /// Final stuck counter and its limit (the LLMos Stuck Recovery
    /// criterion, candidates protocol).
    pub(crate) stuck_recovery: Option<(u32, u32)>,
    /// The memory's place at every step with the true pose (objectnav),
    /// for scoring against the judge's rooms.
    pub(crate) places: Vec<PlaceStep>,
    /// Scene analyses run (objectnav).
    pub(crate) scene_calls: u32,
    /// An output that could not be written (the `--memory-file` save).
    pub(crate) output_error: Option<String>,
}

/// `vlm:PROVIDER/MODEL` for a model, else the planner's name; an error for
/// `--planner vlm` without a model.
pub(crate) fn planner_name(spec: &EpisodeSpec) -> Result<String, EpisodeError> {
    match (spec.planner, &spec.vlm) {
        (PlannerChoice::Vlm, Some(v)) => {
            let i = v.describe();
            Ok(format!("vlm:{}/{}", i.provider, i.model))
        }
        (PlannerChoice::Vlm, None) => Err(EpisodeError::Spec("--planner vlm needs a model (--vlm PROVIDER)".into())),
        (p, _) => Ok(p.as_str().to_string()),
    }
}

/// The spec's model, or an error.
pub(crate) fn the_model(spec: &EpisodeSpec) -> Result<Arc<dyn VisionLanguageModel>, EpisodeError> {
    spec.vlm.clone().ok_or_else(|| EpisodeError::Spec("no model".into()))
}

/// What a caller brought besides the settings: the robot's body, a
/// low-level policy, a detector worker, and lines for the step log's header.
#[derive(Clone, Default)]
pub(crate) struct Extras {
    /// The robot's size and camera (`None`: the built-in simulator's).
    pub(crate) body: Option<Body>,
    /// The objectnav low-level policy's factory and its name.
    pub(crate) policy: Option<(String, PolicyMaker)>,
    /// The detector worker `PerceptionChoice::External` asks.
    #[cfg(feature = "sim-bridge")]
    pub(crate) detector: Option<crate::navigator::external::SharedWorker>,
    /// Added to the step log's first record.
    pub(crate) info: Vec<(String, serde_json::Value)>,
}

/// The built-in simulator's robot as a [`Body`].
fn sim_body(spec: &EpisodeSpec) -> Body {
    let cam = &spec.sim.camera;
    Body {
        radius_m: spec.sim.robot_radius_m,
        clearance_m: 0.05,
        camera_height_m: Some(cam.height_m),
        hfov_deg: cam.hfov_deg,
        image_size: [u32::try_from(cam.width).unwrap_or(u32::MAX), u32::try_from(cam.height).unwrap_or(u32::MAX)],
        step: spec.sim.step,
        scan_from_camera: false,
    }
}

/// The objectnav planner `spec` names, sized for `body` (the simulator's
/// defaults without one).
fn objectnav_planner(spec: &EpisodeSpec, body: Option<&Body>) -> Result<Box<dyn ObjectNavPlanner>, EpisodeError> {
    let map = body.map(Body::map).unwrap_or_default();
    Ok(match spec.planner {
        PlannerChoice::Offline => Box::new(OfflineObjectNavPlanner::new(OfflineObjectNavConfig {
            camera_height_m: body.map_or(Some(spec.sim.camera.height_m), |b| b.camera_height_m),
            noise: spec.vlm_noise,
            episode_seed: spec.seed,
            ..OfflineObjectNavConfig::default()
        })),
        PlannerChoice::Map => Box::new(
            MapObjectNavPlanner::new(MapObjectNavConfig {
                memory: spec.memory,
                map,
                noise: spec.vlm_noise,
                episode_seed: spec.seed,
                ..MapObjectNavConfig::default()
            })
            .map_err(|e| EpisodeError::Spec(e.to_string()))?,
        ),
        PlannerChoice::Frontier => Box::new(FrontierPlanner::new(map).map_err(|e| EpisodeError::Spec(e.to_string()))?),
        PlannerChoice::Vlm => Box::new(VlmObjectNavPlanner::new(
            the_model(spec)?,
            ObjectNavPromptConfig {
                text_only: spec.text_only,
                grounding: spec.grounding.clone(),
                verbalized_entropy: spec.verbalized_entropy,
                timeout_s: spec.call_timeout_s.unwrap_or(ObjectNavPromptConfig::default().timeout_s),
                ..ObjectNavPromptConfig::default()
            },
        )),
    })
}

/// The objectnav perception stage `spec` names.
fn objectnav_perception(spec: &EpisodeSpec, extras: &Extras) -> Result<Box<dyn GoalPerception>, EpisodeError> {
    Ok(match (spec.perception, spec.planner) {
        (Some(PerceptionChoice::Vlm), _) | (None, PlannerChoice::Vlm) => {
            Box::new(VlmGoalPerception::new(the_model(spec)?, VlmPerceptionConfig::default()))
        }
        (Some(PerceptionChoice::External), _) => {
            #[cfg(feature = "sim-bridge")]
            if let Some(worker) = &extras.detector {
                return Ok(Box::new(crate::navigator::external::ExternalGoalPerception::new(worker.clone(), 0.0)));
            }
            let _ = extras;
            return Err(EpisodeError::Spec(
                "--perception external needs a detector worker; it runs with `nav habitat --detector CMD`".into(),
            ));
        }
        _ => Box::new(LabelBufferPerception::default()),
    })
}

/// The objectnav low-level policy: the caller's, else the pixel-goal
/// policy for the body (the simulator's defaults without one).
fn objectnav_policy(spec: &EpisodeSpec, arena: &Arena, extras: &Extras) -> Box<dyn LowLevelPolicy> {
    let success_distance_m = arena.success_distance_m();
    match (&extras.policy, &extras.body) {
        (Some((_, make)), body) => {
            let body = body.unwrap_or_else(|| sim_body(spec));
            make(&body.policy_setup(&arena.name, success_distance_m))
        }
        (None, Some(body)) => {
            pixel_goal_for(&body.policy_setup(&arena.name, success_distance_m), spec.objectnav.policy_map)
        }
        (None, None) => Box::new(PixelGoalPolicy::new(PixelGoalConfig {
            stop_distance_m: (success_distance_m - 0.2).max(0.3),
            blocked_stop_distance_m: (success_distance_m - 0.05).max(0.3),
            use_map: spec.objectnav.policy_map,
            ..PixelGoalConfig::default()
        })),
    }
}

/// Runs the objectnav loop for `spec` on `robot`.
pub(crate) async fn objectnav_episode<R: Robot + ?Sized>(
    spec: &EpisodeSpec,
    arena: &Arena,
    max_steps: u32,
    extras: &Extras,
    robot: &mut R,
    ctx: &mut RunContext<'_, R>,
) -> Result<LoopResult, EpisodeError> {
    let Some(Goal::Object { label: target }) = &arena.goal else {
        return Err(EpisodeError::Spec(format!(
            "arena {:?} has no object goal; objectnav needs {{\"goal\": {{\"object\": LABEL}}}}",
            arena.name
        )));
    };
    let planner = objectnav_planner(spec, extras.body.as_ref())?;
    let scene: Box<dyn SceneAnalyzer> = match (&spec.planner, &spec.vlm, spec.text_only) {
        (PlannerChoice::Vlm, Some(v), false) => Box::new(VlmSceneAnalyzer::new(
            spec.scene_vlm.clone().unwrap_or_else(|| v.clone()),
            spec.call_timeout_s.unwrap_or(8.0),
        )),
        _ => Box::new(OfflineSceneAnalyzer::new()),
    };
    let policy = objectnav_policy(spec, arena, extras);
    let perception = objectnav_perception(spec, extras)?;
    let cfg = ObjectNavLoopConfig { max_steps, memory: spec.memory, ..spec.objectnav.clone() };
    let mut lp = ObjectNavLoop::new(cfg, target.clone(), ObjectNavParts { planner, policy, perception, scene })?;
    if let Some(inbox) = &spec.voice {
        lp = lp.with_voice(inbox.clone());
    }
    let out = lp.run(robot, ctx).await?;
    Ok(LoopResult {
        scene_calls: out.stats.scene_calls,
        stats: out.stats,
        end: out.end.as_str().into(),
        success: SuccessRule::StoppedAtGoal { stopped: out.end == ObjectNavEnd::Stopped },
        coverage: None,
        stuck_recovery: None,
        places: out.places,
        output_error: None,
    })
}

/// The candidates loop's settings and task for `arena`: the point goal (if
/// any) and its text, and the initial world model (the rasterized arena in
/// ground-truth mode, an unknown grid over the bounds otherwise).
pub(crate) fn candidates_setup(
    spec: &EpisodeSpec,
    arena: &Arena,
    max_steps: u32,
) -> Result<(CandidatesLoopConfig, CandidatesTask), EpisodeError> {
    let cfg = CandidatesLoopConfig {
        max_cycles: max_steps,
        goal_tolerance_m: arena.success_distance_m(),
        inference_timeout_s: spec.call_timeout_s.unwrap_or(spec.candidates.inference_timeout_s),
        ..spec.candidates.clone()
    };
    let grid = match cfg.world_model {
        WorldModelMode::GroundTruth => rasterize_arena(arena, cfg.resolution_m),
        WorldModelMode::Vision | WorldModelMode::Lidar => {
            let [x0, y0, x1, y1] = arena.bounds;
            OccupancyGrid::covering(x0, y0, x1, y1, cfg.resolution_m)
        }
    }
    .map_err(|e| EpisodeError::Spec(format!("[candidates] resolution_m {}: {e}", cfg.resolution_m)))?;
    let goal = match &arena.goal {
        Some(Goal::Point { x, y }) => Some(Point2::new(*x, *y)),
        _ => None,
    };
    let goal_text = match (goal, &arena.goal) {
        (Some(g), _) => format!("Reach the goal at ({:.1}, {:.1})", g.x, g.y),
        (None, Some(Goal::Object { label })) => format!("Find the {label}"),
        _ => "Explore the whole arena".to_string(),
    };
    Ok((cfg, CandidatesTask { goal, goal_text, grid }))
}

/// Runs the candidates loop for `spec` on `robot`.
pub(crate) async fn candidates_episode<R: Robot + ?Sized>(
    spec: &EpisodeSpec,
    arena: &Arena,
    max_steps: u32,
    robot: &mut R,
    ctx: &mut RunContext<'_, R>,
) -> Result<LoopResult, EpisodeError> {
    let planner: Box<dyn CandidatePlanner> = match spec.planner {
        PlannerChoice::Offline | PlannerChoice::Frontier | PlannerChoice::Map => {
            Box::new(OfflineCandidatePlanner::new())
        }
        PlannerChoice::Vlm => Box::new(VlmCandidatePlanner::new(
            the_model(spec)?,
            CandidatePromptConfig {
                text_only: spec.text_only,
                grounding: spec.grounding.clone(),
                verbalized_entropy: spec.verbalized_entropy,
                timeout_s: spec.call_timeout_s.unwrap_or(CandidatePromptConfig::default().timeout_s),
                ..CandidatePromptConfig::default()
            },
        )),
    };
    let (cfg, task) = candidates_setup(spec, arena, max_steps)?;
    let cfg_max_stuck = cfg.max_stuck_counter;
    let mut lp = CandidatesLoop::new(cfg, planner, task)?;
    let out = lp.run(robot, ctx).await?;
    let success = match &arena.goal {
        Some(Goal::Point { .. }) => SuccessRule::AtGoal,
        Some(Goal::Object { .. }) => SuccessRule::StoppedAtGoal { stopped: out.end == CandidatesEnd::Stopped },
        None => SuccessRule::Coverage,
    };
    Ok(LoopResult {
        stats: out.stats,
        end: out.end.as_str().into(),
        success,
        coverage: Some(out.coverage),
        stuck_recovery: Some((out.stuck_counter, cfg_max_stuck)),
        places: Vec::new(),
        scene_calls: 0,
        output_error: None,
    })
}

/// Runs the explore loop for `spec` on `robot`; `halt` ends it (a spending
/// limit, a broken model link).
pub(crate) async fn explore_episode<R: Robot + ?Sized>(
    spec: &EpisodeSpec,
    max_steps: u32,
    robot: &mut R,
    ctx: &mut RunContext<'_, R>,
    halt: Arc<AtomicBool>,
) -> Result<LoopResult, EpisodeError> {
    let planner: Box<dyn ExplorePlanner> = match spec.planner {
        PlannerChoice::Offline | PlannerChoice::Frontier | PlannerChoice::Map => Box::new(OfflineExplorePlanner::new()),
        PlannerChoice::Vlm => Box::new(VlmExplorePlanner::new(
            the_model(spec)?,
            ExplorePromptConfig {
                text_only: spec.text_only,
                grounding: spec.grounding.clone(),
                verbalized_entropy: spec.verbalized_entropy,
                timeout_s: spec.call_timeout_s.unwrap_or(ExplorePromptConfig::default().timeout_s),
                ..ExplorePromptConfig::default()
            },
            spec.explore.safety.clone(),
        )),
    };
    let cfg = ExploreLoopConfig { max_decisions: max_steps, ..spec.explore.clone() };
    // a spending limit or a broken model link ends the loop the way a shutdown does
    let voice = spec.voice.clone().unwrap_or_default();
    let signals = ExploreSignals { shutdown: halt, voice, ..ExploreSignals::default() };
    let mut lp = ExploreLoop::new(cfg, planner, signals)?;
    if let Some(memory) = load_explore_memory(spec)? {
        lp = lp.with_memory(memory);
    }
    let out = lp.run(robot, ctx).await?;
    // a save that fails (a full or read-only disk) leaves the episode's result standing: the caller reports it
    let output_error = spec.memory_file.as_ref().and_then(|path| out.memory.save(path).err());
    let output_error = output_error.map(|e| format!("--memory-file: {e}"));
    Ok(LoopResult {
        stats: out.stats,
        end: out.end.as_str().into(),
        // a model outage or an operator's stop is a failure, whatever the fallbacks explored; otherwise
        // coverage decides
        success: if matches!(out.end, ExploreEnd::ModelUnavailable | ExploreEnd::OperatorStop) {
            SuccessRule::Fails
        } else {
            SuccessRule::Coverage
        },
        coverage: None,
        stuck_recovery: None,
        places: Vec::new(),
        scene_calls: 0,
        output_error,
    })
}

/// The exploration memory saved in `spec.memory_file`, if the file exists
/// (a first session starts empty and creates it).
///
/// # Errors
/// The file exists but cannot be read or is not a valid memory file.
fn load_explore_memory(spec: &EpisodeSpec) -> Result<Option<nav_memory::ExplorationMemory>, EpisodeError> {
    // a link in a loop is there, and its load says what is wrong (a link to a file not made yet is not)
    let Some(path) = spec.memory_file.as_deref().filter(|p| nav_memory::ExplorationMemory::file_present(p)) else {
        return Ok(None);
    };
    nav_memory::ExplorationMemory::load(path).map(Some).map_err(|e| EpisodeError::Spec(format!("--memory-file: {e}")))
}
