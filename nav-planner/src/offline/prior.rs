//! The semantic prior of the offline planners: which rooms hold which
//! objects (from the simulator's room table, the same knowledge a VLM
//! brings: beds are in bedrooms, toilets in bathrooms).

use nav_hal::arena::semantics::ROOM_OBJECTS;
use std::collections::BTreeMap;

/// Room ↔ object associations.
#[derive(Debug, Clone, PartialEq)]
pub struct SemanticPrior {
    rooms_of: BTreeMap<String, Vec<(String, f64)>>,
}

impl Default for SemanticPrior {
    fn default() -> Self {
        Self::household()
    }
}

impl SemanticPrior {
    /// The household prior: each object belongs to the rooms that list it,
    /// weighted by how characteristic it is (first-listed objects weigh
    /// most).
    pub fn household() -> Self {
        let mut rooms_of: BTreeMap<String, Vec<(String, f64)>> = BTreeMap::new();
        for (room, objects) in ROOM_OBJECTS {
            for (rank, spec) in objects.iter().enumerate() {
                let weight = 1.0 / (1.0 + 0.25 * rank as f64);
                rooms_of.entry(spec.label.to_string()).or_default().push((room.to_string(), weight));
            }
        }
        for v in rooms_of.values_mut() {
            let total: f64 = v.iter().map(|(_, w)| w).sum();
            for (_, w) in v.iter_mut() {
                *w /= total.max(1e-9);
            }
            v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        }
        Self { rooms_of }
    }

    /// Rooms where `object` is usually found, most likely first, with
    /// probabilities summing to 1 (empty for an unknown object).
    pub fn rooms_for(&self, object: &str) -> &[(String, f64)] {
        self.rooms_of.get(&object.to_ascii_lowercase()).map_or(&[], Vec::as_slice)
    }

    /// The most likely room of `object`, or `None`.
    pub fn likely_room(&self, object: &str) -> Option<&str> {
        self.rooms_for(object).first().map(|(r, _)| r.as_str())
    }

    /// How strongly seeing `seen` suggests that `target` is nearby: the
    /// probability that both are in the same room type (0 when unrelated).
    pub fn affinity(&self, seen: &str, target: &str) -> f64 {
        if seen.eq_ignore_ascii_case(target) {
            return 1.0;
        }
        let a = self.rooms_for(seen);
        let b = self.rooms_for(target);
        a.iter().map(|(ra, wa)| b.iter().filter(|(rb, _)| rb == ra).map(|(_, wb)| wa * wb).sum::<f64>()).sum()
    }

    /// Votes for the room type described by a set of visible objects;
    /// `None` when nothing votes.
    pub fn classify<'a>(&self, objects: impl IntoIterator<Item = &'a str>) -> Option<String> {
        self.classify_weighted(objects.into_iter().map(|o| (o, 1.0)))
    }

    /// [`classify`](Self::classify) with a weight per object (a nearer or
    /// larger object says more about the room).
    pub fn classify_weighted<'a>(&self, objects: impl IntoIterator<Item = (&'a str, f64)>) -> Option<String> {
        self.classify_weighted_where(objects, |_| true)
    }

    /// [`classify_weighted`](Self::classify_weighted) where an object votes
    /// only for the rooms `votes_for` accepts, unless it belongs to no other
    /// room (a shoe rack still says corridor when plants do not).
    pub fn classify_weighted_where<'a>(
        &self,
        objects: impl IntoIterator<Item = (&'a str, f64)>,
        votes_for: impl Fn(&str) -> bool,
    ) -> Option<String> {
        // the last of equal votes, as the vote always broke ties
        self.votes_where(objects, votes_for).into_iter().max_by(|a, b| a.1.total_cmp(&b.1)).map(|(r, _)| r)
    }

    /// The room types `objects` vote for (as in
    /// [`classify_weighted_where`](Self::classify_weighted_where)) with their
    /// votes, most voted first (ties in name order).
    pub fn votes_where<'a>(
        &self,
        objects: impl IntoIterator<Item = (&'a str, f64)>,
        votes_for: impl Fn(&str) -> bool,
    ) -> Vec<(String, f64)> {
        let mut votes: BTreeMap<&str, f64> = BTreeMap::new();
        for (o, weight) in objects {
            let rooms = self.rooms_for(o);
            let kept: Vec<&(String, f64)> = rooms.iter().filter(|(r, _)| votes_for(r)).collect();
            let kept = if kept.is_empty() { rooms.iter().collect() } else { kept };
            let total: f64 = kept.iter().map(|(_, w)| w).sum();
            for (room, w) in kept {
                *votes.entry(room.as_str()).or_default() += w / total.max(1e-9) * weight;
            }
        }
        let mut ranked: Vec<(String, f64)> = votes.into_iter().map(|(r, v)| (r.to_string(), v)).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
        ranked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn household_knowledge() {
        let p = SemanticPrior::household();
        assert_eq!(p.likely_room("bed"), Some("bedroom"));
        assert_eq!(p.likely_room("toilet"), Some("bathroom"));
        assert_eq!(p.likely_room("fridge"), Some("kitchen"));
        assert!(p.affinity("oven", "fridge") > p.affinity("bed", "fridge"));
        assert_eq!(p.affinity("bed", "fridge"), 0.0);
        assert_eq!(p.classify(["fridge", "oven"]).as_deref(), Some("kitchen"));
        assert_eq!(p.classify(std::iter::empty()), None);
        let total: f64 = p.rooms_for("chair").iter().map(|(_, w)| w).sum();
        assert!((total - 1.0).abs() < 1e-9);
    }
}
