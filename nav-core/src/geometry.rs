//! Planar geometry: points, poses, angles and the few intersection tests the
//! rest of navkit needs (segments, circles, polygons).
//!
//! Frame convention (REP-103): x forward, y left, yaw counter-clockwise
//! positive, radians inside, metres everywhere.

use serde::{Deserialize, Serialize};
use std::f64::consts::{PI, TAU};

/// A point (or vector) in the plane, in metres.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Point2 {
    /// x coordinate (forward at the start pose), metres.
    pub x: f64,
    /// y coordinate (left at the start pose), metres.
    pub y: f64,
}

impl Point2 {
    /// Creates a point.
    pub const fn new(x: f64, y: f64) -> Self {
        Self { x, y }
    }

    /// Euclidean distance to `other`.
    pub fn distance(self, other: Point2) -> f64 {
        (self.x - other.x).hypot(self.y - other.y)
    }

    /// Squared Euclidean distance to `other` (no square root).
    pub fn distance_sq(self, other: Point2) -> f64 {
        let (dx, dy) = (self.x - other.x, self.y - other.y);
        dx * dx + dy * dy
    }

    /// Length of the vector from the origin.
    pub fn norm(self) -> f64 {
        self.x.hypot(self.y)
    }

    /// Scales the vector by `k`.
    pub fn scale(self, k: f64) -> Point2 {
        Point2::new(self.x * k, self.y * k)
    }

    /// Dot product.
    pub fn dot(self, other: Point2) -> f64 {
        self.x * other.x + self.y * other.y
    }

    /// z component of the cross product.
    pub fn cross(self, other: Point2) -> f64 {
        self.x * other.y - self.y * other.x
    }

    /// Bearing of `other` as seen from `self`, radians CCW from +x.
    pub fn bearing_to(self, other: Point2) -> f64 {
        (other.y - self.y).atan2(other.x - self.x)
    }

    /// True when both coordinates are finite.
    pub fn is_finite(self) -> bool {
        self.x.is_finite() && self.y.is_finite()
    }
}

impl std::ops::Sub for Point2 {
    type Output = Point2;
    fn sub(self, o: Point2) -> Point2 {
        Point2::new(self.x - o.x, self.y - o.y)
    }
}

impl std::ops::Add for Point2 {
    type Output = Point2;
    fn add(self, o: Point2) -> Point2 {
        Point2::new(self.x + o.x, self.y + o.y)
    }
}

impl std::ops::Mul<f64> for Point2 {
    type Output = Point2;
    fn mul(self, k: f64) -> Point2 {
        self.scale(k)
    }
}

/// A planar pose: position plus heading (yaw, radians, CCW positive).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Pose2 {
    /// x position, metres.
    pub x: f64,
    /// y position, metres.
    pub y: f64,
    /// Heading in radians, normalized to `(-π, π]` by the constructors.
    pub yaw: f64,
}

impl Pose2 {
    /// Creates a pose; `yaw` is normalized to `(-π, π]`.
    pub fn new(x: f64, y: f64, yaw: f64) -> Self {
        Self { x, y, yaw: normalize_angle(yaw) }
    }

    /// The origin pose `(0, 0, 0)` every episode starts from.
    pub const fn origin() -> Self {
        Self { x: 0.0, y: 0.0, yaw: 0.0 }
    }

    /// Position part of the pose.
    pub fn position(self) -> Point2 {
        Point2::new(self.x, self.y)
    }

    /// Heading in degrees, `(-180, 180]`.
    pub fn yaw_deg(self) -> f64 {
        self.yaw.to_degrees()
    }

    /// Transforms a point from this pose's body frame to the world frame.
    pub fn transform_point(self, local: Point2) -> Point2 {
        let (s, c) = self.yaw.sin_cos();
        Point2::new(self.x + c * local.x - s * local.y, self.y + s * local.x + c * local.y)
    }

