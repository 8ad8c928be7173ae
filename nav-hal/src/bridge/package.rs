//! The `navkit_bridge` Python package, embedded in the binary, so a `nav`
//! installed with `cargo install` (no checkout next to it) can still start
//! the bridge server and its workers: [`install`] writes the files into a
//! directory named after their content, which goes on the child's
//! `PYTHONPATH`.
//!
//! The files are `nav-hal/bridge/navkit_bridge/**/*.py` at build time; a
//! test checks that the list is complete and the contents current.

use std::io;
use std::path::{Path, PathBuf};

/// Every file of the package: its path below the package root's parent
/// (`navkit_bridge/…`, `/`-separated) and its text.
pub const FILES: &[(&str, &str)] = &[
    ("navkit_bridge/__init__.py", include_str!("../../bridge/navkit_bridge/__init__.py")),
    ("navkit_bridge/__main__.py", include_str!("../../bridge/navkit_bridge/__main__.py")),
    ("navkit_bridge/backends/__init__.py", include_str!("../../bridge/navkit_bridge/backends/__init__.py")),
    ("navkit_bridge/backends/base.py", include_str!("../../bridge/navkit_bridge/backends/base.py")),
    ("navkit_bridge/backends/habitat.py", include_str!("../../bridge/navkit_bridge/backends/habitat.py")),
    (
        "navkit_bridge/backends/miniworld/__init__.py",
        include_str!("../../bridge/navkit_bridge/backends/miniworld/__init__.py"),
    ),
    (
        "navkit_bridge/backends/miniworld/backend.py",
        include_str!("../../bridge/navkit_bridge/backends/miniworld/backend.py"),
    ),
    (
        "navkit_bridge/backends/miniworld/detect.py",
        include_str!("../../bridge/navkit_bridge/backends/miniworld/detect.py"),
    ),
    (
        "navkit_bridge/backends/miniworld/geodesic.py",
        include_str!("../../bridge/navkit_bridge/backends/miniworld/geodesic.py"),
    ),
    (
        "navkit_bridge/backends/miniworld/scenes.py",
        include_str!("../../bridge/navkit_bridge/backends/miniworld/scenes.py"),
    ),
    ("navkit_bridge/backends/openroom.py", include_str!("../../bridge/navkit_bridge/backends/openroom.py")),
    ("navkit_bridge/colour_detector.py", include_str!("../../bridge/navkit_bridge/colour_detector.py")),
    ("navkit_bridge/protocol.py", include_str!("../../bridge/navkit_bridge/protocol.py")),
    ("navkit_bridge/rule_policy.py", include_str!("../../bridge/navkit_bridge/rule_policy.py")),
    ("navkit_bridge/server.py", include_str!("../../bridge/navkit_bridge/server.py")),
    ("navkit_bridge/worker.py", include_str!("../../bridge/navkit_bridge/worker.py")),
];

/// A fingerprint of [`FILES`] (64-bit FNV-1a over paths and contents): two
/// builds with the same Python files share one installed copy, a changed file
/// gets a new one.
pub fn fingerprint() -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (path, text) in FILES {
        for byte in path.bytes().chain([0]).chain(text.bytes()).chain([0]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

/// The directory [`install`] uses below `root`: `bridge-<crate version>-<fingerprint>`.
pub fn install_dir(root: &Path) -> PathBuf {
    root.join(format!("bridge-{}-{:016x}", env!("CARGO_PKG_VERSION"), fingerprint()))
}

/// Writes the package below `root` (unless an earlier call did) and returns
/// the directory to put on `PYTHONPATH` (it holds `navkit_bridge/`).
///
/// The files are written into a fresh sibling directory that is then
/// renamed into place, so a concurrent `nav` or an interrupted write never
/// leaves a half-written package behind.
///
/// # Errors
/// Any error creating the directories or writing the files, with the path.
pub fn install(root: &Path) -> io::Result<PathBuf> {
    let dir = install_dir(root);
    if dir.join("navkit_bridge").join("__init__.py").is_file() {
        return Ok(dir);
    }
    let named = |e: io::Error, p: &Path| io::Error::new(e.kind(), format!("{}: {e}", p.display()));
    std::fs::create_dir_all(root).map_err(|e| named(e, root))?;
    let staging = root.join(format!(".bridge-staging-{}-{:016x}", std::process::id(), fingerprint()));
    let _ = std::fs::remove_dir_all(&staging);
    for (path, text) in FILES {
        let file = staging.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(|e| named(e, parent))?;
        }
        std::fs::write(&file, text).map_err(|e| named(e, &file))?;
    }
    match std::fs::rename(&staging, &dir) {
        Ok(()) => Ok(dir),
        // another process installed the same files first
        Err(_) if dir.join("navkit_bridge").join("__init__.py").is_file() => {
            let _ = std::fs::remove_dir_all(&staging);
            Ok(dir)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            Err(named(e, &dir))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn python_files(dir: &Path, prefix: &str, out: &mut Vec<String>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if path.is_dir() && name != "__pycache__" {
                python_files(&path, &format!("{prefix}{name}/"), out);
            } else if name.ends_with(".py") {
                out.push(format!("{prefix}{name}"));
            }
        }
    }

    #[test]
    fn every_python_file_of_the_package_is_embedded_and_current() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("bridge");
        let mut on_disk = Vec::new();
        python_files(&root.join("navkit_bridge"), "navkit_bridge/", &mut on_disk);
        on_disk.sort();
        let mut embedded: Vec<String> = FILES.iter().map(|(p, _)| (*p).to_string()).collect();
        embedded.sort();
        assert_eq!(embedded, on_disk, "nav-hal/src/bridge/package.rs lists the package's files");
        for (path, text) in FILES {
            assert_eq!(std::fs::read_to_string(root.join(path)).unwrap(), *text, "{path}");
        }
    }

    #[test]
    fn install_writes_the_package_once_under_a_content_named_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = install(tmp.path()).unwrap();
        assert_eq!(dir, install_dir(tmp.path()));
        for (path, text) in FILES {
            assert_eq!(std::fs::read_to_string(dir.join(path)).unwrap(), *text);
        }
        // a second call reuses it and leaves no staging directory behind
        assert_eq!(install(tmp.path()).unwrap(), dir);
        let names: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }
}
