//! `nav mcp`'s HTTP security, with raw HTTP requests: a non-loopback bind
//! without a token refuses to start (exit 2); with a token, a request
//! without it (or with another) gets 401; a foreign Origin gets 403; an
//! oversized body 413; the token never appears in the output.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const TOKEN: &str = "navkit-test-token-7f3a9c2e1b";

fn nav() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nav"))
}

#[test]
fn a_remote_bind_without_a_token_refuses_to_start() {
    let out = nav()
        .args(["mcp", "--transport", "http", "--bind", "0.0.0.0:0"])
        .env_remove("NAVKIT_MCP_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("access token") && err.contains("not a loopback address"), "{err}");
    assert!(out.stdout.is_empty());
}

/// `nav mcp` on a free port of `bind`, with the token in its environment;
/// stderr goes to a file the test reads at the end.
struct Server {
    child: Child,
    addr: String,
    stderr: tempfile::NamedTempFile,
}

impl Server {
    fn start(bind: &str) -> Self {
        let stderr = tempfile::NamedTempFile::new().unwrap();
        let mut child = nav()
            .args(["-vv", "mcp", "--transport", "http", "--bind", bind])
            .env("NAVKIT_MCP_TOKEN", TOKEN)
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr.reopen().unwrap()))
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line.trim().to_owned();
        let host_port = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
        let port = host_port.rsplit(':').next().unwrap().to_owned();
        // a wildcard bind is reached through loopback
        Self { child, addr: format!("127.0.0.1:{port}"), stderr }
    }

    /// One HTTP/1.1 request; the status code and the whole response.
    fn request(&self, headers: &[(&str, &str)], body: &str) -> (u16, String) {
        self.request_to(&self.addr, headers, body)
    }

    /// [`Self::request`] with `host` as its `Host` header.
    fn request_to(&self, host: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut req = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, \
             text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
            host,
            body.len()
        );
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        req.push_str(body);
        // the server may answer (401, 413) and close before the body is all sent
        let _ = s.write_all(req.as_bytes());
        let mut resp = Vec::new();
        let _ = s.read_to_end(&mut resp);
        let resp = String::from_utf8_lossy(&resp).into_owned();
        let code = resp.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
        (code, resp)
    }

    fn stop(mut self) -> String {
        self.child.kill().ok();
        self.child.wait().ok();
        std::fs::read_to_string(self.stderr.path()).unwrap()
    }
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

#[test]
fn with_a_token_requests_need_it_and_it_is_never_shown() {
    let server = Server::start("0.0.0.0:0");
    let bearer = format!("Bearer {TOKEN}");
    let (code, resp) = server.request(&[], INIT);
    assert_eq!(code, 401, "{resp}");
    assert!(resp.to_ascii_lowercase().contains("www-authenticate: bearer"), "{resp}");
    let (code, _) = server.request(&[("Authorization", "Bearer wrong-token")], INIT);
    assert_eq!(code, 401);
    let (code, _) = server.request(&[("Authorization", &format!("Bearer {TOKEN}x"))], INIT);
    assert_eq!(code, 401);
    let (code, resp) = server.request(&[("Authorization", &bearer)], INIT);
    assert_eq!(code, 200, "{resp}");
    assert!(resp.contains("navkit"), "{resp}");
    // a browser page from elsewhere: refused even with the token
    let (code, _) = server.request(&[("Authorization", &bearer), ("Origin", "http://evil.example")], INIT);
    assert_eq!(code, 403);
    let (code, resp) = server.request(&[("Authorization", &bearer), ("Origin", "http://localhost:3000")], INIT);
    assert_eq!(code, 200, "{resp}");
    // a body over the limit (1 MiB)
    let big = format!(r#"{{"jsonrpc":"2.0","id":2,"method":"ping","params":{{"pad":"{}"}}}}"#, "x".repeat(1_100_000));
    let (code, _) = server.request(&[("Authorization", &bearer)], &big);
    assert_eq!(code, 413);
    let stderr = server.stop();
    assert!(stderr.contains("access token required"), "{stderr}");
    assert!(!stderr.contains(TOKEN), "the token leaked into the log: {stderr}");
}

#[test]
fn loopback_rejects_foreign_origins_and_hosts() {
    let server = Server::start("127.0.0.1:0");
    let bearer = format!("Bearer {TOKEN}");
    let (code, _) = server.request(&[("Authorization", &bearer), ("Origin", "https://attacker.example")], INIT);
    assert_eq!(code, 403);
    let (code, resp) = server.request(&[("Authorization", &bearer), ("Origin", "http://127.0.0.1:5173")], INIT);
    assert_eq!(code, 200, "{resp}");
    // DNS rebinding: a foreign name resolving to this machine
    let (code, _) = server.request_to("evil.example", &[("Authorization", &bearer)], INIT);
    assert_eq!(code, 403);
    let stderr = server.stop();
    assert!(!stderr.contains(TOKEN));
}

#[test]
fn requests_over_the_rate_limit_get_429() {
    let stderr = tempfile::NamedTempFile::new().unwrap();
    let mut child = nav()
        .args(["mcp", "--transport", "http", "--bind", "127.0.0.1:0", "--rate-limit", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr.reopen().unwrap()))
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let port = line.trim().trim_end_matches("/mcp").rsplit(':').next().unwrap().to_owned();
    let server = Server { child, addr: format!("127.0.0.1:{port}"), stderr };
    // a burst of 4 (twice the rate) passes, the next is refused
    let codes: Vec<u16> = (0..6).map(|_| server.request(&[], INIT).0).collect();
    assert!(codes[..4].iter().all(|&c| c == 200), "{codes:?}");
    assert!(codes[4..].contains(&429), "{codes:?}");
    server.stop();
}

#[test]
fn bad_flags_are_usage_errors() {
    for args in [
        vec!["mcp", "--transport", "http", "--bind", "nonsense"],
        vec!["mcp", "--watchdog", "0"],
        vec!["mcp", "--transport", "http", "--bind", "127.0.0.1:0", "--rate-limit", "0"],
        vec!["mcp", "--arena", "no_such_arena"],
    ] {
        let out = nav().args(&args).stdin(Stdio::null()).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}
