//! LiDAR processing: the
//! 12-sector summary and its text form, nearest obstacle, doorway/gap
//! detection, affordance scores, minimum time-to-collision and proportional
//! speed scaling.
//!
//! Readings follow the ROS `sensor_msgs/LaserScan` convention (REP-117):
//! `+inf` or a value above `range_max` means *no return* (free up to
//! `range_max`), `-inf` means *too close to measure* (treated as an obstacle
//! at `range_min`), and NaN or a finite value below `range_min` is an invalid
//! reading that is ignored. No reading ever becomes a phantom obstacle at 0 m.
//!
//! Angles in a [`LaserScan`] are counter-clockwise radians from the robot's
//! front. The text summary, like the prompts, prints *clockwise* bearings.

use crate::geometry::{clockwise_deg, normalize_angle};
use serde::{Deserialize, Serialize};
use std::f64::consts::{PI, TAU};
use std::fmt::Write as _;

/// A LiDAR scan with its acquisition time: what a HAL returns and what the
/// safety layer judges freshness by.
///
/// ```
/// use nav_core::lidar::{LaserScan, StampedScan};
/// let s = StampedScan { scan: LaserScan::full_circle(8, 0.05, 12.0, 3.0), stamp_s: 10.0 };
/// assert_eq!(s.age_s(10.25), 0.25);
/// assert_eq!(s.age_s(9.0), 0.0, "a stamp from the future is not negative age");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StampedScan {
    /// The scan (ROS `LaserScan` semantics, angles CCW from the front).
    pub scan: LaserScan,
    /// Acquisition time, seconds on the robot's clock.
    pub stamp_s: f64,
}

impl StampedScan {
    /// Seconds between the acquisition and `now_s` (0 when the stamp is
    /// ahead of `now_s`; infinite when either is not finite).
    pub fn age_s(&self, now_s: f64) -> f64 {
        scan_age_s(self.stamp_s, now_s)
    }
}

/// Seconds between a scan stamped `stamp_s` and `now_s`: 0 for a stamp
/// ahead of `now_s`, infinite (never fresh) when the difference is not
/// finite (a NaN or infinite stamp).
pub fn scan_age_s(stamp_s: f64, now_s: f64) -> f64 {
    let age = now_s - stamp_s;
    if age.is_finite() { age.max(0.0) } else { f64::INFINITY }
}

/// A planar laser scan with ROS `LaserScan` semantics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaserScan {
    /// Angle of the first beam, radians CCW from the robot's front.
    pub angle_min: f64,
    /// Angle between consecutive beams, radians (positive: CCW order).
    pub angle_increment: f64,
    /// Minimum valid range, metres.
    pub range_min: f32,
    /// Maximum valid range, metres.
    pub range_max: f32,
    /// One range per beam, metres (may hold NaN and ±inf).
    pub ranges: Vec<f32>,
}

/// What one range value means.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reading {
    /// A return at this distance (metres), inside `[range_min, range_max]`.
    Hit(f32),
    /// Nothing within `range_max` (`+inf` or above `range_max`).
    NoReturn,
    /// An object closer than `range_min` (`-inf`).
    TooClose,
    /// An erroneous reading (NaN, or finite below `range_min`): ignored.
    Invalid,
}

impl LaserScan {
    /// A full-circle scan of `n` beams starting at angle −π, every range set
    /// to `fill` (use `f32::INFINITY` for an empty world).
    pub fn full_circle(n: usize, range_min: f32, range_max: f32, fill: f32) -> Self {
        let n = n.max(1);
        Self { angle_min: -PI, angle_increment: TAU / n as f64, range_min, range_max, ranges: vec![fill; n] }
    }

    /// Number of beams.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// True when the scan has no beams.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Angle of beam `i`, radians CCW, normalized to `(-π, π]`.
    pub fn angle(&self, i: usize) -> f64 {
        normalize_angle(self.angle_min + i as f64 * self.angle_increment)
    }

    /// True when the header fields are usable (finite, positive increment,
    /// `0 <= range_min < range_max`).
    pub fn header_is_valid(&self) -> bool {
        self.angle_min.is_finite()
            && self.angle_increment.is_finite()
            && self.angle_increment != 0.0
            && self.range_min.is_finite()
            && self.range_max.is_finite()
            && self.range_min >= 0.0
            && self.range_max > self.range_min
    }

    /// Classifies a raw range value under this scan's limits.
    pub fn classify(&self, r: f32) -> Reading {
        if r.is_nan() {
            Reading::Invalid
        } else if r == f32::INFINITY || r > self.range_max {
            Reading::NoReturn
        } else if r == f32::NEG_INFINITY {
            Reading::TooClose
        } else if r < self.range_min {
            Reading::Invalid
        } else {
            Reading::Hit(r)
        }
    }

    /// The distance a reading stands for when reasoning about free space:
    /// hits as measured, no-return as `range_max`, too-close as `range_min`,
    /// invalid as `None`.
    pub fn effective(&self, r: f32) -> Option<f32> {
        match self.classify(r) {
            Reading::Hit(d) => Some(d),
            Reading::NoReturn => Some(self.range_max),
            Reading::TooClose => Some(self.range_min),
            Reading::Invalid => None,
        }
    }

    /// The distance of an *obstacle* for a reading: hits and too-close only.
    pub fn obstacle(&self, r: f32) -> Option<f32> {
        match self.classify(r) {
            Reading::Hit(d) => Some(d),
            Reading::TooClose => Some(self.range_min),
            Reading::NoReturn | Reading::Invalid => None,
        }
    }

