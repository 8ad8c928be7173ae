//! Top-down pictures of an arena for people: rooms in pastel colours with
//! their names, walls, obstacles, labelled objects, the start and the goal,
//! plus overlays (the robot's trajectory, anchors coloured by place, a
//! target point and a title), as PNG or SVG. `nav run --plot` and
//! `nav replay` draw with this.
//!
//! ```
//! use nav_hal::arena::Arena;
//! use nav_hal::picture::MapPicture;
//! use nav_core::geometry::Point2;
//! let arena = Arena::builtin("dead_end")?;
//! let pic = MapPicture::new(&arena)
//!     .with_trajectory(vec![Point2::new(-1.5, 1.0), Point2::new(-1.5, -1.5), Point2::new(1.5, -1.5)])
//!     .with_anchors(vec![(Point2::new(-1.5, 1.0), 0), (Point2::new(-1.5, -1.5), 1)])
//!     .with_title("dead_end");
//! let png = pic.to_png()?;
//! assert_eq!(&png[1..4], b"PNG");
//! assert!(pic.to_svg().starts_with("<svg"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::HalError;
use crate::arena::semantics::{object_style, room_colour};
use crate::arena::{Arena, DEFAULT_ROBOT_RADIUS_M, Goal};
use nav_core::geometry::Point2;
use nav_core::raster::{Rgb, RgbFrame};
use std::path::Path;

mod svg;

const MARGIN_PX: f64 = 20.0;
const TITLE_PX: f64 = 28.0;
const WALL: Rgb = Rgb([30, 30, 30]);
const GOAL: Rgb = Rgb([220, 30, 40]);
const START: Rgb = Rgb([20, 150, 60]);
const PATH: Rgb = Rgb([30, 90, 220]);
const TARGET: Rgb = Rgb([200, 0, 200]);

/// Colours of places, cycled by place id.
const PLACE_COLOURS: [Rgb; 10] = [
    Rgb([230, 25, 75]),
    Rgb([60, 180, 75]),
    Rgb([0, 130, 200]),
    Rgb([245, 130, 48]),
    Rgb([145, 30, 180]),
    Rgb([70, 200, 200]),
    Rgb([240, 50, 230]),
    Rgb([150, 150, 0]),
    Rgb([0, 128, 128]),
    Rgb([128, 0, 0]),
];

/// The colour a place id is drawn in.
pub fn place_colour(place_id: u32) -> Rgb {
    PLACE_COLOURS[place_id as usize % PLACE_COLOURS.len()]
}

/// A top-down map of an arena with overlays. See the [module docs](self).
#[derive(Debug, Clone, PartialEq)]
pub struct MapPicture {
    /// The arena drawn.
    pub arena: Arena,
    /// Robot positions in order (arena frame).
    pub trajectory: Vec<Point2>,
    /// Anchors with the id of their place.
    pub anchors: Vec<(Point2, u32)>,
    /// A target point to mark (e.g. the planner's current subgoal).
    pub goal: Option<Point2>,
    /// A title drawn above the map.
    pub title: Option<String>,
    /// Pixels per metre.
    pub scale_px_per_m: f64,
}

impl MapPicture {
    /// A picture of `arena` without overlays at 60 px/m.
    pub fn new(arena: &Arena) -> Self {
        Self {
            arena: arena.clone(),
            trajectory: Vec::new(),
            anchors: Vec::new(),
            goal: None,
            title: None,
            scale_px_per_m: 60.0,
        }
    }

    /// Sets the trajectory.
    pub fn with_trajectory(mut self, trajectory: Vec<Point2>) -> Self {
        self.trajectory = trajectory;
        self
    }

    /// Sets the anchors `(position, place id)`.
    pub fn with_anchors(mut self, anchors: Vec<(Point2, u32)>) -> Self {
        self.anchors = anchors;
        self
    }

    /// Marks a target point.
    pub fn with_goal(mut self, goal: Point2) -> Self {
        self.goal = Some(goal);
        self
    }

    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the scale (clamped to 5–400 px/m).
    pub fn with_scale(mut self, px_per_m: f64) -> Self {
        self.scale_px_per_m = if px_per_m.is_finite() { px_per_m.clamp(5.0, 400.0) } else { 60.0 };
        self
    }

