//! Replaying a recorded run's model: [`ReplayVlm`] answers each request
//! with the reply recorded for the same request, so a run or a whole
//! evaluation can be re-run offline, for free and exactly.
//!
//! - Requests are matched on [`request_hash`]: SHA-256 of the canonical
//!   JSON of the model, the request kind and what the model reads (system
//!   prompt, user text, image digests, turns, tools, output constraints;
//!   not deadlines). Every kind is replayed: planner, scene, perception,
//!   stop check, grounding, tool follow-ups.
//! - The reply is the recorded one, latency, tokens and cost included, so a
//!   replayed run's summary reports the original run's model time and bill
//!   (and nothing is spent). A recorded error is returned as that error.
//! - Identical requests are answered in recorded order.
//! - The first request that is not in the recording is a divergence:
//!   which request kind, which call, and the first lines where it differs
//!   from the nearest recorded request of that kind
//!   ([`Divergence`]). By default the call
//!   fails with [`VlmError::ReplayMiss`], which ends the run (the episode
//!   runner returns [`EpisodeError::ReplayDiverged`]); with
//!   [`ReplayVlm::with_live`] that request and every later one go to a live
//!   model instead.
//!
//! The calls come from a [`ReplayBook`] ([`ReplayBook::load`]): an MCAP
//! recording's model-call channel ([`ReplayBook::from_mcap`], with the
//! `record` feature) or a step log, whose
//! records carry each call's hash, section digests and reply
//! ([`ReplayBook::from_step_log`]; [`JournalVlm`](crate::vlm::calls::JournalVlm) writes them).
//!
//! ```
//! use std::sync::Arc;
//! use nav_planner::replay::{ReplayBook, ReplayVlm};
//! use nav_planner::vlm::calls::{CallJournal, JournalVlm};
//! use nav_planner::vlm::{ScriptedVlm, VisionLanguageModel, VlmError, VlmRequest};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! // a run with a real (here: scripted) model, its calls noted
//! let journal = CallJournal::new();
//! let model = JournalVlm::new(Arc::new(ScriptedVlm::new().then_text("left")), journal.clone());
//! model.complete(VlmRequest::new("You steer a robot.").text("where?")).await?;
//! let records = vec![nav_planner::navigator::StepRecord { model_calls: journal.take(), ..Default::default() }];
//!
//! // the same request again, answered from the record
//! let replay = ReplayVlm::new(ReplayBook::from_step_records("run.jsonl", &records));
//! assert_eq!(replay.complete(VlmRequest::new("You steer a robot.").text("where?")).await?.text, "left");
//! // a different one is a divergence
//! let err = replay.complete(VlmRequest::new("You steer a car.").text("where?")).await.unwrap_err();
//! assert!(matches!(err, VlmError::ReplayMiss { .. }));
//! assert_eq!(replay.divergence().unwrap().call, 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`EpisodeError::ReplayDiverged`]: crate::navigator::episode::EpisodeError::ReplayDiverged

mod book;
mod load;

pub use book::{RecordedCall, RecordedRequest, ReplayBook, ReplayError};
pub use load::recording_files;

use crate::vlm::calls::{
    Divergence, SECTIONS, canonical_request, common_prefix, line_diff, request_hash, request_lines, section_digests,
};
use crate::vlm::{BackendInfo, RequestKind, VisionLanguageModel, VlmError, VlmRequest, VlmResponse};
use async_trait::async_trait;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

/// What a replay did, for the run report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplayStats {
    /// Requests received.
    pub requests: u64,
    /// Requests answered from the recording.
    pub replayed: u64,
    /// Requests sent to the live model (after a divergence, with a live
    /// model).
    pub live: u64,
    /// Recorded calls never asked for.
    pub unused: u64,
}

struct State {
    queues: HashMap<String, VecDeque<usize>>,
    used: Vec<bool>,
    stats: ReplayStats,
    divergence: Option<Divergence>,
    step: Option<u64>,
}

/// A model that answers from a recording (see the [module docs](self)).
pub struct ReplayVlm {
    book: ReplayBook,
    models: Vec<String>,
    info: BackendInfo,
    live: Option<Arc<dyn VisionLanguageModel>>,
    state: Mutex<State>,
}

impl ReplayVlm {
    /// Answers from `book`; a request it does not hold fails with
    /// [`VlmError::ReplayMiss`].
    pub fn new(book: ReplayBook) -> Self {
        let info = book.calls().first().map_or_else(|| BackendInfo::new("replay", "empty"), |c| c.backend.clone());
        let state = State {
            queues: book.queues(),
            used: vec![false; book.len()],
            stats: ReplayStats::default(),
            divergence: None,
            step: None,
        };
        Self { models: book.models(), info, live: None, state: Mutex::new(state), book }
    }

