//! The egocentric camera: a pinhole camera rendered by ray casting one ray
//! per pixel column over the 2D arena (walls are extruded to a fixed
//! height, circles to upright cylinders of their class's height).
//!
//! Walls take the colour of the room they face, shaded by distance and
//! orientation, with dark corner edges and a baseboard; floor and ceiling
//! are shaded by distance; objects are drawn in their class colour with
//! Lambert shading and carry their label in white text with a black outline,
//! scaled with their apparent size, so a real VLM can read what it sees.
//! Depth is the perpendicular (optical-axis) distance per pixel.

use crate::arena::scene::{Fan, NO_HIT, Scene};
use crate::arena::semantics::ObjectStyle;
use crate::hal::LabelFrame;
use nav_core::geometry::{Point2, Pose2};
use nav_core::raster::{Rgb, RgbFrame};
use serde::{Deserialize, Serialize};

/// How the scene's objects look in a rendered view: the colour style of
/// each object and the label drawn on it (none for unlabelled objects),
/// both in the scene's object order.
#[derive(Debug, Clone, Copy)]
pub struct ObjectLook<'a> {
    /// One style per object.
    pub styles: &'a [ObjectStyle],
    /// One optional label per object.
    pub labels: &'a [Option<String>],
}

/// Camera parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CameraConfig {
    /// Image width, pixels.
    pub width: usize,
    /// Image height, pixels.
    pub height: usize,
    /// Horizontal field of view, degrees.
    pub hfov_deg: f64,
    /// Height of the optical centre above the floor, metres (Habitat's
    /// ObjectNav agent: 0.88 m).
    pub height_m: f64,
    /// Height of every wall, metres.
    pub wall_height_m: f64,
    /// Depth range, metres; farther surfaces read `+inf` in the depth image.
    pub max_depth_m: f64,
    /// Draw object labels into the RGB image.
    pub labels: bool,
}

impl Default for CameraConfig {
    fn default() -> Self {
        Self {
            width: 320,
            height: 240,
            hfov_deg: 90.0,
            height_m: 0.88,
            wall_height_m: 2.5,
            max_depth_m: 10.0,
            labels: true,
        }
    }
}

const FLOOR: Rgb = Rgb([168, 152, 132]);
const CEILING: Rgb = Rgb([238, 238, 232]);

/// Brightness at perpendicular distance `z`.
fn distance_shade(z: f64) -> f64 {
    0.3 + 0.7 / (1.0 + 0.18 * z.max(0.0))
}

/// A circle seen by the camera, with its per-column hits.
#[derive(Debug, Clone)]
pub(crate) struct CircleView {
    pub idx: usize,
    pub centre_dist: f64,
    /// `(column, ray distance)` for every column the circle is nearer than
    /// the wall in.
    pub hits: Vec<(usize, f64)>,
}

/// Where everything is in one view.
#[derive(Debug, Clone)]
pub(crate) struct ViewLayout {
    pub wall_t: Vec<f64>,
    pub wall_id: Vec<u32>,
    /// Circles in view, farthest first (painter's order).
    pub circles: Vec<CircleView>,
    /// Per column: nearest circle index and its ray distance.
    pub front: Vec<(usize, f64)>,
}

impl ViewLayout {
    /// Distance of the nearest surface per ray, in fan (ascending angle)
    /// order, for coverage.
    pub fn nearest_by_ray(&self) -> Vec<f64> {
        let w = self.wall_t.len();
        (0..w).rev().map(|x| self.wall_t[x].min(self.front[x].1)).collect()
    }
}

/// An object visible in a view.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct VisibleCircle {
    pub idx: usize,
    /// `[x0, y0, x1, y1]`, inclusive pixels.
    pub bbox: [u32; 4],
    /// Perpendicular distance of the nearest visible part.
    pub z_min: f64,
}

/// Precomputed per-column and per-row tables of a camera.
#[derive(Debug, Clone)]
pub(crate) struct CameraModel {
    pub config: CameraConfig,
    pub f: f64,
    cy: f64,
    /// Rays in ascending angle; ray `i` is column `width - 1 - i`.
    pub fan: Fan,
    col_angle: Vec<f64>,
    col_cos: Vec<f64>,
    row_depth: Vec<f32>,
    row_colour: Vec<Rgb>,
}

