//! Conversions between the ROS messages of [`msg`](super::msg) and navkit's
//! types, both ways (the test peer publishes what the HAL reads).
//!
//! Every function checks its input and answers
//! [`HalError::Protocol`] naming what is wrong; none panics on any message.

use super::msg::builtin_interfaces::Time;
use super::msg::geometry_msgs::{Point, Pose, PoseWithCovariance, Quaternion, Twist, TwistWithCovariance};
use super::msg::nav_msgs;
use super::msg::sensor_msgs::{CompressedImage, Image, LaserScan};
use super::msg::std_msgs::Header;
use crate::HalError;
use crate::hal::{DepthFrame, Odometry};
use nav_core::geometry::{Pose2, normalize_angle};
use nav_core::lidar;
use nav_core::raster::RgbFrame;

/// Largest accepted image side, pixels.
pub const MAX_IMAGE_SIDE: u32 = 16_384;

/// Bytes of the header image_transport's `compressedDepth` puts before the
/// PNG (format enum + two float parameters).
const COMPRESSED_DEPTH_HEADER: usize = 12;

fn protocol(message: impl Into<String>) -> HalError {
    HalError::Protocol { message: message.into() }
}

/// Yaw (rotation about z, radians CCW in `(-π, π]`) of a quaternion, which
/// is normalized first. Errors on a zero-length or non-finite quaternion.
pub fn yaw_from_quaternion(q: &Quaternion) -> Result<f64, HalError> {
    let n = (q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w).sqrt();
    if !(n.is_finite() && n > 1e-9) {
        return Err(protocol(format!("orientation quaternion ({}, {}, {}, {}) is not a rotation", q.x, q.y, q.z, q.w)));
    }
    let (x, y, z, w) = (q.x / n, q.y / n, q.z / n, q.w / n);
    Ok(normalize_angle((2.0 * (w * z + x * y)).atan2(1.0 - 2.0 * (y * y + z * z))))
}

/// A navkit scan from `sensor_msgs/LaserScan`, its beams rotated by
/// `yaw_offset_rad` (the scanner's mounting yaw). Ranges keep ROS
/// semantics (REP-117); `null` already arrived as NaN, *invalid*. Errors when the header is
/// unusable (zero or non-finite increment, bad limits), since such a scan
/// would hide obstacles.
pub fn scan_from_msg(msg: &LaserScan, yaw_offset_rad: f64) -> Result<lidar::LaserScan, HalError> {
    let scan = lidar::LaserScan {
        angle_min: f64::from(msg.angle_min) + yaw_offset_rad,
        angle_increment: f64::from(msg.angle_increment),
        range_min: msg.range_min,
        range_max: msg.range_max,
        ranges: msg.ranges.clone(),
    };
    if !scan.header_is_valid() {
        return Err(protocol(format!(
            "unusable LaserScan header: angle_min {}, angle_increment {}, range_min {}, range_max {}",
            msg.angle_min, msg.angle_increment, msg.range_min, msg.range_max
        )));
    }
    if scan.ranges.is_empty() {
        return Err(protocol("LaserScan has no ranges"));
    }
    Ok(scan)
}

/// Why a scan cannot be trusted, if it cannot: fewer valid beams (REP-117
/// hit, no return or too close; NaN and rosbridge's `null` are invalid)
/// than `min_valid_fraction` of all beams.
pub fn scan_fault(scan: &lidar::LaserScan, min_valid_fraction: f64) -> Option<String> {
    let total = scan.ranges.len();
    let valid = scan.ranges.iter().filter(|r| scan.effective(**r).is_some()).count();
    ((valid as f64) < min_valid_fraction * total as f64).then(|| {
        format!(
            "only {valid} of {total} beams valid (at least {:.0}% needed; null/NaN ranges are invalid readings)",
            min_valid_fraction * 100.0
        )
    })
}

