//! The Streamable HTTP transport, with the checks a server that drives a
//! robot needs in front of it.
//!
//! - **Bind**: [`HttpOptions::check`] refuses an address other machines can
//!   reach (not loopback) without a bearer token.
//! - **Bearer token**: when one is set, every request must carry
//!   `Authorization: Bearer <token>`; one without it, or with another
//!   token, gets `401 Unauthorized` (compared in constant time). The token
//!   is never logged nor quoted in any error.
//! - **Origin** (the MCP Streamable HTTP transport's DNS-rebinding rule): a
//!   request with an `Origin` header is refused (`403`) unless the origin is
//!   a loopback one (`http://localhost`, `http://127.0.0.1`, `http://[::1]`,
//!   any port) or listed in [`HttpOptions::allowed_origins`]. Requests
//!   without `Origin` (non-browser clients) pass. On a loopback bind the
//!   `Host` header must be a loopback name as well.
//! - **Size**: a request body over [`HttpOptions::max_body_bytes`] gets
//!   `413` (checked on `Content-Length` and again while streaming).
//! - **Rate**: at most [`HttpOptions::rate_per_s`] requests a second on
//!   average (bursts of twice that) across the server; more get `429`.

use super::{McpError, McpRobot};
use bytes::Bytes;
use http_body_util::BodyExt as _;
use http_body_util::Full;
use http_body_util::combinators::BoxBody;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The path the MCP endpoint is served on.
pub const MCP_PATH: &str = "/mcp";

/// The environment variable `nav mcp` reads the bearer token from.
pub const TOKEN_ENV: &str = "NAVKIT_MCP_TOKEN";

/// How the HTTP transport is served.
#[derive(Clone)]
pub struct HttpOptions {
    /// Where to listen.
    pub bind: SocketAddr,
    /// The bearer token every request must carry (required off loopback).
    pub token: Option<String>,
    /// Browser origins allowed besides the loopback ones
    /// (`https://app.example.com`, scheme and host, optional port).
    pub allowed_origins: Vec<String>,
    /// Largest request body, bytes.
    pub max_body_bytes: usize,
    /// Mean request rate allowed, per second (bursts of twice this).
    pub rate_per_s: f64,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("bind", &self.bind)
            .field("token", &self.token.as_ref().map(|_| "[REDACTED]"))
            .field("allowed_origins", &self.allowed_origins)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("rate_per_s", &self.rate_per_s)
            .finish()
    }
}

impl HttpOptions {
    /// Loopback on `port`, no token, 1 MiB bodies, 50 requests a second.
    pub fn loopback(port: u16) -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], port)),
            token: None,
            allowed_origins: Vec::new(),
            max_body_bytes: 1 << 20,
            rate_per_s: 50.0,
        }
    }

    /// Checks the options before anything listens.
    ///
    /// # Errors
    ///
    /// [`McpError::Config`]: a non-loopback address without a token, an
    /// empty token, or a limit out of range.
    pub fn check(&self) -> Result<(), McpError> {
        if self.token.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err(McpError::Config("the bearer token is empty".into()));
        }
        if !self.bind.ip().is_loopback() && self.token.is_none() {
            return Err(McpError::Config(format!(
                "{} is not a loopback address: other machines could drive the robot. Set an access token \
                 (--token or {TOKEN_ENV}) to serve there",
                self.bind.ip()
            )));
        }
        if !(1024..=(64 << 20)).contains(&self.max_body_bytes) {
            return Err(McpError::Config("the body limit must be 1 KiB to 64 MiB".into()));
        }
        if !(self.rate_per_s > 0.0 && self.rate_per_s <= 100_000.0) {
            return Err(McpError::Config("the rate limit must be in (0, 100000] requests a second".into()));
        }
        Ok(())
    }
}

/// A token bucket.
struct RateLimit {
    tokens: f64,
    last: Instant,
    rate: f64,
}

impl RateLimit {
    fn allow(&mut self, now: Instant) -> bool {
        let burst = (2.0 * self.rate).max(1.0);
        self.tokens = (self.tokens + now.duration_since(self.last).as_secs_f64() * self.rate).min(burst);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Serves `robot` over Streamable HTTP at `options.bind` + [`MCP_PATH`]
/// until `shutdown` completes. `on_listening` is called with the bound
/// address (port 0 picks a free one) before the first request is taken.
///
/// # Errors
///
/// [`McpError::Config`] from [`HttpOptions::check`]; [`McpError::Transport`]
/// when the address cannot be bound.
pub async fn serve_http(
    robot: McpRobot,
    options: HttpOptions,
    on_listening: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()>,
) -> Result<(), McpError> {
    options.check()?;
    let listener = tokio::net::TcpListener::bind(options.bind)
        .await
        .map_err(|e| McpError::Transport(format!("cannot listen on {}: {e}", options.bind)))?;
    let local = listener.local_addr().map_err(|e| McpError::Transport(e.to_string()))?;
    let mut config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(options.max_body_bytes)
        .disable_allowed_origins();
    if !local.ip().is_loopback() {
        // the bearer token guards a reachable server; any Host name may point at it
        config = config.disable_allowed_hosts();
    }
    let factory_robot = robot.clone();
    let service = StreamableHttpService::new(
        move || Ok(factory_robot.handler()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let gate = Arc::new(Gate {
        token: options.token.clone(),
        origins: options.allowed_origins.clone(),
        max_body: options.max_body_bytes,
        rate: Mutex::new(RateLimit {
            tokens: 2.0 * options.rate_per_s,
            last: Instant::now(),
            rate: options.rate_per_s,
        }),
    });
    on_listening(local);
    tokio::pin!(shutdown);
    loop {
        let (stream, _peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let service = service.clone();
        let gate = gate.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
                let service = service.clone();
                let gate = gate.clone();
                async move { Ok::<_, Infallible>(gate.handle(req, &service).await) }
            });
            let conn = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), svc);
            if let Err(e) = conn.await {
                tracing::debug!("connection ended: {e}");
            }
        });
    }
    Ok(())
}

