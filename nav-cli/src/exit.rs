//! How commands fail: bad usage/input (exit 2), internal errors (exit 3),
//! output that cannot be written (exit 3 with a message, or a quiet exit 0
//! when the reader of standard output has gone away), a model that cannot
//! be reached (exit 5), a replay that left its recording (exit 6).

/// A command's failure, mapped to an exit code by `main`.
#[derive(Debug)]
pub enum Exit {
    /// Bad usage or bad input: exit 2, with a message naming the problem.
    Usage(String),
    /// Something that should not happen: exit 3.
    Internal(String),
    /// Output could not be written (a full disk, an I/O error): exit 3,
    /// with a message naming what was being written.
    Output(String),
    /// The model cannot be reached or used (connection refused, DNS, TLS,
    /// HTTP 401/403/404): exit 5, with one line naming the URL and the
    /// cause. The robot was stopped first.
    ModelLink(String),
    /// A replayed run asked something its recording does not hold: exit 6,
    /// with the step, the request kind and the lines that differ.
    ReplayDiverged(String),
    /// Standard output's reader has gone away (a closed pipe, `nav … | head`):
    /// exit 0 quietly, as other Unix tools do.
    StdoutClosed,
}

impl Exit {
    /// The exit code and the message (if any) `main` prints for this failure.
    pub fn code_and_message(&self) -> (i32, Option<String>) {
        match self {
            Exit::Usage(msg) => (2, Some(format!("nav: {msg}"))),
            Exit::Internal(msg) => (3, Some(format!("nav: internal error: {msg}"))),
            Exit::Output(msg) => (3, Some(format!("nav: {msg}"))),
            Exit::ModelLink(msg) => (5, Some(format!("nav: {msg}"))),
            Exit::ReplayDiverged(msg) => (6, Some(format!("nav: {msg}"))),
            Exit::StdoutClosed => (0, None),
        }
    }
}

/// `message` as `main` prints it: the values of every provider's
/// credential variables (`OPENAI_API_KEY`, `OPENROUTER_API_KEY`,
/// `GEMINI_API_KEY`, …), whole or altered, and tokens with a known key
/// prefix (`sk-…`, `AIza…`) replaced by `[REDACTED]`. A message can quote
/// what a user typed (`--base-url`) or what a bridge or worker said, and
/// either may hold a key.
pub fn scrub(message: &str) -> String {
    terminal_safe(&nav_planner::vlm::scrub_credentials(message))
}

/// `text` safe for a terminal: control characters other than newline and
/// tab (ESC, BEL, carriage return, DEL, C1 codes such as U+009B) become
/// `?`, so text from outside (a bridge's episode id, a server's error body,
/// a summary line in an eval file) cannot move the cursor, clear the
/// screen, restyle or hide the rest of a line, or retitle the window. nav
/// writes no colour codes of its own.
pub fn terminal_safe(text: &str) -> String {
    text.chars()
        .map(
            |c| {
                if (c.is_control() && c != '\n' && c != '\t') || nav_core::bounded::is_bidi_control(c) {
                    '?'
                } else {
                    c
                }
            },
        )
        .collect()
}

/// Longest diagnostic or final message `nav` prints, characters.
pub const MAX_MESSAGE_CHARS: usize = 4000;

/// A diagnostic or final message as printed: [`scrub`]bed, and cut to
/// [`MAX_MESSAGE_CHARS`] keeping its start and end (a parser's error can
/// quote a whole file's worth of a string value).
pub fn message_text(message: &str) -> String {
    scrub(&nav_core::bounded::cut_middle(message, MAX_MESSAGE_CHARS))
}

/// A command's result: the exit code on success.
pub type CmdResult = Result<i32, Exit>;

/// Shorthand for a usage error.
pub fn usage(msg: impl Into<String>) -> Exit {
    Exit::Usage(msg.into())
}

/// Shorthand for an internal error.
pub fn internal(msg: impl std::fmt::Display) -> Exit {
    Exit::Internal(msg.to_string())
}