/// `sensor_msgs/LaserScan` from a navkit scan (what a ROS driver would
/// publish; non-finite ranges serialize as `null`, as rosbridge sends them).
pub fn scan_to_msg(scan: &lidar::LaserScan, stamp_s: f64, frame_id: &str) -> LaserScan {
    let n = scan.ranges.len();
    LaserScan {
        header: Header::new(stamp_s, frame_id),
        angle_min: scan.angle_min as f32,
        angle_max: (scan.angle_min + scan.angle_increment * n.saturating_sub(1) as f64) as f32,
        angle_increment: scan.angle_increment as f32,
        time_increment: 0.0,
        scan_time: 0.1,
        range_min: scan.range_min,
        range_max: scan.range_max,
        ranges: scan.ranges.clone(),
        intensities: Vec::new(),
    }
}

/// Odometry from `nav_msgs/Odometry`: planar pose (yaw from the
/// quaternion), forward speed `twist.linear.x`, yaw rate
/// `twist.angular.z`, stamped `stamp_s` (the caller's clock).
pub fn odometry_from_msg(msg: &nav_msgs::Odometry, stamp_s: f64) -> Result<Odometry, HalError> {
    let p = msg.pose.pose.position;
    if !(p.x.is_finite() && p.y.is_finite()) {
        return Err(protocol(format!("odometry position ({}, {}) is not finite", p.x, p.y)));
    }
    let yaw = yaw_from_quaternion(&msg.pose.pose.orientation)?;
    let t = msg.twist.twist;
    let finite_or_zero = |v: f64| if v.is_finite() { v } else { 0.0 };
    Ok(Odometry {
        pose: Pose2::new(p.x, p.y, yaw),
        linear: finite_or_zero(t.linear.x),
        angular: finite_or_zero(t.angular.z),
        stamp_s,
        ground_truth: false,
    })
}

/// `nav_msgs/Odometry` from a planar pose and velocities.
pub fn odometry_to_msg(pose: Pose2, linear: f64, angular: f64, stamp_s: f64) -> nav_msgs::Odometry {
    let mut covariance = vec![0.0; 36];
    for i in 0..6 {
        covariance[i * 7] = 1e-3;
    }
    nav_msgs::Odometry {
        header: Header::new(stamp_s, "odom"),
        child_frame_id: "base_link".into(),
        pose: PoseWithCovariance {
            pose: Pose {
                position: Point { x: pose.x, y: pose.y, z: 0.0 },
                orientation: Quaternion::from_yaw(pose.yaw),
            },
            covariance: covariance.clone(),
        },
        twist: TwistWithCovariance { twist: Twist::planar(linear, angular), covariance },
    }
}

/// Checks an image's geometry and returns the bytes per pixel row to copy.
fn check_layout(img: &Image, bytes_per_pixel: usize) -> Result<usize, HalError> {
    if img.width == 0 || img.height == 0 || img.width > MAX_IMAGE_SIDE || img.height > MAX_IMAGE_SIDE {
        return Err(protocol(format!("image size {}x{} is outside 1..={MAX_IMAGE_SIDE}", img.width, img.height)));
    }
    let row = img.width as usize * bytes_per_pixel;
    let step = img.step as usize;
    if step < row {
        return Err(protocol(format!("image step {step} is shorter than a row of {row} bytes ({})", img.encoding)));
    }
    let needed = step * (img.height as usize - 1) + row;
    if img.data.len() < needed {
        return Err(protocol(format!(
            "image data has {} bytes, {}x{} {} with step {step} needs {needed}",
            img.data.len(),
            img.width,
            img.height,
            img.encoding
        )));
    }
    Ok(row)
}