    /// Transforms a world point into this pose's body frame.
    pub fn inverse_transform_point(self, world: Point2) -> Point2 {
        let (s, c) = self.yaw.sin_cos();
        let (dx, dy) = (world.x - self.x, world.y - self.y);
        Point2::new(c * dx + s * dy, -s * dx + c * dy)
    }

    /// Bearing of a world point relative to the robot's front, radians in
    /// `(-π, π]`, positive to the left.
    pub fn relative_bearing(self, world: Point2) -> f64 {
        normalize_angle(self.position().bearing_to(world) - self.yaw)
    }

    /// Euclidean distance between the positions of two poses.
    pub fn distance(self, other: Pose2) -> f64 {
        self.position().distance(other.position())
    }
}

/// Normalizes an angle in radians to `(-π, π]`.
///
/// Non-finite input is returned unchanged so that callers can detect it.
///
/// ```
/// use nav_core::geometry::normalize_angle;
/// use std::f64::consts::PI;
/// assert!((normalize_angle(3.0 * PI) - PI).abs() < 1e-12);
/// assert!((normalize_angle(-PI) - PI).abs() < 1e-12);
/// ```
pub fn normalize_angle(a: f64) -> f64 {
    if !a.is_finite() {
        return a;
    }
    let mut r = rem_euclid_fast(a, TAU); // [0, 2π)
    if r > PI {
        r -= TAU;
    }
    r
}

/// `a.rem_euclid(m)` for `m > 0`, bit for bit, without the `fmod` call
/// when `|a| < m` (then `a % m == a` exactly): the common case of angles
/// that are already almost normalized.
#[inline]
fn rem_euclid_fast(a: f64, m: f64) -> f64 {
    if a.abs() < m { if a < 0.0 { a + m } else { a } } else { a.rem_euclid(m) }
}

/// Normalizes an angle in degrees to `(-180, 180]`.
pub fn normalize_angle_deg(a: f64) -> f64 {
    if !a.is_finite() {
        return a;
    }
    let mut r = a.rem_euclid(360.0);
    if r > 180.0 {
        r -= 360.0;
    }
    r
}

/// Smallest absolute difference between two angles (radians), in `[0, π]`.
pub fn angle_diff_abs(a: f64, b: f64) -> f64 {
    normalize_angle(a - b).abs()
}

/// Clockwise compass-style bearing in degrees `[0, 360)` of a CCW angle
/// (radians) relative to the robot's front. Used by the LiDAR text summary,
/// which reads "clockwise from front".
pub fn clockwise_deg(ccw_rad: f64) -> f64 {
    let d = rem_euclid_fast(-ccw_rad.to_degrees(), 360.0);
    if d >= 359.999_999 { 0.0 } else { d }
}

/// A heading as a compass reads it: degrees clockwise from north (+y),
/// `[0, 360)`, for a yaw in degrees counter-clockwise from east (+x). The
/// explore prompt states every angle clockwise (bearings from the robot's
/// front and this heading), so that heading + bearing is the compass
/// direction of what the bearing points at.
///
/// ```
/// use nav_core::geometry::compass_deg;
/// assert_eq!(compass_deg(90.0), 0.0); // facing +y: north
/// assert_eq!(compass_deg(0.0), 90.0); // facing +x: east
/// assert_eq!(compass_deg(-90.0), 180.0);
/// ```
pub fn compass_deg(yaw_deg_ccw: f64) -> f64 {
    let d = (90.0 - yaw_deg_ccw).rem_euclid(360.0);
    if d.is_finite() && d < 359.999_999 { d } else { 0.0 }
}

/// Eight-point compass name for a heading in degrees CCW from +x, using the
/// REP-103 world convention (x east, y north): 0° is E, 90° is N.
///
/// Prompts print headings as "47° (NE)": 47° CCW from east is north-east.
pub fn cardinal(yaw_deg_ccw: f64) -> &'static str {
    const NAMES: [&str; 8] = ["E", "NE", "N", "NW", "W", "SW", "S", "SE"];
    let d = yaw_deg_ccw.rem_euclid(360.0);
    let idx = ((d + 22.5) / 45.0).floor() as usize % 8;
    NAMES[idx]
}

