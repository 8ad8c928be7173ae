//! Annotated camera images for the explore protocol: depth values
//! at the seven sample points (white text, black outline), a heading arrow
//! with cardinal text, optional sector labels and
//! VLMnav/PIVOT-style numbered candidate arrows. Encoded as JPEG quality 80
//! and base64.

use base64::Engine as _;
use nav_core::geometry::cardinal;
use nav_core::raster::{Rgb, RgbFrame};

/// Image encoding failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnnotateError {
    /// The frame is too large for JPEG (65,535 pixels per side).
    #[error("frame {width}x{height} is too large to encode")]
    TooLarge {
        /// Width in pixels.
        width: usize,
        /// Height in pixels.
        height: usize,
    },
    /// The encoder failed.
    #[error("image encoding failed: {0}")]
    Encode(String),
}

/// The seven depth sample points, as fractions of a 640×480
/// frame: centre, left-centre, right-centre, floor-ahead, upper-left,
/// upper-right, upper-centre.
pub const DEPTH_POINTS: [(f64, f64); 7] = [
    (320.0 / 640.0, 240.0 / 480.0),
    (160.0 / 640.0, 240.0 / 480.0),
    (480.0 / 640.0, 240.0 / 480.0),
    (320.0 / 640.0, 400.0 / 480.0),
    (160.0 / 640.0, 120.0 / 480.0),
    (480.0 / 640.0, 120.0 / 480.0),
    (320.0 / 640.0, 100.0 / 480.0),
];

/// A candidate direction drawn as a numbered arrow.
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateArrow {
    /// Label drawn at the arrow head (e.g. `c1` or `3`).
    pub label: String,
    /// Bearing relative to the camera axis, radians, positive = left.
    pub bearing_rad: f64,
    /// Distance to the candidate, metres (longer arrows for farther ones).
    pub distance_m: f64,
}

/// What to draw on the frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Annotation<'a> {
    /// Depth image aligned with the frame (metres, row-major, same size),
    /// if available.
    pub depth_m: Option<&'a [f32]>,
    /// Robot heading, degrees CCW from east (REP-103 world frame).
    pub heading_deg: f64,
    /// Draw "left | center | right" sector labels.
    pub sector_labels: bool,
    /// Candidate arrows (candidates protocol).
    pub candidates: &'a [CandidateArrow],
    /// Horizontal field of view of the camera, radians (for arrows).
    pub hfov_rad: f64,
}

/// Median of the valid depth values in the 5×5 window centred at `(x, y)`
/// (robust to depth holes); `None` when no value in `[0.1, 10]` m.
pub fn depth_at(depth: &[f32], width: usize, height: usize, x: usize, y: usize) -> Option<f32> {
    if depth.len() != width * height || width == 0 || height == 0 {
        return None;
    }
    let mut v = [0f32; 25];
    let mut n = 0;
    for dy in -2i64..=2 {
        for dx in -2i64..=2 {
            let (px, py) = (x as i64 + dx, y as i64 + dy);
            if px < 0 || py < 0 || px as usize >= width || py as usize >= height {
                continue;
            }
            let d = depth[py as usize * width + px as usize];
            if d.is_finite() && (0.1..=10.0).contains(&d) {
                v[n] = d;
                n += 1;
            }
        }
    }
    if n == 0 {
        return None;
    }
    let s = &mut v[..n];
    s.sort_by(f32::total_cmp);
    Some(s[n / 2])
}

