//! The ROS messages and services the rosbridge HAL exchanges, written by
//! hand as serde structs implementing roslibrust's
//! [`RosMessageType`] (no ROS installation or
//! `.msg` files are needed to build navkit).
//!
//! Field names follow ROS 2 (`stamp.sec` / `stamp.nanosec`); ROS 1 names
//! (`secs` / `nsecs`, the header's `seq`) are accepted too. rosbridge's
//! JSON quirks (non-finite floats as `null`, `uint8[]` as base64) are
//! handled by the [`wire`] helpers. Type names are the
//! `package/Type` form rosbridge accepts on ROS 1 and ROS 2; the ROS 2 DDS
//! names are filled in for a future native backend, whose type hashes are
//! left zero (see the module docs of [`rosbridge`](super)).

use super::wire;
use roslibrust::{MessageDescriptor, RosMessageType, RosServiceType};
use serde::{Deserialize, Serialize};

macro_rules! ros_message {
    ($ty:ty, $name:literal, $dds:literal) => {
        impl RosMessageType for $ty {
            const DESCRIPTION: MessageDescriptor = MessageDescriptor::new::<Self>($name, "", "", $dds, &[0; 32]);
        }
    };
}

/// `builtin_interfaces` (ROS 2) / the ROS 1 `time` primitive.
pub mod builtin_interfaces {
    use super::*;

    /// A time stamp: seconds and nanoseconds since the robot's epoch.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
    #[serde(default)]
    pub struct Time {
        /// Whole seconds (ROS 1: `secs`).
        #[serde(alias = "secs")]
        pub sec: i32,
        /// Nanoseconds within the second (ROS 1: `nsecs`).
        #[serde(alias = "nsecs")]
        pub nanosec: u32,
    }

    impl Time {
        /// The stamp in seconds.
        pub fn as_secs_f64(self) -> f64 {
            f64::from(self.sec) + f64::from(self.nanosec) * 1e-9
        }

        /// A stamp from seconds (clamped to the `i32` range; NaN gives 0).
        pub fn from_secs_f64(t: f64) -> Self {
            let t = if t.is_finite() { t.clamp(f64::from(i32::MIN), f64::from(i32::MAX)) } else { 0.0 };
            let sec = t.floor();
            let nanosec = ((t - sec) * 1e9).round().min(999_999_999.0) as u32;
            Self { sec: sec as i32, nanosec }
        }
    }

    ros_message!(Time, "builtin_interfaces/Time", "builtin_interfaces::msg::dds_::Time_");
}

/// `std_msgs`.
pub mod std_msgs {
    use super::builtin_interfaces::Time;
    use super::*;

    /// A message header: stamp and coordinate frame.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(default)]
    pub struct Header {
        /// Acquisition time on the robot's clock.
        pub stamp: Time,
        /// Coordinate frame of the data.
        pub frame_id: std::string::String,
    }

    impl Header {
        /// A header with a stamp in seconds and a frame.
        pub fn new(stamp_s: f64, frame_id: &str) -> Self {
            Self { stamp: Time::from_secs_f64(stamp_s), frame_id: frame_id.to_string() }
        }
    }

    /// `std_msgs/Bool` (the pause topic).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
    pub struct Bool {
        /// The value.
        pub data: bool,
    }

    /// `std_msgs/String` (the speech topic).
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
    pub struct String {
        /// The text.
        pub data: std::string::String,
    }

    ros_message!(Header, "std_msgs/Header", "std_msgs::msg::dds_::Header_");
    ros_message!(Bool, "std_msgs/Bool", "std_msgs::msg::dds_::Bool_");
    ros_message!(String, "std_msgs/String", "std_msgs::msg::dds_::String_");
}

/// `geometry_msgs`.
pub mod geometry_msgs {
    use super::std_msgs::Header;
    use super::*;

    /// A 3-vector (velocities).
    #[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
    #[serde(default)]
    pub struct Vector3 {
        /// x.
        #[serde(deserialize_with = "wire::f64_null_as_nan")]
        pub x: f64,
        /// y.
        #[serde(deserialize_with = "wire::f64_null_as_nan")]
        pub y: f64,
        /// z.
        #[serde(deserialize_with = "wire::f64_null_as_nan")]
        pub z: f64,
    }

