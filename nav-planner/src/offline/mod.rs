//! Offline planners: no network, the default, so everything runs on a fresh
//! machine. One stand-in for a model per protocol —
//! [`objectnav_standin::OfflineObjectNavPlanner`] (which knows only what a
//! model's request carries), [`candidates_standin::OfflineCandidatePlanner`],
//! [`explore_standin::OfflineExplorePlanner`] — plus two non-VLM ObjectNav
//! baselines: [`frontier::FrontierPlanner`], classic nearest-frontier
//! exploration (also the watchdog's local fallback), and
//! [`map_planner::MapObjectNavPlanner`], a metric-map planner with
//! remembered sightings and a semantic frontier ranking. They use what the simulator renders (the label buffer of each
//! panorama view: a perfect detector) in place of a VLM's eyes and
//! [`prior::SemanticPrior`] in place of its common sense;
//! [`label_perception::LabelBufferPerception`] is the simulator's
//! perception stage on the same label buffer.
//! [`summarize_feedback`] stands in for the final-grounding call.

pub mod candidates_standin;
pub mod explore_standin;
pub mod frontier;
pub mod grounding_standin;
pub mod label_perception;
pub mod map_planner;
pub mod objectnav_standin;
pub mod prior;
pub mod scene_standin;
pub mod vlm_noise;

pub use candidates_standin::OfflineCandidatePlanner;
pub use explore_standin::OfflineExplorePlanner;
pub use frontier::FrontierPlanner;
pub use grounding_standin::summarize_feedback;
pub use label_perception::LabelBufferPerception;
pub use map_planner::{MapObjectNavConfig, MapObjectNavPlanner};
pub use objectnav_standin::{Eyes, OfflineObjectNavConfig, OfflineObjectNavPlanner};
pub use prior::SemanticPrior;
pub use scene_standin::OfflineSceneAnalyzer;
pub use vlm_noise::VlmNoise;
