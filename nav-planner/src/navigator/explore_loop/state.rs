//! The loop state a decision changes, and what one tick writes to the log.

use super::active::Active;
use crate::navigator::EpisodeStats;
use crate::navigator::log::PlannerRecord;
use nav_core::geometry::Pose2;
use nav_core::geometry::compass_deg;
use nav_core::lidar::StampedScan;
use nav_memory::{ActionRecord, ExplorationMemory};
use nav_safety::executor::{ExecutionOutcome, MotionReport, Target};
use nav_safety::tools::GoalSpec;
use nav_safety::{SafetyLayer, ToolCall};
use serde_json::Value;

/// The loop state a decision changes: the safety layer, the exploration
/// memory, the statistics and the action in progress, with what the model
/// hears about the previous one.
pub(super) struct LoopState {
    /// Executor, guard, watchdog, network monitor, scheduler, triggers and
    /// stop arbiter.
    pub(super) safety: SafetyLayer,
    pub(super) memory: ExplorationMemory,
    pub(super) stats: EpisodeStats,
    pub(super) active: Active,
    /// The executed tool call of the action in progress.
    pub(super) outcome: Option<ExecutionOutcome>,
    /// How the action in progress has moved the robot so far.
    pub(super) motion: MotionReport,
    pub(super) prev_action: Option<String>,
    pub(super) prev_result: Option<String>,
    /// Rejected tool calls not yet shown to the model, one line each.
    pub(super) rejected: Vec<String>,
    /// The model called `stop_robot(exploration_complete)`.
    pub(super) complete: bool,
    /// What the operator said, for the next request (then forgotten).
    pub(super) instruction: Option<String>,
}

impl LoopState {
    /// The state at the start of a run, with the safety layer started at
    /// the run's start (the watchdog tiers count from there, not from the
    /// clock's epoch).
    pub(super) fn new(safety: SafetyLayer) -> Self {
        Self {
            safety,
            memory: ExplorationMemory::new(0.0),
            stats: EpisodeStats::default(),
            active: Active::Idle,
            outcome: None,
            motion: MotionReport::default(),
            prev_action: None,
            prev_result: None,
            rejected: Vec::new(),
            complete: false,
            instruction: None,
        }
    }

    /// Closes the action in progress: the executor's feedback becomes the
    /// previous result the model hears and an entry of the exploration
    /// memory's recent actions.
    pub(super) fn finish_active(&mut self, pose: Pose2, now: f64) {
        self.active = Active::Idle;
        let Some(mut out) = self.outcome.take() else { return };
        self.motion.final_pose = Some(pose);
        self.safety.finish(&mut out, &self.motion, now);
        let text = out.result_text();
        let summary = out.feedback.memory_summary();
        self.memory.update_after_action(ActionRecord::new(
            out.call.name(),
            &out.call.args_text(),
            &summary,
            pose.position(),
        ));
        if let Some((direction_deg, reason)) = blocked_direction(&out, pose) {
            self.memory.record_dead_end(direction_deg, reason, pose.position());
        }
        // the action and its own result, together (never the next action's name)
        self.prev_action = Some(format!("{} → {}", out.call.summary(), out.result_line()));
        self.prev_result = Some(text);
        self.motion = MotionReport::default();
    }
}

/// The compass direction (degrees clockwise from north, as the prompt
/// shows dead ends) an action found blocked, and why (`blocked`,
/// `unreachable`, `boxed in`, `no progress`): a `move_toward` or navigation
/// goal that the safety layer refused or stopped, or whose goal proved
/// unreachable, boxed in or made no progress. `None` for anything else (a
/// turn, a stop, a success).
fn blocked_direction(out: &ExecutionOutcome, pose: Pose2) -> Option<(f64, &'static str)> {
    let f = &out.feedback;
    if f.success {
        return None;
    }
    let reason = match f.stopped_reason.as_deref() {
        _ if f.safety_override => "blocked",
        Some("goal_unreachable") => "unreachable",
        Some("boxed_in") => "boxed in",
        Some("no_progress") => "no progress",
        _ => return None,
    };
    let bearing_ccw = match (&out.call, &out.target) {
        (ToolCall::MoveToward { direction, .. }, _) => direction.arc().0,
        (ToolCall::NavigateToGoal { .. }, Target::NavGoal(g)) => {
            pose.relative_bearing(nav_core::geometry::Point2::new(g.x, g.y))
        }
        (ToolCall::NavigateToGoal { goal: GoalSpec::Coordinates { x, y }, .. }, _) => {
            pose.relative_bearing(nav_core::geometry::Point2::new(*x, *y))
        }
        _ => return None,
    };
    Some((compass_deg((pose.yaw + bearing_ccw).to_degrees()), reason))
}

/// What one tick writes to its step-log line besides the pose and the
/// velocity: the events, and the planner call answered this tick.
#[derive(Default)]
pub(super) struct TickLog {
    pub(super) events: Vec<Value>,
    pub(super) planner: Option<PlannerRecord>,
    /// The tool the answered call chose (the record's `action`).
    pub(super) tool: Option<&'static str>,
}

/// What the current tick knows when a decision arrives.
#[derive(Clone, Copy)]
pub(super) struct TickView<'a> {
    pub(super) now: f64,
    pub(super) pose: Pose2,
    pub(super) scan: Option<&'a StampedScan>,
}
