//! The low-level policy seam of the ObjectNav loop:
//! the planner says *whether* the target is in view and *which direction*;
//! the policy turns that into discrete actions. [`PixelGoalPolicy`](super::pixel_policy::PixelGoalPolicy)
//! is the built-in default; PixelNav (through the simulator bridge) or any
//! learned policy implements [`LowLevelPolicy`].
//!
//! A policy never sees the simulator's objects: it decides from the pose,
//! the range sensors and what the perception stage reports when it asks
//! for it ([`PolicyAction::Perceive`]).

use crate::protocol::perception::{GoalSighting, PerceptionNeeds};
use async_trait::async_trait;
use nav_core::action::Action;
use nav_core::geometry::Pose2;
use nav_core::lidar::LaserScan;
use nav_hal::hal::{CameraFrame, DepthFrame};
use serde::{Deserialize, Serialize};

/// What the planner asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyGoal {
    /// The planner believes the target is visible.
    pub goal_flag: bool,
    /// Direction relative to the robot's front when the decision was made,
    /// radians, positive = left.
    pub angle_rad: f64,
    /// The target object's label.
    pub target: String,
    /// How far to go before asking again, metres (offline planners know;
    /// a VLM does not, and the policy's default applies).
    pub distance_hint_m: Option<f64>,
}

/// What the policy sees at one step.
#[derive(Debug, Clone, Copy)]
pub struct PolicyObservation<'a> {
    /// Current pose estimate (odometry or dead reckoning).
    pub pose: Pose2,
    /// Current LiDAR scan (or one derived from depth), if the robot has one.
    pub scan: Option<&'a LaserScan>,
    /// Free distance straight ahead (e.g. from depth) when there is no
    /// scan, metres.
    pub forward_clearance_m: Option<f64>,
    /// The current RGB image, when the policy asked for it
    /// ([`LowLevelPolicy::needs_view`]).
    pub frame: Option<&'a CameraFrame>,
    /// The aligned depth image, when the policy asked for it.
    pub depth: Option<&'a DepthFrame>,
}

/// Why the policy handed control back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyStop {
    /// The planner said `goal_flag == true` and the perception stage puts
    /// the target within the stopping distance: the episode's final STOP
    /// (after the optional stop check).
    Reached,
    /// Forward motion is blocked.
    Blocked,
    /// The waypoint was reached (hand back to the planner).
    Arrived,
    /// The planner said the target is in view, but the perception stage
    /// does not see it (hand back to the planner).
    NotSeen,
    /// Turned or stepped too long without getting anywhere.
    NoProgress,
}

/// One decision of the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum PolicyAction {
    /// Execute this action.
    Step(Action),
    /// Run the perception stage on the current view and report the result
    /// through [`LowLevelPolicy::perceived`], then ask again (no step).
    Perceive,
    /// Hand control back (the loop re-plans, or ends the episode on
    /// [`PolicyStop::Reached`]).
    Done(PolicyStop),
}

/// A low-level navigation policy.
#[async_trait]
pub trait LowLevelPolicy: Send {
    /// Short name for logs.
    fn name(&self) -> &str;
    /// The images [`LowLevelPolicy::act`] reads in its observation (a
    /// learned policy such as PixelNav looks at the view); the default
    /// reads none, so the loop fetches none.
    fn needs_view(&self) -> PerceptionNeeds {
        PerceptionNeeds::default()
    }
    /// Starts following a new planner decision.
    fn reset(&mut self, goal: &PolicyGoal, pose: Pose2);
    /// What the perception stage found after a [`PolicyAction::Perceive`]
    /// (`None` = not seen), at `pose`. The default ignores it.
    fn perceived(&mut self, sighting: Option<&GoalSighting>, pose: Pose2) {
        let _ = (sighting, pose);
    }
    /// The next action.
    async fn act(&mut self, obs: &PolicyObservation<'_>) -> PolicyAction;
}
