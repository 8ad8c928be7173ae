//! Frame similarity for frame skipping: both frames are
//! reduced to 160×120 grayscale and compared by mean absolute difference;
//! similarity = 1 − MAD/255 (1.0 identical, 0.0 opposite).

use crate::raster::RgbFrame;

/// Thumbnail width used for comparison.
pub const THUMB_W: usize = 160;
/// Thumbnail height used for comparison.
pub const THUMB_H: usize = 120;

/// A 160×120 grayscale thumbnail of a frame, cheap to keep as "the last
/// frame sent to the VLM".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thumbnail {
    pixels: Vec<u8>,
}

impl Thumbnail {
    /// Box-filters an RGB frame down (or nearest-samples it up) to 160×120
    /// luma. An empty frame gives a black thumbnail.
    pub fn from_frame(frame: &RgbFrame) -> Self {
        let (w, h) = (frame.width(), frame.height());
        let mut pixels = vec![0u8; THUMB_W * THUMB_H];
        if w == 0 || h == 0 {
            return Self { pixels };
        }
        let data = frame.as_bytes();
        for ty in 0..THUMB_H {
            let y0 = ty * h / THUMB_H;
            let y1 = ((ty + 1) * h / THUMB_H).max(y0 + 1).min(h);
            for tx in 0..THUMB_W {
                let x0 = tx * w / THUMB_W;
                let x1 = ((tx + 1) * w / THUMB_W).max(x0 + 1).min(w);
                let (mut sum, mut n) = (0u32, 0u32);
                for y in y0..y1 {
                    let row = y * w;
                    for x in x0..x1 {
                        let i = (row + x) * 3;
                        // integer BT.601 luma
                        sum += (299 * u32::from(data[i]) + 587 * u32::from(data[i + 1]) + 114 * u32::from(data[i + 2]))
                            / 1000;
                        n += 1;
                    }
                }
                pixels[ty * THUMB_W + tx] = (sum / n.max(1)) as u8;
            }
        }
        Self { pixels }
    }

    /// The grayscale pixels, row-major.
    pub fn pixels(&self) -> &[u8] {
        &self.pixels
    }

    /// Similarity with another thumbnail: `1 − mean|a − b| / 255`.
    pub fn similarity(&self, other: &Thumbnail) -> f64 {
        let total: u64 = self.pixels.iter().zip(&other.pixels).map(|(a, b)| u64::from(a.abs_diff(*b))).sum();
        1.0 - total as f64 / (self.pixels.len() as f64 * 255.0)
    }
}

/// Similarity of two frames (see module docs).
///
/// ```
/// use nav_core::raster::{RgbFrame, Rgb};
/// use nav_core::similarity::frame_similarity;
/// let a = RgbFrame::new(320, 240, Rgb([100, 100, 100]));
/// let b = RgbFrame::new(640, 480, Rgb([100, 100, 100]));
/// assert_eq!(frame_similarity(&a, &b), 1.0);
/// ```
pub fn frame_similarity(a: &RgbFrame, b: &RgbFrame) -> f64 {
    Thumbnail::from_frame(a).similarity(&Thumbnail::from_frame(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raster::Rgb;

    #[test]
    fn black_vs_white_is_zero() {
        let a = RgbFrame::new(160, 120, Rgb::BLACK);
        let b = RgbFrame::new(160, 120, Rgb::WHITE);
        assert!(frame_similarity(&a, &b).abs() < 1e-12);
    }

    #[test]
    fn partial_change_hand_computed() {
        // Left half changes from 0 to 51 (luma): MAD = 25.5 → 1 − 0.1 = 0.9
        let a = RgbFrame::new(160, 120, Rgb::BLACK);
        let mut b = a.clone();
        b.fill_rect(0, 0, 80, 120, Rgb([51, 51, 51]));
        assert!((frame_similarity(&a, &b) - 0.9).abs() < 1e-9);
    }
}
