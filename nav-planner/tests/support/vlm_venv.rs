//! The Python of the venv `ci/setup-vlm.sh` makes (the providers' SDKs,
//! llama-cpp-python's server and SmolLM2), for the tests that need it:
//! `NAVKIT_VLM_PYTHON`, else `.venv-vlm/bin/python` at the workspace root.
//! Without it those tests skip, unless `NAVKIT_REQUIRE_SDKS=1` (CI sets it).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("nav-planner sits in the workspace").to_path_buf()
}

/// The venv's Python when it passes `check` (a Python one-liner; `None`: it
/// only has to exist), else `None` — a skip, or a failure naming `needs`
/// under `NAVKIT_REQUIRE_SDKS=1`.
pub fn python(check: Option<&str>, needs: &str) -> Option<PathBuf> {
    let python = std::env::var_os("NAVKIT_VLM_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv-vlm/bin/python"));
    let required = std::env::var("NAVKIT_REQUIRE_SDKS").is_ok_and(|v| v == "1");
    let usable = python.exists()
        && check.is_none_or(|c| Command::new(&python).args(["-c", c]).status().is_ok_and(|s| s.success()));
    if usable {
        return Some(python);
    }
    assert!(!required, "NAVKIT_REQUIRE_SDKS=1 but {} lacks {needs} (run ci/setup-vlm.sh)", python.display());
    eprintln!("skipping: no {needs} at {} (run ci/setup-vlm.sh)", python.display());
    None
}
