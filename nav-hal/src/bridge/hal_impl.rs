//! [`BridgeHal`] behind the HAL traits.

use super::wire::{self, PanoramaReply, SimMetrics, StepReply, protocol};
use super::{BridgeHal, RgbEncoding};
use crate::HalError;
use crate::depth_scan::ScanBuilder;
use crate::hal::{
    Actuators, CameraFrame, Capabilities, DepthFrame, Detection, LabelFrame, Odometry, Panorama, PanoramaView, Sensors,
    StampedScan, StepOutcome,
};
use async_trait::async_trait;
use nav_core::action::Action;
use nav_core::drive::DriveKind;
use nav_core::geometry::{Point2, Pose2, normalize_angle};
use nav_core::lidar::LaserScan;
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
            // no laser: `scan` is derived from depth (docs/BRIDGE.md), so it exists when depth does
            lidar: caps.depth && obs.depth,
            rgb: caps.rgb && obs.rgb != "none",
            depth: caps.depth && obs.depth,
            panorama: caps.panorama && obs.rgb != "none",
            detections: caps.detections && obs.detections,
            pose_is_ground_truth: self.config.ground_truth_pose && obs.pose,
            drive: DriveKind::Differential,
        }
    }

    /// Dead-reckoned from the episode start: each action
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

    /// A scan derived from depth ([`crate::depth_scan`]): right after a
    /// panorama (before the next step) the composite of all its views, a
    /// full circle; otherwise the current view's fan, with NaN (no data)
    /// outside the camera's field of view. Blocked forward steps within
    /// 3 m are added as hits ([`BridgeConfig::bumper`](super::BridgeConfig::bumper)),
    /// and so is what depth showed earlier this episode within 3 m
    /// ([`BridgeConfig::remember_obstacles`](super::BridgeConfig::remember_obstacles)).
    /// Needs [`BridgeConfig::depth`](super::BridgeConfig::depth).
    async fn scan(&mut self) -> Result<StampedScan, HalError> {
        if !(self.config.depth && self.backend.observation.depth) {
            return Err(HalError::unsupported(
                "lidar scan (the bridge derives scans from depth: enable BridgeConfig::depth)",
            ));
        }
        let ((mut scan, low), stamp_s) = self.depth_scan()?;
        self.overlay_remembered(&mut scan, &low);
        Ok(StampedScan { scan, stamp_s })
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
        let frame = wire::decode_rgb(image, latest.hfov_deg, latest.stamp_s, &mut wire::PixelBudget::reply())?;
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
        let mut headings = Vec::with_capacity(views);
        let with_depth = self.config.depth && self.backend.observation.depth;
        let mut scan = if with_depth { Some(self.scan_builder()?) } else { None };
        let mut budget = wire::PixelBudget::reply();
        for (k, view) in reply.views.into_iter().enumerate() {
            let image =
                view.observation.rgb.as_ref().ok_or_else(|| protocol(format!("panorama view {k} has no rgb image")))?;
            let frame = wire::decode_rgb(image, view.observation.hfov_deg, stamp, &mut budget)?;
            let heading_rad = nav_core::geometry::normalize_angle(view.heading_deg.to_radians());
            if !heading_rad.is_finite() {
                return Err(protocol(format!("panorama view {k}: heading_deg is not finite")));
            }
            let mut depth_frame = None;
            if let Some(builder) = scan.as_mut() {
                let depth = view
                    .observation
                    .depth
                    .as_ref()
                    .ok_or_else(|| protocol(format!("panorama view {k} has no depth image")))?;
                let decoded = wire::decode_depth(depth, stamp)?;
                builder.add_view(&decoded, frame.hfov_rad, heading_rad)?;
                depth_frame = Some(decoded);
            }
            headings.push(heading_rad);
            let view_dets: Vec<Detection> = if self.config.detections && self.backend.observation.detections {
                wire::detections_of(view.observation.detections)?
            } else {
                Vec::new()
            };
            // the detector's boxes as the view's label buffer (the stand-in's and the perception stage's eyes)
            let labels = (self.config.detections && self.backend.observation.detections)
                .then(|| label_frame(frame.frame.width(), frame.frame.height(), &view_dets));
            out.push(PanoramaView { heading_rad, frame, depth: depth_frame, labels });
            dets.push(view_dets);
        }
        self.panorama_detections = dets;
        self.panorama_headings = headings;
        self.panorama_scan = scan.map(ScanBuilder::finish_with_low);
        self.panorama_fresh = true;
        Ok(Panorama { views: out })
    }

    /// The current view's detector boxes painted as a label buffer (far
    /// boxes first, so nearer ones win where they overlap).
    async fn labels(&mut self) -> Result<LabelFrame, HalError> {
        let dets = self.detections().await?;
        let frame = self.rgb().await?;
        Ok(label_frame(frame.frame.width(), frame.frame.height(), &dets))
    }

    async fn detections(&mut self) -> Result<Vec<Detection>, HalError> {
        if !(self.config.detections && self.backend.observation.detections) {
            return Err(HalError::unsupported("detections (the backend or BridgeConfig::detections has them off)"));
        }
        let latest =
            self.latest.as_ref().ok_or_else(|| HalError::invalid_command("detections", "no episode: reset first"))?;
        Ok(latest.detections.clone())
    }

    /// The detections of a panorama of `views` views, merged over the
    /// overlapping views (one per object: the view that saw it nearest its
    /// centre) with bearings relative to the robot's front. Uses the last
    /// panorama when it has `views` views and the robot has not acted
    /// since; otherwise takes one.
    async fn detections_around(&mut self, views: usize) -> Result<Vec<Detection>, HalError> {
        if !(self.config.detections && self.backend.observation.detections) {
            return Err(HalError::unsupported("detections (the backend or BridgeConfig::detections has them off)"));
        }
        if !(self.panorama_fresh && self.panorama_detections.len() == views) {
            self.panorama(views).await?;
        }
        Ok(merge_view_detections(&self.panorama_headings, &self.panorama_detections))
    }
}

