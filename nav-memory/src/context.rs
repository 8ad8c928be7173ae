//! The Navigation Context (seed 000 §9): one bounded snapshot of the memory,
//! serialized as compact text for prompts and as JSON for logs.
//!
//! Every list has a fixed cap and every free-text string a fixed length
//! ([`ContextLimits`](crate::ContextLimits)), so the text does not grow with
//! the episode: with the defaults it stays under 350 o200k tokens after 1,000
//! steps (measured in `tests/context_tokens.rs`, recorded in
//! docs/BENCHMARKS.md).

use crate::dc::DcRecord;
use crate::error::MemoryError;
use crate::graph::{AnchorId, PlaceId};
use crate::spatial::{LocalizationHint, SpatialMemory};
use crate::text::clip_chars;
use nav_core::geometry::Pose2;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The current place, summarized.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlaceSummary {
    /// Place id.
    pub id: PlaceId,
    /// Normalized type (clipped).
    pub place_type: String,
    /// The first objects in sorted order (capped).
    pub objects: Vec<String>,
    /// How many more objects the place holds.
    pub more_objects: usize,
    /// The short description (clipped).
    pub description: String,
}

/// A place in the recent-places list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlaceBrief {
    /// Place id.
    pub id: PlaceId,
    /// Normalized type (clipped).
    pub place_type: String,
}

/// What the planner sees of the memory (seed 000 §9.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NavigationContext {
    /// Steps observed so far.
    pub step: u64,
    /// Dead-reckoned pose (yaw in radians; the text shows degrees).
    pub pose: Pose2,
    /// The current place.
    pub place: PlaceSummary,
    /// The last M places, oldest → newest; the current place is last.
    pub recent_places: Vec<PlaceBrief>,
    /// The current anchor.
    pub anchor: AnchorId,
    /// The current anchor's neighbours.
    pub neighbors: Vec<AnchorId>,
    /// The last K anchors, oldest → newest; the current anchor is last.
    pub recent_anchors: Vec<AnchorId>,
    /// Localization candidates: same-type anchors within r that are older
    /// than the last K anchors, nearest first (capped; hints only).
    pub hints: Vec<LocalizationHint>,
    /// The DC queue, idx 1 → N (`why` clipped).
    pub dc_queue: Vec<DcRecord>,
    /// The avoid hint active now, if any.
    pub avoid_hint: Option<String>,
    /// The grounding section, if one was given (clipped).
    pub grounding: Option<String>,
}

/// Neighbours listed at most (the chain has two; kept as a cap anyway).
const MAX_NEIGHBORS: usize = 4;

impl NavigationContext {
    /// Builds the context of `memory`, applying the caps of its config.
    pub fn from_memory(memory: &SpatialMemory, grounding: Option<&str>) -> Self {
        let limits = &memory.config().context;
        let place = memory.current_place();
        let anchor = memory.current_anchor();
        let places = memory.places();
        let m = limits.recent_places.min(places.len());
        let recent_places = places[places.len() - m..]
            .iter()
            .map(|p| PlaceBrief { id: p.id, place_type: clip_chars(&p.place_type, limits.type_chars) })
            .collect();
        let anchors = memory.anchors().anchors();
        let k = limits.recent_anchors.min(anchors.len());
        let recent_anchors = anchors[anchors.len() - k..].iter().map(|a| a.id).collect();
        // Hints among the last K anchors are the robot's own trail, already
        // listed under "recent"; only older ones say "you were here before".
        let mut hints: Vec<LocalizationHint> =
            memory.localization_hints().into_iter().filter(|h| memory.is_old_anchor(h.anchor)).collect();
        hints.truncate(limits.hints);
        let dc_queue = memory
            .dc_queue()
            .iter()
            .map(|r| DcRecord {
                goal_scene_type: clip_chars(&r.goal_scene_type, limits.type_chars),
                why: clip_chars(&r.why, limits.why_chars),
                ..r.clone()
            })
            .collect();
        let grounding = grounding.map(|g| clip_block(g.trim(), limits.grounding_chars)).filter(|g| !g.is_empty());
        Self {
            step: memory.steps(),
            pose: memory.pose(),
            place: PlaceSummary {
                id: place.id,
                place_type: clip_chars(&place.place_type, limits.type_chars),
                objects: place
                    .objects
                    .iter()
                    .take(limits.objects)
                    .map(|o| clip_chars(o, limits.object_chars))
                    .collect(),
                more_objects: place.objects.len().saturating_sub(limits.objects),
                description: clip_chars(&place.semantic_description, limits.description_chars),
            },
            recent_places,
            anchor: anchor.id,
            neighbors: anchor.neighbors.iter().copied().take(MAX_NEIGHBORS).collect(),
            recent_anchors,
            hints,
            dc_queue,
            avoid_hint: memory.avoid_hint().map(|h| h.to_string()),
            grounding,
        }
    }

