//! [`SafetyLayer`]: the safety recipe of a VLM control loop as one object
//! (the executor, guard, watchdog, network monitor, scheduler and triggers).
//!
//! It owns every part a loop needs between the model and the motors: the
//! [`SafetyExecutor`] (with its [`ContinuousGuard`], geofence and blocked-
//! action memory), the [`Watchdog`], the [`NetworkMonitor`], the
//! [`CallScheduler`], the [`EventTriggers`] and the [`StopArbiter`]. A loop
//! keeps only the orchestration:
//!
//! - **control, every tick**: [`SafetyLayer::tier`] says which watchdog
//!   tier holds (the loop picks its command for it: the action in progress
//!   in `CONTINUE`, zero in `STOP_WAIT`, its local planner in `LOCAL_NAV`,
//!   the way home in `RETURN_HOME`); [`SafetyLayer::tick`] turns that
//!   command into the velocity to publish: decayed while a decision is
//!   awaited, guarded against the scan (clearances, TTC, geofence; zero
//!   without a usable scan), merged in the stop arbiter, every new
//!   override reported once and counted;
//! - **decisions**: [`SafetyLayer::call_due`] and [`SafetyLayer::schedule`]
//!   (event triggers, the base period, frame skipping, the cooldown after
//!   a refusal), [`SafetyLayer::call_started`] /
//!   [`SafetyLayer::call_finished`] (watchdog, network monitor, latency
//!   statistics), [`SafetyLayer::execute`] / [`SafetyLayer::finish`] (the
//!   executor, refusals counted as overrides) and
//!   [`SafetyLayer::stats_line`] (the per-minute statistics line).
//!
//! The network monitor's tier feeds the watchdog. While a decision is
//! awaited: an API that answers slowly (mean latency above
//! `network.elevated_latency_s`) halves the velocity kept in `CONTINUE`
//! (continue at 50 % speed); an API that is failing (no answer for
//! `network.degraded_after_s` or longer) gets no coasting at all: the tier
//! is at least `STOP_WAIT`. The network monitor's silence counts from the
//! start of the wait for a decision, not from the last answer: time in
//! which nothing was asked (the scheduler chose not to call, a pause) is no
//! silence of the model's, so a wait after a quiet stretch starts in
//! `CONTINUE`. The time thresholds (3 / 10 / 30 s since the wait began)
//! apply as before; the network only ever raises the tier, and never past
//! `STOP_WAIT`.
//!
//! ```
//! use nav_core::geometry::Pose2;
//! use nav_core::lidar::{LaserScan, StampedScan};
//! use nav_safety::{SafetyConfig, SafetyLayer, SafetySensors, Target, ToolCall, WatchdogTier};
//!
//! let mut layer = SafetyLayer::new(SafetyConfig::default(), 0.0)?;
//! // a wall 0.8 m ahead, open elsewhere
//! let mut scan = StampedScan { scan: LaserScan::full_circle(360, 0.05, 12.0, f32::INFINITY), stamp_s: 0.0 };
//! for i in 150..=210 {
//!     scan.scan.ranges[i] = 0.8;
//! }
//! // a decision: the model asked to drive forward fast
//! layer.call_started(Pose2::origin(), 0.0);
//! layer.call_finished(1.2, 1.2, true);
//! let call = ToolCall::parse("move_toward", &serde_json::json!({"direction": "forward", "speed": "fast"}))?;
//! let outcome = layer.execute(&call, &SafetySensors::from_stamped(&scan, Pose2::origin(), 1.2));
//! let Target::Velocity(v) = outcome.target else { return Err("expected a velocity".into()) };
//! assert_eq!(v.linear, 0.08); // downgraded to slow: an override
//! assert_eq!(layer.overrides(), 1);
//! // the control tick: CONTINUE, and the guard lets the slow speed through
//! assert_eq!(layer.tier(1.25).tier, WatchdogTier::Continue);
//! let out = layer.tick(&v, Some(&scan), Pose2::origin(), 1.25);
//! assert_eq!(out.velocity.linear, 0.08);
//! // no scan at all: zero velocity, the stop named, counted
//! let out = layer.tick(&v, None, Pose2::origin(), 1.3);
//! assert_eq!(out.velocity.linear, 0.0);
//! assert!(out.new_overrides[0].reason.contains("no LiDAR scan"));
//! assert!(out.stopped_motion.is_some());
//! assert!(layer.overrides() >= 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::arbiter::{StopArbiter, StopSource};
use crate::config::{SafetyConfig, ScheduleMode};
use crate::error::SafetyError;
use crate::executor::{ExecutionOutcome, MotionReport, SafetyExecutor, SafetySensors};
use crate::guard::{ContinuousGuard, GuardedVelocity, Override, OverrideKind, VelocityTarget};
use crate::network::{NetworkMonitor, NetworkTier};
use crate::schedule::{CallDecision, CallScheduler, ScheduleInput};
use crate::tools::ToolCall;
use crate::triggers::{EventTriggers, TriggerEvent};
use crate::watchdog::{Watchdog, WatchdogTier};
use nav_core::geometry::Pose2;
use nav_core::lidar::{LaserScan, StampedScan};

