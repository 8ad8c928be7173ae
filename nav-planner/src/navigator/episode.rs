//! One episode in the built-in simulator, end to end: build the world, the
//! planner and the loop for a protocol, run it, judge it against the
//! arena's criteria with ground truth, and summarize it (SPEC §6 run
//! summary, seed 002 report). `nav run`, `nav eval` and the integration
//! tests all go through [`run_episode`].

use crate::navigator::billing::{BackendSummary, LEDGER_SETTLE};
use crate::navigator::candidates_loop::{
    CandidatesEnd, CandidatesLoop, CandidatesLoopConfig, CandidatesTask, WorldModelMode, rasterize_arena,
};
use crate::navigator::explore_loop::{
    ExploreEnd, ExploreLoop, ExploreLoopConfig, ExploreSignals, frontier_list, memory_frontiers,
};
use crate::navigator::objectnav_loop::{ObjectNavEnd, ObjectNavLoop, ObjectNavLoopConfig, ObjectNavParts};
use crate::navigator::pixel_policy::{PixelGoalConfig, PixelGoalPolicy};
use crate::navigator::place_score::PlaceScore;
use crate::navigator::{EpisodeStats, NavError, Observer, RunContext, StepLog};
use crate::offline::OfflineSceneAnalyzer;
use crate::offline::{
    FrontierPlanner, MapObjectNavConfig, MapObjectNavPlanner, OfflineCandidatePlanner, OfflineExplorePlanner,
    OfflineObjectNavConfig, OfflineObjectNavPlanner,
};
use crate::offline::{LabelBufferPerception, VlmNoise};
use crate::protocol::ProtocolKind;
use crate::protocol::candidates::{CandidatePlanner, CandidatePromptConfig, VlmCandidatePlanner};
use crate::protocol::explore::{ExplorePlanner, ExplorePromptConfig, VlmExplorePlanner};
use crate::protocol::objectnav::{ObjectNavPlanner, ObjectNavPromptConfig, VlmObjectNavPlanner};
use crate::protocol::perception::{GoalPerception, VlmGoalPerception, VlmPerceptionConfig};
use crate::protocol::scene::{SceneAnalyzer, VlmSceneAnalyzer};
use crate::vlm::{CostBudget, LedgerVlm, VisionLanguageModel};
use nav_core::geometry::Point2;
use nav_core::grid::OccupancyGrid;
use nav_hal::HalError;
use nav_hal::arena::{Arena, Goal};
use nav_hal::sim::{SimConfig, SimHal, SimWorld};
use nav_hal::tap::{SharedTap, Tapped};

/// The robot of a simulator episode: the simulator, its readings tapped
/// when [`EpisodeSpec::sensor_tap`] is set.
type EpisodeHal = Tapped<SimHal>;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

/// Which planner decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlannerChoice {
    /// The protocol's offline planner (no network, the default): for
    /// objectnav the stand-in that knows only what a model's request
    /// carries.
    Offline,
    /// Classic frontier exploration (the baseline).
    Frontier,
    /// The map-based objectnav baseline (LiDAR map, remembered sightings,
    /// semantic frontier ranking): a non-VLM planner with state no model
    /// request carries. Other protocols use their offline planner.
    Map,
    /// A vision-language model through a backend.
    Vlm,
}

impl PlannerChoice {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            PlannerChoice::Offline => "offline",
            PlannerChoice::Frontier => "frontier",
            PlannerChoice::Map => "map",
            PlannerChoice::Vlm => "vlm",
        }
    }
}

impl std::str::FromStr for PlannerChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "offline" => Ok(PlannerChoice::Offline),
            "frontier" => Ok(PlannerChoice::Frontier),
            "map" => Ok(PlannerChoice::Map),
            "vlm" => Ok(PlannerChoice::Vlm),
            other => Err(format!("unknown planner {other:?}: expected offline, frontier, map or vlm")),
        }
    }
}

/// Everything one episode needs.
#[derive(Clone)]
pub struct EpisodeSpec {
    /// The world.
    pub arena: Arena,
    /// Where the arena came from, for the log (`builtin:house_a`, a path…).
    pub arena_source: String,
    /// The protocol.
    pub protocol: ProtocolKind,
    /// The planner.
    pub planner: PlannerChoice,
    /// Memory on (context and DC queue to the planner) or off.
    pub memory: bool,
    /// Seed: 0 keeps the arena's own start and goal; others draw a start
    /// pose and (for ObjectNav houses) a target object, and seed the
    /// sensor noise.
    pub seed: u64,
    /// Step/cycle budget override.
    pub max_steps: Option<u32>,
    /// Send no images to the model.
    pub text_only: bool,
    /// The model, for `PlannerChoice::Vlm`.
    pub vlm: Option<Arc<dyn VisionLanguageModel>>,
    /// The scene analyzer's own model (`[scene]`: seed §3's separate
    /// endpoint); `None`: the planner's model. Used with `PlannerChoice::Vlm`.
    pub scene_vlm: Option<Arc<dyn VisionLanguageModel>>,
    /// The deadline of every model call, seconds (`--timeout`): replaces
    /// the protocols' request timeouts (8 s; candidates 15 s), the scene
    /// analyzer's, and the candidates loop's inference timeout (5 s).
    pub call_timeout_s: Option<f64>,
    /// A spending limit (`--max-cost-usd`): answered calls are billed to
    /// it; once reached, further calls are refused and the loop ends at its
    /// next step with the end `cost_limit`. Share one across a suite.
    pub budget: Option<Arc<CostBudget>>,
    /// Grounding knowledge (seed 004, merged and rendered) for the system
    /// prompt of every protocol.
    pub grounding: Option<String>,
    /// The seed's verbalized-entropy variant of the system prompt.
    pub verbalized_entropy: bool,
    /// The explore protocol's session file (`--memory-file`): the
    /// exploration memory is loaded from it at the start when it exists
    /// (YAML, or JSON for a `.json` name) and saved to it atomically at the
    /// end. Other protocols ignore it.
    pub memory_file: Option<std::path::PathBuf>,
    /// Simulator settings.
    pub sim: SimConfig,
    /// ObjectNav loop settings.
    pub objectnav: ObjectNavLoopConfig,
    /// Explore loop settings.
    pub explore: ExploreLoopConfig,
    /// Candidates loop settings.
    pub candidates: CandidatesLoopConfig,
    /// Noise of the offline VLM stand-in (`--vlm-noise`).
    pub vlm_noise: VlmNoise,
    /// The ObjectNav perception stage (`None`: the model's with `--planner
    /// vlm`, else the simulator's label buffer).
    pub perception: Option<PerceptionChoice>,
    /// Sees every sensor reading the loop takes (`nav run --record`); output
    /// only, the loop runs the same with or without it.
    pub sensor_tap: Option<SharedTap>,
}

