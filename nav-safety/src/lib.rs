//! # nav-safety
//!
//! The sequencer layer of navkit: the VLM proposes, this
//! crate disposes. Every tool call a VLM makes goes through the
//! [`SafetyExecutor`], and every velocity the control loop publishes goes
//! through the [`ContinuousGuard`]. Nothing here touches the network or the
//! system clock: time is passed in, so every decision is reproducible.
//!
//! - [`tools`]: the seven explore tools as a typed [`ToolCall`], strictly
//!   parsed from VLM arguments, with provider-neutral JSON Schemas
//!   ([`tool_schemas`]).
//! - [`SafetyExecutor`]: blocked-action check → sensor freshness →
//!   pre-validation against the LiDAR → geofence → speed limit →
//!   [`Target`] (velocity, navigation goal, observe, stop, path check,
//!   report), with the [`Feedback`] record for the next prompt.
//! - [`ContinuousGuard`]: the 20 Hz check — emergency stop at 0.3 m in the
//!   direction of motion, proportional scaling to 1.0 m, time-to-collision
//!   tiers — reporting every [`Override`].
//! - [`BlockedActionMemory`], [`Watchdog`] (tiers and velocity decay),
//!   [`NetworkMonitor`], [`StopArbiter`], [`Geofence`], [`EventTriggers`]
//!   and [`CallScheduler`] (frame skipping and statistics).
//! - [`SafetyLayer`]: all of the above for a control loop, with one
//!   `tick(command, scan, pose, now)`.
//! - [`SafetyConfig`]: every parameter with its default, loadable from TOML.
//!
//! ```
//! use nav_core::geometry::Pose2;
//! use nav_core::lidar::LaserScan;
//! use nav_safety::{SafetyConfig, SafetyExecutor, SafetySensors, Target, ToolCall};
//!
//! let mut executor = SafetyExecutor::new(SafetyConfig::default())?;
//! // A wall 0.8 m ahead, open elsewhere.
//! let mut scan = LaserScan::full_circle(360, 0.05, 12.0, f32::INFINITY);
//! for i in 150..=210 {
//!     scan.ranges[i] = 0.8;
//! }
//! let call = ToolCall::parse("move_toward", &serde_json::json!({"direction": "forward", "speed": "fast"}))?;
//! let sensors = SafetySensors::new(&scan, 10.0, Pose2::origin(), 10.05);
//! let outcome = executor.execute(&call, &sensors);
//! // Clearance below 1 m: the speed tier is downgraded to slow (0.08 m/s).
//! let Target::Velocity(v) = outcome.target else { return Err("expected a velocity".into()) };
//! assert_eq!(v.linear, 0.08);
//! assert!(outcome.feedback.safety_override);
//!
//! // In the control loop, each tick:
//! let safe = executor.guard().guard(&v, &scan, 0.05);
//! assert_eq!(safe.linear, 0.08);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A control loop does not wire these parts itself: [`SafetyLayer`] owns
//! them all (the executor with its guard, the watchdog, the network
//! monitor, the scheduler, the triggers and the stop arbiter) and is the
//! recipe as code. Each 20 Hz tick the loop asks [`SafetyLayer::tier`]
//! which watchdog tier holds, picks its command for it and publishes what
//! [`SafetyLayer::tick`] makes of it (decayed while a decision is awaited,
//! guarded against the scan and the geofence, merged in the arbiter).
//! Decisions go through [`SafetyLayer::call_due`],
//! [`SafetyLayer::schedule`], [`SafetyLayer::call_started`],
//! [`SafetyLayer::call_finished`], [`SafetyLayer::execute`] and
//! [`SafetyLayer::finish`]; [`SafetyLayer::stats_line`] gives the
//! per-minute statistics line.
//!
//! Dependencies: `nav-core` (LiDAR arcs, TTC, geometry), `serde` (configs,
//! logs and feedback are serialized), `serde_json` (tool arguments and
//! schemas are JSON values) and `thiserror` (the error type).
#![deny(missing_docs)]

pub mod arbiter;
pub mod blocked;
pub mod config;
pub mod error;
pub mod executor;
pub mod geofence;
pub mod guard;
pub mod layer;
pub mod network;
pub mod schedule;
pub mod tools;
pub mod triggers;
pub mod watchdog;

pub use arbiter::{StopArbiter, StopSource};
pub use blocked::{ActionKey, Allowance, BlockedActionMemory};
pub use config::SafetyConfig;
pub use error::{SafetyError, ToolError};
pub use executor::{
    ExecutionOutcome, Feedback, FrontierGoal, MotionReport, NavGoalTarget, ObserveTarget, PathCheck, ReportTarget,
    SafetyExecutor, SafetySensors, StopTarget, Target,
};
pub use geofence::{Geofence, ZoneKind};
pub use guard::{ContinuousGuard, GuardedVelocity, Override, OverrideKind, VelocityTarget};
pub use layer::{LayerTick, SafetyLayer, TierUpdate};
pub use network::{NetworkMonitor, NetworkTier};
pub use schedule::{CallDecision, CallScheduler, RunTotals, ScheduleInput};
pub use tools::{Speed, ToolCall, ToolSchema, tool_schemas, tool_schemas_for};
pub use triggers::{EventTriggers, TriggerEvent};
pub use watchdog::{Watchdog, WatchdogTier};