    /// The compact text for the planner prompt.
    pub fn to_text(&self) -> String {
        let mut s = String::with_capacity(768);
        // `write!` into a String cannot fail; the results are ignored.
        let _ = writeln!(s, "NAVIGATION CONTEXT (step {})", self.step);
        let _ = writeln!(s, "Pose: ({:.2}, {:.2}) m, yaw {:.0}°", self.pose.x, self.pose.y, self.pose.yaw_deg());
        let _ = write!(s, "Place: {} {}", self.place.id, self.place.place_type);
        if !self.place.objects.is_empty() {
            let _ = write!(s, " | objects: {}", self.place.objects.join(", "));
            if self.place.more_objects > 0 {
                let _ = write!(s, " +{}", self.place.more_objects);
            }
        }
        if !self.place.description.is_empty() {
            let _ = write!(s, " | {}", self.place.description);
        }
        s.push('\n');
        s.push_str("Recent places (old→new):");
        for p in &self.recent_places {
            let _ = write!(s, " {} {},", p.id, p.place_type);
        }
        s.pop();
        s.push('\n');
        let _ = write!(s, "Anchor: {} | neighbors:", self.anchor);
        for n in &self.neighbors {
            let _ = write!(s, " {n}");
        }
        // The last K anchors are consecutive ids (anchors are created in
        // order and the current one is the newest): print them as a range.
        match (self.recent_anchors.first(), self.recent_anchors.last()) {
            (Some(first), Some(last)) if first != last => {
                let _ = write!(s, " | recent: {first}–{last}");
            }
            (Some(only), _) => {
                let _ = write!(s, " | recent: {only}");
            }
            _ => {}
        }
        s.push('\n');
        if !self.hints.is_empty() {
            // Grouped by place, places in order of their nearest hint.
            s.push_str("Same-type anchors seen before nearby (hints):");
            let mut places: Vec<PlaceId> = Vec::new();
            for h in &self.hints {
                if !places.contains(&h.place) {
                    places.push(h.place);
                }
            }
            for (i, p) in places.iter().enumerate() {
                let _ = write!(s, "{} {p}", if i == 0 { "" } else { ";" });
                for (j, h) in self.hints.iter().filter(|h| h.place == *p).enumerate() {
                    let _ = write!(s, "{} {} {:.1}m", if j == 0 { "" } else { "," }, h.anchor, h.distance_m);
                }
            }
            s.push('\n');
        }
        if self.dc_queue.is_empty() {
            s.push_str("Discovered context: none\n");
        } else {
            s.push_str("Discovered context (1=oldest):\n");
            for r in &self.dc_queue {
                let _ = write!(
                    s,
                    "{}. goal={} target={} why=\"{}\"",
                    r.idx,
                    if r.goal_flag { "yes" } else { "no" },
                    r.goal_scene_type,
                    r.why
                );
                if let Some(h) = &r.avoid_hint {
                    let _ = write!(s, " hint={h}");
                }
                s.push('\n');
            }
        }
        if let Some(h) = &self.avoid_hint {
            let _ = writeln!(s, "Avoid now: {h}");
        }
        if let Some(g) = &self.grounding {
            let _ = writeln!(s, "GROUNDING:\n{g}");
        }
        s
    }

    /// The JSON form for logs (one line).
    pub fn to_json(&self) -> Result<String, MemoryError> {
        serde_json::to_string(self).map_err(|source| MemoryError::Serialize { what: "navigation context", source })
    }
}

impl SpatialMemory {
    /// The Navigation Context of this moment, with an optional grounding
    /// section (seed 004 text, clipped to `context.grounding_chars`).
    pub fn context(&self, grounding: Option<&str>) -> NavigationContext {
        NavigationContext::from_memory(self, grounding)
    }
}

/// Clips a multi-line block to `max` characters, keeping line breaks and
/// marking a cut with `…`.
fn clip_block(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    let kept = out.trim_end().len();
    out.truncate(kept);
    if max > 0 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_clip_keeps_lines() {
        assert_eq!(clip_block("a\nb", 10), "a\nb");
        assert_eq!(clip_block("abc\ndef", 5), "abc…");
        assert_eq!(clip_block("abcdef", 0), "");
    }
}
