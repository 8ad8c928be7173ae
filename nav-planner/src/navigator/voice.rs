//! Voice commands and spoken announcements.
//!
//! An operator steers a run with a handful of spoken words — a
//! `std_msgs/String` topic on a robot, a line on stdin in the simulator —
//! parsed here into a [`VoiceCommand`]: `explore`, `stop`, `pause`,
//! `resume`, `go home` (also `home`, `return home`, …). Anything else is
//! a [`UserInstruction`] handed to the planner's next request, trimmed,
//! stripped of control characters and bounded to
//! [`MAX_INSTRUCTION_CHARS`].
//!
//! Commands reach a running loop through a [`VoiceInbox`] (a small
//! bounded queue shared by the receiving side and the loop); the loop
//! applies them at its next step and writes each to the step log as a
//! `{"event":"voice","command":…}` event.
//!
//! [`announcement`] turns the loop's step-log events into the sentences
//! spoken on the announcement topic: discoveries, watchdog tier changes,
//! safety stops (naming their source), pause and resume acknowledgements,
//! the end of a run.

use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

pub use crate::protocol::instruction::{MAX_INSTRUCTION_CHARS, UserInstruction};

/// Commands a [`VoiceInbox`] keeps before dropping the oldest (an operator
/// speaks a few per minute; a flood must not grow memory).
pub const INBOX_CAPACITY: usize = 32;

/// One spoken command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VoiceCommand {
    /// Start exploring (a run waiting for it starts), or go back to
    /// exploring: a paused run resumes, a run on its way home explores again.
    Explore,
    /// End the run: zero velocity, the end `operator_stop`.
    Stop,
    /// Hold still (no motion, no decisions) until `resume`; a pause is no
    /// model failure, the watchdog does not count it.
    Pause,
    /// End a pause.
    Resume,
    /// Go back to where the run started, then end (`returned_home`).
    GoHome,
    /// Anything else: said to the planner in its next request.
    Instruction(UserInstruction),
}

impl VoiceCommand {
    /// Parses what the operator said: case-insensitive, surrounding
    /// whitespace and punctuation ignored. `None` for empty text (nothing
    /// but whitespace, control characters or punctuation).
    pub fn parse(text: &str) -> Option<Self> {
        let instruction = UserInstruction::new(text)?;
        let key: String = instruction
            .as_str()
            .trim_matches(|c: char| !c.is_alphanumeric())
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase();
        let command = match key.as_str() {
            "" => return None,
            "explore" | "start" | "start exploring" | "go explore" | "explore again" => Self::Explore,
            "stop" | "halt" | "stop now" | "abort" => Self::Stop,
            "pause" | "wait" | "hold on" => Self::Pause,
            "resume" | "continue" | "go on" => Self::Resume,
            "go home" | "home" | "return home" | "come home" | "come back" | "go back home" | "return to start" => {
                Self::GoHome
            }
            _ => Self::Instruction(instruction),
        };
        Some(command)
    }

    /// The command's name in the step log: `explore`, `stop`, `pause`,
    /// `resume`, `go_home`, `instruction`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Explore => "explore",
            Self::Stop => "stop",
            Self::Pause => "pause",
            Self::Resume => "resume",
            Self::GoHome => "go_home",
            Self::Instruction(_) => "instruction",
        }
    }

    /// The step-log event: `{"event":"voice","command":NAME}`, with
    /// `"text"` for an instruction and `"note"` when given (e.g. why the
    /// command changed nothing).
    pub fn event(&self, note: Option<&str>) -> Value {
        let mut e = json!({"event": "voice", "command": self.name()});
        if let Self::Instruction(i) = self {
            e["text"] = json!(i.as_str());
        }
        if let Some(note) = note {
            e["note"] = json!(note);
        }
        e
    }
}

/// Commands waiting for a loop; clones share one queue. Holds at most
/// [`INBOX_CAPACITY`] commands (the oldest is dropped).
#[derive(Debug, Clone, Default)]
pub struct VoiceInbox {
    queue: Arc<Mutex<VecDeque<VoiceCommand>>>,
}

impl VoiceInbox {
    /// An empty inbox.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues a command for the loop's next step.
    pub fn push(&self, command: VoiceCommand) {
        let mut q = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if q.len() >= INBOX_CAPACITY {
            q.pop_front();
        }
        q.push_back(command);
    }

    /// Parses `text` and queues it; the command, or `None` for empty text.
    pub fn push_text(&self, text: &str) -> Option<VoiceCommand> {
        let command = VoiceCommand::parse(text)?;
        self.push(command.clone());
        Some(command)
    }