/// Draws the annotation onto `frame` in place.
pub fn annotate(frame: &mut RgbFrame, a: &Annotation<'_>) {
    let (w, h) = (frame.width(), frame.height());
    if w == 0 || h == 0 {
        return;
    }
    let scale = ((w as f64 / 640.0) * 2.0).round().max(1.0) as i64;
    // depth values
    if let Some(depth) = a.depth_m {
        for (fx, fy) in DEPTH_POINTS {
            let (x, y) = ((fx * w as f64) as usize, (fy * h as f64) as usize);
            let text = match depth_at(depth, w, h, x, y) {
                Some(d) => format!("{d:.1}m"),
                None => "--".to_string(),
            };
            let tw = RgbFrame::text_width(&text, scale);
            frame.disc(x as f64, y as f64, 2.0 * scale as f64, Rgb::WHITE);
            frame.text(x as i64 - tw / 2, y as i64 + 3 * scale, &text, scale, Rgb::WHITE, Some(Rgb::BLACK));
        }
    }
    // sector labels
    if a.sector_labels {
        for k in 1..3 {
            let x = (k * w / 3) as f64;
            frame.line(x, 0.0, x, h as f64, 1.0, Rgb([255, 255, 0]));
        }
        for (k, label) in ["left", "center", "right"].iter().enumerate() {
            let cx = (2 * k + 1) * w / 6;
            let tw = RgbFrame::text_width(label, scale);
            frame.text(cx as i64 - tw / 2, h as i64 - 10 * scale, label, scale, Rgb([255, 255, 0]), Some(Rgb::BLACK));
        }
    }
    // candidate arrows from the bottom centre
    let half = (a.hfov_rad / 2.0).clamp(0.1, 1.5);
    let f = (w as f64 / 2.0) / half.tan();
    for c in a.candidates {
        let (x0, y0) = (w as f64 / 2.0, h as f64 - 4.0);
        let b = c.bearing_rad;
        let (x1, y1) = if b.abs() < half {
            let x = w as f64 / 2.0 - f * b.tan();
            let len = (0.25 + 0.1 * c.distance_m.clamp(0.0, 5.0)) * h as f64;
            (x, (y0 - len).max(h as f64 * 0.25))
        } else {
            // outside the view: an arrow to the edge on that side
            let x = if b > 0.0 { 12.0 } else { w as f64 - 12.0 };
            (x, h as f64 * 0.6)
        };
        frame.arrow(x0, y0, x1, y1, scale as f64 + 1.0, Rgb([255, 64, 32]));
        let tw = RgbFrame::text_width(&c.label, scale);
        let lx = (x1 as i64 - tw / 2).clamp(0, w as i64 - tw);
        frame.text(lx, (y1 as i64 - 10 * scale).max(0), &c.label, scale, Rgb::WHITE, Some(Rgb::BLACK));
    }
    // heading indicator, top-right
    let text = format!("{} {:.0}°", cardinal(a.heading_deg), a.heading_deg.rem_euclid(360.0));
    let tw = RgbFrame::text_width(&text, scale);
    let r = 10.0 * scale as f64;
    let (cx, cy) = (w as f64 - r - 4.0, r + 4.0);
    frame.ring(cx, cy, r, 1.5, Rgb::WHITE);
    // arrow points to the heading on a north-up dial
    let ang = a.heading_deg.to_radians();
    frame.arrow(cx, cy, cx + r * 0.8 * ang.cos(), cy - r * 0.8 * ang.sin(), 2.0, Rgb([255, 64, 32]));
    frame.text(w as i64 - tw - (2.0 * r) as i64 - 10, 4, &text, scale, Rgb::WHITE, Some(Rgb::BLACK));
}

/// Box-filters `src` into a `w`×`h` tile drawn at `(x0, y0)` of `dst`.
fn blit_scaled(dst: &mut RgbFrame, src: &RgbFrame, x0: usize, y0: usize, w: usize, h: usize) {
    let (sw, sh) = (src.width(), src.height());
    if sw == 0 || sh == 0 {
        return;
    }
    let data = src.as_bytes();
    for ty in 0..h {
        let sy0 = ty * sh / h;
        let sy1 = ((ty + 1) * sh / h).max(sy0 + 1).min(sh);
        for tx in 0..w {
            let sx0 = tx * sw / w;
            let sx1 = ((tx + 1) * sw / w).max(sx0 + 1).min(sw);
            let mut acc = [0u32; 3];
            let mut n = 0u32;
            for y in sy0..sy1 {
                for x in sx0..sx1 {
                    let i = (y * sw + x) * 3;
                    acc[0] += u32::from(data[i]);
                    acc[1] += u32::from(data[i + 1]);
                    acc[2] += u32::from(data[i + 2]);
                    n += 1;
                }
            }
            let n = n.max(1);
            dst.put(
                (x0 + tx) as i64,
                (y0 + ty) as i64,
                Rgb([(acc[0] / n) as u8, (acc[1] / n) as u8, (acc[2] / n) as u8]),
            );
        }
    }
}

/// Stitches panorama views into one image: a 4-column grid read left to
/// right, top to bottom, sweeping from behind-left through the front to
/// behind-right (+150°, +120°, … , 0°, … , −150°, 180°), each tile labelled
/// with its angle relative to the robot's front (positive = left). One
/// image costs a fraction of twelve.
pub fn stitch_panorama(p: &nav_hal::hal::Panorama, tile_w: usize, tile_h: usize) -> RgbFrame {
    let (tile_w, tile_h) = (tile_w.clamp(16, 1024), tile_h.clamp(12, 1024));
    let mut views: Vec<(i64, &RgbFrame)> = p
        .views
        .iter()
        .map(|v| (nav_core::geometry::normalize_angle(v.heading_rad).to_degrees().round() as i64, &v.frame.frame))
        .collect();
    // sweep order: angles from +179 down to −180 (behind-left → front → behind-right)
    views.sort_by_key(|(deg, _)| std::cmp::Reverse(if *deg == 180 { -180 } else { *deg }));
    let cols = 4usize;
    let rows = views.len().div_ceil(cols).max(1);
    let mut out = RgbFrame::new(cols * tile_w, rows * tile_h, Rgb::BLACK);
    for (k, (deg, frame)) in views.iter().enumerate() {
        let (cx, cy) = ((k % cols) * tile_w, (k / cols) * tile_h);
        blit_scaled(&mut out, frame, cx, cy, tile_w, tile_h);
        let label = if *deg == 0 { "0 (front)".to_string() } else { format!("{deg:+}") };
        out.text(cx as i64 + 3, cy as i64 + 3, &label, 1, Rgb::WHITE, Some(Rgb::BLACK));
        // tile border
        out.fill_rect(cx as i64, cy as i64, (cx + tile_w) as i64, cy as i64 + 1, Rgb::BLACK);
        out.fill_rect(cx as i64, cy as i64, cx as i64 + 1, (cy + tile_h) as i64, Rgb::BLACK);
    }
    out
}

