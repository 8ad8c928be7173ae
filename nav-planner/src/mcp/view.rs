//! What the read-only tools show: the robot's state as text and JSON, the
//! explored map as a PNG, the camera frame annotated as the explore loop
//! annotates it for its model.

use super::core::RobotCore;
use crate::navigator::explore_loop::active::Active;
use crate::protocol::annotate::{encode_png, render_world_model};
use crate::protocol::explore::annotated_frame_jpeg;
use base64::Engine as _;
use nav_core::geometry::{cardinal, compass_deg};
use nav_core::lidar::{LidarConfig, LidarSummary};
use nav_core::raster::Rgb;
use serde_json::{Value, json};

/// Side of the map image, pixels.
const MAP_PX: usize = 512;

/// An image for a tool result: base64 data and its MIME type.
#[derive(Debug, Clone, PartialEq)]
pub struct ImagePart {
    /// Base64 of the encoded image.
    pub base64: String,
    /// `image/png` or `image/jpeg`.
    pub mime: &'static str,
}

impl RobotCore {
    /// The state as JSON: time, pose, speed, the action in progress, the
    /// watchdog tier, the stops in force, overrides, collisions.
    pub(crate) fn state_json(&self) -> Value {
        let now = self.now();
        let heading = compass_deg(self.pose.yaw.to_degrees());
        let stops: Vec<Value> = self
            .safety
            .arbiter()
            .all_active()
            .map(|s| json!({"source": format!("{:?}", s.source), "reason": s.reason}))
            .collect();
        let guard = self.last_guarded.as_ref().map(|g| {
            json!({"linear_mps": r2(g.linear), "angular_rps": r2(g.angular),
                   "overrides": g.overrides.iter().map(|o| o.reason.clone()).collect::<Vec<_>>()})
        });
        json!({
            "t_s": r2(now - self.t0),
            "pose": {"x": r2(self.pose.x), "y": r2(self.pose.y), "heading_deg": heading.round(),
                      "cardinal": cardinal(self.pose.yaw.to_degrees())},
            "speed_mps": r2(self.speed_mps),
            "angular_rps": r2(self.angular_rps),
            "distance_travelled_m": r2(self.distance_m),
            "in_progress": self.in_progress(),
            "watchdog_tier": self.tier.as_str(),
            "since_last_motion_call_s": self.last_motion_call_s.map(|t| r2(now - t)),
            "watchdog_stop_after_s": self.safety.config().watchdog.continue_s,
            "stops": stops,
            "last_command": guard,
            "overrides": self.safety.overrides(),
            "collisions": self.collisions,
            "sensing": self.sensing_failure.clone(),
        })
    }

    /// The action in progress, as its call summary, or `None` when idle.
    fn in_progress(&self) -> Option<String> {
        if matches!(self.active, Active::Idle) {
            return None;
        }
        self.outcome.as_ref().map(|o| o.call.summary())
    }

    /// The state as text: pose, speed, safety state, watchdog tier and the
    /// LiDAR's twelve sectors.
    pub(crate) fn state_text(&self) -> String {
        let s = self.state_json();
        let heading = compass_deg(self.pose.yaw.to_degrees());
        let mut t = format!(
            "t={:.1}s pose x={:.2}m y={:.2}m heading {:.0}° ({})\nspeed {:.2} m/s, turning {:.2} rad/s, travelled {:.1} m\n",
            self.now() - self.t0,
            self.pose.x,
            self.pose.y,
            heading,
            cardinal(self.pose.yaw.to_degrees()),
            self.speed_mps,
            self.angular_rps,
            self.distance_m
        );
        match self.in_progress() {
            Some(a) => t.push_str(&format!("in progress: {a}\n")),
            None => t.push_str("in progress: nothing (holding still)\n"),
        }
        let since = self
            .last_motion_call_s
            .map_or("no motion call yet".to_owned(), |c| format!("{:.1} s since the last motion call", self.now() - c));
        t.push_str(&format!(
            "safety: watchdog {} ({since}; the robot stops {:.0} s after a motion call unless another comes), \
             overrides {}, collisions {}\n",
            self.tier.as_str(),
            self.safety.config().watchdog.continue_s,
            self.safety.overrides(),
            self.collisions
        ));
        for stop in s["stops"].as_array().into_iter().flatten() {
            t.push_str(&format!("stop in force: {}\n", stop["reason"].as_str().unwrap_or("")));
        }
        if let Some(g) = &self.last_guarded {
            for o in &g.overrides {
                t.push_str(&format!("guard: {}\n", o.reason));
            }
        }
        if let Some(why) = &self.sensing_failure {
            t.push_str(&format!("sensing failed: {why}\n"));
        }
        if let Some(p) = &self.previous {
            t.push_str(&format!("previous action: {p}\n"));
        }
        match &self.scan {
            Some(scan) => t.push_str(&LidarSummary::from_scan(&scan.scan, &LidarConfig::default()).to_text()),
            None => t.push_str("LIDAR: no scan"),
        }
        t
    }

    /// The explored map (LiDAR occupancy around the start) with the
    /// travelled path in blue and the robot in green, as PNG.
    pub(crate) fn map_png(&self) -> Result<ImagePart, String> {
        let grid = self.map.grid();
        let mut f = render_world_model(grid, self.pose, self.nav_goal(), &[], MAP_PX);
        let (gw, gh) = (grid.width().max(1) as f64, grid.height().max(1) as f64);
        let scale = (MAP_PX.clamp(64, 2048) as f64 / gw.max(gh)).max(1.0);
        let to_px = |p: nav_core::geometry::Point2| {
            let fx = (p.x - grid.origin().x) / grid.resolution();
            let fy = (p.y - grid.origin().y) / grid.resolution();
            (fx * scale, (gh - fy) * scale)
        };
        for w in self.path.windows(2) {
            let (a, b) = (to_px(w[0]), to_px(w[1]));
            f.line(a.0, a.1, b.0, b.1, 2.0, Rgb([40, 90, 230]));
        }
        let (x, y) = to_px(self.pose.position());
        f.disc(x, y, 1.8 * scale.max(3.0), Rgb([30, 170, 60]));
        let png = encode_png(&f).map_err(|e| e.to_string())?;
        Ok(ImagePart { base64: base64::engine::general_purpose::STANDARD.encode(png), mime: "image/png" })
    }

    /// The navigation goal in progress, if any.
    fn nav_goal(&self) -> Option<nav_core::geometry::Point2> {
        match &self.active {
            Active::Goal(g) => Some(g.goal()),
            _ => None,
        }
    }

    /// The camera frame (at most 640×480) with the seven depth values and
    /// the heading arrow drawn as the explore loop draws them, as JPEG.
    pub(crate) async fn camera_jpeg(&mut self) -> Result<ImagePart, String> {
        let frame = self.robot.rgb().await.map_err(|e| format!("the camera failed: {e}"))?;
        let depth = self.robot.depth().await.ok();
        let jpeg = annotated_frame_jpeg(&frame.frame, depth.as_ref(), self.pose.yaw.to_degrees(), frame.hfov_rad)
            .map_err(|e| e.to_string())?;
        Ok(ImagePart { base64: base64::engine::general_purpose::STANDARD.encode(jpeg), mime: "image/jpeg" })
    }
}

/// Rounded to centimetres (or hundredths).
fn r2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
