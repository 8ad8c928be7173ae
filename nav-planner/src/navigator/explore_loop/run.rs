//! One run of the explore loop: its state, and the tick — sense, decide,
//! command, publish, log, pace.

use super::control::{Control, ControlTick, velocity_command};
use super::decision::Decider;
use super::handoff::{Handoffs, TakeBack};
use super::operator::Operator;
use super::schedule::{CallTick, Calls};
use super::sense::Odometer;
use super::state::{LoopState, TickLog};
use super::{ExploreEnd, ExploreLoopConfig, ExploreOutcome, ExploreSignals, Pacing};
use crate::navigator::log::StepRecord;
use crate::navigator::{NavError, RunContext};
use nav_core::geometry::Pose2;
use nav_core::local_map::LocalMap;
use nav_core::time::Clock;
use nav_hal::hal::{Capabilities, Robot, VelocityCommand};
use nav_safety::{GuardedVelocity, SafetyLayer, WatchdogTier};
use serde_json::json;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// One run's state.
pub(super) struct Run {
    /// The loop's configuration, with the robot's steering.
    cfg: ExploreLoopConfig,
    caps: Capabilities,
    /// Loop time at the start.
    t0: f64,
    start_pose: Pose2,
    st: LoopState,
    map: LocalMap,
    control: Control,
    odo: Odometer,
    calls: Calls,
    /// Navigation goals handed to the robot's own stack.
    handoffs: Handoffs,
    /// Ticks so far.
    tick: u64,
    /// The pause signal as last seen (its edges are logged).
    paused: bool,
    /// The operator's voice commands so far.
    operator: Operator,
    /// The next tick's deadline (real-time pacing).
    deadline: tokio::time::Instant,
    /// The watchdog tier and the pose of the last tick.
    last: (WatchdogTier, Pose2),
}

/// What a tick has done by the time it is logged.
struct TickEnd {
    started: Instant,
    pose: Pose2,
    tier: WatchdogTier,
    guarded: GuardedVelocity,
    /// A velocity command went out (not during a real robot's pause).
    published: bool,
}

impl Run {
    /// Sets a run up for `robot`: the safety layer for its steering, the
    /// local map around its start pose.
    ///
    /// # Errors
    ///
    /// [`NavError::Config`] when the configuration does not suit the robot.
    pub(super) async fn start<R: Robot + ?Sized>(
        config: &ExploreLoopConfig,
        robot: &mut R,
        clock: &dyn Clock,
    ) -> Result<Self, NavError> {
        let mut cfg = config.clone();
        let t0 = clock.now_s();
        let caps = robot.capabilities();
        // the robot's own kinematics (differential or Ackermann) bound what the safety layer allows
        cfg.safety.drive = caps.drive;
        let invalid = |e: &dyn std::fmt::Display| NavError::Config(e.to_string());
        let safety = SafetyLayer::new(cfg.safety.clone(), t0).map_err(|e| invalid(&e))?;
        let control = Control::new(&safety, caps.drive);
        let st = LoopState::new(safety);
        let calls = Calls::new();
        let start_pose = robot.odometry().await.map(|o| o.pose).unwrap_or_default();
        let map = LocalMap::new(cfg.map.clone(), start_pose.position()).map_err(|e| invalid(&e))?;
        let handoffs = Handoffs::new(cfg.goal_tolerance_m);
        Ok(Self {
            odo: Odometer::new(start_pose, t0),
            cfg,
            caps,
            t0,
            start_pose,
            st,
            map,
            control,
            calls,
            handoffs,
            tick: 0,
            paused: false,
            operator: Operator::default(),
            deadline: tokio::time::Instant::now(),
            last: (WatchdogTier::Continue, start_pose),
        })
    }

    /// Continues from a saved exploration memory: its clock goes on from
    /// the duration it recorded.
    pub(super) fn resume_memory(&mut self, mut memory: nav_memory::ExplorationMemory) {
        memory.resume(0.0);
        self.st.memory = memory;
    }

    /// Writes step 0: the start pose and the run identity.
    pub(super) fn write_start<R: Robot + ?Sized>(
        &self,
        robot: &R,
        ctx: &mut RunContext<'_, R>,
        planner_name: &str,
    ) -> Result<(), NavError> {
        let mut start = StepRecord { action: "start".into(), pose: self.start_pose.into(), ..StepRecord::default() };
        start.gt_pose = ctx.observer.gt_pose(robot).map(Into::into);
        start.info = ctx.observer.info.clone();
        start.info.insert("planner".into(), json!(planner_name));
        ctx.log.write(&start)?;
        Ok(())
    }

