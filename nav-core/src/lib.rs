//! # nav-core
//!
//! The pure core of navkit: types and algorithms with no I/O, no async, no
//! clock and no global random state. Everything here is deterministic.
//!
//! - [`geometry`]: [`Pose2`](geometry::Pose2), [`Point2`](geometry::Point2),
//!   angle normalization, ray/segment/polygon tests.
//! - [`action`]: the discrete [`Action`](action::Action) space and
//!   [`DeadReckoning`](action::DeadReckoning) (0.25 m / 30°).
//! - [`grid`]: the [`OccupancyGrid`](grid::OccupancyGrid) with LiDAR ray
//!   casting, run-length prompt encoding and guarded LLM corrections.
//! - [`frontier`]: frontier cells and 0.5 m clusters.
//! - [`astar`]: the A* [`GridPlanner`](astar::GridPlanner) over a
//!   [`CostMap`](astar::CostMap).
//! - [`candidates`]: scored subgoal candidates for the VLM to choose from.
//! - [`lidar`]: the 12-sector [`LidarSummary`](lidar::LidarSummary), gaps,
//!   affordance scores, time-to-collision and speed scaling.
//! - [`predict`]: the candidates protocol's predictive world model (wall, corridor, open
//!   space and boundary guesses, verified against later observations).
//! - [`config`]: [`ConfigError`](config::ConfigError) and the range checks
//!   every config struct's `validate()` uses.
//! - [`doorway`]: notices the robot passing through a door from its LiDAR.
//! - [`similarity`], [`stuck`], [`metrics`], [`raster`], [`time`].
//! - [`bounded`]: size-limited reads over a caller's reader (no file is
//!   opened here).
//!
//! ```
//! use nav_core::prelude::*;
//!
//! // Dead reckoning of the Habitat action space.
//! let mut dr = DeadReckoning::default();
//! for a in [Action::Forward, Action::TurnLeft, Action::Forward] {
//!     dr.apply(a);
//! }
//! assert!((dr.pose().yaw_deg() - 30.0).abs() < 1e-9);
//!
//! // Plan across a grid with a wall in the way.
//! let mut grid = OccupancyGrid::new(30, 30, 0.1, Point2::new(0.0, 0.0))?;
//! for i in 0..900 { let p = grid.pos_of(i); grid.set(p, CellState::Free, 1.0); }
//! for y in 0..25 { grid.set(GridPos::new(15, y), CellState::Wall, 1.0); }
//! let costs = CostMap::from_grid(&grid, &CostMapConfig::ground_truth());
//! let path = GridPlanner::new(PlannerConfig::default())
//!     .plan_world(&costs, Point2::new(0.5, 0.5), Point2::new(2.5, 0.5), &FrozenClock);
//! assert!(path.success && path.path_length_m > 2.0);
//!
//! // Summarize a LiDAR scan for a prompt.
//! let scan = LaserScan::full_circle(720, 0.05, 12.0, 3.0);
//! let text = LidarSummary::from_scan(&scan, &LidarConfig::default()).to_text();
//! assert!(text.contains("000° front:"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Dependencies: `serde` (configs and logs are serialized), `thiserror`
//! (errors) and `font8x8` (a public-domain 8×8 bitmap font, so rendered
//! labels are legible without shipping font files).
#![deny(missing_docs)]

pub mod action;
pub mod astar;
pub mod bounded;
pub mod candidates;
pub mod config;
pub mod discovery;
pub mod doorway;
pub mod drive;
pub mod error;
pub mod frontier;
pub mod geometry;
pub mod grid;
pub mod lidar;
pub mod local_map;
pub mod metrics;
pub mod predict;
pub mod raster;
pub mod similarity;
pub mod stuck;
pub mod time;

pub use error::CoreError;

/// The most used types in one import.
pub mod prelude {
    pub use crate::action::{Action, DeadReckoning, StepConfig};
    pub use crate::astar::{CostMap, CostMapConfig, GridPlanner, PathResult, PlanError, PlannerConfig};
    pub use crate::candidates::{Candidate, CandidateConfig, CandidateInput, CandidateKind, generate_candidates};
    pub use crate::frontier::{FrontierCluster, find_frontiers};
    pub use crate::geometry::{Point2, Pose2, normalize_angle};
    pub use crate::grid::{CellState, Correction, CorrectionGuard, GridPos, OccupancyGrid};
    pub use crate::lidar::{AffordanceScores, Direction, LaserScan, LidarConfig, LidarSummary};
    pub use crate::metrics::{EpisodeMetrics, spl};
    pub use crate::raster::{Rgb, RgbFrame};
    pub use crate::time::{Clock, FrozenClock, ManualClock};
}
