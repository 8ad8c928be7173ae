//! Navigation goals handed to the robot's own navigation stack (Nav2 on a
//! ROS 2 robot, [`Actuators::start_goal`](nav_hal::hal::Actuators::start_goal)).
//!
//! A `navigate_to_goal` is first offered to the robot; a robot without such
//! a stack answers `Unsupported` and the loop follows its own A* path. While
//! the robot's stack drives:
//!
//! - the loop publishes **no** velocity (the stack is the `cmd_vel`
//!   publisher), and the motion is measured from odometry;
//! - the continuous guard and the stop arbiter stay on top: every tick they
//!   judge the motion odometry reports, and any stop they call (an obstacle
//!   in the direction of motion, a stale or blind sensor, a lost link), a
//!   pause, a shutdown or a watchdog tier beyond CONTINUE **cancels the
//!   goal** and publishes zero velocity that tick;
//! - the goal ends as the stack reports it: reached is a success; aborted,
//!   cancelled, never accepted, or past the goal's deadline is a failure in
//!   the tool result (`stopped_reason` `nav2_aborted`, `nav2_canceled`,
//!   `nav2_not_accepted`, `navigation_timeout`) with the reason in the log.

use super::active::{Active, Handoff};
use super::state::LoopState;
use nav_core::geometry::{Point2, Pose2};
use nav_hal::HalError;
use nav_hal::hal::{NavGoalState, Robot};
use nav_safety::GuardedVelocity;
use serde_json::{Value, json};

/// A new goal this close to the one the robot's stack drives to is the same
/// goal (not cancelled and sent again), m.
const SAME_GOAL_M: f64 = 0.1;

/// The goal handed to the robot, if one is.
#[derive(Debug)]
pub(super) struct Handoffs {
    /// Where the goal with the robot's stack now is, if one is.
    open: Option<Point2>,
    /// Why the last goal was not handed over (logged when it changes).
    last_refusal: Option<String>,
    /// A goal within this distance is reached (`goal_tolerance_m`), m.
    tolerance_m: f64,
}

/// Why the loop takes a handed-over goal back this tick.
pub(super) struct TakeBack<'a> {
    /// The guarded verdict on the motion odometry reports.
    pub(super) guarded: &'a GuardedVelocity,
    /// Paused or shutting down.
    pub(super) stopping: bool,
    /// The watchdog tier is beyond CONTINUE (its name).
    pub(super) tier: Option<&'static str>,
}

impl Handoffs {
    /// No goal handed over yet; goals within `tolerance_m` count as reached.
    pub(super) fn new(tolerance_m: f64) -> Self {
        Self { open: None, last_refusal: None, tolerance_m }
    }

