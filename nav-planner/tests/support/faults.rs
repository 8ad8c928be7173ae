//! The fault suite every backend runs against the scripted server.

use std::time::Duration;

use serde_json::json;

use nav_planner::vlm::{VlmError, VlmRequest};

use super::server::{Reply, ScriptedServer};
use super::{Kit, TEST_KEY, logs};

fn simple(timeout: Duration) -> VlmRequest {
    VlmRequest::new("system").text("hello").timeout(timeout)
}

fn assert_clean(text: &str) {
    assert!(!text.contains(TEST_KEY), "the key leaked: {text}");
    assert!(!text.contains("5ecret"), "part of the key leaked: {text}");
}

/// The server answers after the deadline: a timeout at the deadline, no
/// retry (there is no time left).
pub async fn slow_answer_times_out(kit: &Kit) {
    let server = ScriptedServer::start(vec![Reply::json((kit.ok)()).delayed(Duration::from_secs(3))]).await;
    let vlm = kit.backend(&server.url());
    let err = vlm.complete(simple(Duration::from_millis(300))).await.unwrap_err();
    assert_eq!(err, VlmError::Timeout { after_ms: 300 }, "{}", kit.name);
    assert_eq!(err.to_string(), "VLM call timed out after 300 ms");
    assert_eq!(server.request_count(), 1);
}

/// With an attempt timeout, a hung attempt is abandoned and retried within
/// the call's deadline.
pub async fn hung_attempt_is_retried(kit: &Kit) {
    let server =
        ScriptedServer::start(vec![Reply::json((kit.ok)()).delayed(Duration::from_secs(3)), Reply::json((kit.ok)())])
            .await;
    let vlm = kit.backend_with(&server.url(), |c| c.attempt_timeout_s = Some(0.2));
    let reply = vlm.complete(simple(Duration::from_secs(2))).await.unwrap();
    assert_eq!((reply.text.as_str(), reply.attempts), ("ok", 2), "{}", kit.name);
    assert_eq!(server.request_count(), 2);
}

/// 429 with `Retry-After: 1`: the second attempt comes at least a second
/// later and succeeds.
pub async fn rate_limit_honours_retry_after(kit: &Kit) {
    let server = ScriptedServer::start(vec![Reply::rate_limited("1"), Reply::json((kit.ok)())]).await;
    let vlm = kit.backend(&server.url());
    let reply = vlm.complete(simple(Duration::from_secs(3))).await.unwrap();
    assert_eq!((reply.text.as_str(), reply.attempts), ("ok", 2), "{}", kit.name);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let gap = requests[1].at - requests[0].at;
    assert!(gap >= Duration::from_secs(1), "retried after {gap:?}, before Retry-After");
    assert!(reply.latency_ms >= 1000.0);
}

/// 429 on every attempt: three attempts, then `RateLimited`.
pub async fn rate_limit_exhausts_attempts(kit: &Kit) {
    let server =
        ScriptedServer::start(vec![Reply::rate_limited("0"), Reply::rate_limited("0"), Reply::rate_limited("0")]).await;
    let vlm = kit.backend(&server.url());
    let err = vlm.complete(simple(Duration::from_secs(2))).await.unwrap_err();
    assert_eq!(err, VlmError::RateLimited { retry_after_s: Some(0.0) }, "{}", kit.name);
    assert_eq!(server.request_count(), 3);
}

/// A `Retry-After` beyond the deadline is not waited for.
pub async fn rate_limit_beyond_deadline_fails_fast(kit: &Kit) {
    let server = ScriptedServer::start(vec![Reply::rate_limited("30")]).await;
    let vlm = kit.backend_with(&server.url(), |c| c.max_retry_delay_s = 60.0);
    let started = std::time::Instant::now();
    let err = vlm.complete(simple(Duration::from_millis(500))).await.unwrap_err();
    assert_eq!(err, VlmError::RateLimited { retry_after_s: Some(30.0) }, "{}", kit.name);
    assert!(started.elapsed() < Duration::from_millis(500), "waited for a retry that could not fit");
    assert_eq!(server.request_count(), 1);
}

