//! The step log: one JSON object per line, flushed after every
//! line so a run that is interrupted still leaves a complete, parseable log
//! up to its last step. Step 0 is the episode start and carries the run's
//! identity (arena, protocol, planner, seed) so a log can be replayed on its
//! own.

use nav_core::geometry::Pose2;
use nav_memory::DcRecord;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fs::File;
use std::io::{BufReader, Seek, Write};
use std::path::{Path, PathBuf};

/// A pose as logged: metres and degrees.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct PoseRecord {
    /// x, metres.
    pub x: f64,
    /// y, metres.
    pub y: f64,
    /// Heading, degrees.
    pub yaw_deg: f64,
}

impl From<Pose2> for PoseRecord {
    fn from(p: Pose2) -> Self {
        let r = |v: f64| (v * 1e4).round() / 1e4;
        Self { x: r(p.x), y: r(p.y), yaw_deg: r(p.yaw.to_degrees()) }
    }
}

impl PoseRecord {
    /// The largest coordinate a read-back pose may have, m: a thousand
    /// kilometres, far past any arena or robot run; more is a damaged or
    /// forged log (whose drawing and path sums would be nonsense).
    pub const MAX_COORD_M: f64 = 1.0e6;

    /// Back to a pose.
    pub fn pose(&self) -> Pose2 {
        Pose2::new(self.x, self.y, self.yaw_deg.to_radians())
    }

    /// `Err` naming the field when a coordinate is over
    /// [`MAX_COORD_M`](Self::MAX_COORD_M) or the heading is not within
    /// ±3600°.
    pub fn check(&self, what: &str) -> Result<(), String> {
        let bad = |v: f64, max: f64| v.is_nan() || v.abs() > max;
        if bad(self.x, Self::MAX_COORD_M) || bad(self.y, Self::MAX_COORD_M) {
            return Err(format!(
                "{what} ({:.3e}, {:.3e}) is over {:.0e} m from the origin",
                self.x,
                self.y,
                Self::MAX_COORD_M
            ));
        }
        if bad(self.yaw_deg, 3600.0) {
            return Err(format!("{what} heading {:.3e}° is not an angle", self.yaw_deg));
        }
        Ok(())
    }
}

/// What the planner was asked and answered at this step.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PlannerRecord {
    /// Raw model replies (empty for offline planners).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub raw: Vec<String>,
    /// The validated decision (or the fallback).
    pub parsed: Value,
    /// The fallback reason, if the fallback was used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// Model calls answered (failed ones are in `vlm_failures`).
    pub vlm_calls: u32,
    /// Model calls that failed (errors, timeouts).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub vlm_failures: u32,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Model latency, ms.
    pub latency_ms: f64,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl PlannerRecord {
    /// The record of one decision: its calls (`record`) and the decision
    /// as logged (`parsed`).
    pub fn of(record: &crate::protocol::CallRecord, parsed: Value) -> Self {
        Self {
            raw: record.raw.clone(),
            parsed,
            fallback: record.fallback.clone(),
            vlm_calls: record.vlm_calls,
            vlm_failures: record.vlm_failures,
            prompt_tokens: record.usage.prompt_tokens,
            completion_tokens: record.usage.completion_tokens,
            latency_ms: record.latency_ms,
        }
    }
}

/// One line of the step log.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StepRecord {
    /// Step number (0 = episode start).
    pub step: u64,
    /// Time since the start, seconds (simulated or wall).
    pub t_s: f64,
    /// The action taken (`forward`, a tool name, `drive`, `start`, …).
    pub action: String,
    /// The robot's pose estimate.
    pub pose: PoseRecord,
    /// Ground-truth pose (simulators only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gt_pose: Option<PoseRecord>,
    /// Current place id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place_id: Option<u32>,
    /// The memory's current place type, normalized; `null` before the
    /// first scene label names the start place, and in loops without
    /// places. Always written, so every record carries it.
    #[serde(default)]
    pub place_type: Option<String>,
    /// Current anchor id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor_id: Option<u32>,
    /// Whether the planner was called at this step.
    pub planner_called: bool,
    /// The planner's raw and parsed output, when called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner: Option<PlannerRecord>,
    /// The DC queue after this step, idx 1 → N.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dc_queue: Vec<DcRecord>,
    /// Events: anchor/place created, ABABA, STUCK, fallback + reason,
    /// safety override, … each an object with an `event` tag.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Value>,
    /// Commanded velocity `[linear, angular]` (velocity loops).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub velocity: Option<[f64; 2]>,
    /// Whether the motion collided.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub collided: bool,
    /// The model calls made since the previous record (kind, request hash
    /// and section digests, the reply), written by the episode runner so
    /// that a step log can be replayed ([`crate::replay`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_calls: Vec<crate::vlm::calls::ModelCall>,
    /// Run identity and anything else worth keeping (step 0 holds `arena`,
    /// `arena_file`, `protocol`, `planner`, `seed`, `target`).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub info: serde_json::Map<String, Value>,
}

