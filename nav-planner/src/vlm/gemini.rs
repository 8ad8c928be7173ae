//! [`GeminiBackend`]: Gemini `generateContent` on Google AI (API key) or
//! Vertex AI (bearer token; a publisher model or a deployed endpoint)
//! (feature `gemini`).

use std::time::{Duration, Instant};

use async_trait::async_trait;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName};

use super::http::{HttpTransport, bill_missing_usage, call_deadline, finish, redact_error, secret_header};
use super::vertex_token::TokenSource;
use super::wire::gemini::{decode, encode};
use super::{BackendConfig, BackendInfo, PriceTable, Provider, VisionLanguageModel, VlmError, VlmRequest, VlmResponse};

/// Google AI's public endpoint.
pub const GOOGLE_AI_BASE_URL: &str = "https://generativelanguage.googleapis.com";

#[derive(Debug)]
enum Auth {
    /// Google AI: `x-goog-api-key`.
    ApiKey(super::Secret),
    /// Vertex AI: `Authorization: Bearer`.
    Bearer(TokenSource),
}

/// Gemini over HTTP.
///
/// - Provider `gemini`: `POST {base}/v1beta/models/{model}:generateContent`
///   with the key in the `x-goog-api-key` header (`GEMINI_API_KEY` or
///   `GOOGLE_API_KEY`).
/// - Provider `vertex`: `POST {base}/v1/projects/{project}/locations/
///   {location}/publishers/google/models/{model}:generateContent`, or
///   `.../endpoints/{endpoint_id}:generateContent` when `vertex.endpoint_id`
///   is set, with `Authorization: Bearer` from `api_key`,
///   `VERTEX_ACCESS_TOKEN`, `GOOGLE_OAUTH_ACCESS_TOKEN`, or
///   `vertex.token_command` (run once, cached for `token_lifetime_s`, run
///   again after the provider answers 401). `base` defaults to
///   `https://{location}-aiplatform.googleapis.com`.
///
/// ```
/// use nav_planner::vlm::{BackendConfig, GeminiBackend, Provider};
///
/// let mut cfg = BackendConfig::new(Provider::Vertex);
/// cfg.vertex.project = Some("my-project".into());
/// cfg.vertex.location = Some("europe-west4".into());
/// cfg.vertex.endpoint_id = Some("1234567890".into());
/// let backend = GeminiBackend::with_env(&cfg, &|var| (var == "VERTEX_ACCESS_TOKEN").then(|| "ya29.x".into()))?;
/// assert_eq!(
///     backend.url(),
///     "https://europe-west4-aiplatform.googleapis.com/v1/projects/my-project/locations/europe-west4/endpoints/1234567890:generateContent"
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct GeminiBackend {
    transport: HttpTransport,
    url: String,
    base_url: String,
    provider: &'static str,
    model: String,
    described_model: String,
    auth: Auth,
    default_max_tokens: Option<u32>,
    prices: PriceTable,
}

fn check_segment(field: &str, value: &str) -> Result<(), VlmError> {
    let ok = !value.is_empty() && value.chars().all(|c| c.is_ascii_alphanumeric() || "-_.:@".contains(c));
    if ok {
        Ok(())
    } else {
        Err(VlmError::Config { message: format!("{field} `{value}` may only contain letters, digits, `-`, `_`, `.`") })
    }
}

impl GeminiBackend {
    /// A backend from the config, reading credentials and Vertex defaults
    /// (`GOOGLE_CLOUD_PROJECT`, `GOOGLE_CLOUD_LOCATION`) from the process
    /// environment.
    pub fn new(cfg: &BackendConfig) -> Result<Self, VlmError> {
        Self::with_env(cfg, &|name| std::env::var(name).ok())
    }

