//! `nav replay LOG --plot PATH`: redraw a logged or recorded run.

use crate::exit::{CmdResult, usage};
use clap::Args;
use nav_hal::arena::Arena;
use nav_planner::navigator::read_log;
use std::path::PathBuf;

/// Redraw a logged run (a step log written with `nav run --log`, or a
/// recording written with `--record`, told apart by its first bytes) as a
/// picture. The arena is read from the log's first step; --arena or
/// --arena-file override it.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The step log (JSONL) or recording (MCAP).
    log: PathBuf,
    /// Output picture (.svg or .png).
    #[arg(long, value_name = "PATH")]
    plot: PathBuf,
    /// Built-in arena to draw on (overrides the log).
    #[arg(long)]
    arena: Option<String>,
    /// Arena file to draw on (overrides the log).
    #[arg(long, value_name = "PATH")]
    arena_file: Option<PathBuf>,
}

/// Runs the command.
pub fn run(args: ReplayArgs) -> CmdResult {
    crate::plot::check_extension(&args.plot)?;
    let (records, truncated) = if crate::record::read::is_mcap(&args.log) {
        (crate::record::read::read_steps(&args.log).map_err(usage)?, false)
    } else {
        read_log(&args.log).map_err(|e| usage(e.to_string()))?
    };
    if records.is_empty() {
        return Err(usage(format!("{}: the log holds no steps", args.log.display())));
    }
    let info = &records[0].info;
    let arena: Arena = match (&args.arena, &args.arena_file) {
        (Some(n), _) => Arena::builtin(n).map_err(|e| usage(e.to_string()))?,
        (None, Some(p)) => Arena::load(p).map_err(|e| usage(e.to_string()))?,
        (None, None) => match info.get("arena_json") {
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|e| usage(format!("{}: step 0 has an unreadable arena: {e}", args.log.display())))?,
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
    crate::plot::draw(&arena, &records, &title, &args.plot)?;
    crate::exit::print(&args.plot.display().to_string())?;
    Ok(0)
}
