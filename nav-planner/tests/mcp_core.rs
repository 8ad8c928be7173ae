//! The MCP server's handler without a transport: the tool list is
//! nav-safety's schemas, a navigation goal is followed while the client
//! keeps calling, `stop_robot` from a client without the lease stops the
//! robot, and the lease refuses a second driver.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use nav_hal::arena::Arena;
use nav_hal::sim::{SimConfig, SimHal, SimWorld};
use nav_planner::mcp::{McpConfig, McpRobot};
use serde_json::json;
use std::time::Duration;

async fn robot(arena: &str) -> McpRobot {
    let hal = SimHal::new(SimWorld::new(Arena::builtin(arena).unwrap(), SimConfig::default()).unwrap());
    let clock = hal.clock();
    McpRobot::start(Box::new(hal), clock, McpConfig::default()).await.unwrap()
}

fn text(r: &rmcp::model::CallToolResult) -> String {
    r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_are_the_strict_explore_tools_and_two_more() {
    let robot = robot("exploration").await;
    let tools = robot.handler().tools().await;
    let schemas = nav_safety::tool_schemas();
    assert_eq!(tools.len(), schemas.len() + 2);
    for s in &schemas {
        let t = tools.iter().find(|t| t.name == s.name).unwrap();
        assert_eq!(serde_json::Value::Object((*t.input_schema).clone()), s.parameters, "{}", s.name);
    }
    robot.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_navigation_goal_is_followed_while_the_client_keeps_calling() {
    let robot = robot("exploration").await;
    let h = robot.handler();
    let start = robot.state().await;
    let (x0, y0) = (start["pose"]["x"].as_f64().unwrap(), start["pose"]["y"].as_f64().unwrap());
    // a free spot a metre and a half away, found with check_path_clear
    let mut goal = None;
    for (dir, bearing) in [("forward", 0.0f64), ("left", 90.0), ("right", -90.0), ("backward", 180.0)] {
        let r = h.call("check_path_clear", json!({"direction": dir, "distance_m": 2.0})).await;
        if r.structured_content.as_ref().is_some_and(|v| v["clear"] == true) {
            let yaw = (90.0 - start["pose"]["heading_deg"].as_f64().unwrap() + bearing).to_radians();
            goal = Some((x0 + 1.5 * yaw.cos(), y0 + 1.5 * yaw.sin()));
            break;
        }
    }
    let (gx, gy) = goal.expect("a clear direction");
    let d0 = ((gx - x0).powi(2) + (gy - y0).powi(2)).sqrt();
    for _ in 0..8 {
        let r = h
            .call(
                "navigate_to_goal",
                json!({"goal_type": "coordinates", "frontier_id": null, "x": gx, "y": gy, "reason": "test"}),
            )
            .await;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        tokio::time::sleep(Duration::from_millis(1000)).await;
    }
    let end = robot.state().await;
    let (x1, y1) = (end["pose"]["x"].as_f64().unwrap(), end["pose"]["y"].as_f64().unwrap());
    let d1 = ((gx - x1).powi(2) + (gy - y1).powi(2)).sqrt();
    assert!(d1 < d0 - 0.3, "no closer to the goal: {d0:.2} m then {d1:.2} m ({end})");
    assert_eq!(end["collisions"], 0);
    robot.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_driver_at_a_time_and_anyone_may_stop() {
    let robot = robot("exploration").await;
    let (a, b) = (robot.handler(), robot.handler());
    let r = a.call("rotate", json!({"degrees": 90})).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let r = b.call("rotate", json!({"degrees": -90})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("motion lease"), "{}", text(&r));
    // b may still look and stop
    let r = b.call("get_state", json!({})).await;
    assert!(text(&r).contains("held by client"), "{}", text(&r));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = b.call("stop_robot", json!({"reason": "user_requested"})).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let s = robot.state().await;
    assert!(s["in_progress"].is_null(), "{s}");
    assert_eq!(s["last_command"]["angular_rps"], 0.0, "{s}");
    // a leaves: b may drive
    drop(a);
    let r = b.call("rotate", json!({"degrees": -90})).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    robot.shutdown().await;
}
