//! # nav-memory
//!
//! What the robot remembers, deterministic, serializable and bounded.
//!
//! - [`SpatialMemory`] — the Place–Anchor memory of the ObjectNav loop: action-based
//!   dead reckoning, an [`AnchorGraph`] of [`Anchor`]s, [`Place`]s with a
//!   dwell filter, localization hints, the [`DcQueue`] of [`DcRecord`]s and
//!   the rule-based [`AvoidHint`]. [`SpatialMemory::observe_step`] is the one
//!   per-step update and returns [`MemoryEvent`]s for the step log;
//!   [`SpatialMemory::push_dc`] records a planner call;
//!   [`SpatialMemory::context`] builds the [`NavigationContext`] (compact
//!   text for prompts, JSON for logs). Snapshots are atomic JSON files.
//! - [`ExplorationMemory`] — rooms, frontiers, dead ends and recent actions
//!   for LLM-driven exploration (the explore protocol), with its prompt block.
//! - [`grounding`] — grounding knowledge: per-step feedback, final
//!   grounding, files and merging.
//! - [`normalize_scene_type`] — the scene-type normalization every part
//!   shares.
//!
//! ```
//! use nav_core::action::Action;
//! use nav_memory::{MemoryConfig, SceneObservation, SpatialMemory, StepFlags};
//!
//! let mut memory = SpatialMemory::new(MemoryConfig::default())?;
//! for step in 0..30 {
//!     // The scene analyzer runs when the memory says: the first step, every 20 steps after
//!     // the latest analysis, right after a doorway, and to confirm a pending switch.
//!     let scene = memory.scene_due().then(|| {
//!         SceneObservation::new(if step < 20 { "Hallway" } else { "kitchen" }).with_objects(["stove"])
//!     });
//!     let action = if step % 7 == 6 { Action::TurnLeft } else { Action::Forward };
//!     let _events = memory.observe_step(action, scene, StepFlags::default());
//! }
//! // "kitchen", first seen at step 21, held k = 3 steps at the confirming look (step 23).
//! assert_eq!(memory.current_place().place_type, "kitchen");
//! assert_eq!(memory.places().len(), 2);
//!
//! let record = memory.push_dc(false, "kitchen", "a stove is visible ahead");
//! assert_eq!(record.idx, 1);
//! let text = memory.context(None).to_text();
//! assert!(text.contains("Place: P1 kitchen"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Design choices
//!
//! - **Dwell** ("the same scene type for the last k steps"): a
//!   label different from the current place becomes a pending switch; the
//!   memory asks for one more look once it has held k = 3 steps (its first
//!   sighting included), and that look confirms it (a new place) or drops
//!   it. A label equal to the current place resets the candidate; a single
//!   noisy label never splits a place. Scene analyses run on a
//!   20-step cadence (restarted by every analysis) and also right after a
//!   doorway crossing (`StepFlags::doorway`), so a switch follows a room
//!   change within a few steps; each analysis is logged
//!   (`MemoryEvent::SceneAnalyzed`). The first label of an episode names the initial place
//!   (before it the type is `unknown`). Empty or `unknown` labels carry no
//!   evidence and are ignored by the filter. Objects seen while a switch is
//!   pending go to the new place if it is confirmed, else to the current one.
//! - **Places are never reused** (a switch makes a new place; nothing is
//!   ever merged): place ids only grow. ABABA is therefore tested over the
//!   collapsed sequence of place *types* (kitchen, corridor, kitchen,
//!   corridor); over ids it could never fire.
//! - **STUCK** granularity: see [`StuckGranularity`] (anchors by default,
//!   the literal per-place reading available). Events fire on the rising
//!   edge.
//! - **REVISIT** (added rule, see [`hint`]): the current anchor has ≥ 2
//!   localization hints older than the last K anchors.
//! - **Anchors**: "rotation then forward" compares the heading with
//!   the heading at the last anchor (a left turn undone by a right turn is no
//!   rotation); a branch flag creates an anchor only if the robot moved since
//!   the last one; a confirmed switch always creates the new place's first
//!   anchor (and no second anchor that step). [`StepFlags::collided`] lets a
//!   simulator report actions that did not move the robot.
//! - **Localization hints** skip places without a named type, and are
//!   never used to merge anything. [`SpatialMemory::localization_hints`]
//!   returns all of them; the Navigation Context lists only those older than
//!   the last K anchors (the recent ones are the robot's own trail).
//! - **Navigation Context** bounds: see [`ContextLimits`]; measured at 276
//!   o200k tokens after 1,000 steps and at most 338 at any step of a
//!   1,000-step episode with long VLM strings (`tests/context_tokens.rs`).
//! - **Grounding**: see [`grounding`] for the merge, render and file rules
//!   and what `--format txt|json|both` means.
//!
//! Dependencies: `nav-core` (poses, actions, dead reckoning, the ABABA and
//! STUCK tests), `serde`/`serde_json` (snapshots, logs, grounding files;
//! `float_roundtrip` so snapshots reload bit-exact), `thiserror` (the error
//! enum), `tracing` (warnings for skipped grounding files), `tempfile`
//! (atomic writes: temporary file in the target directory, then rename).
#![deny(missing_docs)]

pub mod config;
pub mod context;
pub mod dc;
pub mod error;
pub mod event;
pub mod exploration;
pub mod graph;
pub mod grounding;
pub mod hint;
pub mod snapshot;
pub mod spatial;
pub mod text;
pub mod tried;

pub use config::{ContextLimits, MemoryConfig, StuckGranularity};
pub use context::{NavigationContext, PlaceBrief, PlaceSummary};
pub use dc::{DcQueue, DcRecord};
pub use error::MemoryError;
pub use event::{MemoryCounters, MemoryEvent, SceneObservation, SceneTrigger, StepFlags};
pub use exploration::{ActionRecord, DeadEnd, Discovery, ExplorationMemory, Frontier, PromptParts, Room};
pub use graph::{Anchor, AnchorGraph, AnchorId, AnchorReason, Place, PlaceId};
pub use hint::{AvoidHint, Pattern};
pub use snapshot::write_atomic;
pub use spatial::{LocalizationHint, SpatialMemory};
pub use text::normalize_scene_type;
pub use tried::{TriedHeading, TriedOutcome};