/// Renders the robot's world model top-down for the candidates protocol:
/// unknown grey, free white, explored light blue, obstacles dark grey,
/// walls black; the robot green with a heading tick, the goal red,
/// candidates blue (toward the goal) or orange (others) with their ids.
/// North (+y) is up.
pub fn render_world_model(
    grid: &nav_core::grid::OccupancyGrid,
    robot: nav_core::geometry::Pose2,
    goal: Option<nav_core::geometry::Point2>,
    candidates: &[nav_core::candidates::Candidate],
    size_px: usize,
) -> RgbFrame {
    use nav_core::grid::CellState;
    let (gw, gh) = (grid.width().max(1), grid.height().max(1));
    let size_px = size_px.clamp(64, 2048);
    let scale = (size_px as f64 / gw.max(gh) as f64).max(1.0);
    let (w, h) = ((gw as f64 * scale).ceil() as usize, (gh as f64 * scale).ceil() as usize);
    let mut f = RgbFrame::new(w, h, Rgb([160, 160, 160]));
    for (i, c) in grid.cells().iter().enumerate() {
        let p = grid.pos_of(i);
        let col = match c.state {
            CellState::Unknown => continue,
            CellState::Free => Rgb::WHITE,
            CellState::Explored => Rgb([200, 225, 255]),
            CellState::Obstacle => Rgb([70, 70, 70]),
            CellState::Wall => Rgb::BLACK,
        };
        let x0 = (p.x as f64 * scale) as i64;
        let y0 = ((gh as i32 - 1 - p.y) as f64 * scale) as i64;
        f.fill_rect(x0, y0, x0 + scale.ceil() as i64, y0 + scale.ceil() as i64, col);
    }
    let to_px = |pt: nav_core::geometry::Point2| {
        let fx = (pt.x - grid.origin().x) / grid.resolution();
        let fy = (pt.y - grid.origin().y) / grid.resolution();
        (fx * scale, (gh as f64 - fy) * scale)
    };
    if let Some(goal) = goal {
        let (x, y) = to_px(goal);
        f.disc(x, y, 1.5 * scale.max(3.0), Rgb([220, 30, 30]));
    }
    for c in candidates {
        let (x, y) = to_px(c.position);
        let col = if c.kind == nav_core::candidates::CandidateKind::Subgoal {
            Rgb([40, 90, 230])
        } else {
            Rgb([245, 140, 20])
        };
        f.disc(x, y, scale.max(3.0), col);
        f.text(x as i64 + 4, y as i64 - 4, &c.id, 1, col, Some(Rgb::WHITE));
    }
    let (x, y) = to_px(robot.position());
    let r = 1.8 * scale.max(3.0);
    f.disc(x, y, r, Rgb([30, 170, 60]));
    f.line(x, y, x + 2.0 * r * robot.yaw.cos(), y - 2.0 * r * robot.yaw.sin(), 2.0, Rgb([30, 170, 60]));
    f
}

/// JPEG-encodes a frame at `quality` (the explore protocol uses 80), with the SIMD
/// `jpeg-encoder` crate (about 4× faster than `image`'s encoder here).
pub fn encode_jpeg(frame: &RgbFrame, quality: u8) -> Result<Vec<u8>, AnnotateError> {
    let (w, h) = (frame.width(), frame.height());
    let (Ok(w16), Ok(h16)) = (u16::try_from(w), u16::try_from(h)) else {
        return Err(AnnotateError::TooLarge { width: w, height: h });
    };
    let mut out = Vec::with_capacity(w * h / 4);
    let enc = jpeg_encoder::Encoder::new(&mut out, quality.clamp(1, 100));
    enc.encode(frame.as_bytes(), w16, h16, jpeg_encoder::ColorType::Rgb)
        .map_err(|e| AnnotateError::Encode(e.to_string()))?;
    Ok(out)
}