    /// Every queued command, oldest first; the inbox is empty afterwards.
    pub fn take(&self) -> Vec<VoiceCommand> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner).drain(..).collect()
    }
}

/// How often a loop held by a [`VoiceGate`] pause looks for new commands.
pub const PAUSE_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// What the operator's commands ask of a step-by-step loop (ObjectNav)
/// before its next step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateStep {
    /// Take the next step.
    Go,
    /// Paused: take no step, ask again after [`PAUSE_POLL`]; `began` on the
    /// first poll of the pause (stop the robot then).
    Hold {
        /// The pause began with this poll.
        began: bool,
    },
    /// `stop`: end the run.
    Stop,
    /// `go home`: end the search; the caller takes the robot back.
    GoHome,
}

/// Voice commands for a loop that acts in discrete steps: before each
/// step, [`VoiceGate::poll`] applies the queued commands and says whether
/// to step, hold (paused until `resume` or `explore`) or end.
#[derive(Debug, Clone, Default)]
pub struct VoiceGate {
    inbox: VoiceInbox,
    paused: bool,
    instruction: Option<UserInstruction>,
}

impl VoiceGate {
    /// A gate reading `inbox`.
    pub fn new(inbox: VoiceInbox) -> Self {
        Self { inbox, paused: false, instruction: None }
    }

    /// The operator's latest free text, taken once (for the planner's
    /// next request).
    pub fn take_instruction(&mut self) -> Option<UserInstruction> {
        self.instruction.take()
    }

    /// Applies the queued commands, each a `voice` event in `events` (and
    /// `paused` / `resumed` on a change of the pause).
    pub fn poll(&mut self, events: &mut Vec<Value>) -> GateStep {
        let was_paused = self.paused;
        for command in self.inbox.take() {
            let mut note = None;
            match &command {
                VoiceCommand::Stop | VoiceCommand::GoHome => {
                    events.push(command.event(None));
                    return if command == VoiceCommand::Stop { GateStep::Stop } else { GateStep::GoHome };
                }
                VoiceCommand::Pause if self.paused => note = Some("already paused"),
                VoiceCommand::Pause => self.paused = true,
                VoiceCommand::Resume | VoiceCommand::Explore if !self.paused => note = Some("not paused"),
                VoiceCommand::Resume | VoiceCommand::Explore => self.paused = false,
                VoiceCommand::Instruction(i) => self.instruction = Some(i.clone()),
            }
            events.push(command.event(note));
        }
        if self.paused != was_paused {
            events.push(json!({"event": if self.paused { "paused" } else { "resumed" }}));
        }
        if self.paused { GateStep::Hold { began: !was_paused } } else { GateStep::Go }
    }
}

/// Safety override kinds that halt the robot, and how they are spoken.
const STOP_SOURCES: [(&str, &str); 7] = [
    ("emergency_stop", "an obstacle ahead"),
    ("ttc_stop", "an obstacle closing in"),
    ("sensor_loss", "lost sensors"),
    ("blind", "a blind lidar"),
    ("geofence_keepout", "a keep-out zone"),
    ("arbiter", "the stop arbiter"),
    ("invalid_command", "an invalid command"),
];