/// The watchdog tier of a tick, and whether it changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TierUpdate {
    /// The tier in force.
    pub tier: WatchdogTier,
    /// It differs from the previous tick's tier (announce it).
    pub changed: bool,
}

/// What one control tick of the layer gives.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerTick {
    /// The velocity to publish (zero while any stop is active).
    pub velocity: GuardedVelocity,
    /// Overrides that began this tick (each counted once in
    /// [`SafetyLayer::overrides`]; one that lasts many ticks is new once).
    pub new_overrides: Vec<Override>,
    /// A stop cut a moving command: the action in progress ends, and the
    /// model hears why (this override).
    pub stopped_motion: Option<Override>,
}

/// The safety layer of a control loop. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct SafetyLayer {
    executor: SafetyExecutor,
    watchdog: Watchdog,
    network: NetworkMonitor,
    scheduler: CallScheduler,
    triggers: EventTriggers,
    arbiter: StopArbiter,
    /// Since when a decision has been awaited.
    waiting_since: Option<f64>,
    /// A safety override happened: the next decision is due at once.
    after_override: bool,
    /// No decision before this time (the cooldown after a refusal).
    cooldown_until_s: f64,
    /// Why sensing failed this tick (naming the source), if it did.
    sensing_failure: Option<String>,
    last_override_codes: Vec<String>,
    overrides: u32,
    announced: WatchdogTier,
    worst: WatchdogTier,
}

impl SafetyLayer {
    /// A layer for a run starting at `start_s` (the watchdog and the
    /// network monitor count from there).
    ///
    /// # Errors
    ///
    /// The configuration is out of range ([`SafetyConfig::validate`]) or a
    /// geofence zone is malformed.
    pub fn new(config: SafetyConfig, start_s: f64) -> Result<Self, SafetyError> {
        let executor = SafetyExecutor::new(config)?;
        let c = executor.config();
        let mut watchdog = Watchdog::new(c.watchdog.clone());
        watchdog.record_response(start_s);
        Ok(Self {
            watchdog,
            network: NetworkMonitor::new(c.network.clone(), start_s),
            scheduler: CallScheduler::new(c.schedule.clone()),
            triggers: EventTriggers::new(c.triggers.clone()),
            executor,
            arbiter: StopArbiter::default(),
            waiting_since: None,
            after_override: false,
            cooldown_until_s: f64::NEG_INFINITY,
            sensing_failure: None,
            last_override_codes: Vec::new(),
            overrides: 0,
            announced: WatchdogTier::Continue,
            worst: WatchdogTier::Continue,
        })
    }

    /// The parameters.
    pub fn config(&self) -> &SafetyConfig {
        self.executor.config()
    }

    /// The executor (its geofence, its blocked-action memory).
    pub fn executor(&self) -> &SafetyExecutor {
        &self.executor
    }

    /// The executor, to change the geofence or the blocked-action memory.
    pub fn executor_mut(&mut self) -> &mut SafetyExecutor {
        &mut self.executor
    }