impl CameraModel {
    pub fn new(config: CameraConfig) -> Self {
        let (w, h) = (config.width, config.height);
        let f = (w as f64 / 2.0) / (config.hfov_deg.to_radians() / 2.0).tan();
        let cx = w as f64 / 2.0;
        let cy = h as f64 / 2.0;
        let col_angle: Vec<f64> = (0..w).map(|x| ((cx - (x as f64 + 0.5)) / f).atan()).collect();
        let col_cos = col_angle.iter().map(|a| a.cos()).collect();
        let fan = Fan::from_angles(col_angle.iter().rev().copied().collect());
        let mut row_depth = Vec::with_capacity(h);
        let mut row_colour = Vec::with_capacity(h);
        for y in 0..h {
            let dy = y as f64 + 0.5 - cy;
            let (z, base) = if dy > 0.0 {
                (f * config.height_m / dy, FLOOR)
            } else if dy < 0.0 {
                (f * (config.wall_height_m - config.height_m) / -dy, CEILING)
            } else {
                (f64::INFINITY, CEILING)
            };
            row_depth.push(if z <= config.max_depth_m { z as f32 } else { f32::INFINITY });
            row_colour.push(base.shade(distance_shade(z.min(1e3))));
        }
        Self { config, f, cy, fan, col_angle, col_cos, row_depth, row_colour }
    }

    /// Casts the view from `origin` looking along `yaw`.
    pub fn layout(&self, scene: &Scene, origin: Point2, yaw: f64) -> ViewLayout {
        let w = self.config.width;
        let range = self.config.max_depth_m / self.col_cos.iter().copied().fold(1.0, f64::min).max(1e-3);
        let mut ray_t = vec![f64::INFINITY; w];
        let mut ray_id = vec![NO_HIT; w];
        scene.cast_fan(Pose2::new(origin.x, origin.y, yaw), &self.fan, range, false, &mut ray_t, &mut ray_id);
        let wall_t: Vec<f64> = ray_t.iter().rev().copied().collect();
        let wall_id: Vec<u32> = ray_id.iter().rev().copied().collect();
        let mut circles = Vec::new();
        let mut front = vec![(usize::MAX, f64::INFINITY); w];
        let (s, c) = yaw.sin_cos();
        for (idx, circ) in scene.circles.iter().enumerate() {
            let (dx, dy) = (circ.c.x - origin.x, circ.c.y - origin.y);
            let cb = Point2::new(c * dx + s * dy, -s * dx + c * dy);
            let dc = cb.norm();
            if dc <= circ.r || dc - circ.r > range {
                continue;
            }
            let half = (circ.r / dc).asin();
            let centre = cb.y.atan2(cb.x);
            let c2 = dc * dc - circ.r * circ.r;
            let mut hits = Vec::new();
            for (r0, r1) in self.fan.ranges(centre - half, 2.0 * half) {
                for i in r0..r1.min(w) {
                    let b = cb.x * self.fan.cos[i] + cb.y * self.fan.sin[i];
                    let disc = b * b - c2;
                    if disc < 0.0 {
                        continue;
                    }
                    let t = b - disc.sqrt();
                    let x = w - 1 - i;
                    if t > 0.0 && t < wall_t[x] {
                        hits.push((x, t));
                        if t < front[x].1 {
                            front[x] = (idx, t);
                        }
                    }
                }
            }
            if !hits.is_empty() {
                circles.push(CircleView { idx, centre_dist: dc, hits });
            }
        }
        circles.sort_by(|a, b| b.centre_dist.total_cmp(&a.centre_dist));
        ViewLayout { wall_t, wall_id, circles, front }
    }

    /// Vertical pixel span `[top, bottom)` of a surface from `base_m` to
    /// `top_m` above the floor at perpendicular distance `z`.
    fn span(&self, z: f64, base_m: f64, top_m: f64) -> (i64, i64) {
        let h = self.config.height as f64;
        let top = self.cy - self.f * (top_m - self.config.height_m) / z;
        let bottom = self.cy + self.f * (self.config.height_m - base_m) / z;
        (top.round().clamp(0.0, h) as i64, bottom.round().clamp(0.0, h) as i64)
    }

    /// Objects (circles with a label) visible in the layout: in view, in
    /// front of the walls and not hidden behind nearer circles in at least
    /// two columns.
    pub fn visible(&self, layout: &ViewLayout, styles: &[ObjectStyle], labelled: &[bool]) -> Vec<VisibleCircle> {
        let mut out = Vec::new();
        for cv in &layout.circles {
            if !labelled.get(cv.idx).copied().unwrap_or(false) {
                continue;
            }
            let style = styles[cv.idx];
            let (mut x0, mut x1, mut y0, mut y1, mut n, mut z_min) = (usize::MAX, 0, i64::MAX, 0, 0, f64::INFINITY);
            for &(x, t) in &cv.hits {
                if layout.front[x].0 != cv.idx {
                    continue;
                }
                let z = t * self.col_cos[x];
                let (top, bottom) = self.span(z, style.base_m, style.top_m);
                if bottom <= top {
                    continue;
                }
                n += 1;
                x0 = x0.min(x);
                x1 = x1.max(x);
                y0 = y0.min(top);
                y1 = y1.max(bottom - 1);
                z_min = z_min.min(z);
            }
            if n >= 2 {
                out.push(VisibleCircle { idx: cv.idx, bbox: [x0 as u32, y0 as u32, x1 as u32, y1 as u32], z_min });
            }
        }
        out
    }

