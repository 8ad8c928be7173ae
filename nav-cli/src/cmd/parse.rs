//! `nav parse --protocol P [FILE|-]`.

use crate::exit::{CmdResult, internal, usage};
use clap::Args;
use nav_core::bounded::read_to_string_limited;
use nav_planner::protocol::{ParseReport, ProtocolKind};
use std::path::PathBuf;

/// Parse one raw VLM reply; prints {"ok": bool, "decision": …, "error": …}
/// where decision is the validated decision, or the protocol's fallback
/// when ok is false. Unknown extra fields are ignored; a wrong type or an
/// out-of-range value is invalid.
///
/// Exit status: 0 when the reply is valid ("ok": true), 1 when it is not
/// ("ok": false; the fallback is still printed), 2 when the reply cannot be
/// read (a missing file, more than --max-bytes).
#[derive(Args, Debug)]
pub struct ParseArgs {
    /// Protocol: objectnav, explore or candidates.
    #[arg(long, short)]
    protocol: ProtocolKind,
    /// The reply; "-" or nothing reads standard input.
    file: Option<PathBuf>,
    /// The largest reply read, in bytes (more is an error naming the limit).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_REPLY_BYTES)]
    max_bytes: u64,
}

/// The exit code when the reply is not a valid decision (`"ok": false`).
pub const NOT_OK: i32 = 1;

/// `--max-bytes`' default: far above any model reply.
pub const DEFAULT_MAX_REPLY_BYTES: u64 = 4 << 20;

/// Runs the command.
pub fn run(args: ParseArgs) -> CmdResult {
    let limit = args.max_bytes;
    let text = match args.file.as_deref() {
        None => read_stdin(limit)?,
        Some(p) if p.as_os_str() == "-" => read_stdin(limit)?,
        Some(p) => nav_core::bounded::open_regular(p)
            .and_then(|f| read_to_string_limited(f, limit))
            .map_err(|e| usage(format!("{}: {e}{}", p.display(), hint(&e, limit))))?,
    };
    let report = ParseReport::parse(args.protocol, &text);
    crate::exit::print(&serde_json::to_string(&report).map_err(internal)?)?;
    // like `grep`, a shell can test the result without reading the JSON
    Ok(if report.ok { 0 } else { NOT_OK })
}

fn read_stdin(limit: u64) -> Result<String, crate::exit::Exit> {
    read_to_string_limited(std::io::stdin().lock(), limit)
        .map_err(|e| usage(format!("standard input: {e}{}", hint(&e, limit))))
}

/// Points at `--max-bytes` when the limit was the problem.
fn hint(e: &std::io::Error, limit: u64) -> &'static str {
    if e.to_string() == nav_core::bounded::too_large(limit).to_string() { " (raise it with --max-bytes)" } else { "" }
}
