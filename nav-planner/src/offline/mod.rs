//! Offline planners: no network, the default, so everything runs on a fresh
//! machine. One per protocol — [`objectnav_standin::OfflineObjectNavPlanner`],
//! [`candidates_standin::OfflineCandidatePlanner`], [`explore_standin::OfflineExplorePlanner`]
//! — plus [`frontier::FrontierPlanner`], classic nearest-frontier
//! exploration: the baseline of the evaluation and the watchdog's local
//! fallback. They use what the simulator renders (the label buffer of each
//! panorama view: a perfect detector) in place of a VLM's eyes and
//! [`prior::SemanticPrior`] in place of its common sense;
//! [`label_perception::LabelBufferPerception`] is the simulator's
//! perception stage on the same label buffer.
//! [`summarize_feedback`] stands in for the final-grounding call (seed 004).

pub mod candidates_standin;
pub mod explore_standin;
pub mod frontier;
pub mod grounding_standin;
pub mod label_perception;
pub mod objectnav_standin;
pub mod prior;
pub mod scene_standin;
pub mod vlm_noise;

pub use candidates_standin::OfflineCandidatePlanner;
pub use explore_standin::OfflineExplorePlanner;
pub use frontier::FrontierPlanner;
pub use grounding_standin::summarize_feedback;
pub use label_perception::LabelBufferPerception;
pub use objectnav_standin::{OfflineObjectNavConfig, OfflineObjectNavPlanner};
pub use prior::SemanticPrior;
pub use scene_standin::OfflineSceneAnalyzer;
pub use vlm_noise::VlmNoise;
