//! Where the bridge server runs and how long to wait for it.

use crate::HalError;
use crate::depth_scan::DepthScanConfig;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// How RGB images travel on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RgbEncoding {
    /// PNG, base64: about a third of the bytes, but encoding a 320×240
    /// frame costs the Python server 5–10 ms. For slow TCP links.
    Png,
    /// Raw RGB bytes, base64: no codec work. The default (a local pipe
    /// moves the extra bytes in well under a millisecond).
    #[default]
    Raw,
    /// No RGB at all (the HAL then reports no camera).
    None,
}

impl RgbEncoding {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            RgbEncoding::Png => "png",
            RgbEncoding::Raw => "raw",
            RgbEncoding::None => "none",
        }
    }
}

/// Settings of a [`BridgeHal`](super::BridgeHal): per-request timeouts and
/// what each observation carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BridgeConfig {
    /// Handshake timeout, seconds (includes the server importing its
    /// simulator, which for MiniWorld or Habitat takes a few seconds).
    pub hello_timeout_s: f64,
    /// `reset` timeout, seconds: the first reset loads the scene and
    /// compiles shaders, which can take minutes for Habitat.
    pub reset_timeout_s: f64,
    /// `step` timeout, seconds.
    pub step_timeout_s: f64,
    /// `panorama` timeout, seconds.
    pub panorama_timeout_s: f64,
    /// How long [`close`](super::BridgeHal::close) waits for the child to
    /// exit before killing it, seconds.
    pub close_timeout_s: f64,
    /// Encoding of RGB images.
    pub rgb: RgbEncoding,
    /// Ask for depth images (float32 metres).
    pub depth: bool,
    /// Ask for the simulator's ground-truth pose. Off by default: the
    /// ObjectNav loop navigates by action-based dead reckoning.
    pub ground_truth_pose: bool,
    /// Ask for ground-truth detections of the objects in view.
    pub detections: bool,
    /// How many of the child's last stderr lines to keep for error reports.
    pub stderr_lines: usize,
    /// Also copy the child's stderr to this process's stderr.
    pub echo_stderr: bool,
    /// Longest reply line accepted, bytes (a 12-view raw panorama at
    /// 640×480 is about 15 MB).
    pub max_reply_bytes: usize,
    /// How depth images become the planar scans `Sensors::scan` returns
    /// (with `depth` on). The camera height defaults to the backend's.
    pub depth_scan: DepthScanConfig,
    /// Report blocked forward steps in `Sensors::scan` as contacts (a
    /// bumper): an obstacle point three quarters of a step beyond the
    /// agent's body straight ahead of where the step was blocked, kept
    /// while within 3 m. The camera cannot see low objects close by, and
    /// without this the robot would push against them.
    pub bumper: bool,
    /// Remember every obstacle point depth showed this episode (in the
    /// pose estimate's frame) and add those within 3 m to `Sensors::scan`:
    /// the camera loses a low object once the robot is 1–2 m from it (it
    /// drops below the image) and sees nothing beside the robot, so a scan
    /// from the current image alone lets the robot drive into both.
    pub remember_obstacles: bool,
}

impl Default for BridgeConfig {
    fn default() -> Self {
        Self {
            hello_timeout_s: 60.0,
            reset_timeout_s: 300.0,
            step_timeout_s: 30.0,
            panorama_timeout_s: 120.0,
            close_timeout_s: 5.0,
            rgb: RgbEncoding::Raw,
            depth: false,
            ground_truth_pose: false,
            detections: true,
            stderr_lines: 20,
            echo_stderr: false,
            max_reply_bytes: 256 << 20,
            depth_scan: DepthScanConfig::default(),
            bumper: true,
            remember_obstacles: true,
        }
    }
}

impl BridgeConfig {
    /// Checks that every timeout is finite and positive and the limits are
    /// usable.
    pub fn validate(&self) -> Result<(), HalError> {
        for (field, v) in [
            ("hello_timeout_s", self.hello_timeout_s),
            ("reset_timeout_s", self.reset_timeout_s),
            ("step_timeout_s", self.step_timeout_s),
            ("panorama_timeout_s", self.panorama_timeout_s),
            ("close_timeout_s", self.close_timeout_s),
        ] {
            if !(v.is_finite() && v > 0.0 && v <= 86_400.0) {
                return Err(invalid(field, format!("must be within (0, 86400] seconds, got {v}")));
            }
        }
        if self.max_reply_bytes < 1024 {
            return Err(invalid("max_reply_bytes", format!("must be at least 1024, got {}", self.max_reply_bytes)));
        }
        self.depth_scan.validate().map_err(|e| match e {
            HalError::InvalidConfig { field, message } => invalid(&field, message),
            other => other,
        })
    }
}

fn invalid(field: &str, message: String) -> HalError {
    HalError::InvalidConfig { field: format!("bridge.{field}"), message }
}

/// A bridge server to start as a child process.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BridgeCommand {
    /// The program, e.g. `.venv/bin/python`.
    pub program: String,
    /// Its arguments, e.g. `["-m", "navkit_bridge", "--backend", "miniworld"]`.
    pub args: Vec<String>,
    /// Extra environment variables (e.g. `PYTHONPATH`).
    pub env: Vec<(String, String)>,
    /// Working directory, if not the current one.
    pub current_dir: Option<PathBuf>,
}

impl BridgeCommand {
    /// A command running `program` with no arguments.
    pub fn new(program: impl Into<String>) -> Self {
        Self { program: program.into(), ..Self::default() }
    }

