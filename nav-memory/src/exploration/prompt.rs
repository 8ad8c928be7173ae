//! The exploration memory's prompt block (compact, to keep the explore
//! prompt's token count low).

use super::{ExplorationMemory, Room};
use std::fmt::Write as _;

/// What [`ExplorationMemory::prompt_text`] leaves out because the prompt
/// shows it elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PromptParts {
    /// Leave the frontiers out (the prompt lists them with their ids).
    pub without_frontiers: bool,
    /// Leave the latest recent action out (the prompt's previous-action
    /// line shows it with its full result).
    pub without_latest_action: bool,
}

impl ExplorationMemory {
    /// The prompt block with the frontiers: see [`Self::prompt_text`].
    pub fn to_prompt_text(&self) -> String {
        self.prompt_text(PromptParts::default())
    }

    /// The prompt block, compact: rooms with their explored percentage
    /// (the current one and the latest others, at most 6) and the current
    /// room's first objects; at most 3 frontiers (ids for
    /// `navigate_to_goal`); the 2 latest dead ends (compass direction,
    /// reason, where); discoveries and time; the 3 latest of the 5 recent
    /// actions kept, oldest first,
    /// numbered `[k]` = k actions ago, so `[1]` is the latest.
    /// `parts` leaves out what the prompt shows elsewhere. Measured in
    /// `tests/context_tokens.rs`.
    ///
    /// ```text
    /// EXPLORATION MEMORY: rooms (% explored) start 80, kitchen 30; current kitchen (from start), objects: fridge
    ///   Dead ends: 90° wall at (3.1, -1.2) | Discoveries: 2 | Time: 4m 32s
    ///   Recent: [2] move_toward(forward, medium, 3.0s) → success, +0.36m; [1] rotate(90) → success, +0.00m
    /// ```
    pub fn prompt_text(&self, parts: PromptParts) -> String {
        let mut s = String::with_capacity(480);
        s.push_str("MEMORY: rooms (% explored) ");
        let shown = self.shown_rooms();
        for (i, r) in shown.iter().enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            let _ = write!(s, "{} {:.0}", r.name, r.explored_pct);
        }
        if self.rooms.len() > shown.len() {
            let _ = write!(s, " +{} more", self.rooms.len() - shown.len());
        }
        let _ = write!(s, "; current {}", self.current_room);
        if let Some(r) = self.rooms.iter().find(|r| r.name == self.current_room) {
            if r.name != Self::START_ROOM {
                let _ = write!(s, " (from {})", r.entered_from);
            }
            if !r.objects.is_empty() {
                let objs: Vec<&str> = r.objects.iter().take(Self::SHOWN_ROOM_OBJECTS).map(String::as_str).collect();
                let _ = write!(s, ", objects: {}", objs.join(", "));
                if r.objects.len() > Self::SHOWN_ROOM_OBJECTS {
                    let _ = write!(s, " +{}", r.objects.len() - Self::SHOWN_ROOM_OBJECTS);
                }
            }
        }
        if !parts.without_frontiers {
            s.push('\n');
            self.push_frontiers(&mut s);
            s.push_str("  Dead ends: ");
        } else {
            s.push_str("; dead ends ");
        }
        if self.dead_ends.is_empty() {
            s.push_str("none");
        } else {
            let skip = self.dead_ends.len().saturating_sub(Self::SHOWN_DEAD_ENDS);
            for (i, d) in self.dead_ends.iter().skip(skip).enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                let _ = write!(s, "{:.0}° {} at ({:.1}, {:.1})", d.direction_deg, d.reason, d.position.x, d.position.y);
            }
        }
        let secs = self.exploration_duration_s.max(0.0).round() as u64;
        let _ = writeln!(s, "; discoveries {}; time {}m{:02}s", self.total_discoveries, secs / 60, secs % 60);
        let n = self.recent_actions.len();
        let end = if parts.without_latest_action { n.saturating_sub(1) } else { n };
        let start = end.saturating_sub(Self::SHOWN_ACTIONS);
        if end > start {
            s.push_str("  Recent: ");
            for (i, a) in self.recent_actions.iter().enumerate().take(end).skip(start) {
                if i > start {
                    s.push_str("; ");
                }
                let _ = write!(s, "[{}] {}({}) → {}", n - i, a.action, a.params, a.result);
            }
            s.push('\n');
        }
        s
    }

    fn push_frontiers(&self, s: &mut String) {
        if self.frontiers.is_empty() {
            s.push_str("  Frontiers: none open\n");
            return;
        }
        let _ = write!(s, "  Frontiers: {} open — ", self.frontiers.len());
        for (i, f) in self.frontiers.iter().take(Self::SHOWN_FRONTIERS).enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            let _ = write!(s, "#{} {:.0}° {} {:.1}m", f.id, f.direction_deg, f.kind, f.distance_m);
            if let Some(w) = f.width_m {
                let _ = write!(s, " ({w:.1}m wide)");
            }
        }
        s.push('\n');
    }

    /// The current room plus the most recently discovered others, in
    /// discovery order, at most `SHOWN_ROOMS`.
    fn shown_rooms(&self) -> Vec<&Room> {
        if self.rooms.len() <= Self::SHOWN_ROOMS {
            return self.rooms.iter().collect();
        }
        let current = self.rooms.iter().position(|r| r.name == self.current_room);
        let mut keep: Vec<usize> = (self.rooms.len() - Self::SHOWN_ROOMS..self.rooms.len()).collect();
        if let Some(c) = current {
            if !keep.contains(&c) {
                keep.remove(0);
                keep.insert(0, c);
            }
        }
        keep.sort_unstable();
        keep.into_iter().map(|i| &self.rooms[i]).collect()
    }
}
