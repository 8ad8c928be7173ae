//! [`OpenAiBackend`]: Chat Completions over HTTP (feature `openai`).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use async_trait::async_trait;
use reqwest::header::{AUTHORIZATION, HeaderMap};

use super::config::is_local_url;
use super::http::{HttpTransport, bill_missing_usage, call_deadline, finish, redact_error, secret_header};
use super::wire::openai::{JsonMode, OpenAiOptions, decode, encode};
use super::wire::tool_text::tool_call_from_text;
use super::{
    BackendConfig, BackendInfo, PriceTable, Provider, Secret, ToolChoice, VisionLanguageModel, VlmError, VlmRequest,
    VlmResponse,
};

/// OpenAI's public endpoint.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// OpenAI Chat Completions and compatible servers: set `base_url` to
/// `https://openrouter.ai/api/v1`, `http://localhost:11434/v1` (Ollama),
/// `http://localhost:8000/v1` (vLLM) or `http://localhost:8080/v1`
/// (llama.cpp server). A key is required except for local servers (a
/// localhost `base_url`), where it is sent only if one is configured.
///
/// ```
/// use nav_planner::vlm::{BackendConfig, OpenAiBackend, Provider, VisionLanguageModel};
///
/// let cfg = BackendConfig::new(Provider::OpenAi)
///     .with_model("qwen2.5-vl:7b")
///     .with_base_url("http://localhost:11434/v1");
/// let backend = OpenAiBackend::with_env(&cfg, &|_| None)?; // no key needed locally
/// assert_eq!(backend.url(), "http://localhost:11434/v1/chat/completions");
/// assert_eq!(backend.describe().model, "qwen2.5-vl:7b");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct OpenAiBackend {
    transport: HttpTransport,
    url: String,
    base_url: String,
    options: OpenAiOptions,
    api_key: Option<Secret>,
    prices: PriceTable,
    /// The structured-output mode that works with this server, learnt from
    /// its rejections and kept for the rest of the run.
    json_mode: Mutex<JsonMode>,
    /// Set once the server rejected or ignored native tools: tools are then
    /// described in the prompt for the rest of the run.
    tools_in_prompt: AtomicBool,
}

/// True when an error is a server rejecting native tools (HTTP 400/422/500
/// naming `tools`, `tool_choice` or functions).
fn rejects_tools(e: &VlmError) -> bool {
    match e {
        VlmError::Http { status: 400 | 422 | 500 | 501, message } => {
            let m = message.to_ascii_lowercase();
            m.contains("tool") || m.contains("function")
        }
        _ => false,
    }
}

/// True when an error is a server rejecting the `response_format` field
/// (HTTP 400/422, or llama-cpp-python's 500 "response_format.type: Input
/// should be 'text' or 'json_object'").
fn rejects_response_format(e: &VlmError) -> bool {
    match e {
        VlmError::Http { status: 400 | 422 | 500, message } => {
            let m = message.to_ascii_lowercase();
            m.contains("response_format") || m.contains("json_schema") || m.contains("json_object")
        }
        _ => false,
    }
}

impl OpenAiBackend {
    /// A backend from the config, reading the key from the process
    /// environment (`OPENAI_API_KEY`, or `api_key_env`, or
    /// `OPENROUTER_API_KEY` for an OpenRouter `base_url`).
    pub fn new(cfg: &BackendConfig) -> Result<Self, VlmError> {
        Self::with_env(cfg, &|name| std::env::var(name).ok())
    }

