//! How well the spatial memory's places follow the rooms: the memory's
//! place type at each step against the room under the robot's
//! ground-truth pose (the arena's room polygons). Scoring only — computed
//! after an episode from the loop's [`PlaceStep`] trace; nothing here
//! reaches a loop.
//!
//! - **accuracy**: the fraction of judged steps whose place type equals
//!   the room's type (both normalized: lowercase, punctuation dropped,
//!   `hallway` → `corridor`). Steps within [`DOORWAY_MARGIN_M`] of another
//!   room, or outside every room, are not judged (in a doorway either answer
//!   is right);
//! - **room visits**: the judged steps' rooms with repeats collapsed (a room
//!   is one polygon, so two bedrooms are two rooms); `room_entries` is the
//!   visits after the first; **revisit ratio** = unique rooms / visits (1.0:
//!   no room entered twice);
//! - **places created**: the memory's confirmed place switches;
//! - **switch lag**: for each entry into a room of another type that lasts
//!   at least [`MIN_VISIT_STEPS`] judged steps, the steps until the memory's
//!   type matches the room (the whole visit when it never does).

use crate::navigator::objectnav_loop::PlaceStep;
use nav_core::geometry::{Point2, point_in_polygon};
use nav_hal::arena::Arena;
use nav_memory::normalize_scene_type;
use serde::{Deserialize, Serialize};

/// Steps this close to another room (metres) are in a doorway: not judged.
pub const DOORWAY_MARGIN_M: f64 = 0.35;
/// Room visits shorter than this (judged steps) have no switch lag.
pub const MIN_VISIT_STEPS: usize = 10;

/// The place scores of one episode (see the [module docs](self)).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlaceScore {
    /// Steps judged (not in a doorway, inside a room).
    pub judged_steps: u32,
    /// Judged steps whose place type matched the room.
    pub correct_steps: u32,
    /// Room visits (the start room counts as the first).
    pub room_visits: u32,
    /// Different rooms visited.
    pub unique_rooms: u32,
    /// Places the memory created after the start place.
    pub places_created: u32,
    /// Switch lags of the qualifying room entries, steps.
    pub switch_lags: Vec<u32>,
    /// Scene analyses run.
    pub scene_calls: u32,
    /// Steps of the episode.
    pub steps: u32,
}

impl PlaceScore {
    /// Scores a trace against `arena`'s rooms; `None` when the arena has no
    /// rooms or the trace no ground truth.
    pub fn of(arena: &Arena, trace: &[PlaceStep], scene_calls: u32) -> Option<Self> {
        if arena.rooms.is_empty() || trace.iter().all(|s| s.gt_pose.is_none()) {
            return None;
        }
        let polygons: Vec<Vec<Point2>> = arena.rooms.iter().map(|r| r.points()).collect();
        let types: Vec<String> = arena.rooms.iter().map(|r| normalize_scene_type(&r.name)).collect();
        let room_at = |p: Point2| polygons.iter().position(|poly| point_in_polygon(p, poly));
        let in_doorway = |p: Point2, room: usize| {
            (0..8).any(|k| {
                let a = f64::from(k) * std::f64::consts::FRAC_PI_4;
                let q = p + Point2::new(a.cos(), a.sin()) * DOORWAY_MARGIN_M;
                room_at(q).is_some_and(|r| r != room)
            })
        };
        let mut s = PlaceScore {
            places_created: trace.iter().map(|t| t.place_id).max().unwrap_or(0),
            scene_calls,
            steps: trace.len() as u32,
            ..Self::default()
        };
        // (room, memory's type matches) per judged step
        let judged: Vec<(usize, bool)> = trace
            .iter()
            .filter_map(|t| {
                let p = t.gt_pose?.position();
                let room = room_at(p).filter(|r| !in_doorway(p, *r))?;
                Some((room, t.place_type.as_deref() == Some(types[room].as_str())))
            })
            .collect();
        s.judged_steps = judged.len() as u32;
        s.correct_steps = judged.iter().filter(|(_, ok)| *ok).count() as u32;
        // visits: runs of one room
        let mut visits: Vec<(usize, usize, usize)> = Vec::new(); // (room, first index, length)
        for (i, (room, _)) in judged.iter().enumerate() {
            match visits.last_mut() {
                Some((r, _, len)) if r == room => *len += 1,
                _ => visits.push((*room, i, 1)),
            }
        }
        s.room_visits = visits.len() as u32;
        let mut unique: Vec<usize> = visits.iter().map(|v| v.0).collect();
        unique.sort_unstable();
        unique.dedup();
        s.unique_rooms = unique.len() as u32;
        for w in visits.windows(2) {
            let (prev, (room, first, len)) = (w[0].0, w[1]);
            if types[prev] == types[room] || len < MIN_VISIT_STEPS {
                continue;
            }
            let lag = judged[first..first + len].iter().position(|(_, ok)| *ok).unwrap_or(len);
            s.switch_lags.push(lag as u32);
        }
        Some(s)
    }

    /// Correct steps / judged steps.
    pub fn accuracy(&self) -> Option<f64> {
        (self.judged_steps > 0).then(|| f64::from(self.correct_steps) / f64::from(self.judged_steps))
    }

