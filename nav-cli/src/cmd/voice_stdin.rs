//! `nav run --voice stdin`: voice commands typed on standard input, one a
//! line (`pause`, `resume`, `stop`, `go home`, `explore`, or free text for
//! the planner), and the announcements printed on stderr as `say:` lines.

use nav_planner::navigator::StepRecord;
use nav_planner::navigator::voice::{VoiceInbox, announcement};
use std::io::{BufRead, ErrorKind};

/// Most bytes of one typed command line; a longer line is dropped.
pub const MAX_VOICE_LINE_BYTES: u64 = 4 << 10;

/// Reads standard input on a thread of its own until it ends, queueing
/// each line in `inbox` (a line that is too long or not UTF-8 is dropped
/// with a warning).
pub fn spawn_stdin(inbox: VoiceInbox) {
    std::thread::spawn(move || pump(std::io::stdin().lock(), &inbox));
}

fn pump(mut reader: impl BufRead, inbox: &VoiceInbox) {
    let mut buf = Vec::new();
    for line_no in 1u64.. {
        match nav_core::bounded::read_line_limited(&mut reader, MAX_VOICE_LINE_BYTES, &mut buf) {
            Ok(0) => return,
            Ok(_) => match std::str::from_utf8(&buf) {
                Ok(line) => {
                    if let Some(command) = inbox.push_text(line) {
                        crate::exit::diag!("voice: {}", command.name());
                    }
                }
                Err(_) => crate::exit::diag!("nav: warning: voice line {line_no} dropped: it is not UTF-8 text"),
            },
            Err(e) if e.kind() == ErrorKind::InvalidData => {
                crate::exit::diag!(
                    "nav: warning: voice line {line_no} dropped: longer than {MAX_VOICE_LINE_BYTES} bytes"
                );
                if !skip_line(&mut reader) {
                    return;
                }
            }
            Err(e) => {
                crate::exit::diag!(
                    "nav: warning: reading voice commands from standard input: {e}; the rest is not read"
                );
                return;
            }
        }
    }
}

/// Skips through the end of the current line; false at the end of input
/// or on a read error.
fn skip_line(reader: &mut impl BufRead) -> bool {
    loop {
        let (found, used) = match reader.fill_buf() {
            Ok([]) | Err(_) => return false,
            Ok(chunk) => match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (true, i + 1),
                None => (false, chunk.len()),
            },
        };
        reader.consume(used);
        if found {
            return true;
        }
    }
}

/// A step-log tap printing every announcement as a `say:` line on stderr.
pub fn say_tap() -> impl FnMut(&StepRecord) + Send + 'static {
    |record| {
        for text in record.events.iter().filter_map(announcement) {
            crate::exit::diag!("say: {text}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nav_planner::navigator::voice::VoiceCommand;

    #[test]
    fn lines_become_commands_and_long_or_broken_lines_are_dropped() {
        let long = "x".repeat(MAX_VOICE_LINE_BYTES as usize + 10);
        let input = format!("pause\n{long}\n\u{0}\n\nGo Home\r\n");
        let mut bytes = input.into_bytes();
        bytes.extend_from_slice(b"\xff\xfe\nstop");
        let inbox = VoiceInbox::new();
        pump(bytes.as_slice(), &inbox);
        assert_eq!(inbox.take(), [VoiceCommand::Pause, VoiceCommand::GoHome, VoiceCommand::Stop]);
    }
}
