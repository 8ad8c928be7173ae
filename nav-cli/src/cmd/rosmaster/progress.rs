//! [`Progress`]: `nav rosmaster`'s progress lines on stderr, made from the
//! step records the explore loop writes (through a [`StepLog`] tap):
//! decisions, watchdog tier changes, safety overrides, discoveries, and
//! sensor or publish failures (reported when they start and end, not every
//! tick). It also sums the distance travelled from the logged poses and
//! collects the sentences for the announcement topic
//! ([`announcement`]; a
//! repeated safety stop at most once per [`OVERRIDE_REPEAT_S`]).
//!
//! [`StepLog`]: nav_planner::navigator::StepLog

use nav_planner::navigator::StepRecord;
use nav_planner::navigator::voice::announcement;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// The same safety override (by code) is reported at most once per this
/// many seconds (a slowdown near a wall can come and go every tick).
const OVERRIDE_REPEAT_S: f64 = 5.0;

/// See the module docs. Clones share one state.
#[derive(Clone)]
pub struct Progress {
    state: Arc<Mutex<State>>,
    started: Instant,
}

/// What the lines depend on besides the current record.
#[derive(Debug, Default)]
struct State {
    decisions: u32,
    distance_m: f64,
    last_position: Option<(f64, f64)>,
    sensor_error: Option<String>,
    publish_error: Option<String>,
    overrides: BTreeMap<String, f64>,
    /// Discoveries not yet spoken: the text for the speech topic.
    discoveries: Vec<String>,
    /// Sentences not yet published on the announcement topic.
    announcements: Vec<String>,
}

impl Progress {
    /// Starts the clock of [`say`](Self::say).
    pub fn new() -> Self {
        Self { state: Arc::new(Mutex::new(State::default())), started: Instant::now() }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Seconds since [`new`](Self::new).
    pub fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Prints one line, stamped with the time since the start.
    pub fn say(&self, message: &str) {
        crate::exit::diag!("{}", stamp(self.elapsed_s(), message));
    }

    /// The step-log tap that prints the lines of each record.
    pub fn tap(&self) -> impl FnMut(&StepRecord) + Send + 'static {
        let me = self.clone();
        move |record| {
            for line in me.state().lines(record) {
                crate::exit::diag!("{line}");
            }
        }
    }

    /// The discoveries reported since the last call, as sentences for the
    /// robot's speech topic.
    pub fn take_discoveries(&self) -> Vec<String> {
        std::mem::take(&mut self.state().discoveries)
    }

    /// A step-log tap that only collects the announcements (for loops
    /// without progress lines: objectnav), except those of voice commands
    /// and pauses: a paused objectnav loop writes no step, so its relay
    /// acknowledges each command when it arrives instead.
    pub fn announce_tap(&self) -> impl FnMut(&StepRecord) + Send + 'static {
        let me = self.clone();
        move |record| {
            let mut st = me.state();
            for e in &record.events {
                if !matches!(e.get("event").and_then(Value::as_str), Some("voice" | "paused" | "resumed")) {
                    st.announcements.extend(announcement(e));
                }
            }
        }
    }

    /// Queues `text` for the announcement topic.
    pub fn announce(&self, text: &str) {
        self.state().announcements.push(text.to_string());
    }

    /// The announcements made since the last call, oldest first.
    pub fn take_announcements(&self) -> Vec<String> {
        std::mem::take(&mut self.state().announcements)
    }

    /// Distance travelled according to the logged (odometry) poses, m.
    pub fn distance_m(&self) -> f64 {
        self.state().distance_m
    }
}

fn stamp(t_s: f64, message: &str) -> String {
    format!("[{t_s:7.1} s] {message}")
}

/// `tool {arguments}` of a logged decision.
fn tool_text(parsed: &Value) -> String {
    let tool = parsed.get("tool").and_then(Value::as_str).unwrap_or("?");
    match parsed.get("arguments") {
        Some(Value::Object(a)) if !a.is_empty() => format!("{tool} {}", Value::Object(a.clone())),
        _ => tool.to_string(),
    }
}

fn text<'a>(e: &'a Value, key: &str) -> &'a str {
    e.get(key).and_then(Value::as_str).unwrap_or("")
}

