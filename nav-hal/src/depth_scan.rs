//! Planar scans from depth images: a virtual LiDAR for robots that have
//! only an RGB-D camera (Habitat and MiniWorld agents behind the simulator
//! bridge, a RealSense on a robot without a laser).
//!
//! [`ScanBuilder`] turns one or more depth views, each at a heading relative
//! to the robot's front, into a full-circle [`LaserScan`] with ROS
//! semantics. Directions no view covered read NaN (*no data*), so a single
//! camera view gives a scan that is valid inside the camera's field of view
//! only, and twelve panorama views give a complete one.
//!
//! Every depth column is one ray, as ROS `depthimage_to_laserscan` does,
//! and its range is the *horizontal* distance `d·√(1 + (u/f)²)` of the
//! nearest qualifying pixel (`d` the z-depth, `u` the column's offset from
//! the optical centre, `f` the focal length in pixels). Which pixels
//! qualify depends on what is known about the camera:
//!
//! - **camera height known** ([`DepthScanConfig::camera_height_m`], or
//!   reported by the robot; optical axis level): every row counts, and a
//!   pixel is an obstacle when its height above the floor lies within
//!   `[min_obstacle_height_m, max_obstacle_height_m]`, as
//!   `pointcloud_to_laserscan` does. Floor and ceiling pixels are not
//!   obstacles, so low objects (a ball, a box) are seen even though the
//!   camera looks over them. A column with no obstacle pixel but some
//!   floor, ceiling or out-of-range pixels reads `+inf` (nothing within
//!   range).
//! - **camera height unknown**: the [`band_rows`](DepthScanConfig::band_rows)
//!   rows around the optical centre row, the nearest valid depth per column
//!   (`depthimage_to_laserscan`'s `scan_height`). Objects below the band
//!   are not seen.
//!
//! Depth values that are NaN, zero, negative or below
//! [`range_min_m`](DepthScanConfig::range_min_m) are invalid and never
//! become obstacles: a scan built here never holds a phantom obstacle at
//! 0 m (and never `-inf`). A column with only invalid pixels is NaN.
//! Ranges beyond [`range_max_m`](DepthScanConfig::range_max_m) read `+inf`.
//!
//! Each column covers the angular span of its pixel; it is written to every
//! beam of the output whose span it overlaps, and overlapping readings
//! combine as *nearest obstacle wins, then no-return, then no data*.
//!
//! ```
//! use nav_hal::depth_scan::{DepthScanConfig, ScanBuilder};
//! use nav_hal::hal::DepthFrame;
//!
//! // A 90° camera 1.5 m above the floor, facing a wall 2 m away.
//! let (w, h) = (64, 48);
//! let depth = DepthFrame { width: w, height: h, depth_m: vec![2.0; w * h], stamp_s: 0.0 };
//! let config = DepthScanConfig { camera_height_m: Some(1.5), ..DepthScanConfig::default() };
//! let mut scan = ScanBuilder::new(&config)?;
//! scan.add_view(&depth, 90f64.to_radians(), 0.0)?;
//! let scan = scan.finish();
//! let ahead = scan.ranges[scan.len() / 2]; // the beam at 0 rad
//! assert!((ahead - 2.0).abs() < 0.01);
//! assert!(scan.ranges[0].is_nan()); // behind the robot: no data
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::HalError;
use crate::hal::DepthFrame;
use nav_core::geometry::normalize_angle;
use nav_core::lidar::LaserScan;
use serde::{Deserialize, Serialize};
use std::f64::consts::{PI, TAU};

