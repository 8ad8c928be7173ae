//! Byte transport to a bridge server: a child's stdin/stdout (with its
//! stderr collected) or a TCP stream; cancel-safe line reading.

use super::config::{BridgeCommand, BridgeConfig};
use crate::HalError;
use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

/// Reads `\n`-terminated lines. Cancel-safe: a partial line stays in the
/// reader's own buffer when the future is dropped (on a timeout), so the
/// next call continues where this one stopped.
pub(crate) struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    max: usize,
    /// Inside a line already reported too long: its rest is skipped up to
    /// its newline, never kept.
    skipping: bool,
}

/// Why no line could be read.
#[derive(Debug)]
pub(crate) enum LineError {
    /// The transport failed.
    Io(std::io::Error),
    /// A line exceeded the limit.
    TooLong(usize),
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub fn new(inner: R, max: usize) -> Self {
        Self { inner, buf: Vec::new(), max, skipping: false }
    }

    /// The next reply line: [`next_line`](Self::next_line) without a
    /// byte-order mark, a carriage return or surrounding spaces, blank
    /// lines skipped (a server that prints an empty line or a BOM before
    /// its first reply is still understood).
    pub async fn next_message(&mut self) -> Result<Option<Vec<u8>>, LineError> {
        loop {
            let Some(line) = self.next_line().await? else { return Ok(None) };
            let body = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&line).trim_ascii();
            if !body.is_empty() {
                return Ok(Some(if body.len() == line.len() { line } else { body.to_vec() }));
            }
        }
    }

    /// The next line without its newline; `None` at end of input (a
    /// trailing partial line is dropped). A line over the limit is
    /// [`LineError::TooLong`] once, and at most the limit of it is ever
    /// held: the next call skips its rest and reads the line after it (a
    /// child's stderr that never ends a line grew until the allocator
    /// aborted).
    pub async fn next_line(&mut self) -> Result<Option<Vec<u8>>, LineError> {
        loop {
            let avail = self.inner.fill_buf().await.map_err(LineError::Io)?;
            if avail.is_empty() {
                return Ok(None);
            }
            if self.skipping {
                match avail.iter().position(|&b| b == b'\n') {
                    Some(pos) => {
                        self.inner.consume(pos + 1);
                        self.skipping = false;
                    }
                    None => {
                        let n = avail.len();
                        self.inner.consume(n);
                    }
                }
                continue;
            }
            if let Some(pos) = avail.iter().position(|&b| b == b'\n') {
                self.buf.extend_from_slice(&avail[..pos]);
                self.inner.consume(pos + 1);
                if self.buf.len() > self.max {
                    let n = self.buf.len();
                    self.buf.clear();
                    return Err(LineError::TooLong(n));
                }
                return Ok(Some(std::mem::take(&mut self.buf)));
            }
            let n = avail.len();
            self.buf.extend_from_slice(avail);
            self.inner.consume(n);
            if self.buf.len() > self.max {
                let n = self.buf.len();
                self.buf = Vec::new();
                self.skipping = true;
                return Err(LineError::TooLong(n));
            }
        }
    }
}

/// The last lines a child wrote to stderr.
#[derive(Debug, Clone, Default)]
pub(crate) struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
}

impl StderrTail {
    fn push(&self, line: String, keep: usize) {
        if let Ok(mut q) = self.lines.lock() {
            q.push_back(line);
            while q.len() > keep {
                q.pop_front();
            }
        }
    }

    pub fn snapshot(&self) -> Vec<String> {
        self.lines.lock().map(|q| q.iter().cloned().collect()).unwrap_or_default()
    }
}

pub(crate) type BoxedRead = Box<dyn AsyncRead + Send + Unpin>;
pub(crate) type BoxedWrite = Box<dyn AsyncWrite + Send + Unpin>;