    fn scale(&self) -> f64 {
        if self.scale_px_per_m.is_finite() { self.scale_px_per_m.clamp(5.0, 400.0) } else { 60.0 }
    }

    fn top(&self) -> f64 {
        MARGIN_PX + if self.title.is_some() { TITLE_PX } else { 0.0 }
    }

    /// Image size in pixels.
    pub fn size(&self) -> (usize, usize) {
        let [x0, y0, x1, y1] = self.arena.bounds;
        let s = self.scale();
        let w = ((x1 - x0) * s + 2.0 * MARGIN_PX).ceil().clamp(16.0, 8192.0) as usize;
        let h = ((y1 - y0) * s + MARGIN_PX + self.top()).ceil().clamp(16.0, 8192.0) as usize;
        (w, h)
    }

    /// Arena point → pixel (y up on the map, down in the image).
    fn px(&self, p: Point2) -> (f64, f64) {
        let [x0, _, _, y1] = self.arena.bounds;
        let s = self.scale();
        (MARGIN_PX + (p.x - x0) * s, self.top() + (y1 - p.y) * s)
    }

    /// Pixel centre and text scale of a room's name: the first of a few
    /// spots inside the room (centre, then above and below it) where the
    /// text covers no object.
    fn room_label(&self, room: &crate::arena::Room) -> (f64, f64, i64) {
        let s = self.scale();
        let pts = room.points();
        let scale = if RgbFrame::text_width(&room.name, 2) as f64 <= polygon_width(&pts) * s * 0.8 { 2 } else { 1 };
        let (tw, th) = (RgbFrame::text_width(&room.name, scale) as f64, 8.0 * scale as f64);
        let c = centroid(&pts);
        let lo = pts.iter().map(|p| p.y).fold(f64::INFINITY, f64::min);
        let hi = pts.iter().map(|p| p.y).fold(f64::NEG_INFINITY, f64::max);
        let circles = self.arena.all_circles();
        let mut best = self.px(c);
        let (left, right) = (
            pts.iter().map(|p| p.x).fold(f64::INFINITY, f64::min),
            pts.iter().map(|p| p.x).fold(f64::NEG_INFINITY, f64::max),
        );
        let offsets = [0.0, 0.2, -0.2, 0.35, -0.35, 0.1, -0.1, 0.28, -0.28];
        for (kx, ky) in [0.0, -0.2, 0.2].iter().flat_map(|kx| offsets.iter().map(move |ky| (*kx, *ky))) {
            let p = Point2::new(c.x + kx * (right - left), c.y + ky * (hi - lo));
            if !nav_core::geometry::point_in_polygon(p, &pts) {
                continue;
            }
            let (x, y) = self.px(p);
            let clear = circles.iter().all(|(cc, r, _)| {
                let (ox, oy) = self.px(*cc);
                let rr = r * s + 2.0;
                let nx = ox.clamp(x - tw / 2.0, x + tw / 2.0);
                let ny = oy.clamp(y - th / 2.0, y + th / 2.0);
                (nx - ox).hypot(ny - oy) > rr
            });
            if clear {
                best = (x, y);
                break;
            }
        }
        (best.0, best.1, scale)
    }

