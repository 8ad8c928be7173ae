//! Grounding knowledge across episodes for `nav run` and `nav
//! prompt`: `--experiment NAME` picks the log directory `DIR/NAME/`, whose
//! `grounding/grounding_latest` (with the config's `[grounding] files`)
//! goes into every protocol's system prompt; `--feedback FILE|-` collects
//! per-step feedback while the run goes; at the end of the episode the
//! final grounding is generated and the grounding files are written.
//! docs/GROUNDING.md describes the flow.

use crate::config::NavConfig;
use crate::exit::{Exit, usage};
use clap::Args;
use nav_hal::arena::{Arena, Goal};
use nav_memory::grounding::{
    CategoryFeedback, EpisodeGrounding, FinalGrounding, GroundingRequest, GroundingStore, StepFeedback, StepStatus,
    merge_files,
};
use nav_planner::vlm::VisionLanguageModel;
use std::io::{BufRead, IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;

/// One line on standard error through [`crate::exit::diag_line`]: it never
/// panics (a closed stderr loses the line, not the run), is scrubbed of keys
/// and cut when it quotes a long input.
macro_rules! warn_line {
    ($($arg:tt)*) => {
        crate::exit::diag_line(&format!($($arg)*))
    };
}

/// The longest `--experiment` name, bytes (a folder name on common file
/// systems).
pub const MAX_EXPERIMENT_NAME_BYTES: usize = 255;

/// Options shared by `nav run` and `nav prompt`: the experiment whose
/// grounding goes into the system prompt.
#[derive(Args, Debug, Default, Clone)]
pub struct ExperimentArgs {
    /// Experiment name: grounding files live under DIR/NAME/; the
    /// latest grounding goes into the system prompt.
    #[arg(long, value_name = "NAME")]
    pub experiment: Option<String>,
    /// Log root of --experiment.
    #[arg(long, value_name = "DIR", default_value = "logs")]
    pub logs_dir: PathBuf,
    /// The verbalized-entropy variant of the system prompt.
    #[arg(long)]
    pub verbalized_entropy: bool,
}

impl ExperimentArgs {
    /// The grounding store of `DIR/NAME/`, if an experiment is named (exit 2
    /// for a name that is not a plain directory name).
    pub fn store(&self) -> Result<Option<GroundingStore>, Exit> {
        let Some(name) = &self.experiment else { return Ok(None) };
        // control characters (a line break, a terminal's escape sequence) would go into folder names and paths printed later
        let plain = Path::new(name).components().count() == 1
            && !matches!(name.as_str(), "" | "." | "..")
            && !name.contains(['/', '\\'])
            && !name.chars().any(char::is_control);
        if !plain {
            return Err(usage(format!(
                "--experiment {name:?}: expected a plain directory name (no /, no control characters)"
            )));
        }
        // a file system's longest name (checked before the episode, not when its files are written)
        if name.len() > MAX_EXPERIMENT_NAME_BYTES {
            return Err(usage(format!(
                "--experiment: a name of {} bytes is longer than the {MAX_EXPERIMENT_NAME_BYTES} a folder name can have",
                name.len()
            )));
        }
        Ok(Some(GroundingStore::new(self.logs_dir.join(name))))
    }

    /// The system prompt's grounding section: the config's `[grounding]
    /// files` plus the experiment's latest grounding, merged and rendered
    /// by the grounding merge rules in the config's merge format. Skipped inputs are
    /// warned about on stderr.
    pub fn grounding_text(&self, config: &NavConfig) -> Result<Option<String>, Exit> {
        let mut files = config.grounding.files.clone();
        if let Some(latest) = self.store()?.and_then(|s| s.existing_latest()) {
            files.push(latest);
        }
        if files.is_empty() {
            return Ok(None);
        }
        let merged = merge_files(&files, config.grounding.merge_format()?).map_err(|e| usage(e.to_string()))?;
        for w in &merged.warnings {
            warn_line!("nav: warning: {w}");
        }
        let text = merged.render_prompt_section();
        Ok((!text.trim().is_empty()).then_some(text))
    }

    /// Whether the verbalized-entropy variant is on (flag or config).
    pub fn verbalized_entropy(&self, config: &NavConfig) -> bool {
        self.verbalized_entropy || config.grounding.verbalized_entropy
    }
}

/// Where per-step feedback comes from while a run goes.
pub enum FeedbackSource {
    /// No feedback.
    None,
    /// A JSON-lines file, sorted by step; `next` is the first not yet applied.
    File {
        /// The entries.
        entries: Vec<StepFeedback>,
        /// Index of the next entry to apply.
        next: usize,
    },
    /// Lines typed on standard input (`feedback : spatial: kitchen is green`).
    Stdin(Receiver<String>),
}

impl FeedbackSource {
    /// `--feedback FILE` (read and checked now: exit 2 naming the file and
    /// line) or `--feedback -` (standard input, read by a thread).
    pub fn open(arg: Option<&Path>) -> Result<Self, Exit> {
        match arg {
            None => Ok(Self::None),
            Some(p) if p == Path::new("-") => {
                let (tx, rx) = std::sync::mpsc::channel();
                std::thread::spawn(move || pump_lines(std::io::stdin().lock(), &tx));
                Ok(Self::Stdin(rx))
            }
            Some(p) => Ok(Self::File { entries: read_feedback_file(p)?, next: 0 }),
        }
    }

    /// Stacks the feedback the run has reached by `step` into `record`.
    /// Bad interactive lines are reported on stderr and skipped.
    pub fn poll(&mut self, step: u64, instruction: &str, record: &mut EpisodeGrounding) {
        let step_id = u32::try_from(step.max(1)).unwrap_or(u32::MAX);
        match self {
            Self::None => {}
            Self::File { entries, next } => {
                while let Some(e) = entries.get(*next).filter(|e| u64::from(e.step_id) <= step) {
                    record.append_step_feedback(e.step_id, &e.instruction, e.status, e.feedback.clone());
                    *next += 1;
                }
            }
            Self::Stdin(rx) => {
                while let Ok(line) = rx.try_recv() {
                    apply_typed(&line, step_id, instruction, record);
                }
            }
        }
    }

    /// At the end of the episode: file entries for steps the run never
    /// reached are stacked at their own step ids (with a note), and piped
    /// (non-terminal) standard input is read to its end.
    pub fn finish(&mut self, last_step: u64, instruction: &str, record: &mut EpisodeGrounding) {
        let step_id = u32::try_from(last_step.max(1)).unwrap_or(u32::MAX);
        match self {
            Self::None => {}
            Self::File { entries, next } => {
                let rest = &entries[(*next).min(entries.len())..];
                if !rest.is_empty() {
                    warn_line!(
                        "nav: note: {} feedback entries are for steps after the last step ({last_step}); stacked at the end",
                        rest.len()
                    );
                }
                for e in rest {
                    record.append_step_feedback(e.step_id, &e.instruction, e.status, e.feedback.clone());
                }
                *next = entries.len();
            }
            Self::Stdin(rx) => {
                let piped = !std::io::stdin().is_terminal();
                loop {
                    let line = if piped { rx.recv().ok() } else { rx.try_recv().ok() };
                    let Some(line) = line else { break };
                    apply_typed(&line, step_id, instruction, record);
                }
            }
        }
    }
}

/// Most bytes of one feedback line: a typed line, or one `--feedback` JSON
/// entry.
pub const MAX_FEEDBACK_LINE_BYTES: u64 = 16 << 10;

/// Most feedback bytes one run reads (`--feedback FILE` or `-`): an
/// episode's grounding files then stay far below the
/// [`MAX_GROUNDING_BYTES`](nav_memory::snapshot::MAX_GROUNDING_BYTES) the
/// next run reads back.
pub const MAX_FEEDBACK_BYTES: u64 = 512 << 10;

/// Sends the lines of `reader` (standard input) to `tx`, at most
/// [`MAX_FEEDBACK_LINE_BYTES`] each and [`MAX_FEEDBACK_BYTES`] in all. A
/// line that is too long or not UTF-8 is dropped with a warning naming it;
/// reading stops with a warning at the total limit or a read error.
fn pump_lines(mut reader: impl BufRead, tx: &std::sync::mpsc::Sender<String>) {
    let human = nav_core::bounded::human_bytes;
    let mut total = 0u64;
    let mut buf = Vec::new();
    for line_no in 1u64.. {
        if total > MAX_FEEDBACK_BYTES {
            warn_line!(
                "nav: warning: feedback: standard input passed the {} limit at line {line_no}; the rest is not read",
                human(MAX_FEEDBACK_BYTES)
            );
            return;
        }
        match nav_core::bounded::read_line_limited(&mut reader, MAX_FEEDBACK_LINE_BYTES, &mut buf) {
            Ok(0) => return,
            Ok(n) => {
                total += n as u64;
                let text = buf.strip_suffix(b"\n").unwrap_or(&buf);
                let text = text.strip_suffix(b"\r").unwrap_or(text);
                match std::str::from_utf8(text) {
                    Ok(line) => {
                        if tx.send(line.to_string()).is_err() {
                            return;
                        }
                    }
                    Err(_) => warn_line!("nav: warning: feedback line {line_no} dropped: it is not UTF-8 text"),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                total += buf.len() as u64 + skip_line(&mut reader, MAX_FEEDBACK_BYTES.saturating_sub(total));
                warn_line!(
                    "nav: warning: feedback line {line_no} dropped: longer than the {} limit of a line",
                    human(MAX_FEEDBACK_LINE_BYTES)
                );
            }
            Err(e) => {
                warn_line!("nav: warning: reading feedback from standard input: {e}; the rest is not read");
                return;
            }
        }
    }
}

/// Skips the rest of the current line (through its newline), at most
/// `budget` + 1 bytes; returns the bytes skipped.
fn skip_line(reader: &mut impl BufRead, budget: u64) -> u64 {
    let mut skipped = 0u64;
    while skipped <= budget {
        let Ok(avail) = reader.fill_buf() else { break };
        if avail.is_empty() {
            break;
        }
        let (n, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(p) => (p + 1, true),
            None => (avail.len(), false),
        };
        reader.consume(n);
        skipped += n as u64;
        if done {
            break;
        }
    }
    skipped
}

fn apply_typed(line: &str, step_id: u32, instruction: &str, record: &mut EpisodeGrounding) {
    if line.trim().is_empty() {
        return;
    }
    // feedback is kept, printed and put into later system prompts: never a key typed by mistake
    let line = nav_planner::vlm::scrub_credentials(line);
    let line = line.as_str();
    // a line starting with `Success:`, `Failure:` or `WiP:` sets the step's status (WiP otherwise)
    match CategoryFeedback::parse_typed(line) {
        Ok((status, fb)) => {
            let status = status.unwrap_or(StepStatus::WiP);
            record.append_step_feedback(step_id, instruction, status, fb);
            warn_line!("nav: feedback recorded at step {step_id} ({status})");
        }
        Err(e) => warn_line!("nav: warning: feedback ignored: {e}"),
    }
}

/// Reads `--feedback FILE`: one `grounding_per_step` entry per line (blank
/// lines allowed), sorted by step (stable). Exit 2 naming the file and line
/// for a line that is not an entry, not UTF-8 or over
/// [`MAX_FEEDBACK_LINE_BYTES`], and for a file over [`MAX_FEEDBACK_BYTES`].
/// A feedback category that is not one of the four is dropped with a
/// warning naming the line.
pub fn read_feedback_file(path: &Path) -> Result<Vec<StepFeedback>, Exit> {
    let name = path.display();
    let file = nav_core::bounded::open_regular(path).map_err(|e| usage(format!("--feedback {name}: {e}")))?;
    let size = file.metadata().map_or(0, |m| m.len());
    if size > MAX_FEEDBACK_BYTES {
        return Err(usage(format!(
            "--feedback {name}: {size} bytes, over the {} limit",
            nav_core::bounded::human_bytes(MAX_FEEDBACK_BYTES)
        )));
    }
    let mut reader = std::io::BufReader::new(file.take(MAX_FEEDBACK_BYTES + 1));
    let mut entries = Vec::new();
    let mut buf = Vec::new();
    let mut total = 0u64;
    for line_no in 1u64.. {
        let n = nav_core::bounded::read_line_limited(&mut reader, MAX_FEEDBACK_LINE_BYTES, &mut buf)
            .map_err(|e| usage(format!("--feedback {name} line {line_no}: {e}")))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > MAX_FEEDBACK_BYTES {
            return Err(usage(format!(
                "--feedback {name}: larger than the {} limit",
                nav_core::bounded::human_bytes(MAX_FEEDBACK_BYTES)
            )));
        }
        let line = std::str::from_utf8(&buf)
            .map_err(|_| usage(format!("--feedback {name} line {line_no}: not UTF-8 text")))?;
        if line.trim().is_empty() {
            continue;
        }
        entries.push(feedback_entry(line, &format!("--feedback {name} line {line_no}"))?);
    }
    entries.sort_by_key(|e| e.step_id);
    Ok(entries)
}

/// One `--feedback` line as an entry (`at` names the file and line): a
/// category other than the four is dropped with a warning.
fn feedback_entry(line: &str, at: &str) -> Result<StepFeedback, Exit> {
    // as typed feedback: no key (a known key shape or a credential variable's value) is kept
    let line = nav_planner::vlm::scrub_credentials(line);
    let line = line.as_str();
    let bad = |e: serde_json::Error| {
        usage(format!(
            "{at}: {e} (expected {{\"step_id\": N, \"instruction\": \"...\", \"status\": \"Success|Failure|WiP\", \"feedback\": {{\"spatial\": \"...\"}}}})"
        ))
    };
    let mut value: serde_json::Value = serde_json::from_str(line).map_err(bad)?;
    if let Some(fb) = value.get_mut("feedback").and_then(serde_json::Value::as_object_mut) {
        const KNOWN: [&str; 4] = ["user_preference", "spatial", "procedural", "general"];
        let unknown: Vec<String> = fb.keys().filter(|k| !KNOWN.contains(&k.as_str())).cloned().collect();
        for k in unknown {
            fb.remove(&k);
            warn_line!(
                "nav: warning: {at}: feedback category {k:?} dropped (expected user_preference, spatial, procedural or general)"
            );
        }
    }
    serde_json::from_value(value).map_err(bad)
}

/// The user's instruction recorded with typed feedback: the episode's task.
pub fn task_instruction(arena: &Arena) -> String {
    match &arena.goal {
        Some(Goal::Object { label }) => format!("Find the {label}"),
        Some(Goal::Point { x, y }) => format!("Reach the goal at ({x:.1}, {y:.1})"),
        None => "Explore the whole arena".to_string(),
    }
}

/// The final grounding of `req`: from the model when one is given (on a
/// failed call or reply: a warning and the offline summary), else the
/// offline planner's deterministic summary.
pub fn final_grounding(
    rt: &tokio::runtime::Runtime,
    vlm: Option<&dyn VisionLanguageModel>,
    req: &GroundingRequest,
    timestamp: String,
) -> FinalGrounding {
    if let Some(vlm) = vlm {
        let call = nav_planner::protocol::grounding::generate_final_grounding(vlm, req, Some(timestamp.clone()));
        match rt.block_on(call) {
            Ok((g, _)) => return g,
            Err(e) => warn_line!("nav: warning: grounding generation failed ({e}); using the offline summary"),
        }
    }
    nav_planner::offline::summarize_feedback(req, Some(timestamp))
}

/// The current UTC time as `(ISO 8601, directory label)`, e.g.
/// `("2026-01-27T10:15:00Z", "20260127_101500")`.
pub fn utc_now() -> (String, String) {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    utc_parts(secs)
}

fn utc_parts(secs: u64) -> (String, String) {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    // civil-from-days (H. Hinnant)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    (format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}Z"), format!("{y:04}{mo:02}{d:02}_{h:02}{m:02}{s:02}"))
}

/// The end of an experiment episode: the final grounding and its
/// files (`grounding_latest` is only replaced when this episode had
/// feedback, so an episode without feedback never erases what earlier ones
/// learned).
pub struct EpisodeEnd<'a> {
    /// The experiment's store.
    pub store: GroundingStore,
    /// The episode's record so far.
    pub record: EpisodeGrounding,
    /// The model, with `--planner vlm`.
    pub vlm: Option<&'a dyn VisionLanguageModel>,
    /// The config (save format).
    pub config: &'a NavConfig,
}

impl EpisodeEnd<'_> {
    /// Generates and writes; returns the files written (exit 3 when a file
    /// cannot be written).
    pub fn save(self, rt: &tokio::runtime::Runtime) -> Result<Vec<PathBuf>, Exit> {
        let (iso, label) = utc_now();
        let store = self.store.with_run_label(format!("{label}_nav"));
        let mut record = self.record;
        let req = record.request();
        let had_feedback = !req.is_empty();
        record.set_final(final_grounding(rt, self.vlm, &req, iso));
        let format = self.config.grounding.save_format()?;
        // an unwritable --logs-dir (read-only, a file) is output that cannot be written, not a bug
        store.save_episode(record.file(), format, had_feedback).map_err(|e| Exit::Output(format!("--logs-dir: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formatting() {
        assert_eq!(utc_parts(0).0, "1970-01-01T00:00:00Z");
        let (iso, label) = utc_parts(1_769_508_900);
        assert_eq!(iso, "2026-01-27T10:15:00Z");
        assert_eq!(label, "20260127_101500");
    }

    #[test]
    fn file_feedback_is_applied_when_the_step_is_reached() {
        let mut src = FeedbackSource::File {
            entries: vec![
                serde_json::from_str(
                    r#"{"step_id": 2, "status": "Failure", "feedback": {"spatial": "kitchen is green"}}"#,
                )
                .unwrap(),
                serde_json::from_str(r#"{"step_id": 9, "status": "WiP", "feedback": {"general": null}}"#).unwrap(),
            ],
            next: 0,
        };
        let mut rec = EpisodeGrounding::new(1);
        src.poll(1, "", &mut rec);
        assert!(rec.stacked().is_empty());
        src.poll(2, "", &mut rec);
        assert_eq!(rec.stacked().spatial, ["[ Step2 - Failure ] : kitchen is green"]);
        src.finish(5, "", &mut rec);
        assert_eq!(rec.file().grounding_per_step.len(), 2);
    }
}
