//! The robot as an MCP (Model Context Protocol) server behind the safety
//! layer (feature `mcp`): any agent host drives a navkit robot through the
//! explore protocol's seven strict tools and cannot bypass the guard.
//!
//! [`McpRobot::start`] takes any robot (the built-in simulator, a ROS robot
//! through rosbridge, a simulator bridge: any [`Robot`] with velocity
//! commands and a LiDAR) and starts its control task: every
//! [`McpConfig::tick_s`] (20 Hz) it senses, asks the [`SafetyLayer`](
//! nav_safety::SafetyLayer) for the watchdog tier, takes the command of the
//! action in progress (zero in every tier past CONTINUE: over MCP the robot
//! never drives on its own), passes it through the layer's tick (watchdog
//! decay, continuous LiDAR guard, stop arbiter) and publishes the one
//! velocity. For a simulator, `drive` advances its clock, so the robot
//! moves between tool calls.
//!
//! [`McpRobot::handler`] gives one client's [`NavMcpServer`] (an rmcp
//! `ServerHandler`); [`McpRobot::serve_stdio`] and [`http::serve_http`]
//! serve it over stdio or Streamable HTTP.
//!
//! Tools: `move_toward`, `rotate`, `navigate_to_goal`, `stop_robot`,
//! `observe_scene`, `check_path_clear`, `report_discovery` (the schemas are
//! nav-safety's [`tool_schemas_for`](nav_safety::tool_schemas_for), strict),
//! and `get_state` and `get_map`. Every call goes through the safety
//! executor exactly as in the explore loop (blocked-action memory, sensor
//! freshness, LiDAR pre-validation, geofence, speed limit); a refused call
//! is an `isError` result whose text is the override feedback, a modified
//! one says what changed. A motion call restarts the watchdog's count; no
//! motion call for the watchdog's CONTINUE time (3 s by default) and the
//! robot is at zero velocity. `stop_robot` stops at once and is open to
//! every client; motion is one client's at a time ([`lease`]).
//!
//! Resources: `navkit://memory/exploration` (the exploration memory as the
//! explore model reads it) and `navkit://memory/navigation-context`.

mod context;
mod core;
pub mod http;
pub(crate) mod lease;
mod server;
mod view;

pub use self::core::ToolReply;
pub use server::NavMcpServer;
pub use view::ImagePart;

use self::core::RobotCore;
use lease::MotionLease;
use nav_core::local_map::LocalMapConfig;
use nav_core::time::Clock;
use nav_hal::hal::Robot;
use nav_safety::SafetyConfig;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Settings of the MCP server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// Control period, seconds (0.05 = 20 Hz).
    /// Range: [0.01, 1].
    pub tick_s: f64,
    /// The safety layer (speeds, clearances, watchdog, geofence…).
    /// Range: see `SafetyConfig`.
    pub safety: SafetyConfig,
    /// The explored map (frontiers, navigation goals, `get_map`).
    /// Range: see `LocalMapConfig`.
    pub map: LocalMapConfig,
    /// Speed when following a path to a navigation goal, m/s.
    /// Range: (0, 5].
    pub path_speed_mps: f64,
    /// A navigation goal is reached within this distance, metres.
    /// Range: (0, 10].
    pub goal_tolerance_m: f64,
    /// A lease holder that makes no motion call for this long loses the
    /// lease to the next client that asks, seconds.
    /// Range: [1, 86400].
    pub lease_idle_s: f64,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            tick_s: 0.05,
            safety: SafetyConfig::default(),
            map: LocalMapConfig::default(),
            path_speed_mps: 0.12,
            goal_tolerance_m: 0.3,
            lease_idle_s: 30.0,
        }
    }
}

impl McpConfig {
    /// Checks every range.
    ///
    /// # Errors
    ///
    /// [`McpError::Config`] naming the key.
    pub fn validate(&self) -> Result<(), McpError> {
        let bad = |key: &str, range: &str| Err(McpError::Config(format!("mcp.{key} must be in {range}")));
        if !(0.01..=1.0).contains(&self.tick_s) {
            return bad("tick_s", "[0.01, 1]");
        }
        if !(self.path_speed_mps > 0.0 && self.path_speed_mps <= 5.0) {
            return bad("path_speed_mps", "(0, 5]");
        }
        if !(self.goal_tolerance_m > 0.0 && self.goal_tolerance_m <= 10.0) {
            return bad("goal_tolerance_m", "(0, 10]");
        }
        if !(1.0..=86400.0).contains(&self.lease_idle_s) {
            return bad("lease_idle_s", "[1, 86400]");
        }
        self.safety.validate().map_err(|e| McpError::Config(e.to_string()))?;
        Ok(())
    }
}

