//! [`AnthropicBackend`]: the Messages API over HTTP (feature `anthropic`).

use std::time::Instant;

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName};

use super::http::{HttpTransport, bill_missing_usage, call_deadline, finish, redact_error, secret_header};
use super::wire::anthropic::{AnthropicOptions, decode, encode, json_tool_name};
use super::{
    BackendConfig, BackendInfo, PriceTable, Provider, Secret, VisionLanguageModel, VlmError, VlmRequest, VlmResponse,
};

/// Anthropic's public endpoint.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// Anthropic Messages: `POST {base}/v1/messages` with `x-api-key`
/// (`ANTHROPIC_API_KEY`) and `anthropic-version` (default
/// [`ANTHROPIC_VERSION`](super::ANTHROPIC_VERSION)).
/// See [`wire::anthropic`](super::wire::anthropic) for the body, prompt
/// caching and JSON mode.
///
/// ```
/// use nav_planner::vlm::{AnthropicBackend, BackendConfig, Provider, VisionLanguageModel};
///
/// let cfg = BackendConfig::new(Provider::Anthropic).with_api_key("sk-ant-example");
/// let backend = AnthropicBackend::new(&cfg)?;
/// assert_eq!(backend.url(), "https://api.anthropic.com/v1/messages");
/// assert_eq!(backend.describe().model, "claude-haiku-4-5");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct AnthropicBackend {
    transport: HttpTransport,
    url: String,
    base_url: String,
    options: AnthropicOptions,
    api_key: Secret,
    version: String,
    beta: Option<String>,
    prices: PriceTable,
}

impl AnthropicBackend {
    /// A backend from the config, reading the key from the process
    /// environment (`ANTHROPIC_API_KEY` or `api_key_env`).
    pub fn new(cfg: &BackendConfig) -> Result<Self, VlmError> {
        Self::with_env(cfg, &|name| std::env::var(name).ok())
    }

    /// A backend from the config with an explicit environment lookup.
    pub fn with_env(cfg: &BackendConfig, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, VlmError> {
        if cfg.provider != Provider::Anthropic {
            return Err(VlmError::Config {
                message: format!("AnthropicBackend cannot serve provider `{}`", cfg.provider),
            });
        }
        cfg.validate()?;
        let api_key = cfg.resolve_key(env).ok_or_else(|| cfg.missing_credentials())?;
        let base_url = cfg.base_url.as_deref().unwrap_or(ANTHROPIC_BASE_URL).trim_end_matches('/').to_string();
        let url = if base_url.ends_with("/v1/messages") { base_url.clone() } else { format!("{base_url}/v1/messages") };
        let options = AnthropicOptions::from_config(cfg);
        Ok(Self {
            transport: HttpTransport::new("anthropic", cfg)?,
            url,
            base_url,
            options,
            api_key,
            version: cfg.anthropic.version.clone(),
            beta: cfg.anthropic.strict_tools.then(|| cfg.anthropic.strict_tools_beta.clone()),
            prices: cfg.price_table(),
        })
    }

    /// The URL requests are POSTed to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The exact JSON body this backend would send for a request.
    pub fn request_body(&self, req: &VlmRequest) -> serde_json::Value {
        encode(req, &self.options)
    }
}

#[async_trait]
impl VisionLanguageModel for AnthropicBackend {
    async fn complete(&self, req: VlmRequest) -> Result<VlmResponse, VlmError> {
        let started = Instant::now();
        let secrets = [self.api_key.expose()];
        req.validate().map_err(|e| redact_error(e, &secrets))?;
        let body = self.request_body(&req);
        let mut headers = HeaderMap::new();
        headers.insert(HeaderName::from_static("x-api-key"), secret_header(self.api_key.expose())?);
        headers.insert(HeaderName::from_static("anthropic-version"), secret_header(&self.version)?);
        if let Some(beta) = &self.beta {
            headers.insert(HeaderName::from_static("anthropic-beta"), secret_header(beta)?);
        }
        let deadline = call_deadline(req.timeout, &self.transport);
        let reply = self.transport.post_json(&self.url, headers, &body, started, deadline, &secrets).await?;
        let decoded = decode(&reply.body, json_tool_name(&req));
        let mut response = finish(decoded, &reply, started, &self.options.model, &self.prices, "anthropic", &secrets)?;
        bill_missing_usage(&mut response, &req, &self.prices, &self.options.model);
        Ok(response)
    }

    fn describe(&self) -> BackendInfo {
        BackendInfo {
            provider: "anthropic".into(),
            model: self.options.model.clone(),
            endpoint: Some(self.base_url.clone()),
        }
    }
}
