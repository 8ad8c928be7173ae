//! [`RosbridgeConfig`]: where the robot is, which topics to use, and the
//! safety-relevant limits (staleness, speed caps, reconnect backoff).

use super::images::ImageTransport;
use super::steps::StepMotionConfig;
use crate::HalError;
use nav_core::drive::DriveKind;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Whether `navigate_to_goal` goals go to Nav2 (`[rosbridge] nav2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Nav2Mode {
    /// When rosapi's topic list (`topics.topics_service`) holds Nav2's
    /// status topic (`topics.nav2_status`), checked on every connection;
    /// otherwise navkit follows its own path.
    #[default]
    Auto,
    /// Always (no detection): a goal Nav2 does not accept fails.
    On,
    /// Never: navkit follows its own A* path with its 20 Hz control loop.
    Off,
}

/// Topic and service names. Defaults are the ROSMASTER A1's
/// plus navkit's own pause and speech topics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TopicsConfig {
    /// `sensor_msgs/LaserScan`.
    pub scan: String,
    /// `nav_msgs/Odometry`.
    pub odom: String,
    /// The colour camera, `sensor_msgs/Image` (`rgb8`/`bgr8`); with
    /// [`RosbridgeConfig::rgb_transport`] `compressed` (or `auto` when
    /// rosapi lists it) the HAL subscribes to `<rgb>/compressed`
    /// (`sensor_msgs/CompressedImage`) instead.
    pub rgb: String,
    /// The depth camera, `sensor_msgs/Image` `16UC1` millimetres (or
    /// `32FC1` metres).
    pub depth: String,
    /// `geometry_msgs/Twist` velocity commands.
    pub cmd_vel: String,
    /// `std_msgs/Bool`: `true` pauses autonomous navigation (a voice
    /// override), `false` resumes.
    pub pause: String,
    /// `std_msgs/String` published by [`say`](super::RosbridgeHal::say)
    /// (the robot's TTS node listens; default `/speech_output`).
    pub speech: String,
    /// `std_msgs/String` voice commands from the operator (`explore`,
    /// `stop`, `pause`, `resume`, `go home`, or free text for the
    /// planner), read with
    /// [`take_voice_commands`](super::RosbridgeHal::take_voice_commands);
    /// default `/navkit/voice_command`.
    pub voice_command: String,
    /// `std_msgs/String` announcements published by
    /// [`announce`](super::RosbridgeHal::announce): discoveries, watchdog
    /// tiers, safety stops, pause and resume, the end of a run; default
    /// `/navkit/say`.
    pub say: String,
    /// `geometry_msgs/PoseStamped` Nav2 goal topic (bt_navigator subscribes
    /// to `/goal_pose` and starts a NavigateToPose goal itself).
    pub goal: String,
    /// Nav2's cancel service (`action_msgs/CancelGoal`), called by
    /// [`emergency_stop`](super::RosbridgeHal::emergency_stop) after a goal
    /// was sent and whenever a goal handed to Nav2 must end.
    pub nav2_cancel_service: String,
    /// Nav2's NavigateToPose status topic (`action_msgs/GoalStatusArray`):
    /// how a goal sent on [`goal`](Self::goal) is followed (accepted,
    /// succeeded, aborted, cancelled).
    pub nav2_status: String,
    /// rosapi's topic list (`rosapi/Topics`): `nav2 = "auto"` uses Nav2
    /// when [`nav2_status`](Self::nav2_status) is in it.
    pub topics_service: String,
    /// Service called as the link probe (any reply, even "no such
    /// service", proves the link is alive); empty disables the probe.
    /// rosbridge's launch file starts rosapi, which offers
    /// `/rosapi/get_time`.
    pub probe_service: String,
}

impl Default for TopicsConfig {
    fn default() -> Self {
        Self {
            scan: "/scan".into(),
            odom: "/odom".into(),
            rgb: "/oak/rgb/image_raw".into(),
            depth: "/oak/stereo/image_raw".into(),
            cmd_vel: "/cmd_vel".into(),
            pause: "/navkit/pause".into(),
            speech: "/speech_output".into(),
            voice_command: "/navkit/voice_command".into(),
            say: "/navkit/say".into(),
            goal: "/goal_pose".into(),
            nav2_cancel_service: "/navigate_to_pose/_action/cancel_goal".into(),
            nav2_status: "/navigate_to_pose/_action/status".into(),
            topics_service: "/rosapi/topics".into(),
            probe_service: "/rosapi/get_time".into(),
        }
    }
}

impl TopicsConfig {
    /// The colour topic actually subscribed to.
    pub fn rgb_topic(&self, compressed: bool) -> String {
        if compressed { format!("{}/compressed", self.rgb.trim_end_matches('/')) } else { self.rgb.clone() }
    }

    /// The depth topic actually subscribed to.
    pub fn depth_topic(&self, compressed: bool) -> String {
        if compressed { format!("{}/compressedDepth", self.depth.trim_end_matches('/')) } else { self.depth.clone() }
    }
}

/// Configuration of [`RosbridgeHal`](super::RosbridgeHal).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RosbridgeConfig {
    /// rosbridge_server's WebSocket URL, `ws://HOST:9090`.
    pub url: String,
    /// Subscribe and plan but never publish to `cmd_vel` (nor send Nav2
    /// goals): every would-be Twist is logged at info level and kept for
    /// [`last_command`](super::RosbridgeHal::last_command).
    pub dry_run: bool,
    /// Topic names.
    pub topics: TopicsConfig,
    /// How colour images travel: `auto` (`<rgb>/compressed` JPEG when
    /// rosapi lists it, else the raw topic as CBOR), `compressed`, `cbor`,
    /// `png` (rosbridge's PNG-compressed JSON) or `raw` (JSON, base64: the
    /// largest). Figures per frame in docs/BENCHMARKS.md.
    pub rgb_transport: ImageTransport,
    /// Subscribe to the colour camera.
    pub rgb_enabled: bool,
    /// Subscribe to the depth camera.
    pub depth_enabled: bool,
    /// How depth images travel: `auto` (`<depth>/compressedDepth`,
    /// image_transport's lossless 16-bit PNG, when rosapi lists it, else
    /// the raw topic as CBOR), `compressed`, `cbor`, `png` or `raw`.
    pub depth_transport: ImageTransport,
    /// At most this many images per second per camera: rosbridge's
    /// `throttle_rate` (with `queue_length` 1, so a slow link gets the
    /// newest image, never a backlog). Decisions read a camera a few times
    /// a second at most; a 30 fps camera over WiFi only costs bandwidth.
    /// Needs rosbridge's WebSocket ([`Connect::websocket_url`](super::Connect::websocket_url)).
    pub image_rate_hz: f64,
    /// Horizontal field of view of the colour camera, degrees (OAK-D Pro
    /// colour: 69°).
    pub rgb_hfov_deg: f64,
    /// Yaw of the LiDAR relative to the robot's front, degrees CCW (many
    /// robots mount the scanner rotated by 180°).
    pub scan_yaw_offset_deg: f64,
    /// Steering model reported in the capabilities (ROSMASTER A1: Ackermann,
    /// 0.3 m minimum turning radius).
    pub drive: DriveKind,
    /// Hard cap on |linear| of every published Twist, m/s (commands above
    /// are clamped and logged).
    pub max_linear_mps: f64,
    /// Hard cap on |angular| of every published Twist, rad/s.
    pub max_angular_rps: f64,
    /// A scan older than this (receive time) is stale, s: ≈ 5 missed scans
    /// at 10 Hz, like the source timeout of Nav2's collision monitor (5 s
    /// would drive 0.9 m blind at 0.18 m/s).
    pub scan_stale_s: f64,
    /// A scan with fewer valid beams than this fraction (REP-117: NaN is
    /// invalid, and rosbridge sends every non-finite range as `null`) is a
    /// sensor fault: [`scan`](crate::hal::Sensors::scan) answers
    /// [`HalError::SensorFault`]. `nav rosmaster` also asks the safety
    /// layer for this fraction of valid beams in the direction of motion.
    pub scan_min_valid_fraction: f64,
    /// Odometry older than this is stale, s.
    pub odom_stale_s: f64,
    /// Camera images older than this are stale, s.
    pub camera_stale_s: f64,
    /// First reconnect delay, s; doubles after every failed attempt.
    pub reconnect_initial_s: f64,
    /// Longest reconnect delay, s.
    pub reconnect_max_s: f64,
    /// Give up one connection attempt after this long, s.
    pub connect_timeout_s: f64,
    /// Period of the link probe, s.
    pub probe_interval_s: f64,
    /// A probe without reply for this long marks the link lost, s (catches
    /// half-open connections after a WiFi drop; `probe_interval_s +
    /// probe_timeout_s` bounds the time to notice a frozen link).
    pub probe_timeout_s: f64,
    /// With nothing received from the robot (any topic, any probe reply)
    /// for this long the link is *unhealthy*: no velocity command is
    /// published (a frozen socket would queue them, and the server would
    /// replay them when the link thaws) until something arrives again, and
    /// if the robot was moving one zero Twist goes out at once, so a replay
    /// ends at rest, s. Keep it above a few odometry periods (0.1 s = five
    /// at 50 Hz).
    pub link_quiet_s: f64,
    /// A publish that takes longer marks the link lost, s.
    pub publish_timeout_s: f64,
    /// Zero Twists per stop (5).
    pub stop_repeats: u32,
    /// Spacing of the stop Twists, s (20 ms, 50 Hz).
    pub stop_interval_s: f64,
    /// Frame of Nav2 goals sent with [`send_goal`](super::RosbridgeHal::send_goal)
    /// (goals of [`start_goal`](crate::hal::Actuators::start_goal) are in
    /// the odometry frame and carry the odometry's `frame_id`).
    pub goal_frame: String,
    /// Whether `navigate_to_goal` hands its goals to Nav2
    /// ([`Nav2Mode`]): `auto` (the default) when rosapi lists Nav2's
    /// status topic, `on` always, `off` never (navkit drives the path).
    pub nav2: Nav2Mode,
    /// A goal handed to Nav2 that does not show up as accepted on the
    /// status topic within this long fails (`not_accepted`), s.
    pub nav2_accept_timeout_s: f64,
    /// `nav rosmaster` speaks every `report_discovery` on the speech topic
    /// (`topics.speech`); never in a dry run.
    pub speak_discoveries: bool,
    /// Discrete actions (`forward`, turns) as closed-loop motions on
    /// odometry: step sizes, speeds, tolerances, timeout.
    /// Range: see `StepMotionConfig`.
    pub steps: StepMotionConfig,
}

