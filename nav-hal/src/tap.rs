//! Watching what a robot's sensors return, without changing it: a
//! [`Tapped`] robot forwards every call to the robot it wraps and hands each
//! reading that succeeded to a [`SensorTap`]. A recorder (`nav run --record`)
//! sees exactly the frames, scans and poses the loop read, and the loop runs
//! as it would without it: the tap never reads a sensor itself, so no
//! simulator noise draw or robot message is added.
//!
//! ```
//! use nav_hal::hal::{Sensors, StampedScan};
//! use nav_hal::tap::{SensorTap, SharedTap, Tapped};
//! use std::sync::{Arc, Mutex};
//!
//! #[derive(Default)]
//! struct CountScans(usize);
//! impl SensorTap for CountScans {
//!     fn scan(&mut self, _scan: &StampedScan) {
//!         self.0 += 1;
//!     }
//! }
//!
//! let arena = nav_hal::arena::Arena::builtin("simple")?;
//! let world = nav_hal::sim::SimWorld::new(arena, Default::default())?;
//! let counter = Arc::new(Mutex::new(CountScans::default()));
//! let mut robot = Tapped::new(nav_hal::sim::SimHal::new(world), Some(counter.clone() as SharedTap));
//! let rt = tokio::runtime::Builder::new_current_thread().build()?;
//! rt.block_on(robot.scan())?;
//! assert_eq!(counter.lock().unwrap().0, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::HalError;
use crate::hal::{
    Actuators, CameraFrame, Capabilities, DepthFrame, Detection, LabelFrame, MotionOutcome, NavGoalState, Odometry,
    Panorama, Sensors, StampedScan, StepOutcome, VelocityCommand,
};
use async_trait::async_trait;
use nav_core::action::Action;
use nav_core::geometry::{Point2, Pose2};
use std::sync::{Arc, Mutex};

/// Sees every sensor reading taken through a [`Tapped`] robot. Every method
/// has an empty default, so a tap implements what it wants to see.
/// Detections are not tapped: they are simulator ground truth.
pub trait SensorTap: Send {
    /// A pose estimate was read.
    fn odometry(&mut self, odometry: &Odometry) {
        let _ = odometry;
    }
    /// A LiDAR scan was read.
    fn scan(&mut self, scan: &StampedScan) {
        let _ = scan;
    }
    /// An RGB image was read.
    fn rgb(&mut self, frame: &CameraFrame) {
        let _ = frame;
    }
    /// A depth image was read.
    fn depth(&mut self, frame: &DepthFrame) {
        let _ = frame;
    }
    /// A panorama was taken.
    fn panorama(&mut self, panorama: &Panorama) {
        let _ = panorama;
    }
}

/// A tap shared between the robot and whoever owns the recording.
pub type SharedTap = Arc<Mutex<dyn SensorTap>>;

/// A robot whose sensor readings also go to a [`SensorTap`] (none: a plain
/// pass-through). Derefs to the wrapped robot, so its own methods (the
/// simulator's `world()`, …) stay reachable.
pub struct Tapped<R> {
    inner: R,
    tap: Option<SharedTap>,
}

impl<R> Tapped<R> {
    /// Wraps `inner`; readings go to `tap` when there is one.
    pub fn new(inner: R, tap: Option<SharedTap>) -> Self {
        Self { inner, tap }
    }

    /// The wrapped robot.
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// Hands `value` to the tap when the reading succeeded. A tap that
    /// panicked once (a poisoned lock) still gets later readings.
    fn see<T>(&self, value: &Result<T, HalError>, f: impl FnOnce(&mut dyn SensorTap, &T)) {
        if let (Some(tap), Ok(v)) = (&self.tap, value) {
            let mut guard = tap.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            f(&mut *guard, v);
        }
    }
}

impl<R> std::ops::Deref for Tapped<R> {
    type Target = R;
    fn deref(&self) -> &R {
        &self.inner
    }
}

impl<R> std::ops::DerefMut for Tapped<R> {
    fn deref_mut(&mut self) -> &mut R {
        &mut self.inner
    }
}

#[async_trait]
impl<R: Sensors> Sensors for Tapped<R> {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    async fn odometry(&mut self) -> Result<Odometry, HalError> {
        let r = self.inner.odometry().await;
        self.see(&r, |t, v| t.odometry(v));
        r
    }