/// The sentence to speak for one step-log event, if any: a discovery, a
/// watchdog tier with an announcement, a safety stop (naming its source),
/// a pause, a resume, a voice command acknowledged, or a run's end
/// (`{"event":"end","end":…}`).
pub fn announcement(event: &Value) -> Option<String> {
    let text = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or("").trim().to_string();
    let sentence = match text("event").as_str() {
        "discovery" => {
            let notes = text("notes");
            if notes.is_empty() {
                format!("I found {}.", text("label"))
            } else {
                format!("I found {}: {notes}", text("label"))
            }
        }
        "watchdog" => {
            let a = text("announcement");
            if a.is_empty() {
                return None;
            }
            a
        }
        "safety_override" => {
            let kind = text("kind");
            let (_, source) = STOP_SOURCES.iter().find(|(k, _)| *k == kind)?;
            format!("Safety stop by {source}.")
        }
        "paused" => "Paused. Say resume to continue.".into(),
        "resumed" => "Resuming.".into(),
        "voice" => match text("command").as_str() {
            "stop" => "Stopping.".into(),
            "go_home" => "Going home.".into(),
            "explore" => "Exploring.".into(),
            "instruction" => "Understood.".into(),
            _ => return None,
        },
        "end" => format!("Run ended: {}.", text("end").replace('_', " ")),
        _ => return None,
    };
    Some(sentence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn commands_are_recognised_in_any_case_and_spacing() {
        assert_eq!(VoiceCommand::parse("  Explore "), Some(VoiceCommand::Explore));
        assert_eq!(VoiceCommand::parse("STOP!"), Some(VoiceCommand::Stop));
        assert_eq!(VoiceCommand::parse("pause."), Some(VoiceCommand::Pause));
        assert_eq!(VoiceCommand::parse("Resume"), Some(VoiceCommand::Resume));
        assert_eq!(VoiceCommand::parse("go   home"), Some(VoiceCommand::GoHome));
        assert_eq!(VoiceCommand::parse("Return home"), Some(VoiceCommand::GoHome));
        assert_eq!(VoiceCommand::parse("home"), Some(VoiceCommand::GoHome));
        assert_eq!(VoiceCommand::parse(" \t\n"), None);
        assert_eq!(VoiceCommand::parse("?!"), None);
        let free = VoiceCommand::parse("look\u{7}for the\nkitchen").unwrap();
        assert_eq!(free, VoiceCommand::Instruction(UserInstruction::new("look for the kitchen").unwrap()));
        assert_eq!(
            free.event(None),
            json!({"event": "voice", "command": "instruction", "text": "look for the kitchen"})
        );
    }

    #[test]
    fn the_inbox_is_bounded_and_drains_in_order() {
        let inbox = VoiceInbox::new();
        for _ in 0..INBOX_CAPACITY {
            inbox.push(VoiceCommand::Pause);
        }
        inbox.push_text("resume");
        let all = inbox.take();
        assert_eq!(all.len(), INBOX_CAPACITY);
        assert_eq!(all.last(), Some(&VoiceCommand::Resume));
        assert!(inbox.take().is_empty());
    }

    #[test]
    fn announcements_name_the_stop_source_and_skip_the_rest() {
        let stop = json!({"event": "safety_override", "kind": "emergency_stop", "code": "x", "reason": "y"});
        assert_eq!(announcement(&stop).as_deref(), Some("Safety stop by an obstacle ahead."));
        let slow = json!({"event": "safety_override", "kind": "proportional_slowdown"});
        assert_eq!(announcement(&slow), None);
        assert_eq!(announcement(&json!({"event": "watchdog", "tier": "CONTINUE"})), None);
        let end = json!({"event": "end", "end": "operator_stop"});
        assert_eq!(announcement(&end).as_deref(), Some("Run ended: operator stop."));
        assert_eq!(announcement(&json!({"event": "paused"})).as_deref(), Some("Paused. Say resume to continue."));
    }

    #[test]
    fn the_gate_holds_a_pause_until_resume_and_ends_on_stop_or_home() {
        let inbox = VoiceInbox::new();
        let mut gate = VoiceGate::new(inbox.clone());
        let mut events = Vec::new();
        assert_eq!(gate.poll(&mut events), GateStep::Go);
        inbox.push_text("pause");
        assert_eq!(gate.poll(&mut events), GateStep::Hold { began: true });
        inbox.push_text("look left");
        assert_eq!(gate.poll(&mut events), GateStep::Hold { began: false });
        inbox.push_text("resume");
        assert_eq!(gate.poll(&mut events), GateStep::Go);
        let names: Vec<&str> =
            events.iter().map(|e| e["command"].as_str().or_else(|| e["event"].as_str()).unwrap_or("")).collect();
        assert_eq!(names, ["pause", "paused", "instruction", "resume", "resumed"]);
        assert_eq!(gate.take_instruction().map(|i| i.to_string()).as_deref(), Some("look left"));
        inbox.push_text("go home");
        assert_eq!(gate.poll(&mut events), GateStep::GoHome);
        inbox.push_text("stop");
        assert_eq!(gate.poll(&mut events), GateStep::Stop);
    }

    proptest! {
        #[test]
        fn parsing_never_panics_and_free_text_is_bounded(text in any::<String>()) {
            if let Some(VoiceCommand::Instruction(i)) = VoiceCommand::parse(&text) {
                prop_assert!(!i.as_str().is_empty());
                prop_assert!(i.as_str().chars().count() <= MAX_INSTRUCTION_CHARS);
                prop_assert!(!i.as_str().chars().any(char::is_control));
            }
        }

        #[test]
        fn long_text_is_cut(text in "[a-z ]{0,600}") {
            if let Some(i) = UserInstruction::new(&text) {
                prop_assert!(i.as_str().chars().count() <= MAX_INSTRUCTION_CHARS);
                prop_assert_eq!(i.as_str(), i.as_str().trim());
            }
        }
    }
}
