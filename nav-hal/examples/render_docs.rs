//! Renders the pictures in docs/img/: a top-down map of every built-in
//! arena (and one procedural house), egocentric views and a panorama.
//!
//! ```sh
//! cargo run --release -p nav-hal --example render_docs [OUT_DIR]   # default: docs/img
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use nav_core::action::Action;
use nav_core::geometry::{Point2, Pose2};
use nav_core::raster::{Rgb, RgbFrame};
use nav_hal::arena::Arena;
use nav_hal::picture::{MapPicture, encode_png};
use nav_hal::sim::{SimConfig, SimWorld};
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("docs/img"));
    std::fs::create_dir_all(&out)?;
    let mut names: Vec<String> = Arena::builtin_names().into_iter().map(String::from).collect();
    names.push("proc_1".into());
    for name in &names {
        let arena = Arena::builtin(name)?;
        MapPicture::new(&arena)
            .with_title(format!("{name}: {}", arena.description.clone().unwrap_or_default()))
            .with_scale(if arena.bounds[2] - arena.bounds[0] > 8.0 { 50.0 } else { 80.0 })
            .save(out.join(format!("map_{name}.png")))?;
    }

    // A short scripted walk in house_a, drawn over the map with anchors.
    let mut world = SimWorld::builtin("house_a", SimConfig::default())?;
    use Action::{Forward as F, TurnLeft as L, TurnRight as R};
    let script = [F, F, F, F, F, F, R, R, R, F, F, F, F, F, R, R, R, F, F, F, L, F];
    let mut anchors = Vec::new();
    for (i, a) in script.iter().enumerate() {
        world.act(*a);
        if i % 3 == 2 {
            let p = world.ground_truth_pose().position();
            let place = u32::from(world.room_at(p) != Some("corridor"));
            anchors.push((p, place));
        }
    }
    let trajectory: Vec<Point2> = world.trajectory().iter().map(|p| p.position()).collect();
    MapPicture::new(world.arena())
        .with_trajectory(trajectory)
        .with_anchors(anchors)
        .with_goal(Point2::new(0.9, 1.8))
        .with_title("house_a: trajectory, anchors by place, target")
        .with_scale(50.0)
        .save(out.join("run_house_a.png"))?;

    // Egocentric views.
    let mut living = SimWorld::builtin("house_a", SimConfig::default())?;
    living.teleport(Pose2::new(4.6, 2.6, 3.5))?;
    std::fs::write(out.join("view_house_a_living_room.png"), encode_png(&living.rgb().frame)?)?;
    let (_, depth) = living.rgbd();
    std::fs::write(out.join("depth_house_a_living_room.png"), encode_png(&depth_picture(&depth))?)?;
    let mut simple = SimWorld::builtin("simple", SimConfig::default())?;
    std::fs::write(out.join("view_simple_start.png"), encode_png(&simple.rgb().frame)?)?;

    // A 12-view panorama from the corridor of house_c, as one strip.
    let mut corridor = SimWorld::builtin("house_c", SimConfig::default())?;
    corridor.teleport(Pose2::new(7.0, 4.75, 0.0))?;
    let pano = corridor.panorama(12)?;
    let (w, h) = (160, 120);
    let mut strip = RgbFrame::new(w * 6, h * 2, Rgb::BLACK);
    for (k, view) in pano.views.iter().enumerate() {
        let small = downscale(&view.frame.frame, 2);
        let (ox, oy) = ((k % 6) * w, (k / 6) * h);
        for y in 0..h {
            for x in 0..w {
                if let Some(c) = small.get(x as i64, y as i64) {
                    strip.put((ox + x) as i64, (oy + y) as i64, c);
                }
            }
        }
        strip.text(ox as i64 + 4, oy as i64 + 4, &format!("{}°", k * 30), 1, Rgb::WHITE, Some(Rgb::BLACK));
    }
    std::fs::write(out.join("panorama_house_c.png"), encode_png(&strip)?)?;
    println!("wrote pictures to {}", out.display());
    Ok(())
}

/// Depth as grey levels (near = bright), for people.
fn depth_picture(depth: &nav_hal::hal::DepthFrame) -> RgbFrame {
    let mut f = RgbFrame::new(depth.width, depth.height, Rgb::BLACK);
    for y in 0..depth.height {
        for x in 0..depth.width {
            let d = depth.at(x, y).unwrap_or(f32::INFINITY);
            let v = if d.is_finite() { (255.0 * (1.0 - (d / 8.0).min(1.0))) as u8 } else { 0 };
            f.put(x as i64, y as i64, Rgb([v, v, v]));
        }
    }
    f
}

/// Box-filter downscale by an integer factor.
fn downscale(frame: &RgbFrame, k: usize) -> RgbFrame {
    let (w, h) = (frame.width() / k, frame.height() / k);
    let mut out = RgbFrame::new(w, h, Rgb::BLACK);
    for y in 0..h {
        for x in 0..w {
            let mut acc = [0u32; 3];
            for dy in 0..k {
                for dx in 0..k {
                    let c = frame.get((x * k + dx) as i64, (y * k + dy) as i64).unwrap_or(Rgb::BLACK);
                    for (a, v) in acc.iter_mut().zip(c.0) {
                        *a += u32::from(v);
                    }
                }
            }
            let n = (k * k) as u32;
            out.put(x as i64, y as i64, Rgb([(acc[0] / n) as u8, (acc[1] / n) as u8, (acc[2] / n) as u8]));
        }
    }
    out
}