/// An open connection to a bridge server.
pub(crate) struct Transport {
    pub writer: Option<BoxedWrite>,
    pub reader: LineReader<BufReader<BoxedRead>>,
    pub child: Option<Child>,
    pub stderr: StderrTail,
    stderr_task: Option<JoinHandle<()>>,
    /// The command line or `tcp://addr`, for messages.
    pub endpoint: String,
}

impl Transport {
    /// Starts `command` with piped stdio. The child is killed if the
    /// transport is dropped without [`Transport::shutdown`].
    pub fn spawn(command: &BridgeCommand, config: &BridgeConfig) -> Result<Self, HalError> {
        let mut cmd = Command::new(&command.program);
        cmd.args(&command.args)
            .envs(command.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(dir) = &command.current_dir {
            cmd.current_dir(dir);
        }
        let mut child =
            cmd.spawn().map_err(|source| HalError::Io { path: std::path::PathBuf::from(&command.program), source })?;
        let endpoint = command.display();
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(HalError::Disconnected { endpoint, reason: "the child's pipes were not created".into() });
        };
        let tail = StderrTail::default();
        let keep = config.stderr_lines.max(1);
        let echo = config.echo_stderr;
        let task_tail = tail.clone();
        let stderr_task = tokio::spawn(async move {
            let mut lines = LineReader::new(BufReader::new(stderr), 64 << 10);
            loop {
                match lines.next_line().await {
                    Ok(Some(line)) => {
                        let text = String::from_utf8_lossy(&line).into_owned();
                        if echo {
                            eprintln!("{text}");
                        }
                        task_tail.push(text, keep);
                    }
                    Ok(None) | Err(LineError::Io(_)) => break,
                    Err(LineError::TooLong(_)) => task_tail.push("[stderr line too long, dropped]".into(), keep),
                }
            }
        });
        let reader: BoxedRead = Box::new(stdout);
        Ok(Self {
            writer: Some(Box::new(stdin)),
            reader: LineReader::new(BufReader::with_capacity(1 << 20, reader), config.max_reply_bytes),
            child: Some(child),
            stderr: tail,
            stderr_task: Some(stderr_task),
            endpoint,
        })
    }

    /// Connects to a server listening at `addr` (`HOST:PORT`).
    pub async fn connect(addr: &str, config: &BridgeConfig) -> Result<Self, HalError> {
        let endpoint = format!("tcp://{addr}");
        let connect = tokio::net::TcpStream::connect(addr);
        let stream = tokio::time::timeout(secs(config.hello_timeout_s), connect)
            .await
            .map_err(|_| HalError::Timeout {
                what: format!("connecting to {endpoint}"),
                after_s: config.hello_timeout_s,
            })?
            .map_err(|e| HalError::Disconnected {
                endpoint: endpoint.clone(),
                reason: format!("cannot connect: {e}"),
            })?;
        let _ = stream.set_nodelay(true);
        let (read, write) = stream.into_split();
        let reader: BoxedRead = Box::new(read);
        Ok(Self {
            writer: Some(Box::new(write)),
            reader: LineReader::new(BufReader::with_capacity(1 << 20, reader), config.max_reply_bytes),
            child: None,
            stderr: StderrTail::default(),
            stderr_task: None,
            endpoint,
        })
    }

    /// Writes one request line.
    pub async fn send(&mut self, line: &[u8]) -> std::io::Result<()> {
        let Some(w) = self.writer.as_mut() else {
            return Err(std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the connection is closed"));
        };
        w.write_all(line).await?;
        w.flush().await
    }

    /// The child's process id while it runs.
    pub fn child_id(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    /// Explains why the server went away: the child's exit status (waiting
    /// up to `wait` for it, killing it if it is still running) and its last
    /// stderr lines.
    pub async fn post_mortem(&mut self, wait: Duration) -> String {
        self.writer = None;
        let mut reason = match self.child.as_mut() {
            None => "the server closed the connection".to_string(),
            Some(child) => match tokio::time::timeout(wait, child.wait()).await {
                Ok(Ok(status)) => format!("the bridge process exited with {status}"),
                Ok(Err(e)) => format!("the bridge process could not be waited for: {e}"),
                Err(_) => {
                    let _ = child.kill().await;
                    "the bridge process closed its stdout but kept running; it was killed".to_string()
                }
            },
        };
        if let Some(task) = self.stderr_task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(1), task).await;
        }
        let tail = self.stderr.snapshot();
        if !tail.is_empty() {
            reason.push_str("; last stderr lines:\n  ");
            reason.push_str(&tail.join("\n  "));
        }
        reason
    }

