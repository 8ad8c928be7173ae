//! Simulated sensing: odometry, LiDAR, RGB-D camera, panoramas and
//! ground-truth detections. Every LiDAR scan and camera image also updates
//! coverage.

use super::SimWorld;
use super::camera::ObjectLook;
use super::motion::gaussian;
use crate::HalError;
use crate::hal::{CameraFrame, DepthFrame, Detection, LabelFrame, Odometry, Panorama, PanoramaView, StampedScan};
use nav_core::geometry::{Point2, Pose2, normalize_angle};
use nav_core::lidar::LaserScan;
use nav_core::time::Clock;

impl SimWorld {
    /// The odometry estimate (exact unless odometry noise is on), in the
    /// configured [`OdometryFrame`](super::OdometryFrame).
    pub fn odometry(&self) -> Odometry {
        Odometry {
            pose: self.odom_in_frame(),
            linear: self.velocity.0,
            angular: self.velocity.1,
            stamp_s: self.clock.now_s(),
            ground_truth: self.capabilities().pose_is_ground_truth,
        }
    }

    /// A full-circle LiDAR scan from the robot centre (angle_min = −π,
    /// CCW), with range noise if configured; beams without a return within
    /// `range_max` read `+inf`.
    pub fn scan(&mut self) -> StampedScan {
        let cfg = self.config.lidar;
        let n = cfg.beams;
        let origin = self.pose.position();
        self.scene.cast_fan(
            self.pose,
            &self.lidar_fan,
            f64::from(cfg.range_max),
            true,
            &mut self.ray_dist[..n],
            &mut self.ray_hit[..n],
        );
        let range = self.config.coverage_range_m.min(f64::from(cfg.range_max));
        self.coverage.integrate(origin, self.pose.yaw, &self.lidar_fan.angles, &self.ray_dist[..n], range);
        let sigma = self.config.noise.range_std_m;
        let mut ranges = Vec::with_capacity(n);
        for i in 0..n {
            let d = self.ray_dist[i];
            let r = if d.is_finite() {
                let noisy = if sigma > 0.0 { d + gaussian(&mut self.rng) * sigma } else { d };
                noisy.max(f64::from(cfg.range_min)) as f32
            } else {
                f32::INFINITY
            };
            ranges.push(r);
        }
        let scan = LaserScan {
            angle_min: -std::f64::consts::PI,
            angle_increment: std::f64::consts::TAU / n as f64,
            range_min: cfg.range_min,
            range_max: cfg.range_max,
            ranges,
        };
        StampedScan { scan, stamp_s: self.clock.now_s() }
    }

    /// The RGB image seen straight ahead.
    pub fn rgb(&mut self) -> CameraFrame {
        self.view(0.0, false).0
    }

    /// The depth image seen straight ahead (aligned with [`SimWorld::rgb`]).
    pub fn depth(&mut self) -> DepthFrame {
        let (_, depth) = self.view(0.0, true);
        depth.unwrap_or_else(|| DepthFrame { width: 0, height: 0, depth_m: Vec::new(), stamp_s: self.clock.now_s() })
    }

    /// RGB and depth from one render.
    pub fn rgbd(&mut self) -> (CameraFrame, DepthFrame) {
        let (rgb, depth) = self.view(0.0, true);
        let depth =
            depth.unwrap_or_else(|| DepthFrame { width: 0, height: 0, depth_m: Vec::new(), stamp_s: rgb.stamp_s });
        (rgb, depth)
    }

    /// `views` images at equal headings starting straight ahead and turning
    /// left, each with its depth image and label buffer; the robot does not
    /// move (a rotation-free panorama, as from a ring of cameras).
    pub fn panorama(&mut self, views: usize) -> Result<Panorama, HalError> {
        if views == 0 || views > 360 {
            return Err(HalError::invalid_command("views", format!("must be within 1..=360, got {views}")));
        }
        let views = Panorama::headings(views)
            .into_iter()
            .map(|heading_rad| {
                let (frame, depth) = self.view(heading_rad, true);
                let labels = Some(self.labels_at(heading_rad));
                PanoramaView { heading_rad, frame, depth, labels }
            })
            .collect();
        Ok(Panorama { views })
    }