impl State {
    /// The progress lines of one record (and the state it changes).
    fn lines(&mut self, r: &StepRecord) -> Vec<String> {
        let position = (r.pose.x, r.pose.y);
        if let Some((x, y)) = self.last_position {
            self.distance_m += (position.0 - x).hypot(position.1 - y);
        }
        self.last_position = Some(position);
        let mut out = Vec::new();
        if let Some(p) = &r.planner {
            self.decisions += 1;
            let cost = if p.vlm_calls > 0 {
                format!(
                    " ({:.0} ms, {} call(s), {}+{} tokens)",
                    p.latency_ms, p.vlm_calls, p.prompt_tokens, p.completion_tokens
                )
            } else {
                String::new()
            };
            out.push(match &p.fallback {
                Some(why) => format!(
                    "decision {}: the planner gave no usable answer ({why}){cost}; waiting, the watchdog tiers run",
                    self.decisions
                ),
                None => format!("decision {}: {}{cost}", self.decisions, tool_text(&p.parsed)),
            });
        }
        let mut sensor_error = None;
        let mut publish_error = None;
        for e in &r.events {
            match text(e, "event") {
                "planner_call" if r.planner.is_none() => {
                    let reasons = e.get("reasons").and_then(Value::as_array).map_or_else(String::new, |v| {
                        v.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")
                    });
                    let why = if reasons.is_empty() { String::new() } else { format!(" ({reasons})") };
                    out.push(format!("asking the planner{why}"));
                }
                "watchdog" => {
                    self.announcements.extend(announcement(e));
                    let note = text(e, "announcement");
                    let note = if note.is_empty() { String::new() } else { format!(": {note}") };
                    out.push(format!("watchdog: {}{note}", text(e, "tier")));
                }
                "safety_override" => {
                    let code = e.get("code").or_else(|| e.get("tool")).and_then(Value::as_str).unwrap_or("override");
                    let last = self.overrides.get(code).copied();
                    if last.is_none_or(|t| r.t_s - t >= OVERRIDE_REPEAT_S) {
                        self.overrides.insert(code.to_string(), r.t_s);
                        let why = e.get("reason").or_else(|| e.get("message")).and_then(Value::as_str).unwrap_or("");
                        out.push(format!("safety override ({code}): {why}"));
                        self.announcements.extend(announcement(e));
                    }
                }
                "paused" => {
                    out.push("paused: no motion, no decisions".into());
                    self.announcements.extend(announcement(e));
                }
                "resumed" => {
                    out.push("resumed".into());
                    self.announcements.extend(announcement(e));
                }
                "voice" => {
                    let note = e.get("note").and_then(Value::as_str).map(|n| format!(" ({n})")).unwrap_or_default();
                    out.push(format!("voice command applied: {}{note}", text(e, "command")));
                    if note.is_empty() {
                        self.announcements.extend(announcement(e));
                    }
                }
                "discovery" => {
                    out.push(format!("discovery: {} ({})", text(e, "label"), text(e, "significance")));
                    let notes = text(e, "notes").trim();
                    let sentence = if notes.is_empty() {
                        format!("I found {}.", text(e, "label"))
                    } else {
                        format!("I found {}: {notes}", text(e, "label"))
                    };
                    self.announcements.push(sentence.clone());
                    self.discoveries.push(sentence);
                }
                "stop" => out.push(format!("stopped: {}", text(e, "reason"))),
                "vlm_stats" => out.push(text(e, "line").to_string()),
                "decision_dropped" => out.push(format!("decision not executed: {}", text(e, "reason"))),
                "local_nav_goal" => {
                    let (x, y) = (e["x"].as_f64().unwrap_or(f64::NAN), e["y"].as_f64().unwrap_or(f64::NAN));
                    out.push(format!("local navigation: heading for the frontier at ({x:.2}, {y:.2})"));
                }
                "goal_no_progress" => out.push("navigation goal abandoned: no progress".into()),
                "goal_timeout" => out.push("navigation goal abandoned: timed out".into()),
                "goal_unreachable" => out.push("navigation goal: no path on the map".into()),
                "boxed_in" => out.push(format!("boxed in: {}", text(e, "reason"))),
                "goal_boxed_in" => {
                    let backed = e["backed_out_m"].as_f64().unwrap_or(0.0);
                    let why = e["stopped_by"].as_str().map(|w| format!(" (stopped: {w})")).unwrap_or_default();
                    out.push(format!("navigation goal handed back: boxed in, backed out {backed:.2} m{why}"));
                }
                "nav2_goal" => out.push(format!(
                    "navigation goal ({:.2}, {:.2}) handed to Nav2: navkit publishes no cmd_vel while it drives",
                    e["x"].as_f64().unwrap_or(f64::NAN),
                    e["y"].as_f64().unwrap_or(f64::NAN)
                )),
                "nav2_goal_succeeded" => out.push("Nav2 reached the goal".into()),
                "nav2_goal_failed" => {
                    out.push(format!("Nav2 goal failed ({}): {}", text(e, "code"), text(e, "reason")));
                }
                "nav2_goal_cancelled" => out.push(format!("Nav2 goal cancelled: {}", text(e, "reason"))),
                "own_path" => out.push(format!("navkit follows its own path ({})", text(e, "reason"))),
                "collision" => out.push("the robot reports a collision".into()),
                "sensor_error" => sensor_error = Some(text(e, "error").to_string()),
                "publish_failed" => publish_error = Some(text(e, "error").to_string()),
                _ => {}
            }
        }
        match (&sensor_error, &self.sensor_error) {
            (Some(e), None) => out.push(format!("sensors unavailable ({e}): holding still")),
            (None, Some(_)) => out.push("sensors back".into()),
            _ => {}
        }
        self.sensor_error = sensor_error;
        match (&publish_error, &self.publish_error) {
            (Some(e), None) => out.push(format!("cannot publish velocity ({e})")),
            (None, Some(_)) => out.push("publishing velocity again".into()),
            _ => {}
        }
        self.publish_error = publish_error;
        out.into_iter().map(|l| stamp(r.t_s, &l)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nav_planner::navigator::{PlannerRecord, PoseRecord};
    use serde_json::json;

    fn record(step: u64, t_s: f64, x: f64, events: Vec<Value>) -> StepRecord {
        StepRecord {
            step,
            t_s,
            action: "drive".into(),
            pose: PoseRecord { x, y: 0.0, yaw_deg: 0.0 },
            events,
            ..StepRecord::default()
        }
    }

    #[test]
    fn lines_report_decisions_tiers_overrides_and_failures_once() {
        let mut st = State::default();
        let mut all = Vec::new();
        let mut decided = record(1, 0.05, 0.0, vec![json!({"event": "planner_call", "reasons": []})]);
        decided.planner = Some(PlannerRecord {
            parsed: json!({"tool": "navigate_to_goal", "arguments": {"goal_type": "frontier", "frontier_id": 2}}),
            ..PlannerRecord::default()
        });
        all.extend(st.lines(&decided));
        all.extend(st.lines(&record(2, 0.5, 0.1, vec![json!({"event": "planner_call", "reasons": ["timer"]})])));
        let mut failed = record(3, 8.5, 0.3, vec![json!({"event": "fallback", "reason": "timeout"})]);
        failed.planner = Some(PlannerRecord {
            fallback: Some("timed out after 8 s".into()),
            vlm_calls: 1,
            latency_ms: 8000.0,
            ..PlannerRecord::default()
        });
        all.extend(st.lines(&failed));
        let over = json!({"event": "safety_override", "kind": "emergency_stop", "code": "obstacle_at_0.3m_ahead",
                          "reason": "Movement stopped: obstacle detected 0.28m ahead."});
        all.extend(st.lines(&record(4, 9.0, 0.3, vec![over.clone()])));
        all.extend(st.lines(&record(5, 9.5, 0.3, vec![over.clone()])));
        all.extend(st.lines(&record(
            6,
            11.0,
            0.3,
            vec![json!({"event": "watchdog", "tier": "STOP_WAIT",
            "announcement": "Waiting for the planner."})],
        )));
        let lost = json!({"event": "sensor_error", "error": "disconnected from ws://robot:9090: closed"});
        all.extend(st.lines(&record(
            7,
            12.0,
            0.3,
            vec![lost.clone(), json!({"event": "publish_failed", "error": "x"})],
        )));
        all.extend(st.lines(&record(8, 12.05, 0.3, vec![lost, json!({"event": "publish_failed", "error": "x"})])));
        all.extend(st.lines(&record(9, 15.0, 0.3, Vec::new())));
        all.extend(st.lines(&record(10, 15.5, 0.3, vec![over])));
        all.extend(st.lines(&record(
            11,
            16.0,
            0.3,
            vec![json!({"event": "discovery", "label": "kitchen",
            "significance": "room"})],
        )));
        insta::assert_snapshot!(all.join("\n"));
        assert!((st.distance_m - 0.3).abs() < 1e-9);
        assert_eq!(st.decisions, 2);
        // the discovery waits to be spoken on the robot's speech topic
        assert_eq!(std::mem::take(&mut st.discoveries), vec!["I found kitchen.".to_string()]);
    }

    #[test]
    fn the_stats_line_and_a_dropped_decision_are_printed() {
        let mut st = State::default();
        let stats = "VLM stats: 12 calls/min (3 triggered, 2 skipped), avg latency 1500ms, tier 0";
        let lines = st.lines(&record(1, 60.0, 0.0, vec![json!({"event": "vlm_stats", "line": stats})]));
        assert_eq!(lines, vec![format!("[   60.0 s] {stats}")]);
        let why = "LiDAR /scan: sensor fault: only 0 of 720 beams valid";
        let lines = st.lines(&record(2, 61.0, 0.0, vec![json!({"event": "decision_dropped", "reason": why})]));
        assert_eq!(lines, vec![format!("[   61.0 s] decision not executed: {why}")]);
    }

    #[test]
    fn discoveries_become_sentences_for_the_speech_topic_once() {
        let progress = Progress::new();
        let mut tap = progress.tap();
        let found = json!({"event": "discovery", "label": "red door", "notes": "at the end of the corridor",
                           "significance": "landmark"});
        tap(&record(1, 1.0, 0.0, vec![found]));
        assert_eq!(progress.take_discoveries(), vec!["I found red door: at the end of the corridor".to_string()]);
        assert!(progress.take_discoveries().is_empty(), "each is spoken once");
    }
}
