//! [`BackendConfig`]: which provider, model, endpoint, credentials, timeouts,
//! retries and prices; and [`build_backend`], the factory.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ModelPrice, PriceTable, Secret, VisionLanguageModel, VlmError};

/// The model providers navkit speaks to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// OpenAI Chat Completions, and every server that speaks it (OpenRouter,
    /// Ollama, vLLM, llama.cpp server) through `base_url`.
    #[serde(rename = "openai")]
    OpenAi,
    /// Google AI (Gemini API) with an API key. The default: the ObjectNav
    /// planner's reference model is `gemini-2.5-flash-lite`.
    #[default]
    Gemini,
    /// Google Cloud Vertex AI with a bearer token (a model or an endpoint).
    Vertex,
    /// Anthropic Messages.
    Anthropic,
}

impl Provider {
    /// All providers.
    pub const ALL: [Provider; 4] = [Provider::OpenAi, Provider::Gemini, Provider::Vertex, Provider::Anthropic];

    /// The config / command-line name.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Gemini => "gemini",
            Provider::Vertex => "vertex",
            Provider::Anthropic => "anthropic",
        }
    }

    /// The model used when the config names none.
    pub fn default_model(self) -> &'static str {
        match self {
            Provider::OpenAi => "gpt-4o-mini",
            Provider::Gemini | Provider::Vertex => "gemini-2.5-flash-lite",
            Provider::Anthropic => "claude-haiku-4-5",
        }
    }

    /// The cargo feature of nav-planner that compiles this provider's backend.
    pub fn feature(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Gemini | Provider::Vertex => "gemini",
            Provider::Anthropic => "anthropic",
        }
    }

    /// The environment variables consulted for the credential, in order.
    pub fn credential_env_vars(self) -> &'static [&'static str] {
        match self {
            Provider::OpenAi => &["OPENAI_API_KEY"],
            Provider::Gemini => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
            Provider::Vertex => &["VERTEX_ACCESS_TOKEN", "GOOGLE_OAUTH_ACCESS_TOKEN"],
            Provider::Anthropic => &["ANTHROPIC_API_KEY"],
        }
    }
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Provider {
    type Err = VlmError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Provider::ALL.into_iter().find(|p| p.as_str().eq_ignore_ascii_case(s.trim())).ok_or_else(|| VlmError::Config {
            message: format!("unknown VLM provider `{s}` (expected openai, gemini, vertex or anthropic)"),
        })
    }
}

/// A command line: one string split on whitespace (no shell quoting), or an
/// explicit argument list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CommandLine {
    /// `"gcloud auth print-access-token"`.
    Line(String),
    /// `["gcloud", "auth", "print-access-token"]`.
    Args(Vec<String>),
}

impl CommandLine {
    /// The program and its arguments.
    pub fn argv(&self) -> Vec<String> {
        match self {
            CommandLine::Line(s) => s.split_whitespace().map(str::to_string).collect(),
            CommandLine::Args(v) => v.clone(),
        }
    }
}

impl std::fmt::Display for CommandLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.argv().join(" "))
    }
}

/// Vertex AI addressing and credentials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VertexConfig {
    /// Google Cloud project id; else `GOOGLE_CLOUD_PROJECT` from the
    /// environment.
    pub project: Option<String>,
    /// Region, e.g. `us-central1`, or `global`; else `GOOGLE_CLOUD_LOCATION`,
    /// else `us-central1`.
    pub location: Option<String>,
    /// A deployed endpoint id; when set, requests go to the endpoint instead
    /// of the publisher model named by `model`.
    pub endpoint_id: Option<String>,
    /// A command printing an access token, e.g. `gcloud auth
    /// print-access-token`; used when no token is configured or in the
    /// environment. Run once and cached for `token_lifetime_s`.
    pub token_command: Option<CommandLine>,
    /// How long a command-issued token is reused (gcloud tokens live an hour).
    pub token_lifetime_s: f64,
}

impl Default for VertexConfig {
    fn default() -> Self {
        Self { project: None, location: None, endpoint_id: None, token_command: None, token_lifetime_s: 3000.0 }
    }
}

/// The default cap on a reply body: 4 MiB (a navigation reply is a few KB).
pub const DEFAULT_MAX_REPLY_BYTES: usize = 4 << 20;

/// The most `extra_headers` a backend config may set.
pub const MAX_EXTRA_HEADERS: usize = 64;