    /// Renders the view at `heading` (relative to the robot's front).
    fn view(&mut self, heading: f64, want_depth: bool) -> (CameraFrame, Option<DepthFrame>) {
        let origin = self.pose.position();
        let yaw = self.pose.yaw + heading;
        let layout = self.camera.layout(&self.scene, origin, yaw);
        let range = self.config.coverage_range_m.min(self.config.camera.max_depth_m);
        self.coverage.integrate(origin, yaw, &self.camera.fan.angles, &layout.nearest_by_ray(), range);
        let wall_colour = |p: Point2| self.wall_colour_at(p);
        let look = ObjectLook { styles: &self.styles, labels: &self.labels };
        let from = Pose2::new(origin.x, origin.y, yaw);
        let (frame, depth) = self.camera.render(&self.scene, &layout, from, &wall_colour, look, want_depth);
        let stamp_s = self.clock.now_s();
        let cfg = self.config.camera;
        let depth = depth.map(|depth_m| DepthFrame { width: cfg.width, height: cfg.height, depth_m, stamp_s });
        (CameraFrame { frame, hfov_rad: cfg.hfov_deg.to_radians(), stamp_s }, depth)
    }

    /// The label buffer aligned with [`SimWorld::rgb`]: the perfect
    /// detector (see [`LabelFrame`]).
    pub fn labels(&self) -> LabelFrame {
        self.labels_at(0.0)
    }

    /// The label buffer of the view at `heading` (relative to the front).
    fn labels_at(&self, heading: f64) -> LabelFrame {
        let origin = self.pose.position();
        let yaw = self.pose.yaw + heading;
        let layout = self.camera.layout(&self.scene, origin, yaw);
        let look = ObjectLook { styles: &self.styles, labels: &self.labels };
        self.camera.label_buffer(&self.scene, &layout, origin, yaw, look)
    }

    /// Ground-truth detections of the labelled objects visible in the
    /// current RGB image (in the field of view, within
    /// `detection_range_m`, not hidden behind walls or nearer objects),
    /// nearest first.
    pub fn detections(&self) -> Vec<Detection> {
        self.detections_at(0.0)
    }

    /// Ground-truth detections of every labelled object visible in any of
    /// `views` headings around the robot (a detector run on each panorama
    /// view), bearings relative to the robot's front, nearest first, each
    /// object once.
    pub fn detections_around(&self, views: usize) -> Result<Vec<Detection>, HalError> {
        if views == 0 || views > 360 {
            return Err(HalError::invalid_command("views", format!("must be within 1..=360, got {views}")));
        }
        let mut out: Vec<Detection> = Vec::new();
        for heading in Panorama::headings(views) {
            for d in self.detections_at(heading) {
                let dup = out.iter().any(|o| {
                    o.label == d.label
                        && (o.distance_m - d.distance_m).abs() < 1e-6
                        && normalize_angle(o.bearing_rad - d.bearing_rad).abs() < 1e-6
                });
                if !dup {
                    // the bounding box belongs to the view it was seen in; drop it
                    out.push(Detection { bbox: None, ..d });
                }
            }
        }
        out.sort_by(|a, b| a.distance_m.total_cmp(&b.distance_m));
        Ok(out)
    }

    /// Detections in the view at `heading` (relative to the robot's front).
    fn detections_at(&self, heading: f64) -> Vec<Detection> {
        let origin = self.pose.position();
        let layout = self.camera.layout(&self.scene, origin, self.pose.yaw + heading);
        let mut out: Vec<Detection> = self
            .camera
            .visible(&layout, &self.styles, &self.labelled)
            .into_iter()
            .filter_map(|v| {
                let circ = &self.scene.circles[v.idx];
                let distance_m = (origin.distance(circ.c) - circ.r).max(0.0);
                if distance_m > self.config.detection_range_m {
                    return None;
                }
                let label = self.labels[v.idx].clone()?;
                Some(Detection {
                    label,
                    bearing_rad: normalize_angle(origin.bearing_to(circ.c) - self.pose.yaw),
                    distance_m,
                    bbox: Some(v.bbox),
                    ground_truth: true,
                })
            })
            .collect();
        out.sort_by(|a, b| a.distance_m.total_cmp(&b.distance_m));
        out
    }
}