    /// Iterates `(angle_rad, effective_distance)` over usable beams.
    pub fn effective_beams(&self) -> impl Iterator<Item = (f64, f32)> + '_ {
        let ok = self.header_is_valid();
        self.ranges
            .iter()
            .enumerate()
            .filter(move |_| ok)
            .filter_map(move |(i, &r)| self.effective(r).map(|d| (self.angle(i), d)))
    }

    /// Iterates `(angle_rad, obstacle_distance)` over beams that saw an
    /// obstacle.
    pub fn obstacle_beams(&self) -> impl Iterator<Item = (f64, f32)> + '_ {
        let ok = self.header_is_valid();
        self.ranges
            .iter()
            .enumerate()
            .filter(move |_| ok)
            .filter_map(move |(i, &r)| self.obstacle(r).map(|d| (self.angle(i), d)))
    }
}

/// Qualitative clearance label of a sector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ClearanceLabel {
    /// ≥ 2 m.
    Clear,
    /// < 2 m.
    Near,
    /// < 1 m.
    Obstacle,
    /// < 0.5 m.
    Wall,
}

impl ClearanceLabel {
    /// Upper-case label as printed in the summary.
    pub fn as_str(self) -> &'static str {
        match self {
            ClearanceLabel::Clear => "CLEAR",
            ClearanceLabel::Near => "NEAR",
            ClearanceLabel::Obstacle => "OBSTACLE",
            ClearanceLabel::Wall => "WALL",
        }
    }
}

/// Thresholds of the LiDAR summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LidarConfig {
    /// Percentile used as a sector's distance (0.1 = 10th percentile).
    pub percentile: f64,
    /// At or beyond this a sector is CLEAR, metres.
    pub clear_m: f32,
    /// Below this a sector is OBSTACLE, metres.
    pub obstacle_m: f32,
    /// Below this a sector is WALL, metres.
    pub wall_m: f32,
    /// A range jump larger than this opens or closes a gap, metres.
    pub gap_jump_m: f32,
    /// Gaps narrower than this are ignored, metres.
    pub gap_min_width_m: f64,
    /// Gaps up to this width are called "doorway", wider ones "opening".
    pub doorway_max_width_m: f64,
    /// Gaps spanning a wider angle than this (degrees) are open space, not
    /// gaps between two edges.
    pub gap_max_span_deg: f64,
}

impl Default for LidarConfig {
    fn default() -> Self {
        Self {
            percentile: 0.1,
            clear_m: 2.0,
            obstacle_m: 1.0,
            wall_m: 0.5,
            gap_jump_m: 1.0,
            gap_min_width_m: 0.6,
            doorway_max_width_m: 1.5,
            gap_max_span_deg: 150.0,
        }
    }
}

impl LidarConfig {
    /// Label for a sector distance.
    pub fn label(&self, d: f32) -> ClearanceLabel {
        if d < self.wall_m {
            ClearanceLabel::Wall
        } else if d < self.obstacle_m {
            ClearanceLabel::Obstacle
        } else if d < self.clear_m {
            ClearanceLabel::Near
        } else {
            ClearanceLabel::Clear
        }
    }
}

/// Names of the 12 sectors, indexed by clockwise bearing / 30°.
pub const SECTOR_NAMES: [&str; 12] = [
    "front",
    "front-right",
    "right-front",
    "right",
    "right-back",
    "back-right",
    "back",
    "back-left",
    "left-back",
    "left",
    "left-front",
    "front-left",
];

/// One 30° sector of the summary.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sector {
    /// Clockwise bearing of the sector centre, degrees (0, 30, …, 330).
    pub bearing_deg: u16,
    /// Sector name (`front`, `front-right`, …).
    pub name: &'static str,
    /// Percentile distance of the sector, metres; `None` without readings.
    pub distance_m: Option<f32>,
    /// Label of `distance_m`.
    pub label: Option<ClearanceLabel>,
}

/// The nearest obstacle return.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Nearest {
    /// Distance, metres.
    pub distance_m: f32,
    /// Angle, radians CCW from the front.
    pub angle_rad: f64,
    /// Clockwise bearing, degrees `[0, 360)`.
    pub bearing_deg: f64,
    /// Name of the sector containing it.
    pub sector: &'static str,
}

/// A gap between two obstacle edges (a doorway or opening).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Gap {
    /// Angle of the gap centre, radians CCW from the front.
    pub angle_rad: f64,
    /// Clockwise bearing of the gap centre, degrees `[0, 360)`.
    pub bearing_deg: f64,
    /// Width between the two edge points, metres.
    pub width_m: f64,
    /// Distance to the midpoint between the edges, metres.
    pub distance_m: f64,
    /// `doorway` or `opening`.
    pub kind: &'static str,
}

/// The 12-sector LiDAR summary of one scan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LidarSummary {
    /// Sectors in clockwise order starting at the front.
    pub sectors: [Sector; 12],
    /// Nearest obstacle, if any beam saw one.
    pub nearest: Option<Nearest>,
    /// Detected gaps, in scan order.
    pub gaps: Vec<Gap>,
}

/// Sector index (0..12) of a CCW angle.
pub fn sector_index(angle_rad: f64) -> usize {
    let cw = clockwise_deg(angle_rad);
    // `cw` is never negative, so truncation is the floor (and a NaN maps
    // to 0 either way)
    ((cw + 15.0) / 30.0) as usize % 12
}