    /// The continuous guard (the executor's own).
    pub fn guard(&self) -> &ContinuousGuard {
        self.executor.guard()
    }

    /// The watchdog.
    pub fn watchdog(&self) -> &Watchdog {
        &self.watchdog
    }

    /// The network monitor.
    pub fn network(&self) -> &NetworkMonitor {
        &self.network
    }

    /// The call scheduler (its statistics).
    pub fn scheduler(&self) -> &CallScheduler {
        &self.scheduler
    }

    /// The stop arbiter.
    pub fn arbiter(&self) -> &StopArbiter {
        &self.arbiter
    }

    /// Overrides so far: every stop or slowdown of the guard (once per
    /// episode of it), every sensing failure, and every tool call the
    /// executor modified or refused.
    pub fn overrides(&self) -> u32 {
        self.overrides
    }

    /// The highest watchdog tier reached.
    pub fn worst_tier(&self) -> WatchdogTier {
        self.worst
    }

    /// True while a decision is awaited.
    pub fn is_waiting(&self) -> bool {
        self.waiting_since.is_some()
    }

    /// A safety override or a failed sensor is waiting to be answered by a
    /// decision.
    pub fn after_override(&self) -> bool {
        self.after_override
    }

    /// Sensing at `now_s`: `None` when odometry and the scan arrived,
    /// otherwise why not, naming the source (a stale topic, a LiDAR sensor
    /// fault, the lost link). A failure holds the robot at the next
    /// [`Self::tick`]; no decision can be made on it, so the time counts
    /// toward the watchdog tiers, and a decision is due once sensing is
    /// back.
    pub fn sensing(&mut self, failure: Option<String>, now_s: f64) {
        if failure.is_some() {
            self.await_decision(now_s);
            self.after_override = true;
        }
        self.sensing_failure = failure;
    }

    /// Why sensing failed this tick, if it did.
    pub fn sensing_failure(&self) -> Option<&str> {
        self.sensing_failure.as_deref()
    }

    /// The watchdog tier at `now_s`: the time since the last response, and
    /// while a decision is awaited, at least the tier the network monitor
    /// implies (see the [module docs](self)).
    pub fn tier(&mut self, now_s: f64) -> TierUpdate {
        if self.waiting_since.is_none() {
            self.watchdog.record_response(now_s);
        }
        let mut tier = self.watchdog.tier(now_s);
        if self.waiting_since.is_some() {
            let floor = match self.network.tier(now_s) {
                NetworkTier::Offline | NetworkTier::Degraded => WatchdogTier::StopWait,
                NetworkTier::Normal | NetworkTier::Elevated => WatchdogTier::Continue,
            };
            tier = tier.max(floor);
        }
        self.worst = self.worst.max(tier);
        let changed = tier != self.announced;
        self.announced = tier;
        TierUpdate { tier, changed }
    }

    /// One control tick: `command` (the loop's command for the tier
    /// [`Self::tier`] gave) made safe with the newest `scan` at `pose`.
    /// In `CONTINUE` while a decision is awaited the command decays
    /// (`exp(−t/τ)`, halved while the network is slow); then the guard
    /// (with the geofence) checks it against the scan, or zero velocity
    /// goes out when there is no scan or sensing failed; the stop arbiter
    /// merges every source's stop.
    pub fn tick(&mut self, command: &VelocityTarget, scan: Option<&StampedScan>, pose: Pose2, now_s: f64) -> LayerTick {
        let mut command = *command;
        if self.waiting_since.is_some() && self.announced == WatchdogTier::Continue {
            command = self.watchdog.decay(self.watchdog.elapsed(now_s), &command);
            if self.network.tier(now_s) == NetworkTier::Elevated {
                command.linear *= 0.5;
                command.angular *= 0.5;
            }
        }
        if self.announced == WatchdogTier::StopWait {
            let waited = self.watchdog.elapsed(now_s);
            self.arbiter.request(StopSource::VlmTimeout, format!("no VLM response for {waited:.1} s"));
        } else {
            self.arbiter.release(StopSource::VlmTimeout);
        }
        let mut guarded = match (scan, &self.sensing_failure) {
            (Some(s), None) => self.executor.guard().guard_with_zones(
                &command,
                &s.scan,
                s.age_s(now_s),
                pose,
                self.executor.geofence(),
            ),
            (_, failure) => sensing_failed(&command, failure.as_deref()),
        };
        self.arbiter.observe_guard(&guarded);
        guarded = self.arbiter.apply(guarded);
        let new_overrides = self.count_overrides(&guarded);
        let moving = command.linear != 0.0 || command.angular != 0.0;
        let stopped_motion = if moving { guarded.stop().cloned() } else { None };
        if stopped_motion.is_some() {
            self.after_override = true;
        }
        LayerTick { velocity: guarded, new_overrides, stopped_motion }
    }