/// How depth images become planar scans (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DepthScanConfig {
    /// Beams of the full-circle output scan (720: 0.5°, like the built-in
    /// simulator's LiDAR).
    pub beams: usize,
    /// Readings nearer than this are invalid, metres (0.1).
    pub range_min_m: f32,
    /// Readings beyond this are "nothing within range", metres (10).
    pub range_max_m: f32,
    /// Height of the camera's optical centre above the floor, metres, with
    /// the optical axis level. `None`: use the robot's own report, and
    /// without one the centre band of rows.
    pub camera_height_m: Option<f64>,
    /// With a known camera height: pixels lower than this above the floor
    /// are floor, metres (0.1).
    pub min_obstacle_height_m: f64,
    /// With a known camera height: pixels higher than this above the floor
    /// are ceiling or overhangs the robot passes under, metres (1.8).
    pub max_obstacle_height_m: f64,
    /// Without a camera height: rows around the optical centre row that
    /// make the scan (5).
    pub band_rows: usize,
}

impl Default for DepthScanConfig {
    fn default() -> Self {
        Self {
            beams: 720,
            range_min_m: 0.1,
            range_max_m: 10.0,
            camera_height_m: None,
            min_obstacle_height_m: 0.1,
            max_obstacle_height_m: 1.8,
            band_rows: 5,
        }
    }
}

impl DepthScanConfig {
    /// Checks every field (finite, positive, ordered).
    pub fn validate(&self) -> Result<(), HalError> {
        let bad =
            |field: &str, message: String| HalError::InvalidConfig { field: format!("depth_scan.{field}"), message };
        if !(4..=36_000).contains(&self.beams) {
            return Err(bad("beams", format!("must be within 4..=36000, got {}", self.beams)));
        }
        if !(self.range_min_m.is_finite() && self.range_min_m > 0.0) {
            return Err(bad("range_min_m", format!("must be finite and positive, got {}", self.range_min_m)));
        }
        if !(self.range_max_m.is_finite() && self.range_max_m > self.range_min_m) {
            return Err(bad("range_max_m", format!("must be finite and above range_min_m, got {}", self.range_max_m)));
        }
        if let Some(h) = self.camera_height_m {
            if !(h.is_finite() && h > 0.0) {
                return Err(bad("camera_height_m", format!("must be finite and positive, got {h}")));
            }
        }
        if !(self.min_obstacle_height_m.is_finite() && self.max_obstacle_height_m.is_finite())
            || self.min_obstacle_height_m >= self.max_obstacle_height_m
        {
            return Err(bad(
                "min_obstacle_height_m",
                format!(
                    "the obstacle band [{}, {}] must be finite and non-empty",
                    self.min_obstacle_height_m, self.max_obstacle_height_m
                ),
            ));
        }
        if self.band_rows == 0 {
            return Err(bad("band_rows", "must be at least 1".into()));
        }
        Ok(())
    }
}

/// Accumulates depth views into one full-circle scan (see the
/// [module docs](self)).
#[derive(Debug, Clone)]
pub struct ScanBuilder {
    config: DepthScanConfig,
    scan: LaserScan,
    /// Per beam: its hit is on an obstacle lower than the camera (known
    /// only with a camera height).
    low: Vec<bool>,
}

impl ScanBuilder {
    /// An empty scan (every beam NaN: no data yet).
    pub fn new(config: &DepthScanConfig) -> Result<Self, HalError> {
        config.validate()?;
        let scan = LaserScan::full_circle(config.beams, config.range_min_m, config.range_max_m, f32::NAN);
        let low = vec![false; scan.ranges.len()];
        Ok(Self { config: config.clone(), scan, low })
    }

    /// The camera height in use (`None`: the centre band of rows).
    pub fn camera_height_m(&self) -> Option<f64> {
        self.config.camera_height_m
    }

    /// Sets the camera height when the configuration leaves it open (a
    /// configured height wins). Non-finite or non-positive heights are
    /// ignored.
    pub fn default_camera_height(mut self, height_m: Option<f64>) -> Self {
        if self.config.camera_height_m.is_none() {
            self.config.camera_height_m = height_m.filter(|h| h.is_finite() && *h > 0.0);
        }
        self
    }

