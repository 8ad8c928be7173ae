//! The episode runner for any robot: [`Runner`] runs one episode of a
//! protocol (objectnav, explore, candidates) on any type that implements
//! the HAL traits ([`nav_hal::hal::Robot`]), with the planner, perception
//! stage, scene analyzer and low-level policy its configuration names, and
//! returns the same [`RunSummary`] — criteria, SR, SPL, calls per request
//! kind, fallbacks with their first reasons — and step log that `nav run`
//! produces (`nav run` goes through it too).
//!
//! Ground truth comes from an optional [`Judge`]: the built-in simulator's
//! is [`SimJudge`]; implement one for your own simulator. Without a judge,
//! the criteria that need ground truth say "not judged".
//!
//! Before step 1 the runner checks that the robot offers every method the
//! configuration calls and that the model answers every request kind it
//! will be sent ([`needs`]); a gap is an [`EpisodeError::Capability`] that
//! names the method (or kind), the robot (or model) and the alternatives.
//! A model link that cannot work (connection refused, DNS, TLS, HTTP 401,
//! 403, 404, or any connection failure before the first reply) halts the
//! loop at its next step; the run then ends with
//! [`EpisodeError::ModelLink`], naming the URL and the cause.
//!
//! ```
//! use nav_hal::arena::Arena;
//! use nav_hal::sim::{SimConfig, SimHal, SimWorld};
//! use nav_planner::navigator::StepLog;
//! use nav_planner::navigator::runner::{Runner, SimJudge, Task};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let arena = Arena::builtin("house_a")?;
//! let mut robot = SimHal::new(SimWorld::new(arena.clone(), SimConfig::default())?);
//! let runner = Runner::new(Task::of_arena(&arena)).max_steps(40);
//! let summary = runner.run(&mut robot, Some(&SimJudge), &mut StepLog::null()).await?;
//! assert!(summary.steps <= 40);
//! println!("SR {} SPL {:.2}", u8::from(summary.success), summary.spl);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod body;
mod judge;
pub mod needs;
pub(crate) mod parts;
mod summary;

pub use body::{Body, PolicyMaker, PolicySetup};
pub use judge::{Judge, SimJudge, Verdict};

use crate::navigator::billing::LEDGER_SETTLE;
use crate::navigator::episode::{
    COST_LIMIT_END, EpisodeError, EpisodeSpec, PerceptionChoice, PlannerChoice, RunSummary, apply_ledger,
};
use crate::navigator::{Observer, RunContext, StepLog};
use crate::protocol::ProtocolKind;
use crate::vlm::calls::{CallJournal, JournalVlm};
use crate::vlm::{CostBudget, LedgerVlm, VisionLanguageModel};
use nav_core::geometry::Pose2;
use nav_core::time::Clock;
use nav_hal::arena::{Arena, Criteria, Goal, Start};
use nav_hal::hal::Robot;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// What an episode asks of the robot: the protocol, the goal and the
/// criteria it is judged by.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// A name for the summary and the log (the arena's, for simulator
    /// episodes).
    pub name: String,
    /// The protocol.
    pub protocol: ProtocolKind,
    /// An object to find (objectnav), a point to reach (candidates), or
    /// none (exploration).
    pub goal: Option<Goal>,
    /// Step limit, collisions allowed, success distance, coverage target.
    pub criteria: Criteria,
    /// The area the robot may map, `[xmin, ymin, xmax, ymax]` metres in its
    /// odometry frame (the candidates protocol's world model; 40 × 40 m
    /// around the start when not given).
    pub bounds: Option<[f64; 4]>,
}

impl Task {
    /// Find an object of class `label` (objectnav).
    pub fn find(label: impl Into<String>) -> Self {
        Self {
            name: "robot".into(),
            protocol: ProtocolKind::Objectnav,
            goal: Some(Goal::Object { label: label.into() }),
            criteria: Criteria::default(),
            bounds: None,
        }
    }

    /// Explore (the explore protocol).
    pub fn explore() -> Self {
        Self {
            name: "robot".into(),
            protocol: ProtocolKind::Explore,
            goal: None,
            criteria: Criteria::default(),
            bounds: None,
        }
    }

