//! `nav replay LOG [--plot PATH]`: summarize or redraw a logged or recorded run.

use crate::exit::{CmdResult, usage};
use clap::Args;
use nav_hal::arena::Arena;
use nav_planner::navigator::{StepRecord, read_log};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Summarize a logged run (a step log written with `nav run --log`, or a
/// recording written with `--record`, told apart by its first bytes):
/// steps, path length, collisions, planner and model calls, tokens,
/// fallbacks and events. With --plot, draw it as a picture instead; the
/// arena is read from the log's first step, --arena or --arena-file
/// override it.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The step log (JSONL) or recording (MCAP).
    log: PathBuf,
    /// Draw the run into this picture (.svg or .png) instead of printing a summary.
    #[arg(long, value_name = "PATH")]
    plot: Option<PathBuf>,
    /// Built-in arena to draw on (overrides the log; only with --plot).
    #[arg(long, requires = "plot")]
    arena: Option<String>,
    /// Arena file to draw on (overrides the log; only with --plot).
    #[arg(long, value_name = "PATH", requires = "plot")]
    arena_file: Option<PathBuf>,
}

/// Runs the command.
pub fn run(args: ReplayArgs) -> CmdResult {
    if let Some(plot) = &args.plot {
        crate::plot::check_extension(plot)?;
    }
    let (records, truncated) = if nav_planner::record::read::is_mcap(&args.log) {
        (nav_planner::record::read::read_steps(&args.log).map_err(|e| usage(e.to_string()))?, false)
    } else {
        read_log(&args.log).map_err(|e| usage(e.to_string()))?
    };
    if records.is_empty() {
        // a file of one line of junk is "truncated" by the reader's rule: say what it is
        let why = if truncated { " (its only line is not a step record: is it a step log?)" } else { "" };
        return Err(usage(format!("{}: the log holds no steps{why}", args.log.display())));
    }
    warn_out_of_order(&records);
    let Some(plot) = &args.plot else {
        crate::exit::print(&summary(&args.log, &records, truncated))?;
        return Ok(0);
    };
    let info = &records[0].info;
    let arena: Arena = match (&args.arena, &args.arena_file) {
        (Some(n), _) => Arena::builtin(n).map_err(|e| usage(e.to_string()))?,
        (None, Some(p)) => Arena::load(p).map_err(|e| usage(e.to_string()))?,
        (None, None) => match info.get("arena_json") {
            // validated as `--arena-file` is: a log is input from outside, and its arena sizes the drawing
            Some(v) => Arena::from_json_named(&v.to_string(), &format!("{} (step 0's arena)", args.log.display()))
                .map_err(|e| usage(e.to_string()))?,
            None => {
                let name = info.get("arena").and_then(|v| v.as_str()).ok_or_else(|| {
                    usage(format!("{}: no arena recorded; pass --arena or --arena-file", args.log.display()))
                })?;
                Arena::builtin(name).map_err(|e| usage(e.to_string()))?
            }
        },
    };
    let get = |k: &str| info.get(k).and_then(|v| v.as_str()).unwrap_or("?").to_string();
    let title = format!(
        "{} | {} | {} | {} steps{}",
        arena.name,
        get("protocol"),
        get("planner"),
        records.len() - 1,
        if truncated { " (truncated log)" } else { "" }
    );
    crate::plot::draw(&arena, &records, &title, plot)?;
    crate::exit::print(&plot.display().to_string())?;
    Ok(0)
}

/// Warns once when the step numbers do not rise (records reordered,
/// duplicated or from two runs): the summary and the picture take the
/// records in file order.
fn warn_out_of_order(records: &[StepRecord]) {
    let bad = records.windows(2).filter(|w| w[1].step <= w[0].step).count();
    if let Some(at) = records.windows(2).position(|w| w[1].step <= w[0].step) {
        crate::exit::diag!(
            "nav: warning: the step numbers do not rise: step {} follows step {} (record {}), {bad} time(s) in all; \
             records are taken in file order",
            records[at + 1].step,
            records[at].step,
            at + 2
        );
    }
}

