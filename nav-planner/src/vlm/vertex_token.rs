//! Vertex AI bearer tokens: a fixed token (config or environment), or one
//! printed by a command such as `gcloud auth print-access-token`, run once
//! and reused for a configured lifetime.

use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use super::redact::{redact, truncate_chars};
use super::{CommandLine, Secret, VlmError};

/// Where Vertex tokens come from.
#[derive(Debug)]
pub(crate) enum TokenSource {
    /// A token from the config or the environment.
    Fixed(Secret),
    /// A command whose standard output is the token.
    Command {
        /// The command.
        command: CommandLine,
        /// How long a token is reused.
        lifetime: Duration,
        /// The current token and when it was issued.
        cached: Mutex<Option<(Secret, Instant)>>,
    },
}

impl TokenSource {
    /// A command source with an empty cache.
    pub(crate) fn command(command: CommandLine, lifetime: Duration) -> Self {
        TokenSource::Command { command, lifetime, cached: Mutex::new(None) }
    }

    /// The token, running the command if there is no fresh one. The command
    /// must finish within `budget`.
    pub(crate) async fn token(&self, budget: Duration) -> Result<Secret, VlmError> {
        match self {
            TokenSource::Fixed(token) => Ok(token.clone()),
            TokenSource::Command { command, lifetime, cached } => {
                let mut cached = cached.lock().await;
                if let Some((token, issued)) = cached.as_ref() {
                    if issued.elapsed() < *lifetime {
                        return Ok(token.clone());
                    }
                }
                let token = run(command, budget).await?;
                *cached = Some((token.clone(), Instant::now()));
                Ok(token)
            }
        }
    }

    /// Forgets a command-issued token (after the provider rejected it), so
    /// the next call runs the command again.
    pub(crate) async fn invalidate(&self) {
        if let TokenSource::Command { cached, .. } = self {
            *cached.lock().await = None;
        }
    }
}

async fn run(command: &CommandLine, budget: Duration) -> Result<Secret, VlmError> {
    let shown = command.to_string();
    let fail = |message: String| VlmError::TokenCommand { command: shown.clone(), message };
    let argv = command.argv();
    let Some((program, args)) = argv.split_first() else {
        return Err(fail("the command is empty".into()));
    };
    let output = match tokio::time::timeout(budget, bounded_output(program, args)).await {
        Err(_) => return Err(fail(format!("no token within {} ms", budget.as_millis()))),
        Ok(Err(e)) => return Err(fail(e)),
        Ok(Ok(output)) => output,
    };
    let stdout = String::from_utf8_lossy(&output.stdout).trim().to_string();
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let excerpt = truncate_chars(&redact(stderr.trim(), &[&stdout]), 300);
        return Err(fail(format!("{}: {excerpt}", output.status)));
    }
    if stdout.is_empty() || stdout.contains(char::is_whitespace) {
        return Err(fail("it did not print exactly one token on standard output".into()));
    }
    Ok(Secret::new(stdout))
}

/// The most a token command may print on each of its outputs (a token is
/// a few KiB at most).
const MAX_TOKEN_OUTPUT_BYTES: u64 = 64 << 10;

