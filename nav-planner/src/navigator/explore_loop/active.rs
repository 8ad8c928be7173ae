//! The action in progress and how the control task follows it: a timed
//! velocity, a navigation goal along an A* path, a hold.

use crate::navigator::pursuit::Pursuit;
use nav_core::geometry::{Point2, Pose2};
use nav_core::lidar::LaserScan;
use nav_core::local_map::LocalMap;
use nav_safety::executor::MotionReport;
use nav_safety::{ContinuousGuard, VelocityTarget};
use serde_json::{Value, json};

/// What the control task is doing.
#[derive(Debug, Clone)]
pub(crate) enum Active {
    /// Nothing: the robot holds still until the next decision.
    Idle,
    /// A timed velocity.
    Velocity { v: VelocityTarget, started_s: f64 },
    /// A navigation goal.
    Goal(GoalRun),
    /// Standing still until a time (an observation).
    Hold { until_s: f64 },
}

/// A navigation goal being followed.
#[derive(Debug, Clone)]
pub(crate) struct GoalRun {
    goal: Point2,
    deadline_s: f64,
    /// The A* path, replanned every second.
    path: Vec<Point2>,
    replanned_s: f64,
    /// Where the robot last made progress (moved 0.1 m) …
    progress_at: Point2,
    /// … and when.
    progress_s: f64,
    /// Backing out after the path follower found itself boxed in: where
    /// the back-out started.
    backing_from: Option<Point2>,
    /// Who drives to it: the robot's own navigation stack, or this loop.
    pub(crate) handoff: Handoff,
}

/// Who drives a navigation goal (see the `handoff` module).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Handoff {
    /// Not offered to the robot yet.
    Untried,
    /// The robot's own stack (Nav2) drives; the loop publishes nothing.
    Robot,
    /// The loop follows its own A* path.
    Own,
}

/// A goal counts as progressing while its last 0.1 m of progress is at most
/// this old, s.
const GOAL_PROGRESS_WINDOW_S: f64 = 1.5;
/// A boxed-in goal backs out this far before handing back, m.
const BACK_OUT_M: f64 = 0.4;
/// A back-out that has not moved 0.1 m for this long ends, s.
const BACK_OUT_STALL_S: f64 = 2.0;

impl GoalRun {
    /// A goal at `goal` started from `pose` at `now`; its deadline allows
    /// 15 s plus three times the straight-line time at `speed`.
    pub(crate) fn new(goal: Point2, pose: Pose2, now: f64, speed: f64) -> Self {
        let deadline_s = now + 15.0 + 3.0 * pose.position().distance(goal) / speed.max(0.01);
        Self {
            goal,
            deadline_s,
            path: Vec::new(),
            replanned_s: f64::NEG_INFINITY,
            progress_at: pose.position(),
            progress_s: now,
            backing_from: None,
            handoff: Handoff::Untried,
        }
    }

    /// Where the goal is.
    pub(crate) fn goal(&self) -> Point2 {
        self.goal
    }

    /// When the goal times out, loop time.
    pub(crate) fn deadline_s(&self) -> f64 {
        self.deadline_s
    }
}

/// Why a navigation goal stopped short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GoalShortfall {
    /// No 0.1 m of progress in 4 s.
    NoProgress,
    /// The deadline passed.
    Timeout,
    /// A* found no path.
    Unreachable,
    /// No room to turn toward the goal either way; the robot backed out.
    BoxedIn,
}

