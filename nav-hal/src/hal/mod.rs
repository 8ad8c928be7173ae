//! The hardware abstraction: what a navigator may ask of a robot.
//!
//! Two object-safe traits, [`Sensors`] and [`Actuators`], joined by
//! [`Robot`] (blanket-implemented), so a navigator can hold a
//! `Box<dyn Robot>` and not care whether it drives the built-in simulator, a
//! ROS robot over rosbridge or Habitat through a bridge. Every method except
//! [`Sensors::capabilities`] has a default that returns
//! [`HalError::Unsupported`], so an adapter implements only what its robot
//! has (like ripgrep's `Sink`: one required method, the rest opt-in).
//!
//! The methods are `async` (via `async-trait`, which keeps the traits
//! object-safe) because real adapters wait on the network; the simulator
//! answers immediately.
//!
//! Each method's docs say which runs need it ("Needed by"). nav-planner's
//! episode runner checks them before step 1 — sensors by asking once,
//! actuators by their [`Capabilities`] flag — and names any that is
//! missing, so a robot that lacks one fails loudly rather than running
//! with less. In short:
//!
//! | method | needed by |
//! | --- | --- |
//! | `odometry()` | every protocol |
//! | `scan()` | objectnav (the map and the free distance per direction); explore; candidates with the LiDAR world model |
//! | `rgb()` | objectnav (any perception stage) |
//! | `depth()` | objectnav with label perception; candidates with the vision world model |
//! | `panorama(views)` | objectnav (the planner looks around: images, or the objects per direction as text) |
//! | `labels()` | objectnav with label perception (the default without a model) |
//! | `detections()` | optional: explore and candidates use them when offered |
//! | `detections_around(views)` | none (adapters forward it for callers of their own) |
//! | `act(action)` | objectnav |
//! | `drive(command)` | explore; candidates (or `move_to`) |
//! | `move_to(point)` | candidates (or `drive`) |
//! | `stop()` | explore |
//! | `start_goal`, `goal_state`, `cancel_goal` | optional: a robot's own navigation stack (Nav2) |

mod guard;
mod types;

pub use guard::{GuardVerdict, MotionGuard};
/// The HAL's scans are nav-core's [`StampedScan`] (one definition,
/// shared with the safety layer); re-exported here because every `Sensors::scan` caller needs it.
pub use nav_core::lidar::StampedScan;
pub use types::{
    CameraFrame, Capabilities, DepthFrame, Detection, LabelFrame, LabelRegion, MotionOutcome, NavGoalState, Odometry,
    Panorama, PanoramaView, StepOutcome, VelocityCommand,
};

use crate::HalError;
use async_trait::async_trait;
use nav_core::action::Action;
use nav_core::geometry::{Point2, Pose2};

/// Reading the robot's sensors.
#[async_trait]
pub trait Sensors: Send {
    /// What this robot offers.
    fn capabilities(&self) -> Capabilities;

    /// The current pose estimate and velocities.
    ///
    /// Needed by: every protocol (objectnav, explore, candidates).
    async fn odometry(&mut self) -> Result<Odometry, HalError> {
        Err(HalError::unsupported("odometry"))
    }

    /// The newest LiDAR scan.
    ///
    /// Needed by: objectnav (the map and the free distance per direction); explore; candidates with the LiDAR world model.
    async fn scan(&mut self) -> Result<StampedScan, HalError> {
        Err(HalError::unsupported("lidar scan"))
    }

    /// The newest RGB image.
    ///
    /// Needed by: objectnav (any perception stage).
    async fn rgb(&mut self) -> Result<CameraFrame, HalError> {
        Err(HalError::unsupported("rgb camera"))
    }

    /// The newest depth image, aligned with [`Sensors::rgb`].
    ///
    /// Needed by: objectnav with label perception; candidates with the vision world model.
    async fn depth(&mut self) -> Result<DepthFrame, HalError> {
        Err(HalError::unsupported("depth camera"))
    }