    /// The task of a simulator arena under its default protocol (objectnav
    /// for object goals, candidates for point goals, explore otherwise).
    pub fn of_arena(arena: &Arena) -> Self {
        let protocol = match arena.goal {
            Some(Goal::Object { .. }) => ProtocolKind::Objectnav,
            Some(Goal::Point { .. }) => ProtocolKind::Candidates,
            None => ProtocolKind::Explore,
        };
        Self {
            name: arena.name.clone(),
            protocol,
            goal: arena.goal.clone(),
            criteria: arena.criteria,
            bounds: Some(arena.bounds),
        }
    }

    /// Sets the protocol.
    pub fn protocol(mut self, protocol: ProtocolKind) -> Self {
        self.protocol = protocol;
        self
    }

    /// Sets the name.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The task as an arena with no walls: its goal, criteria and bounds
    /// (what the loops read of an arena; nothing of the world).
    fn as_arena(&self) -> Arena {
        Arena {
            name: self.name.clone(),
            description: None,
            bounds: self.bounds.unwrap_or([-20.0, -20.0, 20.0, 20.0]),
            walls: Vec::new(),
            obstacles: Vec::new(),
            objects: Vec::new(),
            rooms: Vec::new(),
            start: Start { x: 0.0, y: 0.0, yaw_deg: 0.0 },
            goal: self.goal.clone(),
            criteria: self.criteria,
        }
    }
}

/// Runs one episode on any robot (see the module docs). The settings are
/// an [`EpisodeSpec`]'s — planner, model, perception, memory, loop
/// configurations — minus the simulator's (its arena is the task; its
/// `sim` settings are not read).
#[derive(Clone)]
pub struct Runner {
    spec: EpisodeSpec,
    extras: parts::Extras,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("spec", &self.spec)
            .field("body", &self.extras.body)
            .field("policy", &self.extras.policy.as_ref().map(|(name, _)| name))
            .finish_non_exhaustive()
    }
}

impl Runner {
    /// A runner for `task` with the defaults: the offline planner, memory
    /// on, label perception for objectnav.
    pub fn new(task: Task) -> Self {
        let mut spec = EpisodeSpec::new(task.as_arena(), task.name.clone());
        spec.protocol = task.protocol;
        Self { spec, extras: parts::Extras::default() }
    }

    /// A runner with every setting of `spec` (its arena is the task).
    pub fn from_spec(spec: EpisodeSpec) -> Self {
        Self { spec, extras: parts::Extras::default() }
    }

    /// The settings.
    pub fn spec(&self) -> &EpisodeSpec {
        &self.spec
    }

    /// The settings, to change any of them.
    pub fn spec_mut(&mut self) -> &mut EpisodeSpec {
        &mut self.spec
    }

    /// Lets `model` plan (the planner becomes [`PlannerChoice::Vlm`]). With
    /// objectnav its perception stage asks the model too, unless
    /// [`Runner::perception`] says otherwise.
    pub fn model(mut self, model: Arc<dyn VisionLanguageModel>) -> Self {
        self.spec.planner = PlannerChoice::Vlm;
        self.spec.vlm = Some(model);
        self
    }

    /// Sets the planner.
    pub fn planner(mut self, planner: PlannerChoice) -> Self {
        self.spec.planner = planner;
        self
    }

    /// Sets the objectnav perception stage.
    pub fn perception(mut self, perception: PerceptionChoice) -> Self {
        self.spec.perception = Some(perception);
        self
    }

    /// Sends the model no images (text only): objectnav then sends no
    /// scene requests, and the planner reads the panorama as text.
    pub fn text_only(mut self, on: bool) -> Self {
        self.spec.text_only = on;
        self
    }

    /// Memory (Navigation Context, DC queue) on or off.
    pub fn memory(mut self, on: bool) -> Self {
        self.spec.memory = on;
        self
    }

    /// Overrides the task's step (cycle, decision) limit.
    pub fn max_steps(mut self, steps: u32) -> Self {
        self.spec.max_steps = Some(steps);
        self
    }

