//! The reply cap against a server that streams an endless chunked body
//! (`Transfer-Encoding: chunked`, no Content-Length, so the size is unknown
//! up front): the backend stops reading at `max_reply_bytes`, fails with an
//! error naming the limit, and closes the connection — the server could
//! write only a bounded amount before its writes failed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nav_planner::vlm::{BackendConfig, OpenAiBackend, Provider, VisionLanguageModel, VlmError, VlmRequest};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Starts the endless server; returns its base URL and the bytes it managed to write.
async fn endless_server() -> (String, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let written = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&written);
    tokio::spawn(async move {
        let Ok((mut stream, _)) = listener.accept().await else { return };
        let mut buf = vec![0u8; 1 << 16];
        let mut seen = Vec::new();
        while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
        if stream.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        let start = r#"{"choices": [{"index": 0, "message": {"role": "assistant", "content": ""#;
        let filler = "x".repeat(64 * 1024);
        let mut first = true;
        loop {
            let data = if first { format!("{start}{filler}") } else { filler.clone() };
            first = false;
            let chunk = format!("{:x}\r\n{data}\r\n", data.len());
            if stream.write_all(chunk.as_bytes()).await.is_err() {
                return;
            }
            counter.fetch_add(data.len() as u64, Ordering::SeqCst);
        }
    });
    (format!("http://{addr}/v1"), written)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_chunked_reply_stops_at_the_cap_with_a_clear_error() {
    let (url, written) = endless_server().await;
    let mut cfg = BackendConfig::new(Provider::OpenAi);
    cfg.base_url = Some(url);
    cfg.max_reply_bytes = 1 << 20;
    cfg.max_attempts = 1;
    cfg.timeout_s = 20.0;
    let vlm = OpenAiBackend::new(&cfg).unwrap();
    let started = Instant::now();
    let err = tokio::time::timeout(Duration::from_secs(30), vlm.complete(VlmRequest::new("s").text("u")))
        .await
        .expect("the call ends instead of reading forever")
        .unwrap_err();
    assert!(matches!(err, VlmError::InvalidResponse { .. }), "{err:?}");
    assert!(err.to_string().contains("over the 1048576-byte limit (vlm.max_reply_bytes)"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "stopped at the cap, not at the deadline");
    drop(vlm);
    // the connection is closed: the server's writes fail after what socket buffers hold
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = written.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = written.load(Ordering::SeqCst);
    assert_eq!(before, after, "the server can no longer write");
    assert!(after < 64 << 20, "bounded: {after} bytes were written in all");
    println!("reply cap 1 MiB: the server wrote {:.1} MiB before the client closed", after as f64 / (1 << 20) as f64);
}
