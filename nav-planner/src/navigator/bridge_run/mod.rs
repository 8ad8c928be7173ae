//! ObjectNav episodes in a simulator behind the navkit bridge (Habitat-sim,
//! MiniWorld; docs/BRIDGE.md), judged by the simulator itself.
//!
//! [`BridgeRunner::run`] resets the bridge for each episode
//! ([`EpisodeSpec::index`], or a seed) and hands it to the episode
//! [`Runner`] with the [`BridgeJudge`]: the objectnav loop runs with the chosen planner (the offline planner by
//! default, a VLM when given one), a perception stage (the bridge's detector
//! boxes as a label buffer, [`LabelBufferPerception`](crate::offline::LabelBufferPerception), by default; the
//! model's with a VLM planner) and a low-level policy (the
//! [`PixelGoalPolicy`](crate::navigator::pixel_policy::PixelGoalPolicy) by default, or whatever
//! [`BridgeRunner::with_policy`] builds — PixelNav through the bridge
//! plugs in there), checked before step 1 like any robot, and summarizes
//! the episode with the simulator's own metrics (`success`, `spl`, `distance_to_goal` from
//! [`BridgeHal::episode_metrics`]) plus navkit's ABABA / STUCK / planner
//! counters and the bridge's per-step overhead.
//!
//! The bridge robot has no LiDAR: the runner asks for depth, and
//! `BridgeHal::scan` derives planar scans from it
//! ([`nav_hal::depth_scan`]) — the current view's fan after every step and
//! a full circle from the panorama at every planner call. The map's
//! inflation and the policy's corridor follow the agent's radius (the
//! backend's report, or [`BridgeRunConfig::robot_radius_m`]).
//!
//! ```no_run
//! use nav_hal::bridge::{BridgeConfig, BridgeHal};
//! use nav_planner::navigator::bridge_run::{BridgeRunConfig, BridgeRunner};
//! use nav_planner::navigator::StepLog;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let bridge = BridgeConfig { depth: true, ..BridgeConfig::default() };
//! let mut hal = BridgeHal::spawn(".venv/bin/python -m navkit_bridge --backend miniworld", bridge).await?;
//! let mut runner = BridgeRunner::new(BridgeRunConfig { episodes: 20, ..BridgeRunConfig::default() })?;
//! let report = runner.run(&mut hal, &mut StepLog::null(), &mut |_| {}).await?;
//! println!("SR {:.2} SPL {:.3}", report.aggregate.sr, report.aggregate.spl);
//! hal.close().await?;
//! # Ok(()) }
//! ```

mod judge;
mod metered;
mod report;

pub use crate::navigator::runner::{PolicyMaker, PolicySetup};
pub use judge::BridgeJudge;
pub use report::{BridgeAggregate, BridgeEpisodeSummary, BridgeRunReport};

use crate::navigator::billing::{BackendSummary, LEDGER_SETTLE};
use crate::navigator::episode::{EpisodeError, PerceptionChoice, PlannerChoice, RunSummary};
use crate::navigator::external::SharedWorker;
use crate::navigator::objectnav_loop::ObjectNavLoopConfig;
use crate::navigator::runner::{Body, Runner, Task};
use crate::navigator::{NavError, StepLog};
use crate::offline::VlmNoise;
use crate::vlm::{CostBudget, LedgerVlm, VisionLanguageModel};
use metered::MeteredBridge;
use nav_hal::HalError;
use nav_hal::arena::Criteria;
use nav_hal::bridge::{BackendInfo, BridgeHal, EpisodeInfo, EpisodeSpec};
use nav_hal::clock::MonotonicClock;
use nav_hal::tap::{SharedTap, Tapped};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

/// The agent radius assumed when neither the backend nor the configuration
/// gives one (Habitat's ObjectNav agent), metres.
pub const DEFAULT_ROBOT_RADIUS_M: f64 = 0.18;

/// Settings of a bridge run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BridgeRunConfig {
    /// Episodes to run (20).
    pub episodes: u32,
    /// Backend index of the first episode (0); episode `k` of the run is
    /// index `first_index + k`.
    pub first_index: u64,
    /// When set, episode `k` is also generated from seed `seed + k`
    /// (backends that generate episodes: MiniWorld, openroom); otherwise
    /// the backend's own seed for the index applies.
    pub seed: Option<u64>,
    /// Which planner decides (offline by default; `vlm` needs a model).
    pub planner: PlannerChoice,
    /// Spatial memory (Navigation Context, map and sightings) on or off.
    pub memory: bool,
    /// Send no images to the model.
    pub text_only: bool,
    /// The agent's radius, metres; default: the backend's report, else
    /// [`DEFAULT_ROBOT_RADIUS_M`].
    pub robot_radius_m: Option<f64>,
    /// Added to the radius for the map's obstacle inflation and the
    /// policy's forward corridor, metres (0.05).
    pub clearance_margin_m: f64,
    /// Noise of the offline VLM stand-in.
    pub vlm_noise: VlmNoise,
    /// The perception stage (`None`: the model's with a VLM planner, else
    /// the bridge's detector boxes).
    pub perception: Option<PerceptionChoice>,
}