/// Which perception stage finds the target in the current view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PerceptionChoice {
    /// The simulator's label buffer: a perfect detector.
    Sim,
    /// The planner's model asked for the target's box, with the stop check.
    Vlm,
    /// A detector worker process (op `detect`, docs/BRIDGE.md "Workers"),
    /// e.g. GroundingDINO + SAM; `nav habitat --detector CMD`.
    External,
}

impl std::str::FromStr for PerceptionChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "sim" => Ok(PerceptionChoice::Sim),
            "vlm" => Ok(PerceptionChoice::Vlm),
            "external" => Ok(PerceptionChoice::External),
            other => Err(format!("unknown perception {other:?}: expected sim, vlm or external")),
        }
    }
}

impl std::fmt::Debug for EpisodeSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EpisodeSpec")
            .field("arena", &self.arena.name)
            .field("protocol", &self.protocol)
            .field("planner", &self.planner)
            .field("memory", &self.memory)
            .field("seed", &self.seed)
            .finish_non_exhaustive()
    }
}

impl EpisodeSpec {
    /// A spec with defaults: objectnav, offline planner, memory on, seed 0.
    pub fn new(arena: Arena, arena_source: impl Into<String>) -> Self {
        Self {
            arena,
            arena_source: arena_source.into(),
            protocol: ProtocolKind::Objectnav,
            planner: PlannerChoice::Offline,
            memory: true,
            seed: 0,
            max_steps: None,
            text_only: false,
            vlm: None,
            scene_vlm: None,
            call_timeout_s: None,
            budget: None,
            grounding: None,
            verbalized_entropy: false,
            memory_file: None,
            sim: SimConfig::default(),
            objectnav: ObjectNavLoopConfig::default(),
            explore: ExploreLoopConfig::default(),
            candidates: CandidatesLoopConfig::default(),
            vlm_noise: VlmNoise::default(),
            perception: None,
            sensor_tap: None,
        }
    }
}

/// One success criterion and how the run did (seed 002 report).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CriterionResult {
    /// Name, e.g. "Goal Reached".
    pub name: String,
    /// Whether it passed.
    pub passed: bool,
    /// What happened.
    pub actual: String,
    /// What was required.
    pub expected: String,
    /// How `actual` was measured, in one line.
    #[serde(default)]
    pub detail: String,
}

/// The run summary (SPEC §6), plus the criteria and a few extras.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Arena name.
    pub arena: String,
    /// Protocol.
    pub protocol: String,
    /// Planner.
    pub planner: String,
    /// Seed.
    pub seed: u64,
    /// Whether the episode met its goal condition (ObjectNav/point goal;
    /// coverage for exploration).
    pub success: bool,
    /// Success weighted by path length (0 without a goal).
    pub spl: f64,
    /// Steps (actions, control ticks or cycles).
    pub steps: u32,
    /// Path travelled, metres (ground truth).
    pub path_length_m: f64,
    /// Geodesic shortest path from the start to the success region, metres.
    pub geodesic_m: Option<f64>,
    /// Collisions.
    pub collisions: u32,
    /// Fraction of free space seen.
    pub coverage: f64,
    /// ABABA events.
    pub ababa: u32,
    /// STUCK events.
    pub stuck: u32,
    /// Model calls.
    pub vlm_calls: u32,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Fallback decisions.
    pub fallbacks: u32,
    /// Wall-clock time, ms.
    pub wall_ms: f64,
    /// Memory on or off.
    pub memory: bool,
    /// The ObjectNav target, if any.
    pub target: Option<String>,
    /// Planner invocations.
    pub planner_calls: u32,
    /// Estimated model cost, US dollars.
    pub cost_usd: f64,
    /// Safety overrides.
    pub safety_overrides: u32,
    /// How the run ended.
    pub end: String,
    /// Median local overhead per cycle (everything but model calls), ms.
    pub median_overhead_ms: Option<f64>,
    /// Whether all criteria passed.
    pub passed: bool,
    /// Criteria passed (seed 002 `passedCount`).
    #[serde(default)]
    pub passed_count: u32,
    /// Criteria checked (seed 002 `totalCount`).
    #[serde(default)]
    pub total_count: u32,
    /// The criteria.
    pub criteria: Vec<CriterionResult>,
    /// Model calls that failed (errors, timeouts, HTTP errors); answered
    /// calls are in `vlm_calls`.
    #[serde(default)]
    pub vlm_failures: u32,
    /// Per-backend call statistics (seed 002 adapter statistics).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backends: Vec<BackendSummary>,
    /// Scene analyses run (objectnav).
    #[serde(default)]
    pub scene_calls: u32,
    /// How the memory's places followed the rooms, judged against the
    /// arena's room polygons (objectnav in arenas with rooms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub places: Option<PlaceScore>,
    /// Tool calls the model made that were rejected as invalid (unknown
    /// tool, bad arguments; explore), each told to the model in the next
    /// prompt.
    #[serde(default)]
    pub invalid_tool_calls: u32,
    /// An output of the episode that could not be written (the
    /// `--memory-file` save on a full or read-only disk). The episode's
    /// result stands; `nav run` prints it, then exits 3 with this message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_error: Option<String>,
}