impl Default for RosbridgeConfig {
    fn default() -> Self {
        Self {
            url: "ws://localhost:9090".into(),
            dry_run: false,
            topics: TopicsConfig::default(),
            rgb_transport: ImageTransport::Auto,
            rgb_enabled: true,
            depth_enabled: true,
            depth_transport: ImageTransport::Auto,
            image_rate_hz: 2.0,
            rgb_hfov_deg: 69.0,
            scan_yaw_offset_deg: 0.0,
            drive: DriveKind::Ackermann { min_turn_radius_m: 0.3 },
            max_linear_mps: 0.3,
            max_angular_rps: 1.5,
            scan_stale_s: 0.5,
            scan_min_valid_fraction: 0.5,
            odom_stale_s: 0.5,
            camera_stale_s: 5.0,
            reconnect_initial_s: 0.5,
            reconnect_max_s: 10.0,
            connect_timeout_s: 3.0,
            probe_interval_s: 0.25,
            probe_timeout_s: 0.6,
            link_quiet_s: 0.1,
            publish_timeout_s: 0.5,
            stop_repeats: 5,
            stop_interval_s: 0.02,
            goal_frame: "map".into(),
            nav2: Nav2Mode::Auto,
            nav2_accept_timeout_s: 3.0,
            speak_discoveries: true,
            steps: StepMotionConfig::default(),
        }
    }
}

