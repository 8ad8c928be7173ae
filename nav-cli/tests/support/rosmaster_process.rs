//! A running `nav rosmaster` for the tests against the rosbridge test peer:
//! the real binary with a config file of the test's own, its stderr
//! collected line by line as it comes (so a test can wait for a line and
//! a timeout can show what was printed), its step log in the same
//! temporary folder.

use serde_json::Value;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};

/// A running `nav rosmaster`, its stderr collected as it comes.
pub struct Nav {
    child: Child,
    stderr: Arc<Mutex<String>>,
    dir: tempfile::TempDir,
}

impl Nav {
    /// `nav rosmaster --url URL --config (toml) ARGS...`
    pub fn start(url: &str, toml: &str, args: &[&str]) -> Self {
        Self::spawn(url, toml, args, false)
    }

    /// As [`Self::start`], with `--log DIR/run.jsonl` ([`Self::finish_logged`]
    /// reads its events).
    pub fn start_logged(url: &str, toml: &str, args: &[&str]) -> Self {
        Self::spawn(url, toml, args, true)
    }

    fn spawn(url: &str, toml: &str, args: &[&str], logged: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("nav.toml");
        std::fs::write(&config, toml).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_nav"));
        cmd.arg("rosmaster").args(["--url", url, "--config"]).arg(&config);
        if logged {
            cmd.arg("--log").arg(dir.path().join("run.jsonl"));
        }
        let mut child = cmd
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("nav starts");
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&stderr);
        let pipe = child.stderr.take().unwrap();
        tokio::spawn(async move {
            let mut lines = BufReader::new(pipe).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        Self { child, stderr, dir }
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// What it has printed on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits for the exit (at most `secs`): status, stdout and stderr.
    pub async fn finish(mut self, secs: f64) -> (ExitStatus, String, String) {
        let (status, out) = self.wait(secs).await;
        (status, out, self.stderr())
    }

    /// Waits for the exit (at most `secs`) of a [`Self::start_logged`] run:
    /// status, stderr and the step log's events.
    pub async fn finish_logged(mut self, secs: f64) -> (ExitStatus, String, Vec<Value>) {
        let (status, _) = self.wait(secs).await;
        let log = std::fs::read_to_string(self.dir.path().join("run.jsonl")).unwrap_or_default();
        let events = log
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .flat_map(|r| r["events"].as_array().cloned().unwrap_or_default())
            .collect();
        (status, self.stderr(), events)
    }

    /// Waits for the exit (at most `secs`, else panics showing stderr):
    /// status and stdout; then a moment for the last stderr lines.
    async fn wait(&mut self, secs: f64) -> (ExitStatus, String) {
        let status = tokio::time::timeout(Duration::from_secs_f64(secs), self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("nav did not exit within {secs} s; stderr:\n{}", self.stderr()))
            .unwrap();
        let mut out = String::new();
        if let Some(mut o) = self.child.stdout.take() {
            o.read_to_string(&mut out).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(100)).await; // the last stderr lines
        (status, out)
    }

    /// `kill -SIGNAL PID` (`INT`, `TERM`).
    pub fn signal(&self, signal: &str) {
        let pid = self.child.id().expect("running").to_string();
        let ok = std::process::Command::new("kill").arg(format!("-{signal}")).arg(&pid).status().unwrap().success();
        assert!(ok, "kill -{signal} {pid}");
    }
}