    /// Adds a depth view whose optical axis points `heading_rad` (CCW from
    /// the robot's front) for a pinhole camera of horizontal field of view
    /// `hfov_rad` with square pixels. Errors on a field of view outside
    /// (0, π), a heading that is not finite, or a buffer that does not hold
    /// `width × height` values.
    pub fn add_view(&mut self, depth: &DepthFrame, hfov_rad: f64, heading_rad: f64) -> Result<(), HalError> {
        if !(hfov_rad.is_finite() && hfov_rad > 0.0 && hfov_rad < PI) {
            return Err(HalError::Protocol {
                message: format!("depth view: hfov must be within (0, π), got {hfov_rad}"),
            });
        }
        if !heading_rad.is_finite() {
            return Err(HalError::Protocol { message: "depth view: heading is not finite".into() });
        }
        let (w, h) = (depth.width, depth.height);
        if w.checked_mul(h) != Some(depth.depth_m.len()) {
            return Err(HalError::Protocol {
                message: format!("depth view: {} values do not fill {w}x{h}", depth.depth_m.len()),
            });
        }
        if w == 0 || h == 0 {
            return Ok(());
        }
        let f = (w as f64 / 2.0) / (hfov_rad / 2.0).tan();
        for (x, (reading, low)) in self.columns(depth, f).into_iter().enumerate() {
            if reading.is_nan() {
                continue;
            }
            // the pixel's angular span: left edge at offset w/2 - x, right edge one pixel further right
            let left = ((w as f64 / 2.0 - x as f64) / f).atan();
            let right = ((w as f64 / 2.0 - x as f64 - 1.0) / f).atan();
            self.write_span(heading_rad + right, heading_rad + left, reading, low);
        }
        Ok(())
    }

    /// The scan.
    pub fn finish(self) -> LaserScan {
        self.scan
    }

    /// The scan, and per beam whether its hit is on an obstacle lower than
    /// the camera (all the top of it that the camera saw was below the
    /// camera's height: a box, a ball, a chair — not a wall). Always false
    /// without a camera height.
    pub fn finish_with_low(self) -> (LaserScan, Vec<bool>) {
        (self.scan, self.low)
    }

    /// The reading of every column: a hit distance, `+inf` or NaN, and
    /// whether the hit's obstacle stays below the camera's height (the
    /// highest of its pixels within [`SAME_OBSTACLE_M`] of the hit). One
    /// pass over the rows in memory order (a column at a time strides
    /// across the whole image for every pixel).
    fn columns(&self, depth: &DepthFrame, f: f64) -> Vec<(f32, bool)> {
        let (w, h) = (depth.width, depth.height);
        let stretch: Vec<f64> = (0..w)
            .map(|x| {
                let u = w as f64 / 2.0 - (x as f64 + 0.5);
                (1.0 + (u / f) * (u / f)).sqrt()
            })
            .collect();
        let (range_min, range_max) = (f64::from(self.config.range_min_m), f64::from(self.config.range_max_m));
        let rows = match self.config.camera_height_m {
            Some(_) => 0..h,
            None => {
                let band = self.config.band_rows.min(h);
                let top = (h - band) / 2;
                top..top + band
            }
        };
        let mut nearest = vec![f64::INFINITY; w];
        let mut top = vec![f64::NEG_INFINITY; w];
        let mut free = vec![false; w];
        for y in rows {
            let v = h as f64 / 2.0 - (y as f64 + 0.5);
            for (x, &depth_m) in depth.depth_m[y * w..(y + 1) * w].iter().enumerate() {
                let d = f64::from(depth_m);
                if d == f64::INFINITY {
                    free[x] = true; // nothing within the sensor's range along this pixel
                    continue;
                }
                if !(d.is_finite() && d > 0.0) {
                    continue;
                }
                let r = d * stretch[x];
                if let Some(cam_h) = self.config.camera_height_m {
                    let z = cam_h + v * d / f;
                    if z < self.config.min_obstacle_height_m || z > self.config.max_obstacle_height_m {
                        // floor or ceiling: evidence of free space up to here, not an obstacle
                        if r >= range_min {
                            free[x] = true;
                        }
                        continue;
                    }
                }
                if r < range_min {
                    continue;
                }
                if r > range_max {
                    free[x] = true;
                    continue;
                }
                if let Some(cam_h) = self.config.camera_height_m {
                    let z = cam_h + v * d / f;
                    if r < nearest[x] - SAME_OBSTACLE_M {
                        top[x] = z;
                    } else if r <= nearest[x] + SAME_OBSTACLE_M {
                        top[x] = top[x].max(z);
                    }
                }
                nearest[x] = nearest[x].min(r);
            }
        }
        let cam_h = self.config.camera_height_m.unwrap_or(f64::NEG_INFINITY);
        nearest
            .iter()
            .zip(&free)
            .zip(&top)
            .map(|((&n, &free), &top)| {
                if n.is_finite() {
                    (n as f32, top < cam_h)
                } else if free {
                    (f32::INFINITY, false)
                } else {
                    (f32::NAN, false)
                }
            })
            .collect()
    }

