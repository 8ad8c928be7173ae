//! The ObjectNav loop (seed 000 §5–§6): panorama → planner call (at the
//! episode start and whenever the low-level policy stops while the goal is
//! not reached; optionally also on STUCK/ABABA) → low-level policy →
//! discrete actions → DC record with avoid_hint → spatial memory every step
//! (anchors; scene analysis every 20 steps with dwell) → Navigation Context
//! for the next call. Every step is one flushed step-log line.

use super::log::{PlannerRecord, StepLog, StepRecord};
use super::policy::{LowLevelPolicy, PolicyAction, PolicyGoal, PolicyObservation, PolicyStop};
use super::{EpisodeStats, NavError, Observer};
use crate::protocol::objectnav::{ObjectNavObservation, ObjectNavPlanner, StepObservation};
use crate::protocol::scene::{SceneAnalyzer, SceneInput};
use nav_core::action::Action;
use nav_core::geometry::Pose2;
use nav_core::time::Clock;
use nav_hal::HalError;
use nav_hal::hal::{Detection, Panorama, Robot};
use nav_memory::{MemoryConfig, MemoryEvent, SpatialMemory, StepFlags};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
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
    /// Spatial memory settings (S, k, N, r, W, place period).
    /// Range: see `MemoryConfig`.
    pub memory_config: MemoryConfig,
    /// Panorama views (PixelNav: 12 × 30°).
    /// Range: 1..=360.
    pub panorama_views: usize,
    /// Also re-plan when the memory reports STUCK or ABABA.
    pub replan_on_patterns: bool,
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
            memory_config: MemoryConfig::default(),
            panorama_views: 12,
            replan_on_patterns: false,
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
}

fn events_json(events: &[MemoryEvent]) -> Vec<Value> {
    events.iter().filter_map(|e| serde_json::to_value(e).ok()).collect()
}

async fn panorama_and_detections<R: Robot + ?Sized>(
    robot: &mut R,
    views: usize,
) -> Result<(Option<Panorama>, Vec<Detection>), HalError> {
    let caps = robot.capabilities();
    let pano = if caps.panorama {
        match robot.panorama(views).await {
            Ok(p) => Some(p),
            Err(HalError::Unsupported { .. }) => None,
            Err(e) => return Err(e),
        }
    } else {
        None
    };
    let dets = if caps.detections {
        match robot.detections_around(views).await {
            Ok(d) => d,
            Err(HalError::Unsupported { .. }) => robot.detections().await.unwrap_or_default(),
            Err(e) => return Err(e),
        }
    } else {
        Vec::new()
    };
    Ok((pano, dets))
}