    /// Unique rooms / room visits (1.0: no room entered twice).
    pub fn revisit_ratio(&self) -> Option<f64> {
        (self.room_visits > 0).then(|| f64::from(self.unique_rooms) / f64::from(self.room_visits))
    }

    /// Room entries: visits after the first.
    pub fn room_entries(&self) -> u32 {
        self.room_visits.saturating_sub(1)
    }
}

/// Sums of several episodes' [`PlaceScore`]s (for suites).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlaceTotals {
    /// Judged steps.
    pub judged_steps: u64,
    /// Correct steps.
    pub correct_steps: u64,
    /// Room entries.
    pub room_entries: u64,
    /// Places created.
    pub places_created: u64,
    /// Every switch lag.
    pub switch_lags: Vec<u32>,
    /// Scene analyses.
    pub scene_calls: u64,
    /// Steps.
    pub steps: u64,
    /// Sum of the episodes' revisit ratios and how many there were.
    pub revisit_sum: f64,
    /// Episodes with a revisit ratio.
    pub episodes: u32,
}

impl PlaceTotals {
    /// Adds one episode.
    pub fn add(&mut self, s: &PlaceScore) {
        self.judged_steps += u64::from(s.judged_steps);
        self.correct_steps += u64::from(s.correct_steps);
        self.room_entries += u64::from(s.room_entries());
        self.places_created += u64::from(s.places_created);
        self.switch_lags.extend(&s.switch_lags);
        self.scene_calls += u64::from(s.scene_calls);
        self.steps += u64::from(s.steps);
        if let Some(r) = s.revisit_ratio() {
            self.revisit_sum += r;
            self.episodes += 1;
        }
    }

    /// Correct / judged steps over all episodes.
    pub fn accuracy(&self) -> Option<f64> {
        (self.judged_steps > 0).then(|| self.correct_steps as f64 / self.judged_steps as f64)
    }

    /// Places created per room entry.
    pub fn places_per_entry(&self) -> Option<f64> {
        (self.room_entries > 0).then(|| self.places_created as f64 / self.room_entries as f64)
    }

    /// The median switch lag, steps.
    pub fn median_lag(&self) -> Option<f64> {
        let mut v = self.switch_lags.clone();
        v.sort_unstable();
        let n = v.len();
        match n {
            0 => None,
            _ if n % 2 == 1 => Some(f64::from(v[n / 2])),
            _ => Some((f64::from(v[n / 2 - 1]) + f64::from(v[n / 2])) / 2.0),
        }
    }

    /// Scene analyses per 100 steps.
    pub fn scene_per_100(&self) -> Option<f64> {
        (self.steps > 0).then(|| self.scene_calls as f64 * 100.0 / self.steps as f64)
    }

    /// Mean revisit ratio per episode.
    pub fn revisit_ratio(&self) -> Option<f64> {
        (self.episodes > 0).then(|| self.revisit_sum / f64::from(self.episodes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nav_core::geometry::Pose2;

    fn step(x: f64, place: u32, t: Option<&str>) -> PlaceStep {
        PlaceStep { place_id: place, place_type: t.map(str::to_string), gt_pose: Some(Pose2::new(x, 1.0, 0.0)) }
    }

    #[test]
    fn scores_a_walk_through_two_rooms_and_back() {
        let mut arena = Arena::builtin("simple").expect("arena");
        arena.rooms = vec![
            nav_hal::arena::Room {
                name: "Kitchen".into(),
                polygon: vec![[0.0, 0.0], [5.0, 0.0], [5.0, 2.0], [0.0, 2.0]],
            },
            nav_hal::arena::Room {
                name: "hallway".into(),
                polygon: vec![[5.0, 0.0], [15.0, 0.0], [15.0, 2.0], [5.0, 2.0]],
            },
        ];
        let mut trace = Vec::new();
        // 10 steps in the kitchen, named at once
        for i in 0..10 {
            trace.push(step(0.4 + 0.4 * f64::from(i), 0, Some("kitchen")));
        }
        // into the corridor: the memory switches 4 steps in
        for i in 0..20 {
            let t = if i < 4 { "kitchen" } else { "corridor" };
            trace.push(step(5.4 + 0.4 * f64::from(i), u32::from(i >= 4), Some(t)));
        }
        let s = PlaceScore::of(&arena, &trace, 3).expect("scored");
        assert_eq!(s.room_visits, 2);
        assert_eq!(s.unique_rooms, 2);
        assert_eq!(s.places_created, 1);
        assert_eq!(s.switch_lags, vec![4]);
        assert_eq!((s.judged_steps, s.correct_steps), (30, 26));
        // a step on the boundary is in the doorway margin: not judged
        trace.push(step(14.0, 1, Some("corridor")));
        trace.insert(10, step(4.9, 0, Some("kitchen")));
        let s = PlaceScore::of(&arena, &trace, 3).expect("scored");
        assert_eq!((s.judged_steps, s.correct_steps), (31, 27));
        assert_eq!(s.revisit_ratio(), Some(1.0));
    }
}