/// An RGB frame from a raw `sensor_msgs/Image` in `rgb8`, `bgr8`, `rgba8`,
/// `bgra8` or `mono8` (row padding from `step` is skipped).
pub fn rgb_from_image(img: &Image) -> Result<RgbFrame, HalError> {
    let (bpp, order): (usize, [usize; 3]) = match img.encoding.as_str() {
        "rgb8" => (3, [0, 1, 2]),
        "bgr8" => (3, [2, 1, 0]),
        "rgba8" => (4, [0, 1, 2]),
        "bgra8" => (4, [2, 1, 0]),
        "mono8" | "8UC1" => (1, [0, 0, 0]),
        other => {
            return Err(protocol(format!(
                "colour image encoding {other:?} is not supported (use rgb8, bgr8, rgba8, bgra8, mono8 or the compressed topic)"
            )));
        }
    };
    let row = check_layout(img, bpp)?;
    let (w, h) = (img.width as usize, img.height as usize);
    let mut out = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        let start = y * img.step as usize;
        for px in img.data[start..start + row].chunks_exact(bpp) {
            out.extend_from_slice(&[px[order[0]], px[order[1]], px[order[2]]]);
        }
    }
    RgbFrame::from_raw(w, h, out).map_err(|e| protocol(e.to_string()))
}

/// A raw `rgb8` `sensor_msgs/Image` from a frame.
pub fn image_from_rgb(frame: &RgbFrame, stamp_s: f64, frame_id: &str) -> Image {
    Image {
        header: Header::new(stamp_s, frame_id),
        height: frame.height() as u32,
        width: frame.width() as u32,
        encoding: "rgb8".into(),
        is_bigendian: 0,
        step: (frame.width() * 3) as u32,
        data: frame.as_bytes().to_vec(),
    }
}

/// An RGB frame from a `sensor_msgs/CompressedImage` holding a JPEG or PNG
/// (the format is recognised from the bytes; image_transport's format
/// string such as `bgr8; jpeg compressed bgr8` only says what was encoded:
/// the decoded JPEG is RGB either way).
pub fn rgb_from_compressed(img: &CompressedImage) -> Result<RgbFrame, HalError> {
    // the header's size is checked against the frame limit before decoding
    crate::picture::decode_image_bounded(&img.data, None, crate::picture::MAX_FRAME_PIXELS)
        .map_err(|e| protocol(format!("cannot decode compressed image ({:?}): {e}", img.format)))
}

/// A `sensor_msgs/CompressedImage` (`jpeg`) from a frame.
pub fn compressed_from_rgb(
    frame: &RgbFrame,
    quality: u8,
    stamp_s: f64,
    frame_id: &str,
) -> Result<CompressedImage, HalError> {
    let mut data = Vec::new();
    let mut enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut data, quality.clamp(1, 100));
    enc.encode(frame.as_bytes(), frame.width() as u32, frame.height() as u32, image::ExtendedColorType::Rgb8)
        .map_err(|e| HalError::Image { message: e.to_string() })?;
    Ok(CompressedImage { header: Header::new(stamp_s, frame_id), format: "rgb8; jpeg compressed rgb8".into(), data })
}

/// A depth frame from a raw `sensor_msgs/Image`: `16UC1` / `mono16`
/// millimetres (0 = no measurement → NaN) or `32FC1` metres (0 → NaN),
/// honouring `is_bigendian` and `step`.
pub fn depth_from_image(img: &Image, stamp_s: f64) -> Result<DepthFrame, HalError> {
    let (w, h) = (img.width as usize, img.height as usize);
    let big = img.is_bigendian != 0;
    match img.encoding.as_str() {
        "16UC1" | "mono16" => {
            let row = check_layout(img, 2)?;
            let mut mm = Vec::with_capacity(w * h);
            for y in 0..h {
                let start = y * img.step as usize;
                for b in img.data[start..start + row].chunks_exact(2) {
                    let pair = [b[0], b[1]];
                    mm.push(if big { u16::from_be_bytes(pair) } else { u16::from_le_bytes(pair) });
                }
            }
            DepthFrame::from_millimetres(w, h, &mm, stamp_s).ok_or_else(|| protocol("depth buffer size mismatch"))
        }
        "32FC1" => {
            let row = check_layout(img, 4)?;
            let mut depth_m = Vec::with_capacity(w * h);
            for y in 0..h {
                let start = y * img.step as usize;
                for b in img.data[start..start + row].chunks_exact(4) {
                    let quad = [b[0], b[1], b[2], b[3]];
                    let v = if big { f32::from_be_bytes(quad) } else { f32::from_le_bytes(quad) };
                    depth_m.push(if v <= 0.0 { f32::NAN } else { v });
                }
            }
            Ok(DepthFrame { width: w, height: h, depth_m, stamp_s })
        }
        other => Err(protocol(format!(
            "depth image encoding {other:?} is not supported (use 16UC1 millimetres or 32FC1 metres)"
        ))),
    }
}