impl BridgeHal {
    /// The depth-derived scan of the present (the fresh panorama's circle,
    /// else the current view's fan, computed once per observation), with
    /// per beam whether its obstacle is lower than the camera.
    fn depth_scan(&mut self) -> Result<((LaserScan, Vec<bool>), f64), HalError> {
        if self.panorama_fresh {
            if let Some(scan) = &self.panorama_scan {
                return Ok((scan.clone(), self.latest.as_ref().map_or(0.0, |l| l.stamp_s)));
            }
        }
        let mut builder = self.scan_builder()?;
        let latest =
            self.latest.as_mut().ok_or_else(|| HalError::invalid_command("scan", "no episode: reset first"))?;
        if let Some(scan) = &latest.scan {
            return Ok((scan.clone(), latest.stamp_s));
        }
        let depth = latest.depth.as_ref().ok_or_else(|| protocol("the observation carries no depth image"))?;
        let frame = wire::decode_depth(depth, latest.stamp_s)?;
        builder.add_view(&frame, latest.hfov_deg.to_radians(), 0.0)?;
        let scan = builder.finish_with_low();
        latest.scan = Some(scan.clone());
        Ok((scan, latest.stamp_s))
    }
}

/// Merges per-view detections (bearings relative to each view's axis) into
/// one list relative to the robot's front: detections of the same label
/// whose positions lie within 0.5 m + 10 % of their distance are one
/// object, reported as seen by the view nearest whose centre it was.
pub(crate) fn merge_view_detections(headings: &[f64], views: &[Vec<Detection>]) -> Vec<Detection> {
    let mut out: Vec<(Detection, f64, Point2)> = Vec::new();
    for (heading, dets) in headings.iter().zip(views) {
        for d in dets {
            let bearing = normalize_angle(heading + d.bearing_rad);
            if !(bearing.is_finite() && d.distance_m.is_finite()) {
                continue;
            }
            let at = Point2::new(d.distance_m * bearing.cos(), d.distance_m * bearing.sin());
            let merged = Detection { bearing_rad: bearing, ..d.clone() };
            let off_centre = d.bearing_rad.abs();
            let same = out
                .iter_mut()
                .find(|(e, _, p)| e.label == d.label && p.distance(at) <= 0.5 + 0.1 * d.distance_m.max(e.distance_m));
            match same {
                Some(entry) if off_centre < entry.1 => *entry = (merged, off_centre, at),
                Some(_) => {}
                None => out.push((merged, off_centre, at)),
            }
        }
    }
    out.into_iter().map(|(d, _, _)| d).collect()
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
            let (at, _) = self.pose_estimate();
            self.record_contact(at);
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
        Ok(StepOutcome { collided: info.collided, moved_m: info.moved_m, pose: Some(pose), blocked: None })
    }

    /// Nothing moves between discrete steps, so there is nothing to stop;
    /// this does not send `Stop` (which would end the episode).
    async fn stop(&mut self) -> Result<(), HalError> {
        Ok(())
    }
}