    /// From the first request the recording does not hold on, sends every
    /// request to `live` instead.
    pub fn with_live(mut self, live: Arc<dyn VisionLanguageModel>) -> Self {
        self.live = Some(live);
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Tells the replay the run has logged `step` (a run's progress
    /// callback), so a divergence names the step it happened after. Without
    /// it, the episode runner fills the step in when the divergence ends
    /// the run.
    pub fn set_step(&self, step: u64) {
        self.lock().step = Some(step);
    }

    /// The first divergence, if there was one.
    pub fn divergence(&self) -> Option<Divergence> {
        self.lock().divergence.clone()
    }

    /// What the replay did so far.
    pub fn stats(&self) -> ReplayStats {
        let s = self.lock();
        ReplayStats { unused: s.used.iter().filter(|u| !**u).count() as u64, ..s.stats }
    }

    /// The recording.
    pub fn book(&self) -> &ReplayBook {
        &self.book
    }

    /// The divergence `req` (call number `call`) is: compared with the
    /// unused recorded call of its kind that shares the most with it.
    fn divergence_of(&self, req: &VlmRequest, call: u64, used: &[bool], step: Option<u64>) -> Divergence {
        let kind = req.kind.as_str();
        let model = self.models.first().map_or("", String::as_str);
        let canonical = canonical_request(req);
        let now_lines = request_lines(model, kind, &canonical);
        let now_sections = section_digests(&canonical);
        let same_kind = || {
            self.book
                .calls()
                .iter()
                .enumerate()
                .filter(|(i, c)| c.kind == kind && !used.get(*i).copied().unwrap_or(true))
        };
        // the closest: most leading lines in common (or sections, for a step log); ties go to the earliest
        let score = |c: &RecordedCall| match c.lines() {
            Some(l) => common_prefix(&l, &now_lines),
            None => c.sections().iter().zip(&now_sections).filter(|(a, b)| a == b).count(),
        };
        let nearest = same_kind().take(500).max_by_key(|(i, c)| (score(c), std::cmp::Reverse(*i)));
        let diff = match nearest {
            Some((_, c)) => match c.lines() {
                Some(lines) => line_diff(&lines, &now_lines),
                None => section_diff(&c.sections(), &now_sections, &now_lines),
            },
            None => Vec::new(),
        };
        Divergence {
            source: self.book.source().to_string(),
            step,
            kind: kind.to_string(),
            call,
            nearest: nearest.map(|(i, _)| i as u64 + 1),
            diff,
        }
    }
}

/// For a step log (digests only): which sections differ, with this run's
/// first lines of the first one.
fn section_diff(recorded: &[String], now: &[String], now_lines: &[String]) -> Vec<String> {
    let differing: Vec<&str> =
        SECTIONS.iter().zip(recorded.iter().zip(now)).filter(|(_, (a, b))| a != b).map(|(s, _)| *s).collect();
    let mut out = vec![format!(
        "differs in: {} (a step log keeps digests only; replay an MCAP recording to see the recorded lines)",
        if differing.is_empty() { "the model or kind".to_string() } else { differing.join(", ") }
    )];
    if let Some(first) = differing.first() {
        let prefix = match *first {
            "user" => "user[",
            "output" => "tool_choice",
            s => s,
        };
        out.extend(now_lines.iter().filter(|l| l.starts_with(prefix)).take(3).map(|l| format!("+ {l}")));
    }
    out
}

#[async_trait]
impl VisionLanguageModel for ReplayVlm {
    async fn complete(&self, req: VlmRequest) -> Result<VlmResponse, VlmError> {
        let live = {
            let mut s = self.lock();
            s.stats.requests += 1;
            let call = s.stats.requests;
            if s.divergence.is_none() {
                let found = self.models.iter().find_map(|m| {
                    let h = request_hash(m, &req);
                    s.queues.get_mut(&h).and_then(VecDeque::pop_front)
                });
                if let Some(i) = found {
                    s.used[i] = true;
                    s.stats.replayed += 1;
                    return self.book.calls()[i].reply.clone();
                }
                let d = self.divergence_of(&req, call, &s.used, s.step);
                if self.live.is_some() {
                    tracing::warn!("{d}\nsending this request and every later one to the live model");
                }
                s.divergence = Some(d);
            }
            match &self.live {
                Some(live) => {
                    s.stats.live += 1;
                    Arc::clone(live)
                }
                None => {
                    let divergence = Box::new(
                        s.divergence.clone().unwrap_or_else(|| self.divergence_of(&req, call, &s.used, s.step)),
                    );
                    return Err(VlmError::ReplayMiss { divergence });
                }
            }
        };
        live.complete(req).await
    }

    fn describe(&self) -> BackendInfo {
        self.info.clone()
    }

    fn answers(&self, kind: RequestKind) -> bool {
        // a kind the recording lacks is reported as a divergence, with the request that was not there
        let _ = kind;
        true
    }
}

#[cfg(test)]
mod tests;