    /// Adds one argument.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds several arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the child.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Sets the child's working directory.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.current_dir = Some(dir.into());
        self
    }

    /// Parses a shell-like command line (see [`split_command_line`]).
    pub fn parse(command_line: &str) -> Result<Self, HalError> {
        let mut words = split_command_line(command_line)?.into_iter();
        let program = words.next().ok_or_else(|| invalid("command", "the command line is empty".to_string()))?;
        Ok(Self { program, args: words.collect(), ..Self::default() })
    }

    /// The command line as a person would type it (for messages).
    pub fn display(&self) -> String {
        std::iter::once(&self.program).chain(&self.args).map(|w| quote(w)).collect::<Vec<_>>().join(" ")
    }
}

fn quote(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c)) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Splits a command line into words the way a POSIX shell would for the
/// simple cases: whitespace separates words, `'…'` is literal, `"…"`
/// allows `\"` and `\\`, and a backslash outside quotes escapes the next
/// character. No variables, globs or redirections. An unterminated quote
/// or a trailing backslash is an error.
pub fn split_command_line(line: &str) -> Result<Vec<String>, HalError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(invalid("command", "unterminated ' quote".to_string())),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(invalid("command", "unterminated \" quote".to_string())),
                        },
                        Some(c) => word.push(c),
                        None => return Err(invalid("command", "unterminated \" quote".to_string())),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err(invalid("command", "trailing backslash".to_string())),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// A bridge server: a command to spawn or a TCP address to attach to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BridgeEndpoint {
    /// Start this command and talk over its stdin/stdout.
    Command(BridgeCommand),
    /// Connect to a server already listening here (`HOST:PORT`).
    Tcp(String),
}

impl BridgeEndpoint {
    /// Reads what a user typed after `--bridge`: `tcp://HOST:PORT`, or a
    /// bare `HOST:PORT` / `[IPv6]:PORT` socket address, is an address;
    /// anything else is a command line.
    pub fn parse(text: &str) -> Result<Self, HalError> {
        let t = text.trim();
        if let Some(addr) = t.strip_prefix("tcp://") {
            if addr.rsplit_once(':').is_none_or(|(h, p)| h.is_empty() || p.parse::<u16>().is_err()) {
                return Err(invalid("endpoint", format!("tcp:// wants HOST:PORT, got {addr:?}")));
            }
            return Ok(BridgeEndpoint::Tcp(addr.to_string()));
        }
        if t.parse::<std::net::SocketAddr>().is_ok() {
            return Ok(BridgeEndpoint::Tcp(t.to_string()));
        }
        Ok(BridgeEndpoint::Command(BridgeCommand::parse(t)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn splits_like_a_shell() {
        let w = split_command_line(r#".venv/bin/python -m navkit_bridge --config 'a b.yaml' --x "q\"t" c\ d"#).unwrap();
        assert_eq!(w, [".venv/bin/python", "-m", "navkit_bridge", "--config", "a b.yaml", "--x", "q\"t", "c d"]);
        assert_eq!(split_command_line("  ").unwrap(), Vec::<String>::new());
        assert_eq!(split_command_line("a '' b").unwrap(), ["a", "", "b"]);
        for bad in ["a 'b", "a \"b", "a\\"] {
            let e = split_command_line(bad).unwrap_err();
            assert!(e.is_bad_input(), "{bad}: {e}");
        }
    }

    #[test]
    fn endpoints() {
        assert_eq!(BridgeEndpoint::parse("127.0.0.1:7450").unwrap(), BridgeEndpoint::Tcp("127.0.0.1:7450".into()));
        assert_eq!(BridgeEndpoint::parse("tcp://localhost:9").unwrap(), BridgeEndpoint::Tcp("localhost:9".into()));
        assert!(BridgeEndpoint::parse("tcp://localhost").is_err());
        match BridgeEndpoint::parse("python3 -m navkit_bridge --backend openroom").unwrap() {
            BridgeEndpoint::Command(c) => {
                assert_eq!(c.program, "python3");
                assert_eq!(c.args.len(), 4);
                assert_eq!(c.display(), "python3 -m navkit_bridge --backend openroom");
            }
            other => panic!("{other:?}"),
        }
        assert!(BridgeEndpoint::parse("").is_err());
    }

    #[test]
    fn config_defaults_and_validation() {
        let c: BridgeConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(c, BridgeConfig::default());
        assert!(!c.ground_truth_pose && c.detections && c.rgb == RgbEncoding::Raw);
        c.validate().unwrap();
        let bad = BridgeConfig { step_timeout_s: f64::NAN, ..BridgeConfig::default() };
        assert!(bad.validate().unwrap_err().to_string().contains("bridge.step_timeout_s"));
        assert!(serde_json::from_str::<BridgeConfig>(r#"{"step_timeout": 1}"#).is_err());
    }

    proptest! {
        #[test]
        fn quoted_display_splits_back(words in proptest::collection::vec("[ -~]{0,12}", 1..6)) {
            let cmd = BridgeCommand { program: words[0].clone(), args: words[1..].to_vec(), ..BridgeCommand::default() };
            let back = split_command_line(&cmd.display()).unwrap();
            prop_assert_eq!(back, words);
        }

        #[test]
        fn splitting_never_panics(line in "\\PC{0,40}") {
            let _ = split_command_line(&line);
        }
    }
}