    /// A spending limit for the model calls.
    pub fn budget(mut self, budget: Arc<CostBudget>) -> Self {
        self.spec.budget = Some(budget);
        self
    }

    /// The robot's size, camera and action space: objectnav's map
    /// inflation, default policy and offline stand-in follow it (without
    /// one, the built-in simulator's robot).
    pub fn body(mut self, body: Body) -> Self {
        self.extras.body = Some(body);
        self
    }

    /// Objectnav's low-level policy: `make` builds it for the episode
    /// (instead of the pixel-goal policy), named `name` in the step log.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use nav_planner::navigator::policy::LowLevelPolicy;
    /// use nav_planner::navigator::pixel_policy::{PixelGoalConfig, PixelGoalPolicy};
    /// use nav_planner::navigator::runner::{PolicySetup, Runner, Task};
    ///
    /// let runner = Runner::new(Task::find("chair")).policy(
    ///     "cautious",
    ///     Arc::new(|setup: &PolicySetup| -> Box<dyn LowLevelPolicy> {
    ///         Box::new(PixelGoalPolicy::new(PixelGoalConfig {
    ///             stop_distance_m: (setup.success_distance_m - 0.4).max(0.3),
    ///             ..PixelGoalConfig::default()
    ///         }))
    ///     }),
    /// );
    /// # let _ = runner;
    /// ```
    pub fn policy(mut self, name: impl Into<String>, make: PolicyMaker) -> Self {
        let name = name.into();
        self.extras.info.push(("policy".into(), serde_json::json!(name)));
        self.extras.policy = Some((name, make));
        self
    }

    /// The detector worker that `PerceptionChoice::External` asks (see
    /// [`ExternalGoalPerception`](crate::navigator::external::ExternalGoalPerception)).
    #[cfg(feature = "sim-bridge")]
    pub fn detector(mut self, worker: crate::navigator::external::SharedWorker) -> Self {
        self.extras.detector = Some(worker);
        self
    }

    /// Adds `key: value` to the step log's first record (the simulator,
    /// the episode's id, …).
    pub fn info(mut self, key: impl Into<String>, value: serde_json::Value) -> Self {
        self.extras.info.push((key.into(), value));
        self
    }

    /// Checks the configuration, the robot's methods and the model's request
    /// kinds, as [`Runner::run`] does before step 1.
    ///
    /// # Errors
    /// [`EpisodeError::Config`] or [`EpisodeError::Capability`].
    pub async fn check<R: Robot + ?Sized>(&self, robot: &mut R) -> Result<(), EpisodeError> {
        parts::check_configs(&self.spec)?;
        needs::check(&self.spec, robot).await
    }

    /// Runs the episode on `robot`, judged by `judge` (if any), with a
    /// monotonic clock and no progress callback.
    ///
    /// # Errors
    /// As [`Runner::run_with`].
    pub async fn run<R: Robot + ?Sized>(
        &self,
        robot: &mut R,
        judge: Option<&dyn Judge<R>>,
        log: &mut StepLog,
    ) -> Result<RunSummary, EpisodeError> {
        let clock = nav_hal::clock::MonotonicClock::new();
        self.run_with(robot, judge, &clock, log, &mut |_| {}).await
    }

