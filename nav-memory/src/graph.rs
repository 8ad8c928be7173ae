//! Anchors and the anchor graph, plus the place record.
//!
//! Anchors are topological reference points on the driven path. Consecutive
//! anchors are linked both ways; localization only *hints* at nearby anchors
//! and never merges nodes, so the graph is the chain of anchors in
//! creation order. A grid index keeps radius queries local.

use nav_core::geometry::{Point2, Pose2};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Identifier of a [`Place`]; serialized as a number, displayed `P3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PlaceId(pub u32);

/// Identifier of an [`Anchor`]; serialized as a number, displayed `A12`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AnchorId(pub u32);

impl fmt::Display for PlaceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "P{}", self.0)
    }
}

impl fmt::Display for AnchorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "A{}", self.0)
    }
}

/// Why an anchor was created (any one condition suffices).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnchorReason {
    /// The episode's first anchor at the start pose.
    Start,
    /// S forward steps accumulated since the last anchor.
    Distance,
    /// The heading changed since the last anchor and a forward step followed.
    Turn,
    /// The caller flagged a branch point (door, junction).
    Branch,
    /// The first anchor of a newly entered place.
    NewPlace,
}

/// A topological reference point on the driven path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Anchor {
    /// Unique id; equals the anchor's index in creation order.
    pub id: AnchorId,
    /// Dead-reckoned pose when the anchor was created.
    pub pose: Pose2,
    /// Linked anchors (the previous and the next on the path).
    pub neighbors: Vec<AnchorId>,
    /// The place the robot was in when the anchor was created.
    pub place_id: PlaceId,
    /// Episode step at creation (0 = before the first step).
    pub step: u64,
    /// Which rule created it.
    pub reason: AnchorReason,
}

/// A semantically consistent area (room, corridor) that accumulates what the
/// robot learned about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Place {
    /// Unique id; equals the place's index in creation order.
    pub id: PlaceId,
    /// Normalized scene type (`unknown` until the first scene label).
    pub place_type: String,
    /// Objects and structural cues seen here, sorted (at most
    /// [`Place::MAX_OBJECTS`]).
    pub objects: BTreeSet<String>,
    /// The latest short description from the scene analyzer.
    pub semantic_description: String,
    /// Anchors created in this place, in creation order.
    pub anchors: Vec<AnchorId>,
    /// Episode step at which the place was entered.
    pub entered_step: u64,
}

impl Place {
    /// Objects kept per place; later ones are ignored so memory stays bounded.
    pub const MAX_OBJECTS: usize = 48;
    /// Characters kept of a description.
    pub const MAX_DESCRIPTION_CHARS: usize = 200;
    /// The type of a place no scene label has named yet.
    pub const UNKNOWN: &'static str = "unknown";

    /// Adds objects (normalized, bounded).
    pub(crate) fn add_objects<'a>(&mut self, objects: impl IntoIterator<Item = &'a String>) {
        for o in objects {
            if self.objects.len() >= Self::MAX_OBJECTS {
                break;
            }
            self.objects.insert(o.clone());
        }
    }

    /// True when the place type carries semantic evidence (it is not empty
    /// and not [`Place::UNKNOWN`]).
    pub fn is_named(&self) -> bool {
        !self.place_type.is_empty() && self.place_type != Self::UNKNOWN
    }
}

/// The anchors of one episode with a grid index for radius queries.
#[derive(Debug, Clone)]
pub struct AnchorGraph {
    cell_m: f64,
    anchors: Vec<Anchor>,
    index: BTreeMap<(i64, i64), Vec<AnchorId>>,
}

impl PartialEq for AnchorGraph {
    fn eq(&self, other: &Self) -> bool {
        self.cell_m == other.cell_m && self.anchors == other.anchors
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnchorGraphRepr {
    cell_m: f64,
    anchors: Vec<Anchor>,
}

impl Serialize for AnchorGraph {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("AnchorGraph", 2)?;
        s.serialize_field("cell_m", &self.cell_m)?;
        s.serialize_field("anchors", &self.anchors)?;
        s.end()
    }
}

impl<'de> Deserialize<'de> for AnchorGraph {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let repr = AnchorGraphRepr::deserialize(deserializer)?;
        if !(repr.cell_m.is_finite() && repr.cell_m > 0.0) {
            return Err(serde::de::Error::custom(format!("anchor index cell_m {} must be positive", repr.cell_m)));
        }
        let mut graph = AnchorGraph::new(repr.cell_m);
        graph.anchors = repr.anchors;
        graph.rebuild_index();
        graph.validate().map_err(serde::de::Error::custom)?;
        Ok(graph)
    }
}

impl AnchorGraph {
    /// An empty graph whose index cells are `cell_m` metres wide (use the
    /// localization radius; non-positive values fall back to 1 m).
    pub fn new(cell_m: f64) -> Self {
        let cell_m = if cell_m.is_finite() && cell_m > 0.0 { cell_m } else { 1.0 };
        Self { cell_m, anchors: Vec::new(), index: BTreeMap::new() }
    }

    fn cell(&self, p: Point2) -> (i64, i64) {
        ((p.x / self.cell_m).floor() as i64, (p.y / self.cell_m).floor() as i64)
    }

    fn rebuild_index(&mut self) {
        self.index.clear();
        for i in 0..self.anchors.len() {
            let key = self.cell(self.anchors[i].pose.position());
            self.index.entry(key).or_default().push(self.anchors[i].id);
        }
    }

    /// Adds an anchor and, when `link_to` is given, links the two both ways.
    pub fn add(
        &mut self,
        pose: Pose2,
        place_id: PlaceId,
        step: u64,
        reason: AnchorReason,
        link_to: Option<AnchorId>,
    ) -> AnchorId {
        let id = AnchorId(self.anchors.len() as u32);
        let mut neighbors = Vec::with_capacity(2);
        if let Some(prev) = link_to.filter(|p| (p.0 as usize) < self.anchors.len()) {
            neighbors.push(prev);
            let prev_anchor = &mut self.anchors[prev.0 as usize];
            if !prev_anchor.neighbors.contains(&id) {
                prev_anchor.neighbors.push(id);
            }
        }
        self.anchors.push(Anchor { id, pose, neighbors, place_id, step, reason });
        let key = self.cell(pose.position());
        self.index.entry(key).or_default().push(id);
        id
    }

    /// Links two existing anchors both ways (a loop closure: the robot came
    /// back to `b` from `a`); unknown ids and self-links are ignored.
    pub fn link(&mut self, a: AnchorId, b: AnchorId) {
        let n = self.anchors.len();
        if a == b || (a.0 as usize) >= n || (b.0 as usize) >= n {
            return;
        }
        if !self.anchors[a.0 as usize].neighbors.contains(&b) {
            self.anchors[a.0 as usize].neighbors.push(b);
        }
        if !self.anchors[b.0 as usize].neighbors.contains(&a) {
            self.anchors[b.0 as usize].neighbors.push(a);
        }
    }

    /// The anchor with this id.
    pub fn get(&self, id: AnchorId) -> Option<&Anchor> {
        self.anchors.get(id.0 as usize)
    }

    /// All anchors in creation order.
    pub fn anchors(&self) -> &[Anchor] {
        &self.anchors
    }

    /// Number of anchors.
    pub fn len(&self) -> usize {
        self.anchors.len()
    }

    /// True when there are no anchors.
    pub fn is_empty(&self) -> bool {
        self.anchors.is_empty()
    }

    /// Anchors within `radius` metres of `center` (inclusive), nearest first,
    /// ties by id.
    pub fn within(&self, center: Point2, radius: f64) -> Vec<(AnchorId, f64)> {
        let mut out = Vec::new();
        if !(radius.is_finite() && radius >= 0.0 && center.is_finite()) {
            return out;
        }
        let reach = (radius / self.cell_m).ceil() as i64;
        let (cx, cy) = self.cell(center);
        for gx in cx - reach..=cx + reach {
            for gy in cy - reach..=cy + reach {
                let Some(ids) = self.index.get(&(gx, gy)) else { continue };
                for &id in ids {
                    if let Some(a) = self.get(id) {
                        let d = a.pose.position().distance(center);
                        if d <= radius {
                            out.push((id, d));
                        }
                    }
                }
            }
        }
        out.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        out
    }

    /// Checks ids, links and poses: ids equal positions, neighbours exist,
    /// are not self-links, are not repeated and are symmetric.
    pub fn validate(&self) -> Result<(), String> {
        for (i, a) in self.anchors.iter().enumerate() {
            if a.id.0 as usize != i {
                return Err(format!("anchor at position {i} has id {}", a.id));
            }
            if !(a.pose.x.is_finite() && a.pose.y.is_finite() && a.pose.yaw.is_finite()) {
                return Err(format!("anchor {} has a non-finite pose", a.id));
            }
            for (j, n) in a.neighbors.iter().enumerate() {
                if *n == a.id {
                    return Err(format!("anchor {} links to itself", a.id));
                }
                if a.neighbors[..j].contains(n) {
                    return Err(format!("anchor {} lists neighbour {n} twice", a.id));
                }
                match self.get(*n) {
                    None => return Err(format!("anchor {} links to missing anchor {n}", a.id)),
                    Some(b) if !b.neighbors.contains(&a.id) => {
                        return Err(format!("link {} → {n} is not symmetric", a.id));
                    }
                    Some(_) => {}
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_links_both_ways() {
        let mut g = AnchorGraph::new(1.5);
        let a = g.add(Pose2::origin(), PlaceId(0), 0, AnchorReason::Start, None);
        let b = g.add(Pose2::new(0.5, 0.0, 0.0), PlaceId(0), 2, AnchorReason::Distance, Some(a));
        let c = g.add(Pose2::new(1.0, 0.0, 0.0), PlaceId(0), 4, AnchorReason::Distance, Some(b));
        assert_eq!(g.get(a).unwrap().neighbors, vec![b]);
        assert_eq!(g.get(b).unwrap().neighbors, vec![a, c]);
        assert_eq!(g.get(c).unwrap().neighbors, vec![b]);
        g.validate().unwrap();
    }

    #[test]
    fn radius_query_matches_brute_force() {
        let mut g = AnchorGraph::new(1.5);
        let mut prev = None;
        for i in 0..200 {
            let t = i as f64 * 0.37;
            let pose = Pose2::new(3.0 * t.cos() + 0.01 * t, 2.0 * (1.3 * t).sin(), 0.0);
            prev = Some(g.add(pose, PlaceId(0), i, AnchorReason::Distance, prev));
        }
        for (cx, cy, r) in [(0.0, 0.0, 1.5), (2.9, -1.0, 0.7), (-3.0, 1.9, 4.0), (10.0, 10.0, 1.5)] {
            let center = Point2::new(cx, cy);
            let fast = g.within(center, r);
            let mut slow: Vec<(AnchorId, f64)> = g
                .anchors()
                .iter()
                .map(|a| (a.id, a.pose.position().distance(center)))
                .filter(|(_, d)| *d <= r)
                .collect();
            slow.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            assert_eq!(fast, slow);
        }
    }

    #[test]
    fn deserialize_rejects_broken_links() {
        let json = r#"{"cell_m":1.5,"anchors":[
            {"id":0,"pose":{"x":0,"y":0,"yaw":0},"neighbors":[1],"place_id":0,"step":0,"reason":"start"},
            {"id":1,"pose":{"x":0.5,"y":0,"yaw":0},"neighbors":[],"place_id":0,"step":2,"reason":"distance"}]}"#;
        let e = serde_json::from_str::<AnchorGraph>(json).unwrap_err().to_string();
        assert!(e.contains("not symmetric"), "{e}");
    }
}
