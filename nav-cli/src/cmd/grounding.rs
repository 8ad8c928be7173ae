//! `nav grounding merge FILES… [--format txt|json|both]` (seed 004).

use crate::exit::{CmdResult, Exit, usage};
use clap::Subcommand;
use nav_memory::grounding::{MergeFormat, merge_files};
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

/// Parses a merge format name.
pub fn parse_format(s: &str) -> Result<MergeFormat, Exit> {
    match s {
        "txt" => Ok(MergeFormat::Txt),
        "json" => Ok(MergeFormat::Json),
        "both" => Ok(MergeFormat::Both),
        other => Err(usage(format!("--format {other:?}: expected txt, json or both"))),
    }
}

/// Runs the command.
pub fn run(cmd: GroundingCommand) -> CmdResult {
    match cmd {
        GroundingCommand::Merge { files, format } => {
            let merged = merge_files(&files, parse_format(&format)?).map_err(|e| usage(e.to_string()))?;
            for w in &merged.warnings {
                eprintln!("nav: warning: {w}");
            }
            println!("{}", merged.render_prompt_section());
            Ok(0)
        }
    }
}