    /// `views` RGB images at equal headings around the robot, starting
    /// straight ahead and turning left (PixelNav uses 12). The robot ends
    /// facing the way it started.
    ///
    /// Needed by: objectnav (the planner looks around: images, or the objects per direction as text); set
    /// [`Capabilities::panorama`].
    async fn panorama(&mut self, views: usize) -> Result<Panorama, HalError> {
        let _ = views;
        Err(HalError::unsupported("panorama"))
    }

    /// The label buffer aligned with [`Sensors::rgb`] (a simulator's
    /// semantic sensor: a perfect detector; simulators only). Read by the
    /// simulator perception stage, never by a loop.
    ///
    /// Needed by: objectnav with label perception (the default without a
    /// model); the alternative is a model perception stage.
    async fn labels(&mut self) -> Result<LabelFrame, HalError> {
        Err(HalError::unsupported("label buffer"))
    }

    /// Ground-truth detections of the objects visible in the RGB image
    /// (simulators only).
    ///
    /// Needed by: none (optional: explore and candidates use them when offered).
    async fn detections(&mut self) -> Result<Vec<Detection>, HalError> {
        Err(HalError::unsupported("detections"))
    }

    /// Ground-truth detections in any of `views` headings around the robot
    /// (what a detector would report over a panorama), bearings relative to
    /// the robot's front (simulators only).
    ///
    /// Needed by: none (no loop reads it; adapters forward it for callers of their own).
    async fn detections_around(&mut self, views: usize) -> Result<Vec<Detection>, HalError> {
        let _ = views;
        Err(HalError::unsupported("detections around the robot"))
    }
}

/// Moving the robot.
#[async_trait]
pub trait Actuators: Send {
    /// Executes one discrete action (Habitat action space).
    ///
    /// Needed by: objectnav; set [`Capabilities::discrete_actions`].
    async fn act(&mut self, action: Action) -> Result<StepOutcome, HalError> {
        let _ = action;
        Err(HalError::unsupported("discrete actions"))
    }

    /// Holds a velocity for a duration, then stops.
    ///
    /// Needed by: explore; candidates (or `move_to`); set [`Capabilities::velocity`].
    async fn drive(&mut self, command: VelocityCommand) -> Result<MotionOutcome, HalError> {
        let _ = command;
        Err(HalError::unsupported("velocity commands"))
    }

    /// Drives to a point given in the odometry frame, then stops.
    ///
    /// Needed by: candidates (or `drive`); set [`Capabilities::move_to`].
    async fn move_to(&mut self, target: Point2) -> Result<MotionOutcome, HalError> {
        let _ = target;
        Err(HalError::unsupported("move_to"))
    }

    /// Stops all motion now.
    ///
    /// Needed by: explore.
    async fn stop(&mut self) -> Result<(), HalError> {
        Err(HalError::unsupported("stop"))
    }

    /// Hands a navigation goal (odometry frame; `goal.yaw` is the heading
    /// to arrive with) to the robot's own navigation stack (Nav2 on a ROS 2
    /// robot), which then drives the robot itself: the caller publishes no
    /// velocity commands until the goal ends ([`goal_state`](Self::goal_state)),
    /// and calls [`cancel_goal`](Self::cancel_goal) whenever it must stop
    /// the robot. [`HalError::Unsupported`] when the robot has no such
    /// stack or it is not available now: the caller drives the path itself.
    async fn start_goal(&mut self, goal: Pose2) -> Result<(), HalError> {
        let _ = goal;
        Err(HalError::unsupported("navigation goals for the robot's own navigation stack"))
    }

    /// The state of the goal handed over with [`start_goal`](Self::start_goal).
    async fn goal_state(&mut self) -> Result<NavGoalState, HalError> {
        Err(HalError::unsupported("navigation goals for the robot's own navigation stack"))
    }

    /// Cancels the goal handed over with [`start_goal`](Self::start_goal):
    /// the robot's stack stops driving.
    async fn cancel_goal(&mut self) -> Result<(), HalError> {
        Err(HalError::unsupported("navigation goals for the robot's own navigation stack"))
    }
}

/// A robot: sensors plus actuators. Implemented for every type that has
/// both, so `Box<dyn Robot>` works for any adapter.
pub trait Robot: Sensors + Actuators {}

impl<T: Sensors + Actuators + ?Sized> Robot for T {}
