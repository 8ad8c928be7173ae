//! [`Divergence`]: where a replayed run first asked something the recording
//! does not hold, and how that request differs from the nearest recorded one.

use serde::{Deserialize, Serialize};

/// The first request of a replayed run that is not in the recording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Divergence {
    /// The recording (file or folder) the replay reads.
    pub source: String,
    /// The step the run was at: the last step logged before the request
    /// (`None` until a runner fills it in).
    pub step: Option<u64>,
    /// The request kind (`planner`, `scene`, …).
    pub kind: String,
    /// The request's number in the replayed run (1 = the first call).
    pub call: u64,
    /// The number of the recorded call it was compared with (1 = the first
    /// recorded), if the recording holds a call of that kind.
    pub nearest: Option<u64>,
    /// The first lines that differ: `- ` the recorded request's, `+ ` this
    /// run's (or, for a step log, which keeps digests only, the sections
    /// that differ).
    pub diff: Vec<String>,
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let step = self.step.map_or_else(String::new, |s| format!(" at step {s}"));
        write!(
            f,
            "replay diverged{step}: the {} request (call {} of this run) is not in {}",
            self.kind, self.call, self.source
        )?;
        match self.nearest {
            Some(n) => write!(f, "; first difference from recorded call {n}:")?,
            None => write!(f, "; the recording holds no {} request", self.kind)?,
        }
        for line in &self.diff {
            write!(f, "\n  {line}")?;
        }
        Ok(())
    }
}

/// The most lines of each side a diff shows.
const DIFF_LINES: usize = 3;
/// The most characters of a diff line.
const DIFF_CHARS: usize = 160;

/// The first lines where `recorded` and `now` differ, up to three of each,
/// each cut to a window around its first differing character.
pub fn line_diff(recorded: &[String], now: &[String]) -> Vec<String> {
    let first = recorded.iter().zip(now).position(|(a, b)| a != b).unwrap_or(recorded.len().min(now.len()));
    let mut out = Vec::new();
    let (a, b) = (&recorded[first.min(recorded.len())..], &now[first.min(now.len())..]);
    for (i, line) in a.iter().take(DIFF_LINES).enumerate() {
        out.push(format!("- {}", window(line, b.get(i))));
    }
    for (i, line) in b.iter().take(DIFF_LINES).enumerate() {
        out.push(format!("+ {}", window(line, a.get(i))));
    }
    if out.is_empty() {
        out.push("(the lines are equal; the requests differ in what the lines do not show)".into());
    }
    out
}

/// `line` cut to [`DIFF_CHARS`] characters around where it first differs
/// from `other`.
fn window(line: &str, other: Option<&String>) -> String {
    let chars: Vec<char> = line.chars().collect();
    if chars.len() <= DIFF_CHARS {
        return line.to_string();
    }
    let at = other.map_or(0, |o| chars.iter().zip(o.chars()).take_while(|(a, b)| **a == *b).count());
    let start = at.saturating_sub(DIFF_CHARS / 3).min(chars.len() - DIFF_CHARS);
    let mut s: String = chars[start..start + DIFF_CHARS].iter().collect();
    if start > 0 {
        s.insert(0, '…');
    }
    if start + DIFF_CHARS < chars.len() {
        s.push('…');
    }
    s
}

/// The number of leading lines two renderings share.
pub fn common_prefix(a: &[String], b: &[String]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &[&str]) -> Vec<String> {
        s.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn the_diff_starts_at_the_first_different_line() {
        let d = line_diff(&lines(&["a", "system: go left", "c"]), &lines(&["a", "system: go right", "c"]));
        assert_eq!(d, lines(&["- system: go left", "- c", "+ system: go right", "+ c"]));
    }

    #[test]
    fn a_long_line_is_cut_around_the_change() {
        let old = format!("system: {}word{}", "x".repeat(500), "y".repeat(500));
        let new = format!("system: {}WORD{}", "x".repeat(500), "y".repeat(500));
        let d = line_diff(&[old], &[new]);
        assert!(d[0].contains("word") && d[1].contains("WORD"), "{d:?}");
        assert!(d[0].chars().count() < 170, "{}", d[0]);
    }

    #[test]
    fn the_message_names_step_kind_call_and_source() {
        let d = Divergence {
            source: "run.mcap".into(),
            step: Some(0),
            kind: "planner".into(),
            call: 1,
            nearest: Some(1),
            diff: lines(&["- system: a", "+ system: b"]),
        };
        let text = d.to_string();
        assert!(text.starts_with("replay diverged at step 0: the planner request"), "{text}");
        assert!(text.contains("run.mcap") && text.contains("\n  - system: a\n  + system: b"), "{text}");
    }
}