/// The longest extra header, name and value together, in bytes.
pub const MAX_EXTRA_HEADER_BYTES: usize = 8 << 10;

/// The `anthropic-version` header navkit sends by default: the one the
/// official Python SDK (anthropic 2.10) sends.
pub const ANTHROPIC_VERSION: &str = "2026-10-21";

/// Anthropic-specific settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AnthropicConfig {
    /// The `anthropic-version` header (default [`ANTHROPIC_VERSION`], the
    /// official SDK's; that version has no sampling parameters).
    pub version: String,
    /// Send the request's `temperature`. Off by default: the current API
    /// version removed `temperature`/`top_p`/`top_k`, and Claude Opus 4.7,
    /// Sonnet 5 and later reject them on any version. Turn it on only for
    /// an older model together with an older `version` (`2023-06-01`).
    pub sampling: bool,
    /// Send `strict` on tools (with the structured-outputs beta header);
    /// off by default because older API versions reject the field.
    pub strict_tools: bool,
    /// The beta flag sent with strict tools.
    pub strict_tools_beta: String,
}

impl Default for AnthropicConfig {
    fn default() -> Self {
        Self {
            version: ANTHROPIC_VERSION.into(),
            sampling: false,
            strict_tools: false,
            strict_tools_beta: "structured-outputs-2025-11-13".into(),
        }
    }
}

/// Everything needed to build a backend. Load it from TOML (`[vlm]`) or
/// build it with the chained setters.
///
/// ```
/// use std::time::Duration;
/// use nav_planner::vlm::{BackendConfig, Provider};
///
/// let cfg = BackendConfig::new(Provider::OpenAi)
///     .with_model("llava:7b")
///     .with_base_url("http://localhost:11434/v1")
///     .with_timeout(Duration::from_secs(20));
/// assert_eq!(cfg.model_id(), "llava:7b");
/// cfg.validate()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BackendConfig {
    /// The provider.
    pub provider: Provider,
    /// Model id; `None` = [`Provider::default_model`].
    pub model: Option<String>,
    /// API base URL; `None` = the provider's public endpoint. For OpenAI-
    /// compatible servers include the `/v1` (`http://localhost:11434/v1`).
    pub base_url: Option<String>,
    /// The API key (Vertex: the bearer token). Prefer the environment.
    /// Printed and serialized as `[REDACTED]`.
    pub api_key: Option<Secret>,
    /// An extra environment variable to read the key from, tried first
    /// (e.g. `OPENROUTER_API_KEY`).
    pub api_key_env: Option<String>,
    /// Deadline of one call, retries included, in seconds; a request's own
    /// `timeout` overrides it.
    pub timeout_s: f64,
    /// Deadline of one HTTP attempt, so a hung attempt can be retried
    /// within the call's deadline; `None` = the rest of the call's deadline.
    pub attempt_timeout_s: Option<f64>,
    /// TCP/TLS connect timeout in seconds (connect failures are retried).
    pub connect_timeout_s: f64,
    /// HTTP attempts per call, the first included (1 = no retries).
    pub max_attempts: u32,
    /// First back-off delay in seconds; how later ones grow is
    /// `retry_backoff`.
    pub retry_base_delay_s: f64,
    /// How the back-off grows per retry: `exponential` (default: doubles,
    /// with jitter) or `linear` (`n` × the base before retry `n`, no jitter).
    pub retry_backoff: RetryBackoff,
    /// Cap on any retry delay, a 429's `Retry-After` included.
    pub max_retry_delay_s: f64,
    /// Default output token limit when a request sets none (Anthropic
    /// requires one: 1024 when unset).
    pub max_tokens: Option<u32>,
    /// The largest reply body accepted, bytes (default 4 MiB); a larger
    /// one is an invalid response, never read into memory whole.
    pub max_reply_bytes: usize,
    /// Price overrides and additions ($ per 1M tokens) on top of the
    /// built-in table.
    pub prices: BTreeMap<String, ModelPrice>,
    /// Extra HTTP headers sent with every request (e.g. OpenRouter's
    /// `HTTP-Referer` / `X-Title`).
    pub extra_headers: BTreeMap<String, String>,
    /// Vertex AI settings.
    pub vertex: VertexConfig,
    /// Anthropic settings.
    pub anthropic: AnthropicConfig,
}

