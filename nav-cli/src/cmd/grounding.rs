//! `nav grounding merge FILES… [--format txt|json|both]` and `nav grounding
//! generate EPISODE_JSON [--vlm …]` (docs/GROUNDING.md).

use crate::config::NavConfig;
use crate::exit::{CmdResult, Exit, internal, runtime, usage};
use clap::Subcommand;
use nav_memory::grounding::{GroundingRequest, MergeFormat, load_grounding_document, merge_files, render_txt};
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
    /// Regenerate final_grounding of a saved episode from its stacked feedback, rewrite the file
    /// (and its .txt sibling, if present) and print the new final_grounding. With --vlm (or a
    /// [vlm] section in --config) the model writes it; otherwise the offline summary.
    Generate {
        /// A saved grounding_episode_<N>.json.
        episode_json: PathBuf,
        #[command(flatten)]
        backend: super::VlmArgs,
        /// Configuration file (TOML).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
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
                crate::exit::diag!("nav: warning: {w}");
            }
            crate::exit::print(&merged.render_prompt_section())?;
            Ok(0)
        }
        GroundingCommand::Generate { episode_json, backend, config } => generate(&episode_json, &backend, config),
    }
}

fn generate(path: &std::path::Path, backend: &super::VlmArgs, config: Option<PathBuf>) -> CmdResult {
    let config = NavConfig::load_opt(config.as_deref())?;
    let (mut file, mut document) = load_grounding_document(path).map_err(|e| usage(e.to_string()))?;
    let vlm = if backend.vlm.is_some() || config.vlm.is_some() { Some(backend.build(&config)?) } else { None };
    let req = GroundingRequest { episode_id: file.expr_info.episode_id, stacked: file.stacked_grounding.clone() };
    let rt = runtime()?;
    let (timestamp, _) = super::experiment::utc_now();
    let final_grounding = super::experiment::final_grounding(&rt, vlm.as_deref(), &req, timestamp);
    // a key pasted into feedback (or echoed by the model) is not printed or stored again
    let mut final_value = serde_json::to_value(&final_grounding).map_err(internal)?;
    scrub_strings(&mut final_value);
    file.final_grounding = Some(serde_json::from_value(final_value.clone()).map_err(internal)?);
    // the keys this version does not know stay as they were
    document.insert("final_grounding".into(), final_value.clone());
    let mut json = serde_json::to_vec_pretty(&document).map_err(internal)?;
    json.push(b'\n');
    // never write a file the next run (or merge) refuses to read
    let limit = nav_memory::snapshot::MAX_GROUNDING_BYTES;
    if json.len() as u64 > limit {
        return Err(usage(format!(
            "{}: with its final grounding the file would be {} bytes, over the {} limit every reader of grounding \
             files takes; nothing was written",
            path.display(),
            json.len(),
            nav_core::bounded::human_bytes(limit)
        )));
    }
    // a failed write (a full disk) is exit 3; the error names the file
    let written = |e: nav_memory::MemoryError| Exit::Output(e.to_string());
    nav_memory::write_atomic(path, &json).map_err(written)?;
    let txt = path.with_extension("txt");
    if txt.is_file() {
        nav_memory::write_atomic(&txt, format!("{}\n", render_txt(&file)).as_bytes()).map_err(written)?;
    }
    crate::exit::print(&serde_json::to_string_pretty(&final_value).map_err(internal)?)?;
    Ok(0)
}

/// Every string in `value` with credentials scrubbed.
fn scrub_strings(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(s) => *s = nav_planner::vlm::scrub_credentials(s),
        serde_json::Value::Array(items) => items.iter_mut().for_each(scrub_strings),
        serde_json::Value::Object(map) => map.values_mut().for_each(scrub_strings),
        _ => {}
    }
}