/// Linear-interpolated percentile of `values` (numpy's default method).
/// Reorders `values`. Returns `None` for an empty slice.
pub fn percentile(values: &mut [f32], p: f64) -> Option<f32> {
    if values.is_empty() {
        return None;
    }
    let p = if p.is_finite() { p.clamp(0.0, 1.0) } else { 0.0 };
    let pos = p * (values.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let frac = (pos - lo as f64) as f32;
    let (_, lo_v, rest) = values.select_nth_unstable_by(lo, f32::total_cmp);
    let lo_v = *lo_v;
    if frac == 0.0 || rest.is_empty() {
        return Some(lo_v);
    }
    // the next order statistic in the same (total) order as the selection
    let hi_v = rest.iter().copied().min_by(f32::total_cmp).unwrap_or(lo_v);
    Some(lo_v + (hi_v - lo_v) * frac)
}

/// [`percentile`] with the same result, faster for the low percentiles of
/// the summary: the two order statistics it needs are picked by insertion
/// into a short sorted array (`f32::total_cmp` order, as `percentile`).
fn low_percentile(values: &mut [f32], p: f64) -> Option<f32> {
    const K: usize = 16;
    if values.is_empty() {
        return None;
    }
    let pc = if p.is_finite() { p.clamp(0.0, 1.0) } else { 0.0 };
    let pos = pc * (values.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let need = (lo + 2).min(values.len());
    if need > K {
        return percentile(values, p);
    }
    let frac = (pos - lo as f64) as f32;
    let mut smallest = [0.0f32; K];
    let mut len = 0;
    for &v in values.iter() {
        if len == need && v.total_cmp(&smallest[len - 1]).is_ge() {
            continue;
        }
        let mut j = if len == need { len - 1 } else { len };
        while j > 0 && v.total_cmp(&smallest[j - 1]).is_lt() {
            smallest[j] = smallest[j - 1];
            j -= 1;
        }
        smallest[j] = v;
        len = (len + 1).min(need);
    }
    let lo_v = smallest[lo];
    if frac == 0.0 || lo + 1 >= values.len() {
        return Some(lo_v);
    }
    let hi_v = smallest[lo + 1];
    Some(lo_v + (hi_v - lo_v) * frac)
}

impl LidarSummary {
    /// Summarizes a scan. Never panics, whatever the values.
    pub fn from_scan(scan: &LaserScan, config: &LidarConfig) -> Self {
        let mut buckets: [Vec<f32>; 12] = Default::default();
        let mut nearest: Option<Nearest> = None;
        // the usable beams as (index, angle, effective distance), shared
        // with the gap detection so each angle is computed once
        let mut beams: Vec<(usize, f64, f32)> = Vec::new();
        if scan.header_is_valid() {
            let per_sector = scan.ranges.len() / 12 + 2;
            for b in &mut buckets {
                b.reserve(per_sector);
            }
            beams.reserve(scan.ranges.len());
            for (i, &r) in scan.ranges.iter().enumerate() {
                let reading = scan.classify(r);
                let (effective, obstacle) = match reading {
                    Reading::Hit(d) => (Some(d), Some(d)),
                    Reading::NoReturn => (Some(scan.range_max), None),
                    Reading::TooClose => (Some(scan.range_min), Some(scan.range_min)),
                    Reading::Invalid => (None, None),
                };
                if effective.is_none() && obstacle.is_none() {
                    continue;
                }
                let a = scan.angle(i);
                let k = sector_index(a);
                if let Some(d) = effective {
                    buckets[k].push(d);
                    beams.push((i, a, d));
                }
                if let Some(d) = obstacle {
                    if nearest.is_none_or(|n| d < n.distance_m) {
                        nearest = Some(Nearest {
                            distance_m: d,
                            angle_rad: a,
                            bearing_deg: clockwise_deg(a),
                            sector: SECTOR_NAMES[k],
                        });
                    }
                }
            }
        }
        let sectors = std::array::from_fn(|k| {
            let distance_m = low_percentile(&mut buckets[k], config.percentile);
            Sector {
                bearing_deg: (k * 30) as u16,
                name: SECTOR_NAMES[k],
                distance_m,
                label: distance_m.map(|d| config.label(d)),
            }
        });
        let gaps = gaps_in(scan, config, &beams);
        Self { sectors, nearest, gaps }
    }

    /// The full text layout:
    ///
    /// ```text
    /// LIDAR (12 sectors, 30° each, clockwise from front):
    ///   000° front:       2.9m CLEAR
    ///   …
    /// Nearest: 0.5m at 90° (right)
    /// Gaps: doorway at 315°, width 0.9m, dist 2.1m
    /// ```
    pub fn to_text(&self) -> String {
        let mut s = String::with_capacity(700 + 48 * self.gaps.len());
        s.push_str("LIDAR (12 sectors, 30° each, clockwise from front):\n");
        for sec in &self.sectors {
            // "  {:03}° {name}:" left-aligned in 18 characters
            s.push_str("  ");
            let start = s.len();
            let _ = write!(s, "{:03}", sec.bearing_deg);
            s.push_str("° ");
            s.push_str(sec.name);
            s.push(':');
            let chars = s[start..].chars().count();
            for _ in chars..18 {
                s.push(' ');
            }
            match (sec.distance_m, sec.label) {
                (Some(d), Some(l)) => {
                    push_fixed(&mut s, f64::from(d), 1);
                    s.push_str("m ");
                    s.push_str(l.as_str());
                    s.push('\n');
                }
                _ => s.push_str("no data\n"),
            }
        }
        match &self.nearest {
            Some(n) => {
                s.push_str("Nearest: ");
                push_fixed(&mut s, f64::from(n.distance_m), 1);
                s.push_str("m at ");
                push_fixed(&mut s, n.bearing_deg, 0);
                s.push_str("° (");
                s.push_str(n.sector);
                s.push_str(")\n");
            }
            None => s.push_str("Nearest: none in range\n"),
        }
        if self.gaps.is_empty() {
            s.push_str("Gaps: none");
        } else {
            s.push_str("Gaps: ");
            for (i, g) in self.gaps.iter().enumerate() {
                if i > 0 {
                    s.push_str("; ");
                }
                s.push_str(g.kind);
                s.push_str(" at ");
                push_fixed(&mut s, g.bearing_deg, 0);
                s.push_str("°, width ");
                push_fixed(&mut s, g.width_m, 1);
                s.push_str("m, dist ");
                push_fixed(&mut s, g.distance_m, 1);
                s.push('m');
            }
        }
        s
    }

    /// The compact prompt block (fewer tokens): the same sectors, nearest
    /// obstacle and gaps as [`to_text`](Self::to_text) without its
    /// repetition. Each label is written once, followed by its sectors in
    /// clockwise order; neighbouring sectors that read the same (distance
    /// to 0.1 m and label) share one entry (`60-120 0.8`); sector names are
    /// left out, since the bearings (clockwise from the front, as the
    /// explore system prompt states once) say the same; the nearest return
    /// only when its sector does not already read it; at most `max_gaps`
    /// gaps, the nearest first.
    ///
    /// ```text
    /// LIDAR m: CLEAR 0 3.2, 150-210 2.6; NEAR 30 1.1; OBSTACLE 60-120 0.8, …
    /// Nearest 0.5m at 180°. Gaps: doorway 323° 0.9m wide 1.3m away
    /// ```
    pub fn to_compact_text(&self, max_gaps: usize) -> String {
        let mut s = String::with_capacity(320);
        s.push_str("LIDAR m: ");
        let label = |sec: &Sector| match (sec.distance_m, sec.label) {
            (Some(_), Some(l)) => l.as_str(),
            _ => "no data",
        };
        let distance = |sec: &Sector| {
            let mut r = String::with_capacity(8);
            if let Some(d) = sec.distance_m.filter(|_| sec.label.is_some()) {
                r.push(' ');
                push_fixed(&mut r, f64::from(d), 1);
            }
            r
        };
        // runs of neighbours that read the same: (first, last, label, distance text)
        let mut runs: Vec<(u16, u16, &str, String)> = Vec::new();
        for sec in &self.sectors {
            let (l, d) = (label(sec), distance(sec));
            match runs.last_mut() {
                Some(run) if run.2 == l && run.3 == d => run.1 = sec.bearing_deg,
                _ => runs.push((sec.bearing_deg, sec.bearing_deg, l, d)),
            }
        }
        let mut labels: Vec<&str> = Vec::new();
        for run in &runs {
            if !labels.contains(&run.2) {
                labels.push(run.2);
            }
        }
        for (i, l) in labels.iter().enumerate() {
            if i > 0 {
                s.push_str("; ");
            }
            s.push_str(l);
            for (j, run) in runs.iter().filter(|r| r.2 == *l).enumerate() {
                s.push_str(if j == 0 { " " } else { ", " });
                let _ = write!(s, "{}", run.0);
                if run.1 != run.0 {
                    let _ = write!(s, "-{}", run.1);
                }
                s.push_str(&run.3);
            }
        }
        s.push('\n');
        // the nearest return says nothing new when its sector already reads it
        let in_sector = |n: &Nearest| {
            self.sectors[sector_index(n.angle_rad)].distance_m.is_some_and(|d| (d - n.distance_m).abs() < 0.05)
        };
        match self.nearest.as_ref().filter(|n| !in_sector(n)) {
            Some(n) => {
                s.push_str("Nearest ");
                push_fixed(&mut s, f64::from(n.distance_m), 1);
                s.push_str("m at ");
                push_fixed(&mut s, n.bearing_deg, 0);
                s.push_str("°. ");
            }
            None if self.nearest.is_some() => {}
            None => s.push_str("Nearest: none. "),
        }
        let mut gaps: Vec<&Gap> = self.gaps.iter().collect();
        gaps.sort_by(|a, b| a.distance_m.total_cmp(&b.distance_m));
        gaps.truncate(max_gaps);
        if gaps.is_empty() {
            s.push_str("Gaps: none");
        } else {
            s.push_str("Gaps: ");
            for (i, g) in gaps.iter().enumerate() {
                if i > 0 {
                    s.push_str("; ");
                }
                s.push_str(g.kind);
                s.push(' ');
                push_fixed(&mut s, g.bearing_deg, 0);
                s.push_str("° ");
                push_fixed(&mut s, g.width_m, 1);
                s.push_str("m wide ");
                push_fixed(&mut s, g.distance_m, 1);
                s.push_str("m away");
            }
        }
        s
    }

    /// Distance of the nearest obstacle, or `f32::INFINITY`.
    pub fn nearest_m(&self) -> f32 {
        self.nearest.map_or(f32::INFINITY, |n| n.distance_m)
    }

    /// Sector distance by index (0 = front, clockwise), or `f32::INFINITY`
    /// for a sector with no data.
    pub fn sector_m(&self, k: usize) -> f32 {
        self.sectors.get(k % 12).and_then(|s| s.distance_m).unwrap_or(f32::INFINITY)
    }
}

/// Appends `v` exactly as `format!("{v:.1}")` (`decimals` 1) or
/// `format!("{v:.0}")` (`decimals` 0) would, without the general float
/// formatter when the rounding is unambiguous: `v` scaled by `10^decimals`
/// is computed with a relative error below 2^-53, so unless its fraction
/// lies within 1e-6 of one half the nearest integer is the correctly
/// rounded digit string. Ties, negative zero, large and non-finite values
/// go through `write!`.
fn push_fixed(s: &mut String, v: f64, decimals: u32) {
    let scaled = if decimals == 0 { v } else { v * 10.0 };
    let fraction = scaled - scaled.floor();
    if !(v.is_sign_positive() && scaled < 1e9 && (fraction - 0.5).abs() > 1e-6) || decimals > 1 {
        let _ = write!(s, "{v:.prec$}", prec = decimals as usize);
        return;
    }
    // round half away from zero, which is unambiguous here (no tie)
    let n = (scaled + 0.5) as u64;
    if decimals == 0 {
        push_digits(s, n);
    } else {
        push_digits(s, n / 10);
        s.push('.');
        s.push(char::from(b'0' + (n % 10) as u8));
    }
}

/// Appends the decimal digits of `n`.
fn push_digits(s: &mut String, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &b in &buf[i..] {
        s.push(char::from(b));
    }
}

/// Detects gaps: an outward range jump larger than `gap_jump_m` opens a gap
/// and an inward jump closes it; the gap's width is the distance between
/// the two near edge points. Full-circle scans wrap around.
pub fn detect_gaps(scan: &LaserScan, config: &LidarConfig) -> Vec<Gap> {
    if !scan.header_is_valid() {
        return Vec::new();
    }
    let beams: Vec<(usize, f64, f32)> =
        scan.ranges.iter().enumerate().filter_map(|(i, &r)| scan.effective(r).map(|d| (i, scan.angle(i), d))).collect();
    gaps_in(scan, config, &beams)
}

/// [`detect_gaps`] over the usable beams of a scan with a valid header, as
/// `(beam index, angle, effective distance)` in scan order.
fn gaps_in(scan: &LaserScan, config: &LidarConfig, beams: &[(usize, f64, f32)]) -> Vec<Gap> {
    let mut gaps = Vec::new();
    let n = beams.len();
    if n < 3 {
        return gaps;
    }
    let covered = scan.angle_increment.abs() * scan.ranges.len() as f64;
    let circular = covered >= TAU - 1.5 * scan.angle_increment.abs();
    let limit = if circular { 2 * n } else { n };
    let jump = config.gap_jump_m;
    let mut open: Option<usize> = None; // index of the near edge before the jump
    // `k % n` for `k < 2n` without a division per beam
    let wrap = |k: usize| if k >= n { k - n } else { k };
    let mut last = beams[0].2;
    for k in 1..limit {
        let cur = beams[wrap(k)].2;
        let prev = std::mem::replace(&mut last, cur);
        if cur - prev > jump {
            if k - 1 < n {
                open = Some(k - 1);
            } else {
                break;
            }
        } else if prev - cur > jump {
            if let Some(start) = open.take() {
                if k - start >= n {
                    continue;
                }
                let (i0, a0, r0) = beams[wrap(start)];
                let (i1, a1, r1) = beams[wrap(k)];
                let total = scan.ranges.len();
                let span_beams = (i1 + total - i0) % total;
                let span_deg = (span_beams as f64 * scan.angle_increment.abs()).to_degrees();
                if span_deg > config.gap_max_span_deg {
                    continue;
                }
                let p0 = (r0 as f64 * a0.cos(), r0 as f64 * a0.sin());
                let p1 = (r1 as f64 * a1.cos(), r1 as f64 * a1.sin());
                let width = (p0.0 - p1.0).hypot(p0.1 - p1.1);
                if width >= config.gap_min_width_m {
                    let mid = ((p0.0 + p1.0) / 2.0, (p0.1 + p1.1) / 2.0);
                    let angle = mid.1.atan2(mid.0);
                    gaps.push(Gap {
                        angle_rad: angle,
                        bearing_deg: clockwise_deg(angle),
                        width_m: width,
                        distance_m: mid.0.hypot(mid.1),
                        kind: if width <= config.doorway_max_width_m { "doorway" } else { "opening" },
                    });
                }
            }
        }
    }
    gaps
}

/// How to reduce the readings of an arc to one distance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArcStat {
    /// The minimum obstacle distance (for safety decisions).
    Min,
    /// A percentile of the effective distances (robust, for scoring).
    Percentile(f64),
}

/// Reduces the beams whose angle lies within `half_width` of `center`
/// (radians, CCW) to one distance. Returns `f32::INFINITY` when the arc
/// holds no obstacle (for `Min`) or no readings at all.
pub fn arc_distance(scan: &LaserScan, center: f64, half_width: f64, stat: ArcStat) -> f32 {
    if !scan.header_is_valid() {
        return f32::INFINITY;
    }
    let in_arc = |a: f64| normalize_angle(a - center).abs() <= half_width + 1e-9;
    match stat {
        ArcStat::Min => scan.obstacle_beams().filter(|(a, _)| in_arc(*a)).map(|(_, d)| d).fold(f32::INFINITY, f32::min),
        ArcStat::Percentile(p) => {
            let mut v: Vec<f32> = scan.effective_beams().filter(|(a, _)| in_arc(*a)).map(|(_, d)| d).collect();
            percentile(&mut v, p).unwrap_or(f32::INFINITY)
        }
    }
}

/// Free distance straight ahead (+x) for a disc of radius `half_width`:
/// the smallest along-track distance at which the disc, sliding forward,
/// would touch an obstacle return. Returns `f32::INFINITY` when nothing is
/// in the corridor. Unlike a percentile over an arc, this is exact for the
/// robot's own swept path, so it is what a "can I step forward" check uses.
///
/// ```
/// use nav_core::lidar::{LaserScan, corridor_clearance};
/// let mut s = LaserScan::full_circle(360, 0.05, 12.0, f32::INFINITY);
/// s.ranges[180] = 1.0; // a point straight ahead
/// assert!((corridor_clearance(&s, 0.2) - 0.8).abs() < 1e-3);
/// ```
pub fn corridor_clearance(scan: &LaserScan, half_width: f64) -> f32 {
    corridor_clearance_dir(scan, 0.0, half_width)
}

/// [`corridor_clearance`] for motion along `direction` (radians CCW from
/// the front; π for reversing).
pub fn corridor_clearance_dir(scan: &LaserScan, direction: f64, half_width: f64) -> f32 {
    if !half_width.is_finite() || half_width < 0.0 {
        return 0.0;
    }
    let (s, c) = direction.sin_cos();
    let mut best = f64::INFINITY;
    for (a, r) in scan.obstacle_beams() {
        let (px, py) = (f64::from(r) * a.cos(), f64::from(r) * a.sin());
        // rotate into the motion frame
        let along = c * px + s * py;
        let across = -s * px + c * py;
        if along <= 0.0 || across.abs() > half_width {
            continue;
        }
        let d = along - (half_width * half_width - across * across).sqrt();
        best = best.min(d.max(0.0));
    }
    best as f32
}

/// The six movement directions of the explore tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Straight ahead.
    Forward,
    /// Ahead and to the left.
    ForwardLeft,
    /// To the left.
    Left,
    /// Ahead and to the right.
    ForwardRight,
    /// To the right.
    Right,
    /// Straight back.
    Backward,
}

