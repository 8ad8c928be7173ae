//! The ObjectNav loop (a VLM planner with the Place–Anchor memory over a
//! PixelNav-style low-level policy): panorama → planner call (at
//! the episode start and whenever the low-level policy stops while
//! `goal_flag == false` or the target is not confirmed; optionally also on
//! STUCK/ABABA) → low-level policy, which asks the perception stage where
//! the target is → discrete actions → DC record with avoid_hint → spatial
//! memory every step (anchors; scene analysis every 20 steps with dwell) →
//! Navigation Context for the next call. Every step is one flushed
//! step-log line.
//!
//! The episode ends with the agent's own STOP, issued only when the planner
//! said `goal_flag == true`, the perception stage puts the target within the
//! stopping distance and the optional stop check agrees. Nothing here reads
//! the simulator's objects: the loop passes sensor data (images, depth,
//! scans, and a simulator's label buffer as an opaque sensor) to the parts
//! that decide.
//!
//! [`ObjectNavLoop::new`] validates the configuration;
//! [`ObjectNavLoop::run`] drives one episode over a robot;
//! [`ObjectNavLoop::with_voice`] lets an operator pause, resume, stop or
//! send the robot home between steps, and talk to the planner.

use super::log::{PlannerRecord, StepRecord};
use super::policy::{LowLevelPolicy, PolicyAction, PolicyGoal, PolicyObservation, PolicyStop};
use super::voice::{GateStep, PAUSE_POLL, VoiceGate, VoiceInbox};
use super::{EpisodeStats, NavError, RunContext};
use crate::protocol::CallRecord;
use crate::protocol::objectnav::{ObjectNavObservation, ObjectNavPlanner, StepObservation};
use crate::protocol::perception::{GoalPerception, PerceptionInput, PerceptionNeeds};
use crate::protocol::scene::{SceneAnalyzer, SceneInput};
use nav_core::action::Action;
use nav_core::doorway::{DoorwayConfig, DoorwayDetector};
use nav_core::geometry::Pose2;
use nav_hal::HalError;
use nav_hal::hal::{CameraFrame, DepthFrame, LabelFrame, Panorama, Robot};
use nav_memory::{MemoryConfig, MemoryEvent, SpatialMemory, StepFlags};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::time::Instant;

/// Settings of the ObjectNav loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ObjectNavLoopConfig {
    /// Step budget (Habitat uses 500).
    /// Range: 1..=1000000.
    pub max_steps: u32,
    /// Give the planner the Navigation Context (memory on).
    pub memory: bool,
    /// The low-level policy plans its approach on a local metric map built
    /// from the range sensor (on); off, it steers on the current scan only
    /// — the "no map" ablation, separate from `memory`.
    pub policy_map: bool,
    /// Spatial memory settings (S, k, N, r, W, place period).
    /// Range: see `MemoryConfig`.
    pub memory_config: MemoryConfig,
    /// Panorama views (PixelNav: 12 × 30°).
    /// Range: 1..=360.
    pub panorama_views: usize,
    /// Also re-plan when the memory reports STUCK or ABABA (see
    /// docs/EVALUATION.md for the measured effect).
    pub replan_on_patterns: bool,
    /// The doorway detector that makes a scene analysis due right after
    /// the robot passes through a door (see `nav_core::doorway`).
    pub doorway: DoorwayConfig,
    /// Planner calls in a row without a step before the loop turns left
    /// on its own to break the tie.
    /// Range: 0..=1000.
    pub max_replans_without_motion: u32,
}

impl Default for ObjectNavLoopConfig {
    fn default() -> Self {
        Self {
            max_steps: 500,
            memory: true,
            policy_map: true,
            memory_config: MemoryConfig::default(),
            panorama_views: 12,
            replan_on_patterns: false,
            doorway: DoorwayConfig::default(),
            max_replans_without_motion: 2,
        }
    }
}

/// How an ObjectNav episode ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectNavEnd {
    /// The agent issued STOP (success is judged by the simulator).
    Stopped,
    /// The step budget ran out.
    StepLimit,
    /// The caller asked the run to end ([`super::Observer::with_halt`]:
    /// a spending limit was reached).
    Halted,
    /// The operator said `stop` ([`ObjectNavLoop::with_voice`]): not a
    /// success.
    OperatorStop,
    /// The operator said `go home`: the search ended, the caller takes the
    /// robot back if it can.
    GoHome,
}

