//! One episode in the built-in simulator, end to end: build the world, the
//! planner and the loop for a protocol, run it, judge it against the
//! arena's criteria with ground truth, and summarize it (the run summary
//! and the criteria report). `nav run`, `nav eval` and the integration
//! tests all go through [`run_episode`].

pub mod runner;

use crate::navigator::billing::BackendSummary;
use crate::navigator::candidates_loop::{CandidatesLoop, CandidatesLoopConfig};
use crate::navigator::episode::runner::parts::candidates_setup;
use crate::navigator::explore_loop::{ExploreLoopConfig, frontier_list, memory_frontiers};
use crate::navigator::objectnav_loop::ObjectNavLoopConfig;
use crate::navigator::place_score::PlaceScore;
use crate::navigator::{NavError, StepLog};
use crate::offline::{OfflineCandidatePlanner, VlmNoise};
use crate::protocol::ProtocolKind;
use crate::protocol::candidates::CandidatePromptConfig;
use crate::protocol::explore::ExplorePromptConfig;
use crate::protocol::objectnav::ObjectNavPromptConfig;
use crate::vlm::{CostBudget, LedgerVlm, VisionLanguageModel};
use nav_core::geometry::Point2;
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
    /// The scene analyzer's own model (`[scene]`: a separate
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
    /// Grounding knowledge (learnt from feedback, merged and rendered) for the system
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
    /// The operator's voice commands for the explore and objectnav loops
    /// (`nav run --voice stdin`; [`crate::navigator::voice`]); `None`
    /// reads none.
    pub voice: Option<crate::navigator::voice::VoiceInbox>,
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
    /// A spec with defaults: objectnav, offline planner, memory on, `seed = 0`.
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
            voice: None,
        }
    }
}

/// One success criterion and how the run did (a line of the criteria report).
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

/// The run summary: the episode's metrics, model calls and criteria.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    /// Area of free space seen, m² (a judge that measures it; absent
    /// otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explored_m2: Option<f64>,
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
    /// Criteria passed (the LLMos report's `passedCount`).
    #[serde(default)]
    pub passed_count: u32,
    /// Criteria checked (the LLMos report's `totalCount`).
    #[serde(default)]
    pub total_count: u32,
    /// The criteria.
    pub criteria: Vec<CriterionResult>,
    /// Model calls that failed (errors, timeouts, HTTP errors); answered
    /// calls are in `vlm_calls`.
    #[serde(default)]
    pub vlm_failures: u32,
    /// Per-backend call statistics.
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
    /// Model requests sent, by kind (`planner`, `scene`, `perception`,
    /// `stop_check`, `tool_follow_up`, …).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub requests: std::collections::BTreeMap<String, u64>,
    /// The first few distinct fallback reasons (at most
    /// [`crate::navigator::MAX_FALLBACK_REASONS`]), so a library user sees
    /// why without a tracing subscriber.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallback_reasons: Vec<String>,
    /// Whether a judge measured the path, collisions and coverage; when
    /// false those fields are 0 because nothing measured them (a real robot
    /// without a judge), and the report prints them as n/a.
    #[serde(default = "judged_by_default")]
    pub judged: bool,
    /// An output of the episode that could not be written (the
    /// `--memory-file` save on a full or read-only disk). The episode's
    /// result stands; `nav run` prints it, then exits 3 with this message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_error: Option<String>,
}

/// Summaries written before the field existed were all judged.
fn judged_by_default() -> bool {
    true
}

