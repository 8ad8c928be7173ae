//! Plain data exchanged across the HAL traits.

use nav_core::action::StepConfig;
use nav_core::drive::DriveKind;
use nav_core::geometry::Pose2;
use nav_core::raster::RgbFrame;
use serde::{Deserialize, Serialize};

/// A pose estimate with velocities, as `nav_msgs/Odometry` carries it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Odometry {
    /// Estimated pose (frame documented by the implementation; the built-in
    /// simulator reports the arena frame by default).
    pub pose: Pose2,
    /// Forward speed, m/s.
    pub linear: f64,
    /// Yaw rate, rad/s (CCW positive).
    pub angular: f64,
    /// Time of the estimate, seconds on the robot's clock.
    pub stamp_s: f64,
    /// True when `pose` is exact (a noise-free simulator), false for a real
    /// estimate that drifts.
    pub ground_truth: bool,
}

/// The state of a navigation goal handed to the robot's own navigation
/// stack with [`Actuators::start_goal`](super::Actuators::start_goal).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum NavGoalState {
    /// Sent; the stack has not accepted it yet.
    Pending,
    /// Accepted: the stack drives the robot.
    Active,
    /// Reached.
    Succeeded,
    /// Ended without reaching it.
    Failed {
        /// A short code: `aborted`, `canceled`, `rejected`, `not_accepted`.
        code: String,
        /// The reason in words.
        reason: String,
    },
}

/// An RGB camera image with its field of view.
#[derive(Debug, Clone, PartialEq)]
pub struct CameraFrame {
    /// The pixels.
    pub frame: RgbFrame,
    /// Horizontal field of view, radians.
    pub hfov_rad: f64,
    /// Acquisition time, seconds.
    pub stamp_s: f64,
}

impl CameraFrame {
    /// Bearing (radians CCW from the optical axis, positive to the left) of
    /// the centre of pixel column `x` for a pinhole camera.
    pub fn column_bearing(&self, x: f64) -> f64 {
        let w = self.frame.width() as f64;
        if w <= 0.0 {
            return 0.0;
        }
        let f = (w / 2.0) / (self.hfov_rad / 2.0).tan();
        ((w / 2.0 - x) / f).atan()
    }
}

/// A depth image aligned pixel for pixel with the RGB image.
#[derive(Debug, Clone, PartialEq)]
pub struct DepthFrame {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// Row-major depth in metres along the optical axis (perpendicular
    /// distance, as RGB-D cameras report); `f32::INFINITY` where nothing was
    /// within range, NaN where invalid.
    pub depth_m: Vec<f32>,
    /// Acquisition time, seconds.
    pub stamp_s: f64,
}

impl DepthFrame {
    /// Depth at pixel `(x, y)`, if inside the image.
    pub fn at(&self, x: usize, y: usize) -> Option<f32> {
        if x >= self.width || y >= self.height {
            return None;
        }
        self.depth_m.get(y * self.width + x).copied()
    }

    /// Median of the finite depths in the `(2·half+1)²` window around
    /// `(x, y)` (a 5×5 median for `half = 2`, robust to depth holes).
    /// `None` when the window holds no finite value.
    pub fn median_m(&self, x: usize, y: usize, half: usize) -> Option<f32> {
        if self.width == 0 || self.height == 0 {
            return None;
        }
        let (x0, x1) = (x.saturating_sub(half), (x + half).min(self.width - 1));
        let (y0, y1) = (y.saturating_sub(half), (y + half).min(self.height - 1));
        let mut v: Vec<f32> = Vec::with_capacity((2 * half + 1).pow(2));
        for yy in y0..=y1 {
            for xx in x0..=x1 {
                if let Some(d) = self.at(xx, yy).filter(|d| d.is_finite()) {
                    v.push(d);
                }
            }
        }
        if v.is_empty() {
            return None;
        }
        v.sort_by(f32::total_cmp);
        Some(v[v.len() / 2])
    }

    /// The image as ROS `16UC1` millimetres (what `/oak/stereo/image_raw`
    /// publishes): 0 for no measurement (infinite, NaN or non-positive),
    /// saturated at 65535 mm.
    pub fn to_millimetres(&self) -> Vec<u16> {
        self.depth_m
            .iter()
            .map(|&d| if d.is_finite() && d > 0.0 { (d * 1000.0).round().min(65535.0) as u16 } else { 0 })
            .collect()
    }

    /// Builds a frame from `16UC1` millimetres (0 = no measurement, which
    /// becomes NaN). `None` when the buffer length does not match.
    pub fn from_millimetres(width: usize, height: usize, mm: &[u16], stamp_s: f64) -> Option<Self> {
        if mm.len() != width * height {
            return None;
        }
        let depth_m = mm.iter().map(|&v| if v == 0 { f32::NAN } else { f32::from(v) / 1000.0 }).collect();
        Some(Self { width, height, depth_m, stamp_s })
    }
}