impl Default for BridgeRunConfig {
    fn default() -> Self {
        Self {
            episodes: 20,
            first_index: 0,
            seed: None,
            planner: PlannerChoice::Offline,
            memory: true,
            text_only: false,
            robot_radius_m: None,
            clearance_margin_m: 0.05,
            vlm_noise: VlmNoise::default(),
            perception: None,
        }
    }
}

impl BridgeRunConfig {
    /// Checks the fields.
    pub fn validate(&self) -> Result<(), EpisodeError> {
        if self.episodes == 0 {
            return Err(EpisodeError::Spec("episodes must be at least 1".into()));
        }
        if let Some(r) = self.robot_radius_m {
            if !(r.is_finite() && r > 0.0 && r < 5.0) {
                return Err(EpisodeError::Spec(format!("robot_radius_m must be within (0, 5) m, got {r}")));
            }
        }
        if !(self.clearance_margin_m.is_finite() && (0.0..1.0).contains(&self.clearance_margin_m)) {
            return Err(EpisodeError::Spec(format!(
                "clearance_margin_m must be within [0, 1) m, got {}",
                self.clearance_margin_m
            )));
        }
        // episode k is index first_index + k (and seed seed + k): the last one must not wrap
        let last = u64::from(self.episodes - 1);
        if self.first_index.checked_add(last).is_none() {
            return Err(EpisodeError::Spec(format!(
                "first_index {} + {} episodes runs past the largest index {}",
                self.first_index,
                self.episodes,
                u64::MAX
            )));
        }
        if let Some(seed) = self.seed.filter(|s| s.checked_add(last).is_none()) {
            return Err(EpisodeError::Spec(format!(
                "seed {seed} + {} episodes runs past the largest seed {}",
                self.episodes,
                u64::MAX
            )));
        }
        Ok(())
    }

    /// The reset request for episode `k` of the run (indices and seeds
    /// saturate; [`validate`](Self::validate) refuses a run they would wrap in).
    pub fn episode_spec(&self, k: u32) -> EpisodeSpec {
        let mut spec = EpisodeSpec::index(self.first_index.saturating_add(u64::from(k)));
        spec.seed = self.seed.map(|s| s.saturating_add(u64::from(k)));
        spec
    }
}

/// Progress of a run, reported as it happens.
#[derive(Debug)]
#[non_exhaustive]
pub enum BridgeProgress<'a> {
    /// Episode `run_index` (of `of`) was reset.
    Started {
        /// Position in the run, 0-based.
        run_index: u32,
        /// Episodes in the run.
        of: u32,
        /// What the simulator says the episode is.
        episode: &'a EpisodeInfo,
    },
    /// A step of the current episode was executed.
    Step {
        /// Position in the run, 0-based.
        run_index: u32,
        /// Steps so far.
        step: u64,
    },
    /// Episode `run_index` ended.
    Finished {
        /// Episodes in the run.
        of: u32,
        /// Its summary.
        summary: &'a BridgeEpisodeSummary,
    },
}

/// Why a run stopped at its spending limit.
fn cost_limit_reason(b: &CostBudget) -> String {
    format!("--max-cost-usd {} reached (${:.4} spent)", b.limit_usd(), b.spent_usd())
}

/// Runs ObjectNav episodes through a [`BridgeHal`]. See the
/// [module docs](self).
pub struct BridgeRunner {
    config: BridgeRunConfig,
    objectnav: ObjectNavLoopConfig,
    vlm: Option<Arc<dyn VisionLanguageModel>>,
    scene_vlm: Option<Arc<dyn VisionLanguageModel>>,
    grounding: Option<String>,
    policy: Option<(String, PolicyMaker)>,
    call_timeout_s: Option<f64>,
    sensor_tap: Option<SharedTap>,
    budget: Option<Arc<CostBudget>>,
    detector: Option<SharedWorker>,
}

