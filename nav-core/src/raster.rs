//! A small RGB raster with the drawing primitives navkit needs for camera
//! renders, annotated images and map pictures: rectangles, lines, circles,
//! arrows and legible 8×8 bitmap text (scaled, optionally outlined).
//!
//! Pure: encoding to PNG/JPEG happens in the crates that do I/O. The pixel
//! layout (row-major RGB8) matches `image::RgbImage` so buffers move across
//! without copying.

use crate::error::CoreError;
use font8x8::UnicodeFonts as _;
use serde::{Deserialize, Serialize};

/// An RGB colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Rgb(pub [u8; 3]);

impl Rgb {
    /// Black.
    pub const BLACK: Rgb = Rgb([0, 0, 0]);
    /// White.
    pub const WHITE: Rgb = Rgb([255, 255, 255]);

    /// Multiplies each channel by `k` (clamped to `[0, 1]`).
    pub fn shade(self, k: f64) -> Rgb {
        let k = if k.is_finite() { k.clamp(0.0, 1.0) } else { 0.0 };
        Rgb(self.0.map(|c| (f64::from(c) * k).round() as u8))
    }

    /// Linear blend toward `other` by `t` in `[0, 1]`.
    pub fn mix(self, other: Rgb, t: f64) -> Rgb {
        let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 };
        let mut out = [0u8; 3];
        for (i, o) in out.iter_mut().enumerate() {
            *o = (f64::from(self.0[i]) * (1.0 - t) + f64::from(other.0[i]) * t).round() as u8;
        }
        Rgb(out)
    }

    /// Perceived luminance in `[0, 255]` (ITU-R BT.601).
    pub fn luma(self) -> f64 {
        0.299 * f64::from(self.0[0]) + 0.587 * f64::from(self.0[1]) + 0.114 * f64::from(self.0[2])
    }
}

/// A row-major RGB8 image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RgbFrame {
    width: usize,
    height: usize,
    data: Vec<u8>,
}

impl RgbFrame {
    /// A frame filled with one colour.
    pub fn new(width: usize, height: usize, fill: Rgb) -> Self {
        let mut data = Vec::with_capacity(width * height * 3);
        for _ in 0..width * height {
            data.extend_from_slice(&fill.0);
        }
        Self { width, height, data }
    }

    /// Wraps an existing RGB8 buffer, checking its length (a shape whose
    /// byte count does not fit in `usize` is an error too).
    pub fn from_raw(width: usize, height: usize, data: Vec<u8>) -> Result<Self, CoreError> {
        if Some(data.len()) != width.checked_mul(height).and_then(|n| n.checked_mul(3)) {
            return Err(CoreError::ImageSize { len: data.len(), width, height, channels: 3 });
        }
        Ok(Self { width, height, data })
    }

    /// Width in pixels.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Height in pixels.
    pub fn height(&self) -> usize {
        self.height
    }

