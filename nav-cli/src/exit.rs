//! How commands fail: bad usage/input (exit 2) or internal errors (exit 3).

/// A command's failure, mapped to an exit code by `main`.
#[derive(Debug)]
pub enum Exit {
    /// Bad usage or bad input: exit 2, with a message naming the problem.
    Usage(String),
    /// Something that should not happen: exit 3.
    Internal(String),
}

/// A command's result: the exit code on success.
pub type CmdResult = Result<i32, Exit>;

/// Shorthand for a usage error.
pub fn usage(msg: impl Into<String>) -> Exit {
    Exit::Usage(msg.into())
}

/// Shorthand for an internal error.
pub fn internal(msg: impl std::fmt::Display) -> Exit {
    Exit::Internal(msg.to_string())
}

/// A single-threaded tokio runtime for a command.
pub fn runtime() -> Result<tokio::runtime::Runtime, Exit> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(internal)
}

/// How an episode's failure exits: a bad spec, arena or configuration
/// value (the loops' own config checks included) is bad input, exit 2;
/// anything else is internal, exit 3.
pub fn episode_error(e: nav_planner::navigator::episode::EpisodeError) -> Exit {
    use nav_planner::navigator::NavError;
    use nav_planner::navigator::episode::EpisodeError;
    match e {
        EpisodeError::Spec(m) => usage(m),
        EpisodeError::Config(c) => usage(format!("config {}", section_and_key(&c))),
        EpisodeError::Hal(h) => usage(h.to_string()),
        EpisodeError::Nav(NavError::Config(m)) => usage(m),
        EpisodeError::Nav(NavError::InvalidConfig(c)) => usage(format!("config {}", section_and_key(&c))),
        EpisodeError::Nav(NavError::Memory(nav_memory::MemoryError::Config(c))) => {
            usage(format!("memory config {}", section_and_key(&c)))
        }
        other => internal(other),
    }
}

/// `[explore.safety.speeds] fast_mps: must be …` for the key
/// `explore.safety.speeds.fast_mps`: the table a user edits, then the key.
pub fn section_and_key(e: &nav_core::config::ConfigError) -> String {
    match e.key.rsplit_once('.') {
        Some((section, key)) => format!("[{section}] {key}: {}", e.message),
        None => format!("[{}] {}", e.key, e.message),
    }
}
