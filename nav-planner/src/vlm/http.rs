//! The HTTP transport shared by the backends: one JSON POST with a deadline,
//! bounded retries where they are safe, jitter, `Retry-After`, latency, and
//! tracing events that never contain credentials.
//!
//! Rules:
//! - The request's timeout (else the config's, default 8 s) is the deadline
//!   of the whole call, retries and back-off included. Reaching it is
//!   [`VlmError::Timeout`].
//! - Retried: HTTP 429 (waiting `Retry-After` / `retry-after-ms` / Google's
//!   `RetryInfo`, capped by the configured maximum delay), HTTP 5xx, and
//!   transport failures (a connection reset, a body cut off, a connect
//!   timeout, an attempt timeout when `attempt_timeout` is set). Never
//!   other 4xx, never a 2xx body that fails to decode, never a link fault
//!   ([`VlmError::link_fault`]: connection refused, DNS, TLS).
//! - At most `max_attempts` attempts; a retry whose wait would pass the
//!   deadline is not started and the last error is returned.
//! - Back-off before retry `n`: `base_delay · 2^(n-1)`, capped, with "equal
//!   jitter" (a uniformly random wait between half and all of it); or, with
//!   [`RetryBackoff::Linear`], `base_delay · n`, capped, without jitter.

use std::time::{Duration, Instant};

use rand::Rng as _;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::redact::{redact, truncate_chars};
use super::wire::error_message;
use super::{BackendConfig, PriceTable, RetryBackoff, RetryPolicy, VlmError, VlmResponse};

/// A successful (2xx) HTTP exchange.
#[derive(Debug)]
pub(crate) struct HttpReply {
    /// The response body.
    pub body: Vec<u8>,
    /// Attempts made, the successful one included.
    pub attempts: u32,
}

/// What one attempt produced.
enum Outcome {
    Success(Vec<u8>),
    /// A failure worth retrying, with the wait the server asked for.
    Retry(VlmError, Option<Duration>),
    Fatal(VlmError),
}

/// The shared HTTP client of one backend.
#[derive(Debug, Clone)]
pub(crate) struct HttpTransport {
    client: reqwest::Client,
    policy: RetryPolicy,
    provider: &'static str,
    extra_headers: HeaderMap,
    max_reply_bytes: usize,
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A header value marked sensitive (hidden from reqwest's and hyper's
/// `Debug` output).
pub(crate) fn secret_header(value: &str) -> Result<HeaderValue, VlmError> {
    let mut v = HeaderValue::from_str(value).map_err(|_| VlmError::Config {
        message: "a credential or header value contains characters not allowed in HTTP headers".into(),
    })?;
    v.set_sensitive(true);
    Ok(v)
}

/// The wait a 429 or 503 response asks for: `retry-after-ms`, then
/// `Retry-After` in seconds, then Google's `RetryInfo.retryDelay` ("1.5s")
/// in the body. HTTP-date `Retry-After` values fall back to back-off.
fn retry_after(headers: &HeaderMap, body: &[u8]) -> Option<Duration> {
    let header =
        |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).and_then(|s| s.trim().parse::<f64>().ok());
    let seconds = header("retry-after-ms").map(|ms| ms / 1000.0).or_else(|| header("retry-after")).or_else(|| {
        let v: Value = serde_json::from_slice(body).ok()?;
        v.pointer("/error/details")?
            .as_array()?
            .iter()
            .find_map(|d| d.get("retryDelay")?.as_str()?.strip_suffix('s')?.parse::<f64>().ok())
    })?;
    Duration::try_from_secs_f64(seconds).ok()
}

impl HttpTransport {
    /// A transport for one backend, with the config's policy and extra
    /// headers.
    pub(crate) fn new(provider: &'static str, cfg: &BackendConfig) -> Result<Self, VlmError> {
        let policy = cfg.retry_policy();
        let client = reqwest::Client::builder()
            .connect_timeout(policy.connect_timeout)
            .user_agent(concat!("navkit/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| VlmError::Config {
                message: format!("cannot build the HTTP client: {}", nav_core::error::error_chain(&e)),
            })?;
        let mut extra_headers = HeaderMap::new();
        for (name, value) in &cfg.extra_headers {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| VlmError::Config {
                message: format!("vlm.extra_headers: invalid header name `{name}`"),
            })?;
            extra_headers.insert(name, secret_header(value)?);
        }
        Ok(Self { client, policy, provider, extra_headers, max_reply_bytes: cfg.max_reply_bytes })
    }

