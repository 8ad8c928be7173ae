//! Shared helpers of the bridge integration tests: which Python to run,
//! how to start the `navkit_bridge` package from the source tree, and
//! whether MiniWorld is importable. nav-planner's bridge tests include this
//! file too (`#[path]`), so its paths are relative to the workspace root, valid from
//! either crate's manifest directory.

#![allow(dead_code)]

use nav_hal::bridge::BridgeCommand;
use std::path::PathBuf;

/// `nav-hal/bridge`: the Python package's source root.
pub fn package_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../nav-hal/bridge")
}

/// This file's directory (fault-injecting test servers live here).
pub fn support_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../nav-hal/tests/bridge_support")
}

/// The Python interpreter: `$NAVKIT_PYTHON`, else the workspace's
/// `.venv/bin/python` when it exists, else `python3`.
pub fn python() -> String {
    if let Ok(p) = std::env::var("NAVKIT_PYTHON") {
        if !p.trim().is_empty() {
            return p;
        }
    }
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
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

/// Whether miniworld imports headless; prints why not (past the test
/// harness's capture) and panics when `NAVKIT_REQUIRE_MINIWORLD=1`.
pub fn miniworld_available(test: &str) -> bool {
    let probe = "import pyglet; pyglet.options['headless'] = True; import miniworld, numpy, PIL";
    let out = std::process::Command::new(python()).args(["-c", probe]).output();
    let reason = match out {
        Ok(o) if o.status.success() => return true,
        Ok(o) => String::from_utf8_lossy(&o.stderr).lines().last().unwrap_or("import failed").to_string(),
        Err(e) => format!("cannot run {}: {e}", python()),
    };
    if std::env::var("NAVKIT_REQUIRE_MINIWORLD").is_ok_and(|v| v == "1") {
        panic!("NAVKIT_REQUIRE_MINIWORLD=1 but miniworld is not importable by {}: {reason}", python());
    }
    // Written to the stderr handle directly, not with eprintln!, so that the
    // reason shows in a plain `cargo test` run (the harness captures the macros).
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr().lock(),
        "SKIPPED {test}: miniworld is not importable by {} ({reason}); run ci/setup-bridge.sh",
        python()
    );
    false
}