    /// Closes our end and waits up to `wait` for the child to exit, then
    /// kills it. Returns the exit status text when there was a child.
    pub async fn shutdown(&mut self, wait: Duration) -> Option<String> {
        if let Some(mut w) = self.writer.take() {
            let _ = w.shutdown().await;
        }
        let child = self.child.as_mut()?;
        let status = match tokio::time::timeout(wait, child.wait()).await {
            Ok(Ok(status)) => status.to_string(),
            _ => {
                let _ = child.kill().await;
                match child.wait().await {
                    Ok(status) => format!("{status} (killed after {:.1} s)", wait.as_secs_f64()),
                    Err(e) => format!("killed; wait failed: {e}"),
                }
            }
        };
        if let Some(task) = self.stderr_task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(1), task).await;
        }
        self.child = None;
        Some(status)
    }
}

/// Seconds as a duration (config values are validated finite and
/// positive).
pub(crate) fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.clamp(0.0, 86_400.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_survive_cancellation_and_limits() {
        let (mut tx, rx) = tokio::io::duplex(64);
        let mut r = LineReader::new(BufReader::new(rx), 16);
        tx.write_all(b"abc").await.unwrap();
        // No newline yet: time out, keeping the partial line.
        assert!(tokio::time::timeout(Duration::from_millis(20), r.next_line()).await.is_err());
        tx.write_all(b"def\nxyz\n").await.unwrap();
        assert_eq!(r.next_line().await.unwrap().unwrap(), b"abcdef");
        assert_eq!(r.next_line().await.unwrap().unwrap(), b"xyz");
        tx.write_all(b"0123456789abcdefghij\n").await.unwrap();
        assert!(matches!(r.next_line().await, Err(LineError::TooLong(_))));
        drop(tx);
        assert!(r.next_line().await.unwrap().is_none());
    }

    /// An endless line (a child's stderr without a newline) is reported too
    /// long once and skipped without being kept; the line after it is read.
    #[tokio::test]
    async fn an_endless_line_is_skipped_in_bounded_memory() {
        use tokio::io::AsyncReadExt as _;
        let endless = tokio::io::repeat(b'x').take(64 << 20).chain(&b"\nok\n"[..]);
        let mut r = LineReader::new(BufReader::new(endless), 1 << 16);
        assert!(matches!(r.next_line().await, Err(LineError::TooLong(_))));
        assert!(r.buf.capacity() <= 1 << 18, "{} bytes kept", r.buf.capacity());
        assert_eq!(r.next_line().await.unwrap().unwrap(), b"ok");
        assert!(r.buf.capacity() <= 1 << 18, "{} bytes kept", r.buf.capacity());
        assert!(r.next_line().await.unwrap().is_none());
    }

    /// Blank lines, a byte-order mark and CRLF endings before or around a
    /// reply are not part of it.
    #[tokio::test]
    async fn messages_skip_blank_lines_and_a_bom() {
        let input: &[u8] = b"\n  \r\n\xEF\xBB\xBF{\"id\":1}\r\n\n{\"id\":2}\n";
        let mut r = LineReader::new(BufReader::new(input), 64);
        assert_eq!(r.next_message().await.unwrap().unwrap(), br#"{"id":1}"#);
        assert_eq!(r.next_message().await.unwrap().unwrap(), br#"{"id":2}"#);
        assert!(r.next_message().await.unwrap().is_none());
    }
}