    /// A position.
    #[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
    #[serde(default)]
    pub struct Point {
        /// x, metres.
        #[serde(deserialize_with = "wire::f64_null_as_nan")]
        pub x: f64,
        /// y, metres.
        #[serde(deserialize_with = "wire::f64_null_as_nan")]
        pub y: f64,
        /// z, metres.
        #[serde(deserialize_with = "wire::f64_null_as_nan")]
        pub z: f64,
    }

    /// An orientation as a unit quaternion.
    #[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
    #[serde(default)]
    pub struct Quaternion {
        /// x.
        #[serde(deserialize_with = "wire::f64_null_as_nan")]
        pub x: f64,
        /// y.
        #[serde(deserialize_with = "wire::f64_null_as_nan")]
        pub y: f64,
        /// z.
        #[serde(deserialize_with = "wire::f64_null_as_nan")]
        pub z: f64,
        /// w.
        #[serde(deserialize_with = "wire::f64_null_as_nan")]
        pub w: f64,
    }

    impl Default for Quaternion {
        /// The identity rotation (ROS's default is `w = 1`).
        fn default() -> Self {
            Self { x: 0.0, y: 0.0, z: 0.0, w: 1.0 }
        }
    }

    impl Quaternion {
        /// A rotation of `yaw` radians about z.
        pub fn from_yaw(yaw: f64) -> Self {
            let (s, c) = (yaw / 2.0).sin_cos();
            Self { x: 0.0, y: 0.0, z: s, w: c }
        }
    }

    /// A position and orientation.
    #[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
    #[serde(default)]
    pub struct Pose {
        /// Position.
        pub position: Point,
        /// Orientation.
        pub orientation: Quaternion,
    }

    /// A pose with a header (the Nav2 `/goal_pose` topic).
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(default)]
    pub struct PoseStamped {
        /// Stamp and frame (`map` for Nav2 goals).
        pub header: Header,
        /// The pose.
        pub pose: Pose,
    }

    /// A velocity command (`/cmd_vel`).
    #[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
    #[serde(default)]
    pub struct Twist {
        /// Linear velocity, m/s (x forward).
        pub linear: Vector3,
        /// Angular velocity, rad/s (z CCW).
        pub angular: Vector3,
    }

    impl Twist {
        /// A planar twist: forward speed and yaw rate.
        pub fn planar(linear: f64, angular: f64) -> Self {
            Self {
                linear: Vector3 { x: linear, ..Vector3::default() },
                angular: Vector3 { z: angular, ..Vector3::default() },
            }
        }

        /// True when every component is exactly zero.
        pub fn is_zero(&self) -> bool {
            [self.linear.x, self.linear.y, self.linear.z, self.angular.x, self.angular.y, self.angular.z]
                .iter()
                .all(|v| *v == 0.0)
        }
    }

    /// A pose with its 6×6 covariance.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(default)]
    pub struct PoseWithCovariance {
        /// The pose.
        pub pose: Pose,
        /// Row-major 6×6 covariance (36 values).
        #[serde(deserialize_with = "wire::f64_list_null_as_nan")]
        pub covariance: Vec<f64>,
    }

    /// A twist with its 6×6 covariance.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(default)]
    pub struct TwistWithCovariance {
        /// The twist.
        pub twist: Twist,
        /// Row-major 6×6 covariance (36 values).
        #[serde(deserialize_with = "wire::f64_list_null_as_nan")]
        pub covariance: Vec<f64>,
    }

    ros_message!(Vector3, "geometry_msgs/Vector3", "geometry_msgs::msg::dds_::Vector3_");
    ros_message!(Point, "geometry_msgs/Point", "geometry_msgs::msg::dds_::Point_");
    ros_message!(Quaternion, "geometry_msgs/Quaternion", "geometry_msgs::msg::dds_::Quaternion_");
    ros_message!(Pose, "geometry_msgs/Pose", "geometry_msgs::msg::dds_::Pose_");
    ros_message!(PoseStamped, "geometry_msgs/PoseStamped", "geometry_msgs::msg::dds_::PoseStamped_");
    ros_message!(Twist, "geometry_msgs/Twist", "geometry_msgs::msg::dds_::Twist_");
    ros_message!(
        PoseWithCovariance,
        "geometry_msgs/PoseWithCovariance",
        "geometry_msgs::msg::dds_::PoseWithCovariance_"
    );
    ros_message!(
        TwistWithCovariance,
        "geometry_msgs/TwistWithCovariance",
        "geometry_msgs::msg::dds_::TwistWithCovariance_"
    );
}

