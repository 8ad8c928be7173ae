//! The Navigation Context: one bounded snapshot of the memory,
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
    /// Where the centre of its anchors lies from the robot: bearing in
    /// degrees from the robot's front (positive = left) and distance in
    /// metres. `None` for the current place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<(i32, f64)>,
}

/// Anchors in one 30° direction around the robot: where it has been that
/// way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VisitedSector {
    /// Centre of the sector, degrees from the robot's front (positive =
    /// left), a multiple of 30 in (-180, 180].
    pub bearing_deg: i32,
    /// Distance of the nearest anchor that way, metres.
    pub near_m: f64,
    /// Distance of the farthest anchor that way, metres.
    pub far_m: f64,
}

/// A heading a planner decision chose near the robot's position, and what
/// came of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TriedBrief {
    /// The heading, degrees from the robot's current front (positive = left).
    pub bearing_deg: i32,
    /// Decisions that chose it (within 15°) from here.
    pub attempts: u32,
    /// How far the robot got before the next decision, metres.
    pub moved_m: f64,
    /// The place type it was in at the next decision.
    pub reached: String,
}

/// What the planner sees of the memory.
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
    /// Where the robot has been around it: anchors within
    /// `context.visited_radius_m`, per 30° direction.
    #[serde(default)]
    pub visited: Vec<VisitedSector>,
    /// Headings already tried from within `localization_radius_m` of here,
    /// newest first (at most `context.tried_here`).
    #[serde(default)]
    pub tried_here: Vec<TriedBrief>,
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
        let pose = memory.pose();
        let relative = |p: nav_core::geometry::Point2| {
            let d = pose.position().distance(p);
            let bearing = pose.relative_bearing(p).to_degrees().round() as i32;
            (bearing, (d * 10.0).round() / 10.0)
        };
        let recent_places = places[places.len() - m..]
            .iter()
            .map(|p| PlaceBrief {
                id: p.id,
                place_type: clip_chars(&p.place_type, limits.type_chars),
                at: (p.id != place.id).then(|| place_centre(memory, p)).flatten().map(relative),
            })
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
            visited: visited_sectors(memory, limits.visited_radius_m),
            tried_here: tried_here(memory, limits.tried_here),
            grounding,
        }
    }

    /// The compact text for the planner prompt.
    pub fn to_text(&self) -> String {
        let mut s = String::with_capacity(768);
        // `write!` into a String cannot fail; the results are ignored.
        let _ = writeln!(s, "NAVIGATION CONTEXT (step {}; bearings in degrees from your front, + = left)", self.step);
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
            match p.at {
                Some((b, d)) => {
                    let _ = write!(s, " {} {} {b}°/{d}m,", p.id, p.place_type);
                }
                None => {
                    let _ = write!(s, " {} {} (here),", p.id, p.place_type);
                }
            }
        }
        s.pop();
        s.push('\n');
        if !self.visited.is_empty() {
            s.push_str("Been (bearing: anchor distances m):");
            for v in &self.visited {
                if (v.far_m - v.near_m).abs() < 0.05 {
                    let _ = write!(s, " {}: {:.1};", v.bearing_deg, v.near_m);
                } else {
                    let _ = write!(s, " {}: {:.1}-{:.1};", v.bearing_deg, v.near_m, v.far_m);
                }
            }
            s.pop();
            s.push('\n');
        }
        if !self.tried_here.is_empty() {
            s.push_str("Tried from here (bearing → moved, reached):");
            for t in &self.tried_here {
                let _ = write!(s, " {}°", t.bearing_deg);
                if t.attempts > 1 {
                    let _ = write!(s, " x{}", t.attempts);
                }
                let _ = write!(s, " → {:.1}m {};", t.moved_m, t.reached);
            }
            s.pop();
            s.push('\n');
        }
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
    /// section (grounding knowledge text, clipped to `context.grounding_chars`).
    pub fn context(&self, grounding: Option<&str>) -> NavigationContext {
        NavigationContext::from_memory(self, grounding)
    }
}

/// The centre of a place's anchors (dead reckoning), if it has any.
fn place_centre(memory: &SpatialMemory, place: &crate::graph::Place) -> Option<nav_core::geometry::Point2> {
    let pts: Vec<nav_core::geometry::Point2> =
        place.anchors.iter().filter_map(|a| memory.anchors().get(*a)).map(|a| a.pose.position()).collect();
    if pts.is_empty() {
        return None;
    }
    let n = pts.len() as f64;
    Some(nav_core::geometry::Point2::new(
        pts.iter().map(|p| p.x).sum::<f64>() / n,
        pts.iter().map(|p| p.y).sum::<f64>() / n,
    ))
}

/// Anchors within `radius` metres (and farther than 0.5 m) of the robot,
/// grouped by 30° direction relative to its front.
fn visited_sectors(memory: &SpatialMemory, radius: f64) -> Vec<VisitedSector> {
    let pose = memory.pose();
    let mut sectors: [Option<(f64, f64)>; 12] = [None; 12];
    for (id, d) in memory.anchors().within(pose.position(), radius) {
        let Some(a) = memory.anchors().get(id) else { continue };
        if d < 0.5 {
            continue;
        }
        let bearing = pose.relative_bearing(a.pose.position()).to_degrees();
        // sector k covers (30k - 15, 30k + 15], k = -5..=6
        let k = ((bearing / 30.0).round() as i32).clamp(-6, 6);
        let k = if k == -6 { 6 } else { k };
        let slot = &mut sectors[(k + 5) as usize];
        *slot = Some(slot.map_or((d, d), |(n, f)| (n.min(d), f.max(d))));
    }
    sectors
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            s.map(|(n, f)| VisitedSector {
                bearing_deg: (i as i32 - 5) * 30,
                near_m: (n * 10.0).round() / 10.0,
                far_m: (f * 10.0).round() / 10.0,
            })
        })
        .collect()
}

/// Headings tried from within the localization radius of the robot,
/// newest first, the decision in progress left out; headings within 15° of
/// each other are listed once (the newest outcome, with the attempts).
fn tried_here(memory: &SpatialMemory, cap: usize) -> Vec<TriedBrief> {
    let pose = memory.pose();
    let r = memory.config().localization_radius_m;
    let mut out: Vec<TriedBrief> = Vec::new();
    for (t, o) in memory
        .tried_headings()
        .rev()
        .filter_map(|t| t.outcome.as_ref().map(|o| (t, o)))
        .filter(|(t, _)| t.from.distance(pose.position()) <= r)
    {
        let bearing_deg = nav_core::geometry::normalize_angle(t.heading - pose.yaw).to_degrees().round() as i32;
        let same = |b: i32| ((bearing_deg - b + 540).rem_euclid(360) - 180).abs() < 15;
        if let Some(x) = out.iter_mut().find(|x| same(x.bearing_deg)) {
            x.attempts += 1;
            continue;
        }
        out.push(TriedBrief {
            bearing_deg,
            attempts: 1,
            moved_m: (o.moved_m * 10.0).round() / 10.0,
            reached: clip_chars(&o.place_type, memory.config().context.type_chars),
        });
    }
    out.truncate(cap);
    out
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