/// The text `nav replay LOG` prints: what the log holds about the run.
fn summary(log: &Path, records: &[StepRecord], truncated: bool) -> String {
    let info = records.first().map(|r| &r.info);
    let field = |k: &str| info.and_then(|i| i.get(k)).filter(|v| !v.is_null()).map(value_text);
    let mut s = String::new();
    let _ =
        writeln!(s, "{}{}", log.display(), if truncated { " (truncated log: the last line was cut off)" } else { "" });
    let identity: Vec<String> = [("arena", ""), ("protocol", "protocol "), ("planner", "planner "), ("seed", "seed ")]
        .iter()
        .filter_map(|(k, label)| field(k).map(|v| format!("{label}{v}")))
        .chain(field("target").map(|t| format!("target {t}")))
        .collect();
    if !identity.is_empty() {
        let _ = writeln!(s, "  {}", identity.join(" | "));
    }
    let last = records.last();
    let path = |pose: &dyn Fn(&StepRecord) -> Option<(f64, f64)>| -> Option<f64> {
        let points: Vec<(f64, f64)> = records.iter().filter_map(pose).collect();
        (points.len() == records.len())
            .then(|| points.windows(2).map(|w| (w[1].0 - w[0].0).hypot(w[1].1 - w[0].1)).sum())
    };
    let estimated = path(&|r| Some((r.pose.x, r.pose.y))).unwrap_or(0.0);
    let truth = path(&|r| r.gt_pose.as_ref().map(|p| (p.x, p.y)));
    let _ = writeln!(
        s,
        "  steps {} ({:.1} s) | path {estimated:.2} m{} | collisions {}",
        last.map_or(0, |r| r.step),
        last.map_or(0.0, |r| r.t_s),
        truth.map_or(String::new(), |t| format!(" (ground truth {t:.2} m)")),
        records.iter().filter(|r| r.collided).count()
    );
    let planners = records.iter().filter_map(|r| r.planner.as_ref());
    let (mut calls, mut vlm, mut failed, mut prompt, mut completion, mut fallbacks) = (0, 0u64, 0u64, 0u64, 0u64, 0);
    for p in planners {
        calls += 1;
        vlm += u64::from(p.vlm_calls);
        failed += u64::from(p.vlm_failures);
        prompt += p.prompt_tokens;
        completion += p.completion_tokens;
        fallbacks += usize::from(p.fallback.is_some());
    }
    let _ = writeln!(
        s,
        "  planner calls {calls} | VLM calls {vlm} ({failed} failed) | tokens {prompt}+{completion} | fallbacks {fallbacks}"
    );
    // counted through an index (a log can hold millions of distinct names)
    let mut events: Vec<(&str, usize)> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for name in records.iter().flat_map(|r| &r.events).filter_map(|e| e.get("event").and_then(|v| v.as_str())) {
        let i = *index.entry(name).or_insert_with(|| {
            events.push((name, 0));
            events.len() - 1
        });
        events[i].1 += 1;
    }
    if !events.is_empty() {
        let mut list: Vec<String> =
            events.iter().take(MAX_EVENT_KINDS).map(|(n, c)| format!("{} {c}", shown(n))).collect();
        if events.len() > MAX_EVENT_KINDS {
            list.push(format!("and {} more kinds", events.len() - MAX_EVENT_KINDS));
        }
        let _ = writeln!(s, "  events: {}", list.join(", "));
    }
    let _ = writeln!(s, "  last action: {}", last.map_or("none".into(), |r| shown(&r.action)));
    let logged = records.iter().rev().find_map(|r| r.info.get("success").and_then(|v| v.as_bool()));
    let reached = index.contains_key("goal_reached");
    let _ = write!(
        s,
        "  success: {}",
        match (logged, reached) {
            (Some(true), _) => "yes (logged)",
            (Some(false), _) => "no (logged)",
            (None, true) => "the loop logged goal_reached (the judged result is what `nav run --json` prints)",
            (None, false) =>
                "not in the log (the step log holds what the robot did; `nav run --json` prints the judged run)",
        }
    );
    s
}

/// A step-0 field as text: strings without their quotes.
fn value_text(v: &serde_json::Value) -> String {
    shown(&v.as_str().map_or_else(|| v.to_string(), str::to_string))
}

/// The most event kinds the summary lists (by first appearance).
const MAX_EVENT_KINDS: usize = 32;

/// The most characters of one logged string the summary prints.
const MAX_SHOWN_CHARS: usize = 120;

/// A string from the log as the summary prints it: a log is input from
/// outside, so control characters (a terminal's escape sequences) are
/// printed escaped and a long string is cut.
fn shown(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == MAX_SHOWN_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}
