//! Exploration memory for LLM-driven exploration (the explore protocol):
//! rooms, frontiers, dead ends, the last five actions with
//! their outcomes, discoveries and duration, serialized into a ~200-token
//! prompt block.
//!
//! Rooms are VLM-driven: a room is created only when the VLM
//! calls `report_discovery(significance = "room")`; the label becomes the
//! room name and the room becomes current. The memory starts in a room named
//! `start`. Time is injected (`new(start_s)`, `update_time(now_s)`), never
//! read from a clock.
//!
//! Persistence: [`save`](
//! ExplorationMemory::save) and [`load`](ExplorationMemory::load) write and
//! read YAML (through `serde_yaml_ng`, the maintained
//! continuation of `serde_yaml`), or JSON when the file name ends in
//! `.json`; both atomically, with the same `format` / `version` envelope
//! and the same checks on load.

use crate::error::MemoryError;
use crate::snapshot;
use crate::text::{clip_chars, normalize_label};
use nav_core::discovery::Significance;
use nav_core::geometry::Point2;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::path::Path;

mod prescan;
mod prompt;

pub use prompt::PromptParts;

/// A room the VLM named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Room {
    /// Room name (trimmed, lowercase).
    pub name: String,
    /// How much of it was explored, percent 0–100.
    pub explored_pct: f64,
    /// Objects reported in it, in report order (at most
    /// [`ExplorationMemory::MAX_ROOM_OBJECTS`]).
    pub objects: Vec<String>,
    /// The room the robot came from.
    pub entered_from: String,
    /// Where the robot was when the room was reported (entry point).
    pub entry: Point2,
}

/// An open frontier (from the map analysis).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Frontier {
    /// Id the VLM can pass to `navigate_to_goal(frontier_id)`.
    pub id: u32,
    /// Direction, degrees, in the caller's convention.
    pub direction_deg: f64,
    /// Distance, metres.
    pub distance_m: f64,
    /// Kind ("doorway", "corridor", "open"); `type` in JSON.
    #[serde(rename = "type")]
    pub kind: String,
    /// Opening width, metres, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width_m: Option<f64>,
}

/// A direction found to lead nowhere.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeadEnd {
    /// Direction, degrees, in the caller's convention.
    pub direction_deg: f64,
    /// Why ("wall", "blocked").
    pub reason: String,
    /// Where the robot was.
    pub position: Point2,
}

/// One executed decision and its outcome (a line of the prompt's recent
/// decisions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionRecord {
    /// Tool name, e.g. `move_toward`.
    pub action: String,
    /// Parameters as shown in the prompt, e.g. `forward, medium`.
    pub params: String,
    /// Outcome text, e.g. `success, +0.36m` or `safety_override at 0.3m`.
    pub result: String,
    /// Position after the action.
    pub position: Point2,
}

impl ActionRecord {
    /// A record; strings are clipped to 60 characters.
    pub fn new(action: &str, params: &str, result: &str, position: Point2) -> Self {
        Self {
            action: clip_chars(action, 60),
            params: clip_chars(params, 60),
            result: clip_chars(result, 60),
            position,
        }
    }
}

/// A reported discovery (kept for logs; the prompt shows room objects).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Discovery {
    /// The label as reported (clipped).
    pub label: String,
    /// The VLM's notes (clipped).
    pub notes: String,
    /// Its significance.
    pub significance: Significance,
    /// Where it was reported.
    pub position: Point2,
    /// The room it was recorded in.
    pub room: String,
}

/// The exploration state of one session.
///
/// ```
/// use nav_core::discovery::Significance;
/// use nav_core::geometry::Point2;
/// use nav_memory::{ActionRecord, ExplorationMemory};
/// let mut m = ExplorationMemory::new(0.0);
/// m.record_discovery("Kitchen", "fridge and counter", Significance::Room, Point2::new(2.0, 1.0));
/// m.update_after_action(ActionRecord::new("move_toward", "forward", "success, +0.36m", Point2::new(2.3, 1.0)));
/// let text = m.to_prompt_text();
/// assert!(text.starts_with("MEMORY: rooms (% explored) start 0, kitchen 0; current kitchen (from start)"));
/// assert!(text.contains("Recent: [1] move_toward(forward) → success, +0.36m"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplorationMemory {
    rooms: Vec<Room>,
    current_room: String,
    dead_ends: VecDeque<DeadEnd>,
    frontiers: Vec<Frontier>,
    recent_actions: VecDeque<ActionRecord>,
    recent_discoveries: VecDeque<Discovery>,
    total_discoveries: u32,
    started_s: f64,
    exploration_duration_s: f64,
}

