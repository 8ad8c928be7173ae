//! `nav eval --replay DIR`: each episode of the suite answered from its own
//! recording in DIR (the file `--record-dir` wrote for it), and the tally
//! of how each replay went.

use super::{ReplayMiss, VlmArgs};
use crate::config::NavConfig;
use crate::exit::{Exit, usage};
use nav_planner::replay::{ReplayBook, ReplayVlm};
use nav_planner::vlm::VisionLanguageModel;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What each episode's replay needs.
pub struct ReplaySetup {
    /// The folder of recordings.
    pub dir: PathBuf,
    /// The live model for `--replay-miss live`.
    live: Option<(Arc<dyn VisionLanguageModel>, ReplayMiss)>,
}

impl ReplaySetup {
    /// The setup `--replay DIR [--replay-miss live]` asks for, or `None`
    /// without `--replay`. A file instead of a folder is exit 2.
    pub fn of(args: &VlmArgs, config: &NavConfig) -> Result<Option<Self>, Exit> {
        let Some(dir) = args.replay_path()? else { return Ok(None) };
        if !dir.is_dir() {
            return Err(usage(format!(
                "--replay {}: nav eval replays the folder --record-dir wrote (one recording per episode)",
                dir.display()
            )));
        }
        let live = match args.replay_miss {
            ReplayMiss::Stop => None,
            ReplayMiss::Live => {
                // the live backend is named by [vlm] or, failing that, by the first recording's provider
                let any = nav_planner::replay::recording_files(dir)
                    .map_err(|e| usage(format!("--replay {e}")))?
                    .into_iter()
                    .next()
                    .ok_or_else(|| usage(format!("--replay {}: the folder holds no recording", dir.display())))?;
                let book = load(&any)?;
                Some((args.live_model(config, &ReplayVlm::new(book))?, ReplayMiss::Live))
            }
        };
        Ok(Some(Self { dir: dir.to_path_buf(), live }))
    }

    /// The replay for `spec` from its recording `name` in the folder, or
    /// `None` when the folder has no such file.
    pub fn model_for(&self, name: &str) -> Result<Option<Arc<ReplayVlm>>, Exit> {
        let path = self.dir.join(name);
        if !path.exists() {
            return Ok(None);
        }
        let mut replay = ReplayVlm::new(load(&path)?);
        if let Some((live, _)) = &self.live {
            replay = replay.with_live(Arc::clone(live));
        }
        Ok(Some(Arc::new(replay)))
    }
}

fn load(path: &Path) -> Result<ReplayBook, Exit> {
    ReplayBook::load_file(path).map_err(|e| usage(format!("--replay {e}")))
}

/// How one episode's replay went.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Replayed {
    /// Every request was in the recording and every recorded call was used.
    Exact,
    /// A request was not in the recording (at `step`); `finished` when
    /// `--replay-miss live` carried the episode on.
    Diverged {
        /// The last step logged before the request.
        step: Option<u64>,
        /// The episode ran to its end on the live model.
        finished: bool,
    },
    /// Every request was in the recording, but the episode ended before
    /// asking all the recorded ones.
    EndedEarly {
        /// Recorded calls never asked for.
        unused: u64,
    },
    /// The folder holds no recording of this episode.
    Missing,
}

impl Replayed {
    /// The outcome of a replay that ran to its end.
    pub fn of(replay: &ReplayVlm) -> Self {
        match (replay.divergence(), replay.stats().unused) {
            (Some(d), _) => Replayed::Diverged { step: d.step, finished: true },
            (None, 0) => Replayed::Exact,
            (None, unused) => Replayed::EndedEarly { unused },
        }
    }
}

/// One episode's replay.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeReplay {
    /// How it went.
    pub outcome: Replayed,
    /// Its recording's model time, seconds.
    pub recorded_model_s: f64,
    /// Its recording's cost, US dollars.
    pub recorded_cost_usd: f64,
}

impl EpisodeReplay {
    /// An episode the folder has no recording of.
    pub fn missing() -> Self {
        Self { outcome: Replayed::Missing, recorded_model_s: 0.0, recorded_cost_usd: 0.0 }
    }

    /// `replay`'s episode, ended with `outcome`.
    pub fn of(replay: &ReplayVlm, outcome: Replayed) -> Self {
        Self {
            outcome,
            recorded_model_s: replay.book().recorded_latency_ms() / 1000.0,
            recorded_cost_usd: replay.book().recorded_cost_usd(),
        }
    }
}

/// The suite's replays: each episode's outcome, the recorded model time
/// and cost, and the time the replay took.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReplayTally {
    /// The folder.
    pub source: String,
    /// `(episode, outcome)`, in suite order.
    pub episodes: Vec<(String, Replayed)>,
    /// The recorded calls' latency summed, seconds.
    pub recorded_model_s: f64,
    /// The recorded calls' cost, US dollars.
    pub recorded_cost_usd: f64,
    /// Wall time of the replayed suite, seconds.
    pub replay_wall_s: f64,
}

impl ReplayTally {
    /// Notes an episode.
    pub fn add(&mut self, label: &str, episode: EpisodeReplay) {
        self.recorded_model_s += episode.recorded_model_s;
        self.recorded_cost_usd += episode.recorded_cost_usd;
        self.episodes.push((label.to_string(), episode.outcome));
    }

    fn count(&self, f: impl Fn(&Replayed) -> bool) -> usize {
        self.episodes.iter().filter(|(_, o)| f(o)).count()
    }

    /// Episodes whose replay left the recording and stopped (the suite
    /// exits 6 when there are any).
    pub fn stopped(&self) -> usize {
        self.count(|o| matches!(o, Replayed::Diverged { finished: false, .. }))
    }

    /// True when the folder held a recording of none of the suite's
    /// episodes (nothing was replayed).
    pub fn all_missing(&self) -> bool {
        !self.episodes.is_empty() && self.count(|o| *o == Replayed::Missing) == self.episodes.len()
    }

    /// The report's replay lines.
    pub fn lines(&self) -> String {
        let exact = self.count(|o| *o == Replayed::Exact);
        let diverged = self.count(|o| matches!(o, Replayed::Diverged { .. }));
        let early = self.count(|o| matches!(o, Replayed::EndedEarly { .. }));
        let missing = self.count(|o| *o == Replayed::Missing);
        let mut out = format!(
            "replay of {}: {} episode(s): {exact} exact, {diverged} diverged, {early} ended early, {missing} missing\n\
             recorded model time {:.1} s and ${:.4}; replayed in {:.1} s, $0 spent",
            self.source,
            self.episodes.len(),
            self.recorded_model_s,
            self.recorded_cost_usd,
            self.replay_wall_s
        );
        for (label, o) in &self.episodes {
            let line = match o {
                Replayed::Exact => continue,
                Replayed::Diverged { step, finished } => format!(
                    "diverged at step {}{}",
                    step.map_or_else(|| "?".into(), |s| s.to_string()),
                    if *finished { " (finished on the live model)" } else { " (stopped)" }
                ),
                Replayed::EndedEarly { unused } => format!("ended early ({unused} recorded call(s) not asked)"),
                Replayed::Missing => "missing (no recording of it in the folder)".into(),
            };
            out.push_str(&format!("\n  {label}: {line}"));
        }
        out
    }
}