/// Why the server could not start or serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// A setting is out of range.
    #[error("invalid MCP server configuration: {0}")]
    Config(String),
    /// The robot cannot be served (missing capability, failed at setup).
    #[error("robot: {0}")]
    Robot(String),
    /// The transport failed (binding, I/O, the MCP handshake).
    #[error("transport: {0}")]
    Transport(String),
}

/// What the control task and every client share.
pub(crate) struct Shared {
    pub(crate) core: tokio::sync::Mutex<RobotCore>,
    pub(crate) lease: std::sync::Mutex<MotionLease>,
    next_client: AtomicU64,
    shutdown: AtomicBool,
}

/// A robot served over MCP: its control task and the clients' shared
/// state. Cheap to clone (all clones are the same robot).
#[derive(Clone)]
pub struct McpRobot {
    shared: Arc<Shared>,
}

impl McpRobot {
    /// Starts serving `robot`: checks `config`, reads the start pose and
    /// spawns the 20 Hz control task (inside a tokio runtime). `clock` is
    /// the robot's time: a simulator's own clock (its `drive` advances it),
    /// a monotonic clock for a real robot.
    ///
    /// # Errors
    ///
    /// [`McpError::Config`] for a setting out of range; [`McpError::Robot`]
    /// when the robot lacks velocity commands or a LiDAR, or its odometry
    /// fails.
    pub async fn start(robot: Box<dyn Robot>, clock: Arc<dyn Clock>, config: McpConfig) -> Result<Self, McpError> {
        config.validate()?;
        let lease = MotionLease::new(config.lease_idle_s);
        let tick = Duration::from_secs_f64(config.tick_s);
        let core = RobotCore::new(robot, clock, config).await?;
        let shared = Arc::new(Shared {
            core: tokio::sync::Mutex::new(core),
            lease: std::sync::Mutex::new(lease),
            next_client: AtomicU64::new(1),
            shutdown: AtomicBool::new(false),
        });
        tokio::spawn(control_task(Arc::downgrade(&shared), tick));
        Ok(Self { shared })
    }

    /// A handler for one new client (its own lease identity).
    pub fn handler(&self) -> NavMcpServer {
        let id = self.shared.next_client.fetch_add(1, Ordering::SeqCst);
        NavMcpServer::new(self.shared.clone(), id)
    }

    /// Serves one client over standard input and output until it closes
    /// them.
    ///
    /// # Errors
    ///
    /// [`McpError::Transport`] when the handshake or the transport fails.
    pub async fn serve_stdio(&self) -> Result<(), McpError> {
        use rmcp::ServiceExt as _;
        let running =
            self.handler().serve(rmcp::transport::stdio()).await.map_err(|e| McpError::Transport(e.to_string()))?;
        running.waiting().await.map_err(|e| McpError::Transport(e.to_string()))?;
        Ok(())
    }

    /// The robot's state as `get_state` gives it (JSON).
    pub async fn state(&self) -> serde_json::Value {
        self.shared.core.lock().await.state_json()
    }

    /// Ends the control task and leaves the robot stopped.
    pub async fn shutdown(&self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        self.shared.core.lock().await.halt("the server is shutting down").await;
    }
}

/// The control task: one tick of the core every `tick` of wall time (a
/// late tick is skipped, never caught up in a burst), until shutdown or
/// until the robot is no longer served.
async fn control_task(shared: std::sync::Weak<Shared>, tick: Duration) {
    let mut interval = tokio::time::interval(tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    loop {
        interval.tick().await;
        let Some(shared) = shared.upgrade() else { return };
        if shared.shutdown.load(Ordering::SeqCst) {
            return;
        }
        let mut core = shared.core.lock().await;
        match core.tick().await {
            Ok(()) => failing = false,
            Err(e) if !failing => {
                tracing::error!("the robot failed: {e}");
                failing = true;
            }
            Err(_) => {}
        }
    }
}