impl Default for BackendConfig {
    fn default() -> Self {
        Self {
            provider: Provider::default(),
            model: None,
            base_url: None,
            api_key: None,
            api_key_env: None,
            timeout_s: 8.0,
            attempt_timeout_s: None,
            connect_timeout_s: 3.0,
            max_attempts: 3,
            retry_base_delay_s: 0.25,
            retry_backoff: RetryBackoff::Exponential,
            max_retry_delay_s: 5.0,
            max_tokens: None,
            max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
            prices: BTreeMap::new(),
            extra_headers: BTreeMap::new(),
            vertex: VertexConfig::default(),
            anthropic: AnthropicConfig::default(),
        }
    }
}

/// How the wait before a retry grows ([`BackendConfig::retry_backoff`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryBackoff {
    /// `base · 2^(n−1)` before retry `n`, capped, with "equal jitter" (a
    /// uniformly random wait between half and all of it). The default.
    #[default]
    Exponential,
    /// `base · n` before retry `n`, capped, without jitter: with a 1 s base,
    /// 1 s before the first retry, 2 s before the second (the LLMos
    /// adapter's `1000 · (attempt + 1)` ms).
    Linear,
}

/// Timeouts and retry rules of the HTTP backends, from [`BackendConfig`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Default deadline of a whole call.
    pub timeout: Duration,
    /// Deadline of one attempt (`None` = the rest of the call's deadline).
    pub attempt_timeout: Option<Duration>,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Attempts per call, the first included.
    pub max_attempts: u32,
    /// First back-off delay.
    pub base_delay: Duration,
    /// How the delay grows per retry.
    pub backoff: RetryBackoff,
    /// Cap on every retry delay.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        BackendConfig::default().retry_policy()
    }
}

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or(Duration::ZERO)
}

impl BackendConfig {
    /// The defaults for a provider.
    pub fn new(provider: Provider) -> Self {
        Self { provider, ..Self::default() }
    }