/// A label buffer of `width` × `height` with the boxes of `dets` painted
/// far to near (detections without a box are left out).
fn label_frame(width: usize, height: usize, dets: &[Detection]) -> LabelFrame {
    let mut frame = LabelFrame { width, height, ids: vec![0; width * height], labels: Vec::new() };
    let mut order: Vec<&Detection> = dets.iter().filter(|d| d.bbox.is_some()).collect();
    order.sort_by(|a, b| b.distance_m.total_cmp(&a.distance_m));
    for d in order {
        if let Some(b) = d.bbox {
            frame.paint_box(&d.label, b);
        }
    }
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    fn det(label: &str, bearing_deg: f64, distance_m: f64) -> Detection {
        Detection {
            label: label.into(),
            bearing_rad: bearing_deg.to_radians(),
            distance_m,
            bbox: None,
            ground_truth: true,
        }
    }

    #[test]
    fn overlapping_views_report_each_object_once_relative_to_the_front() {
        let headings: Vec<f64> = [0.0f64, 30.0, 60.0].iter().map(|d| d.to_radians()).collect();
        // a red box 40° left of the front, 3 m away, seen by all three views (at +40, +10, -20 in view);
        // another red box far to the right; a ball seen once
        let views = vec![
            vec![det("red box", 40.0, 3.0), det("red box", -30.0, 2.0)],
            vec![det("red box", 10.0, 3.05), det("green ball", -5.0, 1.0)],
            vec![det("red box", -20.0, 2.95)],
        ];
        let merged = merge_view_detections(&headings, &views);
        assert_eq!(merged.len(), 3, "{merged:?}");
        let far = merged.iter().find(|d| d.label == "red box" && d.distance_m > 2.5).unwrap();
        assert!((far.bearing_rad.to_degrees() - 40.0).abs() < 1e-9);
        assert_eq!(far.distance_m, 3.05, "kept the view that saw it nearest its centre");
        let near = merged.iter().find(|d| d.label == "red box" && d.distance_m < 2.5).unwrap();
        assert!((near.bearing_rad.to_degrees() + 30.0).abs() < 1e-9);
        let ball = merged.iter().find(|d| d.label == "green ball").unwrap();
        assert!((ball.bearing_rad.to_degrees() - 25.0).abs() < 1e-9);
        // a view at 180° wraps
        let merged = merge_view_detections(&[std::f64::consts::PI], &[vec![det("cone", 20.0, 1.0)]]);
        assert!((merged[0].bearing_rad.to_degrees() + 160.0).abs() < 1e-9);
        assert!(merge_view_detections(&[0.0], &[vec![det("x", f64::NAN, 1.0)]]).is_empty());
    }
}