/// One view of a panorama.
#[derive(Debug, Clone, PartialEq)]
pub struct PanoramaView {
    /// Heading of the view's optical axis relative to the robot's front,
    /// radians CCW (0 = straight ahead, π/2 = left).
    pub heading_rad: f64,
    /// The image.
    pub frame: CameraFrame,
    /// The depth image of this view, when the robot renders or measures it.
    pub depth: Option<DepthFrame>,
    /// The label buffer of this view (a simulator's semantic sensor), when
    /// the robot has one. Only perfect-detector code reads it: the offline
    /// VLM stand-in and the simulator perception stage, never a loop.
    pub labels: Option<LabelFrame>,
}

impl PanoramaView {
    /// A view with an image only (no depth, no label buffer).
    pub fn image(heading_rad: f64, frame: CameraFrame) -> Self {
        Self { heading_rad, frame, depth: None, labels: None }
    }
}

/// A per-pixel object label image aligned with the RGB image: what a
/// simulator's semantic sensor renders (Habitat's semantic camera, the
/// built-in simulator's label buffer). Only pixels actually rendered in the
/// view carry a label, so occlusion is respected. It is a *perfect
/// detector*: only the offline VLM stand-in and the simulator perception
/// stage read it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LabelFrame {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// Row-major instance ids: 0 = no labelled object, `k` = `labels[k - 1]`.
    pub ids: Vec<u16>,
    /// The class label of each instance id.
    pub labels: Vec<String>,
}

/// One labelled instance of a [`LabelFrame`] with its range from depth.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelRegion {
    /// Object class.
    pub label: String,
    /// Pixel box `[x_min, y_min, x_max, y_max]`, inclusive.
    pub bbox: [u32; 4],
    /// The instance's pixel nearest to the camera (by depth), `[x, y]`.
    pub nearest_px: [u32; 2],
    /// Number of pixels.
    pub pixels: usize,
    /// Distance from the camera to the nearest visible pixel of the
    /// instance along its ray, metres (from the depth image).
    pub range_m: f64,
    /// Bearing of the nearest pixel's column relative to the optical axis,
    /// radians CCW.
    pub bearing_rad: f64,
    /// Bearing of the box centre relative to the optical axis, radians CCW.
    pub centre_bearing_rad: f64,
}

impl LabelFrame {
    /// The labelled instances seen in at least `min_columns` pixel columns,
    /// each with its range from `depth` (pixels without a finite depth are
    /// skipped; an instance without any finite depth is left out), nearest
    /// first. `hfov_rad` is the camera's horizontal field of view. Empty
    /// when `depth` does not have this frame's size.
    pub fn regions(&self, depth: &DepthFrame, hfov_rad: f64, min_columns: usize) -> Vec<LabelRegion> {
        let (w, h) = (self.width, self.height);
        if w == 0 || h == 0 || depth.width != w || depth.height != h || self.ids.len() != w * h {
            return Vec::new();
        }
        let f = (w as f64 / 2.0) / (hfov_rad / 2.0).tan().max(1e-6);
        let bearing = |x: f64| ((w as f64 / 2.0 - x) / f).atan();
        // per id: bbox, pixel count, columns seen, nearest (range, x, y)
        struct Acc {
            bbox: [usize; 4],
            pixels: usize,
            cols: Vec<bool>,
            near: Option<(f64, usize, usize)>,
        }
        let mut acc: Vec<Option<Acc>> = (0..self.labels.len()).map(|_| None).collect();
        for y in 0..h {
            for x in 0..w {
                let id = self.ids[y * w + x] as usize;
                if id == 0 || id > acc.len() {
                    continue;
                }
                let a = acc[id - 1].get_or_insert_with(|| Acc {
                    bbox: [x, y, x, y],
                    pixels: 0,
                    cols: vec![false; w],
                    near: None,
                });
                a.bbox = [a.bbox[0].min(x), a.bbox[1].min(y), a.bbox[2].max(x), a.bbox[3].max(y)];
                a.pixels += 1;
                a.cols[x] = true;
                let z = f64::from(depth.depth_m[y * w + x]);
                if z.is_finite() && z > 0.0 {
                    let r = z / bearing(x as f64 + 0.5).cos().max(1e-6);
                    if a.near.is_none_or(|(n, _, _)| r < n) {
                        a.near = Some((r, x, y));
                    }
                }
            }
        }
        let mut out: Vec<LabelRegion> = acc
            .into_iter()
            .enumerate()
            .filter_map(|(i, a)| {
                let a = a?;
                let (range_m, nx, ny) = a.near?;
                if a.cols.iter().filter(|c| **c).count() < min_columns.max(1) {
                    return None;
                }
                let b = a.bbox;
                Some(LabelRegion {
                    label: self.labels[i].clone(),
                    bbox: [b[0] as u32, b[1] as u32, b[2] as u32, b[3] as u32],
                    nearest_px: [nx as u32, ny as u32],
                    pixels: a.pixels,
                    range_m,
                    bearing_rad: bearing(nx as f64 + 0.5),
                    centre_bearing_rad: bearing((b[0] + b[2]) as f64 / 2.0 + 0.5),
                })
            })
            .collect();
        out.sort_by(|a, b| a.range_m.total_cmp(&b.range_m));
        out
    }