/// `nav_msgs`.
pub mod nav_msgs {
    use super::geometry_msgs::{PoseWithCovariance, TwistWithCovariance};
    use super::std_msgs::Header;
    use super::*;

    /// `nav_msgs/Odometry` (`/odom`).
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(default)]
    pub struct Odometry {
        /// Stamp and the pose's frame (`odom`).
        pub header: Header,
        /// The twist's frame (`base_link`).
        pub child_frame_id: String,
        /// Pose in `header.frame_id`.
        pub pose: PoseWithCovariance,
        /// Velocity in `child_frame_id`.
        pub twist: TwistWithCovariance,
    }

    ros_message!(Odometry, "nav_msgs/Odometry", "nav_msgs::msg::dds_::Odometry_");
}

/// `sensor_msgs`.
pub mod sensor_msgs {
    use super::std_msgs::Header;
    use super::*;

    /// `sensor_msgs/LaserScan` (`/scan`). `null` ranges (rosbridge's
    /// encoding of ±inf and NaN) read as NaN, an *invalid* reading (REP-117).
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(default)]
    pub struct LaserScan {
        /// Stamp of the first beam and the scanner frame.
        pub header: Header,
        /// Angle of the first beam, rad.
        #[serde(deserialize_with = "wire::f32_null_as_nan")]
        pub angle_min: f32,
        /// Angle of the last beam, rad.
        #[serde(deserialize_with = "wire::f32_null_as_nan")]
        pub angle_max: f32,
        /// Angle between beams, rad.
        #[serde(deserialize_with = "wire::f32_null_as_nan")]
        pub angle_increment: f32,
        /// Time between beams, s.
        #[serde(deserialize_with = "wire::f32_null_as_nan")]
        pub time_increment: f32,
        /// Time between scans, s.
        #[serde(deserialize_with = "wire::f32_null_as_nan")]
        pub scan_time: f32,
        /// Minimum valid range, m.
        #[serde(deserialize_with = "wire::f32_null_as_nan")]
        pub range_min: f32,
        /// Maximum valid range, m.
        #[serde(deserialize_with = "wire::f32_null_as_nan")]
        pub range_max: f32,
        /// Ranges, m (REP-117: `+inf` no return, `-inf` too close, NaN
        /// invalid; `null` on the wire reads as NaN).
        #[serde(deserialize_with = "wire::ranges_null_as_nan")]
        pub ranges: Vec<f32>,
        /// Intensities (device units; `null` reads as NaN).
        #[serde(deserialize_with = "wire::f32_list_null_as_nan")]
        pub intensities: Vec<f32>,
    }

    /// `sensor_msgs/Image`: raw pixels (`rgb8`, `bgr8`, `16UC1`, ...).
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(default)]
    pub struct Image {
        /// Stamp and camera frame.
        pub header: Header,
        /// Rows.
        pub height: u32,
        /// Columns.
        pub width: u32,
        /// Pixel encoding (`rgb8`, `bgr8`, `16UC1`, `32FC1`, ...).
        pub encoding: String,
        /// 1 when multi-byte values are big-endian.
        pub is_bigendian: u8,
        /// Row length in bytes (may include padding).
        pub step: u32,
        /// Pixel bytes (base64 over rosbridge).
        #[serde(serialize_with = "wire::serialize_bytes", deserialize_with = "wire::deserialize_bytes")]
        pub data: Vec<u8>,
    }

    /// `sensor_msgs/CompressedImage`: a JPEG or PNG (`<topic>/compressed`).
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(default)]
    pub struct CompressedImage {
        /// Stamp and camera frame.
        pub header: Header,
        /// `jpeg`, `png`, or image_transport's `bgr8; jpeg compressed bgr8`.
        pub format: String,
        /// The compressed bytes (base64 over rosbridge).
        #[serde(serialize_with = "wire::serialize_bytes", deserialize_with = "wire::deserialize_bytes")]
        pub data: Vec<u8>,
    }

    ros_message!(LaserScan, "sensor_msgs/LaserScan", "sensor_msgs::msg::dds_::LaserScan_");
    ros_message!(Image, "sensor_msgs/Image", "sensor_msgs::msg::dds_::Image_");
    ros_message!(CompressedImage, "sensor_msgs/CompressedImage", "sensor_msgs::msg::dds_::CompressedImage_");
}

/// `rosapi` services (started by rosbridge's launch file); the link probe
/// uses `rosapi/GetTime`.
pub mod rosapi {
    use super::builtin_interfaces::Time;
    use super::*;