/// What a finished command printed, each output read up to
/// [`MAX_TOKEN_OUTPUT_BYTES`]: a command that prints more (`yes`, `cat
/// /dev/zero`) is killed and an error, never an allocation without bound.
async fn bounded_output(program: &str, args: &[String]) -> Result<std::process::Output, String> {
    use tokio::io::AsyncReadExt;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("could not run it: {e}"))?;
    type Pipe = Box<dyn tokio::io::AsyncRead + Unpin + Send>;
    let read = |pipe: Option<Pipe>| async move {
        let mut buf = Vec::new();
        if let Some(p) = pipe {
            p.take(MAX_TOKEN_OUTPUT_BYTES + 1).read_to_end(&mut buf).await.map_err(|e| e.to_string())?;
        }
        Ok::<_, String>(buf)
    };
    let mut out = tokio::spawn(read(child.stdout.take().map(|p| Box::new(p) as Pipe)));
    let mut err = tokio::spawn(read(child.stderr.take().map(|p| Box::new(p) as Pipe)));
    let joined =
        |r: Result<Result<Vec<u8>, String>, tokio::task::JoinError>| r.map_err(|e| e.to_string()).and_then(|r| r);
    let over = |b: &Result<Vec<u8>, String>| b.as_ref().is_ok_and(|b| b.len() as u64 > MAX_TOKEN_OUTPUT_BYTES);
    // whichever output goes over the cap first kills the command, which ends the other
    let (stdout, stderr) = tokio::select! {
        o = &mut out => {
            let o = joined(o);
            if over(&o) {
                let _ = child.kill().await;
            }
            (o, joined(err.await))
        }
        e = &mut err => {
            let e = joined(e);
            if over(&e) {
                let _ = child.kill().await;
            }
            (joined(out.await), e)
        }
    };
    let (stdout, stderr) = (stdout?, stderr?);
    if stdout.len() as u64 > MAX_TOKEN_OUTPUT_BYTES || stderr.len() as u64 > MAX_TOKEN_OUTPUT_BYTES {
        let _ = child.kill().await;
        return Err(format!(
            "it printed more than {} (a token is a single line)",
            nav_core::bounded::human_bytes(MAX_TOKEN_OUTPUT_BYTES)
        ));
    }
    let status = child.wait().await.map_err(|e| e.to_string())?;
    Ok(std::process::Output { status, stdout, stderr })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> CommandLine {
        CommandLine::Args(vec!["sh".into(), "-c".into(), script.into()])
    }

    #[tokio::test]
    async fn command_tokens_are_cached_until_invalidated() {
        let dir = std::env::temp_dir().join(format!("navkit-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("runs");
        let _ = std::fs::remove_file(&log);
        let source = TokenSource::command(
            sh(&format!("echo run >> {}; echo ya29.token-$(wc -l < {})", log.display(), log.display())),
            Duration::from_secs(60),
        );
        let t1 = source.token(Duration::from_secs(5)).await.unwrap();
        let t2 = source.token(Duration::from_secs(5)).await.unwrap();
        assert_eq!(t1, t2);
        assert_eq!(t1.expose(), "ya29.token-1");
        source.invalidate().await;
        assert_eq!(source.token(Duration::from_secs(5)).await.unwrap().expose(), "ya29.token-2");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn failures_are_named_and_redacted() {
        let failing = TokenSource::command(
            sh("t=ya29.sec''ret; echo $t; echo \"auth failed for $t\" >&2; exit 3"),
            Duration::from_secs(60),
        );
        let err = failing.token(Duration::from_secs(5)).await.unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("access token command `sh -c"), "{msg}");
        assert!(msg.contains("exit status: 3") && msg.contains("auth failed for [REDACTED]"), "{msg}");
        assert!(!msg.contains("secret"), "{msg}");

        let missing =
            TokenSource::command(CommandLine::Line("/nonexistent/gcloud auth".into()), Duration::from_secs(1));
        let msg = missing.token(Duration::from_secs(5)).await.unwrap_err().to_string();
        assert!(msg.contains("could not run it"), "{msg}");

        let silent = TokenSource::command(sh("true"), Duration::from_secs(1));
        let msg = silent.token(Duration::from_secs(5)).await.unwrap_err().to_string();
        assert!(msg.contains("did not print exactly one token"), "{msg}");
        // an endless printer is killed at the cap, in bounded memory
        for endless in ["yes", "yes >&2"] {
            let err = run(&sh(endless), Duration::from_secs(20)).await.unwrap_err().to_string();
            assert!(err.contains("printed more than 64 KiB"), "{endless}: {err}");
        }

        let slow = TokenSource::command(sh("sleep 5"), Duration::from_secs(1));
        let msg = slow.token(Duration::from_millis(100)).await.unwrap_err().to_string();
        assert!(msg.contains("no token within 100 ms"), "{msg}");
    }
}
