//! [`SpatialMemory`]: the Place–Anchor memory of one ObjectNav episode
//! (places, anchors, localization hints, the Discovered-Context queue).

use crate::config::{MemoryConfig, StuckGranularity};
use crate::dc::{DcQueue, DcRecord};
use crate::error::MemoryError;
use crate::event::{MemoryCounters, MemoryEvent, SceneObservation, SceneTrigger, StepFlags};
use crate::graph::{Anchor, AnchorGraph, AnchorId, AnchorReason, Place, PlaceId};
use crate::hint::{AvoidHint, Pattern};
use crate::text::{clip_chars, normalize_label, normalize_scene_type};
use nav_core::action::{Action, DeadReckoning};
use nav_core::geometry::{Point2, Pose2, angle_diff_abs};
use nav_core::metrics::{is_ababa, is_stuck};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, VecDeque};

/// Headings closer than this (radians) count as unchanged.
const HEADING_EPS: f64 = 1e-6;
/// Collapsed place-sequence entries kept for the ABABA test.
const PLACE_SEQUENCE_LEN: usize = 8;

/// An anchor near the current one in a place of the same type: "maybe the
/// same space". A hint only; nodes are never merged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LocalizationHint {
    /// The nearby anchor.
    pub anchor: AnchorId,
    /// Its place.
    pub place: PlaceId,
    /// Distance from the current anchor, metres.
    pub distance_m: f64,
}

/// The pending place switch: a label that differs from the current place,
/// first seen at step `since` and seen by every analysis after it (`count`
/// of them), with what was observed meanwhile; `blind_looks` counts the
/// confirming looks that came back without a label.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Dwell {
    candidate: Option<String>,
    count: u32,
    #[serde(default)]
    since: u64,
    objects: BTreeSet<String>,
    description: Option<String>,
    #[serde(default)]
    blind_looks: u32,
}

/// Confirming looks at a pending switch that may come back without a
/// label before the memory stops asking for one: the candidate then stays
/// pending and the next periodic or doorway analysis settles it.
const MAX_BLIND_CONFIRMS: u32 = 1;

/// The Place–Anchor memory of one episode. Owns the dead reckoning, the
/// anchor graph, the places, the dwell filter, the DC queue and the pattern
/// state. [`SpatialMemory::observe_step`] is the only per-step update.
///
/// ```
/// use nav_core::action::Action;
/// use nav_memory::{MemoryConfig, SceneObservation, SpatialMemory, StepFlags};
/// let mut m = SpatialMemory::new(MemoryConfig::default())?;
/// m.observe_step(Action::Forward, Some(SceneObservation::new("Hallway")), StepFlags::default());
/// m.observe_step(Action::Forward, None, StepFlags::default()); // 2 forwards → anchor
/// assert_eq!(m.current_place().place_type, "corridor");
/// assert_eq!(m.anchors().len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpatialMemory {
    config: MemoryConfig,
    dead_reckoning: DeadReckoning,
    anchors: AnchorGraph,
    places: Vec<Place>,
    current_place: PlaceId,
    current_anchor: AnchorId,
    steps: u64,
    named: bool,
    dwell: Dwell,
    forward_since_anchor: u32,
    anchor_yaw: f64,
    stuck_keys: VecDeque<u64>,
    stuck_now: bool,
    revisit_now: bool,
    place_sequence: VecDeque<(PlaceId, String)>,
    dc: DcQueue,
    counters: MemoryCounters,
    /// The step of the latest scene analysis.
    #[serde(default)]
    last_scene_step: Option<u64>,
    /// Where the latest scene analysis ran (dead reckoning).
    #[serde(default)]
    last_scene_at: Option<Point2>,
    /// Where the planner sent the robot, newest last (bounded).
    #[serde(default)]
    tried: VecDeque<crate::tried::TriedHeading>,
}

