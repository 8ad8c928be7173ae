//! [`SimHal`]: the simulator behind the async HAL traits.

use super::{SimConfig, SimWorld};
use crate::HalError;
use crate::hal::{
    Actuators, CameraFrame, Capabilities, DepthFrame, Detection, LabelFrame, MotionOutcome, Odometry, Panorama,
    Sensors, StampedScan, StepOutcome, VelocityCommand,
};
use async_trait::async_trait;
use nav_core::action::Action;
use nav_core::geometry::Point2;

/// The built-in simulator as a [`Robot`](crate::hal::Robot). Every call
/// completes immediately; use [`SimHal::world`] for ground truth and
/// [`SimHal::world_mut`] for fast synchronous stepping.
#[derive(Debug)]
pub struct SimHal {
    world: SimWorld,
}

impl SimHal {
    /// Wraps a world.
    pub fn new(world: SimWorld) -> Self {
        Self { world }
    }

    /// A simulator for a built-in arena.
    pub fn builtin(name: &str, config: SimConfig) -> Result<Self, HalError> {
        Ok(Self::new(SimWorld::builtin(name, config)?))
    }

    /// The world, for ground truth and evaluation.
    pub fn world(&self) -> &SimWorld {
        &self.world
    }

    /// The world, for synchronous control.
    pub fn world_mut(&mut self) -> &mut SimWorld {
        &mut self.world
    }

    /// The simulated clock (see [`SimWorld::clock`]).
    pub fn clock(&self) -> std::sync::Arc<nav_core::time::ManualClock> {
        self.world.clock()
    }

    /// Unwraps the world.
    pub fn into_world(self) -> SimWorld {
        self.world
    }
}

impl From<SimWorld> for SimHal {
    fn from(world: SimWorld) -> Self {
        Self::new(world)
    }
}

#[async_trait]
impl Sensors for SimHal {
    fn capabilities(&self) -> Capabilities {
        self.world.capabilities()
    }

    async fn odometry(&mut self) -> Result<Odometry, HalError> {
        Ok(self.world.odometry())
    }

    async fn scan(&mut self) -> Result<StampedScan, HalError> {
        Ok(self.world.scan())
    }

    async fn rgb(&mut self) -> Result<CameraFrame, HalError> {
        Ok(self.world.rgb())
    }

    async fn depth(&mut self) -> Result<DepthFrame, HalError> {
        Ok(self.world.depth())
    }

    async fn panorama(&mut self, views: usize) -> Result<Panorama, HalError> {
        self.world.panorama(views)
    }

    async fn labels(&mut self) -> Result<LabelFrame, HalError> {
        Ok(self.world.labels())
    }

    async fn detections(&mut self) -> Result<Vec<Detection>, HalError> {
        Ok(self.world.detections())
    }

    async fn detections_around(&mut self, views: usize) -> Result<Vec<Detection>, HalError> {
        self.world.detections_around(views)
    }
}

#[async_trait]
impl Actuators for SimHal {
    async fn act(&mut self, action: Action) -> Result<StepOutcome, HalError> {
        Ok(self.world.act(action))
    }

    async fn drive(&mut self, command: VelocityCommand) -> Result<MotionOutcome, HalError> {
        self.world.drive(command)
    }

    async fn move_to(&mut self, target: Point2) -> Result<MotionOutcome, HalError> {
        self.world.move_to(target)
    }

    async fn stop(&mut self) -> Result<(), HalError> {
        self.world.stop();
        Ok(())
    }
}