    /// Renders the picture as pixels.
    pub fn to_frame(&self) -> RgbFrame {
        let (w, h) = self.size();
        let s = self.scale();
        let mut f = RgbFrame::new(w, h, Rgb::WHITE);
        let [x0, y0, x1, y1] = self.arena.bounds;
        let (bx0, by0) = self.px(Point2::new(x0, y1));
        let (bx1, by1) = self.px(Point2::new(x1, y0));
        f.fill_rect(bx0 as i64, by0 as i64, bx1 as i64, by1 as i64, Rgb([244, 244, 240]));
        for room in &self.arena.rooms {
            let pts: Vec<(f64, f64)> = room.points().into_iter().map(|p| self.px(p)).collect();
            fill_polygon(&mut f, &pts, room_colour(&room.name).mix(Rgb::WHITE, 0.6));
        }
        for room in &self.arena.rooms {
            let (cx, cy, scale) = self.room_label(room);
            let tw = RgbFrame::text_width(&room.name, scale) as f64;
            f.text(
                (cx - tw / 2.0) as i64,
                (cy - 4.0 * scale as f64) as i64,
                &room.name,
                scale,
                Rgb([90, 90, 90]),
                None,
            );
        }
        for (seg, _) in self.arena.all_segments() {
            let (ax, ay) = self.px(seg.a);
            let (bx, by) = self.px(seg.b);
            f.line(ax, ay, bx, by, 3.0, WALL);
        }
        for o in &self.arena.obstacles {
            let (cx, cy) = self.px(Point2::new(o.x, o.y));
            f.disc(cx, cy, o.r * s, Rgb([150, 146, 140]));
            f.ring(cx, cy, o.r * s, 1.0, Rgb([80, 80, 80]));
        }
        let goal_label = match &self.arena.goal {
            Some(Goal::Object { label }) => Some(label.as_str()),
            _ => None,
        };
        let sd = self.arena.success_distance_m();
        for o in &self.arena.objects {
            let (cx, cy) = self.px(o.center());
            if goal_label == Some(o.label.as_str()) {
                f.ring(cx, cy, (o.r + sd) * s, 1.0, GOAL.mix(Rgb::WHITE, 0.4));
            }
            f.disc(cx, cy, o.r * s, object_style(&o.label).colour);
            let ring = if goal_label == Some(o.label.as_str()) { GOAL } else { Rgb([40, 40, 40]) };
            f.ring(cx, cy, o.r * s, if ring == GOAL { 3.0 } else { 1.0 }, ring);
        }
        for o in &self.arena.objects {
            let (cx, cy) = self.px(o.center());
            let tw = RgbFrame::text_width(&o.label, 1) as f64;
            let x = (cx - tw / 2.0).clamp(1.0, (w as f64 - tw - 1.0).max(1.0));
            f.text(x as i64, (cy - 4.0) as i64, &o.label, 1, Rgb::BLACK, Some(Rgb::WHITE));
        }
        if let Some(Goal::Point { x, y }) = &self.arena.goal {
            let (gx, gy) = self.px(Point2::new(*x, *y));
            f.ring(gx, gy, sd * s, 2.0, GOAL);
            f.line(gx - 8.0, gy - 8.0, gx + 8.0, gy + 8.0, 3.0, GOAL);
            f.line(gx - 8.0, gy + 8.0, gx + 8.0, gy - 8.0, 3.0, GOAL);
        }
        for pair in self.trajectory.windows(2) {
            let (ax, ay) = self.px(pair[0]);
            let (bx, by) = self.px(pair[1]);
            f.line(ax, ay, bx, by, 2.0, PATH);
        }
        if let Some(&last) = self.trajectory.last() {
            let (lx, ly) = self.px(last);
            f.disc(lx, ly, DEFAULT_ROBOT_RADIUS_M * s, PATH);
        }
        for &(p, place) in &self.anchors {
            let (ax, ay) = self.px(p);
            f.disc(ax, ay, 5.0, place_colour(place));
            f.ring(ax, ay, 5.0, 1.0, Rgb::BLACK);
        }
        if let Some(g) = self.goal {
            let (gx, gy) = self.px(g);
            f.ring(gx, gy, 7.0, 2.0, TARGET);
            f.disc(gx, gy, 2.5, TARGET);
        }
        let start = self.arena.start.pose();
        let (sx, sy) = self.px(start.position());
        let r = DEFAULT_ROBOT_RADIUS_M * s;
        f.disc(sx, sy, r, START);
        let tip = start.transform_point(Point2::new(DEFAULT_ROBOT_RADIUS_M * 2.2, 0.0));
        let (tx, ty) = self.px(tip);
        f.arrow(sx, sy, tx, ty, 2.0, START);
        // One-metre scale bar.
        let (sbx, sby) = (MARGIN_PX, h as f64 - MARGIN_PX / 2.0);
        f.line(sbx, sby, sbx + s, sby, 2.0, Rgb::BLACK);
        f.text((sbx + s + 4.0) as i64, (sby - 4.0) as i64, "1 m", 1, Rgb::BLACK, None);
        if let Some(title) = &self.title {
            let scale = if RgbFrame::text_width(title, 2) as f64 <= w as f64 - 2.0 * MARGIN_PX { 2 } else { 1 };
            f.text(MARGIN_PX as i64, (MARGIN_PX / 2.0) as i64 + 4 - 4 * scale, title, scale, Rgb::BLACK, None);
        }
        f
    }

