//! `nav`: navkit's command-line tool.
//!
//! Thin by design: argument parsing, configuration loading, progress bars
//! and reports. Navigation logic lives in the library crates.
//!
//! Exit codes: 0 success; 1 the episode ran but failed its criteria
//! (`run`); 2 bad usage or bad input (with a message naming the problem);
//! 3 internal errors and output that cannot be written (a full disk); 4 a
//! spending limit (`--max-cost-usd`) stopped the run; 5 the model cannot be
//! reached or used (connection refused, DNS, TLS, HTTP 401/403/404); a
//! closed standard output (`nav … | head`) ends quietly with 0.
//!
//! Features: `backends` (the HTTP VLM backends), `rosmaster` (`nav
//! rosmaster`, nav-hal's rosbridge HAL, and `nav sim-robot`, nav-hal's
//! simulated robot served over rosbridge) and `habitat` (`nav habitat`),
//! all on by default. `async-trait` is here for the HAL traits `nav
//! rosmaster`'s robot wrapper implements.

// The argument structs' doc comments are `nav --help` text, where config
// section names such as [habitat] and placeholders such as proc_<seed> are
// literal; rustdoc must not read them as links or HTML.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
// diagnostics go through `exit::diag!` and output through `exit::print`: neither panics on a full or closed stream
#![deny(clippy::print_stderr, clippy::print_stdout)]
mod cmd;
mod config;
mod exit;
mod plot;

use clap::{Parser, Subcommand};
use std::io::Write;

/// The exit codes, for `--help`.
const EXIT_CODES: &str = "Exit codes: 0 success; 1 the episode ran but failed its criteria; 2 bad usage or input \
                          (also a robot or model that lacks what the run needs); 3 internal error or output that \
                          cannot be written; 4 --max-cost-usd reached; 5 the model cannot be reached or used \
                          (connection refused, DNS, TLS, HTTP 401/403/404).";

/// VLM-guided robot navigation: run episodes, evaluate planners, parse and
/// inspect model replies, replay logs and merge grounding knowledge.
#[derive(Parser, Debug)]
#[command(
    name = "nav",
    version,
    about,
    long_about = None,
    propagate_version = true,
    after_help = EXIT_CODES
)]
struct Cli {
    /// More log output on stderr (-v info, -vv debug); RUST_LOG also works.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

// Each subcommand's one-line `about` is set here; its `--help` text is the
// doc comment of its argument struct (a doc comment here would replace it).
#[derive(Subcommand, Debug)]
enum Command {
    #[command(about = "Run one episode in the built-in simulator", after_help = EXIT_CODES)]
    Run(cmd::run::RunArgs),
    #[command(about = "Run many episodes (arenas × seeds × configurations) and tabulate them", after_help = EXIT_CODES)]
    Eval(cmd::eval::EvalArgs),
    #[command(about = r#"Parse one raw VLM reply and print {"ok", "decision", "error"}"#)]
    Parse(cmd::parse::ParseArgs),
    #[command(about = "Print the exact request a backend would send for a given state")]
    Prompt(cmd::prompt::PromptArgs),
    #[command(about = "Summarize a logged run, or redraw it as a picture (--plot)")]
    Replay(cmd::replay::ReplayArgs),
    #[command(about = "Grounding knowledge: merge files into a prompt section, or generate an episode's")]
    #[command(subcommand)]
    Grounding(cmd::grounding::GroundingCommand),
    #[command(about = "Explore with a real robot (ROSMASTER A1 or any ROS robot) through rosbridge")]
    #[cfg(feature = "rosmaster")]
    Rosmaster(cmd::rosmaster::RosmasterArgs),
    #[command(about = "Serve the simulated robot over rosbridge v2, to try nav rosmaster without a robot")]
    #[cfg(feature = "rosmaster")]
    SimRobot(cmd::sim_robot::SimRobotArgs),
    #[command(about = "Serve the robot as an MCP server (stdio or HTTP) behind the safety layer")]
    #[cfg(feature = "mcp")]
    Mcp(cmd::mcp::McpArgs),
    #[command(about = "ObjectNav episodes in Habitat-sim, MiniWorld or another simulator through the bridge")]
    #[cfg(feature = "habitat")]
    Habitat(cmd::habitat::HabitatArgs),
}

fn init_tracing(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    // roslibrust logs every internal reconnect attempt as a warning; nav-hal reports the link itself
    let default = if verbose >= 2 { default.to_string() } else { format!("{default},roslibrust=error") };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        // every event scrubbed of keys, as every other diagnostic (a URL with a key in it)
        .with_writer(exit::ScrubbedStderr::default)
        // its fallback for a failed write is `eprintln!`, which panics on a full stderr
        .log_internal_errors(false)
        .with_target(false)
        // no colour codes: every control character in what nav prints becomes `?` (exit::terminal_safe),
        // so text from outside (a server's error body) cannot restyle or hide the rest of a line
        .with_ansi(false)
        .try_init();
}

/// Writes what clap has to say (help, version or a usage error) to the
/// stream it belongs on and returns the exit code: clap's own `exit` ignores
/// a failed write, so `nav --help >/dev/full` would exit 0 with the text
/// lost. A failed write of help is exit 3 naming standard output (a closed
/// pipe stays quiet).
fn clap_exit(e: &clap::Error) -> i32 {
    use std::io::IsTerminal;
    let rendered = e.render();
    let written = if e.use_stderr() {
        let mut err = std::io::stderr().lock();
        let text = if err.is_terminal() { rendered.ansi().to_string() } else { rendered.to_string() };
        // a usage error on a full stderr: nothing else can carry it; the exit code still says it
        let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
        Ok(())
    } else {
        let mut out = std::io::stdout().lock();
        let text = if out.is_terminal() { rendered.ansi().to_string() } else { rendered.to_string() };
        out.write_all(text.as_bytes()).and_then(|()| out.flush())
    };
    match written {
        Ok(()) => e.exit_code(),
        Err(w) => {
            let (code, message) = exit::write_error(exit::STDOUT, &w).code_and_message();
            if let Some(m) = message {
                let _ = writeln!(std::io::stderr(), "{}", exit::message_text(&m));
            }
            code
        }
    }
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => std::process::exit(clap_exit(&e)),
    };
    init_tracing(cli.verbose);
    let result = match cli.command {
        Command::Run(a) => cmd::run::run(a),
        Command::Eval(a) => cmd::eval::run(a),
        Command::Parse(a) => cmd::parse::run(a),
        Command::Prompt(a) => cmd::prompt::run(a),
        Command::Replay(a) => cmd::replay::run(a),
        Command::Grounding(c) => cmd::grounding::run(c),
        #[cfg(feature = "rosmaster")]
        Command::Rosmaster(a) => cmd::rosmaster::run(a),
        #[cfg(feature = "rosmaster")]
        Command::SimRobot(a) => cmd::sim_robot::run(a),
        #[cfg(feature = "habitat")]
        Command::Habitat(a) => cmd::habitat::run(a),
        #[cfg(feature = "mcp")]
        Command::Mcp(a) => cmd::mcp::run(a),
    };
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            let (code, message) = e.code_and_message();
            if let Some(m) = message {
                // stderr may be closed or full too: never panic over a message
                let _ = writeln!(std::io::stderr(), "{}", exit::message_text(&m));
            }
            code
        }
    };
    std::process::exit(code);
}