    /// One control tick; `Some` when the run ends.
    ///
    /// # Errors
    ///
    /// The robot failed or the step log could not be written.
    pub(super) async fn tick<R: Robot + ?Sized>(
        &mut self,
        decider: &mut Decider,
        signals: &ExploreSignals,
        robot: &mut R,
        ctx: &mut RunContext<'_, R>,
    ) -> Result<Option<ExploreEnd>, NavError> {
        let now = ctx.clock.now_s();
        let elapsed = now - self.t0;
        let mut out = TickLog::default();
        self.operator.apply(signals, &mut self.st, self.tick == 0, &mut out.events);
        if let Some(end) = self.ended_before(signals, elapsed) {
            return Ok(Some(end));
        }
        let started = Instant::now();
        self.st.memory.update_time(elapsed);
        let sensed = self.odo.sense(robot, now, &mut self.st, &mut out).await;
        if let Some(s) = &sensed.scan {
            if self.tick % 2 == 0 {
                self.map.integrate(sensed.pose, &s.scan);
            }
        }
        let paused = signals.pause.load(Ordering::SeqCst);
        let going_home = self.operator.going_home;
        if paused || going_home {
            // the operator holds the run: no decision is asked for, so no model failure either
            self.st.safety.excuse_wait(now);
        }
        let calls = CallTick {
            cfg: &self.cfg,
            caps: &self.caps,
            now,
            elapsed,
            sensed: &sensed,
            distance_m: self.odo.distance,
            paused: paused || going_home || self.operator.stop,
        };
        self.calls.collect(decider, &calls, &mut self.st, &mut out);
        self.calls.maybe_call(decider, robot, &calls, &mut self.st, &self.map, &mut out).await;
        if let Some(line) = self.st.safety.stats_line(now) {
            // the seed's per-minute decision statistics (task 5.5)
            tracing::info!("{line}");
            out.events.push(json!({"event": "vlm_stats", "line": line}));
        }

        self.handoffs.before_control(robot, &mut self.st, sensed.pose, now, &mut out.events).await;
        // while the robot's stack drives, the command below is the motion odometry reports
        let handed_over = self.st.active.handed_over();
        let t = ControlTick { cfg: &self.cfg, now, sensed: &sensed, home: self.start_pose.position(), paused };
        // the operator's way home is RETURN_HOME without a model outage
        let tier =
            if going_home { WatchdogTier::ReturnHome } else { self.control.tier(&mut self.st, now, &mut out.events) };
        let command = self.control.command(tier, &t, &mut self.st, &mut self.map, &mut out.events);
        let mut guarded = self.control.guard(&command, &t, &mut self.st, &mut out.events);
        let stopping = paused || self.operator.stop || signals.shutdown.load(Ordering::SeqCst);
        let take_back =
            TakeBack { guarded: &guarded, stopping, tier: (tier != WatchdogTier::Continue).then(|| tier.as_str()) };
        let published =
            if self.handoffs.after_guard(robot, &mut self.st, take_back, sensed.pose, now, &mut out.events).await {
                // the robot's own stack drives: nothing is published, odometry measures the motion
                self.odo.motion_from_odometry = true;
                false
            } else {
                if handed_over {
                    // taken back this tick: the guarded value is the stack's motion, not a command
                    guarded = GuardedVelocity { linear: 0.0, angular: 0.0, ..guarded };
                }
                let cmd = velocity_command(&guarded, stopping, self.cfg.tick_s);
                self.publish_or_pause(robot, cmd, paused, &mut out).await?
            };

        let end = TickEnd { started, pose: sensed.pose, tier, guarded, published };
        self.last = (tier, sensed.pose);
        self.log_step(robot, ctx, &end, out)?;
        self.pace().await;
        Ok(self.ended_after(&end))
    }

    /// Publishes the tick's command, except during a pause (e.g. a
    /// voice override: another node drives the robot meanwhile). On a real
    /// robot (its `drive` publishes and returns at once) a pause sends one
    /// zero-velocity burst (the HAL's stop) when it begins and then
    /// nothing until it ends; a simulator, whose clock advances only
    /// through `drive`, keeps stepping with zero velocity. False when
    /// nothing was published.
    async fn publish_or_pause<R: Robot + ?Sized>(
        &mut self,
        robot: &mut R,
        cmd: VelocityCommand,
        paused: bool,
        out: &mut TickLog,
    ) -> Result<bool, NavError> {
        if paused != self.paused {
            self.paused = paused;
            let event = if paused { "paused" } else { "resumed" };
            out.events.push(json!({"event": event}));
            if paused && self.odo.motion_from_odometry {
                robot.stop().await.ok();
            }
        }
        if paused && self.odo.motion_from_odometry {
            return Ok(false);
        }
        self.control.publish(robot, cmd, &mut self.st, &mut self.odo, &mut out.events).await?;
        Ok(true)
    }

    /// Cancels a goal still with the robot's own stack (the run ends).
    pub(super) async fn close_handoff<R: Robot + ?Sized>(&mut self, robot: &mut R) {
        let mut events = Vec::new();
        self.handoffs.close(robot, &mut events).await;
    }

