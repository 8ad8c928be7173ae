//! Vision mode of the candidates loop: the world
//! model is built from the robot's depth-camera frames only. Each frame is
//! cut to the camera frustum (60° field of view, `range_m` deep),
//! turned into a fan of rays (`nav_hal::depth_scan`) and ray-cast into the
//! grid: free up to the first surface, an obstacle where a surface is. The
//! run starts with a 360° scan of six 60° views.
//!
//! The same frames also mark a second grid, the *seen* grid, that nothing
//! else writes: its known fraction is the run's exploration coverage (its
//! known cells / total cells), so predictions, model corrections
//! and a rasterized ground-truth map never count as explored.

use super::NavError;
use nav_core::geometry::{Pose2, normalize_angle};
use nav_core::grid::{OccupancyGrid, ScanIntegration};
use nav_core::lidar::LaserScan;
use nav_hal::depth_scan::{DepthScanConfig, ScanBuilder};
use nav_hal::hal::Robot;
use serde::{Deserialize, Serialize};

/// How camera frames update the world model (vision mode).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CameraMapping {
    /// Horizontal field of view used from each frame, degrees (60, the
    /// default camera's); a narrower camera uses its own.
    /// Range: [1, 179].
    pub fov_deg: f64,
    /// Depth range used for the map, metres (2.0): surfaces farther away
    /// are not mapped and free space is marked only this far. See
    /// docs/CANDIDATES.md for why 2 m.
    /// Range: [0.2, 20].
    pub range_m: f64,
    /// Views of the initial 360° scan (6 × 60°); 0 skips it.
    /// Range: 0..=36.
    pub initial_scan_views: u32,
    /// Height of the camera above the floor, metres (0.88, the built-in
    /// simulator's): pixels are obstacles when they lie between 0.1 m and
    /// 1.8 m above the floor. `None` uses the rows around the image centre.
    /// Range: (0, 10].
    pub camera_height_m: Option<f64>,
}

impl Default for CameraMapping {
    fn default() -> Self {
        Self { fov_deg: 60.0, range_m: 2.0, initial_scan_views: 6, camera_height_m: Some(0.88) }
    }
}

impl CameraMapping {
    /// Checks the ranges in the field docs; errors name the key.
    pub fn validate(&self) -> Result<(), nav_core::config::ConfigError> {
        use nav_core::config::{count_in, in_range, in_range_above};
        in_range("fov_deg", self.fov_deg, 1.0, 179.0)?;
        in_range("range_m", self.range_m, 0.2, 20.0)?;
        count_in("initial_scan_views", self.initial_scan_views, 0, 36)?;
        if let Some(h) = self.camera_height_m {
            in_range_above("camera_height_m", h, 0.0, 10.0)?;
        }
        Ok(())
    }
}

/// Turns depth frames into grid updates (see the module docs).
pub(crate) struct CameraMapper {
    depth: DepthScanConfig,
    integration: ScanIntegration,
    fov_rad: f64,
    /// The camera's own field of view, read once from its first frame.
    hfov_rad: Option<f64>,
}

impl CameraMapper {
    /// A mapper for `cfg`; `base` gives the confidences of free and hit cells.
    pub(crate) fn new(cfg: &CameraMapping, base: &ScanIntegration) -> Self {
        let range = cfg.range_m as f32;
        Self {
            depth: DepthScanConfig {
                beams: 720,
                range_max_m: range,
                camera_height_m: cfg.camera_height_m,
                ..DepthScanConfig::default()
            },
            integration: ScanIntegration { max_free_range_m: range, ..base.clone() },
            fov_rad: cfg.fov_deg.to_radians(),
            hfov_rad: None,
        }
    }

    /// The current camera frame as a fan of rays inside the frustum, or
    /// `None` when the robot has no depth camera.
    ///
    /// # Errors
    /// A robot failure, or a depth frame that does not fit its size.
    pub(crate) async fn frame<R: Robot + ?Sized>(&mut self, robot: &mut R) -> Result<Option<LaserScan>, NavError> {
        let caps = robot.capabilities();
        if !caps.depth {
            return Ok(None);
        }
        let hfov = match self.hfov_rad {
            Some(h) => h,
            None => {
                let h =
                    if caps.rgb { robot.rgb().await.map(|c| c.hfov_rad).unwrap_or(self.fov_rad) } else { self.fov_rad };
                let h = if h.is_finite() && h > 0.0 && h < std::f64::consts::PI { h } else { self.fov_rad };
                self.hfov_rad = Some(h);
                h
            }
        };
        let depth = robot.depth().await?;
        let mut builder = ScanBuilder::new(&self.depth).map_err(NavError::from)?;
        builder.add_view(&depth, hfov, 0.0).map_err(NavError::from)?;
        let mut scan = builder.finish();
        let half = 0.5 * self.fov_rad.min(hfov);
        for i in 0..scan.ranges.len() {
            if normalize_angle(scan.angle(i)).abs() > half {
                scan.ranges[i] = f32::NAN;
            }
        }
        Ok(Some(scan))
    }

    /// Ray-casts `scan` taken at `pose` into `grid`.
    pub(crate) fn integrate(&self, grid: &mut OccupancyGrid, pose: Pose2, scan: &LaserScan) {
        grid.integrate_scan(pose, scan, &self.integration);
    }
}
