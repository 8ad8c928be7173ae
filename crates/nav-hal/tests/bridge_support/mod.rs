//! Shared helpers of the bridge integration tests: which Python to run and
//! how to start the `navkit_bridge` package from the source tree.

#![allow(dead_code)]

use nav_hal::bridge::BridgeCommand;
use std::path::PathBuf;

/// `crates/nav-hal/bridge`: the Python package's source root.
pub fn package_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bridge")
}

/// This file's directory (fault-injecting test servers live here).
pub fn support_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("bridge_support")
}

/// The Python interpreter: `$NAVKIT_PYTHON`, else the workspace's
/// `.venv/bin/python` when it exists, else `python3`.
pub fn python() -> String {
    if let Ok(p) = std::env::var("NAVKIT_PYTHON") {
        if !p.trim().is_empty() {
            return p;
        }
    }
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    if venv.exists() {
        return venv.to_string_lossy().into_owned();
    }
    "python3".to_string()
}

/// `python -m navkit_bridge --backend <backend> <extra…>` with the source
/// tree on `PYTHONPATH`.
pub fn bridge_command(backend: &str, extra: &[&str]) -> BridgeCommand {
    BridgeCommand::new(python())
        .args(["-m", "navkit_bridge", "--backend", backend])
        .args(extra.iter().copied())
        .env("PYTHONPATH", package_dir().to_string_lossy())
}

/// A test server script from `tests/bridge_support/` (it imports
/// `navkit_bridge` from the source tree).
pub fn script_command(script: &str, extra: &[&str]) -> BridgeCommand {
    BridgeCommand::new(python())
        .arg(support_dir().join(script).to_string_lossy())
        .args(extra.iter().copied())
        .env("PYTHONPATH", package_dir().to_string_lossy())
}

/// True while a process with this id exists (and is not a zombie).
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.split_whitespace().nth(2).is_none_or(|s| s != "Z"),
        Err(_) => false,
    }
}