    /// Runs the episode on `robot`: checks (see [`Runner::check`]), runs
    /// the protocol's loop reading time from `clock`, writing `log` and
    /// calling `progress(step)` after every step, then judges it.
    ///
    /// # Errors
    /// A configuration, capability or robot error before or during the run;
    /// [`EpisodeError::ModelLink`] when the model could not be reached (the
    /// loop ended at its next step, the robot stopped).
    pub async fn run_with<R: Robot + ?Sized>(
        &self,
        robot: &mut R,
        judge: Option<&dyn Judge<R>>,
        clock: &dyn Clock,
        log: &mut StepLog,
        progress: &mut dyn FnMut(u64),
    ) -> Result<RunSummary, EpisodeError> {
        let wall = Instant::now();
        self.check(robot).await?;
        // One halt for the run: a spending limit or a broken model link ends
        // the loop at its next step.
        let halt = Arc::new(AtomicBool::new(false));
        // The run's bill: every model call goes through one ledger, which also
        // counts replies the loop stopped waiting for.
        // Every call is also noted in the step log (kind, request hash, reply), so the log can be replayed.
        let journal = CallJournal::new();
        let journaled = |m: &Arc<dyn VisionLanguageModel>| -> Arc<dyn VisionLanguageModel> {
            Arc::new(JournalVlm::new(Arc::clone(m), journal.clone()))
        };
        let ledger = match (self.spec.planner, &self.spec.vlm) {
            (PlannerChoice::Vlm, Some(v)) => {
                let ledger = LedgerVlm::shared(journaled(v)).with_halt(Arc::clone(&halt));
                Some(Arc::new(match &self.spec.budget {
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
                let scene_vlm = self
                    .spec
                    .scene_vlm
                    .as_ref()
                    .map(|m| Arc::new(l.sibling(journaled(m))) as Arc<dyn VisionLanguageModel>);
                metered_spec = EpisodeSpec {
                    vlm: Some(l.clone() as Arc<dyn VisionLanguageModel>),
                    scene_vlm,
                    ..self.spec.clone()
                };
                &metered_spec
            }
            None => &self.spec,
        };
        let task = &spec.arena;
        let max_steps = spec.max_steps.unwrap_or(task.criteria.max_steps);
        let planner_name = parts::planner_name(spec)?;
        let gt = |r: &R| -> Option<Pose2> { judge.and_then(|j| j.ground_truth_pose(r)) };
        let observer: Observer<'_, R> = Observer::new()
            .with_ground_truth(&gt)
            .with_progress(progress)
            .with_halt(Arc::clone(&halt))
            .with_info("arena", serde_json::json!(task.name))
            .with_info("arena_source", serde_json::json!(spec.arena_source))
            .with_info("protocol", serde_json::json!(spec.protocol.as_str()))
            .with_info("planner", serde_json::json!(planner_name))
            .with_info("seed", serde_json::json!(spec.seed));
        // the world itself only when a judge knows it (nav replay draws it)
        let world = judge.and_then(|j| j.world(robot));
        let observer = match &world {
            Some(w) => observer.with_info("arena_json", serde_json::to_value(w).unwrap_or_default()),
            None => observer,
        };
        // the grounding section every protocol's system prompt carries
        let mut observer = match &spec.grounding {
            Some(g) => observer.with_info("grounding", serde_json::json!(g)),
            None => observer,
        };
        for (key, value) in &self.extras.info {
            observer = observer.with_info(key, value.clone());
        }
        if ledger.is_some() {
            log.attach_journal(journal.clone());
        }
        let mut ctx = RunContext::new(clock, log).with_observer(observer);
        let run = match spec.protocol {
            ProtocolKind::Objectnav => {
                parts::objectnav_episode(spec, task, max_steps, &self.extras, robot, &mut ctx).await?
            }
            ProtocolKind::Candidates => parts::candidates_episode(spec, task, max_steps, robot, &mut ctx).await?,
            ProtocolKind::Explore => {
                parts::explore_episode(spec, max_steps, robot, &mut ctx, Arc::clone(&halt)).await?
            }
        };
        drop(ctx);
        log.detach_journal();
        if let Some(failure) = ledger.as_ref().and_then(|l| l.link_failure()) {
            // the loop has ended (and stopped the robot); nothing more to wait for
            return Err(match failure.divergence {
                Some(mut d) => {
                    d.step = d.step.or(log.last_step());
                    EpisodeError::ReplayDiverged(d)
                }
                None => EpisodeError::ModelLink(failure),
            });
        }
        let verdict = match judge {
            Some(j) => j.verdict(robot).await?,
            None => Verdict::default(),
        };
        let judged = summary::Judged { spec, task, max_steps, planner_name };
        let mut summary = summary::summarize(judged, &verdict, world.as_ref(), run);
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
}