    /// The overrides of this tick that were not there the tick before,
    /// counted.
    fn count_overrides(&mut self, guarded: &GuardedVelocity) -> Vec<Override> {
        if guarded.overrides.iter().map(|o| &o.code).eq(self.last_override_codes.iter()) {
            return Vec::new(); // the same overrides as the tick before (a slowdown that lasts)
        }
        let new: Vec<Override> =
            guarded.overrides.iter().filter(|o| !self.last_override_codes.contains(&o.code)).cloned().collect();
        self.overrides += new.len() as u32;
        self.last_override_codes = guarded.overrides.iter().map(|o| o.code.clone()).collect();
        new
    }

    /// The event triggers that fire for `scan` at `pose` and `now_s`.
    pub fn triggers(&mut self, scan: &LaserScan, pose: Pose2, now_s: f64) -> Vec<TriggerEvent> {
        self.triggers.check(scan, pose, now_s)
    }

    /// Whether a decision is due at `now_s`: never during the cooldown
    /// after a refusal; otherwise when nothing is in progress (`idle`), an
    /// event trigger fired, after a safety override, or the base period
    /// has passed since the last call. The fixed-rate loop ([`ScheduleMode::Fixed`]) is due only when the
    /// base period has passed.
    pub fn call_due(&self, now_s: f64, idle: bool, triggers: &[TriggerEvent]) -> bool {
        if now_s < self.cooldown_until_s {
            return false;
        }
        if self.config().schedule.mode == ScheduleMode::Fixed {
            return self.base_period_passed(now_s);
        }
        idle || !triggers.is_empty() || self.after_override || self.base_period_passed(now_s)
    }

    /// The base period has passed since the last call (or there was none).
    pub fn base_period_passed(&self, now_s: f64) -> bool {
        self.scheduler.last_call_s().is_none_or(|t| now_s - t >= self.config().schedule.base_period_s)
    }

    /// The scheduler's verdict on a due decision, counted in its
    /// statistics. With nothing in progress (`idle`) the robot waits for a
    /// decision, so it is always a call ([`CallScheduler::decide_idle`]),
    /// counted like every other; otherwise the scheduler's rules decide
    /// (frame skipping, text-only calls). The fixed-rate loop
    /// ([`ScheduleMode::Fixed`]) always calls.
    pub fn schedule(&mut self, idle: bool, input: ScheduleInput<'_>) -> CallDecision {
        if self.config().schedule.mode == ScheduleMode::Fixed {
            return self.scheduler.decide_fixed(input.now_s);
        }
        let input = ScheduleInput { after_override: self.after_override, ..input };
        if idle { self.scheduler.decide_idle(&input) } else { self.scheduler.decide(&input) }
    }

    /// A decided call made `n` further requests (a perception sub-call's
    /// follow-up, a scene description), finished at `now_s`: they count in
    /// the statistics line as the requests they are.
    pub fn extra_requests(&mut self, now_s: f64, n: u32) {
        self.scheduler.record_requests(now_s, n);
    }

    /// The statistics line of the whole run (every request sent, the
    /// mean rate, triggers, skips, latency), for the end of a run.
    pub fn run_stats_line(&self, now_s: f64) -> String {
        self.scheduler.totals().line(now_s)
    }