impl Direction {
    /// All six directions, in declaration order.
    pub const ALL: [Direction; 6] = [
        Direction::Forward,
        Direction::ForwardLeft,
        Direction::Left,
        Direction::ForwardRight,
        Direction::Right,
        Direction::Backward,
    ];

    /// snake_case name (the tool enum value).
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Forward => "forward",
            Direction::ForwardLeft => "forward_left",
            Direction::Left => "left",
            Direction::ForwardRight => "forward_right",
            Direction::Right => "right",
            Direction::Backward => "backward",
        }
    }

    /// Parses the snake_case name.
    pub fn parse(s: &str) -> Option<Direction> {
        Self::ALL.into_iter().find(|d| d.as_str() == s)
    }

    /// The arc of the scan that this direction looks at: `(center,
    /// half_width)` in radians CCW. Forward is the ±30° "front_wide"
    /// arc; the diagonals are centred at ±45°, the sides at ±90°.
    pub fn arc(self) -> (f64, f64) {
        let d = |x: f64| x.to_radians();
        match self {
            Direction::Forward => (0.0, d(30.0)),
            Direction::ForwardLeft => (d(45.0), d(30.0)),
            Direction::Left => (d(90.0), d(30.0)),
            Direction::ForwardRight => (d(-45.0), d(30.0)),
            Direction::Right => (d(-90.0), d(30.0)),
            Direction::Backward => (PI, d(30.0)),
        }
    }
}