    /// The configured default deadline of a call.
    pub(crate) fn default_timeout(&self) -> Duration {
        self.policy.timeout
    }

    /// POSTs a JSON body until it succeeds, fails for good, or the deadline
    /// passes. `secrets` are redacted from every message.
    pub(crate) async fn post_json(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &Value,
        started: Instant,
        deadline: Duration,
        secrets: &[&str],
    ) -> Result<HttpReply, VlmError> {
        let payload = serde_json::to_vec(body)
            .map_err(|e| VlmError::Config { message: format!("request body cannot be serialized: {e}") })?;
        let deadline_at = started + deadline;
        let timeout_error = VlmError::Timeout { after_ms: ms(deadline) };
        let max_attempts = self.policy.max_attempts.max(1);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let remaining = deadline_at.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(timeout_error);
            }
            let budget = self.policy.attempt_timeout.map_or(remaining, |t| t.min(remaining));
            let attempt_start = Instant::now();
            let send = self.attempt(url, &headers, payload.clone(), secrets);
            let outcome = match tokio::time::timeout(budget, send).await {
                Ok(outcome) => outcome,
                Err(_) if budget >= remaining => {
                    tracing::warn!(provider = self.provider, attempt, deadline_ms = ms(deadline), "VLM call timed out");
                    return Err(timeout_error);
                }
                Err(_) => Outcome::Retry(
                    VlmError::Connection {
                        message: format!("no response within the {} ms attempt timeout", ms(budget)),
                    },
                    None,
                ),
            };
            let elapsed_ms = attempt_start.elapsed().as_secs_f64() * 1e3;
            let (error, asked_wait) = match outcome {
                Outcome::Success(body) => {
                    tracing::debug!(
                        provider = self.provider,
                        attempt,
                        elapsed_ms,
                        bytes = body.len(),
                        "VLM attempt got a 2xx response"
                    );
                    return Ok(HttpReply { body, attempts: attempt });
                }
                Outcome::Fatal(e) => {
                    tracing::warn!(provider = self.provider, attempt, elapsed_ms, error = %e, "VLM attempt failed; not retryable");
                    return Err(e);
                }
                Outcome::Retry(e, wait) => (e, wait),
            };
            if attempt >= max_attempts {
                tracing::warn!(provider = self.provider, attempt, elapsed_ms, error = %error, "VLM attempt failed; attempts used up");
                return Err(error);
            }
            let delay = self.delay(attempt, asked_wait);
            if Instant::now() + delay >= deadline_at {
                tracing::warn!(provider = self.provider, attempt, elapsed_ms, error = %error, delay_ms = ms(delay),
                    "VLM attempt failed; no time left to retry before the deadline");
                return Err(error);
            }
            tracing::warn!(provider = self.provider, attempt, elapsed_ms, error = %error, delay_ms = ms(delay),
                "VLM attempt failed; retrying");
            tokio::time::sleep(delay).await;
        }
    }

    /// The wait before retry number `attempt`: the server's (capped, plus up
    /// to 10 % jitter) or exponential back-off with equal jitter.
    fn delay(&self, attempt: u32, asked: Option<Duration>) -> Duration {
        let cap = self.policy.max_delay;
        let mut rng = rand::rng();
        match asked {
            Some(wait) => {
                let wait = wait.min(cap);
                wait + wait.mul_f64(rng.random_range(0.0..=0.1))
            }
            None => match self.policy.backoff {
                RetryBackoff::Exponential => {
                    let exp = self.policy.base_delay.saturating_mul(1 << (attempt - 1).min(16)).min(cap);
                    exp.mul_f64(rng.random_range(0.5..=1.0))
                }
                RetryBackoff::Linear => self.policy.base_delay.saturating_mul(attempt).min(cap),
            },
        }
    }

    async fn attempt(&self, url: &str, headers: &HeaderMap, payload: Vec<u8>, secrets: &[&str]) -> Outcome {
        let transport_error = |e: reqwest::Error| {
            let message = redact(&nav_core::error::error_chain(&e), secrets);
            if e.is_builder() {
                return Outcome::Fatal(VlmError::Config { message: format!("invalid request: {message}") });
            }
            let error = VlmError::Connection { message };
            if error.link_fault().is_some() {
                // refused, DNS, TLS: retrying within the call cannot help, and the run ends on it
                Outcome::Fatal(error)
            } else {
                Outcome::Retry(error, None)
            }
        };
        let request = self
            .client
            .post(url)
            .headers(self.extra_headers.clone())
            .headers(headers.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(payload);
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => return transport_error(e),
        };
        let status = response.status().as_u16();
        let response_headers = response.headers().clone();
        let body = match self.read_capped(response).await {
            Ok(Ok(b)) => b,
            Ok(Err(too_big)) => return Outcome::Fatal(too_big),
            Err(e) => return transport_error(e),
        };
        match status {
            200..=299 => Outcome::Success(body),
            429 => {
                let wait = retry_after(&response_headers, &body);
                Outcome::Retry(VlmError::RateLimited { retry_after_s: wait.map(|w| w.as_secs_f64()) }, wait)
            }
            500..=599 => {
                let message = redact(&error_message(&body), secrets);
                let wait = if status == 503 { retry_after(&response_headers, &body) } else { None };
                Outcome::Retry(VlmError::Http { status, message }, wait)
            }
            _ => Outcome::Fatal(VlmError::Http { status, message: redact(&error_message(&body), secrets) }),
        }
    }
}

