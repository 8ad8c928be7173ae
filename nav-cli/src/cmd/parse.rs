//! `nav parse --protocol P [FILE|-]`.

use crate::exit::{CmdResult, internal, usage};
use clap::Args;
use nav_planner::protocol::{ParseReport, ProtocolKind};
use std::io::Read;
use std::path::PathBuf;

/// Parse one raw VLM reply; prints {"ok": bool, "decision": …, "error": …}
/// where decision is the validated decision, or the protocol's fallback
/// when ok is false. Unknown extra fields are ignored; a wrong type or an
/// out-of-range value is invalid.
#[derive(Args, Debug)]
pub struct ParseArgs {
    /// Protocol: objectnav, explore or candidates.
    #[arg(long, short)]
    protocol: ProtocolKind,
    /// The reply; "-" or nothing reads standard input.
    file: Option<PathBuf>,
}

/// Runs the command.
pub fn run(args: ParseArgs) -> CmdResult {
    let text = match args.file.as_deref() {
        None => read_stdin()?,
        Some(p) if p.as_os_str() == "-" => read_stdin()?,
        Some(p) => std::fs::read_to_string(p).map_err(|e| usage(format!("{}: {e}", p.display())))?,
    };
    let report = ParseReport::parse(args.protocol, &text);
    crate::exit::print(&serde_json::to_string(&report).map_err(internal)?)?;
    Ok(0)
}

fn read_stdin() -> Result<String, crate::exit::Exit> {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).map_err(|e| usage(format!("standard input: {e}")))?;
    Ok(s)
}
