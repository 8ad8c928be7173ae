//! Offline planners: no network, the default, so everything runs on a fresh
//! machine. One per protocol — [`objectnav::OfflineObjectNavPlanner`],
//! [`candidates::OfflineCandidatePlanner`], [`explore::OfflineExplorePlanner`]
//! — plus [`frontier::FrontierPlanner`], classic nearest-frontier
//! exploration: the baseline of the evaluation and the watchdog's local
//! fallback. They use the simulator's ground-truth detections in place of a
//! VLM's eyes and [`prior::SemanticPrior`] in place of its common sense.

pub mod candidates;
pub mod explore;
pub mod frontier;
pub mod objectnav;
pub mod prior;

pub use candidates::OfflineCandidatePlanner;
pub use explore::OfflineExplorePlanner;
pub use frontier::FrontierPlanner;
pub use objectnav::{OfflineObjectNavConfig, OfflineObjectNavPlanner};
pub use prior::SemanticPrior;
