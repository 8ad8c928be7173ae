//! One module per subcommand.

pub mod eval;
pub mod grounding;
#[cfg(feature = "habitat")]
pub mod habitat;
pub mod parse;
pub mod prompt;
pub mod replay;
#[cfg(feature = "rosmaster")]
pub mod rosmaster;
pub mod run;

use crate::exit::{Exit, usage};
use nav_hal::arena::Arena;
use nav_planner::protocol::ProtocolKind;
use std::path::Path;

/// The built-in arena a protocol runs on when none is given.
pub fn default_arena(protocol: ProtocolKind) -> &'static str {
    match protocol {
        ProtocolKind::Objectnav => "house_a",
        ProtocolKind::Candidates => "simple",
        ProtocolKind::Explore => "exploration",
    }
}

/// Resolves `--arena NAME` / `--arena-file PATH` (exit 2 with the file's or
/// field's name on a bad arena). Returns the arena and its source label.
pub fn load_arena(name: Option<&str>, file: Option<&Path>, protocol: ProtocolKind) -> Result<(Arena, String), Exit> {
    match (name, file) {
        (Some(_), Some(_)) => Err(usage("give --arena or --arena-file, not both")),
        (_, Some(path)) => Arena::load(path).map(|a| (a, path.display().to_string())).map_err(|e| usage(e.to_string())),
        (name, None) => {
            let name = name.unwrap_or(default_arena(protocol));
            Arena::builtin(name).map(|a| (a, format!("builtin:{name}"))).map_err(|e| {
                usage(format!("{e} (built-in arenas: {}, proc_<seed>)", Arena::builtin_names().join(", ")))
            })
        }
    }
}