/// A line segment between two points.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// First end point.
    pub a: Point2,
    /// Second end point.
    pub b: Point2,
}

impl Segment {
    /// Creates a segment.
    pub const fn new(a: Point2, b: Point2) -> Self {
        Self { a, b }
    }

    /// Length of the segment.
    pub fn length(&self) -> f64 {
        self.a.distance(self.b)
    }

    /// Closest point on the segment to `p`.
    pub fn closest_point(&self, p: Point2) -> Point2 {
        let ab = self.b - self.a;
        let len_sq = ab.dot(ab);
        if len_sq <= f64::EPSILON {
            return self.a;
        }
        let t = ((p - self.a).dot(ab) / len_sq).clamp(0.0, 1.0);
        self.a + ab.scale(t)
    }

    /// Distance from `p` to the segment.
    pub fn distance_to_point(&self, p: Point2) -> f64 {
        self.closest_point(p).distance(p)
    }
}

/// Distance along a ray (origin `o`, unit direction `d`) to a segment, if the
/// ray hits it.
pub fn ray_segment(o: Point2, d: Point2, seg: &Segment) -> Option<f64> {
    let e = seg.b - seg.a;
    let denom = d.cross(e);
    if denom.abs() < 1e-12 {
        return None; // parallel
    }
    let ao = seg.a - o;
    let t = ao.cross(e) / denom;
    let u = ao.cross(d) / denom;
    if t >= 0.0 && (-1e-12..=1.0 + 1e-12).contains(&u) { Some(t) } else { None }
}

/// Distance along a ray (origin `o`, unit direction `d`) to a circle's
/// boundary, if the ray hits it from outside. A ray starting inside the
/// circle returns `Some(0.0)`.
pub fn ray_circle(o: Point2, d: Point2, center: Point2, r: f64) -> Option<f64> {
    let oc = o - center;
    let b = oc.dot(d);
    let c = oc.dot(oc) - r * r;
    if c <= 0.0 {
        return Some(0.0);
    }
    let disc = b * b - c;
    if disc < 0.0 {
        return None;
    }
    let t = -b - disc.sqrt();
    if t >= 0.0 { Some(t) } else { None }
}

/// Even-odd point-in-polygon test. Points exactly on an edge may go either
/// way.
pub fn point_in_polygon(p: Point2, polygon: &[Point2]) -> bool {
    let n = polygon.len();
    if n < 3 {
        return false;
    }
    let mut inside = false;
    let mut j = n - 1;
    for i in 0..n {
        let (pi, pj) = (polygon[i], polygon[j]);
        if (pi.y > p.y) != (pj.y > p.y) {
            let x = (pj.x - pi.x) * (p.y - pi.y) / (pj.y - pi.y) + pi.x;
            if p.x < x {
                inside = !inside;
            }
        }
        j = i;
    }
    inside
}

/// Signed area of a polygon (positive when counter-clockwise).
pub fn polygon_area(polygon: &[Point2]) -> f64 {
    let n = polygon.len();
    if n < 3 {
        return 0.0;
    }
    let mut a = 0.0;
    for i in 0..n {
        let j = (i + 1) % n;
        a += polygon[i].cross(polygon[j]);
    }
    a / 2.0
}

/// Minimum distance between two segments.
pub fn segment_segment_distance(s: &Segment, t: &Segment) -> f64 {
    if segments_intersect(s, t) {
        return 0.0;
    }
    s.distance_to_point(t.a).min(s.distance_to_point(t.b)).min(t.distance_to_point(s.a)).min(t.distance_to_point(s.b))
}