    /// The ends checked before a tick: shutdown, the time budget (a model
    /// outage when the model had stopped answering), and exploration
    /// complete (once the last action is done).
    fn ended_before(&self, signals: &ExploreSignals, elapsed: f64) -> Option<ExploreEnd> {
        if signals.shutdown.load(Ordering::SeqCst) {
            Some(ExploreEnd::Shutdown)
        } else if elapsed >= self.cfg.max_time_s {
            Some(self.budget_end(ExploreEnd::TimeLimit, self.last.0))
        } else if self.st.complete && self.cfg.stop_when_complete && self.st.active.is_idle() {
            Some(ExploreEnd::Complete)
        } else {
            None
        }
    }

    /// The ends checked after a tick: the operator's stop (its zero
    /// velocity is out), home again on the operator's way home or in
    /// RETURN_HOME (the model stopped answering), and the decision budget
    /// spent with nothing left to do or wait for.
    fn ended_after(&self, end: &TickEnd) -> Option<ExploreEnd> {
        if self.operator.stop {
            Some(ExploreEnd::OperatorStop)
        } else if self.operator.going_home && self.at_home(end.pose) {
            Some(ExploreEnd::ReturnedHome)
        } else if end.tier == WatchdogTier::ReturnHome && self.at_home(end.pose) {
            Some(ExploreEnd::ModelUnavailable)
        } else if self.st.stats.planner_calls >= self.cfg.max_decisions
            && self.calls.pending.is_none()
            && self.st.active.is_idle()
        {
            Some(self.budget_end(ExploreEnd::DecisionLimit, end.tier))
        } else {
            None
        }
    }

    /// A budget's end, or a model outage when the watchdog was at
    /// RETURN_HOME (the model had stopped answering) as the budget ran out.
    fn budget_end(&self, budget: ExploreEnd, tier: WatchdogTier) -> ExploreEnd {
        if tier == WatchdogTier::ReturnHome { ExploreEnd::ModelUnavailable } else { budget }
    }

    /// Within the goal tolerance of the start pose.
    fn at_home(&self, pose: Pose2) -> bool {
        pose.position().distance(self.start_pose.position()) <= self.cfg.goal_tolerance_m
    }

    /// Counts the tick and writes its step-log line.
    fn log_step<R: Robot + ?Sized>(
        &mut self,
        robot: &R,
        ctx: &mut RunContext<'_, R>,
        end: &TickEnd,
        out: TickLog,
    ) -> Result<(), NavError> {
        self.tick += 1;
        self.st.stats.steps = self.tick as u32;
        let local_ms = end.started.elapsed().as_secs_f64() * 1000.0;
        let model_ms = out.planner.as_ref().map_or(0.0, |p| p.latency_ms);
        self.st.stats.record_overhead(local_ms - model_ms);
        let record = StepRecord {
            step: self.tick,
            t_s: ctx.clock.now_s() - self.t0,
            action: out.tool.unwrap_or("drive").to_string(),
            pose: end.pose.into(),
            gt_pose: ctx.observer.gt_pose(robot).map(Into::into),
            planner_called: out.planner.is_some(),
            planner: out.planner,
            events: out.events,
            velocity: end.published.then_some([end.guarded.linear, end.guarded.angular]),
            ..StepRecord::default()
        };
        ctx.log.write(&record)?;
        ctx.observer.step(robot, self.tick);
        Ok(())
    }

    /// Waits for the next tick. Real time: absolute deadlines `tick_s`
    /// apart (one late tick is caught up; a longer stall is skipped rather
    /// than burst out). Simulated: as fast as the CPU allows, except while a
    /// call is in flight, when each tick waits `tick_s / time_scale`.
    async fn pace(&mut self) {
        match self.cfg.pacing {
            Pacing::RealTime => {
                let period = Duration::from_secs_f64(self.cfg.tick_s.max(1e-3));
                self.deadline += period;
                let late = tokio::time::Instant::now();
                if self.deadline + period < late {
                    // more than a tick behind: skip the missed ticks rather than burst them out
                    self.deadline = late;
                }
                tokio::time::sleep_until(self.deadline).await;
            }
            Pacing::Simulated { time_scale } => {
                if self.calls.pending.is_some() {
                    let s = self.cfg.tick_s / time_scale.max(1e-3);
                    tokio::time::sleep(Duration::from_secs_f64(s)).await;
                } else {
                    tokio::task::yield_now().await;
                }
            }
        }
    }

    /// The outcome of the run, ended at loop time `now`; the run's
    /// statistics line is logged.
    pub(super) fn finish(self, end: ExploreEnd, now: f64) -> ExploreOutcome {
        let at_home = self.at_home(self.last.1);
        let stats_line = self.st.safety.run_stats_line(now);
        tracing::info!("{stats_line}");
        let st = self.st;
        let mut stats = st.stats;
        stats.safety_overrides = st.safety.overrides();
        ExploreOutcome {
            at_home,
            stats_line,
            end,
            stats,
            memory: st.memory,
            collisions: self.control.collisions,
            worst_tier: st.safety.worst_tier(),
        }
    }
}