impl RunSummary {
    /// The seed-002 report, extended with SR / SPL / ABABA / STUCK /
    /// planner calls / tokens.
    pub fn report(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "=== Navigation Evaluation: {} ===", self.arena);
        let _ = writeln!(
            s,
            "RESULT: {} ({}/{} criteria)",
            if self.passed { "PASSED" } else { "FAILED" },
            self.passed_count,
            self.total_count
        );
        s.push('\n');
        for c in &self.criteria {
            let _ = writeln!(
                s,
                "  [{}] {}: {} (expected: {})",
                if c.passed { "PASS" } else { "FAIL" },
                c.name,
                c.actual,
                c.expected
            );
        }
        s.push('\n');
        let _ = writeln!(
            s,
            "  protocol {} | planner {} | memory {} | seed {}{}",
            self.protocol,
            self.planner,
            if self.memory { "on" } else { "off" },
            self.seed,
            self.target.as_ref().map(|t| format!(" | target {t}")).unwrap_or_default()
        );
        let _ = writeln!(
            s,
            "  SR {:.0} | SPL {} | path {:.2} m (shortest {}) | steps {} | coverage {:.0}%",
            if self.success { 1.0 } else { 0.0 },
            // without a goal there is no shortest path and SPL is undefined (the JSON keeps 0)
            self.geodesic_m.map_or("n/a".to_string(), |_| format!("{:.2}", self.spl)),
            self.path_length_m,
            self.geodesic_m.map_or("n/a".to_string(), |g| format!("{g:.2} m")),
            self.steps,
            self.coverage * 100.0
        );
        let _ = writeln!(
            s,
            "  ABABA {} | STUCK {} | collisions {} | planner calls {} | VLM calls {} | tokens {}+{} | fallbacks {}",
            self.ababa,
            self.stuck,
            self.collisions,
            self.planner_calls,
            self.vlm_calls,
            self.prompt_tokens,
            self.completion_tokens,
            self.fallbacks
        );
        if let Some(p) = &self.places {
            let _ = writeln!(
                s,
                "  places {} for {} room entries | place accuracy {} | scene analyses {}",
                p.places_created,
                p.room_entries(),
                p.accuracy().map_or("n/a".to_string(), |a| format!("{:.0}%", a * 100.0)),
                p.scene_calls
            );
        }
        if self.invalid_tool_calls > 0 {
            let _ = writeln!(s, "  invalid tool calls {} (each told to the model)", self.invalid_tool_calls);
        }
        for b in &self.backends {
            let _ = writeln!(s, "  {}", crate::navigator::billing::backend_line(b));
        }
        let _ = write!(s, "  ended: {} | {:.0} ms", self.end, self.wall_ms);
        s
    }
}

