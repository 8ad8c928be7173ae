//! `nav grounding merge FILES… [--format txt|json|both]` (seed 004).

use crate::exit::{CmdResult, usage};
use clap::Subcommand;
use nav_memory::grounding::{MergeFormat, merge_files};
use std::io::Write;
use std::path::PathBuf;

/// Grounding subcommands.
#[derive(Subcommand, Debug)]
pub enum GroundingCommand {
    /// Merge grounding files (JSON and/or TXT) and print the prompt section.
    Merge {
        /// Grounding files; JSON files merge by category, TXT files are appended.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// txt (markdown), json (the merged JSON) or both.
        #[arg(long, default_value = "txt")]
        format: String,
    },
}

/// Runs the command.
pub fn run(cmd: GroundingCommand) -> CmdResult {
    match cmd {
        GroundingCommand::Merge { files, format } => {
            let merged =
                merge_files(&files, format.parse::<MergeFormat>().map_err(|e| usage(format!("--format: {e}")))?)
                    .map_err(|e| usage(e.to_string()))?;
            for w in &merged.warnings {
                let _ = writeln!(std::io::stderr(), "nav: warning: {w}");
            }
            crate::exit::print(&merged.render_prompt_section())?;
            Ok(0)
        }
    }
}