impl ObjectNavEnd {
    /// The snake_case name the run summary and the step log use.
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectNavEnd::Stopped => "stopped",
            ObjectNavEnd::StepLimit => "step_limit",
            ObjectNavEnd::Halted => "halted",
            ObjectNavEnd::OperatorStop => "operator_stop",
            ObjectNavEnd::GoHome => "go_home",
        }
    }
}

/// The result of one ObjectNav episode.
#[derive(Debug)]
pub struct ObjectNavOutcome {
    /// How it ended.
    pub end: ObjectNavEnd,
    /// Counters for the run summary.
    pub stats: EpisodeStats,
    /// The final spatial memory (for snapshots and plots).
    pub memory: SpatialMemory,
    /// Per step (1 …), the memory's place and the ground-truth pose when
    /// the run context's observer has one: what a judge scores the places
    /// against (never read by the loop).
    pub places: Vec<PlaceStep>,
}

/// The memory's place at one step, beside the simulator's ground-truth
/// pose (for scoring only).
#[derive(Debug, Clone, PartialEq)]
pub struct PlaceStep {
    /// The memory's current place.
    pub place_id: u32,
    /// Its normalized type; `None` before the first scene label.
    pub place_type: Option<String>,
    /// The ground-truth pose, when the observer has one.
    pub gt_pose: Option<Pose2>,
}

fn events_json(events: &[MemoryEvent]) -> Vec<Value> {
    events.iter().filter_map(|e| serde_json::to_value(e).ok()).collect()
}