    /// Combines `reading` into every beam whose span overlaps `[lo, hi]`
    /// (radians CCW, `lo <= hi`, not normalized).
    fn write_span(&mut self, lo: f64, hi: f64, reading: f32, low: bool) {
        let n = self.scan.ranges.len();
        let inc = TAU / n as f64;
        // beam k is centred on -π + k·inc and spans half an increment either side
        let width = (hi - lo).max(0.0);
        let lo = normalize_angle(lo);
        let first = ((lo + PI) / inc + 0.5).floor() as i64;
        let last = ((lo + width + PI) / inc + 0.5).floor() as i64;
        for k in first..=last.min(first + n as i64 - 1) {
            let i = k.rem_euclid(n as i64) as usize;
            let before = self.scan.ranges[i];
            self.scan.ranges[i] = combine(before, reading);
            // the flag goes with the reading that wins the beam
            if self.scan.ranges[i].to_bits() != before.to_bits() {
                self.low[i] = low;
            }
        }
    }
}

/// Depth pixels whose ranges differ by at most this belong to the same
/// obstacle (for its height), metres.
const SAME_OBSTACLE_M: f64 = 0.15;

/// Two readings of the same direction: the nearer hit wins; a hit beats
/// no-return; either beats no data.
fn combine(a: f32, b: f32) -> f32 {
    match (a.is_finite(), b.is_finite()) {
        (true, true) => a.min(b),
        (true, false) => a,
        (false, true) => b,
        (false, false) if a == f32::INFINITY || b == f32::INFINITY => f32::INFINITY,
        _ => f32::NAN,
    }
}

/// Adds point obstacles (bearing radians CCW from the front, range metres)
/// to a scan: each lands on its nearest beam, where the nearer hit wins.
/// Points with a non-finite bearing, or a range outside
/// `[range_min, range_max]`, are skipped (never a phantom at 0 m).
pub fn overlay_points(scan: &mut LaserScan, points: impl IntoIterator<Item = (f64, f64)>) {
    let n = scan.ranges.len();
    if n == 0 || !scan.header_is_valid() {
        return;
    }
    for (bearing, range) in points {
        let r = range as f32;
        if !(bearing.is_finite() && r.is_finite() && r >= scan.range_min && r <= scan.range_max) {
            continue;
        }
        let k = ((normalize_angle(bearing - scan.angle_min)) / scan.angle_increment).round();
        let i = (k as i64).rem_euclid(n as i64) as usize;
        scan.ranges[i] = combine(scan.ranges[i], r);
    }
}

