//! A [`BridgeHal`] that records each step's timing and collisions while
//! the ObjectNav loop drives it.

use super::report::median;
use async_trait::async_trait;
use nav_core::action::Action;
use nav_hal::HalError;
use nav_hal::bridge::{BridgeHal, StepTiming};
use nav_hal::hal::{
    Actuators, CameraFrame, Capabilities, DepthFrame, Detection, LabelFrame, Odometry, Panorama, Sensors, StampedScan,
    StepOutcome,
};

/// The bridge plus what its steps cost.
pub(crate) struct MeteredBridge<'h> {
    hal: &'h mut BridgeHal,
    timings: Vec<StepTiming>,
    collisions: u32,
}

/// What a [`MeteredBridge`] measured.
pub(crate) struct Meter {
    timings: Vec<StepTiming>,
    pub collisions: u32,
}

impl Meter {
    pub fn median_round_trip_ms(&self) -> Option<f64> {
        median(self.timings.iter().map(|t| t.round_trip.as_secs_f64() * 1000.0).collect())
    }

    pub fn median_overhead_ms(&self) -> Option<f64> {
        median(self.timings.iter().map(|t| t.overhead().as_secs_f64() * 1000.0).collect())
    }
}

impl<'h> MeteredBridge<'h> {
    pub fn new(hal: &'h mut BridgeHal) -> Self {
        Self { hal, timings: Vec::new(), collisions: 0 }
    }

    /// The bridge.
    pub fn hal(&self) -> &BridgeHal {
        self.hal
    }

    /// Collisions so far.
    pub fn collisions(&self) -> u32 {
        self.collisions
    }

    pub fn finish(self) -> Meter {
        Meter { timings: self.timings, collisions: self.collisions }
    }
}

#[async_trait]
impl Sensors for MeteredBridge<'_> {
    fn capabilities(&self) -> Capabilities {
        self.hal.capabilities()
    }
    async fn odometry(&mut self) -> Result<Odometry, HalError> {
        self.hal.odometry().await
    }
    async fn scan(&mut self) -> Result<StampedScan, HalError> {
        self.hal.scan().await
    }
    async fn rgb(&mut self) -> Result<CameraFrame, HalError> {
        self.hal.rgb().await
    }
    async fn depth(&mut self) -> Result<DepthFrame, HalError> {
        self.hal.depth().await
    }
    async fn panorama(&mut self, views: usize) -> Result<Panorama, HalError> {
        self.hal.panorama(views).await
    }
    async fn labels(&mut self) -> Result<LabelFrame, HalError> {
        self.hal.labels().await
    }
    async fn detections(&mut self) -> Result<Vec<Detection>, HalError> {
        self.hal.detections().await
    }
    async fn detections_around(&mut self, views: usize) -> Result<Vec<Detection>, HalError> {
        self.hal.detections_around(views).await
    }
}

#[async_trait]
impl Actuators for MeteredBridge<'_> {
    async fn act(&mut self, action: Action) -> Result<StepOutcome, HalError> {
        let out = self.hal.act(action).await?;
        if let Some(t) = self.hal.last_timing() {
            self.timings.push(t);
        }
        if out.collided {
            self.collisions += 1;
        }
        Ok(out)
    }
    async fn stop(&mut self) -> Result<(), HalError> {
        self.hal.stop().await
    }
}
