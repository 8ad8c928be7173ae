//! The seam between navkit and vision-language models.
//!
//! - [`VisionLanguageModel`]: one async method, [`complete`], taking a
//!   provider-neutral [`VlmRequest`] (system prompt, user [`Part`]s, follow-up
//!   [`Turn`]s, [`ToolSpec`]s with a [`ToolChoice`], an optional
//!   [`JsonSchemaSpec`]) and returning a [`VlmResponse`] (text, [`RawToolCall`]s,
//!   [`Usage`], latency, cost) or a structured [`VlmError`].
//! - Test doubles beside the trait: [`ScriptedVlm`] (queued replies, errors,
//!   timeouts, silence; records requests) and [`FnVlm`] (a closure).
//! - [`MeteredVlm`] wraps any model and keeps [`VlmStats`] (calls,
//!   successes, failures by kind, tokens, latency, cost); [`LedgerVlm`]
//!   does the same for a whole run, counting replies that arrive after the
//!   caller stopped waiting (the bill of the run).
//! - HTTP backends, each behind a cargo feature: `OpenAiBackend` (`openai`:
//!   OpenAI, OpenRouter, Ollama, vLLM, llama.cpp server), `GeminiBackend`
//!   (`gemini`: Google AI and Vertex AI), `AnthropicBackend` (`anthropic`).
//!   [`build_backend`] makes one from a serde [`BackendConfig`].
//! - [`calls`]: model calls as recordings keep them (request hashes,
//!   replies as values, the journal a step log writes), for replaying a run.
//! - [`wire`]: the providers' JSON request/response codecs, pure functions
//!   compiled without any feature (used by the backends, by `nav prompt`, and
//!   testable offline).
//!
//! [`complete`]: VisionLanguageModel::complete

mod budget;
pub mod calls;
mod config;
mod error;
mod ledger;
mod metered;
mod pricing;
mod redact;
mod request;
mod response;
mod scripted;
pub mod wire;

#[cfg(feature = "anthropic")]
mod anthropic;
#[cfg(feature = "gemini")]
mod gemini;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "openai")]
mod openai;
#[cfg(feature = "gemini")]
mod vertex_token;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

#[cfg(feature = "anthropic")]
pub use anthropic::AnthropicBackend;
pub use budget::CostBudget;
pub use config::{
    ANTHROPIC_VERSION, AnthropicConfig, BackendConfig, CommandLine, DEFAULT_MAX_REPLY_BYTES, Provider, RetryBackoff,
    RetryPolicy, VertexConfig, build_backend, build_backend_with_env, is_local_url,
};
pub use error::{LinkFault, VlmError};
#[cfg(feature = "gemini")]
pub use gemini::GeminiBackend;
pub use ledger::{LedgerVlm, ModelLinkFailure};
pub use metered::{MeteredVlm, VlmStats};
#[cfg(feature = "openai")]
pub use openai::OpenAiBackend;
pub use pricing::{ModelPrice, PriceTable};
pub use redact::{
    REDACTED, Secret, credential_env_values, credential_values, redact, redact_key_prefixes, redact_secrets,
    scrub_credentials,
};
pub use request::{ImageDetail, JsonSchemaSpec, Part, RequestKind, ToolChoice, ToolSpec, Turn, VlmRequest};
pub use response::{RawToolCall, Usage, VlmResponse};
pub use scripted::{FnVlm, ScriptStep, ScriptedVlm};

/// The per-call deadline used when neither the request nor the config sets
/// one (8 s).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(8);

/// Which provider and model a backend talks to, for logs and run summaries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendInfo {
    /// Provider name: `openai`, `gemini`, `vertex`, `anthropic`, `scripted`…
    pub provider: String,
    /// The configured model id (or Vertex endpoint id).
    pub model: String,
    /// The base URL requests go to, for HTTP backends.
    pub endpoint: Option<String>,
}

impl BackendInfo {
    /// Info with no endpoint.
    pub fn new(provider: impl Into<String>, model: impl Into<String>) -> Self {
        Self { provider: provider.into(), model: model.into(), endpoint: None }
    }
}

impl std::fmt::Display for BackendInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

/// A vision-language model: give it a request, get a reply or an error.
///
/// Implementations must never panic on what a provider returns, must honour
/// the request's `timeout` as the deadline of the whole call (retries
/// included), and must keep credentials out of errors and logs.
///
/// ```
/// use nav_planner::vlm::{ScriptedVlm, VisionLanguageModel, VlmRequest};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let vlm = ScriptedVlm::new().then_text(r#"{"goal_flag": false, "angle": 30}"#);
/// let reply = vlm.complete(VlmRequest::new("system").text("where next?")).await?;
/// assert!(reply.text.contains("angle"));
/// assert_eq!(vlm.describe().provider, "scripted");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[async_trait]
pub trait VisionLanguageModel: Send + Sync {
    /// Runs one completion.
    async fn complete(&self, req: VlmRequest) -> Result<VlmResponse, VlmError>;

    /// The provider and model this talks to.
    fn describe(&self) -> BackendInfo {
        BackendInfo::new("unknown", "unknown")
    }

    /// Whether this model answers requests of `kind` ([`VlmRequest::kind`];
    /// all of them unless overridden). A run checks this before its first
    /// step against the kinds its configuration sends and ends with an
    /// error naming the kind and the alternatives, rather than collecting
    /// fallbacks; a model that declines a single request at run time
    /// returns [`VlmError::Declined`]. Wrappers must forward it.
    fn answers(&self, kind: RequestKind) -> bool {
        let _ = kind;
        true
    }
}

#[async_trait]
impl<T: VisionLanguageModel + ?Sized> VisionLanguageModel for Box<T> {
    async fn complete(&self, req: VlmRequest) -> Result<VlmResponse, VlmError> {
        (**self).complete(req).await
    }

    fn describe(&self) -> BackendInfo {
        (**self).describe()
    }

    fn answers(&self, kind: RequestKind) -> bool {
        (**self).answers(kind)
    }
}

#[async_trait]
impl<T: VisionLanguageModel + ?Sized> VisionLanguageModel for Arc<T> {
    async fn complete(&self, req: VlmRequest) -> Result<VlmResponse, VlmError> {
        (**self).complete(req).await
    }

    fn describe(&self) -> BackendInfo {
        (**self).describe()
    }

    fn answers(&self, kind: RequestKind) -> bool {
        (**self).answers(kind)
    }
}

#[async_trait]
impl<T: VisionLanguageModel + ?Sized> VisionLanguageModel for &T {
    async fn complete(&self, req: VlmRequest) -> Result<VlmResponse, VlmError> {
        (**self).complete(req).await
    }

    fn describe(&self) -> BackendInfo {
        (**self).describe()
    }

    fn answers(&self, kind: RequestKind) -> bool {
        (**self).answers(kind)
    }
}