    async fn scan(&mut self) -> Result<StampedScan, HalError> {
        let r = self.inner.scan().await;
        self.see(&r, |t, v| t.scan(v));
        r
    }

    async fn rgb(&mut self) -> Result<CameraFrame, HalError> {
        let r = self.inner.rgb().await;
        self.see(&r, |t, v| t.rgb(v));
        r
    }

    async fn depth(&mut self) -> Result<DepthFrame, HalError> {
        let r = self.inner.depth().await;
        self.see(&r, |t, v| t.depth(v));
        r
    }

    async fn panorama(&mut self, views: usize) -> Result<Panorama, HalError> {
        let r = self.inner.panorama(views).await;
        self.see(&r, |t, v| t.panorama(v));
        r
    }

    async fn labels(&mut self) -> Result<LabelFrame, HalError> {
        self.inner.labels().await
    }

    async fn detections(&mut self) -> Result<Vec<Detection>, HalError> {
        self.inner.detections().await
    }

    async fn detections_around(&mut self, views: usize) -> Result<Vec<Detection>, HalError> {
        self.inner.detections_around(views).await
    }
}

#[async_trait]
impl<R: Actuators> Actuators for Tapped<R> {
    async fn act(&mut self, action: Action) -> Result<StepOutcome, HalError> {
        self.inner.act(action).await
    }

    async fn drive(&mut self, command: VelocityCommand) -> Result<MotionOutcome, HalError> {
        self.inner.drive(command).await
    }

    async fn move_to(&mut self, target: Point2) -> Result<MotionOutcome, HalError> {
        self.inner.move_to(target).await
    }

    async fn stop(&mut self) -> Result<(), HalError> {
        self.inner.stop().await
    }

    async fn start_goal(&mut self, goal: Pose2) -> Result<(), HalError> {
        self.inner.start_goal(goal).await
    }

    async fn goal_state(&mut self) -> Result<NavGoalState, HalError> {
        self.inner.goal_state().await
    }

    async fn cancel_goal(&mut self) -> Result<(), HalError> {
        self.inner.cancel_goal().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::Arena;
    use crate::sim::{SimHal, SimWorld};

    #[derive(Default)]
    struct Seen(Vec<&'static str>);

    impl SensorTap for Seen {
        fn odometry(&mut self, _: &Odometry) {
            self.0.push("odometry");
        }
        fn scan(&mut self, _: &StampedScan) {
            self.0.push("scan");
        }
        fn rgb(&mut self, _: &CameraFrame) {
            self.0.push("rgb");
        }
        fn depth(&mut self, _: &DepthFrame) {
            self.0.push("depth");
        }
        fn panorama(&mut self, _: &Panorama) {
            self.0.push("panorama");
        }
    }

    fn sim() -> SimHal {
        SimHal::new(SimWorld::new(Arena::builtin("simple").unwrap(), Default::default()).unwrap())
    }

    #[tokio::test]
    async fn a_tap_sees_every_reading_and_changes_none() {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let mut tapped = Tapped::new(sim(), Some(seen.clone() as SharedTap));
        let mut plain = sim();
        assert_eq!(tapped.capabilities(), plain.capabilities());
        assert_eq!(tapped.scan().await.unwrap(), plain.scan().await.unwrap());
        assert_eq!(tapped.odometry().await.unwrap(), plain.odometry().await.unwrap());
        assert_eq!(tapped.rgb().await.unwrap(), plain.rgb().await.unwrap());
        assert_eq!(tapped.depth().await.unwrap(), plain.depth().await.unwrap());
        assert_eq!(tapped.panorama(4).await.unwrap(), plain.panorama(4).await.unwrap());
        assert_eq!(tapped.detections().await.unwrap(), plain.detections().await.unwrap());
        // every Sensors method is forwarded, the label buffer too (not a trait default's "unsupported")
        assert_eq!(tapped.labels().await.unwrap(), plain.labels().await.unwrap());
        assert_eq!(tapped.act(Action::Forward).await.unwrap(), plain.act(Action::Forward).await.unwrap());
        assert_eq!(tapped.world().ground_truth_pose(), plain.world().ground_truth_pose(), "derefs to the robot");
        assert_eq!(seen.lock().unwrap().0, ["scan", "odometry", "rgb", "depth", "panorama"]);
        // no tap: a pass-through
        let mut bare = Tapped::new(sim(), None);
        assert!(bare.scan().await.is_ok());
        let _robot: SimHal = bare.into_inner();
    }
}