impl SpatialMemory {
    /// A fresh memory at the start pose (0, 0, 0): place `P0` of type
    /// `unknown` with anchor `A0`. Fails on an invalid config.
    pub fn new(config: MemoryConfig) -> Result<Self, MemoryError> {
        config.validate()?;
        let mut anchors = AnchorGraph::new(config.localization_radius_m);
        let a0 = anchors.add(Pose2::origin(), PlaceId(0), 0, AnchorReason::Start, None);
        let p0 = Place {
            id: PlaceId(0),
            place_type: Place::UNKNOWN.to_string(),
            objects: BTreeSet::new(),
            semantic_description: String::new(),
            anchors: vec![a0],
            entered_step: 0,
        };
        Ok(Self {
            dead_reckoning: DeadReckoning::new(config.step),
            anchors,
            places: vec![p0],
            current_place: PlaceId(0),
            current_anchor: a0,
            steps: 0,
            named: false,
            dwell: Dwell::default(),
            forward_since_anchor: 0,
            anchor_yaw: 0.0,
            stuck_keys: VecDeque::with_capacity(config.stuck_window),
            stuck_now: false,
            revisit_now: false,
            place_sequence: VecDeque::from([(PlaceId(0), Place::UNKNOWN.to_string())]),
            dc: DcQueue::new(config.dc_capacity),
            counters: MemoryCounters::default(),
            last_scene_step: None,
            last_scene_at: None,
            tried: VecDeque::new(),
            config,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &MemoryConfig {
        &self.config
    }

    /// Steps observed so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Whether the loop should run the scene analyzer for the coming step
    /// (without a doorway crossing; see [`Self::scene_trigger`]).
    pub fn scene_due(&self) -> bool {
        self.scene_trigger(false).is_some()
    }

    /// Why the loop should run the scene analyzer for the coming step, if
    /// it should (`doorway`: the robot just passed through one):
    ///
    /// 1. [`SceneTrigger::First`]: the first step, to name the start place;
    /// 2. [`SceneTrigger::Confirm`]: a different place type is pending and
    ///    has held for `dwell_k` steps counting its first sighting — one
    ///    more look confirms the switch or drops it (the dwell filter,
    ///    counted in steps). A look that names nothing (a bare wall) is
    ///    retried once, `dwell_k − 1` steps later; after that the switch stays
    ///    pending for the next periodic or doorway analysis instead of
    ///    costing an analysis every step;
    /// 3. [`SceneTrigger::Doorway`]: a likely room change, once the robot
    ///    is `doorway_min_move_m` from where the latest analysis ran;
    /// 4. [`SceneTrigger::Periodic`]: `place_update_period` steps since the
    ///    latest analysis (the regular cadence, restarted by every analysis;
    ///    a quarter of it while no label has named the start place yet).
    pub fn scene_trigger(&self, doorway: bool) -> Option<SceneTrigger> {
        let step = self.steps + 1;
        let Some(last) = self.last_scene_step else { return Some(SceneTrigger::First) };
        let k = u64::from(self.config.dwell_k);
        if self.dwell.candidate.is_some()
            && self.dwell.blind_looks <= MAX_BLIND_CONFIRMS
            && step + 1 >= (self.dwell.since + k).max(last + k)
        {
            return Some(SceneTrigger::Confirm);
        }
        let moved =
            self.last_scene_at.is_none_or(|at| at.distance(self.pose().position()) >= self.config.doorway_min_move_m);
        if doorway && moved {
            return Some(SceneTrigger::Doorway);
        }
        // until a label names the start place, look again four times as often
        let period = u64::from(self.config.place_update_period);
        let period = if self.named { period } else { period.div_ceil(4) };
        (step >= last + period).then_some(SceneTrigger::Periodic)
    }

    /// The dead-reckoned pose.
    pub fn pose(&self) -> Pose2 {
        self.dead_reckoning.pose()
    }

    /// The anchor graph.
    pub fn anchors(&self) -> &AnchorGraph {
        &self.anchors
    }

    /// All places in creation order (the id is the index).
    pub fn places(&self) -> &[Place] {
        &self.places
    }

    /// The place with this id.
    pub fn place(&self, id: PlaceId) -> Option<&Place> {
        self.places.get(id.0 as usize)
    }

    /// The place the robot is in.
    pub fn current_place(&self) -> &Place {
        &self.places[self.current_place.0 as usize]
    }

    /// The current place's id.
    pub fn current_place_id(&self) -> PlaceId {
        self.current_place
    }

    /// The latest anchor (the robot's topological position).
    pub fn current_anchor(&self) -> &Anchor {
        &self.anchors.anchors()[self.current_anchor.0 as usize]
    }

    /// The current anchor's id.
    pub fn current_anchor_id(&self) -> AnchorId {
        self.current_anchor
    }

    /// The Discovered-Context queue.
    pub fn dc_queue(&self) -> &DcQueue {
        &self.dc
    }

    /// Event counts so far.
    pub fn counters(&self) -> MemoryCounters {
        self.counters
    }

    /// The scene type waiting for confirmation and how many steps it has
    /// held (its first sighting included), if any.
    pub fn pending_switch(&self) -> Option<(&str, u32)> {
        self.dwell.candidate.as_deref().map(|c| (c, self.dwell_steps(self.steps)))
    }

    /// Steps the pending type has held at `step`, its first sighting included.
    fn dwell_steps(&self, step: u64) -> u32 {
        if self.dwell.candidate.is_none() {
            return 0;
        }
        u32::try_from((step + 1).saturating_sub(self.dwell.since)).unwrap_or(u32::MAX)
    }

    /// Whether the STUCK condition holds now.
    pub fn is_stuck(&self) -> bool {
        self.stuck_now
    }

    /// Updates the memory with one executed step. `scene` is the scene
    /// analyzer's output when it ran this step (see
    /// [`scene_trigger`](Self::scene_trigger); an analyzer that could not
    /// tell passes an observation with an empty `place_type`), otherwise
    /// `None`. Returns what happened, for the step log.
    pub fn observe_step(
        &mut self,
        action: Action,
        scene: Option<SceneObservation>,
        flags: StepFlags,
    ) -> Vec<MemoryEvent> {
        let mut events = Vec::new();
        let trigger = self.scene_trigger(flags.doorway).unwrap_or(SceneTrigger::Periodic);
        self.steps += 1;

        // 1. Dead reckoning and the motion-based anchor rules (§7.2).
        let mut reason = None;
        if !flags.collided {
            let pose = self.dead_reckoning.apply(action);
            if action == Action::Forward {
                self.forward_since_anchor += 1;
                if angle_diff_abs(pose.yaw, self.anchor_yaw) > HEADING_EPS {
                    reason = Some(AnchorReason::Turn);
                } else if self.forward_since_anchor >= self.config.anchor_forward_steps {
                    reason = Some(AnchorReason::Distance);
                }
            }
        }
        if reason.is_none() && (flags.branch || flags.doorway) && self.forward_since_anchor > 0 {
            reason = Some(AnchorReason::Branch);
        }

        // 2. Place update with the dwell filter (§7.1).
        let switched = match scene {
            Some(obs) => {
                self.counters.scene_analyses += 1;
                self.last_scene_step = Some(self.steps);
                self.last_scene_at = Some(self.pose().position());
                let label = obs.place_type.clone();
                let confirmed = self.observe_scene(obs, &mut events);
                events.push(MemoryEvent::SceneAnalyzed {
                    trigger,
                    place_type: normalize_scene_type(&label),
                    label,
                    pending: self.dwell.candidate.clone(),
                    dwell_steps: self.dwell_steps(self.steps),
                    confirmed,
                });
                confirmed
            }
            None => false,
        };
        if switched {
            self.create_anchor(AnchorReason::NewPlace, &mut events);
        } else if let Some(reason) = reason {
            self.create_anchor(reason, &mut events);
        }

        // 3. STUCK over the last W steps (rising edge).
        let key = match self.config.stuck_granularity {
            StuckGranularity::Place => u64::from(self.current_place.0),
            StuckGranularity::Anchor => u64::from(self.current_anchor.0),
        };
        if self.stuck_keys.len() >= self.config.stuck_window {
            self.stuck_keys.pop_front();
        }
        self.stuck_keys.push_back(key);
        let stuck = is_stuck(self.stuck_keys.make_contiguous(), self.config.stuck_window);
        if stuck && !self.stuck_now {
            self.counters.stuck += 1;
            events.push(MemoryEvent::Stuck { place: self.current_place, anchor: self.current_anchor });
        }
        self.stuck_now = stuck;
        events
    }

    /// Applies one scene label; returns true when a place switch was
    /// confirmed (the caller then creates the new place's first anchor).
    fn observe_scene(&mut self, obs: SceneObservation, events: &mut Vec<MemoryEvent>) -> bool {
        let label = normalize_scene_type(&obs.place_type);
        let objects: Vec<String> = obs.objects.iter().filter_map(|o| normalize_label(o)).collect();
        let description = clip_chars(&obs.description, Place::MAX_DESCRIPTION_CHARS);
        let current = self.current_place.0 as usize;

        if label.is_empty() || label == Place::UNKNOWN {
            // No usable label ("", "?!", "Unknown."): keep what was seen, in
            // the current place; a pending switch stays pending.
            if self.dwell.candidate.is_some() {
                self.dwell.blind_looks += 1;
            }
            self.merge_into_current(&objects, description);
            return false;
        }
        if !self.named {
            // The first label of the episode names the initial place.
            self.named = true;
            self.places[current].place_type = label.clone();
            if let Some(last) = self.place_sequence.back_mut() {
                last.1 = label.clone();
            }
            self.merge_into_current(&objects, description);
            events.push(MemoryEvent::PlaceNamed { place: self.current_place, place_type: label });
            self.update_revisit(events);
            return false;
        }
        if label == self.places[current].place_type {
            // Still here: a pending candidate was noise; keep what it saw.
            let pending = std::mem::take(&mut self.dwell);
            let pending_objects: Vec<String> = pending.objects.into_iter().collect();
            self.merge_into_current(&pending_objects, String::new());
            self.merge_into_current(&objects, description);
            return false;
        }
        if self.dwell.candidate.as_deref() == Some(label.as_str()) {
            self.dwell.count += 1;
        } else {
            let pending = std::mem::take(&mut self.dwell);
            let pending_objects: Vec<String> = pending.objects.into_iter().collect();
            self.merge_into_current(&pending_objects, String::new());
            self.dwell.candidate = Some(label.clone());
            self.dwell.count = 1;
            self.dwell.since = self.steps;
        }
        for o in objects {
            if self.dwell.objects.len() < Place::MAX_OBJECTS {
                self.dwell.objects.insert(o);
            }
        }
        if !description.is_empty() {
            self.dwell.description = Some(description);
        }
        // confirmed once the type has held for k steps (seed 000 §7.1: "the
        // same scene_type for the last k steps"), seen at both ends
        if self.dwell_steps(self.steps) < self.config.dwell_k {
            self.counters.unconfirmed_labels += 1;
            return false;
        }

        // Confirmed: a new place (§7.1 "전환 시: 새 Place 생성").
        let pending = std::mem::take(&mut self.dwell);
        let from = self.current_place;
        let id = PlaceId(self.places.len() as u32);
        self.places.push(Place {
            id,
            place_type: label.clone(),
            objects: pending.objects,
            semantic_description: pending.description.unwrap_or_default(),
            anchors: Vec::new(),
            entered_step: self.steps,
        });
        self.current_place = id;
        self.counters.place_switches += 1;
        events.push(MemoryEvent::PlaceCreated { place: id, place_type: label.clone() });
        events.push(MemoryEvent::PlaceSwitched { from, to: id });

        // ABABA over the collapsed sequence of place types.
        if self.place_sequence.len() >= PLACE_SEQUENCE_LEN {
            self.place_sequence.pop_front();
        }
        self.place_sequence.push_back((id, label));
        if let Some((a, b)) = self.ababa_pair() {
            self.counters.ababa += 1;
            events.push(MemoryEvent::Ababa { a, b });
        }
        true
    }

    fn merge_into_current(&mut self, objects: &[String], description: String) {
        let place = &mut self.places[self.current_place.0 as usize];
        place.add_objects(objects);
        if !description.is_empty() {
            place.semantic_description = description;
        }
    }

    fn create_anchor(&mut self, reason: AnchorReason, events: &mut Vec<MemoryEvent>) {
        let pose = self.dead_reckoning.pose();
        let id = self.anchors.add(pose, self.current_place, self.steps, reason, Some(self.current_anchor));
        self.places[self.current_place.0 as usize].anchors.push(id);
        self.current_anchor = id;
        self.forward_since_anchor = 0;
        self.anchor_yaw = pose.yaw;
        events.push(MemoryEvent::AnchorCreated { anchor: id, place: self.current_place, reason });
        self.update_revisit(events);
    }

    /// The (A, B) of an active ABABA pattern over the last four places.
    fn ababa_pair(&self) -> Option<(String, String)> {
        let n = self.place_sequence.len();
        if n < 4 {
            return None;
        }
        let last4: Vec<&str> = self.place_sequence.range(n - 4..).map(|(_, t)| t.as_str()).collect();
        // Unnamed places carry no evidence of oscillation.
        if last4.contains(&Place::UNKNOWN) || !is_ababa(&last4) {
            return None;
        }
        Some((last4[2].to_string(), last4[3].to_string()))
    }

    /// Anchors within r of the current anchor whose place has the same
    /// (named) type, nearest first. Hints only.
    pub fn localization_hints(&self) -> Vec<LocalizationHint> {
        let current = self.current_anchor();
        let Some(place) = self.place(current.place_id) else { return Vec::new() };
        if !place.is_named() {
            return Vec::new();
        }
        self.anchors
            .within(current.pose.position(), self.config.localization_radius_m)
            .into_iter()
            .filter(|(id, _)| *id != current.id)
            .filter_map(|(id, d)| {
                let a = self.anchors.get(id)?;
                let p = self.place(a.place_id)?;
                (p.place_type == place.place_type).then_some(LocalizationHint {
                    anchor: id,
                    place: a.place_id,
                    distance_m: d,
                })
            })
            .collect()
    }

    /// True when `id` is older than the last K anchors (K =
    /// `context.recent_anchors`).
    pub fn is_old_anchor(&self, id: AnchorId) -> bool {
        id.0 as usize + self.config.context.recent_anchors <= self.current_anchor.0 as usize
    }

    /// The REVISIT rule: localization hints older than the recent anchors.
    fn revisit_hints(&self) -> Vec<AnchorId> {
        self.localization_hints().into_iter().map(|h| h.anchor).filter(|a| self.is_old_anchor(*a)).collect()
    }

    fn update_revisit(&mut self, events: &mut Vec<MemoryEvent>) {
        let hints = self.revisit_hints();
        let now = hints.len() >= self.config.revisit_min_hints;
        if now && !self.revisit_now {
            self.counters.revisit += 1;
            events.push(MemoryEvent::Revisit { anchor: self.current_anchor, hints });
        }
        self.revisit_now = now;
    }

    /// The patterns active now (STUCK, ABABA, REVISIT) and what to avoid
    /// (format in [`crate::hint`]). `None` when nothing is active.
    pub fn avoid_hint(&self) -> Option<AvoidHint> {
        let mut patterns = Vec::new();
        let mut avoid = Vec::new();
        if self.stuck_now {
            patterns.push(Pattern::Stuck);
        }
        if let Some((a, _b)) = self.ababa_pair() {
            patterns.push(Pattern::Ababa);
            avoid.push(a);
        }
        if self.revisit_now {
            patterns.push(Pattern::Revisit);
            avoid.push(self.current_place().place_type.clone());
        }
        AvoidHint::new(patterns, avoid, self.config.context.type_chars)
    }

    /// Records where a planner decision sends the robot: `angle_deg`
    /// relative to the current heading (positive = left). The previous
    /// decision's outcome (distance moved, place reached) is filled in now.
    /// The Navigation Context lists headings tried near the robot.
    pub fn note_heading(&mut self, angle_deg: f64) {
        let pose = self.pose();
        let here = pose.position();
        let (place, place_type) = (self.current_place, self.current_place().place_type.clone());
        if let Some(last) = self.tried.back_mut().filter(|t| t.outcome.is_none()) {
            last.outcome = Some(crate::tried::TriedOutcome { moved_m: last.from.distance(here), place, place_type });
        }
        if !angle_deg.is_finite() {
            return;
        }
        if self.tried.len() >= crate::tried::MAX_TRIED {
            self.tried.pop_front();
        }
        let heading = nav_core::geometry::normalize_angle(pose.yaw + angle_deg.to_radians());
        self.tried.push_back(crate::tried::TriedHeading {
            step: self.steps,
            from: here,
            heading,
            place,
            outcome: None,
        });
    }

    /// The planner decisions' headings, oldest first (at most
    /// [`crate::tried::MAX_TRIED`]).
    pub fn tried_headings(
        &self,
    ) -> impl DoubleEndedIterator<Item = &crate::tried::TriedHeading> + ExactSizeIterator + '_ {
        self.tried.iter()
    }

    /// Records one planner call: pushes a DC record
    /// with the rule-based `avoid_hint` of this moment and returns it.
    pub fn push_dc(&mut self, goal_flag: bool, goal_scene_type: &str, why: &str) -> &DcRecord {
        let hint = self.avoid_hint().map(|h| h.to_string());
        self.dc.push(goal_flag, goal_scene_type, why, hint)
    }

    /// Checks every cross-reference (used after loading a snapshot).
    pub fn validate(&self) -> Result<(), MemoryError> {
        let bad = |m: String| Err(MemoryError::Inconsistent(m));
        self.config.validate()?;
        self.anchors.validate().map_err(MemoryError::Inconsistent)?;
        self.dc.validate().map_err(MemoryError::Inconsistent)?;
        if self.dc.capacity() != self.config.dc_capacity {
            return bad(format!(
                "DC queue capacity {} differs from dc_capacity {}",
                self.dc.capacity(),
                self.config.dc_capacity
            ));
        }
        if self.anchors.is_empty() || self.places.is_empty() {
            return bad("a memory has at least one place and one anchor".into());
        }
        for (i, p) in self.places.iter().enumerate() {
            if p.id.0 as usize != i {
                return bad(format!("place at position {i} has id {}", p.id));
            }
            for a in &p.anchors {
                match self.anchors.get(*a) {
                    Some(anchor) if anchor.place_id == p.id => {}
                    Some(anchor) => {
                        return bad(format!("place {} lists {a}, which belongs to {}", p.id, anchor.place_id));
                    }
                    None => return bad(format!("place {} lists missing anchor {a}", p.id)),
                }
            }
        }
        for a in self.anchors.anchors() {
            match self.place(a.place_id) {
                Some(p) if p.anchors.contains(&a.id) => {}
                Some(p) => return bad(format!("anchor {} is missing from place {}", a.id, p.id)),
                None => return bad(format!("anchor {} belongs to missing place {}", a.id, a.place_id)),
            }
        }
        if self.current_place.0 as usize + 1 != self.places.len() {
            return bad(format!("current place {} is not the newest place", self.current_place));
        }
        if self.current_anchor.0 as usize + 1 != self.anchors.len() {
            return bad(format!("current anchor {} is not the newest anchor", self.current_anchor));
        }
        if self.current_anchor().place_id != self.current_place {
            return bad(format!(
                "current anchor {} is not in current place {}",
                self.current_anchor, self.current_place
            ));
        }
        if self.stuck_keys.len() > self.config.stuck_window || self.stuck_keys.len() as u64 > self.steps {
            return bad(format!("STUCK window holds {} entries", self.stuck_keys.len()));
        }
        if self.place_sequence.is_empty() || self.place_sequence.len() > PLACE_SEQUENCE_LEN {
            return bad(format!("place sequence holds {} entries", self.place_sequence.len()));
        }
        if !self.anchor_yaw.is_finite() {
            return bad("anchor heading is not finite".into());
        }
        Ok(())
    }
}