impl StepRecord {
    /// Checks what a reader of a log or recording must not trust: the
    /// poses ([`PoseRecord::check`]); `Err` says which and why.
    pub fn check(&self) -> Result<(), String> {
        self.pose.check(&format!("step {} pose", self.step))?;
        match &self.gt_pose {
            Some(p) => p.check(&format!("step {} ground-truth pose", self.step)),
            None => Ok(()),
        }
    }
}

/// The longest step log line [`read_log`] takes (step 0 carries the arena;
/// a step may carry raw model replies).
pub const MAX_LOG_LINE_BYTES: u64 = 64 << 20;

/// The most step records [`read_log`] (and `nav replay`'s MCAP reader)
/// keeps: a record takes about 0.5 to 3 KiB in memory (4 to 5 times its
/// JSON line), so 500,000 (seven hours of a 20 Hz robot) stay near 1.5 GB,
/// and a log that grows while it is read ends.
pub const MAX_LOG_STEPS: usize = 500_000;

/// The most bytes of step log [`read_log`] reads, all lines together.
pub const MAX_LOG_BYTES: u64 = 256 << 20;

/// Where step records go.
#[derive(Debug)]
enum Sink {
    File { file: File, path: PathBuf },
    Memory(Vec<StepRecord>),
    Null,
}

/// Errors writing or reading a step log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// The file could not be created or written.
    #[error("step log {path}: {source}")]
    Io {
        /// The log file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A line is not a step record.
    #[error("step log {path}, line {line}: {message}")]
    Parse {
        /// The log file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// A live observer of the records written (see [`StepLog::with_tap`]).
type Tap = Box<dyn FnMut(&StepRecord) + Send>;

/// The step log writer.
pub struct StepLog {
    sink: Sink,
    lines: u64,
    last_step: Option<u64>,
    tap: Option<Tap>,
    journal: Option<crate::vlm::calls::CallJournal>,
}

impl std::fmt::Debug for StepLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepLog")
            .field("sink", &self.sink)
            .field("lines", &self.lines)
            .field("tap", &self.tap.is_some())
            .finish()
    }
}

impl StepLog {
    /// Writes to `path` (created or truncated), one flushed line per step.
    pub fn create(path: impl AsRef<Path>) -> Result<Self, LogError> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| LogError::Io { path: path.clone(), source })?;
        }
        let file =
            nav_core::bounded::create_regular(&path).map_err(|source| LogError::Io { path: path.clone(), source })?;
        Ok(Self { sink: Sink::File { file, path }, lines: 0, last_step: None, tap: None, journal: None })
    }

    /// Keeps records in memory (tests, plots).
    pub fn memory() -> Self {
        Self { sink: Sink::Memory(Vec::new()), lines: 0, last_step: None, tap: None, journal: None }
    }

    /// Discards records.
    pub fn null() -> Self {
        Self { sink: Sink::Null, lines: 0, last_step: None, tap: None, journal: None }
    }

    /// Also hands every record, once written, to `tap`: a live view of a
    /// running loop (the progress lines of `nav rosmaster`) that works for
    /// every loop and sink.
    pub fn with_tap(mut self, tap: impl FnMut(&StepRecord) + Send + 'static) -> Self {
        self.tap = Some(Box::new(tap));
        self
    }

    /// Appends one record. A file sink writes and flushes the line before
    /// returning.
    pub fn write(&mut self, record: &StepRecord) -> Result<(), LogError> {
        self.lines += 1;
        self.last_step = Some(record.step);
        let calls = match &self.journal {
            Some(j) => {
                j.set_step(record.step);
                j.take()
            }
            None => Vec::new(),
        };
        let with_calls;
        let record = if calls.is_empty() {
            record
        } else {
            with_calls = StepRecord { model_calls: [record.model_calls.clone(), calls].concat(), ..record.clone() };
            &with_calls
        };
        self.write_sink(record)?;
        if let Some(tap) = self.tap.as_mut() {
            tap(record);
        }
        Ok(())
    }

    /// Writes the model calls `journal` notes into the next record
    /// ([`StepRecord::model_calls`]), from now until
    /// [`StepLog::detach_journal`]. The episode runner attaches its run's
    /// journal, so a step log of a model-driven run can be replayed.
    pub fn attach_journal(&mut self, journal: crate::vlm::calls::CallJournal) {
        self.journal = Some(journal);
    }

    /// Stops writing model calls (see [`StepLog::attach_journal`]).
    pub fn detach_journal(&mut self) {
        self.journal = None;
    }

    /// The step number of the last record written.
    pub fn last_step(&self) -> Option<u64> {
        self.last_step
    }

    fn write_sink(&mut self, record: &StepRecord) -> Result<(), LogError> {
        match &mut self.sink {
            Sink::File { file, path } => {
                let mut line = serde_json::to_vec(record)
                    .map_err(|e| LogError::Io { path: path.clone(), source: std::io::Error::other(e) })?;
                line.push(b'\n');
                write_whole_line(file, &line).map_err(|source| LogError::Io { path: path.clone(), source })
            }
            Sink::Memory(v) => {
                v.push(record.clone());
                Ok(())
            }
            Sink::Null => Ok(()),
        }
    }

    /// Lines written so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// The records kept by a memory sink (empty otherwise).
    pub fn records(&self) -> &[StepRecord] {
        match &self.sink {
            Sink::Memory(v) => v,
            _ => &[],
        }
    }
}

