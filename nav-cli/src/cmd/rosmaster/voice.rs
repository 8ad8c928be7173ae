//! `nav rosmaster`'s voice: commands received on the voice command topic
//! go to the loop's inbox (or start a run that waits for `explore`), and
//! the announcements made from the step log are published on the
//! announcement topic (printed in a dry run).

use super::progress::Progress;
use nav_hal::rosbridge::{RosbridgeHal, SpeechHandle, TopicsConfig};
use nav_planner::navigator::voice::{VoiceCommand, VoiceInbox};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How often a run waiting for `explore` looks for commands.
const WAIT_POLL: Duration = Duration::from_millis(100);

/// How long the last announcements may take before the command exits.
const FINAL_SAY_TIMEOUT: Duration = Duration::from_secs(2);

/// A publish returns once the message is queued on the WebSocket; the
/// command waits this long after the last one so it leaves before the
/// process exits.
const FLUSH_GRACE: Duration = Duration::from_millis(300);

/// Parses the commands received since the last call into `inbox`, with a
/// progress line each.
pub(super) fn forward_voice(hal: &RosbridgeHal, inbox: &VoiceInbox, progress: &Progress) {
    let topic = &hal.config().topics.voice_command;
    for text in hal.take_voice_commands() {
        if let Some(command) = inbox.push_text(&text) {
            progress.say(&format!("voice on {topic}: {}", describe(&command)));
        }
    }
}

/// What the objectnav relay says when a command arrives (the loop applies
/// it between steps).
fn acknowledgement(command: &VoiceCommand) -> &'static str {
    match command {
        VoiceCommand::Explore | VoiceCommand::Resume => "Resuming.",
        VoiceCommand::Pause => "Pausing after this step.",
        VoiceCommand::Stop => "Stopping.",
        VoiceCommand::GoHome => "Going home.",
        VoiceCommand::Instruction(_) => "Understood.",
    }
}

/// A command for a progress line.
fn describe(command: &VoiceCommand) -> String {
    match command {
        VoiceCommand::Instruction(i) => format!("instruction for the planner: {:?}", i.as_str()),
        other => other.name().to_string(),
    }
}

/// Publishes the announcements made since the last call on the
/// announcement topic, from a task of its own so the control tick does not
/// wait (printed instead in a dry run).
pub(super) fn speak_announcements(hal: &RosbridgeHal, progress: &Progress) {
    let texts = progress.take_announcements();
    if texts.is_empty() {
        return;
    }
    let topic = hal.config().topics.say.clone();
    if hal.config().dry_run {
        for text in texts {
            progress.say(&format!("dry run: would say {text:?} on {topic}"));
        }
        return;
    }
    let speech = hal.speech_handle();
    let progress = progress.clone();
    tokio::spawn(async move {
        for text in texts {
            if let Err(e) = speech.announce(&text).await {
                progress.say(&format!("could not announce on {topic}: {e}"));
            }
        }
    });
}

/// Publishes `text` on the announcement topic `say` (printed instead in a
/// dry run); a failure is printed. False when the publish failed.
async fn announce_one(speech: &SpeechHandle, progress: &Progress, dry_run: bool, say: &str, text: &str) -> bool {
    if dry_run {
        progress.say(&format!("dry run: would say {text:?} on {say}"));
        return true;
    }
    match speech.announce(text).await {
        Ok(()) => true,
        Err(e) => {
            progress.say(&format!("could not announce on {say}: {e}"));
            false
        }
    }
}

/// Publishes what is left to announce and `last` (the end of the run),
/// waiting for them at most [`FINAL_SAY_TIMEOUT`].
pub(super) async fn final_announcements(
    speech: &SpeechHandle,
    progress: &Progress,
    dry_run: bool,
    topic: &str,
    last: &str,
) {
    let mut texts = progress.take_announcements();
    texts.push(last.to_string());
    let publish = async {
        for text in &texts {
            if !announce_one(speech, progress, dry_run, topic, text).await {
                return;
            }
        }
    };
    if tokio::time::timeout(FINAL_SAY_TIMEOUT, publish).await.is_err() {
        progress.say(&format!("the last announcements on {topic} timed out"));
    }
    if !dry_run {
        // the publishes have been handed to the link; let them leave before the process exits
        tokio::time::sleep(FLUSH_GRACE).await;
    }
}

/// `--wait-for-voice`: holds the robot until the operator says `explore`
/// (true) or `stop`, or a signal ends the session (false). Other commands
/// are answered with a reminder.
pub(super) async fn wait_for_explore(
    hal: &RosbridgeHal,
    progress: &Progress,
    interrupted: &mut watch::Receiver<bool>,
) -> bool {
    let (topic, say) = (hal.config().topics.voice_command.clone(), hal.config().topics.say.clone());
    let dry_run = hal.config().dry_run;
    let speech = hal.speech_handle();
    progress.say(&format!("waiting for \"explore\" on {topic} (std_msgs/String); \"stop\" or Ctrl-C ends"));
    let announce = async |text: &str| {
        announce_one(&speech, progress, dry_run, &say, text).await;
    };
    announce("Ready. Say explore to start.").await;
    loop {
        for text in hal.take_voice_commands() {
            let Some(command) = VoiceCommand::parse(&text) else { continue };
            progress.say(&format!("voice on {topic}: {}", describe(&command)));
            match command {
                VoiceCommand::Explore => {
                    announce("Exploring.").await;
                    return true;
                }
                VoiceCommand::Stop => {
                    announce("Stopping.").await;
                    return false;
                }
                _ => announce("Waiting. Say explore to start.").await,
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(WAIT_POLL) => {}
            _ = interrupted.wait_for(|i| *i) => return false,
        }
    }
}

/// For a loop that holds the HAL the whole time (objectnav): a task that
/// every [`WAIT_POLL`] passes the voice commands received (and a change of
/// the pause topic, as `pause` / `resume`) to `inbox` and publishes the
/// announcements made meanwhile (printed in a dry run). Abort it when the
/// loop ends.
pub(super) fn spawn_relay(
    speech: SpeechHandle,
    inbox: VoiceInbox,
    progress: Progress,
    topics: &TopicsConfig,
    dry_run: bool,
) -> JoinHandle<()> {
    let (voice, pause, say) = (topics.voice_command.clone(), topics.pause.clone(), topics.say.clone());
    tokio::spawn(async move {
        let mut paused = speech.paused();
        loop {
            for text in speech.take_voice_commands() {
                if let Some(command) = inbox.push_text(&text) {
                    progress.say(&format!("voice on {voice}: {}", describe(&command)));
                    progress.announce(acknowledgement(&command));
                }
            }
            if speech.paused() != paused {
                paused = !paused;
                progress.say(&format!("{} by {pause}", if paused { "paused" } else { "resumed" }));
                let command = if paused { VoiceCommand::Pause } else { VoiceCommand::Resume };
                progress.announce(acknowledgement(&command));
                inbox.push(command);
            }
            for text in progress.take_announcements() {
                announce_one(&speech, &progress, dry_run, &say, &text).await;
            }
            tokio::time::sleep(WAIT_POLL).await;
        }
    })
}
