//! A suite's progress on stderr: a bar for a person at a terminal, plain
//! lines for a log file (CI, a cluster job's output), so a long `nav eval`
//! or `nav eval --estimate` is never silent.

use crate::exit::{Exit, internal};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::time::Instant;

/// Above this many episodes, lines are printed per 5 % instead of per episode.
const EVERY_EPISODE_UP_TO: usize = 20;

/// How a suite shows its progress.
pub enum Progress {
    /// An indicatif bar (stderr is a terminal).
    Bar(ProgressBar),
    /// One line per finished episode, or per 5 % of a large suite (stderr is
    /// not a terminal).
    Lines {
        /// What is running: `eval`, `estimate`.
        what: &'static str,
        /// Episodes in the suite.
        total: usize,
        /// Episodes finished so far.
        done: usize,
        /// When the suite started.
        started: Instant,
    },
    /// Nothing (`--json` at a terminal, where a bar would mix into the output).
    Quiet,
}

impl Progress {
    /// The progress display for `total` episodes of `what`: a bar at a
    /// terminal unless `json`, lines when stderr is not a terminal.
    pub fn new(what: &'static str, total: usize, json: bool) -> Result<Self, Exit> {
        if !std::io::stderr().is_terminal() {
            return Ok(Progress::Lines { what, total, done: 0, started: Instant::now() });
        }
        if json {
            return Ok(Progress::Quiet);
        }
        let bar = ProgressBar::new(total as u64);
        bar.set_style(
            ProgressStyle::with_template(&format!(
                "{{spinner}} {what} [{{bar:30}}] {{pos}}/{{len}} episodes ({{elapsed}}, eta {{eta}})"
            ))
            .map_err(internal)?
            .progress_chars("=> "),
        );
        Ok(Progress::Bar(bar))
    }

    /// One episode finished; `episode` names it and its outcome.
    pub fn finished(&mut self, episode: &str) {
        match self {
            Progress::Bar(bar) => bar.inc(1),
            Progress::Lines { what, total, done, started } => {
                *done += 1;
                if let Some(line) = line(what, *total, *done, started.elapsed().as_secs_f64(), episode) {
                    // a closed or full stderr must not end the suite
                    let _ = writeln!(std::io::stderr().lock(), "{line}");
                }
            }
            Progress::Quiet => {}
        }
    }

    /// Removes the bar (lines stay).
    pub fn finish(&self) {
        if let Progress::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}

/// The line for the `done`-th of `total` finished episodes, if one is due:
/// every episode of a small suite, each 5 % step (and the last) of a large one.
fn line(what: &str, total: usize, done: usize, elapsed_s: f64, episode: &str) -> Option<String> {
    let total = total.max(done);
    let due = total <= EVERY_EPISODE_UP_TO || done == total || done * 20 / total > (done - 1) * 20 / total;
    due.then(|| {
        format!(
            "nav {what}: {done}/{total} episodes ({}%, {elapsed_s:.0} s); last: {episode}",
            done * 100 / total.max(1)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::line;

    #[test]
    fn a_small_suite_gets_a_line_per_episode() {
        let lines: Vec<_> = (1..=3).filter_map(|d| line("eval", 3, d, 1.0, "x")).collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], "nav eval: 1/3 episodes (33%, 1 s); last: x");
    }

    #[test]
    fn a_large_suite_gets_a_line_per_5_percent() {
        let due: Vec<usize> = (1..=200).filter(|&d| line("eval", 200, d, 0.0, "x").is_some()).collect();
        assert_eq!(due.len(), 20, "{due:?}");
        assert_eq!((due[0], due[19]), (10, 200));
        let due = (1..=33).filter(|&d| line("estimate", 33, d, 0.0, "x").is_some()).count();
        assert_eq!(due, 20, "one per 5 % step even when 5 % is not a whole episode");
    }
}