/// The checks in front of the MCP service.
struct Gate {
    token: Option<String>,
    origins: Vec<String>,
    max_body: usize,
    rate: Mutex<RateLimit>,
}

type HttpResponse = Response<BoxBody<Bytes, Infallible>>;

impl Gate {
    async fn handle(
        &self,
        req: Request<Incoming>,
        service: &StreamableHttpService<super::NavMcpServer, LocalSessionManager>,
    ) -> HttpResponse {
        if let Err(r) = self.admit(&req) {
            return *r;
        }
        service.handle(req).await
    }

    /// Every check but the streaming body limit (the service's own).
    fn admit(&self, req: &Request<Incoming>) -> Result<(), Box<HttpResponse>> {
        let allowed = self.rate.lock().map(|mut r| r.allow(Instant::now())).unwrap_or(false);
        if !allowed {
            return Err(Box::new(plain(StatusCode::TOO_MANY_REQUESTS, "Too many requests: slow down.")));
        }
        if req.uri().path() != MCP_PATH {
            return Err(Box::new(plain(StatusCode::NOT_FOUND, "Not found: the MCP endpoint is /mcp.")));
        }
        if let Some(token) = &self.token {
            let given = req
                .headers()
                .get(hyper::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or("");
            if !same(given.trim().as_bytes(), token.as_bytes()) {
                let mut r = plain(StatusCode::UNAUTHORIZED, "Unauthorized: a valid bearer token is required.");
                r.headers_mut()
                    .insert(hyper::header::WWW_AUTHENTICATE, hyper::header::HeaderValue::from_static("Bearer"));
                return Err(Box::new(r));
            }
        }
        if let Some(origin) = req.headers().get(hyper::header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            if !origin_allowed(origin, &self.origins) {
                return Err(Box::new(plain(StatusCode::FORBIDDEN, "Forbidden: this Origin may not use the server.")));
            }
        }
        let length = req
            .headers()
            .get(hyper::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if length.is_some_and(|n| n > self.max_body as u64) {
            return Err(Box::new(plain(StatusCode::PAYLOAD_TOO_LARGE, "Payload too large.")));
        }
        Ok(())
    }
}

/// A short text response.
fn plain(status: StatusCode, text: &'static str) -> HttpResponse {
    let mut r = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("text/plain"));
    r
}

/// Equal bytes, compared in time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    let mut diff = (a.len() ^ b.len()) as u8 | u8::from(a.len() != b.len());
    for (i, y) in b.iter().enumerate() {
        diff |= a.get(i).copied().unwrap_or(0) ^ y;
    }
    diff == 0
}

/// A loopback origin (any port) or one of `allowed` (exactly, or without
/// its port when the entry names none).
pub fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    let o = origin.trim().to_ascii_lowercase();
    let Some(rest) = o.strip_prefix("http://").or_else(|| o.strip_prefix("https://")) else {
        return false;
    };
    let host = if rest.starts_with('[') {
        rest.split(']').next().map(|h| format!("{h}]")).unwrap_or_default()
    } else {
        rest.split(':').next().unwrap_or("").to_owned()
    };
    if matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]") {
        return true;
    }
    allowed.iter().any(|a| {
        let a = a.trim().trim_end_matches('/').to_ascii_lowercase();
        a == o || o.rsplit_once(':').is_some_and(|(without_port, _)| without_port == a && !a.ends_with(']'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_loopback_or_listed() {
        assert!(origin_allowed("http://localhost:3000", &[]));
        assert!(origin_allowed("http://127.0.0.1", &[]));
        assert!(origin_allowed("http://[::1]:8080", &[]));
        assert!(!origin_allowed("http://evil.example", &[]));
        assert!(!origin_allowed("http://localhost.evil.example", &[]));
        assert!(!origin_allowed("null", &[]));
        let listed = vec!["https://app.example.com".to_owned()];
        assert!(origin_allowed("https://app.example.com", &listed));
        assert!(origin_allowed("https://app.example.com:8443", &listed));
        assert!(!origin_allowed("https://app.example.com.evil", &listed));
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"secret-token", b"secret-token"));
        assert!(!same(b"secret-toke", b"secret-token"));
        assert!(!same(b"secret-token-x", b"secret-token"));
        assert!(!same(b"", b"secret-token"));
    }

    #[test]
    fn remote_bind_needs_a_token() {
        let mut o = HttpOptions::loopback(0);
        assert!(o.check().is_ok());
        o.bind = "0.0.0.0:0".parse().unwrap_or(o.bind);
        let e = o.check().unwrap_err().to_string();
        assert!(e.contains("access token"), "{e}");
        o.token = Some("s3cret-value".into());
        assert!(o.check().is_ok());
        assert!(!format!("{o:?}").contains("s3cret"));
    }
}