/// Affordance score of one clearance: 0.1 at or below
/// `blocked` (0.5 m), 1.0 at or beyond `clear` (2.0 m), linear between.
pub fn clearance_score(dist: f32, blocked: f32, clear: f32) -> f32 {
    if dist.is_nan() || dist <= blocked {
        0.1
    } else if dist >= clear {
        1.0
    } else {
        0.1 + 0.9 * (dist - blocked) / (clear - blocked)
    }
}

/// Direction feasibility scores, SayCan style: how feasible each direction
/// is from the scan, shown to the model beside its choices.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AffordanceScores {
    /// Score of `forward`.
    pub forward: f32,
    /// Score of `forward_left`.
    pub forward_left: f32,
    /// Score of `forward_right`.
    pub forward_right: f32,
    /// Score of `left`.
    pub left: f32,
    /// Score of `right`.
    pub right: f32,
    /// Score of `backward` (fixed at 0.5).
    pub backward: f32,
    /// Score of `stop` (always 1.0).
    pub stop: f32,
}

impl AffordanceScores {
    /// Scores from a scan: each direction's 10th-percentile clearance over
    /// its arc, through [`clearance_score`] with 0.5 m / 2.0 m.
    pub fn from_scan(scan: &LaserScan) -> Self {
        let score = |dir: Direction| {
            let (c, h) = dir.arc();
            clearance_score(arc_distance(scan, c, h, ArcStat::Percentile(0.1)), 0.5, 2.0)
        };
        Self {
            forward: score(Direction::Forward),
            forward_left: score(Direction::ForwardLeft),
            forward_right: score(Direction::ForwardRight),
            left: score(Direction::Left),
            right: score(Direction::Right),
            backward: 0.5,
            stop: 1.0,
        }
    }