/// The frame scaled down (aspect ratio kept, triangle filter) to fit within
/// `max_width` × `max_height`; the frame itself when it already fits (or
/// when its bytes do not match its size). Frames go to a model at a size it
/// uses: a provider scales a larger image down anyway, after it has been
/// encoded, sent and billed.
pub fn fit_within(frame: &RgbFrame, max_width: usize, max_height: usize) -> std::borrow::Cow<'_, RgbFrame> {
    use std::borrow::Cow;
    let (w, h) = (frame.width(), frame.height());
    if w <= max_width && h <= max_height || w == 0 || h == 0 {
        return Cow::Borrowed(frame);
    }
    let scale = (max_width as f64 / w as f64).min(max_height as f64 / h as f64);
    let nw = ((w as f64 * scale).floor() as u32).max(1);
    let nh = ((h as f64 * scale).floor() as u32).max(1);
    let (Ok(w32), Ok(h32)) = (u32::try_from(w), u32::try_from(h)) else { return Cow::Borrowed(frame) };
    let Some(img) = image::RgbImage::from_raw(w32, h32, frame.as_bytes().to_vec()) else {
        return Cow::Borrowed(frame);
    };
    let small = image::imageops::resize(&img, nw, nh, image::imageops::FilterType::Triangle);
    match RgbFrame::from_raw(nw as usize, nh as usize, small.into_raw()) {
        Ok(f) => Cow::Owned(f),
        Err(_) => Cow::Borrowed(frame),
    }
}

/// PNG-encodes a frame.
pub fn encode_png(frame: &RgbFrame) -> Result<Vec<u8>, AnnotateError> {
    let mut out = Vec::new();
    let enc = image::codecs::png::PngEncoder::new(&mut out);
    image::ImageEncoder::write_image(
        enc,
        frame.as_bytes(),
        frame.width() as u32,
        frame.height() as u32,
        image::ExtendedColorType::Rgb8,
    )
    .map_err(|e| AnnotateError::Encode(e.to_string()))?;
    Ok(out)
}

/// Annotates a copy of `frame`, encodes it as JPEG quality 80 and returns
/// the base64 text (what goes into a data URL or an inline image part).
pub fn annotated_jpeg_base64(frame: &RgbFrame, a: &Annotation<'_>) -> Result<String, AnnotateError> {
    let mut f = frame.clone();
    annotate(&mut f, a);
    Ok(base64::engine::general_purpose::STANDARD.encode(encode_jpeg(&f, 80)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_larger_than_the_limit_are_scaled_down_keeping_the_aspect() {
        let big = RgbFrame::new(1280, 960, Rgb([200, 10, 10]));
        let small = fit_within(&big, 640, 480);
        assert_eq!((small.width(), small.height()), (640, 480));
        assert_eq!(&small.as_bytes()[..3], &[200, 10, 10]);
        let wide = RgbFrame::new(1920, 1080, Rgb([0, 0, 0]));
        let w = fit_within(&wide, 640, 480);
        assert_eq!((w.width(), w.height()), (640, 360));
        let ok = RgbFrame::new(320, 240, Rgb([0, 0, 0]));
        assert!(matches!(fit_within(&ok, 640, 480), std::borrow::Cow::Borrowed(_)));
        // the encoded JPEG has the smaller size
        let jpeg = encode_jpeg(&small, 80).unwrap();
        let decoded = image::load_from_memory(&jpeg).unwrap();
        assert_eq!((decoded.width(), decoded.height()), (640, 480));
    }

    #[test]
    fn depth_median_ignores_invalid() {
        let (w, h) = (10, 10);
        let mut d = vec![f32::NAN; 100];
        d[55] = 2.0;
        d[56] = 3.0;
        d[54] = 4.0;
        assert_eq!(depth_at(&d, w, h, 5, 5), Some(3.0));
        assert_eq!(depth_at(&d, w, h, 0, 0), None);
        assert_eq!(depth_at(&d[..5], w, h, 5, 5), None);
    }

    #[test]
    fn annotation_draws_and_encodes() {
        let frame = RgbFrame::new(640, 480, Rgb([90, 90, 90]));
        let depth = vec![2.34f32; 640 * 480];
        let arrows = [CandidateArrow { label: "c1".into(), bearing_rad: 0.3, distance_m: 2.0 }];
        let a = Annotation {
            depth_m: Some(&depth),
            heading_deg: 47.0,
            sector_labels: true,
            candidates: &arrows,
            hfov_rad: std::f64::consts::FRAC_PI_2,
        };
        let mut f = frame.clone();
        annotate(&mut f, &a);
        assert_ne!(f, frame);
        let white = f.as_bytes().chunks(3).filter(|p| p == &[255, 255, 255]).count();
        assert!(white > 500, "{white}");
        let b64 = annotated_jpeg_base64(&frame, &a).unwrap();
        let bytes = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
        assert_eq!(&bytes[..2], &[0xFF, 0xD8]); // JPEG SOI
    }
}