/// A `16UC1` (millimetre, little-endian) `sensor_msgs/Image` from a depth
/// frame, as the OAK-D publishes on `/oak/stereo/image_raw`.
pub fn image_from_depth(depth: &DepthFrame, stamp_s: f64, frame_id: &str) -> Image {
    let data = depth.to_millimetres().into_iter().flat_map(u16::to_le_bytes).collect();
    Image {
        header: Header::new(stamp_s, frame_id),
        height: depth.height as u32,
        width: depth.width as u32,
        encoding: "16UC1".into(),
        is_bigendian: 0,
        step: (depth.width * 2) as u32,
        data,
    }
}

/// A depth frame from image_transport's `compressedDepth` (a 12-byte
/// header, then a 16-bit PNG of millimetres).
pub fn depth_from_compressed(img: &CompressedImage, stamp_s: f64) -> Result<DepthFrame, HalError> {
    if !img.format.contains("compressedDepth") {
        return Err(protocol(format!("compressed depth format {:?} is not compressedDepth", img.format)));
    }
    let png = img.data.get(COMPRESSED_DEPTH_HEADER..).unwrap_or_default();
    let decoded = image::load_from_memory_with_format(png, image::ImageFormat::Png)
        .map_err(|e| protocol(format!("cannot decode compressedDepth PNG: {e}")))?;
    let luma = decoded.to_luma16();
    let (w, h) = (luma.width() as usize, luma.height() as usize);
    DepthFrame::from_millimetres(w, h, luma.as_raw(), stamp_s).ok_or_else(|| protocol("depth buffer size mismatch"))
}

/// image_transport's `compressedDepth` of a depth frame: the 12-byte
/// header (format 1 = PNG, two unused depth parameters), then a 16-bit
/// grey PNG of millimetres (0 = no measurement).
pub fn compressed_depth_from_depth(
    depth: &DepthFrame,
    stamp_s: f64,
    frame_id: &str,
) -> Result<CompressedImage, HalError> {
    let mm = depth.to_millimetres();
    let img = image::ImageBuffer::<image::Luma<u16>, _>::from_raw(depth.width as u32, depth.height as u32, mm)
        .ok_or_else(|| HalError::Image { message: "depth buffer size mismatch".into() })?;
    let mut png = Vec::new();
    image::DynamicImage::ImageLuma16(img)
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .map_err(|e| HalError::Image { message: e.to_string() })?;
    let mut data = Vec::with_capacity(COMPRESSED_DEPTH_HEADER + png.len());
    data.extend_from_slice(&1i32.to_le_bytes());
    data.extend_from_slice(&[0u8; 8]);
    data.extend_from_slice(&png);
    Ok(CompressedImage { header: Header::new(stamp_s, frame_id), format: "16UC1; compressedDepth png".into(), data })
}

/// Seconds of a header stamp.
pub fn stamp_s(header: &Header) -> f64 {
    header.stamp.as_secs_f64()
}

