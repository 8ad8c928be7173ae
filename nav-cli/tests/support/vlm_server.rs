//! An OpenAI-compatible chat-completions server on 127.0.0.1:0 that
//! answers the first `answered` requests with a scripted tool call (or a
//! scripted text reply) and then goes silent: later requests are read and
//! recorded but never answered (the connection stays open), like a model API
//! that hangs. Answers can take a set latency, like a real model's.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub struct SilentVlm {
    addr: std::net::SocketAddr,
    arrivals: Arc<Mutex<Vec<Instant>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SilentVlm {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SilentVlm {
    /// Answers the first `answered` requests with `tool(arguments)`.
    #[allow(dead_code)]
    pub async fn start(answered: usize, tool: &str, arguments: serde_json::Value) -> Self {
        Self::spawn(answered, tool_body(tool, &arguments), Duration::ZERO).await
    }

    /// Answers every request with `tool(arguments)`, each after `latency`.
    #[allow(dead_code)]
    pub async fn start_slow(latency: Duration, tool: &str, arguments: serde_json::Value) -> Self {
        Self::spawn(usize::MAX, tool_body(tool, &arguments), latency).await
    }

    /// Answers the first `answered` requests with the assistant text
    /// `content`, reporting 900 prompt and 30 completion tokens each.
    #[allow(dead_code)]
    pub async fn start_text(answered: usize, content: &str) -> Self {
        let body = serde_json::json!({
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": "test-model",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 30, "total_tokens": 930},
        });
        Self::start_with_body(answered, body).await
    }

    /// Answers the first `answered` requests with the chat-completions `body`.
    pub async fn start_with_body(answered: usize, body: serde_json::Value) -> Self {
        Self::spawn(answered, body, Duration::ZERO).await
    }

    async fn spawn(answered: usize, body: serde_json::Value, latency: Duration) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let body = body.to_string();
        let shared = Arc::clone(&arrivals);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, Arc::clone(&shared), answered, body.clone(), latency));
            }
        });
        Self { addr, arrivals, task }
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// When each request arrived.
    pub fn arrivals(&self) -> Vec<Instant> {
        self.arrivals.lock().unwrap().clone()
    }
}

/// Reads one request; answers it while under the quota (then closes),
/// else holds the connection open without a word.
async fn serve(
    mut stream: TcpStream,
    arrivals: Arc<Mutex<Vec<Instant>>>,
    answered: usize,
    body: String,
    latency: Duration,
) {
    if !read_request(&mut stream).await {
        return;
    }
    let n = {
        let mut a = arrivals.lock().unwrap();
        a.push(Instant::now());
        a.len()
    };
    if n > answered {
        // silent: keep the socket open until the client gives up
        let mut sink = [0u8; 1024];
        while matches!(stream.read(&mut sink).await, Ok(k) if k > 0) {}
        return;
    }
    tokio::time::sleep(latency).await;
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// A chat-completions reply calling `tool(arguments)`, 900 prompt and 30
/// completion tokens.
fn tool_body(tool: &str, arguments: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "test-model",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function",
                            "function": {"name": tool, "arguments": arguments.to_string()}}]}}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 30, "total_tokens": 930},
    })
}

/// Reads one request (head and Content-Length body); false at EOF.
async fn read_request(stream: &mut TcpStream) -> bool {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let length: usize =
        head.lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    let mut have = buf.len() - head_end - 4;
    while have < length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => have += n,
        }
    }
    true
}

/// A server on 127.0.0.1:0 that answers every request with one HTTP
/// status and a provider-style JSON error body (401 for a bad key, 404 for
/// an unknown model), counting the requests.
#[allow(dead_code)]
pub struct StatusServer {
    addr: std::net::SocketAddr,
    requests: Arc<Mutex<usize>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for StatusServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[allow(dead_code)]
impl StatusServer {
    /// Answers every request with `status` and `{"error": {"message": message}}`.
    pub async fn start(status: u16, message: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let requests = Arc::new(Mutex::new(0));
        let body = serde_json::json!({"error": {"message": message, "type": "invalid_request_error"}}).to_string();
        let shared = Arc::clone(&requests);
        let task = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let (body, shared) = (body.clone(), Arc::clone(&shared));
                tokio::spawn(async move {
                    if !read_request(&mut stream).await {
                        return;
                    }
                    *shared.lock().unwrap() += 1;
                    let head = format!(
                        "HTTP/1.1 {status} Error\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                         Connection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(head.as_bytes()).await;
                    let _ = stream.write_all(body.as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Self { addr, requests, task }
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Requests answered so far.
    pub fn requests(&self) -> usize {
        *self.requests.lock().unwrap()
    }
}

/// `http://127.0.0.1:PORT/v1` for a port nothing listens on (bound, then
/// closed: connections are refused).
#[allow(dead_code)]
pub fn closed_base_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let port = listener.local_addr().expect("local addr").port();
    drop(listener);
    format!("http://127.0.0.1:{port}/v1")
}
