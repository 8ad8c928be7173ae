//! [`BridgeHal`] behind the HAL traits.

use super::wire::{self, PanoramaReply, SimMetrics, StepReply, protocol};
use super::{BridgeHal, RgbEncoding};
use crate::HalError;
use crate::hal::{
    Actuators, CameraFrame, Capabilities, DepthFrame, Detection, DriveKind, Odometry, Panorama, PanoramaView, Sensors,
    StepOutcome,
};
use async_trait::async_trait;
use nav_core::action::Action;
use nav_core::geometry::Pose2;
use serde_json::{Map, json};

#[async_trait]
impl Sensors for BridgeHal {
    fn capabilities(&self) -> Capabilities {
        let caps = &self.backend.capabilities;
        let obs = &self.backend.observation;
        Capabilities {
            discrete_actions: true,
            step: Some(self.backend.step),
            velocity: false,
            move_to: false,
            lidar: false,
            rgb: caps.rgb && obs.rgb != "none",
            depth: caps.depth && obs.depth,
            panorama: caps.panorama && obs.rgb != "none",
            detections: caps.detections && obs.detections,
            pose_is_ground_truth: self.config.ground_truth_pose && obs.pose,
            drive: DriveKind::Differential,
        }
    }

    /// Dead-reckoned from the episode start (seed 000 §7.2): each action
    /// is integrated as commanded, except a forward step the simulator
    /// reports as blocked, which adds only the distance it says was moved
    /// (a bump sensor plus wheel odometry). With
    /// [`BridgeConfig::ground_truth_pose`](super::BridgeConfig::ground_truth_pose)
    /// the simulator's pose relative to the episode start, marked
    /// `ground_truth`.
    async fn odometry(&mut self) -> Result<Odometry, HalError> {
        let (pose, ground_truth) = self.pose_estimate();
        Ok(Odometry { pose, linear: 0.0, angular: 0.0, stamp_s: self.stamp(), ground_truth })
    }

    async fn rgb(&mut self) -> Result<CameraFrame, HalError> {
        if self.config.rgb == RgbEncoding::None {
            return Err(HalError::unsupported("rgb camera (BridgeConfig::rgb is none)"));
        }
        let latest = self.latest.as_mut().ok_or_else(|| HalError::invalid_command("rgb", "no episode: reset first"))?;
        if let Some(frame) = &latest.rgb_decoded {
            return Ok(frame.clone());
        }
        let image = latest.rgb.as_ref().ok_or_else(|| protocol("the observation carries no rgb image"))?;
        let frame = wire::decode_rgb(image, latest.hfov_deg, latest.stamp_s)?;
        latest.rgb_decoded = Some(frame.clone());
        Ok(frame)
    }

    async fn depth(&mut self) -> Result<DepthFrame, HalError> {
        if !self.config.depth {
            return Err(HalError::unsupported("depth camera (enable BridgeConfig::depth)"));
        }
        let latest =
            self.latest.as_ref().ok_or_else(|| HalError::invalid_command("depth", "no episode: reset first"))?;
        let depth = latest.depth.as_ref().ok_or_else(|| protocol("the observation carries no depth image"))?;
        wire::decode_depth(depth, latest.stamp_s)
    }

    /// Views turning left from straight ahead. The backend renders them
    /// and returns the agent to its heading; the turns are not episode
    /// steps (see docs/BRIDGE.md for what that means for Habitat's SPL).
    async fn panorama(&mut self, views: usize) -> Result<Panorama, HalError> {
        if !(1..=360).contains(&views) {
            return Err(HalError::invalid_command("views", format!("must be within 1..=360, got {views}")));
        }
        if self.config.rgb == RgbEncoding::None {
            return Err(HalError::unsupported("panorama (BridgeConfig::rgb is none)"));
        }
        let mut fields = Map::new();
        fields.insert("views".into(), json!(views));
        let timeout = super::secs(self.config.panorama_timeout_s);
        let reply: PanoramaReply = self.request("panorama", fields, timeout).await?;
        if reply.views.len() != views {
            return Err(protocol(format!("panorama: asked for {views} views, got {}", reply.views.len())));
        }
        let stamp = self.stamp();
        let mut out = Vec::with_capacity(views);
        let mut dets = Vec::with_capacity(views);
        for (k, view) in reply.views.into_iter().enumerate() {
            let image =
                view.observation.rgb.as_ref().ok_or_else(|| protocol(format!("panorama view {k} has no rgb image")))?;
            let frame = wire::decode_rgb(image, view.observation.hfov_deg, stamp)?;
            out.push(PanoramaView {
                heading_rad: nav_core::geometry::normalize_angle(view.heading_deg.to_radians()),
                frame,
            });
            dets.push(
                view.observation
                    .detections
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|d| d.into_detection())
                    .collect(),
            );
        }
        self.panorama_detections = dets;
        Ok(Panorama { views: out })
    }

    async fn detections(&mut self) -> Result<Vec<Detection>, HalError> {
        if !(self.config.detections && self.backend.observation.detections) {
            return Err(HalError::unsupported("detections (the backend or BridgeConfig::detections has them off)"));
        }
        let latest =
            self.latest.as_ref().ok_or_else(|| HalError::invalid_command("detections", "no episode: reset first"))?;
        Ok(latest.detections.clone())
    }
}

#[async_trait]
impl Actuators for BridgeHal {
    /// One simulator step. `Stop` ends the episode: afterwards
    /// [`BridgeHal::episode_done`] is true and
    /// [`BridgeHal::episode_metrics`] holds the simulator's metrics.
    async fn act(&mut self, action: Action) -> Result<StepOutcome, HalError> {
        if let Some(reason) = &self.broken {
            return Err(self.disconnected(reason));
        }
        if self.episode.is_none() {
            return Err(HalError::invalid_command("action", "no episode: call BridgeHal::reset first"));
        }
        let mut fields = Map::new();
        fields.insert("action".into(), json!(action.as_str()));
        let timeout = super::secs(self.config.step_timeout_s);
        let reply: StepReply = self.request("step", fields, timeout).await?;
        let StepReply { observation, info, done, metrics } = reply;
        self.set_latest(observation)?;
        self.steps = if info.steps > 0 { info.steps } else { self.steps + 1 };
        if info.collided && action == Action::Forward {
            let p = self.dead_reckoning.pose();
            let moved = if info.moved_m.is_finite() { info.moved_m.max(0.0) } else { 0.0 };
            let (s, c) = p.yaw.sin_cos();
            let next = Pose2::new(p.x + moved * c, p.y + moved * s, p.yaw);
            self.dead_reckoning = nav_core::action::DeadReckoning::with_pose(self.backend.step, next);
        } else {
            self.dead_reckoning.apply(action);
        }
        if done {
            self.done = true;
            self.metrics = match metrics {
                Some(m) => Some(SimMetrics::from_wire(m)?),
                None => return Err(protocol("the episode ended without metrics")),
            };
        }
        let (pose, _) = self.pose_estimate();
        Ok(StepOutcome { collided: info.collided, moved_m: info.moved_m, pose: Some(pose) })
    }

    /// Nothing moves between discrete steps, so there is nothing to stop;
    /// this does not send `Stop` (which would end the episode).
    async fn stop(&mut self) -> Result<(), HalError> {
        Ok(())
    }
}