/// One depth view as a full-circle scan (NaN outside the view).
pub fn depth_to_scan(
    depth: &DepthFrame,
    hfov_rad: f64,
    heading_rad: f64,
    config: &DepthScanConfig,
) -> Result<LaserScan, HalError> {
    let mut b = ScanBuilder::new(config)?;
    b.add_view(depth, hfov_rad, heading_rad)?;
    Ok(b.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use nav_core::lidar::{Reading, corridor_clearance};
    use proptest::prelude::*;

    fn frame(w: usize, h: usize, f: impl Fn(usize, usize) -> f32) -> DepthFrame {
        let mut depth_m = Vec::with_capacity(w * h);
        for y in 0..h {
            for x in 0..w {
                depth_m.push(f(x, y));
            }
        }
        DepthFrame { width: w, height: h, depth_m, stamp_s: 0.0 }
    }

    fn beam_at(scan: &LaserScan, angle: f64) -> f32 {
        let i = ((angle + PI) / scan.angle_increment).round() as usize % scan.len();
        scan.ranges[i]
    }

    /// A level pinhole camera `cam_h` above an infinite floor, facing a wall
    /// `wall` metres ahead: the depth of each pixel.
    fn room(w: usize, h: usize, hfov: f64, cam_h: f64, wall: f64) -> DepthFrame {
        let f = (w as f64 / 2.0) / (hfov / 2.0).tan();
        frame(w, h, |_, y| {
            let v = h as f64 / 2.0 - (y as f64 + 0.5);
            // the floor is hit where cam_h + v·d/f = 0
            let floor = if v < 0.0 { cam_h * f / -v } else { f64::INFINITY };
            floor.min(wall) as f32
        })
    }

    #[test]
    fn a_wall_ahead_is_a_flat_line_at_its_distance() {
        let hfov = 90f64.to_radians();
        let d = room(160, 120, hfov, 1.5, 3.0);
        let cfg = DepthScanConfig { camera_height_m: Some(1.5), ..DepthScanConfig::default() };
        let s = depth_to_scan(&d, hfov, 0.0, &cfg).unwrap();
        assert_eq!(s.len(), 720);
        for deg in [-40.0f64, -20.0, 0.0, 20.0, 40.0] {
            let a = deg.to_radians();
            let expect = 3.0 / a.cos();
            let got = f64::from(beam_at(&s, a));
            assert!((got - expect).abs() < 0.03, "{deg}°: {got} vs {expect}");
        }
        // outside the 90° view: no data
        for deg in [-60.0f64, 60.0, 120.0, 180.0] {
            assert!(beam_at(&s, deg.to_radians()).is_nan(), "{deg}°");
        }
        // a forward check sees the wall
        assert!((corridor_clearance(&s, 0.2) - 2.8).abs() < 0.05);
    }

    #[test]
    fn the_floor_is_not_an_obstacle_but_a_low_box_is() {
        let hfov = 90f64.to_radians();
        let (w, h, cam_h) = (160usize, 120usize, 1.5);
        let f = (w as f64 / 2.0) / (hfov / 2.0).tan();
        // open floor (no wall within range), plus a 0.5 m tall box face 2.5 m ahead in the middle columns
        let d = frame(w, h, |x, y| {
            let v = h as f64 / 2.0 - (y as f64 + 0.5);
            let floor = if v < 0.0 { cam_h * f / -v } else { f64::INFINITY };
            let box_top_v = (0.5 - cam_h) * f / 2.5; // row offset of the box's top edge
            let in_box = (70..90).contains(&x) && v <= box_top_v && floor > 2.5;
            (if in_box { 2.5 } else { floor }) as f32
        });
        let cfg = DepthScanConfig { camera_height_m: Some(cam_h), ..DepthScanConfig::default() };
        let s = depth_to_scan(&d, hfov, 0.0, &cfg).unwrap();
        assert!((beam_at(&s, 0.0) - 2.5).abs() < 0.02, "{}", beam_at(&s, 0.0));
        // beside the box only floor and sky: nothing within range
        assert_eq!(beam_at(&s, 30f64.to_radians()), f32::INFINITY);
        // without the camera height the centre band looks over the box
        let band = depth_to_scan(&d, hfov, 0.0, &DepthScanConfig::default()).unwrap();
        assert_eq!(beam_at(&band, 0.0), f32::INFINITY);
        // the box is lower than the camera, a wall is not
        let mut b = ScanBuilder::new(&cfg).unwrap();
        b.add_view(&d, hfov, 0.0).unwrap();
        let (s, low) = b.finish_with_low();
        let i = ((0.0 + PI) / s.angle_increment).round() as usize % s.len();
        assert!(low[i], "the box's beam is low");
        let mut b = ScanBuilder::new(&cfg).unwrap();
        b.add_view(&room(w, h, hfov, cam_h, 3.0), hfov, 0.0).unwrap();
        let (_, low) = b.finish_with_low();
        assert!(low.iter().all(|l| !l), "a wall is not low");
    }

    #[test]
    fn invalid_depths_never_become_obstacles() {
        let hfov = 60f64.to_radians();
        for bad in [f32::NAN, 0.0, -1.0, f32::NEG_INFINITY, 0.01] {
            let d = frame(40, 30, |_, _| bad);
            for cam in [None, Some(1.0)] {
                let cfg = DepthScanConfig { camera_height_m: cam, ..DepthScanConfig::default() };
                let s = depth_to_scan(&d, hfov, 0.0, &cfg).unwrap();
                assert!(s.ranges.iter().all(|r| r.is_nan()), "{bad} {cam:?}");
            }
        }
        // all +inf: free in view, no data elsewhere
        let d = frame(40, 30, |_, _| f32::INFINITY);
        let s = depth_to_scan(&d, hfov, 0.0, &DepthScanConfig::default()).unwrap();
        assert_eq!(beam_at(&s, 0.0), f32::INFINITY);
        assert!(beam_at(&s, PI / 2.0).is_nan());
        // beyond range_max: no return
        let d = frame(40, 30, |_, _| 50.0);
        let s = depth_to_scan(&d, hfov, 0.0, &DepthScanConfig::default()).unwrap();
        assert_eq!(beam_at(&s, 0.0), f32::INFINITY);
    }

    #[test]
    fn views_at_headings_compose_a_full_circle() {
        // a 6 m square room seen from its centre through twelve 75° views
        let hfov = 75f64.to_radians();
        let (w, h) = (64usize, 48usize);
        let f = (w as f64 / 2.0) / (hfov / 2.0).tan();
        let cfg = DepthScanConfig { camera_height_m: Some(1.0), ..DepthScanConfig::default() };
        let mut b = ScanBuilder::new(&cfg).unwrap();
        for k in 0..12 {
            let heading = normalize_angle(k as f64 * TAU / 12.0);
            let d = frame(w, h, |x, _| {
                let a = heading + ((w as f64 / 2.0 - (x as f64 + 0.5)) / f).atan();
                let t = (3.0 / a.cos().abs()).min(3.0 / a.sin().abs());
                // z-depth of the wall point along this column
                (t * ((a - heading).cos())) as f32
            });
            b.add_view(&d, hfov, heading).unwrap();
        }
        let s = b.finish();
        assert!(s.ranges.iter().all(|r| r.is_finite()), "no gaps in a 12-view composite");
        for i in (0..720).step_by(7) {
            let a = s.angle(i);
            let expect = (3.0 / a.cos().abs()).min(3.0 / a.sin().abs());
            assert!((f64::from(s.ranges[i]) - expect).abs() < 0.12, "beam {i} at {a}: {} vs {expect}", s.ranges[i]);
        }
    }

    #[test]
    fn narrow_images_fill_every_beam_they_cover() {
        // 16 columns over 90°: each column spans several 0.5° beams
        let d = frame(16, 12, |_, _| 2.0);
        let s = depth_to_scan(&d, 90f64.to_radians(), 0.0, &DepthScanConfig::default()).unwrap();
        let covered: Vec<usize> = (0..s.len()).filter(|&i| s.ranges[i].is_finite()).collect();
        assert!((178..=182).contains(&covered.len()), "{}", covered.len());
        assert!(covered.windows(2).all(|p| p[1] == p[0] + 1), "contiguous");
    }

    #[test]
    fn overlaid_points_are_hits_on_their_beam() {
        let mut s = LaserScan::full_circle(720, 0.1, 10.0, f32::NAN);
        s.ranges[360] = 3.0; // straight ahead
        overlay_points(
            &mut s,
            [(0.0, 0.6), (PI / 2.0, 1.0), (-PI, 2.0), (0.3, 0.05), (0.3, f64::NAN), (f64::NAN, 1.0)],
        );
        assert_eq!(beam_at(&s, 0.0), 0.6, "the nearer hit wins");
        assert_eq!(beam_at(&s, PI / 2.0), 1.0);
        assert_eq!(beam_at(&s, PI), 2.0, "-π and π are the same beam");
        assert!(beam_at(&s, 0.3).is_nan(), "below range_min or not finite: skipped");
        assert_eq!(s.ranges.iter().filter(|r| !r.is_nan()).count(), 3);
    }

    #[test]
    fn bad_input_is_an_error() {
        let d = frame(4, 3, |_, _| 1.0);
        let cfg = DepthScanConfig::default();
        let mut b = ScanBuilder::new(&cfg).unwrap();
        assert!(b.add_view(&d, 0.0, 0.0).is_err());
        assert!(b.add_view(&d, PI, 0.0).is_err());
        assert!(b.add_view(&d, 1.0, f64::NAN).is_err());
        let short = DepthFrame { depth_m: vec![1.0; 5], ..d };
        assert!(b.add_view(&short, 1.0, 0.0).is_err());
        assert!(ScanBuilder::new(&DepthScanConfig { beams: 0, ..cfg.clone() }).is_err());
        assert!(ScanBuilder::new(&DepthScanConfig { range_min_m: 0.0, ..cfg.clone() }).is_err());
        assert!(ScanBuilder::new(&DepthScanConfig { max_obstacle_height_m: 0.0, ..cfg.clone() }).is_err());
        assert!(ScanBuilder::new(&DepthScanConfig { camera_height_m: Some(f64::NAN), ..cfg }).is_err());
    }

    proptest! {
        #[test]
        fn a_view_covers_its_field_of_view_at_any_heading(
            w in 1usize..64, hfov_deg in 1.0f64..179.0, heading in -20.0f64..20.0,
        ) {
            let d = frame(w, 3, |_, _| 2.0);
            let s = depth_to_scan(&d, hfov_deg.to_radians(), heading, &DepthScanConfig::default()).unwrap();
            let covered = s.ranges.iter().filter(|r| !r.is_nan()).count() as f64;
            let expect = hfov_deg.to_radians() / s.angle_increment;
            prop_assert!(covered >= expect - 1.0 && covered <= expect + 2.0 * w as f64 + 1.0, "{} vs {}", covered, expect);
            // the beam on the view's axis has a reading: the wall, no nearer than its z-depth (or beyond range)
            let axis = beam_at(&s, normalize_angle(heading));
            prop_assert!(axis >= 2.0 - 1e-3, "{}", axis);
        }

        #[test]
        fn never_a_phantom_obstacle(
            w in 1usize..24, h in 1usize..16,
            values in proptest::collection::vec(
                prop_oneof![Just(f32::NAN), Just(f32::INFINITY), Just(f32::NEG_INFINITY), Just(0.0f32), -5.0f32..30.0],
                384,
            ),
            hfov_deg in 1.0f64..179.0,
            heading in -10.0f64..10.0,
            cam in proptest::option::of(0.2f64..2.5),
        ) {
            let d = DepthFrame { width: w, height: h, depth_m: values[..w * h].to_vec(), stamp_s: 0.0 };
            let cfg = DepthScanConfig { camera_height_m: cam, ..DepthScanConfig::default() };
            let s = depth_to_scan(&d, hfov_deg.to_radians(), heading, &cfg).unwrap();
            prop_assert_eq!(s.len(), 720);
            prop_assert!(s.header_is_valid());
            for &r in &s.ranges {
                // only NaN, +inf or a hit within [range_min, range_max]
                prop_assert!(r.is_nan() || r == f32::INFINITY || (r >= cfg.range_min_m && r <= cfg.range_max_m), "{}", r);
                prop_assert!(!matches!(s.classify(r), Reading::TooClose));
            }
        }
    }
}