impl RunSummary {
    /// The criteria report (as LLMos prints it), extended with SR / SPL / ABABA / STUCK /
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
        let measured = |v: String| if self.judged { v } else { "n/a".to_string() };
        let _ = writeln!(
            s,
            "  SR {:.0} | SPL {} | path {} (shortest {}) | steps {} | coverage {}",
            if self.success { 1.0 } else { 0.0 },
            // without a goal there is no shortest path and SPL is undefined (the JSON keeps 0)
            self.geodesic_m.map_or("n/a".to_string(), |_| format!("{:.2}", self.spl)),
            measured(format!("{:.2} m", self.path_length_m)),
            self.geodesic_m.map_or("n/a".to_string(), |g| format!("{g:.2} m")),
            self.steps,
            measured(format!("{:.0}%", self.coverage * 100.0))
        );
        let _ = writeln!(
            s,
            "  ABABA {} | STUCK {} | collisions {} | planner calls {} | VLM calls {} | tokens {}+{} | fallbacks {}",
            self.ababa,
            self.stuck,
            measured(self.collisions.to_string()),
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
        if !self.requests.is_empty() {
            let kinds: Vec<String> = self.requests.iter().map(|(k, n)| format!("{k} {n}")).collect();
            let _ = writeln!(s, "  model requests: {}", kinds.join(", "));
        }
        if !self.fallback_reasons.is_empty() {
            let _ =
                writeln!(s, "  fallbacks: {} (first reasons: {})", self.fallbacks, self.fallback_reasons.join("; "));
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
    /// The robot lacks a method the run calls, or the model declines a
    /// request kind the run sends (found before step 1; the message names
    /// the method or kind, the robot or model, and the alternatives).
    #[error("{0}")]
    Capability(String),
    /// The model cannot be reached or used and retrying will not help
    /// (connection refused, DNS, TLS, HTTP 401/403/404, or any connection
    /// failure before the first reply): the loop ended at its next step
    /// with the robot stopped. `nav` exits 5.
    #[error("{0}")]
    ModelLink(crate::vlm::ModelLinkFailure),
    /// A replayed run asked something its recording does not hold
    /// ([`crate::replay`]): the loop ended at its next step. The
    /// divergence names the step, the request kind and the first lines
    /// that differ from the nearest recorded request. `nav` exits 6.
    #[error("{0}")]
    ReplayDiverged(Box<crate::vlm::calls::Divergence>),
}

/// Picks a start pose and (for ObjectNav) a target for `seed`: `0` keeps
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

/// Runs one episode in the built-in simulator (see the module docs):
/// seeds the arena, builds the simulated robot (tapped when
/// [`EpisodeSpec::sensor_tap`] is set) and hands it to the
/// [`Runner`](crate::navigator::episode::runner::Runner) with the simulator's
/// [`SimJudge`](crate::navigator::episode::runner::SimJudge). `log` receives the
/// step log; `progress(step)` is called after every step.
///
/// # Errors
/// As [`Runner::run_with`](crate::navigator::episode::runner::Runner::run_with), and
/// [`EpisodeError::Hal`] for an arena the simulator rejects.
pub async fn run_episode(
    spec: &EpisodeSpec,
    log: &mut StepLog,
    progress: &mut dyn FnMut(u64),
) -> Result<RunSummary, EpisodeError> {
    use crate::navigator::episode::runner::{Runner, SimJudge};
    let wall = Instant::now();
    crate::navigator::episode::runner::parts::check_configs(spec)?;
    let mut sim_cfg = spec.sim.clone();
    sim_cfg.noise.seed = spec.seed;
    let arena = seeded_arena(&spec.arena, spec.seed, sim_cfg.robot_radius_m)?;
    let world = SimWorld::new(arena.clone(), sim_cfg)?;
    let clock = world.clock();
    let mut hal: EpisodeHal = Tapped::new(SimHal::new(world), spec.sensor_tap.clone());
    let runner = Runner::from_spec(EpisodeSpec { arena, ..spec.clone() });
    let mut summary = runner.run_with(&mut hal, Some(&SimJudge), clock.as_ref(), log, progress).await?;
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
    summary.requests = stats.requests_by_kind.clone();
    summary.backends = vec![BackendSummary::from_ledger(ledger, unsettled)];
}

/// `vlm:PROVIDER/MODEL` for a model, else the planner's name; an error for
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
                instruction: None,
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
        instruction: None,
    })
}
