//! `nav sim-robot` end to end, as a user tries it: the real `nav` binary
//! serves the simulated robot on a free port, `nav rosmaster --url …` (a
//! second process) explores it for eight seconds and exits 0 with its
//! summary, the robot moved, and the server exits 0 on SIGTERM; with
//! `--nav2` its goals go to the emulated Nav2. Binding a
//! non-loopback address needs `--allow-remote` (exit 2 without it, a
//! warning with it); a port in use and a bad arena are exit 2.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

fn nav() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nav"));
    // no config file or relative path of the checkout is picked up by accident
    cmd.current_dir(std::env::temp_dir());
    cmd
}

/// A running `nav sim-robot`: its first stdout line (where it listens) and
/// its stderr, collected as it comes.
struct Server {
    child: Child,
    ready: String,
    stderr: mpsc::Receiver<String>,
    collected: String,
}

impl Server {
    /// Starts `nav sim-robot ARGS` and waits (at most 30 s) for its
    /// ready line.
    fn start(args: &[&str]) -> Self {
        let mut child = nav()
            .arg("sim-robot")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("nav starts");
        let (out_tx, out_rx) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = out_tx.send(line);
            }
        });
        let (err_tx, err_rx) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = err_tx.send(line);
            }
        });
        let mut server = Self { child, ready: String::new(), stderr: err_rx, collected: String::new() };
        match out_rx.recv_timeout(Duration::from_secs(30)) {
            Ok(line) => server.ready = line,
            Err(_) => {
                let _ = server.child.kill();
                panic!("nav sim-robot printed no ready line within 30 s; stderr:\n{}", server.stderr_so_far());
            }
        }
        server
    }

    /// The URL from the ready line (`listening on ws://…`).
    fn url(&self) -> String {
        let at = self.ready.find("listening on ws://").unwrap_or_else(|| panic!("ready line: {}", self.ready));
        self.ready[at + "listening on ".len()..].split_whitespace().next().unwrap().to_string()
    }

    fn stderr_so_far(&mut self) -> String {
        while let Ok(line) = self.stderr.try_recv() {
            self.collected.push_str(&line);
            self.collected.push('\n');
        }
        self.collected.clone()
    }

    /// `kill -TERM`, then waits (at most 20 s) for the exit: status and stderr.
    fn terminate(mut self) -> (ExitStatus, String) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success(), "kill -TERM {pid}");
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("nav sim-robot did not exit within 20 s of SIGTERM; stderr:\n{}", self.stderr_so_far());
            }
            thread::sleep(Duration::from_millis(50));
        };
        // the reader thread ends at EOF: take the last lines
        thread::sleep(Duration::from_millis(100));
        (status, self.stderr_so_far())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The number before `unit` after `label` in `text` (`travelled 0.87 m`).
fn number_after(text: &str, label: &str) -> Option<f64> {
    let at = text.rfind(label)?;
    text[at + label.len()..].split_whitespace().next()?.parse().ok()
}

/// Runs `nav ARGS` to the end (at most `secs`).
fn run(args: &[&str], secs: u64) -> Output {
    let mut child =
        nav().args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("nav runs");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_reader = thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(secs);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let err = String::from_utf8_lossy(&err_reader.join().unwrap()).into_owned();
            panic!("nav {args:?} did not exit within {secs} s; stderr:\n{err}");
        }
        thread::sleep(Duration::from_millis(50));
    };
    Output { status, stdout: out_reader.join().unwrap(), stderr: err_reader.join().unwrap() }
}