/// A failed write of `what` (a file's name, "standard output"): a closed
/// pipe on standard output is a quiet [`Exit::StdoutClosed`], anything else
/// (`ENOSPC`, `EIO`) an [`Exit::Output`] naming `what`.
pub fn write_error(what: &str, e: &std::io::Error) -> Exit {
    if e.kind() == std::io::ErrorKind::BrokenPipe && what == STDOUT {
        Exit::StdoutClosed
    } else {
        Exit::Output(format!("writing {what}: {e}"))
    }
}

/// Checks a named output before any work, so a run is not lost at its end:
/// a FIFO or socket is refused (opening one blocks), as are a directory, a
/// path whose folder does not exist, and the file of one of the command's
/// `inputs` under any name (the output would overwrite what it was made
/// from). Exit 2 naming `flag` and the path.
pub fn check_output(flag: &str, path: &std::path::Path, inputs: &[&std::path::Path]) -> Result<(), Exit> {
    let bad = |why: String| Err(usage(format!("{flag} {}: {why}", path.display())));
    nav_core::bounded::refuse_fifo(path).or_else(|e| bad(e.to_string()))?;
    if path.is_dir() {
        return bad("a directory, not a file".into());
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty() && !d.is_dir()) {
        let why = if dir.exists() { "is not a folder" } else { "does not exist" };
        return bad(format!("its folder {} {why}", dir.display()));
    }
    // the same file by any name: a link, a hard link, another spelling of the path
    let same = |input: &std::path::Path| match (std::fs::metadata(path), std::fs::metadata(input)) {
        #[cfg(unix)]
        (Ok(a), Ok(b)) => {
            use std::os::unix::fs::MetadataExt;
            (a.dev(), a.ino()) == (b.dev(), b.ino())
        }
        #[cfg(not(unix))]
        (Ok(_), Ok(_)) => std::fs::canonicalize(path).ok() == std::fs::canonicalize(input).ok(),
        _ => path == input,
    };
    match inputs.iter().find(|i| same(i)) {
        Some(i) => Err(usage(format!(
            "{flag} {}: that is also the input {}; the output would overwrite it",
            path.display(),
            i.display()
        ))),
        None => Ok(()),
    }
}

/// The name [`write_error`] and [`print`] use for standard output.
pub const STDOUT: &str = "standard output";

/// Writes `text` (without the credential variables' values, made
/// [`terminal_safe`]) and a newline to standard output and flushes it. Never
/// panics (unlike `println!`): a closed pipe is [`Exit::StdoutClosed`], a
/// full device an [`Exit::Output`].
pub fn print(text: &str) -> Result<(), Exit> {
    use std::io::Write;
    // the values of the credential variables never reach standard output either (a `--model`
    // given the key by mistake is printed in the run summary)
    let values = nav_planner::vlm::credential_env_values();
    let scrubbed;
    let text = if values.is_empty() {
        text
    } else {
        let secrets: Vec<&str> = values.iter().map(String::as_str).collect();
        scrubbed = nav_planner::vlm::redact_secrets(text, &secrets);
        scrubbed.as_str()
    };
    // what nav prints can quote text from outside (an eval file's arena name, a bridge's episode id)
    let text = terminal_safe(text);
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(|e| write_error(STDOUT, &e))
}

/// Writes `text` as [`message_text`] prints it and a newline to standard error. Never panics (unlike
/// `eprintln!`, which panics when standard error is full or closed): a
/// diagnostic that cannot be written is dropped, since there is nowhere
/// left to report it, and the command's output and exit code stand.
pub fn diag_line(text: &str) {
    use std::io::Write;
    // a diagnostic can quote what a user typed (a URL with a key in it) or a whole input
    let text = message_text(text);
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.write_all(b"\n")).and_then(|()| err.flush());
}

/// The log subscriber's writer: an event is buffered and, when it ends,
/// [`scrub`]bed and written to standard error in one write (a failed write
/// is dropped, as [`diag_line`] does).
#[derive(Default)]
pub struct ScrubbedStderr(Vec<u8>);

