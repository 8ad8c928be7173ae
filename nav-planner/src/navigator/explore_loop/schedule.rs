//! The decision task's side of a tick: collect the reply to the call in
//! flight, and, when none is, decide whether a call is due (the action in
//! progress finished, an event trigger, a safety override, the base
//! period; the [`CallScheduler`](nav_safety::CallScheduler)'s frame
//! skipping), take the snapshot and hand it to the planner.

use super::ExploreLoopConfig;
use super::decision::{Decider, Dispatch, PendingCall};
use super::sense::Sensed;
use super::state::{LoopState, TickLog};
use super::{frontier_list, memory_frontiers};
use crate::protocol::explore::ExploreSnapshot;
use nav_core::lidar::LaserScan;
use nav_core::lidar::{LidarConfig, LidarSummary};
use nav_core::local_map::LocalMap;
use nav_core::similarity::Thumbnail;
use nav_hal::hal::{CameraFrame, Capabilities, Robot};
use nav_safety::{CallDecision, ScheduleInput};
use serde_json::json;

/// The calls of one run: the one in flight and the frame of the last call
/// (for frame skipping); the triggers and the scheduler are the safety
/// layer's.
pub(super) struct Calls {
    /// The call in flight (at most one).
    pub(super) pending: Option<PendingCall>,
    last_thumb: Option<Thumbnail>,
    lidar: LidarConfig,
}

/// What a call is made from this tick.
pub(super) struct CallTick<'a> {
    pub(super) cfg: &'a ExploreLoopConfig,
    pub(super) caps: &'a Capabilities,
    pub(super) now: f64,
    /// Seconds since the run started.
    pub(super) elapsed: f64,
    pub(super) sensed: &'a Sensed,
    /// Distance travelled since the start, m.
    pub(super) distance_m: f64,
    /// The pause signal as read this tick.
    pub(super) paused: bool,
}

impl Calls {
    /// No call yet.
    pub(super) fn new() -> Self {
        Self { pending: None, last_thumb: None, lidar: LidarConfig::default() }
    }

    /// Applies the reply to the call in flight, if it has arrived.
    pub(super) fn collect(&mut self, decider: &mut Decider, t: &CallTick<'_>, st: &mut LoopState, out: &mut TickLog) {
        if let Some((reply, call)) = decider.poll(&mut self.pending) {
            st.apply_reply(reply, &call, &t.sensed.view(t.now), out, t.cfg.path_speed_mps);
        }
    }

    /// Starts a call when none is in flight and one is due; an instant
    /// planner's reply is applied at once.
    pub(super) async fn maybe_call<R: Robot + ?Sized>(
        &mut self,
        decider: &mut Decider,
        robot: &mut R,
        t: &CallTick<'_>,
        st: &mut LoopState,
        map: &LocalMap,
        out: &mut TickLog,
    ) {
        if self.pending.is_some() || t.paused || st.complete || st.stats.planner_calls >= t.cfg.max_decisions {
            return;
        }
        if st.active.is_recovering() {
            return; // a boxed-in back-out runs to its end, then hands back
        }
        let (pose, now) = (t.sensed.pose, t.now);
        // a blind LiDAR (a sensor fault) is no reason to stay silent: the model is told, once per
        // base period at most, that the robot is held and why, and offered no frontiers
        let blind = if t.sensed.blind { t.sensed.failure.clone() } else { None };
        let (scan, trig, idle) = match (&t.sensed.scan, &blind) {
            (Some(s), _) => (Some(&s.scan), st.safety.triggers(&s.scan, pose, now), st.active.is_idle()),
            (None, Some(_)) if st.safety.base_period_passed(now) => (None, Vec::new(), true),
            (None, _) => return,
        };
        if !st.safety.call_due(now, idle, &trig) {
            return;
        }
        let frame = if t.cfg.use_camera && t.caps.rgb { robot.rgb().await.ok() } else { None };
        let thumb = frame.as_ref().map(|f| Thumbnail::from_frame(&f.frame));
        let similarity = match (&thumb, &self.last_thumb) {
            (Some(a), Some(b)) => Some(a.similarity(b)),
            _ => None,
        };
        let nearest = scan.map_or(0.0, |s| f64::from(LidarSummary::from_scan(s, &self.lidar).nearest_m()));
        let input = ScheduleInput {
            now_s: now,
            triggers: &trig,
            similarity,
            nearest_obstacle_m: nearest,
            after_override: false,
            goal_progressing: st.active.goal_progressing(now),
        };
        match st.safety.schedule(idle, input) {
            CallDecision::Call { text_only, reasons } => {
                st.safety.call_started(pose, now);
                if thumb.is_some() {
                    self.last_thumb = thumb;
                }
                let view = SnapshotView { scan, fault: blind, frame, text_only };
                let snap = snapshot(robot, t, st, map, view).await;
                match decider.dispatch(snap, now).await {
                    Dispatch::Answered(reply, call) => {
                        out.events.push(json!({"event": "planner_call", "reasons": reasons}));
                        st.apply_reply(*reply, &call, &t.sensed.view(now), out, t.cfg.path_speed_mps);
                    }
                    Dispatch::Sent(call) => {
                        out.events.push(json!({"event": "planner_call", "reasons": reasons}));
                        self.pending = Some(call);
                    }
                    Dispatch::Refused => {}
                }
            }
            CallDecision::Skip { reason } => out.events.push(json!({"event": "call_skipped", "reason": reason})),
            CallDecision::Wait => {}
        }
    }
}