impl GoalShortfall {
    /// The code the executor's feedback reports (`interrupted`).
    fn code(self) -> &'static str {
        match self {
            GoalShortfall::NoProgress => "no_progress",
            GoalShortfall::Timeout => "navigation_timeout",
            GoalShortfall::Unreachable => "goal_unreachable",
            GoalShortfall::BoxedIn => "boxed_in",
        }
    }

    /// The step-log event.
    fn event(self) -> &'static str {
        match self {
            GoalShortfall::NoProgress => "goal_no_progress",
            GoalShortfall::Timeout => "goal_timeout",
            GoalShortfall::Unreachable => "goal_unreachable",
            GoalShortfall::BoxedIn => "goal_boxed_in",
        }
    }

    /// Records the shortfall in the action's motion report and the log.
    fn record(self, motion: &mut MotionReport, events: &mut Vec<Value>) {
        motion.interrupted = Some(self.code().into());
        events.push(json!({"event": self.event()}));
    }
}

/// What following the active target gives this tick.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Following {
    /// Publish this velocity; the target goes on.
    Command(VelocityTarget),
    /// The target is done: stop, and close it.
    Finished,
}

/// The path follower with what it needs this tick: the newest scan (for
/// the gear of an Ackermann turn), the guard (for its clearances) and the
/// path speed.
pub(crate) struct Steering<'a> {
    pub(crate) pursuit: &'a mut Pursuit,
    pub(crate) scan: Option<&'a LaserScan>,
    pub(crate) guard: &'a ContinuousGuard,
    pub(crate) speed: f64,
}

impl Steering<'_> {
    /// A velocity along `path` from `pose`.
    fn follow(&mut self, path: &[Point2], pose: Pose2) -> VelocityTarget {
        self.pursuit.follow(path, pose, self.speed, self.scan, self.guard)
    }

    /// A velocity toward `goal` along a fresh A* path (used by the
    /// fallbacks); stop when there is none.
    pub(crate) fn pursue(&mut self, map: &mut LocalMap, pose: Pose2, goal: Point2) -> VelocityTarget {
        let costs = map.costmap();
        let r = map.plan(&costs, pose.position(), goal);
        if !r.success {
            return VelocityTarget::STOP;
        }
        let path: Vec<Point2> = r.cells.iter().map(|c| costs.grid_to_world(*c)).collect();
        self.follow(&path, pose)
    }
}

/// The tick an active target is followed in.
pub(crate) struct FollowTick<'a> {
    pub(crate) map: &'a mut LocalMap,
    pub(crate) pose: Pose2,
    pub(crate) now: f64,
    /// A navigation goal is reached within this distance, m.
    pub(crate) tolerance_m: f64,
    /// The action's motion report (shortfalls are recorded there).
    pub(crate) motion: &'a mut MotionReport,
    pub(crate) events: &'a mut Vec<Value>,
}

impl Active {
    /// Nothing in progress.
    pub(crate) fn is_idle(&self) -> bool {
        matches!(self, Active::Idle)
    }

    /// True while the robot's own navigation stack drives to the goal.
    pub(crate) fn handed_over(&self) -> bool {
        matches!(self, Active::Goal(g) if g.handoff == Handoff::Robot)
    }

    /// True while a navigation goal is followed and the robot made progress
    /// along it (moved 0.1 m) within the last [`GOAL_PROGRESS_WINDOW_S`]: the
    /// plan stands, so the scheduler lets base-period calls wait.
    pub(crate) fn goal_progressing(&self, now: f64) -> bool {
        matches!(self, Active::Goal(g) if g.backing_from.is_none() && now - g.progress_s < GOAL_PROGRESS_WINDOW_S)
    }

    /// True while a boxed-in goal backs out: the planner is not asked
    /// until the back-out ends and hands the goal back.
    pub(crate) fn is_recovering(&self) -> bool {
        matches!(self, Active::Goal(g) if g.backing_from.is_some())
    }

    /// The velocity the target asks for now, or that it is done.
    pub(crate) fn follow(&mut self, tick: &mut FollowTick<'_>, steer: &mut Steering<'_>) -> Following {
        let now = tick.now;
        match self {
            Active::Idle => Following::Command(VelocityTarget::STOP),
            Active::Velocity { v, started_s } => {
                if now - *started_s >= v.duration_s {
                    Following::Finished
                } else {
                    Following::Command(*v)
                }
            }
            Active::Hold { until_s } => {
                if now >= *until_s {
                    Following::Finished
                } else {
                    Following::Command(VelocityTarget::STOP)
                }
            }
            Active::Goal(g) => g.follow(tick, steer),
        }
    }
}