    /// Request of `rosapi/GetTime` (empty).
    #[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
    pub struct GetTimeRequest {}

    /// Response of `rosapi/GetTime`.
    #[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
    #[serde(default)]
    pub struct GetTimeResponse {
        /// The robot's current time.
        pub time: Time,
    }

    /// `rosapi/GetTime`: the robot's clock.
    #[derive(Debug, Clone, Copy)]
    pub struct GetTime;

    impl RosServiceType for GetTime {
        const ROS_SERVICE_NAME: &'static str = "rosapi/GetTime";
        const ROS2_TYPE_NAME: &'static str = "rosapi_msgs::srv::dds_::GetTime_";
        type Request = GetTimeRequest;
        type Response = GetTimeResponse;
    }

    /// Request of `rosapi/Topics` (no fields).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
    pub struct TopicsRequest {}

    /// Response of `rosapi/Topics`: every topic of the graph and its type.
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
    #[serde(default)]
    pub struct TopicsResponse {
        /// Topic names.
        pub topics: Vec<std::string::String>,
        /// Their types, in the same order.
        pub types: Vec<std::string::String>,
    }

    /// `rosapi/Topics` (`/rosapi/topics`): the topic list, used to find
    /// `<camera>/compressed` and whether Nav2's NavigateToPose action
    /// server is up (`nav2 = "auto"`).
    #[derive(Debug, Clone, Copy)]
    pub struct Topics;

    impl RosServiceType for Topics {
        const ROS_SERVICE_NAME: &'static str = "rosapi/Topics";
        const ROS2_TYPE_NAME: &'static str = "rosapi_msgs::srv::dds_::Topics_";
        type Request = TopicsRequest;
        type Response = TopicsResponse;
    }

    ros_message!(TopicsRequest, "rosapi/TopicsRequest", "rosapi_msgs::srv::dds_::Topics_Request_");
    ros_message!(TopicsResponse, "rosapi/TopicsResponse", "rosapi_msgs::srv::dds_::Topics_Response_");
    ros_message!(GetTimeRequest, "rosapi/GetTimeRequest", "rosapi_msgs::srv::dds_::GetTime_Request_");
    ros_message!(GetTimeResponse, "rosapi/GetTimeResponse", "rosapi_msgs::srv::dds_::GetTime_Response_");
}

/// `action_msgs`: cancelling Nav2 goals through the action's
/// `_action/cancel_goal` service.
pub mod action_msgs {
    use super::builtin_interfaces::Time;
    use super::*;

    /// A goal's id (`unique_identifier_msgs/UUID`) and acceptance time.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(default)]
    pub struct GoalInfo {
        /// The goal id.
        pub goal_id: Uuid,
        /// When the goal was accepted.
        pub stamp: Time,
    }

    /// `unique_identifier_msgs/UUID`: 16 bytes.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(default)]
    pub struct Uuid {
        /// The bytes (all zero = every goal, when cancelling).
        #[serde(serialize_with = "wire::serialize_bytes", deserialize_with = "wire::deserialize_bytes")]
        pub uuid: Vec<u8>,
    }

    /// One goal's state in `action_msgs/GoalStatusArray`.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(default)]
    pub struct GoalStatus {
        /// The goal.
        pub goal_info: GoalInfo,
        /// 0 unknown, 1 accepted, 2 executing, 3 canceling, 4 succeeded,
        /// 5 canceled, 6 aborted.
        pub status: i8,
    }

    impl GoalStatus {
        /// Accepted by the action server.
        pub const ACCEPTED: i8 = 1;
        /// Being executed.
        pub const EXECUTING: i8 = 2;
        /// Cancel requested, not finished yet.
        pub const CANCELING: i8 = 3;
        /// Reached.
        pub const SUCCEEDED: i8 = 4;
        /// Cancelled.
        pub const CANCELED: i8 = 5;
        /// Given up by the server (no path, no progress, a failed recovery).
        pub const ABORTED: i8 = 6;
    }