/// A header stamp from seconds.
pub fn time_from_s(t: f64) -> Time {
    Time::from_secs_f64(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nav_core::raster::Rgb;

    #[test]
    fn yaw_round_trips_through_quaternions() {
        for deg in [-179.0_f64, -90.0, -30.0, 0.0, 45.0, 135.0, 180.0] {
            let yaw = deg.to_radians();
            let got = yaw_from_quaternion(&Quaternion::from_yaw(yaw)).unwrap();
            assert!(nav_core::geometry::angle_diff_abs(got, yaw) < 1e-12, "{deg}: {got}");
        }
        // Non-normalized quaternions are normalized first.
        let q = Quaternion { x: 0.0, y: 0.0, z: 2.0 * (0.5f64).sin(), w: 2.0 * (0.5f64).cos() };
        assert!((yaw_from_quaternion(&q).unwrap() - 1.0).abs() < 1e-12);
        assert!(yaw_from_quaternion(&Quaternion { x: 0.0, y: 0.0, z: 0.0, w: 0.0 }).is_err());
        assert!(yaw_from_quaternion(&Quaternion { x: f64::NAN, ..Quaternion::default() }).is_err());
    }

    fn raw(encoding: &str, width: u32, height: u32, step: u32, data: Vec<u8>) -> Image {
        Image { encoding: encoding.into(), width, height, step, data, ..Image::default() }
    }

    #[test]
    fn rgb8_and_bgr8_decode_with_row_padding() {
        // 2x2, step 8 (2 padding bytes per row).
        let data = vec![10, 20, 30, 40, 50, 60, 0, 0, 70, 80, 90, 100, 110, 120, 0, 0];
        let rgb = rgb_from_image(&raw("rgb8", 2, 2, 8, data.clone())).unwrap();
        assert_eq!(rgb.get(0, 0), Some(Rgb([10, 20, 30])));
        assert_eq!(rgb.get(1, 1), Some(Rgb([100, 110, 120])));
        let bgr = rgb_from_image(&raw("bgr8", 2, 2, 8, data)).unwrap();
        assert_eq!(bgr.get(0, 0), Some(Rgb([30, 20, 10])));
        assert_eq!(bgr.get(1, 1), Some(Rgb([120, 110, 100])));
    }

    #[test]
    fn bad_images_are_protocol_errors_not_panics() {
        assert!(rgb_from_image(&raw("rgb8", 2, 2, 6, vec![0; 11])).is_err());
        assert!(rgb_from_image(&raw("rgb8", 2, 2, 5, vec![0; 12])).is_err());
        assert!(rgb_from_image(&raw("rgb8", 0, 2, 0, vec![])).is_err());
        assert!(rgb_from_image(&raw("yuv422", 2, 2, 4, vec![0; 8])).is_err());
        assert!(depth_from_image(&raw("16UC1", 2, 2, 4, vec![0; 7]), 0.0).is_err());
        assert!(depth_from_image(&raw("rgb8", 1, 1, 3, vec![0; 3]), 0.0).is_err());
        let junk = CompressedImage { format: "jpeg".into(), data: vec![1, 2, 3], ..Default::default() };
        assert!(matches!(rgb_from_compressed(&junk), Err(HalError::Protocol { .. })));
    }

    #[test]
    fn depth_16uc1_is_millimetres_with_zero_as_invalid() {
        let mut data = Vec::new();
        for mm in [1500u16, 0, 250, 65535] {
            data.extend_from_slice(&mm.to_le_bytes());
        }
        let d = depth_from_image(&raw("16UC1", 2, 2, 4, data), 3.0).unwrap();
        assert_eq!(d.at(0, 0), Some(1.5));
        assert!(d.at(1, 0).unwrap().is_nan());
        assert_eq!(d.at(0, 1), Some(0.25));
        assert_eq!(d.at(1, 1), Some(65.535));
        let mut be = raw("16UC1", 1, 1, 2, 1500u16.to_be_bytes().to_vec());
        be.is_bigendian = 1;
        assert_eq!(depth_from_image(&be, 0.0).unwrap().at(0, 0), Some(1.5));
        let f = depth_from_image(&raw("32FC1", 1, 1, 4, 2.25f32.to_le_bytes().to_vec()), 0.0).unwrap();
        assert_eq!(f.at(0, 0), Some(2.25));
    }

    #[test]
    fn depth_round_trips_through_16uc1() {
        let d = DepthFrame { width: 3, height: 1, depth_m: vec![0.5, f32::INFINITY, 2.0], stamp_s: 0.0 };
        let back = depth_from_image(&image_from_depth(&d, 1.0, "cam"), 1.0).unwrap();
        assert_eq!(back.at(0, 0), Some(0.5));
        assert!(back.at(1, 0).unwrap().is_nan(), "no measurement reads NaN");
        assert_eq!(back.at(2, 0), Some(2.0));
    }

    #[test]
    fn jpeg_and_png_decode() {
        let mut frame = RgbFrame::new(32, 16, Rgb([200, 40, 40]));
        frame.fill_rect(16, 0, 31, 15, Rgb([40, 40, 200]));
        let jpeg = compressed_from_rgb(&frame, 95, 0.0, "cam").unwrap();
        let back = rgb_from_compressed(&jpeg).unwrap();
        assert_eq!((back.width(), back.height()), (32, 16));
        let (l, r) = (back.get(4, 8).unwrap().0, back.get(28, 8).unwrap().0);
        assert!(l[0] > 170 && l[2] < 80, "left stays red: {l:?}");
        assert!(r[2] > 170 && r[0] < 80, "right stays blue: {r:?}");
        let mut png = Vec::new();
        image::RgbImage::from_raw(32, 16, frame.as_bytes().to_vec())
            .unwrap()
            .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .unwrap();
        let msg = CompressedImage { format: "png".into(), data: png, ..Default::default() };
        assert_eq!(rgb_from_compressed(&msg).unwrap(), frame);
    }

    #[test]
    fn depth_round_trips_through_compressed_depth() {
        let d = DepthFrame { width: 3, height: 2, depth_m: vec![0.5, f32::NAN, 2.0, 1.234, 0.0, 9.0], stamp_s: 0.0 };
        let msg = compressed_depth_from_depth(&d, 1.0, "cam").unwrap();
        let back = depth_from_compressed(&msg, 1.0).unwrap();
        assert_eq!(back.depth_m.len(), 6);
        assert_eq!(
            (back.at(0, 0), back.at(2, 0), back.at(0, 1), back.at(2, 1)),
            (Some(0.5), Some(2.0), Some(1.234), Some(9.0))
        );
        assert!(back.at(1, 0).unwrap().is_nan() && back.at(1, 1).unwrap().is_nan());
    }

    #[test]
    fn compressed_depth_png_decodes() {
        let mut png = Vec::new();
        let img = image::ImageBuffer::<image::Luma<u16>, _>::from_raw(2, 1, vec![1200u16, 0]).unwrap();
        image::DynamicImage::ImageLuma16(img)
            .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .unwrap();
        let mut framed = vec![0u8; COMPRESSED_DEPTH_HEADER];
        framed.extend_from_slice(&png);
        let msg = CompressedImage { format: "16UC1; compressedDepth png".into(), data: framed, ..Default::default() };
        let d = depth_from_compressed(&msg, 0.0).unwrap();
        assert_eq!(d.at(0, 0), Some(1.2));
        assert!(d.at(1, 0).unwrap().is_nan());
    }

    #[test]
    fn scans_convert_with_offset_and_reject_bad_headers() {
        let ours = lidar::LaserScan::full_circle(8, 0.05, 12.0, f32::INFINITY);
        let msg = scan_to_msg(&ours, 2.0, "laser");
        let back = scan_from_msg(&msg, std::f64::consts::PI).unwrap();
        assert!((back.angle_min - (ours.angle_min + std::f64::consts::PI)).abs() < 1e-6);
        assert_eq!(back.ranges, ours.ranges);
        let bad = LaserScan { angle_increment: 0.0, ..msg.clone() };
        assert!(scan_from_msg(&bad, 0.0).is_err());
        let bad = LaserScan { range_max: f32::NAN, ..msg };
        assert!(scan_from_msg(&bad, 0.0).is_err());
    }

    #[test]
    fn odometry_converts_pose_and_twist() {
        let m = odometry_to_msg(Pose2::new(1.0, -2.0, 0.5), 0.1, -0.2, 7.0);
        let o = odometry_from_msg(&m, 9.0).unwrap();
        assert!((o.pose.x - 1.0).abs() < 1e-12 && (o.pose.y + 2.0).abs() < 1e-12);
        assert!((o.pose.yaw - 0.5).abs() < 1e-12);
        assert_eq!((o.linear, o.angular, o.stamp_s, o.ground_truth), (0.1, -0.2, 9.0, false));
        assert_eq!(stamp_s(&m.header), 7.0);
    }

    mod props {
        use super::*;
        use nav_core::lidar::{LidarConfig, LidarSummary};
        use proptest::prelude::*;

        proptest! {
            /// Whatever rosbridge sends as ranges, a null is an invalid
            /// reading: never an obstacle, never free space, and nothing
            /// panics.
            #[test]
            fn null_ranges_never_become_obstacles(ranges in prop::collection::vec(prop::option::of(0.0f32..20.0), 1..400)) {
                let text = serde_json::json!({
                    "angle_min": -3.0, "angle_increment": 6.0 / ranges.len() as f64,
                    "range_min": 0.05, "range_max": 12.0, "ranges": ranges,
                });
                let msg: LaserScan = serde_json::from_value(text).unwrap();
                let scan = scan_from_msg(&msg, 0.0).unwrap();
                for (i, r) in ranges.iter().enumerate() {
                    if r.is_none() {
                        prop_assert!(scan.ranges[i].is_nan());
                        prop_assert!(scan.obstacle(scan.ranges[i]).is_none());
                        prop_assert!(scan.effective(scan.ranges[i]).is_none());
                    }
                }
                let summary = LidarSummary::from_scan(&scan, &LidarConfig::default());
                if let Some(n) = summary.nearest {
                    prop_assert!(n.distance_m >= 0.05);
                }
            }

            /// Raw images with any geometry decode or fail cleanly.
            #[test]
            fn raw_images_never_panic(w in 0u32..40, h in 0u32..40, step in 0u32..200, len in 0usize..5000,
                                      enc in prop::sample::select(vec!["rgb8", "bgr8", "rgba8", "mono8", "16UC1", "32FC1", "x"]),
                                      big in 0u8..2) {
                let img = Image { width: w, height: h, step, encoding: enc.into(), is_bigendian: big, data: vec![7; len], ..Image::default() };
                if let Ok(f) = rgb_from_image(&img) {
                    prop_assert_eq!((f.width(), f.height()), (w as usize, h as usize));
                }
                if let Ok(d) = depth_from_image(&img, 0.0) {
                    prop_assert_eq!(d.depth_m.len(), (w * h) as usize);
                }
            }

            /// Compressed payloads of random bytes fail cleanly.
            #[test]
            fn compressed_garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..300)) {
                let msg = CompressedImage { format: "jpeg".into(), data: data.clone(), ..CompressedImage::default() };
                let _ = rgb_from_compressed(&msg);
                let msg = CompressedImage { format: "16UC1; compressedDepth".into(), data, ..CompressedImage::default() };
                let _ = depth_from_compressed(&msg, 0.0);
            }

            /// Yaw from any non-degenerate quaternion is finite and in (-π, π].
            #[test]
            fn yaw_is_in_range(x in -2.0f64..2.0, y in -2.0f64..2.0, z in -2.0f64..2.0, w in -2.0f64..2.0) {
                match yaw_from_quaternion(&Quaternion { x, y, z, w }) {
                    Ok(yaw) => prop_assert!(yaw.is_finite() && yaw > -std::f64::consts::PI - 1e-12 && yaw <= std::f64::consts::PI + 1e-12),
                    Err(_) => prop_assert!((x * x + y * y + z * z + w * w).sqrt() <= 1e-9),
                }
            }
        }
    }
}