impl std::io::Write for ScrubbedStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for ScrubbedStderr {
    fn drop(&mut self) {
        use std::io::Write;
        if self.0.is_empty() {
            return;
        }
        let text = scrub(&String::from_utf8_lossy(&self.0));
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
    }
}

/// `eprintln!` through [`diag_line`]: a full or closed standard error never
/// panics. Every diagnostic of `nav` goes through it.
macro_rules! diag {
    ($($arg:tt)*) => {
        $crate::exit::diag_line(&format!($($arg)*))
    };
}
pub(crate) use diag;

/// A single-threaded tokio runtime for a command.
pub fn runtime() -> Result<tokio::runtime::Runtime, Exit> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(internal)
}

/// How an episode's failure exits: a bad spec, arena or configuration
/// value (the loops' own config checks included) is bad input, exit 2; a
/// step log that cannot be written is an output failure, exit 3 naming
/// the log; anything else is internal, exit 3.
pub fn episode_error(e: nav_planner::navigator::episode::EpisodeError) -> Exit {
    use nav_planner::navigator::NavError;
    use nav_planner::navigator::episode::EpisodeError;
    match e {
        EpisodeError::Spec(m) | EpisodeError::Capability(m) => usage(m),
        EpisodeError::ModelLink(f) => Exit::ModelLink(f.to_string()),
        EpisodeError::ReplayDiverged(d) => Exit::ReplayDiverged(d.to_string()),
        EpisodeError::Config(c) => usage(format!("config {}", section_and_key(&c))),
        EpisodeError::Hal(h) => usage(h.to_string()),
        EpisodeError::Nav(NavError::Config(m)) => usage(m),
        EpisodeError::Nav(NavError::InvalidConfig(c)) => usage(format!("config {}", section_and_key(&c))),
        // the step log could not be written (a full disk): output, not a bug
        EpisodeError::Nav(NavError::Log(e)) => Exit::Output(e.to_string()),
        EpisodeError::Nav(NavError::Memory(nav_memory::MemoryError::Config(c))) => {
            usage(format!("memory config {}", section_and_key(&c)))
        }
        other => internal(other),
    }
}

/// `[explore.safety.speeds] fast_mps: must be …` for the key
/// `explore.safety.speeds.fast_mps`: the table a user edits, then the key.
pub fn section_and_key(e: &nav_core::config::ConfigError) -> String {
    match e.key.rsplit_once('.') {
        Some((section, key)) => format!("[{section}] {key}: {}", e.message),
        None => format!("[{}] {}", e.key, e.message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_safe_keeps_text_and_no_control_characters() {
        assert_eq!(terminal_safe("a\u{1b}[2Jb\u{7}c\r\u{9b}31m\n\td\u{7f}"), "a?[2Jb?c??31m\n\td?");
        assert_eq!(terminal_safe("\u{1b}[8mhidden\u{1b}[0m"), "?[8mhidden?[0m", "no colour or hiding codes either");
        assert_eq!(terminal_safe("\u{1b}]0;title\u{7}"), "?]0;title?");
        assert_eq!(terminal_safe("\u{1b}["), "?[");
        assert_eq!(terminal_safe("plain ünïcode"), "plain ünïcode");
        assert_eq!(
            terminal_safe("gpj.\u{202e}txt and \u{2066}x\u{2069}"),
            "gpj.?txt and ?x?",
            "no reordering of the line"
        );
    }

    #[test]
    fn a_closed_pipe_is_quiet_and_a_full_disk_is_exit_3() {
        let pipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert_eq!(write_error(STDOUT, &pipe).code_and_message(), (0, None));
        let full = std::io::Error::from_raw_os_error(28);
        let (code, msg) = write_error(STDOUT, &full).code_and_message();
        assert_eq!(code, 3);
        assert!(msg.is_some_and(|m| m.contains("standard output")));
        // a broken pipe on a file is not a quiet success
        assert_eq!(write_error("x.jsonl", &pipe).code_and_message().0, 3);
    }
}