/// A seekable file the step log can cut back after a failed write.
trait LineSink: Write + Seek {
    /// Sets the length to `len` bytes.
    fn truncate_to(&mut self, len: u64) -> std::io::Result<()>;
}

impl LineSink for File {
    fn truncate_to(&mut self, len: u64) -> std::io::Result<()> {
        self.set_len(len)
    }
}

/// Appends `line` (newline included) with one `write_all`; when that fails
/// (`ENOSPC` half-way through), the file is cut back to its length before
/// the write, so the log never ends in a partial line.
fn write_whole_line(file: &mut impl LineSink, line: &[u8]) -> std::io::Result<()> {
    let before = file.stream_position()?;
    match file.write_all(line).and_then(|()| file.flush()) {
        Ok(()) => Ok(()),
        Err(e) => {
            // best effort: the write error is the one worth reporting
            let _ = file.truncate_to(before).and_then(|()| file.seek(std::io::SeekFrom::Start(before)).map(|_| ()));
            Err(e)
        }
    }
}

/// Reads a step log back (for `nav replay`). Blank lines are skipped; a
/// truncated last line (an interrupted run) is ignored with `truncated`
/// set; any other bad line is an error naming the line.
///
/// The file is read line by line; a line over [`MAX_LOG_LINE_BYTES`], more
/// than [`MAX_LOG_BYTES`] in all or more than [`MAX_LOG_STEPS`] records is
/// an error naming the line and the limit.
pub fn read_log(path: impl AsRef<Path>) -> Result<(Vec<StepRecord>, bool), LogError> {
    let path = path.as_ref().to_path_buf();
    let file = nav_core::bounded::open_regular(&path).map_err(|source| LogError::Io { path: path.clone(), source })?;
    let mut reader = BufReader::new(file);
    let mut out = Vec::new();
    let mut buf = Vec::new();
    // a line that does not parse is only forgiven when it is the last one
    let mut pending: Option<(usize, String)> = None;
    let mut total = 0u64;
    for i in 0.. {
        let n = nav_core::bounded::read_line_limited(&mut reader, MAX_LOG_LINE_BYTES, &mut buf)
            .map_err(|e| LogError::Parse { path: path.clone(), line: i + 1, message: e.to_string() })?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > MAX_LOG_BYTES || out.len() >= MAX_LOG_STEPS {
            let message = format!(
                "the log goes on past {} or {MAX_LOG_STEPS} steps, the most nav replay reads",
                nav_core::bounded::human_bytes(MAX_LOG_BYTES)
            );
            return Err(LogError::Parse { path, line: i + 1, message });
        }
        let line = String::from_utf8_lossy(&buf);
        if line.trim().is_empty() {
            continue;
        }
        if let Some((line_no, message)) = pending.take() {
            return Err(LogError::Parse { path, line: line_no, message });
        }
        match serde_json::from_str::<StepRecord>(&line) {
            Ok(r) => {
                r.check().map_err(|message| LogError::Parse { path: path.clone(), line: i + 1, message })?;
                out.push(r);
            }
            Err(_) if !line.trim_end().ends_with('}') => pending = Some((i + 1, "not a complete step record".into())),
            Err(e) => return Err(LogError::Parse { path, line: i + 1, message: e.to_string() }),
        }
    }
    Ok((out, pending.is_some()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_poses_are_named_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.jsonl");
        let good = serde_json::to_string(&StepRecord::default()).unwrap();
        for (field, value, needle) in [
            ("pose", serde_json::json!({"x": 1e300, "y": 0.0, "yaw_deg": 0.0}), "step 1 pose (1.000e300"),
            ("gt_pose", serde_json::json!({"x": 0.0, "y": -2e6, "yaw_deg": 0.0}), "step 1 ground-truth pose"),
            ("pose", serde_json::json!({"x": 0.0, "y": 0.0, "yaw_deg": 1e12}), "heading"),
        ] {
            let mut bad: serde_json::Value = serde_json::from_str(&good).unwrap();
            bad["step"] = 1.into();
            bad[field] = value;
            std::fs::write(&path, format!("{good}\n{bad}\n")).unwrap();
            let e = read_log(&path).unwrap_err().to_string();
            assert!(e.contains("line 2") && e.contains(needle) && e.len() < 300, "{e}");
        }
        let ok = StepRecord { pose: Pose2::new(9.9e5, -9.9e5, 1.0).into(), ..StepRecord::default() };
        assert!(ok.check().is_ok());
    }

    #[test]
    fn file_log_round_trips_and_survives_truncation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.jsonl");
        let mut log = StepLog::create(&path).unwrap();
        for step in 0..3 {
            log.write(&StepRecord {
                step,
                action: "forward".into(),
                pose: Pose2::new(step as f64 * 0.25, 0.0, 0.0).into(),
                ..StepRecord::default()
            })
            .unwrap();
        }
        // the file is complete after every write (flushed), before drop
        let (recs, truncated) = read_log(&path).unwrap();
        assert_eq!(recs.len(), 3);
        assert!(!truncated);
        assert_eq!(recs[2].pose.x, 0.5);
        drop(log);
        // an interrupted write
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"{\"step\": 3, \"ac").unwrap();
        let (recs, truncated) = read_log(&path).unwrap();
        assert_eq!(recs.len(), 3);
        assert!(truncated);
        let good = serde_json::to_string(&StepRecord::default()).unwrap();
        std::fs::write(&path, format!("{good}\nnot json\n{{}}\n")).unwrap();
        assert!(matches!(read_log(&path), Err(LogError::Parse { line: 2, .. })));
    }

    /// A disk that fills up after `room` bytes: writes are cut short, then fail.
    struct FillingDisk {
        data: Vec<u8>,
        pos: usize,
        room: usize,
    }

    impl Write for FillingDisk {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.room.saturating_sub(self.pos));
            if n == 0 {
                return Err(std::io::Error::from_raw_os_error(28));
            }
            self.data.truncate(self.pos);
            self.data.extend_from_slice(&buf[..n]);
            self.pos += n;
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Seek for FillingDisk {
        fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
            if let std::io::SeekFrom::Start(p) = to {
                self.pos = p as usize;
            }
            Ok(self.pos as u64)
        }
    }

    impl LineSink for FillingDisk {
        fn truncate_to(&mut self, len: u64) -> std::io::Result<()> {
            self.data.truncate(len as usize);
            Ok(())
        }
    }

    #[test]
    fn a_full_disk_never_leaves_a_partial_line() {
        let mut disk = FillingDisk { data: Vec::new(), pos: 0, room: 30 };
        write_whole_line(&mut disk, b"{\"step\":0}\n").unwrap();
        let err = write_whole_line(&mut disk, b"{\"step\":1,\"action\":\"forward\"}\n").unwrap_err();
        assert_eq!(err.raw_os_error(), Some(28));
        assert_eq!(disk.data, b"{\"step\":0}\n", "cut back to the last whole line");
        assert_eq!(disk.pos, disk.data.len(), "the next write appends after it");
        // the real thing: /dev/full rejects the line, no panic
        let mut log = StepLog {
            sink: Sink::File { file: File::options().write(true).open("/dev/full").unwrap(), path: "/dev/full".into() },
            lines: 0,
            last_step: None,
            tap: None,
            journal: None,
        };
        assert!(matches!(log.write(&StepRecord::default()), Err(LogError::Io { .. })));
    }

    #[test]
    fn an_endless_log_line_is_an_error_naming_the_limit() {
        let err = read_log("/dev/zero").unwrap_err();
        assert!(err.to_string().contains("64 MiB limit") && err.to_string().contains("line 1"), "{err}");
    }

    #[test]
    fn a_tap_sees_every_record_in_order_after_it_is_written() {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = std::sync::Arc::clone(&seen);
        let mut log = StepLog::memory().with_tap(move |r| sink.lock().unwrap().push((r.step, r.action.clone())));
        for (step, action) in [(0, "start"), (1, "drive"), (2, "drive")] {
            log.write(&StepRecord { step, action: action.into(), ..StepRecord::default() }).unwrap();
        }
        assert_eq!(log.records().len(), 3, "the sink still gets every record");
        assert_eq!(*seen.lock().unwrap(), vec![(0, "start".into()), (1, "drive".into()), (2, "drive".into())]);
        assert!(format!("{log:?}").contains("tap: true"));
        // a file sink taps too
        let dir = tempfile::tempdir().unwrap();
        let count = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let c = std::sync::Arc::clone(&count);
        let mut log = StepLog::create(dir.path().join("x.jsonl"))
            .unwrap()
            .with_tap(move |_| _ = c.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
        log.write(&StepRecord::default()).unwrap();
        assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
