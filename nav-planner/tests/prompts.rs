//! Insta snapshots of each protocol's full prompt for a fixed state: the
//! start of an episode in the built-in simulator (objectnav in `house_a`,
//! candidates in `simple`, explore in `exploration`; seed 0, memory on), as
//! built by `nav_planner::navigator::episode::initial_request` — the request `nav
//! prompt` prints and the backends send. Each is snapshotted with images and
//! text-only, provider-neutral (image bytes replaced by their size and
//! SHA-256, so the snapshot also pins the rendered images) and as the OpenAI
//! Chat Completions body (image payloads redacted). One more snapshot pins
//! the candidates prompt where the detector reports objects (`house_a`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use nav_hal::arena::Arena;
use nav_planner::navigator::episode::{EpisodeSpec, initial_request};
use nav_planner::protocol::ProtocolKind;
use nav_planner::vlm::VlmRequest;
use nav_planner::vlm::wire::openai::{OpenAiOptions, encode};

/// The fixed state of each protocol: its default built-in arena, seed 0,
/// memory on.
fn spec(protocol: ProtocolKind, text_only: bool) -> EpisodeSpec {
    let arena = match protocol {
        ProtocolKind::Objectnav => "house_a",
        ProtocolKind::Candidates => "simple",
        ProtocolKind::Explore => "exploration",
    };
    let mut spec = EpisodeSpec::new(Arena::builtin(arena).unwrap(), format!("builtin:{arena}"));
    spec.protocol = protocol;
    spec.seed = 0;
    spec.memory = true;
    spec.text_only = text_only;
    spec
}

async fn request(protocol: ProtocolKind, text_only: bool) -> VlmRequest {
    initial_request(&spec(protocol, text_only)).await.unwrap()
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The provider-neutral request as JSON, each image's bytes replaced by
/// `{"bytes": n, "sha256": …}`.
fn neutral(req: &VlmRequest) -> Value {
    let mut v = serde_json::to_value(req).unwrap();
    for part in v["user"].as_array_mut().unwrap() {
        if part["type"] == "image" {
            let data: Vec<u8> = serde_json::from_value(part["content"]["data"].take()).unwrap();
            part["content"]["data"] = json!({"bytes": data.len(), "sha256": sha256_hex(&data)});
        }
    }
    v
}

/// The OpenAI body with each data URL replaced by its MIME type and size.
fn openai_body(req: &VlmRequest) -> Value {
    let mut body = encode(req, &OpenAiOptions::new("gpt-4o-mini"));
    if let Some(Value::Array(parts)) = body["messages"][1].get_mut("content") {
        for part in parts {
            if let Some(url) = part.pointer_mut("/image_url/url") {
                let (mime, data) = url.as_str().unwrap().split_once(";base64,").unwrap();
                *url = json!(format!("{mime};base64,[{} base64 chars]", data.len()));
            }
        }
    }
    body
}

macro_rules! prompt_snapshots {
    ($($test:ident: $protocol:expr, $text_only:expr, $name:literal;)*) => {
        $(
            #[tokio::test]
            async fn $test() {
                let req = request($protocol, $text_only).await;
                assert_eq!(req.image_count() == 0, $text_only, "images exactly when not text-only");
                insta::assert_json_snapshot!(concat!($name, "_neutral"), neutral(&req));
                insta::assert_json_snapshot!(concat!($name, "_openai"), openai_body(&req));
            }
        )*
    };
}

prompt_snapshots! {
    objectnav_with_images: ProtocolKind::Objectnav, false, "objectnav_house_a";
    objectnav_text_only: ProtocolKind::Objectnav, true, "objectnav_house_a_text_only";
    candidates_with_images: ProtocolKind::Candidates, false, "candidates_simple";
    candidates_text_only: ProtocolKind::Candidates, true, "candidates_simple_text_only";
    explore_with_images: ProtocolKind::Explore, false, "explore_exploration";
    explore_text_only: ProtocolKind::Explore, true, "explore_exploration_text_only";
}

/// Building the same state twice gives byte-identical requests (images
/// included), so the snapshots above are stable.
#[tokio::test]
async fn requests_are_deterministic() {
    for protocol in [ProtocolKind::Objectnav, ProtocolKind::Candidates, ProtocolKind::Explore] {
        for text_only in [false, true] {
            let a = request(protocol, text_only).await;
            let b = request(protocol, text_only).await;
            assert!(a == b, "{protocol} text_only={text_only}: two builds differ");
        }
    }
}

/// What each protocol's prompt must contain, independent of the snapshots.
#[tokio::test]
async fn prompts_carry_their_protocol_parts() {
    let objectnav = request(ProtocolKind::Objectnav, false).await;
    let schema = objectnav.json_schema.as_ref().expect("objectnav asks for JSON");
    assert_eq!(schema.name, "objectnav_decision");
    assert!(schema.strict);
    assert_eq!(schema.schema["required"], json!(["goal_flag", "angle", "discovered_context"]));
    assert!(objectnav.tools.is_empty());
    let text = objectnav.user_text();
    assert!(text.contains("TARGET: tv") && text.contains("NAVIGATION CONTEXT"), "{text}");
    let text_only = request(ProtocolKind::Objectnav, true).await.user_text();
    assert!(text_only.contains("PANORAMA (text): angle: free distance; objects"), "{text_only}");

    let candidates = request(ProtocolKind::Candidates, false).await.user_text();
    let layout = ["=== CYCLE 1 ===", "GOAL:", "STATE:", "LAST ACTION:", "WORLD MODEL:", "CANDIDATES:", "HISTORY:"];
    let mut at = 0;
    for heading in layout {
        let found = candidates[at..].find(heading).unwrap_or_else(|| panic!("{heading} missing or out of order"));
        at += found + heading.len();
    }

    let explore = request(ProtocolKind::Explore, false).await;
    let names: Vec<&str> = explore.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "move_toward",
            "navigate_to_goal",
            "rotate",
            "stop_robot",
            "observe_scene",
            "check_path_clear",
            "report_discovery"
        ]
    );
    assert!(explore.tools.iter().all(|t| t.strict && t.parameters["additionalProperties"] == false));
    let text = explore.user_text();
    for section in ["STATE:", "LIDAR m: ", "Gaps:", "FEASIBILITY: ", "FRONTIERS: #1 ", "PREVIOUS ACTION:", "MEMORY:"] {
        assert!(text.contains(section), "{section} missing from {text}");
    }
    // one angle convention, stated once in the system prompt: clockwise bearings in [0, 360)
    assert!(explore.system.contains("ANGLES: clockwise degrees"), "{}", explore.system);
    assert!(!text.contains(" at -") && !text.contains("° at +"), "no signed bearings: {text}");
    let frontiers = text.lines().find(|l| l.starts_with("FRONTIERS: ")).unwrap();
    for bearing in frontiers.split(" at ").skip(1) {
        let deg: f64 = bearing.split('°').next().unwrap().parse().unwrap();
        assert!((0.0..360.0).contains(&deg), "{frontiers}");
    }
}