/// 500 then success: retried once.
pub async fn server_error_is_retried(kit: &Kit) {
    let server = ScriptedServer::start(vec![Reply::server_error(500), Reply::json((kit.ok)())]).await;
    let vlm = kit.backend(&server.url());
    let reply = vlm.complete(simple(Duration::from_secs(2))).await.unwrap();
    assert_eq!((reply.text.as_str(), reply.attempts), ("ok", 2), "{}", kit.name);
    assert_eq!(server.request_count(), 2);
}

/// 5xx on every attempt: bounded attempts, then the last HTTP error.
pub async fn server_errors_exhaust_attempts(kit: &Kit) {
    let server =
        ScriptedServer::start(vec![Reply::server_error(503), Reply::server_error(500), Reply::server_error(502)]).await;
    let vlm = kit.backend(&server.url());
    let err = vlm.complete(simple(Duration::from_secs(2))).await.unwrap_err();
    assert_eq!(err, VlmError::Http { status: 502, message: "upstream failure".into() }, "{}", kit.name);
    assert_eq!(err.to_string(), "VLM provider returned HTTP 502: upstream failure");
    assert_eq!(server.request_count(), 3);
}

/// Other 4xx are never retried.
pub async fn client_error_is_not_retried(kit: &Kit) {
    let body = json!({"error": {"message": "image too large", "type": "invalid_request_error"}});
    let server = ScriptedServer::start(vec![Reply::status(400, body), Reply::json((kit.ok)())]).await;
    let vlm = kit.backend(&server.url());
    let err = vlm.complete(simple(Duration::from_secs(2))).await.unwrap_err();
    assert_eq!(err, VlmError::Http { status: 400, message: "[invalid_request_error] image too large".into() });
    assert_eq!(server.request_count(), 1, "{}", kit.name);
}

/// A reply over `max_reply_bytes` is an invalid response naming the limit,
/// not retried, and the key never shows.
pub async fn oversized_reply_is_rejected(kit: &Kit) {
    let mut big = (kit.ok)();
    big["padding"] = json!(format!("{}{}", super::TEST_KEY, "x".repeat(64 * 1024)));
    let server = ScriptedServer::start(vec![Reply::json(big.clone()), Reply::json(big)]).await;
    let vlm = kit.backend_with(&server.url(), |c| c.max_reply_bytes = 16 * 1024);
    let err = vlm.complete(simple(Duration::from_secs(2))).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, VlmError::InvalidResponse { .. }), "{}: {err:?}", kit.name);
    assert!(text.contains("over the 16384-byte limit (vlm.max_reply_bytes)"), "{text}");
    assert!(!text.contains(super::TEST_KEY));
    assert_eq!(server.request_count(), 1, "{}", kit.name);
}

/// A connection reset in the middle of the body is retried.
pub async fn reset_mid_body_is_retried(kit: &Kit) {
    let body = (kit.ok)().to_string();
    let server = ScriptedServer::start(vec![Reply::ResetMidBody { body }, Reply::json((kit.ok)())]).await;
    let vlm = kit.backend(&server.url());
    let reply = vlm.complete(simple(Duration::from_secs(2))).await.unwrap();
    assert_eq!((reply.text.as_str(), reply.attempts), ("ok", 2), "{}", kit.name);
    assert_eq!(server.request_count(), 2);
}

/// Resets on every attempt: a `Connection` error after three attempts.
pub async fn resets_exhaust_attempts(kit: &Kit) {
    let body = (kit.ok)().to_string();
    let server = ScriptedServer::start(vec![
        Reply::ResetMidBody { body: body.clone() },
        Reply::Close,
        Reply::ResetMidBody { body },
    ])
    .await;
    let vlm = kit.backend(&server.url());
    let err = vlm.complete(simple(Duration::from_secs(2))).await.unwrap_err();
    assert!(matches!(err, VlmError::Connection { .. }), "{}: {err:?}", kit.name);
    assert!(err.to_string().starts_with("could not reach the VLM provider: "), "{err}");
    assert_eq!(server.request_count(), 3);
}