/// Runs one ObjectNav episode for `target` until STOP or the step budget.
#[allow(clippy::too_many_arguments)]
pub async fn run_objectnav<R: Robot + ?Sized>(
    robot: &mut R,
    target: &str,
    planner: &mut dyn ObjectNavPlanner,
    policy: &mut dyn LowLevelPolicy,
    scene: &mut dyn SceneAnalyzer,
    config: &ObjectNavLoopConfig,
    clock: &dyn Clock,
    log: &mut StepLog,
    observer: &mut Observer<'_, R>,
) -> Result<ObjectNavOutcome, NavError> {
    let t0 = clock.now_s();
    let mut memory = SpatialMemory::new(config.memory_config.clone())?;
    let mut stats = EpisodeStats::default();
    let caps = robot.capabilities();
    let mut step: u64 = 0;
    let mut pose = robot.odometry().await.map(|o| o.pose).unwrap_or_else(|_| Pose2::origin());

    let mut start = StepRecord {
        step: 0,
        t_s: 0.0,
        action: "start".into(),
        pose: memory.pose().into(),
        gt_pose: observer.gt_pose(robot).map(Into::into),
        place_id: Some(memory.current_place_id().0),
        anchor_id: Some(memory.current_anchor_id().0),
        ..StepRecord::default()
    };
    start.info = observer.info.clone();
    start.info.insert("target".into(), json!(target));
    start.info.insert("memory".into(), json!(config.memory));
    log.write(&start)?;

    let mut need_plan = true;
    let mut replans_without_motion = 0u32;
    let mut pending_events: Vec<Value> = Vec::new();
    let mut pending_planner: Option<PlannerRecord> = None;
    let mut forced: std::collections::VecDeque<Action> = std::collections::VecDeque::new();
    let end = loop {
        if step >= u64::from(config.max_steps) {
            break ObjectNavEnd::StepLimit;
        }
        let cycle_start = Instant::now();
        let mut vlm_time_ms = 0.0;
        // (re-)plan
        if need_plan && forced.is_empty() {
            if replans_without_motion >= config.max_replans_without_motion {
                // the planner keeps choosing a blocked direction: turn 60° ourselves to break the tie,
                // then ask again
                replans_without_motion = 0;
                pending_events.push(json!({"event": "tie_break_turn"}));
                forced.extend([Action::TurnLeft, Action::TurnLeft]);
            } else {
                let (pano, dets) = panorama_and_detections(robot, config.panorama_views).await?;
                let scan = if caps.lidar { robot.scan().await.ok().map(|s| s.scan) } else { None };
                let context = config.memory.then(|| memory.context(None));
                let obs = ObjectNavObservation {
                    target,
                    pose,
                    panorama: pano.as_ref(),
                    detections: &dets,
                    scan: scan.as_ref(),
                    context: context.as_ref(),
                };
                let reply = planner.plan(&obs).await;
                stats.add_call(&reply.record);
                vlm_time_ms += reply.record.latency_ms;
                let d = &reply.decision;
                memory.push_dc(d.goal_flag, &d.discovered_context.goal_scene_type, &d.discovered_context.why);
                if let Some(reason) = &reply.record.fallback {
                    pending_events.push(json!({"event": "fallback", "reason": reason}));
                }
                // a call superseded before the robot moved (the policy handed back at once) stays in the log
                if let Some(prev) = pending_planner.take() {
                    let prev = serde_json::to_value(prev).unwrap_or(Value::Null);
                    pending_events.push(json!({"event": "replanned", "planner": prev}));
                }
                pending_planner = Some(PlannerRecord {
                    raw: reply.record.raw.clone(),
                    parsed: serde_json::to_value(d).unwrap_or(Value::Null),
                    fallback: reply.record.fallback.clone(),
                    vlm_calls: reply.record.vlm_calls,
                    prompt_tokens: reply.record.usage.prompt_tokens,
                    completion_tokens: reply.record.usage.completion_tokens,
                    latency_ms: reply.record.latency_ms,
                });
                let goal = PolicyGoal {
                    goal_flag: d.goal_flag,
                    angle_rad: d.angle.to_radians(),
                    target: target.to_string(),
                    distance_hint_m: reply.distance_hint_m,
                };
                policy.reset(&goal, pose);
                need_plan = false;
                replans_without_motion += 1;
            }
        }

        // sense for the policy
        let scan = if caps.lidar { robot.scan().await.ok().map(|s| s.scan) } else { None };
        let dets = if caps.detections { robot.detections().await.unwrap_or_default() } else { Vec::new() };
        let obs = PolicyObservation { pose, scan: scan.as_ref(), forward_clearance_m: None, detections: &dets };
        let decided = match forced.pop_front() {
            Some(a) => {
                if forced.is_empty() {
                    need_plan = true;
                }
                PolicyAction::Step(a)
            }
            None if need_plan => continue,
            None => policy.act(&obs).await,
        };
        let action = match decided {
            PolicyAction::Step(a) => a,
            PolicyAction::Done(PolicyStop::Reached) => Action::Stop,
            PolicyAction::Done(why) => {
                pending_events.push(json!({"event": "policy_stop", "reason": why}));
                need_plan = true;
                continue;
            }
        };

        // act
        let outcome = robot.act(action).await?;
        if action != Action::Stop {
            replans_without_motion = 0;
        }
        step += 1;
        stats.steps = step as u32;
        if let Some(p) = outcome.pose {
            pose = p;
        } else if let Ok(o) = robot.odometry().await {
            pose = o.pose;
        }
        // what the robot senses after the action, at the pose it is now in
        let scan_after = if caps.lidar { robot.scan().await.ok().map(|s| s.scan) } else { None };
        let dets_after = if caps.detections { robot.detections().await.unwrap_or_default() } else { Vec::new() };
        planner.observe(&StepObservation { pose, scan: scan_after.as_ref(), detections: &dets_after });

        // memory: anchors every step, scene analysis every place period
        let scene_obs = if memory.scene_due() {
            let frame = if caps.rgb { robot.rgb().await.ok() } else { None };
            let fresh_scan = if caps.lidar { robot.scan().await.ok().map(|s| s.scan) } else { None };
            let fresh_dets = if caps.detections { robot.detections().await.unwrap_or_default() } else { Vec::new() };
            let (o, record) = scene
                .analyze(&SceneInput { frame: frame.as_ref(), detections: &fresh_dets, scan: fresh_scan.as_ref() })
                .await;
            stats.add_scene_call(&record);
            vlm_time_ms += record.latency_ms;
            o
        } else {
            None
        };
        // a blocked step did not move the robot: dead reckoning and the anchor rules skip it
        let flags = StepFlags { collided: outcome.collided, ..StepFlags::default() };
        let events = memory.observe_step(action, scene_obs, flags);
        for e in &events {
            match e {
                MemoryEvent::Ababa { .. } => {
                    stats.ababa += 1;
                    need_plan |= config.replan_on_patterns;
                }
                MemoryEvent::Stuck { .. } => {
                    stats.stuck += 1;
                    need_plan |= config.replan_on_patterns;
                }
                _ => {}
            }
        }
        let mut ev = std::mem::take(&mut pending_events);
        ev.extend(events_json(&events));
        let planner_rec = pending_planner.take();
        let record = StepRecord {
            step,
            t_s: clock.now_s() - t0,
            action: action.as_str().to_string(),
            pose: memory.pose().into(),
            gt_pose: observer.gt_pose(robot).map(Into::into),
            place_id: Some(memory.current_place_id().0),
            anchor_id: Some(memory.current_anchor_id().0),
            planner_called: planner_rec.is_some(),
            planner: planner_rec,
            dc_queue: memory.dc_queue().iter().cloned().collect(),
            events: ev,
            collided: outcome.collided,
            ..StepRecord::default()
        };
        log.write(&record)?;
        stats.record_overhead(cycle_start.elapsed().as_secs_f64() * 1000.0 - vlm_time_ms);
        observer.step(robot, step);
        if action == Action::Stop {
            break ObjectNavEnd::Stopped;
        }
    };
    Ok(ObjectNavOutcome { end, stats, memory })
}
