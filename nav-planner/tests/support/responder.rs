//! An HTTP/1.1 server on 127.0.0.1:0 that answers every request with a
//! function of its JSON body (status and JSON reply), recording the bodies:
//! a model double whose answers depend on what it is asked (a protocol
//! reply, the request's own token count as usage, a 400 for a field it
//! rejects). Every response says `Connection: close`.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The answer to one request: status and JSON body.
pub type Answer = (u16, Value);

/// The running server; stops when dropped.
pub struct Responder {
    addr: SocketAddr,
    bodies: Arc<Mutex<Vec<Value>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Responder {
    /// Starts a server answering each request body with `answer(body)`.
    pub async fn start(answer: impl Fn(&Value) -> Answer + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let answer = Arc::new(answer);
        let shared = Arc::clone(&bodies);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (answer, shared) = (Arc::clone(&answer), Arc::clone(&shared));
                tokio::spawn(async move { serve(stream, &*answer, &shared).await });
            }
        });
        Self { addr, bodies, task }
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request body so far, in arrival order.
    pub fn bodies(&self) -> Vec<Value> {
        self.bodies.lock().unwrap().clone()
    }
}

async fn serve(mut stream: TcpStream, answer: &(dyn Fn(&Value) -> Answer + Send + Sync), bodies: &Mutex<Vec<Value>>) {
    let Some(body) = read_body(&mut stream).await else { return };
    let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    bodies.lock().unwrap().push(value.clone());
    let (status, reply) = answer(&value);
    let text = reply.to_string();
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        text.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(text.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Reads one request's body (by Content-Length); `None` at EOF.
async fn read_body(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let length: usize =
        head.lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    Some(body)
}

/// A chat-completions reply with assistant `content` and the given usage.
pub fn chat_text(content: &str, prompt_tokens: u64, completion_tokens: u64) -> Value {
    serde_json::json!({
        "id": "chatcmpl-double", "object": "chat.completion", "model": "double",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    })
}

/// A chat-completions reply with one tool call and the given usage.
pub fn chat_tool_call(name: &str, arguments: &Value, prompt_tokens: u64, completion_tokens: u64) -> Value {
    serde_json::json!({
        "id": "chatcmpl-double", "object": "chat.completion", "model": "double",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function",
                            "function": {"name": name, "arguments": arguments.to_string()}}]}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    })
}