async fn panorama<R: Robot + ?Sized>(robot: &mut R, views: usize) -> Result<Option<Panorama>, HalError> {
    if !robot.capabilities().panorama {
        return Ok(None);
    }
    match robot.panorama(views).await {
        Ok(p) => Ok(Some(p)),
        Err(HalError::Unsupported { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The current view's sensor data a perception stage or scene analyzer
/// asked for (a sensor the robot lacks is left out).
#[derive(Default)]
struct ViewData {
    frame: Option<CameraFrame>,
    depth: Option<DepthFrame>,
    labels: Option<LabelFrame>,
}

async fn view_data<R: Robot + ?Sized>(robot: &mut R, needs: PerceptionNeeds) -> ViewData {
    let caps = robot.capabilities();
    let mut v = ViewData::default();
    if needs.rgb && caps.rgb {
        v.frame = robot.rgb().await.ok();
    }
    if needs.depth && caps.depth {
        v.depth = robot.depth().await.ok();
    }
    if needs.labels {
        v.labels = robot.labels().await.ok();
    }
    v
}

/// The parts an ObjectNav loop decides with: the planner (a VLM protocol
/// or an offline stand-in), the low-level policy, the perception stage and
/// the scene analyzer.
pub struct ObjectNavParts {
    /// Where to go: `{goal_flag, angle, discovered_context}`.
    pub planner: Box<dyn ObjectNavPlanner>,
    /// How to get there: discrete actions until STOP.
    pub policy: Box<dyn LowLevelPolicy>,
    /// Where the target is in the current view (the detector's role, e.g.
    /// Grounding DINO + SAM).
    pub perception: Box<dyn GoalPerception>,
    /// Which place the robot is in, every place period.
    pub scene: Box<dyn SceneAnalyzer>,
}

/// The ObjectNav loop over a robot (see the module docs).
pub struct ObjectNavLoop {
    config: ObjectNavLoopConfig,
    target: String,
    parts: ObjectNavParts,
    /// The operator's voice commands, when enabled.
    voice: Option<VoiceGate>,
}

/// The per-episode state the steps share.
struct RunState {
    memory: SpatialMemory,
    stats: EpisodeStats,
    step: u64,
    pose: Pose2,
    t0: f64,
    need_plan: bool,
    replans_without_motion: u32,
    pending_events: Vec<Value>,
    pending_planner: Option<PlannerRecord>,
    forced: VecDeque<Action>,
    /// The latest planner decision's `goal_flag`.
    goal_flag: bool,
    /// Model time in the current cycle, ms (excluded from the overhead).
    vlm_time_ms: f64,
    /// Notices doorway crossings (scene analysis triggers).
    doorway: DoorwayDetector,
    /// The memory's place per step, for the outcome.
    places: Vec<PlaceStep>,
}

impl ObjectNavLoop {
    /// A loop looking for `target` with `parts`.
    ///
    /// # Errors
    /// [`NavError::InvalidConfig`] naming the key when the configuration is
    /// out of range.
    pub fn new(
        config: ObjectNavLoopConfig,
        target: impl Into<String>,
        parts: ObjectNavParts,
    ) -> Result<Self, NavError> {
        config.validate().map_err(|e| e.under("objectnav"))?;
        Ok(Self { config, target: target.into(), parts, voice: None })
    }

    /// Reads voice commands from `inbox` before every step (each logged as
    /// a `voice` event): `pause` stops the robot and holds the loop until
    /// `resume` (or `explore`), `stop` ends [`ObjectNavEnd::OperatorStop`],
    /// `go home` ends [`ObjectNavEnd::GoHome`], free text goes to the
    /// planner's next call.
    pub fn with_voice(mut self, inbox: VoiceInbox) -> Self {
        self.voice = Some(VoiceGate::new(inbox));
        self
    }

    /// The configuration the loop runs with.
    pub fn config(&self) -> &ObjectNavLoopConfig {
        &self.config
    }

    /// Runs one episode until the agent's STOP or the step budget.
    ///
    /// # Errors
    /// A robot or step-log failure.
    pub async fn run<R: Robot + ?Sized>(
        &mut self,
        robot: &mut R,
        ctx: &mut RunContext<'_, R>,
    ) -> Result<ObjectNavOutcome, NavError> {
        let mut st = self.begin(robot, ctx).await?;
        let end = loop {
            if st.step >= u64::from(self.config.max_steps) {
                break ObjectNavEnd::StepLimit;
            }
            if ctx.observer.halted() {
                robot.stop().await.ok();
                break ObjectNavEnd::Halted;
            }
            if let Some(end) = self.operator(robot, ctx, &mut st).await {
                robot.stop().await.ok();
                // the command that ended the run (and what came with it) is the log's last line
                let record = StepRecord {
                    step: st.step,
                    t_s: ctx.clock.now_s() - st.t0,
                    action: "voice".into(),
                    pose: st.pose.into(),
                    events: std::mem::take(&mut st.pending_events),
                    ..StepRecord::default()
                };
                ctx.log.write(&record)?;
                break end;
            }
            let cycle_start = Instant::now();
            st.vlm_time_ms = 0.0;
            if st.need_plan && st.forced.is_empty() {
                self.replan(robot, &mut st).await?;
            }
            let Some(action) = self.decide(robot, &mut st).await? else { continue };
            self.act(robot, ctx, &mut st, action).await?;
            st.stats.record_overhead(cycle_start.elapsed().as_secs_f64() * 1000.0 - st.vlm_time_ms);
            ctx.observer.step(robot, st.step);
            if action == Action::Stop {
                break ObjectNavEnd::Stopped;
            }
        };
        Ok(ObjectNavOutcome { end, stats: st.stats, memory: st.memory, places: st.places })
    }

    /// The operator's commands before a step: `None` to take it (a pause
    /// is waited out here, the robot stopped once), else how the run ends.
    async fn operator<R: Robot + ?Sized>(
        &mut self,
        robot: &mut R,
        ctx: &RunContext<'_, R>,
        st: &mut RunState,
    ) -> Option<ObjectNavEnd> {
        let gate = self.voice.as_mut()?;
        loop {
            match gate.poll(&mut st.pending_events) {
                GateStep::Go => return None,
                GateStep::Stop => return Some(ObjectNavEnd::OperatorStop),
                GateStep::GoHome => return Some(ObjectNavEnd::GoHome),
                GateStep::Hold { began } => {
                    if began {
                        robot.stop().await.ok();
                    }
                    if ctx.observer.halted() {
                        return Some(ObjectNavEnd::Halted);
                    }
                    tokio::time::sleep(PAUSE_POLL).await;
                }
            }
        }
    }

    async fn begin<R: Robot + ?Sized>(&self, robot: &mut R, ctx: &mut RunContext<'_, R>) -> Result<RunState, NavError> {
        let memory = SpatialMemory::new(self.config.memory_config.clone())?;
        let pose = robot.odometry().await.map(|o| o.pose).unwrap_or_else(|_| Pose2::origin());
        let mut start = StepRecord {
            step: 0,
            t_s: 0.0,
            action: "start".into(),
            pose: memory.pose().into(),
            gt_pose: ctx.observer.gt_pose(robot).map(Into::into),
            place_id: Some(memory.current_place_id().0),
            anchor_id: Some(memory.current_anchor_id().0),
            ..StepRecord::default()
        };
        start.info = ctx.observer.info.clone();
        start.info.insert("target".into(), json!(self.target));
        start.info.insert("memory".into(), json!(self.config.memory));
        ctx.log.write(&start)?;
        Ok(RunState {
            memory,
            stats: EpisodeStats::default(),
            step: 0,
            pose,
            t0: ctx.clock.now_s(),
            need_plan: true,
            replans_without_motion: 0,
            pending_events: Vec::new(),
            pending_planner: None,
            forced: VecDeque::new(),
            goal_flag: false,
            vlm_time_ms: 0.0,
            doorway: DoorwayDetector::new(self.config.doorway.clone()),
            places: Vec::new(),
        })
    }

    /// Calls the planner (or, after too many calls without a step, turns
    /// 60° on its own to break the tie) and resets the policy to the reply.
    async fn replan<R: Robot + ?Sized>(&mut self, robot: &mut R, st: &mut RunState) -> Result<(), NavError> {
        if st.replans_without_motion >= self.config.max_replans_without_motion {
            // the planner keeps choosing a blocked direction: turn 60° ourselves to break the tie,
            // then ask again
            st.replans_without_motion = 0;
            st.pending_events.push(json!({"event": "tie_break_turn"}));
            st.forced.extend([Action::TurnLeft, Action::TurnLeft]);
            return Ok(());
        }
        let caps = robot.capabilities();
        let pano = panorama(robot, self.config.panorama_views).await?;
        let scan = if caps.lidar { robot.scan().await.ok().map(|s| s.scan) } else { None };
        let context = self.config.memory.then(|| st.memory.context(None));
        let instruction = self.voice.as_mut().and_then(VoiceGate::take_instruction);
        let obs = ObjectNavObservation {
            target: &self.target,
            pose: st.pose,
            panorama: pano.as_ref(),
            scan: scan.as_ref(),
            context: context.as_ref(),
            instruction: instruction.as_ref().map(|i| i.as_str()),
        };
        let reply = self.parts.planner.plan(&obs).await;
        st.stats.add_call(&reply.record);
        st.vlm_time_ms += reply.record.latency_ms;
        let d = &reply.decision;
        st.memory.push_dc(d.goal_flag, &d.discovered_context.goal_scene_type, &d.discovered_context.why);
        st.memory.note_heading(d.angle);
        if let Some(reason) = &reply.record.fallback {
            st.pending_events.push(json!({"event": "fallback", "reason": reason}));
        }
        // a call superseded before the robot moved (the policy handed back at once) stays in the log
        if let Some(prev) = st.pending_planner.take() {
            let prev = serde_json::to_value(prev).unwrap_or(Value::Null);
            st.pending_events.push(json!({"event": "replanned", "planner": prev}));
        }
        st.pending_planner = Some(PlannerRecord::of(&reply.record, serde_json::to_value(d).unwrap_or(Value::Null)));
        let goal = PolicyGoal {
            goal_flag: d.goal_flag,
            angle_rad: d.angle.to_radians(),
            target: self.target.clone(),
            distance_hint_m: reply.distance_hint_m,
        };
        self.parts.policy.reset(&goal, st.pose);
        st.goal_flag = d.goal_flag;
        st.need_plan = false;
        st.replans_without_motion += 1;
        Ok(())
    }

    /// The next action: a forced tie-break turn, or the policy's (running
    /// the perception stage when it asks); `None` when the policy handed
    /// back to the planner.
    async fn decide<R: Robot + ?Sized>(
        &mut self,
        robot: &mut R,
        st: &mut RunState,
    ) -> Result<Option<Action>, NavError> {
        // sense for the policy (always, so a simulator's sensor noise draws the same way whatever follows)
        let caps = robot.capabilities();
        let scan = if caps.lidar { robot.scan().await.ok().map(|s| s.scan) } else { None };
        if let Some(a) = st.forced.pop_front() {
            if st.forced.is_empty() {
                st.need_plan = true;
            }
            return Ok(Some(a));
        }
        if st.need_plan {
            return Ok(None);
        }
        let needs = self.parts.policy.needs_view();
        let policy_view = if needs.rgb || needs.depth { view_data(robot, needs).await } else { ViewData::default() };
        let obs = PolicyObservation {
            pose: st.pose,
            scan: scan.as_ref(),
            forward_clearance_m: None,
            frame: policy_view.frame.as_ref(),
            depth: policy_view.depth.as_ref(),
        };
        // a policy may ask to perceive a few times before it acts (never forever)
        let mut decision = PolicyAction::Done(PolicyStop::NoProgress);
        for _ in 0..4 {
            decision = self.parts.policy.act(&obs).await;
            if decision != PolicyAction::Perceive {
                break;
            }
            let view = view_data(robot, self.parts.perception.needs()).await;
            let reply = self.parts.perception.locate(&Self::perception_input(&self.target, &view)).await;
            self.record_perception(st, "perception", &reply.record, json!(reply.sighting));
            self.parts.policy.perceived(reply.sighting.as_ref(), st.pose);
        }
        Ok(match decision {
            PolicyAction::Step(a) => Some(a),
            PolicyAction::Done(PolicyStop::Reached) if st.goal_flag && self.stop_confirmed(robot, st).await => {
                Some(Action::Stop)
            }
            PolicyAction::Done(why) => {
                st.pending_events.push(json!({"event": "policy_stop", "reason": why}));
                st.need_plan = true;
                None
            }
            PolicyAction::Perceive => {
                st.pending_events.push(json!({"event": "policy_stop", "reason": "perceive_loop"}));
                st.need_plan = true;
                None
            }
        })
    }

    fn perception_input<'a>(target: &'a str, view: &'a ViewData) -> PerceptionInput<'a> {
        PerceptionInput { target, frame: view.frame.as_ref(), depth: view.depth.as_ref(), labels: view.labels.as_ref() }
    }

    /// Counts a perception-stage call and logs what it answered.
    fn record_perception(&self, st: &mut RunState, event: &str, record: &CallRecord, answer: Value) {
        st.stats.add_scene_call(record);
        st.vlm_time_ms += record.latency_ms;
        if let Some(reason) = &record.fallback {
            st.stats.fallbacks += 1;
            st.stats.note_fallback(&format!("{event}: {reason}"));
        }
        let mut e = json!({"event": event, "answer": answer});
        if let Some(reason) = &record.fallback {
            e["fallback"] = json!(reason);
        }
        if record.vlm_calls > 0 {
            e["vlm_calls"] = json!(record.vlm_calls);
        }
        st.pending_events.push(e);
    }

    /// The optional stop check of the perception stage; a veto hands back
    /// to the planner (logged).
    async fn stop_confirmed<R: Robot + ?Sized>(&mut self, robot: &mut R, st: &mut RunState) -> bool {
        let view = view_data(robot, self.parts.perception.needs()).await;
        let input = Self::perception_input(&self.target, &view);
        match self.parts.perception.confirm_stop(&input).await {
            None => true,
            Some((ok, record)) => {
                self.record_perception(st, "stop_check", &record, json!(ok));
                ok
            }
        }
    }

    /// Executes `action`, updates the planner's view and the spatial
    /// memory, and writes the step's log line.
    async fn act<R: Robot + ?Sized>(
        &mut self,
        robot: &mut R,
        ctx: &mut RunContext<'_, R>,
        st: &mut RunState,
        action: Action,
    ) -> Result<(), NavError> {
        let caps = robot.capabilities();
        let outcome = robot.act(action).await?;
        if action != Action::Stop {
            st.replans_without_motion = 0;
        }
        st.step += 1;
        st.stats.steps = st.step as u32;
        if let Some(p) = outcome.pose {
            st.pose = p;
        } else if let Ok(o) = robot.odometry().await {
            st.pose = o.pose;
        }
        // what the robot senses after the action, at the pose it is now in
        let scan_after = if caps.lidar { robot.scan().await.ok().map(|s| s.scan) } else { None };
        self.parts.planner.observe(&StepObservation { pose: st.pose, scan: scan_after.as_ref() });
        // a step a safety guard cut short (no contact) did not complete: the memory's dead reckoning skips it
        let blocked = outcome.collided || outcome.blocked.is_some();
        if let Some(why) = &outcome.blocked {
            st.pending_events.push(json!({"event": "step_blocked", "reason": why, "moved_m": outcome.moved_m}));
        }
        let events = self.update_memory(robot, st, action, blocked, scan_after.as_ref()).await;
        let mut ev = std::mem::take(&mut st.pending_events);
        ev.extend(events_json(&events));
        let planner_rec = st.pending_planner.take();
        let gt_pose = ctx.observer.gt_pose(robot);
        let place_type = Some(st.memory.current_place()).filter(|p| p.is_named()).map(|p| p.place_type.clone());
        st.places.push(PlaceStep { place_id: st.memory.current_place_id().0, place_type: place_type.clone(), gt_pose });
        let record = StepRecord {
            step: st.step,
            t_s: ctx.clock.now_s() - st.t0,
            action: action.as_str().to_string(),
            pose: st.memory.pose().into(),
            gt_pose: gt_pose.map(Into::into),
            place_id: Some(st.memory.current_place_id().0),
            place_type,
            anchor_id: Some(st.memory.current_anchor_id().0),
            planner_called: planner_rec.is_some(),
            planner: planner_rec,
            dc_queue: st.memory.dc_queue().iter().cloned().collect(),
            events: ev,
            collided: outcome.collided,
            ..StepRecord::default()
        };
        ctx.log.write(&record)?;
        Ok(())
    }

    /// Memory: anchors every step; scene analysis when the memory says
    /// one is due (the first step, a doorway just crossed, a pending place
    /// switch to confirm, the place period); ABABA / STUCK counted (and
    /// re-planned on, when configured).
    async fn update_memory<R: Robot + ?Sized>(
        &mut self,
        robot: &mut R,
        st: &mut RunState,
        action: Action,
        collided: bool,
        scan: Option<&nav_core::lidar::LaserScan>,
    ) -> Vec<MemoryEvent> {
        let caps = robot.capabilities();
        let doorway = !collided && scan.is_some_and(|s| st.doorway.observe(st.pose, s));
        let scene_obs = if st.memory.scene_trigger(doorway).is_some() {
            let view = view_data(robot, self.parts.scene.needs()).await;
            let fresh_scan = if caps.lidar { robot.scan().await.ok().map(|s| s.scan) } else { None };
            let input = SceneInput {
                frame: view.frame.as_ref(),
                depth: view.depth.as_ref(),
                labels: view.labels.as_ref(),
                scan: fresh_scan.as_ref(),
            };
            let (o, record) = self.parts.scene.analyze(&input).await;
            st.stats.add_scene_call(&record);
            if o.is_none() {
                // a failed or unusable reply: the documented fallback is an unnamed place
                if let Some(reason) = record.errors.first() {
                    st.stats.fallbacks += 1;
                    st.stats.note_fallback(&format!("scene: {reason}"));
                }
            }
            st.stats.scene_calls += 1;
            st.vlm_time_ms += record.latency_ms;
            // an analyzer that could not tell still counts as an analysis (logged, timer restarted)
            Some(o.unwrap_or_default())
        } else {
            None
        };
        // a blocked step did not move the robot: dead reckoning and the anchor rules skip it
        let flags = StepFlags { collided, doorway, ..StepFlags::default() };
        let events = st.memory.observe_step(action, scene_obs, flags);
        for e in &events {
            match e {
                MemoryEvent::Ababa { .. } => {
                    st.stats.ababa += 1;
                    st.need_plan |= self.config.replan_on_patterns;
                }
                MemoryEvent::Stuck { .. } => {
                    st.stats.stuck += 1;
                    st.need_plan |= self.config.replan_on_patterns;
                }
                _ => {}
            }
        }
        events
    }
}
