//! An MCP client exploring a simulated house for 30 s through navkit's MCP
//! server, with the official Rust SDK (`rmcp`) on both sides.
//!
//! The server is `nav_planner::mcp::McpRobot` on the built-in simulator
//! (the `house_a` arena), connected to the client in-process over a pipe;
//! `nav mcp` serves the same handler over stdio or Streamable HTTP. The
//! client is a tiny reactive explorer in place of a model: it asks
//! `check_path_clear` ahead, drives forward when clear and turns
//! otherwise, looks with `observe_scene` now and then, and reads the state
//! and the map. Every motion goes through the safety layer; the robot
//! stops by itself 3 s after the last motion call.
//!
//! Run: `cargo run -p navkit-examples --example mcp_client`

use nav_hal::arena::Arena;
use nav_hal::sim::{SimConfig, SimHal, SimWorld};
use nav_planner::mcp::{McpConfig, McpRobot};
use rmcp::ServiceExt as _;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// How long the client explores, wall time.
const EXPLORE: Duration = Duration::from_secs(30);

fn args(v: Value) -> serde_json::Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

fn text(r: &CallToolResult) -> String {
    r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // the server: the simulator behind the safety layer
    let hal = SimHal::new(SimWorld::new(Arena::builtin("house_a")?, SimConfig::default())?);
    let clock = hal.clock();
    let robot = McpRobot::start(Box::new(hal), clock, McpConfig::default()).await?;
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let server = robot.handler().serve(server_io);
    let client = ().serve(client_io);
    let (server, client) = tokio::join!(server, client);
    let (_server, client) = (server?, client?);

    let tools = client.list_all_tools().await?;
    println!("tools: {}", tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>().join(", "));

    let call = |name: &'static str, a: Value| {
        let client = &client;
        async move { client.call_tool(CallToolRequestParams::new(name).with_arguments(args(a))).await }
    };
    let started = Instant::now();
    let (mut refused, mut moves, mut turns, mut looks) = (0, 0, 0, 0);
    let mut turn = 90;
    while started.elapsed() < EXPLORE {
        let path = call("check_path_clear", json!({"direction": "forward", "distance_m": 1.0})).await?;
        let clear = path.structured_content.as_ref().and_then(|v| v["clear"].as_bool()).unwrap_or(false);
        let r = if clear {
            moves += 1;
            call("move_toward", json!({"direction": "forward", "speed": "medium", "duration_s": 2})).await?
        } else {
            turns += 1;
            turn = -turn; // alternate, so a dead end is left the way it was entered
            call("rotate", json!({"degrees": turn})).await?
        };
        if r.is_error == Some(true) {
            refused += 1;
            println!("refused: {}", text(&r).lines().next().unwrap_or(""));
        }
        if moves % 5 == 4 && looks < moves / 5 + 1 {
            looks += 1;
            let seen = call("observe_scene", json!({"focus": "general"})).await?;
            let images = seen.content.iter().filter(|c| c.as_image().is_some()).count();
            println!("observe_scene: {images} image(s)");
        }
        tokio::time::sleep(Duration::from_millis(1200)).await;
    }
    call("stop_robot", json!({"reason": "exploration_complete"})).await?;
    let map = call("get_map", json!({})).await?;
    let state = call("get_state", json!({})).await?;
    let s = state.structured_content.unwrap_or_default();
    println!(
        "explored {:.0} s: {moves} moves, {turns} turns, {refused} refused, {} m travelled, {} safety overrides, \
         {} collisions, map image: {}",
        started.elapsed().as_secs_f64(),
        s["distance_travelled_m"],
        s["overrides"],
        s["collisions"],
        map.content.iter().any(|c| c.as_image().is_some())
    );
    client.cancel().await?;
    robot.shutdown().await;
    Ok(())
}