    /// The score of one direction.
    pub fn get(&self, dir: Direction) -> f32 {
        match dir {
            Direction::Forward => self.forward,
            Direction::ForwardLeft => self.forward_left,
            Direction::Left => self.left,
            Direction::ForwardRight => self.forward_right,
            Direction::Right => self.right,
            Direction::Backward => self.backward,
        }
    }

    /// The compact prompt block: the six scores (0.1 blocked to 1.0 clear)
    /// on one line, each score written once before its directions,
    /// `FEASIBILITY: 1.0 forward; 0.3 forward_left, forward_right, left, right; 0.5 backward`;
    /// the advice to prefer high scores is the explore system prompt's.
    pub fn to_compact_text(&self) -> String {
        let scores = [
            ("forward", self.forward),
            ("forward_left", self.forward_left),
            ("forward_right", self.forward_right),
            ("left", self.left),
            ("right", self.right),
            ("backward", self.backward),
        ];
        // each score once, with its directions (in this order)
        let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
        for (name, score) in scores {
            let score = format!("{score:.1}");
            match groups.iter_mut().find(|(s, _)| *s == score) {
                Some((_, names)) => names.push(name),
                None => groups.push((score, vec![name])),
            }
        }
        let parts: Vec<String> = groups.iter().map(|(score, names)| format!("{score} {}", names.join(", "))).collect();
        format!("FEASIBILITY: {}", parts.join("; "))
    }

