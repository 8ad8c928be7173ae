//! [`VlmError`]: everything that can go wrong when asking a model.

use serde::{Deserialize, Serialize};

/// Why a completion failed. Messages never contain API keys or bearer
/// tokens: provider error bodies are passed through [`redact`] first.
///
/// [`redact`]: super::redact
///
/// Serialized with a `type` tag ([`VlmError::kind`]), so recordings keep
/// errors as values and a replay returns the same error.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum VlmError {
    /// The call's deadline passed before a usable response arrived.
    #[error("VLM call timed out after {after_ms} ms")]
    Timeout {
        /// The deadline that was exceeded, in milliseconds.
        after_ms: u64,
    },
    /// The provider answered HTTP 429 and retrying was not possible (attempts
    /// used up, or the requested wait exceeds the retry cap or the deadline).
    #[error("VLM provider rate limit (HTTP 429){}", fmt_retry_after(*.retry_after_s))]
    RateLimited {
        /// The wait the provider asked for, if it said.
        retry_after_s: Option<f64>,
    },
    /// The provider answered with an HTTP error status.
    #[error("VLM provider returned HTTP {status}: {message}")]
    Http {
        /// The status code.
        status: u16,
        /// The provider's error message (redacted, truncated).
        message: String,
    },
    /// The connection failed or broke before a complete response arrived.
    #[error("could not reach the VLM provider: {message}")]
    Connection {
        /// What failed (redacted).
        message: String,
    },
    /// The provider's response could not be understood: truncated or
    /// malformed JSON, no choices/candidates, missing fields.
    #[error("invalid VLM response: {message}")]
    InvalidResponse {
        /// What is wrong with it.
        message: String,
    },
    /// The model or the provider's safety system declined to answer.
    #[error("the model refused: {message}")]
    Refused {
        /// The refusal text or the provider's block reason.
        message: String,
    },
    /// No API key or token was configured or found in the environment.
    #[error("no credentials for {provider}: set {} or {hint}", env_vars.join(" or "))]
    MissingCredentials {
        /// The provider.
        provider: String,
        /// The environment variables that were consulted, in order.
        env_vars: Vec<String>,
        /// The config fields that could hold the credential instead.
        hint: String,
    },
    /// The backend configuration or the request is unusable.
    #[error("invalid VLM configuration or request: {message}")]
    Config {
        /// What is wrong.
        message: String,
    },
    /// The command that prints an access token (e.g. `gcloud auth
    /// print-access-token`) failed.
    #[error("access token command `{command}` failed: {message}")]
    TokenCommand {
        /// The command line.
        command: String,
        /// What went wrong (exit status, stderr excerpt; redacted).
        message: String,
    },
    /// The model does not answer requests of this kind
    /// ([`super::VisionLanguageModel::answers`]); the caller takes its
    /// documented fallback.
    #[error("the model does not answer {kind} requests")]
    Declined {
        /// The declined [`super::RequestKind`]'s name.
        kind: String,
    },
    /// The run's spending limit (`--max-cost-usd`, a [`CostBudget`]) is
    /// reached: the call was not sent.
    ///
    /// [`CostBudget`]: super::CostBudget
    #[error("cost limit reached: ${spent_usd:.4} spent of ${limit_usd:.4}; no further model calls")]
    CostLimit {
        /// The limit, US dollars.
        limit_usd: f64,
        /// What was spent when the call was refused, US dollars.
        spent_usd: f64,
    },
    /// The provider's backend was not compiled into this build.
    #[error("VLM provider `{provider}` needs nav-planner built with the `{feature}` cargo feature")]
    FeatureDisabled {
        /// The requested provider.
        provider: String,
        /// The cargo feature that enables it.
        feature: String,
    },
    /// A replayed run asked something its recording does not hold
    /// (`nav_planner::replay::ReplayVlm`): the run ends here.
    #[error("{divergence}")]
    ReplayMiss {
        /// Where and how the run left the recording.
        divergence: Box<super::calls::Divergence>,
    },
}

/// A fault of the link to the model that retrying cannot heal: the run
/// stops the robot and ends with [`crate::navigator::episode::EpisodeError::ModelLink`]
/// instead of driving on fallback decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LinkFault {
    /// Nothing listens at the address (connection refused).
    Refused,
    /// The host name does not resolve.
    Dns,
    /// The TLS handshake failed (certificate, protocol).
    Tls,
    /// HTTP 401: the key is missing, wrong or expired.
    Unauthorized,
    /// HTTP 403: the key may not use this model or endpoint.
    Forbidden,
    /// HTTP 404: wrong base URL, or a model the server does not have.
    NotFound,
    /// No credentials, or the command that fetches them failed.
    Credentials,
    /// The backend cannot be used as configured (a disabled cargo feature,
    /// an invalid configuration).
    Configuration,
    /// The first request of a run could not reach the server (a reset or
    /// closed connection before any reply).
    Unreachable,
    /// A replayed run asked something its recording does not hold.
    ReplayMiss,
}