/// Why an episode could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EpisodeError {
    /// The arena or simulator rejected the setup.
    #[error("{0}")]
    Hal(#[from] HalError),
    /// The loop failed.
    #[error("{0}")]
    Nav(#[from] NavError),
    /// The spec is inconsistent (e.g. `--planner vlm` without a model).
    #[error("{0}")]
    Spec(String),
    /// A configuration value is outside its documented range; the key is
    /// the `nav --config` path (`explore.safety.speeds.fast_mps`).
    #[error("config {0}")]
    Config(#[from] nav_core::config::ConfigError),
}

/// Picks a start pose and (for ObjectNav) a target for `seed`: seed 0 keeps
/// the arena's own; other seeds draw a free start with 0.4 m clearance and,
/// when the arena has an object goal, a random labelled object class.
pub fn seeded_arena(arena: &Arena, seed: u64, robot_radius: f64) -> Result<Arena, HalError> {
    if seed == 0 {
        return Ok(arena.clone());
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut a = arena.clone();
    if let Some(Goal::Object { .. }) = &arena.goal {
        let mut labels: Vec<&str> = arena.objects.iter().map(|o| o.label.as_str()).collect();
        labels.sort_unstable();
        labels.dedup();
        if !labels.is_empty() {
            let label = labels[rng.random_range(0..labels.len())].to_string();
            a.goal = Some(Goal::Object { label });
        }
    }
    let [xmin, ymin, xmax, ymax] = arena.bounds;
    let world = SimWorld::new(arena.clone(), SimConfig { robot_radius_m: robot_radius, ..SimConfig::default() })?;
    for _ in 0..2000 {
        let p = Point2::new(rng.random_range(xmin..xmax), rng.random_range(ymin..ymax));
        if world.clearance(p) < robot_radius + 0.22 {
            continue;
        }
        let yaw = rng.random_range(-180.0..180.0);
        let mut cand = a.clone();
        cand.start.x = p.x;
        cand.start.y = p.y;
        cand.start.yaw_deg = yaw;
        // the goal must be reachable from here and not already satisfied
        if let Ok(w) = SimWorld::new(cand.clone(), SimConfig { robot_radius_m: robot_radius, ..SimConfig::default() }) {
            if w.geodesic_start_to_goal().is_some_and(|g| g > 1.0) || cand.goal.is_none() {
                return Ok(cand);
            }
        }
    }
    Ok(a)
}

/// Checks the simulator's and the protocol's loop configuration, keys
/// prefixed with their `nav --config` section.
fn check_configs(spec: &EpisodeSpec) -> Result<(), nav_core::config::ConfigError> {
    spec.sim.validate().map_err(|e| e.under("sim"))?;
    match spec.protocol {
        ProtocolKind::Objectnav => spec.objectnav.validate().map_err(|e| e.under("objectnav")),
        ProtocolKind::Candidates => spec.candidates.validate().map_err(|e| e.under("candidates")),
        ProtocolKind::Explore => spec.explore.validate().map_err(|e| e.under("explore")),
    }
}

/// What a protocol's loop left for judging.
struct LoopResult {
    stats: EpisodeStats,
    /// How the loop ended (`stopped`, `step_limit`, …).
    end: String,
    /// The goal verdict, when the protocol decides it (ObjectNav, point goals).
    success: Option<bool>,
    /// Whether the loop's own criteria judge exploration (coverage).
    explores: bool,
    /// The loop's own coverage (candidates: what the camera saw, the seed's
    /// known cells / total cells); `None` uses the simulator's.
    coverage: Option<f64>,
    /// Final stuck counter and its limit (the seed's Stuck Recovery
    /// criterion, candidates protocol).
    stuck_recovery: Option<(u32, u32)>,
    /// How the memory's places followed the rooms (objectnav).
    places: Option<PlaceScore>,
    /// An output that could not be written (the `--memory-file` save).
    output_error: Option<String>,
}

/// Runs one episode (see the module docs). `log` receives the step log;
/// `progress(step)` is called after every step.
pub async fn run_episode(
    spec: &EpisodeSpec,
    log: &mut StepLog,
    progress: &mut dyn FnMut(u64),
) -> Result<RunSummary, EpisodeError> {
    let wall = Instant::now();
    check_configs(spec)?;
    // The run's bill: every model call goes through one ledger, which also
    // counts replies the loop stopped waiting for.
    let ledger = match (spec.planner, &spec.vlm) {
        (PlannerChoice::Vlm, Some(v)) => {
            let ledger = LedgerVlm::shared(Arc::clone(v));
            Some(Arc::new(match &spec.budget {
                Some(b) => ledger.with_budget(Arc::clone(b)),
                None => ledger,
            }))
        }
        _ => None,
    };
    let metered_spec;
    let spec = match &ledger {
        Some(l) => {
            // the scene analyzer's own endpoint bills to the same ledger
            let scene_vlm =
                spec.scene_vlm.as_ref().map(|m| Arc::new(l.sibling(Arc::clone(m))) as Arc<dyn VisionLanguageModel>);
            metered_spec =
                EpisodeSpec { vlm: Some(l.clone() as Arc<dyn VisionLanguageModel>), scene_vlm, ..spec.clone() };
            &metered_spec
        }
        None => spec,
    };
    let mut sim_cfg = spec.sim.clone();
    sim_cfg.noise.seed = spec.seed;
    let arena = seeded_arena(&spec.arena, spec.seed, sim_cfg.robot_radius_m)?;
    let world = SimWorld::new(arena.clone(), sim_cfg)?;
    let clock = world.clock();
    let mut hal = Tapped::new(SimHal::new(world), spec.sensor_tap.clone());
    let max_steps = spec.max_steps.unwrap_or(arena.criteria.max_steps);
    let planner_name = planner_name(spec)?;
    let gt = |h: &EpisodeHal| h.world().ground_truth_pose();
    let observer: Observer<'_, EpisodeHal> = Observer::new()
        .with_ground_truth(&gt)
        .with_progress(progress)
        .with_info("arena", serde_json::json!(arena.name))
        .with_info("arena_source", serde_json::json!(spec.arena_source))
        .with_info("protocol", serde_json::json!(spec.protocol.as_str()))
        .with_info("planner", serde_json::json!(planner_name))
        .with_info("seed", serde_json::json!(spec.seed))
        .with_info("arena_json", serde_json::to_value(&arena).unwrap_or_default());
    // the grounding section every protocol's system prompt carries (seed 004)
    let observer = match &spec.grounding {
        Some(g) => observer.with_info("grounding", serde_json::json!(g)),
        None => observer,
    };
    let observer = match &spec.budget {
        Some(b) => observer.with_halt(b.flag()),
        None => observer,
    };
    let mut ctx = RunContext::new(clock.as_ref(), log).with_observer(observer);
    let run = match spec.protocol {
        ProtocolKind::Objectnav => objectnav_episode(spec, &arena, max_steps, &mut hal, &mut ctx).await?,
        ProtocolKind::Candidates => candidates_episode(spec, &arena, max_steps, &mut hal, &mut ctx).await?,
        ProtocolKind::Explore => explore_episode(spec, max_steps, &mut hal, &mut ctx).await?,
    };
    let judged = Judged { spec, arena: &arena, max_steps, planner_name, wall_ms: 0.0 };
    let mut summary = judge(judged, &hal, run);
    if spec.budget.as_ref().is_some_and(|b| b.reached()) && matches!(summary.end.as_str(), "halted" | "shutdown") {
        summary.end = COST_LIMIT_END.to_string();
    }
    if let Some(ledger) = &ledger {
        let unsettled = ledger.settle(LEDGER_SETTLE).await;
        if unsettled > 0 {
            tracing::warn!(
                unsettled,
                "model calls still unanswered {} s after the episode ended",
                LEDGER_SETTLE.as_secs()
            );
        }
        apply_ledger(&mut summary, ledger, unsettled);
    }
    summary.wall_ms = wall.elapsed().as_secs_f64() * 1000.0;
    Ok(summary)
}

/// The run summary's `end` when a spending limit ([`EpisodeSpec::budget`])
/// stopped the episode.
pub const COST_LIMIT_END: &str = "cost_limit";

/// Replaces the loop's own call counts with the ledger's: answered calls,
/// their tokens and cost (late and superseded ones included), failures, and
/// the per-backend line.
pub fn apply_ledger(summary: &mut RunSummary, ledger: &LedgerVlm, unsettled: usize) {
    let stats = ledger.stats();
    summary.vlm_calls = u32::try_from(stats.successes).unwrap_or(u32::MAX);
    summary.vlm_failures = u32::try_from(stats.failures).unwrap_or(u32::MAX);
    summary.prompt_tokens = stats.usage.prompt_tokens;
    summary.completion_tokens = stats.usage.completion_tokens;
    summary.cost_usd = stats.cost_usd;
    summary.backends = vec![BackendSummary::from_ledger(ledger, unsettled)];
}

/// `vlm:PROVIDER/MODEL` for a model, else the planner's name; an error for
/// `--planner vlm` without a model.
fn planner_name(spec: &EpisodeSpec) -> Result<String, EpisodeError> {
    match (spec.planner, &spec.vlm) {
        (PlannerChoice::Vlm, Some(v)) => {
            let i = v.describe();
            Ok(format!("vlm:{}/{}", i.provider, i.model))
        }
        (PlannerChoice::Vlm, None) => Err(EpisodeError::Spec("--planner vlm needs a model (--vlm PROVIDER)".into())),
        (p, _) => Ok(p.as_str().to_string()),
    }
}

fn the_model(spec: &EpisodeSpec) -> Result<Arc<dyn VisionLanguageModel>, EpisodeError> {
    spec.vlm.clone().ok_or_else(|| EpisodeError::Spec("no model".into()))
}

async fn objectnav_episode(
    spec: &EpisodeSpec,
    arena: &Arena,
    max_steps: u32,
    hal: &mut EpisodeHal,
    ctx: &mut RunContext<'_, EpisodeHal>,
) -> Result<LoopResult, EpisodeError> {
    let Some(Goal::Object { label: target }) = &arena.goal else {
        return Err(EpisodeError::Spec(format!(
            "arena {:?} has no object goal; objectnav needs {{\"goal\": {{\"object\": LABEL}}}}",
            arena.name
        )));
    };
    let planner: Box<dyn ObjectNavPlanner> = match spec.planner {
        PlannerChoice::Offline => Box::new(OfflineObjectNavPlanner::new(OfflineObjectNavConfig {
            camera_height_m: Some(spec.sim.camera.height_m),
            noise: spec.vlm_noise,
            episode_seed: spec.seed,
            ..OfflineObjectNavConfig::default()
        })),
        PlannerChoice::Map => Box::new(
            MapObjectNavPlanner::new(MapObjectNavConfig {
                memory: spec.memory,
                noise: spec.vlm_noise,
                episode_seed: spec.seed,
                ..MapObjectNavConfig::default()
            })
            .map_err(|e| EpisodeError::Spec(e.to_string()))?,
        ),
        PlannerChoice::Frontier => {
            Box::new(FrontierPlanner::new(Default::default()).map_err(|e| EpisodeError::Spec(e.to_string()))?)
        }
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
    };
    let scene: Box<dyn SceneAnalyzer> = match (&spec.planner, &spec.vlm, spec.text_only) {
        (PlannerChoice::Vlm, Some(v), false) => Box::new(VlmSceneAnalyzer::new(
            spec.scene_vlm.clone().unwrap_or_else(|| v.clone()),
            spec.call_timeout_s.unwrap_or(8.0),
        )),
        _ => Box::new(OfflineSceneAnalyzer::new()),
    };
    let policy = Box::new(PixelGoalPolicy::new(PixelGoalConfig {
        stop_distance_m: (arena.success_distance_m() - 0.2).max(0.3),
        blocked_stop_distance_m: (arena.success_distance_m() - 0.05).max(0.3),
        use_map: spec.objectnav.policy_map,
        ..PixelGoalConfig::default()
    }));
    let perception: Box<dyn GoalPerception> = match (spec.perception, spec.planner) {
        (Some(PerceptionChoice::Vlm), _) | (None, PlannerChoice::Vlm) => {
            Box::new(VlmGoalPerception::new(the_model(spec)?, VlmPerceptionConfig::default()))
        }
        (Some(PerceptionChoice::External), _) => {
            return Err(EpisodeError::Spec(
                "--perception external needs a detector worker; it runs with `nav habitat --detector CMD`".into(),
            ));
        }
        _ => Box::new(LabelBufferPerception::default()),
    };
    let cfg = ObjectNavLoopConfig { max_steps, memory: spec.memory, ..spec.objectnav.clone() };
    let mut lp = ObjectNavLoop::new(cfg, target.clone(), ObjectNavParts { planner, policy, perception, scene })?;
    let out = lp.run(hal, ctx).await?;
    let success = out.end == ObjectNavEnd::Stopped && hal.world().is_success(hal.world().ground_truth_pose());
    let places = PlaceScore::of(arena, &out.places, out.stats.scene_calls);
    Ok(LoopResult {
        stats: out.stats,
        end: out.end.as_str().into(),
        success: Some(success),
        explores: false,
        coverage: None,
        stuck_recovery: None,
        places,
        output_error: None,
    })
}

/// The candidates loop's settings and task for `arena`: the point goal (if
/// any) and its text, and the initial world model (the rasterized arena in
/// ground-truth mode, an unknown grid over the bounds otherwise).
fn candidates_setup(
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

async fn candidates_episode(
    spec: &EpisodeSpec,
    arena: &Arena,
    max_steps: u32,
    hal: &mut EpisodeHal,
    ctx: &mut RunContext<'_, EpisodeHal>,
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
    let out = lp.run(hal, ctx).await?;
    let at_goal = || hal.world().is_success(hal.world().ground_truth_pose());
    let success = match (&arena.goal, out.end) {
        (Some(Goal::Point { .. }), _) => Some(at_goal()),
        (Some(Goal::Object { .. }), CandidatesEnd::Stopped) => Some(at_goal()),
        (Some(Goal::Object { .. }), _) => Some(false),
        (None, _) => None,
    };
    Ok(LoopResult {
        stats: out.stats,
        end: out.end.as_str().into(),
        success,
        explores: arena.goal.is_none(),
        coverage: Some(out.coverage),
        stuck_recovery: Some((out.stuck_counter, cfg_max_stuck)),
        places: None,
        output_error: None,
    })
}

async fn explore_episode(
    spec: &EpisodeSpec,
    max_steps: u32,
    hal: &mut EpisodeHal,
    ctx: &mut RunContext<'_, EpisodeHal>,
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
    // a spending limit ends the loop the way a shutdown does
    let signals = match &spec.budget {
        Some(b) => ExploreSignals { shutdown: b.flag(), ..ExploreSignals::default() },
        None => ExploreSignals::default(),
    };
    let mut lp = ExploreLoop::new(cfg, planner, signals)?;
    if let Some(memory) = load_explore_memory(spec)? {
        lp = lp.with_memory(memory);
    }
    let out = lp.run(hal, ctx).await?;
    // a save that fails (a full or read-only disk) leaves the episode's result standing: the caller reports it
    let output_error = spec.memory_file.as_ref().and_then(|path| out.memory.save(path).err());
    let output_error = output_error.map(|e| format!("--memory-file: {e}"));
    Ok(LoopResult {
        stats: out.stats,
        end: out.end.as_str().into(),
        // a model outage is a failure, whatever the fallbacks explored; otherwise coverage decides
        success: (out.end == ExploreEnd::ModelUnavailable).then_some(false),
        explores: true,
        coverage: None,
        stuck_recovery: None,
        places: None,
        output_error,
    })
}

/// The exploration memory saved in `spec.memory_file`, if the file exists
/// (a first session starts empty and creates it).
///
/// # Errors
/// The file exists but cannot be read or is not a valid memory file.
fn load_explore_memory(spec: &EpisodeSpec) -> Result<Option<nav_memory::ExplorationMemory>, EpisodeError> {
    let Some(path) = spec.memory_file.as_deref().filter(|p| p.exists()) else { return Ok(None) };
    nav_memory::ExplorationMemory::load(path).map(Some).map_err(|e| EpisodeError::Spec(format!("--memory-file: {e}")))
}

/// The episode a loop result is judged against.
struct Judged<'a> {
    spec: &'a EpisodeSpec,
    arena: &'a Arena,
    max_steps: u32,
    planner_name: String,
    wall_ms: f64,
}

/// The seed-002 criteria and the SPEC §6 run summary, from the
/// simulator's ground truth (scoring only: nothing here reaches a loop).
fn judge(j: Judged<'_>, hal: &SimHal, run: LoopResult) -> RunSummary {
    let (spec, arena, max_steps) = (j.spec, j.arena, j.max_steps);
    let stats = &run.stats;
    let w = hal.world();
    let coverage = run.coverage.unwrap_or_else(|| w.coverage());
    let collisions = w.collisions();
    let path = w.path_length_m();
    let geodesic = if arena.goal.is_some() { w.geodesic_start_to_goal() } else { None };
    // exploration without a stated coverage target is judged against the seed's 80 %
    let min_cov =
        arena.criteria.min_coverage.or((spec.protocol == ProtocolKind::Explore || arena.goal.is_none()).then_some(0.8));
    let success = match run.success {
        Some(s) => s,
        None => min_cov.is_none_or(|m| coverage >= m) && run.explores,
    };
    let spl = match geodesic {
        Some(l) => nav_core::metrics::spl(success, l, path),
        None => 0.0,
    };
    let unit = match spec.protocol {
        ProtocolKind::Explore => "decision",
        ProtocolKind::Candidates => "cycle",
        ProtocolKind::Objectnav => "step",
    };
    let mut criteria = Vec::new();
    let crit = |name: &str, passed: bool, actual: String, expected: String, detail: String| CriterionResult {
        name: name.into(),
        passed,
        actual,
        expected,
        detail,
    };
    if let Some(goal) = &arena.goal {
        let tol = arena.success_distance_m();
        let what = match goal {
            Goal::Object { label } => format!("STOP within {tol:.1}m of a {label}"),
            Goal::Point { .. } => format!("within {tol:.1}m"),
        };
        let final_d = w.distance_to_goal(w.ground_truth_pose().position());
        let final_text = final_d.map_or("n/a".into(), |d| format!("{d:.2}m"));
        criteria.push(crit(
            "Goal Reached",
            success,
            if success {
                // explore counts decisions (as "Cycle Limit" does), the others steps or cycles
                match spec.protocol {
                    ProtocolKind::Explore => {
                        format!("Reached at decision {} (step {})", stats.planner_calls, stats.steps)
                    }
                    _ => format!("Reached at {unit} {}", stats.steps),
                }
            } else {
                format!("Not reached (final distance {final_text})")
            },
            what,
            format!("final distance {final_text} from the goal region (simulator ground truth); ended: {}", run.end),
        ));
    }
    let max_coll = arena.criteria.max_collisions.unwrap_or(0);
    criteria.push(crit(
        "Collisions",
        collisions <= max_coll,
        format!("{collisions} collisions"),
        format!("<= {max_coll}"),
        "contacts of the robot's disc with walls, obstacles or objects (simulator)".into(),
    ));
    if let Some(m) = min_cov {
        let how = if run.coverage.is_some() {
            "known cells / total cells of the world-model grid, as the robot's camera (and in LiDAR mode its LiDAR) saw them"
        } else {
            "free cells seen by the simulated sensors / free cells reachable from the start"
        };
        criteria.push(crit(
            "Exploration",
            coverage >= m,
            format!("{:.0}% covered", coverage * 100.0),
            format!(">= {:.0}%", m * 100.0),
            format!("{:.1}%: {how}", coverage * 100.0),
        ));
    }
    let used = if spec.protocol == ProtocolKind::Explore { stats.planner_calls } else { stats.steps };
    criteria.push(crit(
        "Cycle Limit",
        used <= max_steps,
        format!("{used} of {max_steps} {unit}s"),
        format!("<= {max_steps}"),
        format!("ended: {}", run.end),
    ));
    if let Some((counter, max)) = run.stuck_recovery {
        criteria.push(crit(
            "Stuck Recovery",
            counter <= max,
            format!("stuckCounter={counter}"),
            format!("<= {max}"),
            format!(
                "final count of consecutive cycles that moved less than {:.0} cm; the detector fired {} time(s)",
                spec.candidates.stuck.min_motion_m * 100.0,
                stats.stuck
            ),
        ));
    }
    let passed = criteria.iter().all(|c| c.passed);
    let passed_count = criteria.iter().filter(|c| c.passed).count() as u32;
    let total_count = criteria.len() as u32;
    let stats = run.stats;
    RunSummary {
        arena: arena.name.clone(),
        protocol: spec.protocol.as_str().to_string(),
        planner: j.planner_name,
        seed: spec.seed,
        success,
        spl,
        steps: stats.steps,
        path_length_m: path,
        geodesic_m: geodesic,
        collisions,
        coverage,
        ababa: stats.ababa,
        stuck: stats.stuck,
        vlm_calls: stats.vlm_calls,
        prompt_tokens: stats.usage.prompt_tokens,
        completion_tokens: stats.usage.completion_tokens,
        fallbacks: stats.fallbacks,
        wall_ms: j.wall_ms,
        memory: spec.memory,
        target: match &arena.goal {
            Some(Goal::Object { label }) => Some(label.clone()),
            _ => None,
        },
        planner_calls: stats.planner_calls,
        cost_usd: stats.cost_usd,
        safety_overrides: stats.safety_overrides,
        end: run.end,
        median_overhead_ms: stats.median_overhead_ms(),
        passed,
        passed_count,
        total_count,
        criteria,
        vlm_failures: stats.vlm_failures,
        backends: Vec::new(),
        scene_calls: stats.scene_calls,
        places: run.places,
        invalid_tool_calls: stats.invalid_tool_calls,
        output_error: run.output_error,
    }
}

/// The request a backend would send at the start state of `spec`'s
/// episode (what `nav prompt` prints and the prompt snapshots pin down).
pub async fn initial_request(spec: &EpisodeSpec) -> Result<crate::vlm::VlmRequest, EpisodeError> {
    use crate::protocol::{candidates, explore, objectnav};
    use nav_hal::hal::Sensors as _;
    let arena = seeded_arena(&spec.arena, spec.seed, spec.sim.robot_radius_m)?;
    let mut hal = SimHal::new(SimWorld::new(arena.clone(), spec.sim.clone())?);
    let pose = hal.odometry().await?.pose;
    let scan = hal.scan().await?.scan;
    match spec.protocol {
        ProtocolKind::Objectnav => {
            let target = match &arena.goal {
                Some(Goal::Object { label }) => label.clone(),
                _ => return Err(EpisodeError::Spec(format!("arena {:?} has no object goal", arena.name))),
            };
            let pano = hal.panorama(spec.objectnav.panorama_views).await?;
            let memory = nav_memory::SpatialMemory::new(spec.objectnav.memory_config.clone())
                .map_err(|e| EpisodeError::Spec(e.to_string()))?;
            let ctx = memory.context(None);
            let obs = objectnav::ObjectNavObservation {
                target: &target,
                pose,
                panorama: Some(&pano),
                scan: Some(&scan),
                context: spec.memory.then_some(&ctx),
            };
            let cfg = ObjectNavPromptConfig {
                text_only: spec.text_only,
                grounding: spec.grounding.clone(),
                verbalized_entropy: spec.verbalized_entropy,
                ..ObjectNavPromptConfig::default()
            };
            Ok(objectnav::build_request(&obs, &cfg))
        }
        ProtocolKind::Candidates => {
            let (cfg, task) = candidates_setup(spec, &arena, arena.criteria.max_steps)?;
            let (goal, goal_text) = (task.goal, task.goal_text.clone());
            let lp = CandidatesLoop::new(cfg, Box::new(OfflineCandidatePlanner::new()), task)?;
            let preview = lp.preview(&mut hal).await?;
            let (grid, pose, cands) = (&preview.grid, preview.pose, &preview.candidates);
            let camera = if spec.text_only { None } else { Some(hal.rgb().await?.frame) };
            let frame = candidates::CandidateFrame {
                cycle: 1,
                goal_text: &goal_text,
                goal,
                goal_tolerance_m: arena.success_distance_m(),
                pose,
                mode: if goal.is_some() { candidates::NavMode::Navigating } else { candidates::NavMode::Exploring },
                stuck_cycles: None,
                last_action: None,
                grid,
                candidates: cands,
                objects: &preview.objects,
                topology: preview.topology,
                history: &[],
                camera: camera.as_ref(),
                map_image: spec.candidates.map_image,
            };
            let cfg = CandidatePromptConfig {
                text_only: spec.text_only,
                grounding: spec.grounding.clone(),
                verbalized_entropy: spec.verbalized_entropy,
                ..CandidatePromptConfig::default()
            };
            Ok(candidates::build_request(&frame, &cfg))
        }
        ProtocolKind::Explore => {
            let snap = explore_snapshot_of(&mut hal, spec, pose, scan).await?;
            let cfg = ExplorePromptConfig {
                text_only: spec.text_only,
                grounding: spec.grounding.clone(),
                verbalized_entropy: spec.verbalized_entropy,
                ..ExplorePromptConfig::default()
            };
            Ok(explore::build_request_for(&snap, &cfg, &spec.explore.safety.speeds))
        }
    }
}

/// The explore planner's first snapshot of `spec`'s episode (what
/// [`initial_request`] sends for the explore protocol): the pose, scan,
/// camera frame and depth at the start, the reachable frontiers, and an
/// exploration memory that lists the same frontiers.
///
/// # Errors
/// As [`initial_request`].
pub async fn initial_explore_snapshot(
    spec: &EpisodeSpec,
) -> Result<crate::protocol::explore::ExploreSnapshot, EpisodeError> {
    use nav_hal::hal::Sensors as _;
    let arena = seeded_arena(&spec.arena, spec.seed, spec.sim.robot_radius_m)?;
    let mut hal = SimHal::new(SimWorld::new(arena, spec.sim.clone())?);
    let pose = hal.odometry().await?.pose;
    let scan = hal.scan().await?.scan;
    explore_snapshot_of(&mut hal, spec, pose, scan).await
}

async fn explore_snapshot_of(
    hal: &mut SimHal,
    spec: &EpisodeSpec,
    pose: nav_core::geometry::Pose2,
    scan: nav_core::lidar::LaserScan,
) -> Result<crate::protocol::explore::ExploreSnapshot, EpisodeError> {
    use nav_core::local_map::LocalMap;
    use nav_hal::hal::{Actuators as _, Sensors as _};
    let mut map =
        LocalMap::new(spec.explore.map.clone(), pose.position()).map_err(|e| EpisodeError::Spec(e.to_string()))?;
    map.integrate(pose, &scan);
    let frontiers = frontier_list(&map, pose);
    let mut memory = nav_memory::ExplorationMemory::new(0.0);
    memory.update_frontiers(memory_frontiers(&frontiers, pose));
    let frame = hal.rgb().await?;
    let depth = hal.depth().await.ok();
    hal.stop().await.ok();
    Ok(crate::protocol::explore::ExploreSnapshot {
        pose,
        speed_mps: 0.0,
        distance_traveled_m: 0.0,
        elapsed_s: 0.0,
        coverage: None,
        scan,
        scan_age_s: 0.0,
        hfov_rad: frame.hfov_rad,
        image: Some(frame.frame),
        depth,
        previous_action: None,
        previous_result: None,
        in_progress: None,
        rejected: Vec::new(),
        memory_text: memory.prompt_text(nav_memory::PromptParts { without_frontiers: true, ..Default::default() }),
        frontiers,
        detections: Vec::new(),
        text_only: spec.text_only,
        sensor_fault: None,
    })
}
