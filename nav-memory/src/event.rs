//! The inputs and outputs of one memory update step.

use crate::graph::{AnchorId, AnchorReason, PlaceId};
use serde::{Deserialize, Serialize};

/// What the scene analyzer reported for the current view (on the steps
/// [`SpatialMemory::scene_trigger`](crate::SpatialMemory::scene_trigger)
/// names, e.g. every `place_update_period` steps).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SceneObservation {
    /// The scene type as the VLM wrote it (normalized by the memory).
    pub place_type: String,
    /// Objects and structural cues visible ("sofa", "sink").
    #[serde(default)]
    pub objects: Vec<String>,
    /// A one- or two-sentence description (kept short).
    #[serde(default)]
    pub description: String,
}

impl SceneObservation {
    /// An observation with a scene type only.
    pub fn new(place_type: impl Into<String>) -> Self {
        Self { place_type: place_type.into(), ..Self::default() }
    }

    /// Adds objects.
    pub fn with_objects<I, S>(mut self, objects: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.objects.extend(objects.into_iter().map(Into::into));
        self
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }
}

/// Per-step flags from the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StepFlags {
    /// A branch point (door, junction) was detected at this step: creates an
    /// anchor if the robot moved since the last one.
    pub branch: bool,
    /// The simulator or robot reported that the action did not move the
    /// robot (collision). Dead reckoning skips it, so a robot pinned against
    /// a wall does not create anchors it never reached. Without this flag
    /// dead reckoning is purely action-based.
    pub collided: bool,
    /// The robot just passed through a doorway (the LiDAR narrowed, then
    /// opened; `nav_core::doorway`): a likely room change. Creates a branch
    /// anchor like [`StepFlags::branch`] and makes a scene analysis due
    /// (see [`SpatialMemory::scene_trigger`](crate::SpatialMemory::scene_trigger)).
    pub doorway: bool,
}

/// Why a scene analysis runs at a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SceneTrigger {
    /// The episode's first step: name the starting place.
    First,
    /// `place_update_period` steps passed since the last analysis.
    Periodic,
    /// The robot just passed through a doorway.
    Doorway,
    /// A different place type is pending: look again once it has held for
    /// `dwell_k` steps, to confirm or drop the switch.
    Confirm,
}

/// Something the memory did or detected during a step, for the step log.
/// Serialized with an `event` tag, snake_case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum MemoryEvent {
    /// A new anchor.
    AnchorCreated {
        /// The new anchor.
        anchor: AnchorId,
        /// Its place.
        place: PlaceId,
        /// The rule that created it.
        reason: AnchorReason,
    },
    /// The first scene label named the initial place (no new place).
    PlaceNamed {
        /// The initial place.
        place: PlaceId,
        /// Its normalized type.
        place_type: String,
    },
    /// A new place after a confirmed switch.
    PlaceCreated {
        /// The new place.
        place: PlaceId,
        /// Its normalized type.
        place_type: String,
    },
    /// The robot's current place changed.
    PlaceSwitched {
        /// The place left.
        from: PlaceId,
        /// The place entered.
        to: PlaceId,
    },
    /// A place change completed A, B, A, B (counted once per completing
    /// change).
    Ababa {
        /// Place type A (left twice; the one to avoid).
        a: String,
        /// Place type B (current).
        b: String,
    },
    /// The STUCK condition became true (rising edge: a long stay is one
    /// event).
    Stuck {
        /// The current place.
        place: PlaceId,
        /// The current anchor.
        anchor: AnchorId,
    },
    /// The scene analyzer ran at this step (every place update is logged,
    /// confirmed or not).
    SceneAnalyzed {
        /// Why it ran.
        trigger: SceneTrigger,
        /// The analyzer's label as written (empty when it could not tell).
        label: String,
        /// The normalized place type (empty when there was no usable label).
        place_type: String,
        /// The place type waiting for confirmation after this analysis.
        pending: Option<String>,
        /// Steps the pending type has held so far (first sighting included).
        dwell_steps: u32,
        /// True when this analysis confirmed a switch to a new place.
        confirmed: bool,
    },
    /// The robot entered an anchor cluster explored earlier (rising edge).
    Revisit {
        /// The current anchor.
        anchor: AnchorId,
        /// The older same-type anchors within r, nearest first.
        hints: Vec<AnchorId>,
    },
}

/// Counts of what happened in an episode (for the run summary).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryCounters {
    /// ABABA events.
    pub ababa: u32,
    /// STUCK events.
    pub stuck: u32,
    /// REVISIT events.
    pub revisit: u32,
    /// Confirmed place switches.
    pub place_switches: u32,
    /// Scene labels that differed from the current place but were not (yet)
    /// confirmed by the dwell filter.
    pub unconfirmed_labels: u32,
    /// Scene analyses run (every trigger).
    #[serde(default)]
    pub scene_analyses: u32,
}