impl std::fmt::Debug for BridgeRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BridgeRunner")
            .field("config", &self.config)
            .field("vlm", &self.vlm.as_ref().map(|v| v.describe()))
            .field("policy", &self.policy.as_ref().map(|(n, _)| n))
            .finish_non_exhaustive()
    }
}

impl BridgeRunner {
    /// A runner with the default loop settings.
    pub fn new(config: BridgeRunConfig) -> Result<Self, EpisodeError> {
        config.validate()?;
        Ok(Self {
            config,
            objectnav: ObjectNavLoopConfig::default(),
            vlm: None,
            scene_vlm: None,
            budget: None,
            grounding: None,
            policy: None,
            call_timeout_s: None,
            sensor_tap: None,
            detector: None,
        })
    }

    /// Hands every sensor reading the loop takes to `tap` (a recording);
    /// output only, the episodes run the same.
    pub fn with_sensor_tap(mut self, tap: Option<SharedTap>) -> Self {
        self.sensor_tap = tap;
        self
    }

    /// ObjectNav loop settings (panorama views, memory parameters, ...);
    /// the step budget is the simulator's own.
    pub fn with_loop_config(mut self, objectnav: ObjectNavLoopConfig) -> Self {
        self.objectnav = objectnav;
        self
    }

    /// The model for `PlannerChoice::Vlm` (and the scene analyzer).
    pub fn with_vlm(mut self, vlm: Arc<dyn VisionLanguageModel>) -> Self {
        self.vlm = Some(vlm);
        self
    }

    /// The scene analyzer's own model (`[scene]`, a separate endpoint)
    /// instead of the planner's.
    pub fn with_scene_vlm(mut self, vlm: Option<Arc<dyn VisionLanguageModel>>) -> Self {
        self.scene_vlm = vlm;
        self
    }

    /// The deadline of every model call, seconds (`--timeout`), instead of
    /// the protocol's and scene analyzer's 8 s.
    pub fn with_call_timeout(mut self, seconds: Option<f64>) -> Self {
        self.call_timeout_s = seconds;
        self
    }

    /// A spending limit (`--max-cost-usd`): once the answered calls cost
    /// it, the episode in progress ends (`cost_limit`) and no further one
    /// starts; the report says so in [`BridgeRunReport::aborted`].
    pub fn with_budget(mut self, budget: Option<Arc<CostBudget>>) -> Self {
        self.budget = budget;
        self
    }

    /// Grounding knowledge for the model's system prompt.
    pub fn with_grounding(mut self, grounding: Option<String>) -> Self {
        self.grounding = grounding;
        self
    }

    /// Uses the policies `factory` builds (one per episode), named `name`
    /// in reports, instead of the default
    /// [`PixelGoalPolicy`](crate::navigator::pixel_policy::PixelGoalPolicy).
    pub fn with_policy(mut self, name: impl Into<String>, factory: PolicyMaker) -> Self {
        self.policy = Some((name.into(), factory));
        self
    }

    /// The detector worker `PerceptionChoice::External` asks (op `detect`,
    /// see [`ExternalGoalPerception`](crate::navigator::external::ExternalGoalPerception)).
    pub fn with_detector(mut self, detector: SharedWorker) -> Self {
        self.detector = Some(detector);
        self
    }

    /// The settings.
    pub fn config(&self) -> &BridgeRunConfig {
        &self.config
    }

    /// The planner's name as reports show it.
    pub fn planner_name(&self) -> String {
        match (self.config.planner, &self.vlm) {
            (PlannerChoice::Vlm, Some(v)) => {
                let i = v.describe();
                format!("vlm:{}/{}", i.provider, i.model)
            }
            (p, _) => p.as_str().to_string(),
        }
    }

    fn policy_name(&self) -> String {
        self.policy.as_ref().map_or_else(|| "pixel-goal".to_string(), |(n, _)| n.clone())
    }