    /// The raw RGB8 bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.data
    }

    /// Mutable raw bytes.
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        &mut self.data
    }

    /// Consumes the frame, returning its bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.data
    }

    /// Pixel at `(x, y)`, if inside.
    pub fn get(&self, x: i64, y: i64) -> Option<Rgb> {
        if x < 0 || y < 0 || x as usize >= self.width || y as usize >= self.height {
            return None;
        }
        let i = (y as usize * self.width + x as usize) * 3;
        Some(Rgb([self.data[i], self.data[i + 1], self.data[i + 2]]))
    }

    /// Sets the pixel at `(x, y)`; outside is ignored.
    #[inline]
    pub fn put(&mut self, x: i64, y: i64, c: Rgb) {
        if x < 0 || y < 0 || x as usize >= self.width || y as usize >= self.height {
            return;
        }
        let i = (y as usize * self.width + x as usize) * 3;
        self.data[i..i + 3].copy_from_slice(&c.0);
    }

    /// Fills the rectangle `[x0, x1) × [y0, y1)` (clipped).
    pub fn fill_rect(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, c: Rgb) {
        let (x0, x1) = (x0.max(0), x1.min(self.width as i64));
        let (y0, y1) = (y0.max(0), y1.min(self.height as i64));
        for y in y0..y1 {
            for x in x0..x1 {
                self.put(x, y, c);
            }
        }
    }

    /// Draws a line of the given thickness (pixels).
    pub fn line(&mut self, x0: f64, y0: f64, x1: f64, y1: f64, thickness: f64, c: Rgb) {
        if ![x0, y0, x1, y1].iter().all(|v| v.is_finite() && v.abs() < 1e7) {
            return;
        }
        let len = (x1 - x0).hypot(y1 - y0);
        let steps = (len * 2.0).ceil().max(1.0) as usize;
        let r = (thickness / 2.0).max(0.5);
        for s in 0..=steps {
            let t = s as f64 / steps as f64;
            self.disc(x0 + (x1 - x0) * t, y0 + (y1 - y0) * t, r, c);
        }
    }

    /// Fills a disc.
    pub fn disc(&mut self, cx: f64, cy: f64, r: f64, c: Rgb) {
        if !(cx.is_finite() && cy.is_finite() && r.is_finite()) || r > 1e5 {
            return;
        }
        let (x0, x1) = ((cx - r).floor() as i64, (cx + r).ceil() as i64);
        let (y0, y1) = ((cy - r).floor() as i64, (cy + r).ceil() as i64);
        let r2 = r * r;
        for y in y0..=y1 {
            for x in x0..=x1 {
                let (dx, dy) = (x as f64 + 0.5 - cx, y as f64 + 0.5 - cy);
                if dx * dx + dy * dy <= r2 {
                    self.put(x, y, c);
                }
            }
        }
    }

    /// Draws a circle outline.
    pub fn ring(&mut self, cx: f64, cy: f64, r: f64, thickness: f64, c: Rgb) {
        if !(r.is_finite() && r > 0.0 && r < 1e5) {
            return;
        }
        let n = (r * 6.0).ceil().max(12.0) as usize;
        for i in 0..n {
            let a0 = i as f64 / n as f64 * std::f64::consts::TAU;
            let a1 = (i + 1) as f64 / n as f64 * std::f64::consts::TAU;
            self.line(cx + r * a0.cos(), cy + r * a0.sin(), cx + r * a1.cos(), cy + r * a1.sin(), thickness, c);
        }
    }

    /// Draws an arrow from `(x0, y0)` to `(x1, y1)` with a head.
    pub fn arrow(&mut self, x0: f64, y0: f64, x1: f64, y1: f64, thickness: f64, c: Rgb) {
        self.line(x0, y0, x1, y1, thickness, c);
        let a = (y1 - y0).atan2(x1 - x0);
        let head = (thickness * 4.0).max(6.0);
        for da in [2.6f64, -2.6] {
            self.line(x1, y1, x1 + head * (a + da).cos(), y1 + head * (a + da).sin(), thickness, c);
        }
    }

    /// Draws `text` with its top-left corner at `(x, y)` using the 8×8
    /// bitmap font scaled by `scale`. Characters without a glyph draw as
    /// `?`. With `outline`, each glyph gets a one-scale-unit border in that
    /// colour (white text with black outline reads on any background).
    pub fn text(&mut self, x: i64, y: i64, text: &str, scale: i64, c: Rgb, outline: Option<Rgb>) {
        let scale = scale.clamp(1, 16);
        if let Some(o) = outline {
            for (dx, dy) in [(-1, 0), (1, 0), (0, -1), (0, 1), (-1, -1), (1, 1), (-1, 1), (1, -1)] {
                self.text_pass(x + dx * scale, y + dy * scale, text, scale, o);
            }
        }
        self.text_pass(x, y, text, scale, c);
    }

    fn text_pass(&mut self, x: i64, y: i64, text: &str, scale: i64, c: Rgb) {
        let mut cx = x;
        for ch in text.chars() {
            let glyph = font8x8::BASIC_FONTS
                .get(ch)
                .or_else(|| font8x8::LATIN_FONTS.get(ch))
                .or_else(|| font8x8::BASIC_FONTS.get('?'))
                .unwrap_or([0; 8]);
            for (row, bits) in glyph.iter().enumerate() {
                for col in 0..8 {
                    if bits & (1 << col) != 0 {
                        self.fill_rect(
                            cx + col * scale,
                            y + row as i64 * scale,
                            cx + (col + 1) * scale,
                            y + (row as i64 + 1) * scale,
                            c,
                        );
                    }
                }
            }
            cx += 8 * scale;
        }
    }

    /// Width in pixels of `text` at `scale`.
    pub fn text_width(text: &str, scale: i64) -> i64 {
        text.chars().count() as i64 * 8 * scale.clamp(1, 16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_draws_pixels() {
        let mut f = RgbFrame::new(64, 16, Rgb::BLACK);
        f.text(0, 0, "Hi", 1, Rgb::WHITE, None);
        let lit = f.as_bytes().chunks(3).filter(|p| p[0] == 255).count();
        assert!(lit > 10);
        assert_eq!(RgbFrame::text_width("Hi", 2), 32);
    }

    #[test]
    fn clipping_never_panics() {
        let mut f = RgbFrame::new(10, 10, Rgb::BLACK);
        f.line(-100.0, -100.0, 100.0, 100.0, 3.0, Rgb::WHITE);
        f.disc(f64::NAN, 0.0, 3.0, Rgb::WHITE);
        f.text(-50, -50, "clip", 4, Rgb::WHITE, Some(Rgb::BLACK));
        f.arrow(5.0, 5.0, 5.0, 5.0, 1.0, Rgb::WHITE);
        assert_eq!(f.get(5, 5), Some(Rgb::WHITE));
        assert!(RgbFrame::from_raw(2, 2, vec![0; 11]).is_err());
        // a shape whose byte count wraps: 2^32 * 2^32 * 3 is 0 modulo 2^64
        assert!(RgbFrame::from_raw(1 << 32, 1 << 32, Vec::new()).is_err());
        assert!(RgbFrame::from_raw(usize::MAX, 1, Vec::new()).is_err());
    }
}