    /// A backend from the config with an explicit environment lookup.
    pub fn with_env(cfg: &BackendConfig, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, VlmError> {
        if cfg.provider != Provider::OpenAi {
            return Err(VlmError::Config {
                message: format!("OpenAiBackend cannot serve provider `{}`", cfg.provider),
            });
        }
        cfg.validate()?;
        let base_url = cfg.base_url.as_deref().unwrap_or(OPENAI_BASE_URL).trim_end_matches('/').to_string();
        let api_key = cfg.resolve_key(env);
        if api_key.is_none() && !is_local_url(&base_url) {
            return Err(cfg.missing_credentials());
        }
        let url = if base_url.ends_with("/chat/completions") {
            base_url.clone()
        } else {
            format!("{base_url}/chat/completions")
        };
        let options = OpenAiOptions::from_config(cfg);
        Ok(Self {
            transport: HttpTransport::new("openai", cfg)?,
            url,
            base_url,
            options,
            api_key,
            prices: cfg.price_table(),
            json_mode: Mutex::new(JsonMode::JsonSchema),
            tools_in_prompt: AtomicBool::new(false),
        })
    }

    /// The URL requests are POSTed to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The exact JSON body this backend would send for a request now (in
    /// the structured-output mode the server has accepted so far).
    pub fn request_body(&self, req: &VlmRequest) -> serde_json::Value {
        encode(
            req,
            &OpenAiOptions {
                json_mode: self.json_mode(),
                tools_in_prompt: self.tools_in_prompt(),
                ..self.options.clone()
            },
        )
    }

    /// Whether tools are described in the prompt (the server rejected or
    /// ignored native tools earlier in the run).
    pub fn tools_in_prompt(&self) -> bool {
        self.tools_in_prompt.load(Ordering::SeqCst)
    }

    /// Switches to tools in the prompt for the rest of the run, logging the
    /// change once.
    fn tools_to_prompt(&self, why: &str) {
        if !self.tools_in_prompt.swap(true, Ordering::SeqCst) {
            tracing::warn!(server = %self.base_url, reason = why, "the server {why}: describing the tools in the \
                prompt and reading the call from the reply text for the rest of the run");
        }
    }

    /// POSTs the request, stepping down the structured-output mode and the
    /// tool mode as the server rejects them (each remembered for the run).
    async fn send(&self, req: &VlmRequest, started: Instant, secrets: &[&str]) -> Result<VlmResponse, VlmError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.api_key {
            headers.insert(AUTHORIZATION, secret_header(&format!("Bearer {}", key.expose()))?);
        }
        let deadline = call_deadline(req.timeout, &self.transport);
        let mut body = self.request_body(req);
        let reply = loop {
            match self.transport.post_json(&self.url, headers.clone(), &body, started, deadline, secrets).await {
                Ok(reply) => break reply,
                // Capability fallback: step down once per rejection, remember
                // it for the rest of the run, and log the change once.
                Err(e) if body.get("response_format").is_some() && rejects_response_format(&e) => {
                    let mut mode = self.json_mode.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    let sent = body.get("response_format").and_then(|f| f.get("type")).and_then(|t| t.as_str());
                    match sent {
                        None => return Err(e),
                        Some(t) if t == mode.as_str() => {
                            let Some(next) = mode.fallback() else { return Err(e) };
                            tracing::warn!(server = %self.base_url, rejected = mode.as_str(), now = next.as_str(),
                                error = %e, "the server rejects this structured-output mode; \
                                using the next one for the rest of the run");
                            *mode = next;
                        }
                        // another call already stepped down
                        Some(_) => {}
                    }
                    drop(mode);
                    body = self.request_body(req);
                }
                Err(e) if body.get("tools").is_some() && rejects_tools(&e) => {
                    self.tools_to_prompt("rejects native tools");
                    body = self.request_body(req);
                }
                Err(e) => return Err(e),
            }
        };
        let mut response =
            finish(decode(&reply.body), &reply, started, &self.options.model, &self.prices, "openai", secrets)?;
        bill_missing_usage(&mut response, req, &self.prices, &self.options.model);
        Ok(response)
    }

    /// The structured-output mode in use (see [`JsonMode`]).
    pub fn json_mode(&self) -> JsonMode {
        *self.json_mode.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl VisionLanguageModel for OpenAiBackend {
    async fn complete(&self, req: VlmRequest) -> Result<VlmResponse, VlmError> {
        let started = Instant::now();
        let key = self.api_key.as_ref().map(|k| k.expose()).unwrap_or("");
        let secrets = [key];
        req.validate().map_err(|e| redact_error(e, &secrets))?;
        let names: Vec<&str> = req.callable_tools().iter().map(|t| t.name.as_str()).collect();
        let must_call = !names.is_empty() && matches!(req.tool_choice, ToolChoice::Required | ToolChoice::Only(_));
        let native = !self.tools_in_prompt();
        let mut reply = self.send(&req, started, &secrets).await?;
        if names.is_empty() || req.tool_choice == ToolChoice::None || !reply.tool_calls.is_empty() {
            return Ok(reply);
        }
        if let Some(call) = tool_call_from_text(&reply.text, &names) {
            if native && must_call {
                self.tools_to_prompt("ignores native tools (answered a required call in text)");
            }
            reply.tool_calls.push(call);
            return Ok(reply);
        }
        if !(native && must_call && !self.tools_in_prompt()) {
            return Ok(reply);
        }
        // a required call answered in prose: the server ignores native tools; ask once more with the
        // tools in the prompt, billing both requests
        self.tools_to_prompt("ignores native tools (no call where one was required)");
        let first = reply.usage;
        let mut again = self.send(&req, started, &secrets).await?;
        if again.tool_calls.is_empty() {
            again.tool_calls.extend(tool_call_from_text(&again.text, &names));
        }
        again.usage += first;
        again.attempts += reply.attempts;
        again.cost_usd = self
            .prices
            .cost(&again.model, &again.usage)
            .or_else(|| self.prices.cost(&self.options.model, &again.usage));
        Ok(again)
    }

    fn describe(&self) -> BackendInfo {
        BackendInfo {
            provider: "openai".into(),
            model: self.options.model.clone(),
            endpoint: Some(self.base_url.clone()),
        }
    }
}