impl RosbridgeConfig {
    /// The default configuration for a robot at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        Self { url: url.into(), ..Self::default() }
    }

    /// Checks every value; errors name the field.
    pub fn validate(&self) -> Result<(), HalError> {
        let bad = |field: &str, message: String| Err(HalError::InvalidConfig { field: field.into(), message });
        let url = self.url.trim();
        if url.starts_with("wss://") {
            return bad("url", "wss:// is not supported (roslibrust's rosbridge backend is built without TLS); use ws:// on a trusted LAN or an SSH tunnel".into());
        }
        match url.strip_prefix("ws://") {
            Some(rest) if !rest.is_empty() && !rest.starts_with('/') && !rest.contains(char::is_whitespace) => {}
            _ => return bad("url", format!("must look like ws://HOST:9090, got {:?}", self.url)),
        }
        let t = &self.topics;
        let topics = [
            ("topics.scan", &t.scan),
            ("topics.odom", &t.odom),
            ("topics.rgb", &t.rgb),
            ("topics.depth", &t.depth),
            ("topics.cmd_vel", &t.cmd_vel),
            ("topics.pause", &t.pause),
            ("topics.speech", &t.speech),
            ("topics.voice_command", &t.voice_command),
            ("topics.say", &t.say),
            ("topics.goal", &t.goal),
        ];
        for (field, name) in topics {
            // roslibrust's rule for topics: every segment starts with a letter.
            if let Err(e) = roslibrust::GlobalTopicName::new(name.as_str()) {
                return bad(field, e.to_string());
            }
        }
        let mut services = vec![
            ("topics.nav2_cancel_service", &t.nav2_cancel_service),
            ("topics.nav2_status", &t.nav2_status),
            ("topics.topics_service", &t.topics_service),
        ];
        if !t.probe_service.is_empty() {
            services.push(("topics.probe_service", &t.probe_service));
        }
        for (field, name) in services {
            if let Err(message) = check_name(name) {
                return bad(field, message);
            }
        }
        let positive = [
            ("rgb_hfov_deg", self.rgb_hfov_deg),
            ("max_linear_mps", self.max_linear_mps),
            ("max_angular_rps", self.max_angular_rps),
            ("scan_stale_s", self.scan_stale_s),
            ("odom_stale_s", self.odom_stale_s),
            ("camera_stale_s", self.camera_stale_s),
            ("reconnect_initial_s", self.reconnect_initial_s),
            ("reconnect_max_s", self.reconnect_max_s),
            ("connect_timeout_s", self.connect_timeout_s),
            ("probe_interval_s", self.probe_interval_s),
            ("probe_timeout_s", self.probe_timeout_s),
            ("link_quiet_s", self.link_quiet_s),
            ("publish_timeout_s", self.publish_timeout_s),
            ("nav2_accept_timeout_s", self.nav2_accept_timeout_s),
        ];
        for (field, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return bad(field, format!("must be positive, got {v}"));
            }
        }
        if !(self.scan_min_valid_fraction.is_finite() && (0.0..=1.0).contains(&self.scan_min_valid_fraction)) {
            return bad(
                "scan_min_valid_fraction",
                format!("must be within 0..=1, got {}", self.scan_min_valid_fraction),
            );
        }
        if !(self.image_rate_hz.is_finite() && self.image_rate_hz > 0.0 && self.image_rate_hz <= 100.0) {
            return bad("image_rate_hz", format!("must be within (0, 100] Hz, got {}", self.image_rate_hz));
        }
        if self.rgb_hfov_deg >= 179.0 {
            return bad("rgb_hfov_deg", "must be below 179".into());
        }
        if !self.scan_yaw_offset_deg.is_finite() {
            return bad("scan_yaw_offset_deg", "must be finite".into());
        }
        if self.reconnect_max_s < self.reconnect_initial_s {
            return bad("reconnect_max_s", "must not be below reconnect_initial_s".into());
        }
        if !(1..=50).contains(&self.stop_repeats) {
            return bad("stop_repeats", format!("must be within 1..=50, got {}", self.stop_repeats));
        }
        if !(self.stop_interval_s.is_finite() && (0.0..=1.0).contains(&self.stop_interval_s)) {
            return bad("stop_interval_s", format!("must be within 0..=1 s, got {}", self.stop_interval_s));
        }
        if let DriveKind::Ackermann { min_turn_radius_m } = self.drive {
            if !(min_turn_radius_m.is_finite() && min_turn_radius_m > 0.0) {
                return bad("drive.min_turn_radius_m", format!("must be positive, got {min_turn_radius_m}"));
            }
        }
        if self.goal_frame.trim().is_empty() {
            return bad("goal_frame", "must not be empty".into());
        }
        self.steps.validate()
    }

    pub(crate) fn secs(v: f64) -> Duration {
        Duration::from_secs_f64(if v.is_finite() { v.clamp(0.0, 1e6) } else { 0.0 })
    }
}