    /// The picture as PNG bytes.
    pub fn to_png(&self) -> Result<Vec<u8>, HalError> {
        encode_png(&self.to_frame())
    }

    /// Writes the picture to `path`: PNG for `.png`, SVG for `.svg`.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), HalError> {
        let path = path.as_ref();
        let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        let bytes = match ext.as_deref() {
            Some("png") => self.to_png()?,
            Some("svg") => self.to_svg().into_bytes(),
            _ => {
                return Err(HalError::invalid_command(
                    "path",
                    format!("{}: picture files must end in .png or .svg", path.display()),
                ));
            }
        };
        nav_core::bounded::refuse_fifo(path)
            .and_then(|()| std::fs::write(path, bytes))
            .map_err(|source| HalError::Io { path: path.to_path_buf(), source })
    }
}

/// Encodes a frame as PNG.
pub fn encode_png(frame: &RgbFrame) -> Result<Vec<u8>, HalError> {
    encode(frame, image::ImageFormat::Png)
}

/// Encodes a frame as JPEG at `quality` (1–100; 80 is a good default for
/// images sent to a model).
pub fn encode_jpeg(frame: &RgbFrame, quality: u8) -> Result<Vec<u8>, HalError> {
    let img = to_image(frame)?;
    let mut out = Vec::new();
    let enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality.clamp(1, 100));
    img.write_with_encoder(enc).map_err(|e| HalError::Image { message: e.to_string() })?;
    Ok(out)
}

fn to_image(frame: &RgbFrame) -> Result<image::RgbImage, HalError> {
    image::RgbImage::from_raw(frame.width() as u32, frame.height() as u32, frame.as_bytes().to_vec())
        .ok_or_else(|| HalError::Image { message: "frame buffer does not match its size".into() })
}

fn encode(frame: &RgbFrame, format: image::ImageFormat) -> Result<Vec<u8>, HalError> {
    let img = to_image(frame)?;
    let mut cursor = std::io::Cursor::new(Vec::new());
    img.write_to(&mut cursor, format).map_err(|e| HalError::Image { message: e.to_string() })?;
    Ok(cursor.into_inner())
}

/// Most pixels one image from outside (a bridge or rosbridge camera frame)
/// may have: 4096 × 4096. Checked from its shape, or from its PNG/JPEG
/// header, before anything is decoded.
pub const MAX_FRAME_PIXELS: u64 = 1 << 24;

/// The pixel count of a `width` × `height` image when it is at most
/// `max_pixels`; otherwise an error naming the size and the limit.
pub fn check_pixels(width: u64, height: u64, max_pixels: u64) -> Result<u64, HalError> {
    width.checked_mul(height).filter(|&n| n <= max_pixels).ok_or_else(|| HalError::Image {
        message: format!("a {width}x{height} image is over the limit of {max_pixels} pixels"),
    })
}

