//! # nav-hal
//!
//! The hardware abstraction of navkit and its built-in simulator.
//!
//! - [`hal`]: the object-safe async traits [`Sensors`](hal::Sensors),
//!   [`Actuators`](hal::Actuators) and [`Robot`](hal::Robot) with their data
//!   types ([`Odometry`](hal::Odometry), [`StampedScan`](hal::StampedScan),
//!   [`CameraFrame`](hal::CameraFrame), [`DepthFrame`](hal::DepthFrame),
//!   [`Panorama`](hal::Panorama), [`Detection`](hal::Detection),
//!   [`Capabilities`](hal::Capabilities), ...). Unimplemented methods
//!   answer [`HalError::Unsupported`].
//! - [`sim`]: [`SimWorld`](sim::SimWorld), a fast synchronous 2D simulator
//!   (swept-disc collisions, LiDAR, ray-cast RGB-D camera with legible
//!   object labels, panoramas, ground-truth detections, coverage,
//!   geodesic distances), and [`SimHal`](sim::SimHal), the same behind the
//!   traits.
//! - [`arena`]: the [`Arena`](arena::Arena) file format with validation,
//!   the built-in arenas (four small test arenas and three houses) and
//!   [`procedural::generate_house`](arena::procedural::generate_house).
//! - [`picture`]: top-down [`MapPicture`](picture::MapPicture)s as PNG/SVG.
//! - [`clock`]: [`MonotonicClock`](clock::MonotonicClock), the wall clock
//!   for real robots.
//! - [`depth_scan`]: [`ScanBuilder`](depth_scan::ScanBuilder), planar scans
//!   from depth images (a virtual LiDAR for camera-only robots, e.g. the
//!   bridge's Habitat and MiniWorld agents).
//! - `bridge` (feature `sim-bridge`): `BridgeHal`, Habitat, MiniWorld and
//!   other Python simulators behind the traits through the navkit bridge
//!   protocol (JSON lines to a child process or TCP; docs/BRIDGE.md).
//! - `rosbridge` (feature `rosbridge`, off by default): `RosbridgeHal`, a
//!   ROS 1/2 robot (the ROSMASTER A1) through rosbridge v2 over WebSocket,
//!   built on roslibrust; feature `rosbridge-sim` adds
//!   `rosbridge::sim_robot::RosbridgePeer`, navkit's simulated robot: a
//!   rosbridge server backed by the simulator, for trying navkit without a
//!   robot (`nav sim-robot`) and for tests (feature `rosbridge-testing`
//!   also names it `rosbridge::testing`). See `docs/ROSMASTER.md`.
//!
//! ```
//! use nav_core::action::Action;
//! use nav_hal::hal::{Robot, Sensors, Actuators};
//! use nav_hal::sim::{SimConfig, SimHal};
//!
//! // The synchronous core, as an evaluation loop uses it.
//! let mut hal = SimHal::builtin("simple", SimConfig::default())?;
//! let world = hal.world_mut();
//! let out = world.act(Action::Forward);
//! assert!(!out.collided && (out.moved_m - 0.25).abs() < 1e-12);
//! let scan = world.scan();
//! assert_eq!(scan.scan.ranges.len(), 720);
//! assert!(world.geodesic_start_to_goal().unwrap() > 3.9);
//!
//! // The same robot behind the object-safe async traits.
//! let mut robot: Box<dyn Robot> = Box::new(hal);
//! let rt = tokio::runtime::Builder::new_current_thread().build()?;
//! let frame = rt.block_on(robot.rgb())?;
//! assert_eq!((frame.frame.width(), frame.frame.height()), (320, 240));
//! rt.block_on(robot.act(Action::TurnLeft))?;
//! assert!(robot.capabilities().lidar);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Dependencies: `async-trait` keeps the HAL traits object-safe with async
//! methods; `image` encodes PNG/JPEG pictures; `rand` + `rand_chacha` drive
//! the seeded noise and the procedural generator (ChaCha8 gives the same
//! stream on every platform); `serde_path_to_error` names the JSON path of
//! an arena parse error (`objects[2].r`); `serde_json` is built with
//! `float_roundtrip` so arena files save and load bit for bit. The
//! simulator needs no async runtime (tokio is only a dev-dependency).
//! Feature `rosbridge` adds `roslibrust` (the rosbridge v2 client, kept
//! behind its generic pub/sub traits), `tokio` (the connection task and
//! timers), `base64` (rosbridge encodes `uint8[]` as base64), `tracing`
//! (what a dry run would send, reconnects), `tokio-tungstenite` +
//! `futures-util` (the cameras' own WebSocket, and the simulated robot's
//! server with `rosbridge-sim`) and `ciborium` (CBOR frames).
//! Feature `sim-bridge` adds `tokio` (the bridge child process, its pipes
//! or a TCP stream, per-request timeouts) and `base64` (images travel
//! base64-encoded in the JSON lines).
#![deny(missing_docs)]

pub mod arena;
#[cfg(feature = "sim-bridge")]
pub mod bridge;
pub mod clock;
pub mod depth_scan;
mod error;
pub mod hal;
pub mod picture;
#[cfg(feature = "rosbridge")]
pub mod rosbridge;
pub mod sim;
pub mod tap;

pub use error::HalError;