    /// Sets the model id.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets the base URL.
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// Sets the API key (or Vertex token).
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(Secret::new(key));
        self
    }

    /// Sets the per-call deadline.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout_s = timeout.as_secs_f64();
        self
    }

    /// Sets the attempts per call.
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts;
        self
    }

    /// The model id in effect.
    pub fn model_id(&self) -> &str {
        self.model.as_deref().filter(|m| !m.trim().is_empty()).unwrap_or(self.provider.default_model())
    }

    /// The built-in price table with this config's overrides.
    pub fn price_table(&self) -> PriceTable {
        PriceTable::builtin().merged(&self.prices)
    }

    /// The retry policy in effect.
    pub fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy {
            timeout: secs(self.timeout_s),
            attempt_timeout: self.attempt_timeout_s.map(secs),
            connect_timeout: secs(self.connect_timeout_s),
            max_attempts: self.max_attempts,
            base_delay: secs(self.retry_base_delay_s),
            backoff: self.retry_backoff,
            max_delay: secs(self.max_retry_delay_s),
        }
    }

    /// Checks every field, naming the first bad one.
    pub fn validate(&self) -> Result<(), VlmError> {
        let bad = |message: String| Err(VlmError::Config { message });
        let positive = |v: f64| v.is_finite() && v > 0.0 && v < 1e9;
        let non_negative = |v: f64| v.is_finite() && (0.0..1e9).contains(&v);
        if !positive(self.timeout_s) {
            return bad(format!("vlm.timeout_s must be a positive number of seconds, got {}", self.timeout_s));
        }
        if let Some(t) = self.attempt_timeout_s.filter(|t| !positive(*t)) {
            return bad(format!("vlm.attempt_timeout_s must be a positive number of seconds, got {t}"));
        }
        if !positive(self.connect_timeout_s) {
            return bad(format!("vlm.connect_timeout_s must be positive, got {}", self.connect_timeout_s));
        }
        if !(1..=10).contains(&self.max_attempts) {
            return bad(format!("vlm.max_attempts must be between 1 and 10, got {}", self.max_attempts));
        }
        if !non_negative(self.retry_base_delay_s) || !non_negative(self.max_retry_delay_s) {
            return bad("vlm.retry_base_delay_s and vlm.max_retry_delay_s must be non-negative seconds".into());
        }
        if self.max_tokens == Some(0) {
            return bad("vlm.max_tokens must be positive".into());
        }
        if !(1024..=(1 << 30)).contains(&self.max_reply_bytes) {
            return bad(format!(
                "vlm.max_reply_bytes must be between 1024 and 1073741824, got {}",
                self.max_reply_bytes
            ));
        }
        if let Some(url) = &self.base_url {
            let rest = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://"));
            if rest.is_none_or(|r| r.is_empty() || r.starts_with('/')) {
                return bad(format!("vlm.base_url `{url}` must be an http:// or https:// URL"));
            }
        }
        if let Some(model) = &self.model {
            if model.trim().is_empty() || model.contains(char::is_whitespace) {
                return bad(format!("vlm.model `{model}` must be a non-empty id without spaces"));
            }
        }
        if let Err(message) = self.price_table().validate() {
            return bad(format!("vlm.prices: {message}"));
        }
        // http's header map panics past 32,768 entries; no server takes more than a few dozen
        if self.extra_headers.len() > MAX_EXTRA_HEADERS {
            return bad(format!(
                "vlm.extra_headers: {} headers, at most {MAX_EXTRA_HEADERS}",
                self.extra_headers.len()
            ));
        }
        if let Some((name, _)) = self.extra_headers.iter().find(|(n, v)| n.len() + v.len() > MAX_EXTRA_HEADER_BYTES) {
            let name: String = name.chars().take(40).collect();
            return bad(format!("vlm.extra_headers: `{name}` is longer than {MAX_EXTRA_HEADER_BYTES} bytes"));
        }
        for (name, value) in &self.extra_headers {
            let name_ok = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b));
            if !name_ok || value.bytes().any(|b| b < 0x20 || b == 0x7f) {
                return bad(format!("vlm.extra_headers: `{name}` is not a valid HTTP header"));
            }
        }
        if !positive(self.vertex.token_lifetime_s) {
            return bad("vlm.vertex.token_lifetime_s must be positive".into());
        }
        if self.vertex.token_command.as_ref().is_some_and(|c| c.argv().is_empty()) {
            return bad("vlm.vertex.token_command is empty".into());
        }
        Ok(())
    }

    /// The credential: config `api_key`, then `api_key_env`, then the
    /// provider's variables (`env` looks a variable up). Empty values count
    /// as unset.
    pub fn resolve_key(&self, env: &dyn Fn(&str) -> Option<String>) -> Option<Secret> {
        self.resolve_key_with_source(env).map(|(_, key)| key)
    }

    /// [`BackendConfig::resolve_key`] with where the key came from:
    /// `` `api_key` `` or the variable's name.
    fn resolve_key_with_source(&self, env: &dyn Fn(&str) -> Option<String>) -> Option<(String, Secret)> {
        if let Some(key) = self.api_key.as_ref().filter(|k| !k.is_empty()) {
            return Some(("`api_key`".to_string(), key.clone()));
        }
        self.key_env_vars().into_iter().find_map(|var| {
            let value = env(&var).map(|v| v.trim().to_string()).filter(|v| !v.is_empty())?;
            Some((var, Secret::new(value)))
        })
    }

    /// A credential an HTTP header cannot carry (a line break inside it, a
    /// control character, non-ASCII) is an error naming where it came from,
    /// before any call: otherwise every call of the run fails the same way
    /// and the run goes on with fallbacks. The value is never shown.
    pub fn check_key(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<(), VlmError> {
        match self.resolve_key_with_source(env) {
            Some((source, key)) if key.expose().bytes().any(|b| !(b == b'\t' || (0x20..0x7f).contains(&b))) => {
                Err(VlmError::Config {
                    message: format!(
                        "the credential from {source} holds a character an HTTP header cannot carry (a line break, \
                         a control character or a non-ASCII letter); check the value (it is not shown)"
                    ),
                })
            }
            _ => Ok(()),
        }
    }

    /// The environment variables [`BackendConfig::resolve_key`] consults, in
    /// order (OpenRouter's `OPENROUTER_API_KEY` too when `base_url` points
    /// there).
    pub fn key_env_vars(&self) -> Vec<String> {
        let mut vars: Vec<String> = self.api_key_env.iter().cloned().collect();
        if self.provider == Provider::OpenAi && self.base_url.as_deref().is_some_and(|u| u.contains("openrouter.ai")) {
            vars.push("OPENROUTER_API_KEY".into());
        }
        vars.extend(self.provider.credential_env_vars().iter().map(|s| s.to_string()));
        vars
    }

    /// The error for a missing credential.
    pub fn missing_credentials(&self) -> VlmError {
        let hint = match self.provider {
            Provider::Vertex => {
                "`api_key` or `vertex.token_command` (e.g. \"gcloud auth print-access-token\") in the backend config"
            }
            _ => "`api_key` in the backend config",
        };
        VlmError::MissingCredentials {
            provider: self.provider.to_string(),
            env_vars: self.key_env_vars(),
            hint: hint.to_string(),
        }
    }
}