/// Decodes a PNG or JPEG from outside (`format`, or recognised from the
/// bytes when `None`) into a frame. Its header is read first: an image over
/// `max_pixels` is an error before any pixel is decoded.
pub fn decode_image_bounded(
    bytes: &[u8],
    format: Option<image::ImageFormat>,
    max_pixels: u64,
) -> Result<RgbFrame, HalError> {
    let err = |e: image::ImageError| HalError::Image { message: e.to_string() };
    let reader = || match format {
        Some(f) => Ok(image::ImageReader::with_format(std::io::Cursor::new(bytes), f)),
        None => image::ImageReader::new(std::io::Cursor::new(bytes))
            .with_guessed_format()
            .map_err(|e| HalError::Image { message: e.to_string() }),
    };
    let (w, h) = reader()?.into_dimensions().map_err(err)?;
    check_pixels(u64::from(w), u64::from(h), max_pixels)?;
    let mut r = reader()?;
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(w);
    limits.max_image_height = Some(h);
    // 16-bit RGBA is the widest layout a PNG decodes to
    limits.max_alloc = Some(u64::from(w) * u64::from(h) * 8 + (1 << 20));
    r.limits(limits);
    let img = r.decode().map_err(err)?.to_rgb8();
    let (w, h) = (img.width() as usize, img.height() as usize);
    RgbFrame::from_raw(w, h, img.into_raw()).map_err(|e| HalError::Image { message: e.to_string() })
}

/// Decodes a PNG or JPEG into a frame (for tests and tools).
pub fn decode_image(bytes: &[u8]) -> Result<RgbFrame, HalError> {
    let img = image::load_from_memory(bytes).map_err(|e| HalError::Image { message: e.to_string() })?.to_rgb8();
    let (w, h) = (img.width() as usize, img.height() as usize);
    RgbFrame::from_raw(w, h, img.into_raw()).map_err(|e| HalError::Image { message: e.to_string() })
}

fn hex(c: Rgb) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0[0], c.0[1], c.0[2])
}

fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

fn centroid(pts: &[Point2]) -> Point2 {
    let n = pts.len().max(1) as f64;
    let (sx, sy) = pts.iter().fold((0.0, 0.0), |(x, y), p| (x + p.x, y + p.y));
    Point2::new(sx / n, sy / n)
}

fn polygon_width(pts: &[Point2]) -> f64 {
    let lo = pts.iter().map(|p| p.x).fold(f64::INFINITY, f64::min);
    let hi = pts.iter().map(|p| p.x).fold(f64::NEG_INFINITY, f64::max);
    (hi - lo).max(0.0)
}

/// Even-odd scanline fill of a pixel-space polygon.
fn fill_polygon(f: &mut RgbFrame, pts: &[(f64, f64)], c: Rgb) {
    if pts.len() < 3 || pts.iter().any(|p| !(p.0.is_finite() && p.1.is_finite())) {
        return;
    }
    let ymin = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min).floor().max(0.0) as i64;
    let ymax = pts.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max).ceil().min(f.height() as f64) as i64;
    let mut xs = Vec::new();
    for y in ymin..ymax {
        let yc = y as f64 + 0.5;
        xs.clear();
        for i in 0..pts.len() {
            let (a, b) = (pts[i], pts[(i + 1) % pts.len()]);
            if (a.1 > yc) != (b.1 > yc) {
                xs.push(a.0 + (yc - a.1) * (b.0 - a.0) / (b.1 - a.1));
            }
        }
        xs.sort_by(f64::total_cmp);
        for pair in xs.chunks_exact(2) {
            let (x0, x1) = ((pair[0] - 0.5).ceil() as i64, (pair[1] - 0.5).ceil() as i64);
            f.fill_rect(x0, y, x1, y + 1, c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_xml() {
        assert_eq!(xml_escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }

    #[test]
    fn png_round_trips_pixels() {
        let arena = Arena::builtin("simple").unwrap();
        let pic = MapPicture::new(&arena).with_goal(Point2::new(0.0, 0.0));
        let frame = pic.to_frame();
        let back = decode_image(&pic.to_png().unwrap()).unwrap();
        assert_eq!(frame, back);
        // The start disc is green.
        let (sx, sy) = pic.px(Point2::new(-1.5, -1.5));
        assert_eq!(frame.get(sx as i64, sy as i64), Some(START));
    }

    #[test]
    fn rejects_unknown_extension() {
        let arena = Arena::builtin("simple").unwrap();
        let err = MapPicture::new(&arena).save("/tmp/x.gif").unwrap_err();
        assert!(err.to_string().contains(".png or .svg"));
    }
}
