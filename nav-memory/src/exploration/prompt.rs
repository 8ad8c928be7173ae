//! The exploration memory's prompt block (seed 001 task 2.2, seed 003
//! §3.19 layout).

use super::{ExplorationMemory, Room};
use std::fmt::Write as _;

impl ExplorationMemory {
    /// The prompt block (seed 001 task 2.2 / seed 003 §3.19 layout, about
    /// 55 o200k tokens empty, about 240 for a typical house and at most about
    /// 310 with every list full of long entries; measured in
    /// `tests/context_tokens.rs`). Rooms show their explored
    /// percentage; the current room also its first objects. At most 6 rooms
    /// (the current one and the latest others), 3 frontiers (as given, ids
    /// for `navigate_to_goal`), the 2 latest dead ends and the 5 recent
    /// actions, listed oldest first and numbered `[k]` = k actions ago, so
    /// `[1]` is the latest.
    pub fn to_prompt_text(&self) -> String {
        let mut s = String::with_capacity(640);
        s.push_str("EXPLORATION MEMORY:\n  Rooms: ");
        let shown = self.shown_rooms();
        for (i, r) in shown.iter().enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            let _ = write!(s, "{} ({:.0}% explored)", r.name, r.explored_pct);
        }
        if self.rooms.len() > shown.len() {
            let _ = write!(s, " +{} more", self.rooms.len() - shown.len());
        }
        s.push('\n');
        let _ = write!(s, "  Current room: {}", self.current_room);
        if let Some(r) = self.rooms.iter().find(|r| r.name == self.current_room) {
            if r.name != Self::START_ROOM {
                let _ = write!(s, " (entered from {})", r.entered_from);
            }
            if !r.objects.is_empty() {
                let objs: Vec<&str> = r.objects.iter().take(Self::SHOWN_ROOM_OBJECTS).map(String::as_str).collect();
                let _ = write!(s, " — objects: {}", objs.join(", "));
                if r.objects.len() > Self::SHOWN_ROOM_OBJECTS {
                    let _ = write!(s, " +{}", r.objects.len() - Self::SHOWN_ROOM_OBJECTS);
                }
            }
        }
        s.push('\n');
        if self.frontiers.is_empty() {
            s.push_str("  Frontiers: none open\n");
        } else {
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
        if self.dead_ends.is_empty() {
            s.push_str("  Dead ends: none\n");
        } else {
            s.push_str("  Dead ends: ");
            let skip = self.dead_ends.len().saturating_sub(Self::SHOWN_DEAD_ENDS);
            for (i, d) in self.dead_ends.iter().skip(skip).enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                let _ =
                    write!(s, "{:.0}° ({}) at ({:.1}, {:.1})", d.direction_deg, d.reason, d.position.x, d.position.y);
            }
            s.push('\n');
        }
        let secs = self.exploration_duration_s.max(0.0).round() as u64;
        let _ = writeln!(s, "  Discoveries: {} | Time: {}m {:02}s", self.total_discoveries, secs / 60, secs % 60);
        if self.recent_actions.is_empty() {
            s.push_str("  Recent: none\n");
        } else {
            let n = self.recent_actions.len();
            for (i, a) in self.recent_actions.iter().enumerate() {
                let prefix = if i == 0 { "  Recent: " } else { "          " };
                let _ = writeln!(s, "{prefix}[{}] {}({}) → {}", n - i, a.action, a.params, a.result);
            }
        }
        s
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