impl HttpTransport {
    /// Reads a response body of at most `max_reply_bytes`; a larger one
    /// (announced or actual) is a clear [`VlmError::InvalidResponse`]
    /// before more of it is held in memory.
    async fn read_capped(&self, mut response: reqwest::Response) -> Result<Result<Vec<u8>, VlmError>, reqwest::Error> {
        let cap = self.max_reply_bytes;
        let too_big = |what: String| {
            Ok(Err(VlmError::InvalidResponse {
                message: format!("the reply body is {what}, over the {cap}-byte limit (vlm.max_reply_bytes)"),
            }))
        };
        if let Some(len) = response.content_length().filter(|&l| l > cap as u64) {
            return too_big(format!("{len} bytes"));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            if body.len() + chunk.len() > cap {
                return too_big(format!("more than {cap} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Ok(body))
    }
}

/// Fills in what every backend adds to a decoded reply: latency, attempts,
/// model id and cost; and logs the call. Errors have `secrets` redacted.
pub(crate) fn finish(
    decoded: Result<VlmResponse, VlmError>,
    reply: &HttpReply,
    started: Instant,
    configured_model: &str,
    prices: &PriceTable,
    provider: &'static str,
    secrets: &[&str],
) -> Result<VlmResponse, VlmError> {
    let mut response = match decoded {
        Ok(r) => r,
        Err(e) => {
            let e = redact_error(e, secrets);
            tracing::warn!(provider, attempts = reply.attempts, error = %e, "VLM response rejected");
            return Err(e);
        }
    };
    scrub_reply(&mut response, secrets);
    if !response.usage.is_plausible() {
        // a negative, fractional or text count reads as u64::MAX (wire::count)
        let shown = |n: u64| if n == u64::MAX { "not a count".to_string() } else { n.to_string() };
        let u = &response.usage;
        // The call happened (and a paid one cost money): its answer is used, and it is counted as a
        // reply without usage, so a priced model's call is billed on the estimate
        // (`bill_missing_usage`) and a spending limit still sees it.
        tracing::warn!(
            provider,
            "implausible token usage (prompt {}, completion {}, cached {}, cache write {}; each must be a whole \
             number from 0 to {}): counted as a reply without usage",
            shown(u.prompt_tokens),
            shown(u.completion_tokens),
            shown(u.cached_tokens),
            shown(u.cache_write_tokens),
            crate::vlm::Usage::MAX_CALL_TOKENS
        );
        response.usage = crate::vlm::Usage::default();
    }
    response.latency_ms = started.elapsed().as_secs_f64() * 1e3;
    response.attempts = reply.attempts;
    if response.model.is_empty() {
        response.model = configured_model.to_string();
    }
    response.cost_usd =
        prices.cost(&response.model, &response.usage).or_else(|| prices.cost(configured_model, &response.usage));
    tracing::info!(
        provider,
        model = %response.model,
        latency_ms = response.latency_ms,
        attempts = response.attempts,
        prompt_tokens = response.usage.prompt_tokens,
        completion_tokens = response.usage.completion_tokens,
        cached_tokens = response.usage.cached_tokens,
        tool_calls = response.tool_calls.len(),
        "VLM call finished"
    );
    Ok(response)
}

/// Bills a reply of a priced model that reports fewer prompt tokens than
/// the request's text can be ([`Usage::prompt_floor`](crate::vlm::Usage::prompt_floor):
/// no usage at all, zero or one input token; a proxy that strips `usage`,
/// say) on [`Usage::estimate`](crate::vlm::Usage::estimate), so a spending
/// limit still sees it; warns once per process. Unpriced models (local
/// servers, which often leave usage out) are left at zero.
pub(crate) fn bill_missing_usage(
    response: &mut VlmResponse,
    request: &crate::vlm::VlmRequest,
    prices: &PriceTable,
    configured_model: &str,
) {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let price = prices.get(&response.model).or_else(|| prices.get(configured_model));
    let Some(price) = price.filter(|p| p.input_per_mtok > 0.0 || p.output_per_mtok > 0.0) else { return };
    // no real call reads (next to) no input: fewer prompt tokens than the request's text can be is no count
    if response.usage.prompt_tokens >= crate::vlm::Usage::prompt_floor(request) {
        return;
    }
    let estimate = crate::vlm::Usage::estimate(request, response);
    response.usage.prompt_tokens = estimate.prompt_tokens;
    response.usage.completion_tokens = response.usage.completion_tokens.max(estimate.completion_tokens);
    response.usage_estimated = true;
    response.cost_usd = Some(price.cost(&response.usage));
    if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        tracing::warn!(
            model = %response.model,
            prompt_tokens = response.usage.prompt_tokens,
            completion_tokens = response.usage.completion_tokens,
            "the reply carries no token usage; billing a high estimate (4 characters a token, {} an image) so the \
             spending limit still counts it",
            crate::vlm::Usage::ESTIMATED_IMAGE_TOKENS
        );
    }
}

/// Removes `secrets` from a reply that echoes them (text, refusal, model
/// id, finish reason, tool call ids, names and arguments), so the step log and the terminal never show a key.
fn scrub_reply(response: &mut VlmResponse, secrets: &[&str]) {
    let secrets: Vec<&str> = secrets.iter().copied().filter(|s| s.trim().len() >= 6).collect();
    // the key whole, a piece of it, reversed or encoded (see `redact_secrets`)
    let leaks = |t: &str| crate::vlm::redact::redact_secrets(t, &secrets) != t;
    if leaks(&response.text) {
        response.text = redact(&response.text, &secrets);
    }
    if let Some(r) = response.refusal.as_mut().filter(|r| leaks(r)) {
        *r = redact(r, &secrets);
    }
    // the fields a server fills in that nav prints and logs too
    for field in [Some(&mut response.model), response.finish_reason.as_mut()].into_iter().flatten() {
        if leaks(field) {
            *field = redact(field, &secrets);
        }
    }
    for call in &mut response.tool_calls {
        if leaks(&call.id) || leaks(&call.name) {
            call.id = redact(&call.id, &secrets);
            call.name = redact(&call.name, &secrets);
        }
        if leaks(&call.arguments.to_string()) {
            let clean = redact(&call.arguments.to_string(), &secrets);
            call.arguments = serde_json::from_str(&clean).unwrap_or(Value::String(clean));
        }
    }
}

/// The error with `secrets` (and anything key-shaped) removed from its text.
pub(crate) fn redact_error(error: VlmError, secrets: &[&str]) -> VlmError {
    let clean = |s: String| truncate_chars(&redact(&s, secrets), 600);
    match error {
        VlmError::Http { status, message } => VlmError::Http { status, message: clean(message) },
        VlmError::Connection { message } => VlmError::Connection { message: clean(message) },
        VlmError::InvalidResponse { message } => VlmError::InvalidResponse { message: clean(message) },
        VlmError::Refused { message } => VlmError::Refused { message: clean(message) },
        VlmError::Config { message } => VlmError::Config { message: clean(message) },
        VlmError::TokenCommand { command, message } => VlmError::TokenCommand { command, message: clean(message) },
        other => other,
    }
}

/// The deadline of one call: the request's timeout or the transport's.
pub(crate) fn call_deadline(requested: Option<Duration>, transport: &HttpTransport) -> Duration {
    requested.unwrap_or_else(|| transport.default_timeout())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_or_error_echoing_the_key_altered_is_scrubbed() {
        use base64::Engine as _;
        let key = "sk-navkit-test-SECRET123";
        let reversed: String = key.chars().rev().collect();
        let body = format!(
            "bad key ...SECRET123; {reversed}; {}",
            base64::engine::general_purpose::STANDARD.encode(key.as_bytes())
        );
        let mut r = VlmResponse::from_text(body.clone());
        scrub_reply(&mut r, &[key]);
        assert!(!r.text.contains("SECRET123") && !r.text.contains("321TERCES"), "{}", r.text);
        let e = redact_error(VlmError::Http { status: 400, message: body }, &[key]);
        let text = e.to_string();
        assert!(!text.contains("SECRET123") && !text.contains("321TERCES") && !text.contains("c2stbmF2"), "{text}");
    }

    #[test]
    fn absurd_usage_is_not_plausible_and_sums_saturate() {
        let mut u = crate::vlm::Usage { prompt_tokens: u64::MAX, ..Default::default() };
        assert!(!u.is_plausible());
        u += u;
        assert_eq!(u.prompt_tokens, u64::MAX);
        assert_eq!(u.total_tokens(), u64::MAX);
        let v = serde_json::json!({"prompt_tokens": -5, "completion_tokens": 3});
        assert_eq!(crate::vlm::wire::count(&v, "prompt_tokens"), u64::MAX);
        assert_eq!(crate::vlm::wire::count(&v, "missing"), 0);
    }

    #[test]
    fn retry_after_sources() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h, b""), None);
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h, b""), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&h, b""), Some(Duration::from_millis(150)));
        let google = br#"{"error": {"code": 429, "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"}]}}"#;
        assert_eq!(retry_after(&HeaderMap::new(), google), Some(Duration::from_millis(1500)));
        let mut date = HeaderMap::new();
        date.insert("retry-after", HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
        assert_eq!(retry_after(&date, b""), None);
    }

    #[test]
    fn delays_are_capped_and_jittered() {
        let cfg = BackendConfig { retry_base_delay_s: 1.0, max_retry_delay_s: 3.0, ..BackendConfig::default() };
        let t = HttpTransport::new("test", &cfg).unwrap();
        for _ in 0..50 {
            let d1 = t.delay(1, None);
            assert!(d1 >= Duration::from_millis(500) && d1 <= Duration::from_secs(1), "{d1:?}");
            let d5 = t.delay(5, None);
            assert!(d5 >= Duration::from_millis(1500) && d5 <= Duration::from_secs(3), "{d5:?}");
            let asked = t.delay(1, Some(Duration::from_secs(60)));
            assert!(asked >= Duration::from_secs(3) && asked <= Duration::from_millis(3300), "{asked:?}");
        }
    }

    #[test]
    fn linear_delays_grow_by_the_base_without_jitter() {
        let cfg = BackendConfig {
            retry_base_delay_s: 1.0,
            retry_backoff: RetryBackoff::Linear,
            max_retry_delay_s: 5.0,
            ..BackendConfig::default()
        };
        let t = HttpTransport::new("test", &cfg).unwrap();
        for _ in 0..10 {
            assert_eq!(t.delay(1, None), Duration::from_secs(1));
            assert_eq!(t.delay(2, None), Duration::from_secs(2));
            assert_eq!(t.delay(9, None), Duration::from_secs(5));
        }
    }

    #[test]
    fn redact_error_cleans_every_message() {
        let e = redact_error(VlmError::Http { status: 401, message: "bad key k-123456789".into() }, &["k-123456789"]);
        assert_eq!(e, VlmError::Http { status: 401, message: "bad key [REDACTED]".into() });
    }
}