const EXPLORATION_FORMAT: &str = "navkit-exploration";
const EXPLORATION_VERSION: u32 = 1;

#[derive(Serialize)]
struct ExplorationOut<'a> {
    format: &'static str,
    version: u32,
    exploration: &'a ExplorationMemory,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExplorationIn {
    format: String,
    version: u32,
    exploration: ExplorationMemory,
}

/// The largest exploration memory file read (a saved one is a few KiB to a
/// few hundred KiB: the rooms, objects and lists are capped).
pub const MAX_EXPLORATION_BYTES: u64 = 16 << 20;

/// The text of a memory file, read up to [`MAX_EXPLORATION_BYTES`] and
/// pre-scanned (nesting depth, item count, no YAML aliases) before any
/// parser builds a value from it. Errors name the file.
fn read_checked(path: &Path) -> Result<String, MemoryError> {
    let text = snapshot::read_text(path, MAX_EXPLORATION_BYTES)?;
    prescan::check(&text).map_err(|reason| MemoryError::InvalidFile {
        what: "exploration memory",
        path: path.to_path_buf(),
        reason,
    })?;
    Ok(text)
}

/// A `.json` file name (any case); everything else is YAML.
fn is_json(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

impl ExplorationIn {
    /// The memory, once the envelope and the content check out.
    fn check(self, path: &Path) -> Result<ExplorationMemory, MemoryError> {
        let what = "exploration memory";
        let invalid = |reason: String| MemoryError::InvalidFile { what, path: path.to_path_buf(), reason };
        if self.format != EXPLORATION_FORMAT || self.version != EXPLORATION_VERSION {
            return Err(invalid(format!(
                "format {:?} version {} (expected {EXPLORATION_FORMAT:?} version {EXPLORATION_VERSION})",
                self.format, self.version
            )));
        }
        self.exploration.validate().map_err(invalid)?;
        Ok(self.exploration)
    }
}

impl ExplorationMemory {
    /// Actions kept (the last 5).
    pub const MAX_ACTIONS: usize = 5;
    /// Rooms kept; later `room` reports only switch among known rooms.
    pub const MAX_ROOMS: usize = 32;
    /// Objects kept per room.
    pub const MAX_ROOM_OBJECTS: usize = 24;
    /// Dead ends kept (oldest dropped).
    pub const MAX_DEAD_ENDS: usize = 10;
    /// Frontiers kept from an update.
    pub const MAX_FRONTIERS: usize = 16;
    /// Discoveries kept for logs (oldest dropped).
    pub const MAX_DISCOVERIES: usize = 10;
    /// The initial room's name.
    pub const START_ROOM: &'static str = "start";

    /// Rooms, frontiers, dead ends listed in the prompt text.
    const SHOWN_ROOMS: usize = 6;
    const SHOWN_ROOM_OBJECTS: usize = 4;
    const SHOWN_FRONTIERS: usize = 3;
    const SHOWN_DEAD_ENDS: usize = 2;
    const SHOWN_ACTIONS: usize = 3;

    /// A fresh memory in room `start` at the origin; `start_s` is the
    /// session start on the caller's clock.
    pub fn new(start_s: f64) -> Self {
        Self {
            rooms: vec![Room {
                name: Self::START_ROOM.to_string(),
                explored_pct: 0.0,
                objects: Vec::new(),
                entered_from: "origin".to_string(),
                entry: Point2::new(0.0, 0.0),
            }],
            current_room: Self::START_ROOM.to_string(),
            dead_ends: VecDeque::new(),
            frontiers: Vec::new(),
            recent_actions: VecDeque::new(),
            recent_discoveries: VecDeque::new(),
            total_discoveries: 0,
            started_s: if start_s.is_finite() { start_s } else { 0.0 },
            exploration_duration_s: 0.0,
        }
    }

    /// Updates the duration from the caller's clock reading (ignored when
    /// non-finite or earlier than the start).
    pub fn update_time(&mut self, now_s: f64) {
        if now_s.is_finite() && now_s >= self.started_s {
            self.exploration_duration_s = now_s - self.started_s;
        }
    }

    /// Continues a loaded session on a new clock: `now_s` (the caller's
    /// clock now) becomes the moment the recorded duration was reached, so
    /// later [`update_time`](Self::update_time) calls count on from it.
    pub fn resume(&mut self, now_s: f64) {
        if now_s.is_finite() {
            self.started_s = now_s - self.exploration_duration_s;
        }
    }

    /// Records an executed action and its outcome (keeps the last 5).
    pub fn update_after_action(&mut self, record: ActionRecord) {
        if self.recent_actions.len() >= Self::MAX_ACTIONS {
            self.recent_actions.pop_front();
        }
        self.recent_actions.push_back(record);
    }

    /// Records a `report_discovery`. `room` creates the room named `label`
    /// (or re-enters a known one) and makes it current; the other kinds add
    /// `label` to the current room's objects. Empty labels only count.
    pub fn record_discovery(&mut self, label: &str, notes: &str, significance: Significance, position: Point2) {
        self.total_discoveries = self.total_discoveries.saturating_add(1);
        let name = normalize_label(label);
        if let Some(name) = &name {
            if significance == Significance::Room {
                self.enter_room(name, position);
            } else if let Some(room) = self.room_mut_current() {
                if !room.objects.contains(name) && room.objects.len() < Self::MAX_ROOM_OBJECTS {
                    room.objects.push(name.clone());
                }
            }
        }
        if self.recent_discoveries.len() >= Self::MAX_DISCOVERIES {
            self.recent_discoveries.pop_front();
        }
        self.recent_discoveries.push_back(Discovery {
            label: clip_chars(label, 60),
            notes: clip_chars(notes, 160),
            significance,
            position,
            room: self.current_room.clone(),
        });
    }

    fn enter_room(&mut self, name: &str, position: Point2) {
        if name == self.current_room {
            return;
        }
        if !self.rooms.iter().any(|r| r.name == name) {
            if self.rooms.len() >= Self::MAX_ROOMS {
                tracing::warn!(room = name, "exploration memory holds {} rooms; not adding another", Self::MAX_ROOMS);
                return;
            }
            self.rooms.push(Room {
                name: name.to_string(),
                explored_pct: 0.0,
                objects: Vec::new(),
                entered_from: self.current_room.clone(),
                entry: position,
            });
        }
        self.current_room = name.to_string();
    }

    fn room_mut_current(&mut self) -> Option<&mut Room> {
        let current = self.current_room.clone();
        self.rooms.iter_mut().find(|r| r.name == current)
    }

    /// Replaces the frontier list with the latest map analysis (entries with
    /// non-finite numbers are dropped; at most [`Self::MAX_FRONTIERS`]).
    pub fn update_frontiers(&mut self, frontiers: impl IntoIterator<Item = Frontier>) {
        self.frontiers = frontiers
            .into_iter()
            .filter(|f| f.direction_deg.is_finite() && f.distance_m.is_finite() && f.width_m.is_none_or(f64::is_finite))
            .map(|f| Frontier { kind: clip_chars(&f.kind, 24), ..f })
            .take(Self::MAX_FRONTIERS)
            .collect();
    }

    /// Marks a direction as a dead end. A dead end within 0.5 m and 20° of
    /// a known one updates it instead of adding a duplicate.
    pub fn record_dead_end(&mut self, direction_deg: f64, reason: &str, position: Point2) {
        if !(direction_deg.is_finite() && position.is_finite()) {
            return;
        }
        let reason = clip_chars(reason, 40);
        let same = |d: &DeadEnd| {
            let diff = (d.direction_deg - direction_deg).rem_euclid(360.0);
            d.position.distance(position) <= 0.5 && diff.min(360.0 - diff) <= 20.0
        };
        if let Some(d) = self.dead_ends.iter_mut().find(|d| same(d)) {
            d.reason = reason;
            return;
        }
        if self.dead_ends.len() >= Self::MAX_DEAD_ENDS {
            self.dead_ends.pop_front();
        }
        self.dead_ends.push_back(DeadEnd { direction_deg, reason, position });
    }

    /// Sets a room's explored percentage (clamped to 0–100). Returns false
    /// when no room has that name.
    pub fn set_explored_pct(&mut self, room: &str, pct: f64) -> bool {
        let Some(name) = normalize_label(room) else { return false };
        match self.rooms.iter_mut().find(|r| r.name == name) {
            Some(r) if pct.is_finite() => {
                r.explored_pct = pct.clamp(0.0, 100.0);
                true
            }
            _ => false,
        }
    }

    /// The rooms in discovery order (`start` first).
    pub fn rooms(&self) -> &[Room] {
        &self.rooms
    }

    /// The current room's name.
    pub fn current_room(&self) -> &str {
        &self.current_room
    }

    /// The frontiers of the latest update.
    pub fn frontiers(&self) -> &[Frontier] {
        &self.frontiers
    }

    /// Dead ends, oldest first.
    pub fn dead_ends(&self) -> impl ExactSizeIterator<Item = &DeadEnd> + '_ {
        self.dead_ends.iter()
    }

    /// The last five actions, oldest first.
    pub fn recent_actions(&self) -> impl ExactSizeIterator<Item = &ActionRecord> + '_ {
        self.recent_actions.iter()
    }

    /// The last discoveries, oldest first.
    pub fn recent_discoveries(&self) -> impl ExactSizeIterator<Item = &Discovery> + '_ {
        self.recent_discoveries.iter()
    }

    /// All discoveries reported.
    pub fn total_discoveries(&self) -> u32 {
        self.total_discoveries
    }

    /// Seconds since the session start, as of the last `update_time`.
    pub fn duration_s(&self) -> f64 {
        self.exploration_duration_s
    }

    /// Saves the state atomically: JSON when `path` ends in `.json`, YAML
    /// otherwise.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use nav_core::discovery::Significance;
    /// use nav_core::geometry::Point2;
    /// use nav_memory::ExplorationMemory;
    /// let mut m = ExplorationMemory::new(0.0);
    /// m.record_discovery("kitchen", "", Significance::Room, Point2::new(2.0, 1.0));
    /// let path = dir.path().join("memory.yaml");
    /// m.save(&path)?;
    /// assert_eq!(ExplorationMemory::load(&path)?, m);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), MemoryError> {
        let path = path.as_ref();
        if is_json(path) {
            return self.save_json(path);
        }
        let out = ExplorationOut { format: EXPLORATION_FORMAT, version: EXPLORATION_VERSION, exploration: self };
        let what = "exploration memory";
        let text = serde_yaml_ng::to_string(&out).map_err(|source| MemoryError::SerializeYaml { what, source })?;
        snapshot::write_atomic(path, text.as_bytes())
    }

    /// Whether a memory file is at `path` for [`load`](Self::load) to read:
    /// a file (through links), or a link in a loop (whose load then says
    /// so); `false` for nothing there and for a link to a file not made yet
    /// (a first session starts empty and creates it).
    pub fn file_present(path: &Path) -> bool {
        path.exists()
            || (path.symlink_metadata().is_ok()
                && std::fs::canonicalize(path).is_err_and(|e| e.kind() != std::io::ErrorKind::NotFound))
    }

    /// Loads a state written by [`save`](Self::save) (YAML, or JSON for a
    /// `.json` file) and checks it. Errors name the file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, MemoryError> {
        let path = path.as_ref();
        if is_json(path) {
            return Self::load_json(path);
        }
        let what = "exploration memory";
        let text = read_checked(path)?;
        let snap: ExplorationIn = serde_yaml_ng::from_str(&text).map_err(|source| MemoryError::ParseYaml {
            what,
            path: path.to_path_buf(),
            source,
        })?;
        snap.check(path)
    }

    /// Saves the state as JSON, atomically.
    pub fn save_json(&self, path: impl AsRef<Path>) -> Result<(), MemoryError> {
        let out = ExplorationOut { format: EXPLORATION_FORMAT, version: EXPLORATION_VERSION, exploration: self };
        snapshot::save_json(&out, path.as_ref(), "exploration memory")
    }

    /// Loads a state saved by [`save_json`](Self::save_json) and checks it.
    /// Errors name the file.
    pub fn load_json(path: impl AsRef<Path>) -> Result<Self, MemoryError> {
        let path = path.as_ref();
        let what = "exploration memory";
        let text = read_checked(path)?;
        let snap: ExplorationIn = serde_json::from_str(&text).map_err(|source| MemoryError::Parse {
            what,
            path: path.to_path_buf(),
            source,
        })?;
        snap.check(path)
    }

    /// The longest text a memory file may hold in one field, in characters:
    /// the memory itself clips what it records to at most 160 (room names
    /// and object labels to 40), and every field goes into each prompt.
    pub const MAX_FILE_TEXT_CHARS: usize = 256;

    /// Every text field of the memory against [`Self::MAX_FILE_TEXT_CHARS`]:
    /// the first one over it, named.
    fn check_texts(&self) -> Result<(), String> {
        let mut texts: Vec<(&str, &str)> = vec![("current_room", &self.current_room)];
        for r in &self.rooms {
            texts.push(("a room name", &r.name));
            texts.push(("a room's entered_from", &r.entered_from));
            texts.extend(r.objects.iter().map(|o| ("an object label", o.as_str())));
        }
        texts.extend(self.dead_ends.iter().map(|d| ("a dead end's reason", d.reason.as_str())));
        texts.extend(self.frontiers.iter().map(|f| ("a frontier's type", f.kind.as_str())));
        for a in &self.recent_actions {
            texts.extend([
                ("a recent action", a.action.as_str()),
                ("its params", &a.params),
                ("its result", &a.result),
            ]);
        }
        for d in &self.recent_discoveries {
            texts.extend([("a discovery's label", d.label.as_str()), ("its notes", &d.notes), ("its room", &d.room)]);
        }
        let max = Self::MAX_FILE_TEXT_CHARS;
        match texts.iter().map(|(what, t)| (what, t.chars().count())).find(|(_, n)| *n > max) {
            Some((what, n)) => Err(format!("{what} is {n} characters long, at most {max}")),
            None => Ok(()),
        }
    }

    fn validate(&self) -> Result<(), String> {
        self.check_texts()?;
        if !self.rooms.iter().any(|r| r.name == self.current_room) {
            return Err(format!("current room {:?} is not among the rooms", self.current_room));
        }
        if let Some(r) = self.rooms.iter().find(|r| !(0.0..=100.0).contains(&r.explored_pct)) {
            // 1e308 as `{}` would be 309 digits
            let pct =
                if r.explored_pct.abs() < 1e6 { r.explored_pct.to_string() } else { format!("{:e}", r.explored_pct) };
            return Err(format!("room {:?} has explored_pct {pct} outside 0–100", r.name));
        }
        let caps = [
            ("recent actions", self.recent_actions.len(), Self::MAX_ACTIONS),
            ("rooms", self.rooms.len(), Self::MAX_ROOMS),
            ("dead ends", self.dead_ends.len(), Self::MAX_DEAD_ENDS),
            ("frontiers", self.frontiers.len(), Self::MAX_FRONTIERS),
            ("recent discoveries", self.recent_discoveries.len(), Self::MAX_DISCOVERIES),
        ];
        if let Some((what, n, max)) = caps.iter().find(|(_, n, max)| n > max) {
            return Err(format!("{n} {what}, at most {max}"));
        }
        if let Some(r) = self.rooms.iter().find(|r| r.objects.len() > Self::MAX_ROOM_OBJECTS) {
            return Err(format!(
                "room {:?} lists {} objects, at most {}",
                r.name,
                r.objects.len(),
                Self::MAX_ROOM_OBJECTS
            ));
        }
        if self.dead_ends.iter().any(|d| !(d.direction_deg.is_finite() && d.position.is_finite())) {
            return Err("a dead end has a non-finite direction or position".into());
        }
        if let Some(r) = self.rooms.iter().find(|r| !(r.entry.is_finite() && r.explored_pct.is_finite())) {
            return Err(format!("room {:?} has a non-finite entry point or explored_pct", r.name));
        }
        let finite_frontier = |f: &Frontier| {
            f.direction_deg.is_finite()
                && f.distance_m.is_finite()
                && f.distance_m >= 0.0
                && f.width_m.is_none_or(|w| w.is_finite() && w >= 0.0)
        };
        if let Some(f) = self.frontiers.iter().find(|f| !finite_frontier(f)) {
            return Err(format!("frontier {} has a non-finite or negative direction, distance or width", f.id));
        }
        if self.recent_actions.iter().any(|a| !a.position.is_finite()) {
            return Err("a recent action has a non-finite position".into());
        }
        if self.recent_discoveries.iter().any(|d| !d.position.is_finite()) {
            return Err("a discovery has a non-finite position".into());
        }
        if !(self.started_s.is_finite()
            && self.exploration_duration_s.is_finite()
            && self.exploration_duration_s >= 0.0)
        {
            return Err("start time and duration must be finite, duration non-negative".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_in_start_room() {
        let m = ExplorationMemory::new(10.0);
        assert_eq!(m.current_room(), "start");
        assert_eq!(m.rooms().len(), 1);
        assert!(
            m.to_prompt_text().starts_with("MEMORY: rooms (% explored) start 0; current start\n"),
            "{}",
            m.to_prompt_text()
        );
    }

    #[test]
    fn room_discovery_creates_and_switches() {
        let mut m = ExplorationMemory::new(0.0);
        m.record_discovery("Hallway", "long corridor", Significance::Room, Point2::new(1.0, 0.0));
        m.record_discovery("light switch", "", Significance::Landmark, Point2::new(1.5, 0.0));
        m.record_discovery("Kitchen", "", Significance::Room, Point2::new(3.0, 1.0));
        m.record_discovery("hallway", "back again", Significance::Room, Point2::new(1.2, 0.0));
        assert_eq!(m.rooms().len(), 3);
        assert_eq!(m.current_room(), "hallway");
        assert_eq!(m.rooms()[1].objects, ["light switch"]);
        assert_eq!(m.rooms()[2].entered_from, "hallway");
        assert_eq!(m.rooms()[2].entry, Point2::new(3.0, 1.0));
        assert_eq!(m.total_discoveries(), 4);
    }

    #[test]
    fn keeps_last_five_actions() {
        let mut m = ExplorationMemory::new(0.0);
        for i in 0..8 {
            m.update_after_action(ActionRecord::new("rotate", &i.to_string(), "success", Point2::new(0.0, 0.0)));
        }
        let params: Vec<&str> = m.recent_actions().map(|a| a.params.as_str()).collect();
        assert_eq!(params, ["3", "4", "5", "6", "7"]);
        let text = m.to_prompt_text();
        // the prompt shows the latest three, oldest first
        assert!(
            text.contains("  Recent: [3] rotate(5) → success; [2] rotate(6) → success; [1] rotate(7) → success\n"),
            "{text}"
        );
        let parts = PromptParts { without_latest_action: true, ..PromptParts::default() };
        let text = m.prompt_text(parts);
        assert!(
            text.contains("  Recent: [4] rotate(4) → success; [3] rotate(5) → success; [2] rotate(6) → success\n"),
            "{text}"
        );
    }

    #[test]
    fn prompt_parts_leave_out_the_frontiers() {
        let mut m = ExplorationMemory::new(0.0);
        let f = Frontier { id: 1, direction_deg: 30.0, distance_m: 2.0, kind: "doorway".into(), width_m: Some(0.9) };
        m.update_frontiers([f]);
        assert!(m.to_prompt_text().contains("Frontiers: 1 open — #1 30° doorway 2.0m (0.9m wide)"));
        let text = m.prompt_text(PromptParts { without_frontiers: true, ..PromptParts::default() });
        assert!(!text.contains("Frontiers"), "{text}");
        assert!(text.contains("; dead ends none; discoveries 0; time 0m00s"), "{text}");
    }

    #[test]
    fn saves_and_loads_yaml_and_json_and_resumes_the_clock() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = ExplorationMemory::new(0.0);
        m.record_discovery("Kitchen", "fridge", Significance::Room, Point2::new(2.0, 1.0));
        m.record_dead_end(90.0, "blocked", Point2::new(2.5, 1.0));
        assert!(m.set_explored_pct("kitchen", 40.0));
        m.update_after_action(ActionRecord::new("rotate", "90", "success, +0.00m", Point2::new(2.0, 1.0)));
        m.update_time(125.0);
        for name in ["memory.yaml", "memory.json"] {
            let path = dir.path().join(name);
            m.save(&path).unwrap();
            let mut back = ExplorationMemory::load(&path).unwrap();
            assert_eq!(back, m, "{name}");
            back.resume(1000.0);
            back.update_time(1010.0);
            assert_eq!(back.duration_s(), 135.0, "{name}: the clock goes on");
        }
        let yaml = std::fs::read_to_string(dir.path().join("memory.yaml")).unwrap();
        assert!(yaml.starts_with("format: navkit-exploration\nversion: 1\n"), "{yaml}");
    }

    #[test]
    fn bad_files_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.yaml");
        for (text, want) in [
            ("format: navkit-exploration\nversion: 1\nexploration: [", "corrupt exploration memory"),
            ("format: other\nversion: 1\nexploration: {}", "corrupt exploration memory"),
            ("- 1\n- 2\n", "corrupt exploration memory"),
        ] {
            std::fs::write(&path, text).unwrap();
            let e = ExplorationMemory::load(&path).unwrap_err().to_string();
            assert!(e.contains(want) && e.contains("memory.yaml"), "{e}");
        }
        let m = ExplorationMemory::new(0.0);
        m.save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap().replace("version: 1", "version: 7");
        std::fs::write(&path, text).unwrap();
        let e = ExplorationMemory::load(&path).unwrap_err().to_string();
        assert!(e.contains("invalid exploration memory") && e.contains("version 7"), "{e}");
    }

    #[test]
    fn a_file_text_over_the_cap_is_named_not_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.json");
        let m = ExplorationMemory::new(0.0);
        m.save(&path).unwrap();
        let long = "x".repeat(5_000_000);
        let text = std::fs::read_to_string(&path).unwrap().replace("\"start\"", &format!("\"{long}\""));
        std::fs::write(&path, text).unwrap();
        let e = ExplorationMemory::load(&path).unwrap_err().to_string();
        assert!(
            e.contains("is 5000000 characters long, at most 256") && e.contains("memory.json"),
            "{}",
            &e[..e.len().min(300)]
        );
        assert!(e.len() < 300, "the text is not quoted: {} bytes", e.len());
    }

    proptest::proptest! {
        /// Whatever a session records (a model's labels and notes of any
        /// length, tools' parameters, safety reasons), the file it saves
        /// loads back equal: the text cap of a file never rejects the
        /// memory's own output.
        #[test]
        fn every_saved_session_loads_back(
            events in proptest::collection::vec((0u8..4, "\\PC{0,300}", "\\PC{0,300}"), 0..30),
        ) {
            let mut m = ExplorationMemory::new(0.0);
            for (i, (kind, a, b)) in events.iter().enumerate() {
                let p = Point2::new(i as f64 * 0.1, 0.0);
                match kind {
                    0 => m.record_discovery(a, b, Significance::Room, p),
                    1 => m.record_discovery(a, b, Significance::Landmark, p),
                    2 => m.update_after_action(ActionRecord::new(a, b, a, p)),
                    _ => m.record_dead_end(i as f64 * 10.0, b, p),
                }
            }
            let dir = tempfile::tempdir().unwrap();
            for name in ["memory.yaml", "memory.json"] {
                let path = dir.path().join(name);
                m.save(&path).unwrap();
                let back = ExplorationMemory::load(&path);
                proptest::prop_assert!(back.is_ok(), "{name}: {:?}", back.err());
                proptest::prop_assert_eq!(back.unwrap(), m.clone());
            }
        }
    }

    #[test]
    fn dead_ends_deduplicate_nearby() {
        let mut m = ExplorationMemory::new(0.0);
        m.record_dead_end(90.0, "wall", Point2::new(3.1, -1.2));
        m.record_dead_end(100.0, "blocked", Point2::new(3.2, -1.2));
        m.record_dead_end(270.0, "wall", Point2::new(3.2, -1.2));
        assert_eq!(m.dead_ends().len(), 2);
        assert_eq!(m.dead_ends().next().unwrap().reason, "blocked");
    }

    #[test]
    fn duration_comes_from_injected_time() {
        let mut m = ExplorationMemory::new(100.0);
        m.update_time(372.0);
        assert_eq!(m.duration_s(), 272.0);
        m.update_time(f64::NAN);
        m.update_time(50.0);
        assert_eq!(m.duration_s(), 272.0);
        assert!(m.to_prompt_text().contains("time 4m32s"));
    }
}