    /// A call was made at `pose` at `now_s`: the triggers' reference, and
    /// a decision is awaited from now.
    pub fn call_started(&mut self, pose: Pose2, now_s: f64) {
        self.after_override = false;
        self.triggers.mark_call(pose, now_s);
        self.await_decision(now_s);
    }

    /// A decision is awaited from `now_s` on (unless it already was): the
    /// watchdog counts from the start of the wait.
    fn await_decision(&mut self, now_s: f64) {
        if self.waiting_since.is_none() {
            self.watchdog.record_response(now_s);
            // nothing was asked since the last answer (the scheduler chose not to call): that
            // time is no silence of the model's, so the network monitor counts from here
            self.network.excuse_silence(now_s);
            self.waiting_since = Some(now_s);
        }
    }

    /// A call finished at `now_s` after `latency_s`; `ok` when it gave a
    /// usable decision (a failed call is no response: the watchdog keeps
    /// counting).
    pub fn call_finished(&mut self, now_s: f64, latency_s: f64, ok: bool) {
        self.network.record_call(now_s, latency_s, ok);
        self.scheduler.record_latency(now_s, latency_s);
        if ok {
            self.waiting_since = None;
            self.watchdog.record_response(now_s);
        }
    }

    /// The operator holds the run (a pause, a commanded way home): no
    /// decision is asked for meanwhile, so the time is no model failure. A
    /// decision awaited counts from `now_s` on, and the watchdog sees a
    /// response at `now_s` (its tier goes back to CONTINUE), and the
    /// network monitor no silence.
    pub fn excuse_wait(&mut self, now_s: f64) {
        if let Some(since) = self.waiting_since.as_mut() {
            *since = now_s;
        }
        self.watchdog.record_response(now_s);
        self.network.excuse_silence(now_s);
    }

    /// A decision could not be acted on (e.g. the LiDAR is blind): no new
    /// decision for the refusal cooldown.
    pub fn hold_off(&mut self, now_s: f64) {
        self.cooldown_until_s = now_s + self.config().schedule.refusal_cooldown_s;
    }

    /// Sends a tool call through the executor. A call the executor changed
    /// or refused counts as an override and makes the next decision due at
    /// once; after a refusal, not before the refusal cooldown has passed.
    pub fn execute(&mut self, call: &ToolCall, sensors: &SafetySensors<'_>) -> ExecutionOutcome {
        let out = self.executor.execute(call, sensors);
        if out.feedback.safety_override {
            self.overrides += 1;
            self.after_override = true;
        }
        if out.is_refused() {
            self.hold_off(sensors.now_s);
        }
        out
    }

    /// Completes an outcome once its motion has ended
    /// ([`SafetyExecutor::finish`]).
    pub fn finish(&mut self, outcome: &mut ExecutionOutcome, report: &MotionReport, now_s: f64) {
        self.executor.finish(outcome, report, now_s);
    }

    /// The statistics line (`VLM stats: X calls/min (Y triggered, Z
    /// skipped), avg latency Nms, tier T`) once every statistics window
    /// (60 s), counted from the first call of this method; else `None`.
    pub fn stats_line(&mut self, now_s: f64) -> Option<String> {
        let tier = self.network.tier(now_s);
        self.scheduler.report_due(now_s, tier)
    }
}

/// Zero velocity while sensing fails, with the failure (naming its
/// source) as a sensor-loss override, also for a zero command, so the stop
/// is reported and counted once per failure.
fn sensing_failed(command: &VelocityTarget, failure: Option<&str>) -> GuardedVelocity {
    let why = failure.unwrap_or("no LiDAR scan");
    GuardedVelocity {
        linear: 0.0,
        angular: 0.0,
        overrides: vec![Override {
            kind: OverrideKind::SensorLoss,
            from: if command.linear.is_finite() { command.linear } else { 0.0 },
            to: 0.0,
            code: "sensor_loss".into(),
            reason: format!("Movement stopped: {why}."),
        }],
        clearance_m: None,
        ttc_s: None,
    }
}

#[cfg(test)]
mod tests;