/// True when a base URL points at this machine (`localhost`, `127.x.x.x`,
/// `[::1]`, `0.0.0.0`, `host.docker.internal`): local OpenAI-compatible
/// servers need no key.
///
/// ```
/// use nav_planner::vlm::is_local_url;
/// assert!(is_local_url("http://localhost:11434/v1"));
/// assert!(!is_local_url("https://openrouter.ai/api/v1"));
/// ```
pub fn is_local_url(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    matches!(host, "localhost" | "127.0.0.1" | "::1" | "0.0.0.0" | "host.docker.internal")
        || host.starts_with("127.")
        || host.ends_with(".localhost")
}

/// Builds the backend the config names, reading credentials from the process
/// environment. Fails with [`VlmError::FeatureDisabled`] when that provider's
/// cargo feature is not compiled in, [`VlmError::MissingCredentials`] when no
/// key is found, and [`VlmError::Config`] naming a bad field.
pub fn build_backend(cfg: &BackendConfig) -> Result<Box<dyn VisionLanguageModel>, VlmError> {
    build_backend_with_env(cfg, &|name| std::env::var(name).ok())
}

/// [`build_backend`] with an explicit environment lookup (for tests and for
/// embedding applications that keep secrets elsewhere).
pub fn build_backend_with_env(
    cfg: &BackendConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Box<dyn VisionLanguageModel>, VlmError> {
    cfg.validate()?;
    cfg.check_key(env)?;
    match cfg.provider {
        #[cfg(feature = "openai")]
        Provider::OpenAi => Ok(Box::new(super::OpenAiBackend::with_env(cfg, env)?)),
        #[cfg(feature = "gemini")]
        Provider::Gemini | Provider::Vertex => Ok(Box::new(super::GeminiBackend::with_env(cfg, env)?)),
        #[cfg(feature = "anthropic")]
        Provider::Anthropic => Ok(Box::new(super::AnthropicBackend::with_env(cfg, env)?)),
        #[allow(unreachable_patterns)]
        other => {
            let _ = env;
            Err(VlmError::FeatureDisabled { provider: other.to_string(), feature: other.feature().to_string() })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_like_json_round_trip_and_unknown_fields() {
        let cfg: BackendConfig = serde_json::from_str(
            r#"{"provider": "vertex", "vertex": {"project": "p", "endpoint_id": "123",
                "token_command": "gcloud auth print-access-token"}, "prices": {"x": {"input_per_mtok": 1, "output_per_mtok": 2}}}"#,
        )
        .unwrap();
        assert_eq!(cfg.provider, Provider::Vertex);
        assert_eq!(cfg.model_id(), "gemini-2.5-flash-lite");
        assert_eq!(cfg.timeout_s, 8.0);
        assert_eq!(cfg.vertex.token_command.as_ref().unwrap().argv(), ["gcloud", "auth", "print-access-token"]);
        assert!(cfg.price_table().get("x").is_some() && cfg.price_table().get("gpt-4o").is_some());
        let err = serde_json::from_str::<BackendConfig>(r#"{"providr": "openai"}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field `providr`"), "{err}");
        let err = serde_json::from_str::<BackendConfig>(r#"{"provider": "bard"}"#).unwrap_err();
        assert!(err.to_string().contains("unknown variant `bard`"), "{err}");
    }

    #[test]
    fn debug_and_serialize_hide_the_key() {
        let cfg = BackendConfig::new(Provider::OpenAi).with_api_key("sk-live-abcdef123456");
        assert!(!format!("{cfg:?}").contains("abcdef"));
        assert!(!serde_json::to_string(&cfg).unwrap().contains("abcdef"));
    }

    #[test]
    fn validation_names_the_field() {
        let cases = [
            (BackendConfig { timeout_s: 0.0, ..BackendConfig::default() }, "vlm.timeout_s"),
            (BackendConfig { max_attempts: 0, ..BackendConfig::default() }, "vlm.max_attempts"),
            (BackendConfig::default().with_base_url("localhost:8080"), "vlm.base_url"),
            (BackendConfig::default().with_model("gpt 4"), "vlm.model"),
            (BackendConfig { attempt_timeout_s: Some(-1.0), ..BackendConfig::default() }, "vlm.attempt_timeout_s"),
        ];
        for (cfg, field) in cases {
            let msg = cfg.validate().unwrap_err().to_string();
            assert!(msg.contains(field), "{msg} should name {field}");
        }
        let mut headers = BackendConfig::default();
        headers.extra_headers.insert("X Bad".into(), "v".into());
        assert!(headers.validate().unwrap_err().to_string().contains("X Bad"));
    }

    #[test]
    fn key_resolution_order() {
        let env = |name: &str| match name {
            "OPENROUTER_API_KEY" => Some("or-key".to_string()),
            "OPENAI_API_KEY" => Some("oa-key".to_string()),
            "EMPTY" => Some("  ".to_string()),
            _ => None,
        };
        let openai = BackendConfig::new(Provider::OpenAi);
        assert_eq!(openai.resolve_key(&env).unwrap().expose(), "oa-key");
        let router = openai.clone().with_base_url("https://openrouter.ai/api/v1");
        assert_eq!(router.resolve_key(&env).unwrap().expose(), "or-key");
        let configured = router.clone().with_api_key("cfg-key");
        assert_eq!(configured.resolve_key(&env).unwrap().expose(), "cfg-key");
        let empty_env = BackendConfig { api_key_env: Some("EMPTY".into()), ..BackendConfig::new(Provider::Anthropic) };
        assert!(empty_env.resolve_key(&env).is_none());
        assert_eq!(
            empty_env.missing_credentials(),
            VlmError::MissingCredentials {
                provider: "anthropic".into(),
                env_vars: vec!["EMPTY".into(), "ANTHROPIC_API_KEY".into()],
                hint: "`api_key` in the backend config".into(),
            }
        );
    }

    proptest::proptest! {
        /// A key with a character a header cannot carry is an error naming
        /// its variable and never quoting it; a printable ASCII key passes.
        #[test]
        fn keys_a_header_cannot_carry_are_named_not_shown(
            head in "[A-Za-z0-9]{8,20}", bad in "[\\x00-\\x08\\x0a-\\x1f\\x7f\\u{80}-\\u{10ffff}]", tail in "[A-Za-z0-9]{8,20}",
        ) {
            let value = format!("sk-{head}{bad}{tail}");
            let env = |name: &str| (name == "OPENAI_API_KEY").then(|| value.clone());
            let cfg = BackendConfig::new(Provider::OpenAi);
            let e = cfg.check_key(&env).unwrap_err().to_string();
            proptest::prop_assert!(e.contains("OPENAI_API_KEY"), "{}", e);
            proptest::prop_assert!(!e.contains(&head) && !e.contains(&tail), "{}", e);
            let good = format!("sk-{head}{tail}");
            proptest::prop_assert!(cfg.check_key(&|_: &str| Some(good.clone())).is_ok());
            let configured = cfg.with_api_key(value.clone());
            proptest::prop_assert!(configured.check_key(&env).unwrap_err().to_string().contains("`api_key`"));
        }
    }

    #[test]
    fn local_urls() {
        for url in ["http://localhost:11434/v1", "http://127.0.0.1:8000/v1", "http://[::1]:8080/v1", "http://0.0.0.0"] {
            assert!(is_local_url(url), "{url}");
        }
        for url in ["https://api.openai.com/v1", "https://openrouter.ai/api/v1", "http://localhost.evil.com/v1"] {
            assert!(!is_local_url(url), "{url}");
        }
    }

    #[test]
    fn provider_names_parse() {
        assert_eq!("OpenAI".parse::<Provider>().unwrap(), Provider::OpenAi);
        assert!("bard".parse::<Provider>().unwrap_err().to_string().contains("unknown VLM provider `bard`"));
    }

    #[cfg(not(feature = "openai"))]
    #[test]
    fn missing_feature_is_a_clear_error() {
        let err = build_backend(&BackendConfig::new(Provider::OpenAi)).err().unwrap();
        assert_eq!(err.to_string(), "VLM provider `openai` needs nav-planner built with the `openai` cargo feature");
    }
}