    /// Runs the configured episodes. Errors only for an unusable setup
    /// (`--planner vlm` without a model, a bridge without depth for the
    /// default policy); a failure during an episode ends the run early and
    /// is reported in [`BridgeRunReport::aborted`], with every finished
    /// episode kept.
    pub async fn run(
        &mut self,
        hal: &mut BridgeHal,
        log: &mut StepLog,
        progress: &mut dyn FnMut(BridgeProgress<'_>),
    ) -> Result<BridgeRunReport, EpisodeError> {
        self.check(hal)?;
        let b = hal.backend();
        let mut report = BridgeRunReport {
            backend: b.name.clone(),
            simulator: format!("{} {}", b.simulator, b.simulator_version).trim().to_string(),
            planner: self.planner_name(),
            policy: self.policy_name(),
            memory: self.config.memory,
            requested: self.config.episodes,
            episodes: Vec::new(),
            aggregate: BridgeAggregate::default(),
            aborted: None,
            backends: Vec::new(),
        };
        // the run's bill (report.backends): every model call goes through one
        // ledger; each episode's runner meters its own calls, spending limit
        // and model link on top of it
        let ledger = match (self.config.planner, &self.vlm) {
            (PlannerChoice::Vlm, Some(v)) => Some(Arc::new(LedgerVlm::shared(Arc::clone(v)))),
            _ => None,
        };
        let model = self.vlm.clone();
        if let Some(l) = &ledger {
            self.vlm = Some(Arc::clone(l) as Arc<dyn VisionLanguageModel>);
        }
        for k in 0..self.config.episodes {
            if let Some(b) = self.budget.as_ref().filter(|b| b.reached()) {
                report.aborted = Some(cost_limit_reason(b));
                break;
            }
            let spec = self.config.episode_spec(k);
            let result = self.run_episode(hal, k, &spec, log, progress).await;
            match result {
                Err(EpisodeError::ModelLink(failure)) => {
                    // every further episode would fail the same way: stop the run
                    self.vlm = model;
                    return Err(EpisodeError::ModelLink(failure));
                }
                Ok(summary) => {
                    progress(BridgeProgress::Finished { of: self.config.episodes, summary: &summary });
                    report.episodes.push(summary);
                }
                Err(e) => {
                    // the bridge inherits the credential variables and may echo one
                    let why = crate::vlm::scrub_credentials(&e.to_string());
                    let index = spec.index.map_or_else(String::new, |i| format!(" (index {i})"));
                    report.aborted = Some(format!("episode {}{index}: {why}", k + 1));
                    break;
                }
            }
        }
        self.vlm = model;
        if let Some(ledger) = &ledger {
            let unsettled = ledger.settle(LEDGER_SETTLE).await;
            report.backends = vec![BackendSummary::from_ledger(ledger, unsettled)];
        }
        if let Some(b) = self.budget.as_ref().filter(|b| b.reached()) {
            report.aborted.get_or_insert_with(|| cost_limit_reason(b));
        }
        report.aggregate = BridgeAggregate::of(&report.episodes);
        Ok(report)
    }

    /// Checks that the bridge offers what this setup needs (before the
    /// first reset; the runner checks the rest before each episode's step 1).
    fn check(&self, hal: &BridgeHal) -> Result<(), EpisodeError> {
        use nav_hal::hal::Sensors as _;
        if self.config.planner == PlannerChoice::Vlm && self.vlm.is_none() {
            return Err(EpisodeError::Spec("--planner vlm needs a model (--vlm PROVIDER)".into()));
        }
        if self.config.perception == Some(PerceptionChoice::External) && self.detector.is_none() {
            return Err(EpisodeError::Spec("--perception external needs a detector worker (--detector CMD)".into()));
        }
        if self.policy.is_none() && !hal.capabilities().lidar {
            return Err(EpisodeError::Spec(
                "the default policy needs depth from the bridge (BridgeConfig::depth, and a backend with a depth \
                 sensor): navkit derives its obstacle scans from depth"
                    .into(),
            ));
        }
        Ok(())
    }

    /// The episode runner for an episode the bridge has just reset: the
    /// task the simulator set, the robot's body as the backend reports it,
    /// and this run's settings, model, policy and detector.
    fn runner_for(&self, info: &EpisodeInfo, backend: &BackendInfo, body: Body, success_distance_m: f64) -> Runner {
        let max_steps = info.max_steps.or(backend.max_steps).unwrap_or(self.objectnav.max_steps);
        let mut task = Task::find(info.target_object.clone()).named(info.episode_id.clone());
        task.criteria = Criteria { max_steps, success_distance_m: Some(success_distance_m), ..Criteria::default() };
        let mut runner = Runner::new(task)
            .planner(self.config.planner)
            .memory(self.config.memory)
            .text_only(self.config.text_only)
            .body(body)
            .info("backend", json!(backend.name))
            .info("simulator", json!(format!("{} {}", backend.simulator, backend.simulator_version)))
            .info("episode_id", json!(info.episode_id))
            .info("scene_id", json!(info.scene_id))
            .info("robot_radius_m", json!(body.radius_m));
        runner = match &self.policy {
            Some((name, make)) => runner.policy(name.clone(), Arc::clone(make)),
            None => runner.info("policy", json!(self.policy_name())),
        };
        if let Some(worker) = &self.detector {
            runner = runner.detector(worker.clone());
        }
        let spec = runner.spec_mut();
        spec.vlm = self.vlm.clone();
        spec.scene_vlm = self.scene_vlm.clone();
        spec.call_timeout_s = self.call_timeout_s;
        spec.budget = self.budget.clone();
        spec.grounding = self.grounding.clone();
        spec.objectnav = self.objectnav.clone();
        spec.vlm_noise = self.config.vlm_noise;
        spec.seed = self.config.seed.unwrap_or(0);
        spec.perception = self.config.perception;
        spec.max_steps = Some(max_steps);
        runner
    }

    /// Runs one episode: reset, then the episode [`Runner`] on the bridge
    /// with the [`BridgeJudge`], summarized with the simulator's metrics.
    ///
    /// # Errors
    /// The reset failed, the bridge lacks what the run needs (checked
    /// before step 1), the bridge failed during the episode, or the model
    /// link is broken ([`EpisodeError::ModelLink`]).
    pub async fn run_episode(
        &mut self,
        hal: &mut BridgeHal,
        run_index: u32,
        spec: &EpisodeSpec,
        log: &mut StepLog,
        progress: &mut dyn FnMut(BridgeProgress<'_>),
    ) -> Result<BridgeEpisodeSummary, EpisodeError> {
        let wall = Instant::now();
        let info = hal.reset(spec).await?;
        progress(BridgeProgress::Started { run_index, of: self.config.episodes, episode: &info });
        let backend = hal.backend().clone();
        let radius = self.config.robot_radius_m.or(backend.agent_radius_m).unwrap_or(DEFAULT_ROBOT_RADIUS_M);
        let success_distance_m = info.success_distance_m.filter(|d| d.is_finite() && *d > 0.0).unwrap_or(1.0);
        let body = Body {
            radius_m: radius,
            clearance_m: self.config.clearance_margin_m,
            camera_height_m: backend.camera_height_m,
            hfov_deg: backend.hfov_deg,
            image_size: [backend.width, backend.height],
            step: backend.step,
            // the bridge's scans are made from depth (and bumps)
            scan_from_camera: true,
        };
        let runner = self.runner_for(&info, &backend, body, success_distance_m);
        let clock = MonotonicClock::new();
        let mut on_step = |step: u64| progress(BridgeProgress::Step { run_index, step });
        let mut robot = Tapped::new(MeteredBridge::new(hal), self.sensor_tap.clone());
        let outcome = runner.run_with(&mut robot, Some(&BridgeJudge), &clock, log, &mut on_step).await;
        let meter = robot.into_inner().finish();
        let run = match outcome {
            Ok(run) => run,
            // the simulator ended the episode on its own step limit before the loop's budget ran out
            Err(EpisodeError::Nav(NavError::Hal(HalError::InvalidCommand { .. }))) if hal.episode_done() => {
                RunSummary { steps: hal.steps(), end: "step_limit".into(), ..RunSummary::default() }
            }
            Err(e) => return Err(e),
        };
        let metrics = hal.episode_metrics().cloned();
        Ok(BridgeEpisodeSummary {
            run_index,
            index: info.index,
            episode_id: info.episode_id.clone(),
            scene_id: info.scene_id.clone(),
            target: info.target_object.clone(),
            judged_by_simulator: hal.episode_done() && metrics.is_some(),
            success: metrics.as_ref().is_some_and(|m| m.success),
            spl: metrics.as_ref().map_or(0.0, |m| m.spl),
            distance_to_goal: metrics.as_ref().and_then(|m| m.distance_to_goal),
            sim_metrics: metrics.map(|m| m.extra).unwrap_or_default(),
            end: run.end,
            steps: hal.steps().max(run.steps),
            collisions: meter.collisions,
            planner_calls: run.planner_calls,
            vlm_calls: run.vlm_calls,
            prompt_tokens: run.prompt_tokens,
            completion_tokens: run.completion_tokens,
            cost_usd: run.cost_usd,
            fallbacks: run.fallbacks,
            ababa: run.ababa,
            stuck: run.stuck,
            requests: run.requests,
            fallback_reasons: run.fallback_reasons,
            median_step_round_trip_ms: meter.median_round_trip_ms(),
            median_step_overhead_ms: meter.median_overhead_ms(),
            wall_ms: wall.elapsed().as_secs_f64() * 1000.0,
        })
    }
}
