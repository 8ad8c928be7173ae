//! Rendering is deterministic: hashes of one camera view per seed arena and
//! the SVG of a map are pinned by snapshots. If a deliberate rendering change
//! moves them, review the new pictures (`cargo run -p nav-hal --example
//! render_docs`) and accept with `cargo insta review`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use nav_core::geometry::Point2;
use nav_hal::arena::Arena;
use nav_hal::picture::MapPicture;
use nav_hal::sim::{SimConfig, SimWorld};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

fn sha(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[test]
fn start_views_of_the_seed_arenas() {
    let mut lines = String::new();
    for name in ["simple", "exploration", "dead_end", "narrow_corridor"] {
        let mut w = SimWorld::builtin(name, SimConfig::default()).unwrap();
        let (rgb, depth) = w.rgbd();
        let mm: Vec<u8> = depth.to_millimetres().iter().flat_map(|v| v.to_le_bytes()).collect();
        let _ = writeln!(lines, "{name}: rgb {} depth {}", sha(rgb.frame.as_bytes()), sha(&mm));
        // Rendering twice gives the same pixels.
        assert_eq!(w.rgb().frame, rgb.frame);
    }
    insta::assert_snapshot!(lines);
}

#[test]
fn house_view_with_labels() {
    let mut w = SimWorld::builtin("house_a", SimConfig::default()).unwrap();
    w.teleport(nav_core::geometry::Pose2::new(3.0, 2.9, 2.75)).unwrap();
    insta::assert_snapshot!(sha(w.rgb().frame.as_bytes()));
}

#[test]
fn map_svg_of_simple() {
    let arena = Arena::builtin("simple").unwrap();
    let svg = MapPicture::new(&arena)
        .with_trajectory(vec![Point2::new(-1.5, -1.5), Point2::new(-1.0, -0.8), Point2::new(0.0, 0.0)])
        .with_anchors(vec![(Point2::new(-1.5, -1.5), 0), (Point2::new(0.0, 0.0), 1)])
        .with_goal(Point2::new(1.0, 0.5))
        .with_title("simple <run 1>")
        .with_scale(40.0)
        .to_svg();
    insta::assert_snapshot!(svg);
}