    /// The label buffer of the view: per pixel, `1 + k` for the `k`-th
    /// labelled object drawn there (in the order of `labels` below), 0 for
    /// walls, floor, ceiling and unlabelled objects. Objects are painted in
    /// the same far-to-near order as [`CameraModel::render`], so a pixel
    /// carries the label of the surface actually rendered in it.
    pub fn label_buffer(
        &self,
        scene: &Scene,
        layout: &ViewLayout,
        origin: Point2,
        yaw: f64,
        objects: ObjectLook<'_>,
    ) -> LabelFrame {
        let (w, h) = (self.config.width, self.config.height);
        let mut ids = vec![0u16; w * h];
        let mut names: Vec<String> = Vec::new();
        let mut id_of: Vec<(usize, u16)> = Vec::new();
        for cv in &layout.circles {
            let circ = &scene.circles[cv.idx];
            let style = objects.styles[cv.idx];
            let id = match objects.labels.get(cv.idx).and_then(Option::as_ref) {
                Some(label) => match id_of.iter().find(|(i, _)| *i == cv.idx) {
                    Some((_, id)) => *id,
                    None if names.len() < usize::from(u16::MAX) => {
                        names.push(label.clone());
                        let id = names.len() as u16;
                        id_of.push((cv.idx, id));
                        id
                    }
                    None => 0,
                },
                None => 0,
            };
            for &(x, t) in &cv.hits {
                let z = t * self.col_cos[x];
                let (mut top, bottom) = self.span(z, style.base_m, style.top_m);
                if style.top_m < self.config.height_m {
                    let a = yaw + self.col_angle[x];
                    let dir = Point2::new(a.cos(), a.sin());
                    let m = origin - circ.c;
                    let b = m.dot(dir);
                    let far = -b + (b * b - m.dot(m) + circ.r * circ.r).max(0.0).sqrt();
                    top = top.min(self.span(far * self.col_cos[x], style.base_m, style.top_m).0);
                }
                for y in top.max(0)..bottom {
                    ids[y as usize * w + x] = id;
                }
            }
        }
        LabelFrame { width: w, height: h, ids, labels: names }
    }