/// Nothing listening: connection refused, retried, then `Connection`.
pub async fn refused_connection(kit: &Kit) {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let vlm = kit.backend(&format!("http://127.0.0.1:{port}"));
    let err = vlm.complete(simple(Duration::from_secs(2))).await.unwrap_err();
    assert!(matches!(err, VlmError::Connection { .. }), "{}: {err:?}", kit.name);
}

/// A 200 whose JSON is cut off: `InvalidResponse`, not retried (the
/// protocol layer decides what to do with a bad answer).
pub async fn truncated_json_is_invalid(kit: &Kit) {
    let full = (kit.ok)().to_string();
    let server = ScriptedServer::start(vec![Reply::raw(200, &full[..full.len() / 2])]).await;
    let vlm = kit.backend(&server.url());
    let err = vlm.complete(simple(Duration::from_secs(2))).await.unwrap_err();
    assert!(matches!(err, VlmError::InvalidResponse { .. }), "{}: {err:?}", kit.name);
    assert!(err.to_string().contains("truncated JSON in the response body"), "{err}");
    assert_eq!(server.request_count(), 1);
}

/// No choices / candidates / content.
pub async fn empty_answer_is_invalid(kit: &Kit) {
    let server = ScriptedServer::start(vec![Reply::json((kit.empty)())]).await;
    let vlm = kit.backend(&server.url());
    let err = vlm.complete(simple(Duration::from_secs(2))).await.unwrap_err();
    assert!(matches!(err, VlmError::InvalidResponse { .. }), "{}: {err:?}", kit.name);
    assert!(err.to_string().contains(kit.empty_message), "{err}");
}

/// The model refuses.
pub async fn refusal_is_refused(kit: &Kit) {
    let server = ScriptedServer::start(vec![Reply::json((kit.refusal)())]).await;
    let vlm = kit.backend(&server.url());
    let err = vlm.complete(simple(Duration::from_secs(2))).await.unwrap_err();
    assert!(matches!(err, VlmError::Refused { .. }), "{}: {err:?}", kit.name);
    assert!(err.to_string().contains(kit.refusal_message), "{err}");
    assert_eq!(server.request_count(), 1);
}

/// Provider error bodies that echo the key, retries and failures: the key
/// is in no error message and no log line, while the auth header did carry
/// it.
pub async fn secrets_never_leak(kit: &Kit) {
    let (logs, _guard) = logs::capture();
    let echo = |status: u16| {
        Reply::status(
            status,
            json!({"error": {"message": format!("Incorrect API key provided: {TEST_KEY}; Bearer {TEST_KEY}")}}),
        )
    };
    let server = ScriptedServer::start(vec![
        echo(500),
        Reply::rate_limited("0"),
        echo(502),
        echo(401),
        Reply::raw(200, &format!("{{\"broken\": \"{TEST_KEY}")),
    ])
    .await;
    let vlm = kit.backend(&server.url());
    let mut messages = Vec::new();
    for _ in 0..3 {
        let err = vlm.complete(simple(Duration::from_secs(2))).await.unwrap_err();
        messages.push(format!("{err} / {err:?}"));
    }
    assert_eq!(server.request_count(), 5, "{}: 3 attempts, then 1, then 1", kit.name);
    assert!(messages[0].contains("HTTP 502") && messages[0].contains("[REDACTED]"), "{}", messages[0]);
    assert!(messages[1].contains("HTTP 401"), "{}", messages[1]);
    assert!(messages[2].contains("invalid VLM response"), "{}", messages[2]);
    for m in &messages {
        assert_clean(m);
    }
    let log = logs.text();
    assert!(log.contains("retrying"), "attempts are logged: {log}");
    assert_clean(&log);
    assert_clean(&format!("{vlm:?}", vlm = vlm.describe()));
    let sent = server.requests();
    let carried = sent[0].headers.values().any(|v| v.contains(TEST_KEY));
    assert!(carried, "the credential header was sent");
}
