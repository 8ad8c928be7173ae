//! Shared helpers of the rosbridge tests: a peer over the built-in `simple`
//! arena, a HAL configuration with short limits (so staleness and
//! reconnects happen in well under a second), polling, and a raw rosbridge
//! WebSocket client.
#![allow(dead_code)]

use futures_util::{SinkExt, StreamExt};
use nav_hal::rosbridge::RosbridgeConfig;
use nav_hal::rosbridge::testing::{PeerConfig, RosbridgePeer};
use nav_hal::sim::{SimConfig, SimWorld};
use serde_json::Value;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

/// A peer serving the built-in `simple` arena.
pub async fn peer() -> RosbridgePeer {
    peer_with(PeerConfig::default()).await
}

/// A peer with a custom configuration.
pub async fn peer_with(config: PeerConfig) -> RosbridgePeer {
    let world = SimWorld::builtin("simple", SimConfig::default()).expect("builtin arena");
    RosbridgePeer::start_with(world, config).await.expect("peer starts")
}

/// The HAL configuration for `url` with short, test-friendly limits.
pub fn fast_config(url: &str) -> RosbridgeConfig {
    RosbridgeConfig {
        scan_stale_s: 0.6,
        odom_stale_s: 0.6,
        camera_stale_s: 2.0,
        reconnect_initial_s: 0.05,
        reconnect_max_s: 0.2,
        connect_timeout_s: 2.0,
        probe_interval_s: 0.1,
        probe_timeout_s: 0.5,
        publish_timeout_s: 0.5,
        ..RosbridgeConfig::new(url)
    }
}

/// Polls `f` every 10 ms until it returns `Some`, for at most `secs`.
pub async fn eventually<T>(secs: f64, mut f: impl AsyncFnMut() -> Option<T>) -> Option<T> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(secs);
    loop {
        if let Some(v) = f().await {
            return Some(v);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Sleeps for `secs`.
pub async fn sleep(secs: f64) {
    tokio::time::sleep(Duration::from_secs_f64(secs)).await;
}

/// A raw rosbridge v2 client speaking JSON over the WebSocket.
pub struct RawClient {
    ws: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
}

impl RawClient {
    /// Connects to `url`.
    pub async fn connect(url: &str) -> Self {
        let (ws, _) = tokio_tungstenite::connect_async(url).await.expect("websocket connects");
        Self { ws }
    }

    /// Sends one JSON value as a text frame.
    pub async fn send(&mut self, v: Value) {
        self.send_text(v.to_string()).await;
    }

    /// Sends raw text.
    pub async fn send_text(&mut self, text: String) {
        self.ws.send(Message::text(text)).await.expect("send");
    }

    /// The next JSON message matching `pred`, within `secs`.
    pub async fn next_matching(&mut self, secs: f64, pred: impl Fn(&Value) -> bool) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(secs);
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let msg = tokio::time::timeout(left, self.ws.next()).await.ok()??.ok()?;
            if let Message::Text(t) = msg {
                let v: Value = serde_json::from_str(t.as_str()).expect("peer sends JSON");
                if pred(&v) {
                    return Some(v);
                }
            }
        }
    }

    /// True when the server closes the connection within `secs` (messages
    /// already in flight are discarded).
    pub async fn wait_closed(&mut self, secs: f64) -> bool {
        let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(secs);
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match tokio::time::timeout(left, self.ws.next()).await {
                Err(_) => return false,
                Ok(None) | Ok(Some(Err(_))) | Ok(Some(Ok(Message::Close(_)))) => return true,
                Ok(Some(Ok(_))) => {}
            }
        }
    }

    /// The next text message as a string (raw, to see `null` literals).
    pub async fn next_text_on(&mut self, secs: f64, topic: &str) -> Option<String> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(secs);
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let msg = tokio::time::timeout(left, self.ws.next()).await.ok()??.ok()?;
            if let Message::Text(t) = msg {
                let v: Value = serde_json::from_str(t.as_str()).expect("peer sends JSON");
                if v["topic"] == topic {
                    return Some(t.as_str().to_string());
                }
            }
        }
    }
}
