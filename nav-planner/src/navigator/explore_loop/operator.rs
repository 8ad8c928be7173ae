//! The operator's voice commands applied to a run: each is logged as a
//! `voice` event and changes the pause signal, the way home, the end, or
//! the planner's next request.

use super::ExploreSignals;
use super::state::LoopState;
use crate::navigator::voice::VoiceCommand;
use serde_json::Value;
use std::sync::atomic::Ordering;

/// What the operator asked of the run so far.
#[derive(Debug, Default)]
pub(super) struct Operator {
    /// `go home`: RETURN_HOME without decisions until home (or `explore`).
    pub(super) going_home: bool,
    /// `stop`: the tick publishes zero velocity and the run ends.
    pub(super) stop: bool,
}

impl Operator {
    /// Applies the commands queued since the last tick, oldest first; on
    /// the `first` tick an `explore` is the one that started the run (a
    /// caller that waited for it queues it).
    pub(super) fn apply(&mut self, signals: &ExploreSignals, st: &mut LoopState, first: bool, events: &mut Vec<Value>) {
        for command in signals.voice.take() {
            let note = match self.apply_one(&command, signals, st) {
                Some("already exploring") if first => Some("started the run"),
                note => note,
            };
            events.push(command.event(note));
        }
    }

    /// One command; a note when it changed nothing.
    fn apply_one(
        &mut self,
        command: &VoiceCommand,
        signals: &ExploreSignals,
        st: &mut LoopState,
    ) -> Option<&'static str> {
        let pause = &signals.pause;
        match command {
            VoiceCommand::Stop => self.stop = true,
            VoiceCommand::Pause => {
                if pause.swap(true, Ordering::SeqCst) {
                    return Some("already paused");
                }
            }
            VoiceCommand::Resume => {
                if !pause.swap(false, Ordering::SeqCst) {
                    return Some("not paused");
                }
            }
            VoiceCommand::GoHome => {
                pause.store(false, Ordering::SeqCst);
                if std::mem::replace(&mut self.going_home, true) {
                    return Some("already going home");
                }
            }
            VoiceCommand::Explore => {
                let was_paused = pause.swap(false, Ordering::SeqCst);
                let was_going_home = std::mem::take(&mut self.going_home);
                if !was_paused && !was_going_home {
                    return Some("already exploring");
                }
            }
            VoiceCommand::Instruction(text) => st.instruction = Some(text.as_str().to_string()),
        }
        None
    }
}
