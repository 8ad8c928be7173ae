//! A ROS 1/2 robot through rosbridge v2 (feature `rosbridge`):
//! [`RosbridgeHal`] implements the HAL traits over rosbridge_server's
//! WebSocket, built on roslibrust's rosbridge backend. The robot-side setup
//! is in `docs/ROSMASTER.md`.
//!
//! # Topics
//!
//! Defaults follow the ROSMASTER A1 and are set in
//! [`TopicsConfig`]:
//!
//! | topic | type | direction |
//! | --- | --- | --- |
//! | `/scan` | `sensor_msgs/LaserScan` | in |
//! | `/odom` | `nav_msgs/Odometry` | in |
//! | `/oak/rgb/image_raw[/compressed]` | `sensor_msgs/Image` (`rgb8`, `bgr8`) or `CompressedImage` (JPEG/PNG) | in ([`images`]) |
//! | `/oak/stereo/image_raw[/compressedDepth]` | `sensor_msgs/Image` `16UC1` mm (or `32FC1`) or `compressedDepth` | in ([`images`]) |
//! | `/navkit/pause` | `std_msgs/Bool` | in ([`RosbridgeHal::paused`]) |
//! | `/navkit/voice_command` | `std_msgs/String` | in ([`RosbridgeHal::take_voice_commands`]) |
//! | `/navkit/say` | `std_msgs/String` | out ([`RosbridgeHal::announce`]) |
//! | `/cmd_vel` | `geometry_msgs/Twist` | out |
//! | `/speech_output` | `std_msgs/String` | out ([`RosbridgeHal::say`]) |
//! | `/goal_pose` | `geometry_msgs/PoseStamped` | out ([`RosbridgeHal::send_goal`], `start_goal`) |
//! | `/navigate_to_pose/_action/status` | `action_msgs/GoalStatusArray` | in (Nav2 goals) |
//!
//! **Nav2 goals go to the `/goal_pose` topic, not the NavigateToPose
//! action**: Nav2's bt_navigator subscribes to `/goal_pose` and starts the
//! action itself, so no action client is needed over rosbridge (whose
//! action support differs between ROS distributions and which roslibrust
//! does not offer). [`Actuators::start_goal`](crate::hal::Actuators::start_goal)
//! hands a goal over when `[rosbridge] nav2` allows it ([`Nav2Mode`]:
//! `auto` finds Nav2 in rosapi's topic list) and follows it on the
//! action's status topic (`/navigate_to_pose/_action/status`); goals are
//! cancelled through the action's `_action/cancel_goal` service, a plain
//! service call.
//!
//! The cameras travel on a WebSocket of their own, throttled to
//! `image_rate_hz` and as `CompressedImage` or CBOR by default: see
//! [`images`] and [`ImageTransport`].
//!
//! # Time and staleness
//!
//! The robot's clock is not synchronised with ours, so every `stamp_s` the
//! HAL returns is the **arrival time** on [`RosbridgeHal::clock`] (a
//! [`MonotonicClock`](crate::clock::MonotonicClock)); header stamps (`sec`
//! and `nanosec`) are kept in [`LinkStatus::topics`] for diagnosis. A
//! sensor whose newest message is older than its limit (`scan_stale_s`
//! and `odom_stale_s` = 0.5 s) answers
//! [`HalError::Stale`](crate::HalError::Stale).
//!
//! # `null` ranges
//!
//! JSON has no infinity or NaN, so rosbridge sends every non-finite range
//! as `null`: `+inf` (no return), `-inf` (too close) and NaN (invalid,
//! REP-117) cannot be told apart. A `null` is read as NaN, *invalid*: never
//! a phantom obstacle, never free space. A scan with fewer than
//! `scan_min_valid_fraction` valid beams is a sensor fault
//! ([`HalError::SensorFault`](crate::HalError::SensorFault)).
//!
//! # Velocity commands and stopping
//!
//! - [`drive`](crate::hal::Actuators::drive) publishes exactly **one**
//!   Twist per call and returns: the caller's 20 Hz control loop
//!   is the only `cmd_vel` publisher. The HAL publishes Twists nowhere else
//!   except stops.
//! - [`stop`](crate::hal::Actuators::stop) publishes 5 zero Twists 20 ms
//!   apart. [`RosbridgeHal::emergency_stop`] (also through a
//!   [`StopHandle`] for signal handlers) latches, cancels Nav2 goals and
//!   stops.
//! - While nothing has arrived for `link_quiet_s` the link is unhealthy:
//!   `drive` publishes nothing and answers `Disconnected` (a frozen socket
//!   would queue the Twists and rosbridge replay them on the thaw). If the
//!   robot was moving, one zero Twist goes out the moment the link goes
//!   quiet, so a replay on the thaw ends at rest right away.
//! - On connection loss the HAL tries the stop burst (it reaches the robot
//!   only if the link is half-open) and publishes it again as soon as a new
//!   session is up, before any other command. Dropping the last handle also
//!   stops the robot.
//! - `dry_run` subscribes and plans but never advertises or publishes
//!   `cmd_vel` or goals; every would-be Twist is logged at info level and
//!   kept in [`RosbridgeHal::last_command`].
//!
//! # Discrete actions
//!
//! [`act`](crate::hal::Actuators::act) runs `forward` and the turns as
//! closed-loop motions on odometry (`[rosbridge.steps]`,
//! [`StepMotionConfig`]): in place on a differential base, as a
//! forward-then-reverse arc pair on an Ackermann base. Every Twist passes a
//! [`MotionGuard`](crate::hal::MotionGuard) installed with
//! [`RosbridgeHal::set_motion_guard`]; without one, and in a dry run, the
//! discrete actions (and the panorama, 12 turns on the spot) are refused.
//!
//! # Connection loss
//!
//! A connection task connects with exponential backoff
//! (`reconnect_initial_s` doubling to `reconnect_max_s`), subscribes and
//! advertises, and probes the link every `probe_interval_s` (0.25 s) with a service call (any
//! reply proves it; silence for `probe_timeout_s` catches a half-open WiFi
//! link). A failed probe or publish tears the session down and starts
//! over. While disconnected every call answers
//! [`HalError::Disconnected`](crate::HalError::Disconnected) at once, so the
//! caller treats the robot as stopped and its watchdog tiers run; samples
//! from before the loss are never served after it.
//!
//! # Other roslibrust backends
//!
//! Only [`RosbridgeConnector`] names the rosbridge backend; the connection
//! task is generic over roslibrust's `TopicProvider` + `ServiceProvider`
//! traits through [`Connect`]. To use roslibrust's `zenoh` backend, enable
//! that roslibrust feature, implement [`Connect`] for a connector that
//! returns its client, and start the HAL with
//! [`RosbridgeHal::start_with`]; the cameras then come through the
//! backend's subscriptions, unthrottled (only rosbridge's WebSocket,
//! [`Connect::websocket_url`], takes `throttle_rate` and compression). The [`msg`] types serialize plain floats
//! and bytes in binary formats (their rosbridge quirks apply to JSON only);
//! a native ROS 2 backend also needs the real RIHS type hashes, which are
//! left zero here (rosbridge does not use them).
//!
//! # Trying it without a robot
//!
//! Feature `rosbridge-sim` adds [`sim_robot::RosbridgePeer`], navkit's
//! simulated robot: a rosbridge v2 server backed by the built-in
//! simulator, on a free port of `127.0.0.1` or on an address of your
//! choice (`nav sim-robot` serves it on `127.0.0.1:9090`). The tests use
//! it too, through feature `rosbridge-testing` and the `testing` path.

mod config;
pub mod convert;
mod hal;
pub mod images;
mod link;
pub mod msg;
mod nav2;
mod runtime;
#[cfg(feature = "rosbridge-sim")]
pub mod sim_robot;
mod state;
mod steps;
/// [`sim_robot`] under the name the tests were written against (feature
/// `rosbridge-testing`, which enables `rosbridge-sim`).
#[cfg(feature = "rosbridge-testing")]
pub mod testing {
    pub use super::sim_robot::*;
}
pub mod wire;

pub use config::{Nav2Mode, RosbridgeConfig, TopicsConfig};
pub use hal::{RosbridgeHal, SpeechHandle, StopHandle};
pub use images::ImageTransport;
pub use link::{Connect, RosbridgeConnector};
pub use state::{LastCommand, LinkStatus, TopicStatus};
pub use steps::StepMotionConfig;