    /// The prompt block.
    pub fn to_text(&self) -> String {
        format!(
            "ACTION FEASIBILITY (1.0 = clear, 0.1 = blocked):\n  \
             forward: {:.1}  |  forward_left: {:.1}  |  forward_right: {:.1}\n  \
             left: {:.1}     |  right: {:.1}         |  backward: {:.1}\n  \
             → Prefer actions with high scores. Low scores will likely be overridden.",
            self.forward, self.forward_left, self.forward_right, self.left, self.right, self.backward
        )
    }
}

/// Minimum time-to-collision for forward speed `vx` (m/s): for each obstacle
/// beam at angle θ with range r, the closing speed is `vx·cos θ`; when it
/// exceeds 0.01 m/s, TTC = r / closing speed. Returns `f64::INFINITY` when
/// nothing closes in. `omega` is accepted for API symmetry; in the robot
/// model used here (Ackermann, vy ≈ 0) it does not change the closing speed.
pub fn min_time_to_collision(scan: &LaserScan, vx: f64, _omega: f64) -> f64 {
    if !vx.is_finite() {
        return f64::INFINITY;
    }
    let mut min_ttc = f64::INFINITY;
    for (a, r) in scan.obstacle_beams() {
        let closing = vx * a.cos();
        if closing > 0.01 {
            min_ttc = min_ttc.min(r as f64 / closing);
        }
    }
    min_ttc
}