    /// Fills `bbox` (inclusive, clipped to the frame) with a new instance
    /// labelled `label` (for bridges whose detector reports boxes only;
    /// nearer boxes should be painted last).
    pub fn paint_box(&mut self, label: &str, bbox: [u32; 4]) {
        if self.labels.len() >= usize::from(u16::MAX) || self.width == 0 || self.height == 0 {
            return;
        }
        self.labels.push(label.to_string());
        let id = self.labels.len() as u16;
        let x1 = (bbox[2] as usize).min(self.width - 1);
        let y1 = (bbox[3] as usize).min(self.height - 1);
        for y in (bbox[1] as usize)..=y1 {
            for x in (bbox[0] as usize)..=x1 {
                if let Some(p) = self.ids.get_mut(y * self.width + x) {
                    *p = id;
                }
            }
        }
    }
}

/// Views at equal headings around the robot (PixelNav: 12 × 30°).
#[derive(Debug, Clone, PartialEq)]
pub struct Panorama {
    /// The views, in order of increasing heading starting at 0.
    pub views: Vec<PanoramaView>,
}

impl Panorama {
    /// The default number of views (12, every 30°), as PixelNav uses.
    pub const DEFAULT_VIEWS: usize = 12;

    /// Headings (radians CCW) of `n` equally spaced views starting at 0.
    pub fn headings(n: usize) -> Vec<f64> {
        (0..n).map(|k| k as f64 * std::f64::consts::TAU / n as f64).map(nav_core::geometry::normalize_angle).collect()
    }
}

/// An object seen by the robot. Only simulators produce these; they are
/// always ground truth (a real detector would be a separate component).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Detection {
    /// Object class, e.g. `"bed"`.
    pub label: String,
    /// Bearing of the object's centre relative to the robot's front,
    /// radians CCW (positive = left).
    pub bearing_rad: f64,
    /// Distance from the camera to the object's surface, metres.
    pub distance_m: f64,
    /// Pixel box `[x_min, y_min, x_max, y_max]` (inclusive) in the RGB
    /// image, when known.
    pub bbox: Option<[u32; 4]>,
    /// Always true for simulator detections.
    pub ground_truth: bool,
}

/// What a robot offers, so a planner can check before it asks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Capabilities {
    /// Accepts discrete [`Action`](nav_core::action::Action)s.
    pub discrete_actions: bool,
    /// Step sizes of the discrete actions, when they are offered.
    pub step: Option<StepConfig>,
    /// Accepts velocity commands.
    pub velocity: bool,
    /// Accepts waypoint (move-to) commands.
    pub move_to: bool,
    /// Has a LiDAR.
    pub lidar: bool,
    /// Has an RGB camera.
    pub rgb: bool,
    /// Has a depth camera aligned with the RGB camera.
    pub depth: bool,
    /// Can produce panoramas without the caller turning the robot.
    pub panorama: bool,
    /// Produces ground-truth object detections (simulators only).
    pub detections: bool,
    /// Odometry is exact (noise-free simulation).
    pub pose_is_ground_truth: bool,
    /// Steering model for velocity commands.
    pub drive: DriveKind,
}

/// A velocity command held for a duration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct VelocityCommand {
    /// Forward speed, m/s (negative = reverse).
    pub linear: f64,
    /// Yaw rate, rad/s (CCW positive).
    pub angular: f64,
    /// How long to hold it, seconds.
    pub duration_s: f64,
}

impl VelocityCommand {
    /// Checks that every field is finite and the duration non-negative.
    pub fn validate(&self) -> Result<(), crate::HalError> {
        for (field, v) in [("linear", self.linear), ("angular", self.angular), ("duration_s", self.duration_s)] {
            if !v.is_finite() {
                return Err(crate::HalError::invalid_command(field, format!("must be finite, got {v}")));
            }
        }
        if self.duration_s < 0.0 {
            return Err(crate::HalError::invalid_command("duration_s", "must not be negative"));
        }
        Ok(())
    }
}

/// Result of one discrete action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepOutcome {
    /// The move was blocked (one collision counted).
    pub collided: bool,
    /// Distance actually moved, metres.
    pub moved_m: f64,
    /// The robot's pose estimate after the action, when it has one.
    pub pose: Option<Pose2>,
    /// The action was cut short without contact, and why: a safety guard
    /// stopped a HAL-run closed-loop motion (e.g. an obstacle within the
    /// stop distance ahead). `moved_m` and `pose` say how far it got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
}

/// Result of a velocity or move-to command.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MotionOutcome {
    /// Distance travelled, metres.
    pub distance_m: f64,
    /// Time the motion took, seconds.
    pub duration_s: f64,
    /// The robot touched something (one collision counted).
    pub collided: bool,
    /// The command ended before completion (collision, or a move-to that
    /// timed out before arriving).
    pub stopped_early: bool,
}