/// True when the two closed segments intersect.
pub fn segments_intersect(s: &Segment, t: &Segment) -> bool {
    fn orient(a: Point2, b: Point2, c: Point2) -> f64 {
        (b - a).cross(c - a)
    }
    let d1 = orient(t.a, t.b, s.a);
    let d2 = orient(t.a, t.b, s.b);
    let d3 = orient(s.a, s.b, t.a);
    let d4 = orient(s.a, s.b, t.b);
    if ((d1 > 0.0 && d2 < 0.0) || (d1 < 0.0 && d2 > 0.0)) && ((d3 > 0.0 && d4 < 0.0) || (d3 < 0.0 && d4 > 0.0)) {
        return true;
    }
    let on = |a: Point2, b: Point2, p: Point2, d: f64| {
        d.abs() < 1e-12
            && p.x >= a.x.min(b.x) - 1e-12
            && p.x <= a.x.max(b.x) + 1e-12
            && p.y >= a.y.min(b.y) - 1e-12
            && p.y <= a.y.max(b.y) + 1e-12
    };
    on(t.a, t.b, s.a, d1) || on(t.a, t.b, s.b, d2) || on(s.a, s.b, t.a, d3) || on(s.a, s.b, t.b, d4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_wraps_into_half_open_interval() {
        assert!((normalize_angle(PI) - PI).abs() < 1e-12);
        assert!((normalize_angle(-PI) - PI).abs() < 1e-12);
        assert!((normalize_angle(TAU + 0.5) - 0.5).abs() < 1e-12);
        assert!((normalize_angle(-0.5) + 0.5).abs() < 1e-12);
        assert!(normalize_angle(f64::NAN).is_nan());
        assert!((normalize_angle_deg(190.0) + 170.0).abs() < 1e-9);
        assert!((normalize_angle_deg(-180.0) - 180.0).abs() < 1e-9);
    }

    #[test]
    fn clockwise_bearing_matches_seed_labels() {
        assert_eq!(clockwise_deg(0.0), 0.0);
        assert!((clockwise_deg(-PI / 2.0) - 90.0).abs() < 1e-9); // right
        assert!((clockwise_deg(PI / 2.0) - 270.0).abs() < 1e-9); // left
    }

    #[test]
    fn cardinal_names() {
        assert_eq!(cardinal(0.0), "E");
        assert_eq!(cardinal(47.0), "NE");
        assert_eq!(cardinal(90.0), "N");
        assert_eq!(cardinal(-90.0), "S");
        assert_eq!(cardinal(180.0), "W");
        assert_eq!(cardinal(-45.0), "SE");
    }

    #[test]
    fn ray_hits() {
        let o = Point2::new(0.0, 0.0);
        let d = Point2::new(1.0, 0.0);
        let seg = Segment::new(Point2::new(2.0, -1.0), Point2::new(2.0, 1.0));
        assert!((ray_segment(o, d, &seg).unwrap() - 2.0).abs() < 1e-12);
        assert!((ray_circle(o, d, Point2::new(3.0, 0.0), 0.5).unwrap() - 2.5).abs() < 1e-12);
        assert!(ray_circle(o, d, Point2::new(-3.0, 0.0), 0.5).is_none());
    }

    #[test]
    fn polygon_tests() {
        let sq = [Point2::new(0.0, 0.0), Point2::new(1.0, 0.0), Point2::new(1.0, 1.0), Point2::new(0.0, 1.0)];
        assert!(point_in_polygon(Point2::new(0.5, 0.5), &sq));
        assert!(!point_in_polygon(Point2::new(1.5, 0.5), &sq));
        assert!((polygon_area(&sq) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn pose_transforms_round_trip() {
        let p = Pose2::new(1.0, 2.0, 0.7);
        let w = p.transform_point(Point2::new(0.3, -0.4));
        let l = p.inverse_transform_point(w);
        assert!((l.x - 0.3).abs() < 1e-12 && (l.y + 0.4).abs() < 1e-12);
    }
}