    /// `action_msgs/GoalStatusArray`: an action server's
    /// `_action/status` topic (every goal it still remembers).
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(default)]
    pub struct GoalStatusArray {
        /// The goals.
        pub status_list: Vec<GoalStatus>,
    }

    /// Request of `action_msgs/CancelGoal`. A zero id and zero stamp cancel
    /// every goal of the action server.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(default)]
    pub struct CancelGoalRequest {
        /// Which goals.
        pub goal_info: GoalInfo,
    }

    impl CancelGoalRequest {
        /// The request that cancels all goals.
        pub fn all() -> Self {
            Self { goal_info: GoalInfo { goal_id: Uuid { uuid: vec![0; 16] }, stamp: Time::default() } }
        }
    }

    /// Response of `action_msgs/CancelGoal`.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(default)]
    pub struct CancelGoalResponse {
        /// 0 none, 1 rejected, 2 unknown goal, 3 goal terminated.
        pub return_code: i8,
        /// The goals now cancelling.
        pub goals_canceling: Vec<GoalInfo>,
    }

    /// `action_msgs/CancelGoal`.
    #[derive(Debug, Clone, Copy)]
    pub struct CancelGoal;

    impl RosServiceType for CancelGoal {
        const ROS_SERVICE_NAME: &'static str = "action_msgs/CancelGoal";
        const ROS2_TYPE_NAME: &'static str = "action_msgs::srv::dds_::CancelGoal_";
        type Request = CancelGoalRequest;
        type Response = CancelGoalResponse;
    }

    ros_message!(GoalInfo, "action_msgs/GoalInfo", "action_msgs::msg::dds_::GoalInfo_");
    ros_message!(GoalStatus, "action_msgs/GoalStatus", "action_msgs::msg::dds_::GoalStatus_");
    ros_message!(GoalStatusArray, "action_msgs/GoalStatusArray", "action_msgs::msg::dds_::GoalStatusArray_");
    ros_message!(Uuid, "unique_identifier_msgs/UUID", "unique_identifier_msgs::msg::dds_::UUID_");
    ros_message!(CancelGoalRequest, "action_msgs/CancelGoalRequest", "action_msgs::srv::dds_::CancelGoal_Request_");
    ros_message!(CancelGoalResponse, "action_msgs/CancelGoalResponse", "action_msgs::srv::dds_::CancelGoal_Response_");
}

#[cfg(test)]
mod tests {
    use super::geometry_msgs::Twist;
    use super::nav_msgs::Odometry;
    use super::sensor_msgs::{Image, LaserScan};
    use super::std_msgs::Header;

    #[test]
    fn ros1_and_ros2_headers_both_parse() {
        let ros2: Header =
            serde_json::from_str(r#"{"stamp":{"sec":12,"nanosec":500000000},"frame_id":"laser"}"#).unwrap();
        let ros1: Header =
            serde_json::from_str(r#"{"seq":7,"stamp":{"secs":12,"nsecs":500000000},"frame_id":"laser"}"#).unwrap();
        assert_eq!(ros1, ros2);
        assert_eq!(ros2.stamp.as_secs_f64(), 12.5);
    }

    #[test]
    fn rosbridge_laser_scan_with_nulls_parses() {
        let text = r#"{"header":{"stamp":{"sec":1,"nanosec":0},"frame_id":"laser"},"angle_min":-3.14159,
            "angle_max":3.14159,"angle_increment":1.5708,"time_increment":0.0,"scan_time":0.1,
            "range_min":0.05,"range_max":12.0,"ranges":[1.0,null,null,2.5],"intensities":[]}"#;
        let scan: LaserScan = serde_json::from_str(text).unwrap();
        assert_eq!((scan.ranges[0], scan.ranges[3]), (1.0, 2.5));
        assert!(scan.ranges[1].is_nan() && scan.ranges[2].is_nan(), "null is an invalid reading: {:?}", scan.ranges);
        let back = serde_json::to_value(&scan).unwrap();
        assert!(back["ranges"][1].is_null());
    }

    #[test]
    fn image_round_trips_with_base64_data() {
        let img = Image {
            height: 1,
            width: 2,
            encoding: "rgb8".into(),
            step: 6,
            data: vec![1, 2, 3, 4, 5, 6],
            ..Default::default()
        };
        let v = serde_json::to_value(&img).unwrap();
        assert_eq!(v["data"], "AQIDBAUG");
        assert_eq!(serde_json::from_value::<Image>(v).unwrap(), img);
    }

    #[test]
    fn twist_and_odometry_defaults_are_ros_defaults() {
        assert!(Twist::default().is_zero());
        assert_eq!(Odometry::default().pose.pose.orientation.w, 1.0);
        assert_eq!(super::builtin_interfaces::Time::from_secs_f64(3.25).nanosec, 250_000_000);
    }
}
