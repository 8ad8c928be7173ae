//! Runs `nav` under an address-space limit (`prlimit --as`, when the
//! machine has it) and a wall-clock limit, for the hostile-input tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Address-space limit of one run: far above a normal short run, far
/// below what an unbounded allocation asks for.
pub const ADDRESS_SPACE_BYTES: u64 = 4 << 30;

/// What one limited run ended with.
#[derive(Debug)]
pub struct Limited {
    /// The exit code; `None` when killed (wall limit) or ended by a signal.
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Wall time.
    pub secs: f64,
}

/// Runs `nav args` with standard input from `stdin` (or null) under the
/// limits; the process is killed at `wall`.
pub fn nav_limited(args: &[&str], stdin: Option<&Path>, wall: Duration) -> Limited {
    let nav = env!("CARGO_BIN_EXE_nav");
    let mut cmd = if Path::new("/usr/bin/prlimit").exists() {
        let mut c = Command::new("/usr/bin/prlimit");
        c.arg(format!("--as={ADDRESS_SPACE_BYTES}")).arg("--").arg(nav);
        c
    } else {
        Command::new(nav)
    };
    let dir = tempfile::tempdir().unwrap();
    let (out_path, err_path) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let input = match stdin {
        Some(p) => Stdio::from(std::fs::File::open(p).unwrap()),
        None => Stdio::null(),
    };
    let mut child = cmd
        .args(args)
        .stdin(input)
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        if start.elapsed() > wall {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Limited {
        code,
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
        secs: start.elapsed().as_secs_f64(),
    }
}