    /// Before the control step: offers a new navigation goal to the robot,
    /// and closes a handed-over goal the robot reports done (or that a new
    /// decision replaced, cancelling it).
    pub(super) async fn before_control<R: Robot + ?Sized>(
        &mut self,
        robot: &mut R,
        st: &mut LoopState,
        pose: Pose2,
        now: f64,
        events: &mut Vec<Value>,
    ) {
        if let Some(open) = self.open.filter(|_| !st.active.handed_over()) {
            match &mut st.active {
                // a new decision for the same place: the robot's stack keeps driving to it
                Active::Goal(g) if g.handoff == Handoff::Untried && g.goal().distance(open) < SAME_GOAL_M => {
                    g.handoff = Handoff::Robot;
                }
                _ => self.cancel(robot, "replaced by a new decision", events).await,
            }
        }
        let Active::Goal(g) = &mut st.active else { return };
        match g.handoff {
            Handoff::Untried if pose.position().distance(g.goal()) <= self.tolerance_m => {
                // already there: the loop closes it at once, nothing to hand over
                g.handoff = Handoff::Own;
            }
            Handoff::Untried => {
                let goal = g.goal();
                let yaw = (goal.y - pose.y).atan2(goal.x - pose.x);
                match robot.start_goal(Pose2::new(goal.x, goal.y, yaw)).await {
                    Ok(()) => {
                        g.handoff = Handoff::Robot;
                        self.open = Some(goal);
                        events.push(json!({"event": "nav2_goal", "x": goal.x, "y": goal.y}));
                    }
                    // the link is down: sensing holds the robot; offer it again next tick
                    Err(HalError::Disconnected { .. } | HalError::Timeout { .. }) => {}
                    Err(e) => {
                        g.handoff = Handoff::Own;
                        let reason = e.to_string();
                        if self.last_refusal.as_deref() != Some(reason.as_str()) {
                            events.push(json!({"event": "own_path", "reason": reason}));
                            self.last_refusal = Some(reason);
                        }
                    }
                }
            }
            Handoff::Robot => {
                let state = robot.goal_state().await;
                let late = now > g.deadline_s();
                match state {
                    Ok(NavGoalState::Succeeded) => {
                        self.open = None;
                        events.push(json!({"event": "nav2_goal_succeeded"}));
                        st.finish_active(pose, now);
                    }
                    Ok(NavGoalState::Failed { code, reason }) => {
                        self.open = None;
                        events.push(json!({"event": "nav2_goal_failed", "code": code, "reason": reason}));
                        st.motion.interrupted = Some(format!("nav2_{code}"));
                        st.finish_active(pose, now);
                    }
                    Ok(NavGoalState::Pending | NavGoalState::Active) if late => {
                        self.cancel(robot, "the goal's deadline passed", events).await;
                        events.push(json!({"event": "goal_timeout"}));
                        st.motion.interrupted = Some("navigation_timeout".into());
                        st.finish_active(pose, now);
                    }
                    // running, or the link is down (the guard's stop takes the goal back)
                    _ => {}
                }
            }
            Handoff::Own => {}
        }
    }

    /// After the guard: true while the robot's stack drives (publish
    /// nothing this tick). A stop the guard or the arbiter calls, a pause,
    /// a shutdown or a watchdog tier beyond CONTINUE cancels the goal and
    /// closes it (the stop's override, or why, in the tool result); false
    /// then, and the caller publishes zero velocity.
    pub(super) async fn after_guard<R: Robot + ?Sized>(
        &mut self,
        robot: &mut R,
        st: &mut LoopState,
        why: TakeBack<'_>,
        pose: Pose2,
        now: f64,
        events: &mut Vec<Value>,
    ) -> bool {
        if self.open.is_none() {
            return false;
        }
        let stop = why.guarded.stop().cloned();
        let reason = match (&stop, why.stopping, why.tier) {
            (Some(o), _, _) => format!("safety stop: {}", o.reason),
            (None, true, _) => "paused or shutting down".to_string(),
            (None, false, Some(tier)) => format!("watchdog tier {tier}"),
            (None, false, None) => return true,
        };
        self.cancel(robot, &reason, events).await;
        if st.active.handed_over() {
            match stop {
                // the layer's tick saw the stop of the measured motion: a decision is due
                Some(o) => st.motion.safety_stop = Some(o),
                None => st.motion.interrupted = Some("nav2_canceled".into()),
            }
            st.finish_active(pose, now);
        }
        false
    }

    /// Cancels the handed-over goal, if one is open (the end of a run).
    pub(super) async fn close<R: Robot + ?Sized>(&mut self, robot: &mut R, events: &mut Vec<Value>) {
        if self.open.is_some() {
            self.cancel(robot, "the run ended", events).await;
        }
    }

    async fn cancel<R: Robot + ?Sized>(&mut self, robot: &mut R, reason: &str, events: &mut Vec<Value>) {
        self.open = None;
        let mut event = json!({"event": "nav2_goal_cancelled", "reason": reason});
        if let Err(e) = robot.cancel_goal().await {
            event["error"] = json!(e.to_string());
        }
        events.push(event);
    }
}