    /// Renders the view from `from` (position and viewing direction).
    /// `wall_colour(hit_point_in_front)` gives the base colour of a wall
    /// column; `objects` how objects look.
    pub fn render(
        &self,
        scene: &Scene,
        layout: &ViewLayout,
        from: Pose2,
        wall_colour: &dyn Fn(Point2) -> Rgb,
        objects: ObjectLook<'_>,
        want_depth: bool,
    ) -> (RgbFrame, Option<Vec<f32>>) {
        let (origin, yaw) = (from.position(), from.yaw);
        let ObjectLook { styles, labels } = objects;
        let (w, h) = (self.config.width, self.config.height);
        let mut frame = RgbFrame::new(w, h, Rgb::BLACK);
        let mut depth = want_depth.then(|| vec![0f32; w * h]);
        {
            let bytes = frame.as_bytes_mut();
            for y in 0..h {
                let c = self.row_colour[y].0;
                for px in bytes[y * w * 3..(y + 1) * w * 3].chunks_exact_mut(3) {
                    px.copy_from_slice(&c);
                }
            }
        }
        if let Some(d) = depth.as_mut() {
            for y in 0..h {
                d[y * w..(y + 1) * w].fill(self.row_depth[y]);
            }
        }
        let light = Point2::new(0.6, 0.8);
        let max_depth = self.config.max_depth_m as f32;
        for x in 0..w {
            let t = layout.wall_t[x];
            if !t.is_finite() {
                continue;
            }
            let id = layout.wall_id[x];
            let Some(seg) = scene.segs.get(id as usize) else { continue };
            let z = t * self.col_cos[x];
            let a = yaw + self.col_angle[x];
            let dir = Point2::new(a.cos(), a.sin());
            let probe = origin + dir.scale((t - 0.05).max(0.0));
            let len = seg.e.norm().max(1e-9);
            let normal = Point2::new(-seg.e.y / len, seg.e.x / len);
            let mut k = distance_shade(z) * (0.8 + 0.2 * normal.dot(light).abs());
            let edge = (x > 0 && layout.wall_id[x - 1] != id) || (x + 1 < w && layout.wall_id[x + 1] != id);
            if edge {
                k *= 0.55;
            }
            let colour = wall_colour(probe).shade(k);
            let (top, bottom) = self.span(z, 0.0, self.config.wall_height_m);
            let board = (self.f * 0.08 / z).round() as i64;
            let board_colour = colour.shade(0.6);
            let zf = if z <= self.config.max_depth_m { z as f32 } else { f32::INFINITY };
            let bytes = frame.as_bytes_mut();
            for y in top..bottom {
                let c = if y >= bottom - board { board_colour } else { colour };
                let i = (y as usize * w + x) * 3;
                bytes[i..i + 3].copy_from_slice(&c.0);
            }
            if let Some(d) = depth.as_mut() {
                for y in top..bottom {
                    d[y as usize * w + x] = zf;
                }
            }
        }
        for cv in &layout.circles {
            let circ = &scene.circles[cv.idx];
            let style = styles[cv.idx];
            for &(x, t) in &cv.hits {
                let z = t * self.col_cos[x];
                let a = yaw + self.col_angle[x];
                let dir = Point2::new(a.cos(), a.sin());
                let hit = origin + dir.scale(t);
                let n = (hit - circ.c).scale(1.0 / circ.r);
                let lambert = (-n.dot(dir)).max(0.0);
                let colour = style.colour.shade(distance_shade(z) * (0.5 + 0.5 * lambert));
                let (top, bottom) = self.span(z, style.base_m, style.top_m);
                // The lid of a cylinder below eye level shows between its near
                // and far rims.
                let lid = if style.top_m < self.config.height_m {
                    let m = origin - circ.c;
                    let b = m.dot(dir);
                    let far = -b + (b * b - m.dot(m) + circ.r * circ.r).max(0.0).sqrt();
                    let (far_top, _) = self.span(far * self.col_cos[x], style.base_m, style.top_m);
                    Some((far_top, style.colour.mix(Rgb::WHITE, 0.3).shade(distance_shade(z))))
                } else {
                    None
                };
                let bytes = frame.as_bytes_mut();
                for y in top..bottom {
                    let i = (y as usize * w + x) * 3;
                    bytes[i..i + 3].copy_from_slice(&colour.0);
                }
                if let Some((far_top, lid_colour)) = lid {
                    for y in far_top..top {
                        let i = (y as usize * w + x) * 3;
                        bytes[i..i + 3].copy_from_slice(&lid_colour.0);
                    }
                }
                if let Some(d) = depth.as_mut() {
                    let zf = z as f32;
                    for y in top..bottom {
                        d[y as usize * w + x] = if zf <= max_depth { zf } else { f32::INFINITY };
                    }
                }
            }
        }
        if self.config.labels {
            let labelled: Vec<bool> = labels.iter().map(Option::is_some).collect();
            let mut visible = self.visible(layout, styles, &labelled);
            visible.sort_by(|a, b| a.z_min.total_cmp(&b.z_min));
            let mut taken: Vec<[i64; 4]> = Vec::new();
            for v in visible {
                if let Some(text) = labels.get(v.idx).and_then(Option::as_ref) {
                    self.draw_label(&mut frame, text, v, &mut taken);
                }
            }
        }
        (frame, depth)
    }

    /// Draws `text` centred on the object's visible box, about 0.2 m tall
    /// at its distance (1–3× the 8-pixel font), never wider than the image,
    /// moved up or down to stay clear of labels already drawn (`taken`,
    /// nearer objects first).
    fn draw_label(&self, frame: &mut RgbFrame, text: &str, v: VisibleCircle, taken: &mut Vec<[i64; 4]>) {
        let (w, h) = (self.config.width as i64, self.config.height as i64);
        let mut scale = ((self.f * 0.2 / v.z_min.max(0.1)) / 8.0).round().clamp(1.0, 3.0) as i64;
        while scale > 1 && RgbFrame::text_width(text, scale) + 2 * scale > w {
            scale -= 1;
        }
        let (tw, th) = (RgbFrame::text_width(text, scale), 8 * scale);
        let [x0, y0, x1, y1] = v.bbox.map(i64::from);
        let x = ((x0 + x1) / 2 - tw / 2).clamp(scale, (w - tw - scale).max(scale));
        let y_centre = (y0 + y1) / 2 - th / 2;
        let clamp_y = |y: i64| y.clamp(scale, (h - th - scale).max(scale));
        let step = th + 2 * scale;
        let overlaps = |r: [i64; 4], taken: &[[i64; 4]]| {
            taken.iter().any(|t| r[0] < t[2] && t[0] < r[2] && r[1] < t[3] && t[1] < r[3])
        };
        let mut y = clamp_y(y_centre);
        for k in [0i64, 1, -1, 2, -2, 3, -3] {
            let cand = clamp_y(y_centre + k * step);
            let rect = [x - scale, cand - scale, x + tw + scale, cand + th + scale];
            if !overlaps(rect, taken) {
                y = cand;
                break;
            }
        }
        taken.push([x - scale, y - scale, x + tw + scale, y + th + scale]);
        frame.text(x, y, text, scale, Rgb::WHITE, Some(Rgb::BLACK));
    }
}