/// Proportional speed scaling:
/// `v = v_max · clamp((d − d_stop) / (d_full − d_stop), 0, 1)`.
///
/// ```
/// use nav_core::lidar::proportional_speed;
/// assert_eq!(proportional_speed(0.18, 0.2, 0.3, 1.0), 0.0);
/// assert!((proportional_speed(0.18, 0.65, 0.3, 1.0) - 0.09).abs() < 1e-9);
/// assert_eq!(proportional_speed(0.18, 3.0, 0.3, 1.0), 0.18);
/// ```
pub fn proportional_speed(v_max: f64, d: f64, d_stop: f64, d_full: f64) -> f64 {
    if d.is_nan() || d_full <= d_stop {
        return if d > d_stop { v_max } else { 0.0 };
    }
    v_max * ((d - d_stop) / (d_full - d_stop)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ring(n: usize, d: f32) -> LaserScan {
        LaserScan::full_circle(n, 0.05, 12.0, d)
    }

    #[test]
    fn classification_follows_rep117() {
        let s = ring(4, 1.0);
        assert_eq!(s.classify(f32::NAN), Reading::Invalid);
        assert_eq!(s.classify(f32::INFINITY), Reading::NoReturn);
        assert_eq!(s.classify(13.0), Reading::NoReturn);
        assert_eq!(s.classify(f32::NEG_INFINITY), Reading::TooClose);
        assert_eq!(s.classify(0.0), Reading::Invalid);
        assert_eq!(s.classify(0.5), Reading::Hit(0.5));
        assert_eq!(s.effective(f32::NEG_INFINITY), Some(0.05));
        assert_eq!(s.obstacle(f32::INFINITY), None);
    }

    #[test]
    fn percentile_matches_numpy() {
        let mut v = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
        // numpy.percentile(range(1, 11), 10) == 1.9
        assert!((percentile(&mut v, 0.1).unwrap() - 1.9).abs() < 1e-6);
        let mut one = vec![4.0];
        assert_eq!(percentile(&mut one, 0.1), Some(4.0));
        assert_eq!(percentile(&mut [], 0.1), None);
    }

    #[test]
    fn sector_indices_are_clockwise() {
        assert_eq!(sector_index(0.0), 0);
        assert_eq!(sector_index((-30f64).to_radians()), 1);
        assert_eq!(sector_index((-90f64).to_radians()), 3);
        assert_eq!(sector_index(PI), 6);
        assert_eq!(sector_index(90f64.to_radians()), 9);
        assert_eq!(sector_index(30f64.to_radians()), 11);
        assert_eq!(sector_index((-14.9f64).to_radians()), 0);
        assert_eq!(sector_index((-15.1f64).to_radians()), 1);
    }

    #[test]
    fn labels_use_seed_thresholds() {
        let c = LidarConfig::default();
        assert_eq!(c.label(2.9), ClearanceLabel::Clear);
        assert_eq!(c.label(2.0), ClearanceLabel::Clear);
        assert_eq!(c.label(1.8), ClearanceLabel::Near);
        assert_eq!(c.label(0.7), ClearanceLabel::Obstacle);
        assert_eq!(c.label(0.49), ClearanceLabel::Wall);
    }

    #[test]
    fn nan_and_inf_never_make_phantom_obstacles() {
        let mut s = ring(720, f32::INFINITY);
        for (i, r) in s.ranges.iter_mut().enumerate() {
            if i % 3 == 0 {
                *r = f32::NAN;
            } else if i % 3 == 1 {
                *r = 0.0;
            }
        }
        let sum = LidarSummary::from_scan(&s, &LidarConfig::default());
        assert!(sum.nearest.is_none());
        for sec in sum.sectors {
            assert_eq!(sec.label, Some(ClearanceLabel::Clear));
        }
        assert_eq!(min_time_to_collision(&s, 0.18, 0.0), f64::INFINITY);
    }

    #[test]
    fn corridor_clearance_geometry() {
        let mut s = ring(360, f32::INFINITY);
        // a point 1 m ahead and 0.1 m to the left (≈ 5.7°) hits a 0.2 m wide disc at 1 − √(0.04 − 0.01)
        let a = (0.1f64).atan2(1.0);
        let i = ((a + PI) / s.angle_increment).round() as usize;
        let r = (1.0f64.hypot(0.1)) as f32;
        s.ranges[i] = r;
        let got = corridor_clearance(&s, 0.2) as f64;
        let ay = f64::from(r) * s.angle(i).sin();
        let ax = f64::from(r) * s.angle(i).cos();
        assert!((got - (ax - (0.04 - ay * ay).sqrt())).abs() < 1e-4, "{got}");
        // outside the corridor: ignored
        assert_eq!(corridor_clearance(&s, 0.05), f32::INFINITY);
        // reversing looks backwards
        assert_eq!(corridor_clearance_dir(&s, PI, 0.2), f32::INFINITY);
    }

    #[test]
    fn affordance_formula() {
        assert_eq!(clearance_score(0.4, 0.5, 2.0), 0.1);
        assert_eq!(clearance_score(2.5, 0.5, 2.0), 1.0);
        // 1.25 m: 0.1 + 0.9 * 0.75 / 1.5 = 0.55
        assert!((clearance_score(1.25, 0.5, 2.0) - 0.55).abs() < 1e-6);
    }

    #[test]
    fn ttc_hand_computed() {
        // One obstacle straight ahead at 0.9 m; v = 0.18 → TTC 5 s.
        let mut s = ring(360, f32::INFINITY);
        s.ranges[180] = 0.9; // angle_min -π + 180° = 0
        assert!((min_time_to_collision(&s, 0.18, 0.0) - 5.0).abs() < 1e-6);
        // Moving backwards never closes on a front obstacle.
        assert_eq!(min_time_to_collision(&s, -0.18, 0.0), f64::INFINITY);
        // At 60°: closing 0.18 * 0.5 = 0.09 → 10 s.
        let mut s = ring(360, f32::INFINITY);
        s.ranges[240] = 0.9;
        assert!((min_time_to_collision(&s, 0.18, 0.0) - 10.0).abs() < 1e-4);
    }

    #[test]
    fn detects_a_doorway_ahead() {
        // Wall 2 m ahead everywhere in front, with a 1 m wide opening at 0°.
        let mut s = ring(720, f32::INFINITY);
        for i in 0..720 {
            let a = s.angle(i);
            if a.abs() < PI / 2.0 {
                let d = 2.0 / a.cos();
                let y = 2.0 * a.tan();
                s.ranges[i] = if y.abs() < 0.5 { 6.0 } else { d as f32 };
            } else {
                s.ranges[i] = 3.0;
            }
        }
        let gaps = detect_gaps(&s, &LidarConfig::default());
        assert_eq!(gaps.len(), 1, "{gaps:?}");
        let g = gaps[0];
        assert!((g.width_m - 1.0).abs() < 0.05, "{g:?}");
        assert!((g.distance_m - 2.0).abs() < 0.05);
        assert!(g.bearing_deg < 1.0 || g.bearing_deg > 359.0);
        assert_eq!(g.kind, "doorway");
    }

    proptest! {
        #[test]
        fn summary_never_panics(
            ranges in proptest::collection::vec(proptest::num::f32::ANY, 0..800),
            angle_min in proptest::num::f64::ANY,
            inc in proptest::num::f64::ANY,
            rmin in proptest::num::f32::ANY,
            rmax in proptest::num::f32::ANY,
        ) {
            let s = LaserScan { angle_min, angle_increment: inc, range_min: rmin, range_max: rmax, ranges };
            let sum = LidarSummary::from_scan(&s, &LidarConfig::default());
            let _ = sum.to_text();
            let _ = AffordanceScores::from_scan(&s).to_text();
            let _ = min_time_to_collision(&s, 0.18, 0.3);
        }

        #[test]
        fn summary_never_panics_on_sane_headers(
            ranges in proptest::collection::vec(proptest::num::f32::ANY, 1..800),
        ) {
            let n = ranges.len();
            let s = LaserScan { angle_min: -PI, angle_increment: TAU / n as f64, range_min: 0.05, range_max: 12.0, ranges };
            let sum = LidarSummary::from_scan(&s, &LidarConfig::default());
            if let Some(near) = sum.nearest {
                prop_assert!(near.distance_m >= 0.05);
            }
            let _ = sum.to_text();
        }

        #[test]
        fn speed_scaling_is_bounded(v in 0.0f64..1.0, d in proptest::num::f64::ANY) {
            let s = proportional_speed(v, d, 0.3, 1.0);
            prop_assert!((0.0..=v).contains(&s));
        }

        #[test]
        fn fixed_formatting_matches_std(v in proptest::num::f64::ANY, small in 0.0f64..400.0, tenths in 0u32..4000) {
            // arbitrary values, everyday ones, and exact ties like 0.25 or 2.5
            for x in [v, small, f64::from(tenths) / 10.0 + 0.05, f64::from(tenths) + 0.5, f64::from(tenths as f32 / 10.0)] {
                let mut s = String::new();
                push_fixed(&mut s, x, 1);
                prop_assert_eq!(&s, &format!("{x:.1}"));
                s.clear();
                push_fixed(&mut s, x, 0);
                prop_assert_eq!(&s, &format!("{x:.0}"));
            }
        }

        #[test]
        fn low_percentile_matches_percentile(
            values in proptest::collection::vec(proptest::num::f32::ANY, 0..120),
            p in proptest::num::f64::ANY,
            q in 0.0f64..0.3,
        ) {
            for p in [p, q, 0.1] {
                let (mut a, mut b) = (values.clone(), values.clone());
                let (x, y) = (low_percentile(&mut a, p), percentile(&mut b, p));
                prop_assert_eq!(x.map(f32::to_bits), y.map(f32::to_bits), "p {}", p);
            }
        }
    }
}