/// Radius around the robot taken as "the room it is in" for the room's
/// explored percentage, metres (walls bound it first).
const ROOM_RADIUS_M: f64 = 3.0;

/// The current room's explored percentage from the map: the observed share
/// of the space around the robot that walls enclose
/// ([`explored_fraction_around`](nav_core::grid::OccupancyGrid::explored_fraction_around)).
/// It never goes down: a room once seen stays seen.
fn update_room_coverage(st: &mut LoopState, map: &LocalMap, pose: nav_core::geometry::Pose2) {
    let Some(f) = map.grid().explored_fraction_around(pose.position(), ROOM_RADIUS_M) else { return };
    let room = st.memory.current_room().to_string();
    let before = st.memory.rooms().iter().find(|r| r.name == room).map_or(0.0, |r| r.explored_pct);
    st.memory.set_explored_pct(&room, (f * 100.0).max(before));
}

/// The exploration memory's prompt text leaves out the frontiers (the
/// prompt lists them with their ids) and its latest action when that is
/// the previous action the prompt shows with its full result.
fn memory_parts(st: &LoopState) -> nav_memory::PromptParts {
    let latest = st.memory.recent_actions().last();
    let shown = match (st.prev_action.as_deref(), latest) {
        (Some(prev), Some(a)) => prev.starts_with(&format!("{}({}) →", a.action, a.params)),
        _ => false,
    };
    nav_memory::PromptParts { without_frontiers: true, without_latest_action: shown }
}

/// What a snapshot is taken from besides the robot's state: the scan
/// (none when the LiDAR is blind, with the fault), the camera frame, and
/// whether the call is text-only.
struct SnapshotView<'a> {
    scan: Option<&'a LaserScan>,
    fault: Option<String>,
    frame: Option<CameraFrame>,
    text_only: bool,
}

/// The snapshot a call sends: the robot's state and sensors (the depth
/// image unless the call is text-only, ground-truth detections where the
/// robot has them), the previous action's result, the exploration memory
/// and the reachable frontiers (which also go to the memory). A blind
/// LiDAR sends an empty scan, no frontiers, and the fault.
async fn snapshot<R: Robot + ?Sized>(
    robot: &mut R,
    t: &CallTick<'_>,
    st: &mut LoopState,
    map: &LocalMap,
    view: SnapshotView<'_>,
) -> ExploreSnapshot {
    let s = t.sensed;
    let text_only = view.text_only;
    let depth = if t.cfg.use_camera && t.caps.depth && !text_only { robot.depth().await.ok() } else { None };
    let detections = if t.caps.detections { robot.detections().await.unwrap_or_default() } else { Vec::new() };
    let frontiers = if view.scan.is_some() { frontier_list(map, s.pose) } else { Vec::new() };
    if view.scan.is_some() {
        st.memory.update_frontiers(memory_frontiers(&frontiers, s.pose));
        update_room_coverage(st, map, s.pose);
    }
    let frame = view.frame;
    let hfov = frame.as_ref().map_or(std::f64::consts::FRAC_PI_2, |f| f.hfov_rad);
    let no_scan = || LaserScan { ranges: Vec::new(), ..LaserScan::full_circle(1, 0.0, 0.0, f32::NAN) };
    ExploreSnapshot {
        pose: s.pose,
        speed_mps: s.speed_mps,
        distance_traveled_m: t.distance_m,
        elapsed_s: t.elapsed,
        coverage: None,
        scan: view.scan.cloned().unwrap_or_else(no_scan),
        scan_age_s: s.scan_age(t.now),
        image: frame.map(|f| f.frame),
        depth,
        hfov_rad: hfov,
        previous_action: st.prev_action.clone(),
        previous_result: st.prev_result.clone(),
        in_progress: st.outcome.as_ref().filter(|_| !st.active.is_idle()).map(|o| o.call.summary()),
        rejected: std::mem::take(&mut st.rejected),
        memory_text: st.memory.prompt_text(memory_parts(st)),
        frontiers,
        detections,
        text_only,
        sensor_fault: view.fault,
        instruction: st.instruction.take(),
    }
}