/// The model is told the speed tiers the executor drives at, once, in the
/// `move_toward` schema: a config with other tiers changes it, the default
/// config keeps the seed's 0.08 / 0.12 / 0.18.
#[tokio::test]
async fn explore_request_states_the_configured_speeds() {
    let default = request(ProtocolKind::Explore, true).await;
    let description =
        |req: &VlmRequest| req.tools.iter().find(|t| t.name == "move_toward").unwrap().description.clone();
    assert!(description(&default).contains("at slow 0.08, medium 0.12 or fast 0.18 m/s"), "{}", description(&default));
    let mut s = spec(ProtocolKind::Explore, true);
    let speeds = &mut s.explore.safety.speeds;
    (speeds.slow_mps, speeds.medium_mps, speeds.fast_mps, speeds.max_linear_mps) = (0.1, 0.2, 0.3, 0.3);
    let req = initial_request(&s).await.unwrap();
    assert!(description(&req).contains("at slow 0.1, medium 0.2 or fast 0.3 m/s"), "{}", description(&req));
    assert!(!req.system.contains("0.18") && !description(&req).contains("0.18"), "{}", req.system);
}

/// The candidates prompt where the detector reports objects: `house_a`'s
/// start, where the camera sees furniture. The OBJECTS block lists each with
/// its position in the odometry frame and its distance, between the world
/// model and the WAYPOINTS line, as in seed 002's layout.
#[tokio::test]
async fn candidates_objects_block_lists_what_the_detector_reports() {
    let mut s = spec(ProtocolKind::Candidates, true);
    s.arena = Arena::builtin("house_a").unwrap();
    s.arena_source = "builtin:house_a".into();
    let text = initial_request(&s).await.unwrap().user_text();
    let objects = text.lines().find(|l| l.starts_with("OBJECTS: ")).unwrap_or_else(|| panic!("no OBJECTS in {text}"));
    let (objects_at, waypoints_at, world_at) = (
        text.find("\nOBJECTS: ").unwrap(),
        text.find("\nWAYPOINTS: 1 waypoints, 0 edges").unwrap(),
        text.find("WORLD MODEL:").unwrap(),
    );
    assert!(world_at < objects_at && objects_at < waypoints_at, "{text}");
    assert!(objects.contains("m away"), "{objects}");
    // everything but the occupancy string (pinned by the other candidates snapshots)
    let shown: Vec<&str> = text.lines().filter(|l| !l.trim_start().starts_with("occupancy: ")).collect();
    insta::assert_snapshot!("candidates_house_a_objects", shown.join("\n"));
}