impl LinkFault {
    /// A short description for the one-line message.
    pub fn describe(self) -> &'static str {
        match self {
            LinkFault::Refused => "connection refused (is the server running, and on this port?)",
            LinkFault::Dns => "the host name does not resolve",
            LinkFault::Tls => "the TLS handshake failed",
            LinkFault::Unauthorized => "HTTP 401 unauthorized (check the API key)",
            LinkFault::Forbidden => "HTTP 403 forbidden (the key may not use this model)",
            LinkFault::NotFound => "HTTP 404 not found (check the base URL and the model name)",
            LinkFault::Credentials => "no usable credentials",
            LinkFault::Configuration => "the backend is not usable as configured",
            LinkFault::Unreachable => "the server could not be reached",
            LinkFault::ReplayMiss => "the request is not in the recording being replayed",
        }
    }
}

fn fmt_retry_after(s: Option<f64>) -> String {
    match s {
        Some(s) => format!("; retry after {s:.1} s"),
        None => String::new(),
    }
}

impl VlmError {
    /// A short stable name of the variant, for statistics and logs:
    /// `timeout`, `rate_limited`, `http`, `connection`, `invalid_response`,
    /// `refused`, `missing_credentials`, `config`, `token_command`,
    /// `cost_limit`, `feature_disabled`, `declined`, `replay_miss`.
    pub fn kind(&self) -> &'static str {
        match self {
            VlmError::Timeout { .. } => "timeout",
            VlmError::RateLimited { .. } => "rate_limited",
            VlmError::Http { .. } => "http",
            VlmError::Connection { .. } => "connection",
            VlmError::InvalidResponse { .. } => "invalid_response",
            VlmError::Refused { .. } => "refused",
            VlmError::MissingCredentials { .. } => "missing_credentials",
            VlmError::Config { .. } => "config",
            VlmError::TokenCommand { .. } => "token_command",
            VlmError::CostLimit { .. } => "cost_limit",
            VlmError::FeatureDisabled { .. } => "feature_disabled",
            VlmError::Declined { .. } => "declined",
            VlmError::ReplayMiss { .. } => "replay_miss",
        }
    }

    /// The fault of the link to the model, when retrying cannot heal it:
    /// connection refused, a name that does not resolve, a failed TLS
    /// handshake, HTTP 401/403/404, missing credentials or an unusable
    /// configuration. Timeouts, rate limits, server errors and dropped
    /// connections are not link faults (the loops' watchdogs handle them).
    pub fn link_fault(&self) -> Option<LinkFault> {
        match self {
            VlmError::Http { status: 401, .. } => Some(LinkFault::Unauthorized),
            VlmError::Http { status: 403, .. } => Some(LinkFault::Forbidden),
            VlmError::Http { status: 404, .. } => Some(LinkFault::NotFound),
            VlmError::MissingCredentials { .. } | VlmError::TokenCommand { .. } => Some(LinkFault::Credentials),
            VlmError::FeatureDisabled { .. } | VlmError::Config { .. } => Some(LinkFault::Configuration),
            VlmError::ReplayMiss { .. } => Some(LinkFault::ReplayMiss),
            VlmError::Connection { message } => {
                let m = message.to_ascii_lowercase();
                if m.contains("connection refused") {
                    Some(LinkFault::Refused)
                } else if m.contains("dns error") || m.contains("failed to lookup") || m.contains("name or service") {
                    Some(LinkFault::Dns)
                } else if m.contains("certificate") || m.contains("tls") || m.contains("handshake") {
                    Some(LinkFault::Tls)
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// True for failures a caller may reasonably try again later
    /// (timeouts, rate limits, server errors, broken connections). Backends
    /// already retried these within the call's deadline.
    pub fn is_transient(&self) -> bool {
        match self {
            VlmError::Timeout { .. } | VlmError::RateLimited { .. } | VlmError::Connection { .. } => true,
            VlmError::Http { status, .. } => *status >= 500,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_problem() {
        let e = VlmError::MissingCredentials {
            provider: "gemini".into(),
            env_vars: vec!["GEMINI_API_KEY".into(), "GOOGLE_API_KEY".into()],
            hint: "`api_key` in the backend config".into(),
        };
        assert_eq!(
            e.to_string(),
            "no credentials for gemini: set GEMINI_API_KEY or GOOGLE_API_KEY or `api_key` in the backend config"
        );
        assert_eq!(
            VlmError::RateLimited { retry_after_s: Some(2.0) }.to_string(),
            "VLM provider rate limit (HTTP 429); retry after 2.0 s"
        );
        assert_eq!(VlmError::RateLimited { retry_after_s: None }.to_string(), "VLM provider rate limit (HTTP 429)");
        assert!(VlmError::Http { status: 503, message: String::new() }.is_transient());
        assert!(!VlmError::Http { status: 400, message: String::new() }.is_transient());
        assert_eq!(VlmError::Timeout { after_ms: 5 }.kind(), "timeout");
    }
}
