//! A scripted HTTP/1.1 server on 127.0.0.1:0 for backend tests.
//!
//! Each accepted request is recorded (method, path, lower-cased headers,
//! JSON body, arrival time) and answered with the next [`Reply`] of the
//! script, including faults: delays, 429 with `Retry-After`, 5xx, a body cut
//! off mid-way (headers promise more bytes than are sent, then the socket is
//! reset), truncated JSON and a plain connection close. Every response says
//! `Connection: close`, so each attempt is a fresh connection.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: BTreeMap<String, String>,
    pub body: Value,
    pub at: Instant,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(&name.to_ascii_lowercase()).map(String::as_str)
    }
}

/// What the server does with one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A complete response.
    Full { status: u16, headers: Vec<(String, String)>, body: String },
    /// Wait, then do the inner reply (the client may have given up).
    Delayed(Duration, Box<Reply>),
    /// Status 200 and a Content-Length for `body`, but only the first half
    /// of it is written before the connection is reset.
    ResetMidBody { body: String },
    /// Close the connection without answering.
    Close,
}

impl Reply {
    pub fn json(body: Value) -> Self {
        Reply::status(200, body)
    }

    pub fn status(status: u16, body: Value) -> Self {
        Reply::Full { status, headers: Vec::new(), body: body.to_string() }
    }

    pub fn raw(status: u16, body: &str) -> Self {
        Reply::Full { status, headers: Vec::new(), body: body.to_string() }
    }

    pub fn rate_limited(retry_after: &str) -> Self {
        Reply::Full {
            status: 429,
            headers: vec![("Retry-After".into(), retry_after.into())],
            body: r#"{"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}"#.into(),
        }
    }

    pub fn server_error(status: u16) -> Self {
        Reply::Full { status, headers: Vec::new(), body: r#"{"error": {"message": "upstream failure"}}"#.into() }
    }

    pub fn delayed(self, by: Duration) -> Self {
        Reply::Delayed(by, Box::new(self))
    }
}

#[derive(Default)]
struct State {
    script: VecDeque<Reply>,
    requests: Vec<Recorded>,
}

pub struct ScriptedServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl ScriptedServer {
    /// Starts listening on 127.0.0.1 with an OS-chosen port.
    pub async fn start(script: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(Mutex::new(State { script: script.into(), requests: Vec::new() }));
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, Arc::clone(&shared)));
            }
        });
        Self { addr, state, task }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }

    pub fn request_count(&self) -> usize {
        self.state.lock().unwrap().requests.len()
    }

    pub fn only_request(&self) -> Recorded {
        let requests = self.requests();
        assert_eq!(requests.len(), 1, "expected exactly one request");
        requests.into_iter().next().unwrap()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

async fn read_request(stream: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let at = Instant::now();
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_string();
    let path = request_line.next()?.to_string();
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers.get("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let body = if body.is_empty() { Value::Null } else { serde_json::from_slice(&body).expect("request body is JSON") };
    Some(Recorded { method, path, headers, body, at })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

fn head(status: u16, headers: &[(String, String)], length: usize) -> String {
    let mut h = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {length}\r\nConnection: close\r\n",
        reason(status)
    );
    for (k, v) in headers {
        h.push_str(&format!("{k}: {v}\r\n"));
    }
    h.push_str("\r\n");
    h
}

async fn serve(mut stream: TcpStream, state: Arc<Mutex<State>>) {
    let Some(recorded) = read_request(&mut stream).await else { return };
    let reply = {
        let mut s = state.lock().unwrap();
        s.requests.push(recorded);
        s.script.pop_front().unwrap_or_else(|| Reply::raw(500, r#"{"error": {"message": "test script exhausted"}}"#))
    };
    let mut reply = reply;
    loop {
        match reply {
            Reply::Delayed(by, inner) => {
                tokio::time::sleep(by).await;
                reply = *inner;
            }
            Reply::Full { status, headers, body } => {
                let _ = stream.write_all(head(status, &headers, body.len()).as_bytes()).await;
                let _ = stream.write_all(body.as_bytes()).await;
                let _ = stream.shutdown().await;
                return;
            }
            Reply::ResetMidBody { body } => {
                let _ = stream.write_all(head(200, &[], body.len()).as_bytes()).await;
                let _ = stream.write_all(&body.as_bytes()[..body.len() / 2]).await;
                let _ = stream.flush().await;
                tokio::time::sleep(Duration::from_millis(20)).await;
                let _ = stream.set_zero_linger();
                drop(stream);
                return;
            }
            Reply::Close => {
                drop(stream);
                return;
            }
        }
    }
}