impl GoalRun {
    /// Follows the goal's path (replanned every second); done when the goal
    /// is reached, progress stalls, the deadline passes or no path is left.
    fn follow(&mut self, tick: &mut FollowTick<'_>, steer: &mut Steering<'_>) -> Following {
        if self.handoff == Handoff::Robot {
            // the robot's stack drives; the handoff closes the goal
            return Following::Command(VelocityTarget::STOP);
        }
        let (pose, now) = (tick.pose, tick.now);
        if pose.position().distance(self.progress_at) > 0.1 {
            self.progress_at = pose.position();
            self.progress_s = now;
        }
        if pose.position().distance(self.goal) <= tick.tolerance_m {
            return Following::Finished;
        }
        if let Some(from) = self.backing_from {
            return self.back_out(from, tick, steer);
        }
        let shortfall = if now - self.progress_s > 4.0 {
            Some(GoalShortfall::NoProgress)
        } else if now > self.deadline_s {
            Some(GoalShortfall::Timeout)
        } else {
            None
        };
        if let Some(s) = shortfall {
            s.record(tick.motion, tick.events);
            return Following::Finished;
        }
        if now - self.replanned_s >= 1.0 || self.path.is_empty() {
            self.replanned_s = now;
            let costs = tick.map.costmap();
            let r = tick.map.plan(&costs, pose.position(), self.goal);
            self.path = r.cells.iter().map(|c| costs.grid_to_world(*c)).collect();
            if !r.success {
                GoalShortfall::Unreachable.record(tick.motion, tick.events);
            }
        }
        if self.path.is_empty() {
            return Following::Finished;
        }
        let command = steer.follow(&self.path, pose);
        if steer.pursuit.boxed_in() {
            tick.events.push(json!({
                "event": "boxed_in",
                "reason": "no room to turn toward the goal forward or in reverse: backing out straight, \
                           then handing back to the planner",
            }));
            self.backing_from = Some(pose.position());
            self.progress_s = now;
            return self.back_out(pose.position(), tick, steer);
        }
        Following::Command(command)
    }

    /// The boxed-in recovery: straight back along the robot's heading (the
    /// way a robot that drove into the box came) at the path speed capped
    /// at the slow tier, until [`BACK_OUT_M`] is covered, the guard finds
    /// no room behind (no scan, or a stop), or the back-out stalls; then
    /// the goal ends as `boxed_in` with the distance in the log.
    fn back_out(&mut self, from: Point2, tick: &mut FollowTick<'_>, steer: &mut Steering<'_>) -> Following {
        let backed = tick.pose.position().distance(from);
        let speed = steer.speed.min(steer.guard.config().speeds.slow_mps);
        let back = VelocityTarget { linear: -speed, angular: 0.0, duration_s: 0.05 };
        let stop = steer.scan.map_or(Some("no LiDAR scan".to_owned()), |s| {
            steer.guard.guard(&back, s, 0.0).stop().map(|o| o.reason.clone())
        });
        let why = if backed >= BACK_OUT_M {
            None
        } else if let Some(reason) = stop {
            Some(reason)
        } else if tick.now - self.progress_s > BACK_OUT_STALL_S {
            Some(format!("no 0.1 m of progress in {BACK_OUT_STALL_S} s"))
        } else {
            return Following::Command(back);
        };
        GoalShortfall::BoxedIn.record(tick.motion, tick.events);
        if let Some(last) = tick.events.last_mut() {
            last["backed_out_m"] = json!((backed * 100.0).round() / 100.0);
            if let Some(why) = why {
                last["stopped_by"] = json!(why);
            }
        }
        Following::Finished
    }
}