/// A service name as rosbridge accepts it: absolute, letters, digits, `_`
/// (ROS 2's hidden `_action` segments included).
fn check_name(name: &str) -> Result<(), String> {
    if !name.starts_with('/') {
        return Err(format!("must be an absolute ROS name starting with '/', got {name:?}"));
    }
    if name.len() < 2 || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '/') || name.contains("//")
    {
        return Err(format!("is not a valid ROS name (letters, digits, '_' and single '/'), got {name:?}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_match_seed_003() {
        let c = RosbridgeConfig::default();
        c.validate().unwrap();
        assert_eq!(c.topics.scan, "/scan");
        assert_eq!(c.topics.rgb_topic(true), "/oak/rgb/image_raw/compressed");
        assert_eq!(c.topics.rgb_topic(false), "/oak/rgb/image_raw");
        assert_eq!((c.stop_repeats, c.stop_interval_s, c.scan_stale_s, c.odom_stale_s), (5, 0.02, 0.5, 0.5));
        assert!(c.probe_interval_s + c.probe_timeout_s <= 1.0, "a frozen link is noticed within 1 s");
    }

    #[test]
    fn bad_values_name_their_field() {
        let field = |c: RosbridgeConfig| match c.validate() {
            Err(HalError::InvalidConfig { field, .. }) => field,
            other => panic!("expected InvalidConfig, got {other:?}"),
        };
        assert_eq!(field(RosbridgeConfig::new("http://robot:9090")), "url");
        assert_eq!(field(RosbridgeConfig::new("wss://robot:9090")), "url");
        let mut c = RosbridgeConfig::new("ws://robot:9090");
        c.topics.cmd_vel = "cmd_vel".into();
        assert_eq!(field(c), "topics.cmd_vel");
        let mut c = RosbridgeConfig::default();
        c.topics.voice_command = String::new();
        assert_eq!(field(c), "topics.voice_command");
        let mut c = RosbridgeConfig::default();
        c.topics.say = "/navkit//say".into();
        assert_eq!(field(c), "topics.say");
        let c = RosbridgeConfig { scan_stale_s: 0.0, ..RosbridgeConfig::default() };
        assert_eq!(field(c), "scan_stale_s");
        let c = RosbridgeConfig { stop_repeats: 0, ..RosbridgeConfig::default() };
        assert_eq!(field(c), "stop_repeats");
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let err = serde_json::from_str::<RosbridgeConfig>(r#"{"url":"ws://a:9090","topic":{}}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
        let c: RosbridgeConfig =
            serde_json::from_str(r#"{"url":"ws://a:9090","topics":{"scan":"/base_scan"}}"#).unwrap();
        assert_eq!((c.topics.scan.as_str(), c.topics.odom.as_str()), ("/base_scan", "/odom"));
    }
}