#[test]
fn nav_rosmaster_explores_the_simulated_robot_and_the_server_stops_on_sigterm() {
    let server = Server::start(&["--port", "0", "--arena", "exploration", "--seed", "0"]);
    let url = server.url();
    assert!(url.starts_with("ws://127.0.0.1:") && !url.ends_with(":0"), "{}", server.ready);
    assert!(server.ready.contains(&format!("nav rosmaster --url {url}")), "says what to run next: {}", server.ready);

    let o = run(&["rosmaster", "--url", &url, "--max-time", "8"], 90);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "nav rosmaster: stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("nav rosmaster: ended (time_limit)"), "summary:\n{out}");
    assert!(err.contains("connected; /scan 720 beams"), "stderr:\n{err}");
    let driven = number_after(&out, "travelled ").expect("the summary gives the distance");
    assert!(driven > 0.2, "the robot drove {driven} m by odometry:\n{out}");
    assert!(out.contains("collisions reported 0"), "summary:\n{out}");

    let (status, server_err) = server.terminate();
    assert_eq!(status.code(), Some(0), "nav sim-robot on SIGTERM: {status}; stderr:\n{server_err}");
    assert!(server_err.contains("connection(s) open"), "connections are reported:\n{server_err}");
    assert!(server_err.contains("SIGTERM: stopped"), "stderr:\n{server_err}");
    // the simulator's own account: the robot really moved
    let moved = number_after(&server_err, "the robot travelled ").expect("the final line gives the distance");
    assert!(moved > 0.2, "the simulated robot travelled {moved} m:\n{server_err}");
}

#[test]
fn with_nav2_nav_rosmaster_hands_its_goals_to_the_emulated_nav2() {
    let server = Server::start(&["--port", "0", "--nav2"]);
    assert!(server.ready.contains("with Nav2 emulation"), "{}", server.ready);
    let url = server.url();
    let o = run(&["rosmaster", "--url", &url, "--max-time", "8"], 90);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "nav rosmaster: stdout:\n{out}\nstderr:\n{err}");
    assert!(err.contains("Nav2 found"), "rosapi lists the emulated Nav2:\n{err}");
    assert!(err.contains("handed to Nav2"), "a navigation goal went to Nav2:\n{err}");
    let (status, server_err) = server.terminate();
    assert_eq!(status.code(), Some(0), "stderr:\n{server_err}");
    let moved = number_after(&server_err, "the robot travelled ").expect("the final line gives the distance");
    assert!(moved > 0.1, "the emulated Nav2 drove the robot {moved} m:\n{server_err}");
}

#[test]
fn a_non_loopback_bind_needs_allow_remote() {
    for bind in ["0.0.0.0", "192.0.2.1", "::"] {
        let o = run(&["sim-robot", "--bind", bind, "--port", "0"], 30);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(2), "--bind {bind}: stderr:\n{err}");
        assert!(err.contains("--allow-remote") && err.contains("not a loopback address"), "stderr:\n{err}");
        assert!(o.stdout.is_empty(), "nothing served: {}", String::from_utf8_lossy(&o.stdout));
    }
    // with the flag it serves, with a warning, and stops on SIGTERM
    let mut server = Server::start(&["--bind", "0.0.0.0", "--allow-remote", "--port", "0"]);
    assert!(server.url().starts_with("ws://0.0.0.0:"), "{}", server.ready);
    assert!(
        server.ready.contains("nav rosmaster --url ws://127.0.0.1:"),
        "a URL a local client can use: {}",
        server.ready
    );
    thread::sleep(Duration::from_millis(200));
    assert!(server.stderr_so_far().contains("warning: listening on 0.0.0.0:"), "{}", server.stderr_so_far());
    let (status, err) = server.terminate();
    assert_eq!(status.code(), Some(0), "stderr:\n{err}");
}

#[test]
fn a_port_in_use_and_bad_arguments_are_exit_2() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let o = run(&["sim-robot", "--port", &port], 30);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "stderr:\n{err}");
    assert!(err.contains(&format!("cannot listen on 127.0.0.1:{port}")), "names the address:\n{err}");
    assert!(err.to_lowercase().contains("in use"), "names the cause:\n{err}");

    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("arena.json");
    std::fs::write(&broken, "{\"name\": 3}").unwrap();
    let file = broken.to_str().unwrap();
    for (args, says) in [
        (vec!["--port", "0", "--arena", "no_such_arena"], "unknown arena"),
        (vec!["--port", "0", "--arena-file", file], "arena.json"),
        (vec!["--port", "0", "--arena", "simple", "--arena-file", file], "not both"),
        (vec!["--port", "0", "--bind", "robot.local"], "not an IP address"),
        (vec!["--port", "70000"], "70000"),
    ] {
        let o = run(&[&["sim-robot"][..], &args[..]].concat(), 30);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(2), "{args:?}: stderr:\n{err}");
        assert!(err.contains(says), "{args:?} names the problem ({says}):\n{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}