    /// A backend from the config with an explicit environment lookup.
    pub fn with_env(cfg: &BackendConfig, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, VlmError> {
        cfg.validate()?;
        let model = cfg.model_id().trim_start_matches("models/").to_string();
        check_segment("vlm.model", &model)?;
        let trimmed_base = cfg.base_url.as_deref().map(|b| b.trim_end_matches('/').to_string());
        let transport = HttpTransport::new(if cfg.provider == Provider::Vertex { "vertex" } else { "gemini" }, cfg)?;
        let prices = cfg.price_table();
        let default_max_tokens = cfg.max_tokens;
        match cfg.provider {
            Provider::Gemini => {
                let key = cfg.resolve_key(env).ok_or_else(|| cfg.missing_credentials())?;
                let base_url = trimmed_base.unwrap_or_else(|| GOOGLE_AI_BASE_URL.to_string());
                Ok(Self {
                    transport,
                    url: format!("{base_url}/v1beta/models/{model}:generateContent"),
                    base_url,
                    provider: "gemini",
                    described_model: model.clone(),
                    model,
                    auth: Auth::ApiKey(key),
                    default_max_tokens,
                    prices,
                })
            }
            Provider::Vertex => {
                let v = &cfg.vertex;
                let project =
                    v.project.clone().or_else(|| env("GOOGLE_CLOUD_PROJECT")).ok_or_else(|| VlmError::Config {
                        message: "vlm.vertex.project is required for Vertex AI (or set GOOGLE_CLOUD_PROJECT)".into(),
                    })?;
                let location =
                    v.location.clone().or_else(|| env("GOOGLE_CLOUD_LOCATION")).unwrap_or("us-central1".into());
                check_segment("vlm.vertex.project", &project)?;
                check_segment("vlm.vertex.location", &location)?;
                let base_url = trimmed_base.unwrap_or_else(|| match location.as_str() {
                    "global" => "https://aiplatform.googleapis.com".to_string(),
                    region => format!("https://{region}-aiplatform.googleapis.com"),
                });
                let prefix = format!("{base_url}/v1/projects/{project}/locations/{location}");
                let (url, described_model) = match &v.endpoint_id {
                    Some(id) => {
                        check_segment("vlm.vertex.endpoint_id", id)?;
                        (format!("{prefix}/endpoints/{id}:generateContent"), format!("endpoints/{id}"))
                    }
                    None => (format!("{prefix}/publishers/google/models/{model}:generateContent"), model.clone()),
                };
                let auth = match (cfg.resolve_key(env), &v.token_command) {
                    (Some(token), _) => TokenSource::Fixed(token),
                    (None, Some(command)) => TokenSource::command(
                        command.clone(),
                        Duration::try_from_secs_f64(v.token_lifetime_s).unwrap_or(Duration::ZERO),
                    ),
                    (None, None) => return Err(cfg.missing_credentials()),
                };
                Ok(Self {
                    transport,
                    url,
                    base_url,
                    provider: "vertex",
                    model,
                    described_model,
                    auth: Auth::Bearer(auth),
                    default_max_tokens,
                    prices,
                })
            }
            other => Err(VlmError::Config { message: format!("GeminiBackend cannot serve provider `{other}`") }),
        }
    }

    /// The URL requests are POSTed to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The exact JSON body this backend would send for a request.
    pub fn request_body(&self, req: &VlmRequest) -> serde_json::Value {
        encode(req, self.default_max_tokens)
    }
}

#[async_trait]
impl VisionLanguageModel for GeminiBackend {
    async fn complete(&self, req: VlmRequest) -> Result<VlmResponse, VlmError> {
        let started = Instant::now();
        req.validate()?;
        let deadline = call_deadline(req.timeout, &self.transport);
        let mut headers = HeaderMap::new();
        let credential = match &self.auth {
            Auth::ApiKey(key) => {
                headers.insert(HeaderName::from_static("x-goog-api-key"), secret_header(key.expose())?);
                key.clone()
            }
            Auth::Bearer(source) => {
                let token = source.token(deadline).await?;
                headers.insert(AUTHORIZATION, secret_header(&format!("Bearer {}", token.expose()))?);
                token
            }
        };
        let secrets = [credential.expose()];
        let body = self.request_body(&req);
        let reply = match self.transport.post_json(&self.url, headers, &body, started, deadline, &secrets).await {
            Ok(reply) => reply,
            Err(e) => {
                if let (Auth::Bearer(source), VlmError::Http { status: 401, .. }) = (&self.auth, &e) {
                    source.invalidate().await;
                }
                return Err(redact_error(e, &secrets));
            }
        };
        let mut response =
            finish(decode(&reply.body), &reply, started, &self.model, &self.prices, self.provider, &secrets)?;
        bill_missing_usage(&mut response, &req, &self.prices, &self.model);
        Ok(response)
    }

    fn describe(&self) -> BackendInfo {
        BackendInfo {
            provider: self.provider.into(),
            model: self.described_model.clone(),
            endpoint: Some(self.base_url.clone()),
        }
    }
}
