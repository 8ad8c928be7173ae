//! The scene analyzer's offline stand-in: what a scene VLM would say,
//! from the objects rendered in the current view (the simulator's label
//! buffer, ranges from depth) and the LiDAR's shape.

use super::prior::SemanticPrior;
use crate::protocol::CallRecord;
use crate::protocol::perception::PerceptionNeeds;
use crate::protocol::scene::{SceneAnalyzer, SceneInput};
use async_trait::async_trait;
use nav_core::lidar::{ArcStat, arc_distance};
use nav_memory::SceneObservation;
use std::f64::consts::FRAC_PI_2;

/// Classifies scenes without a model: a corridor when the LiDAR sees walls
/// close on both sides and open space ahead or behind; otherwise the room
/// type the visible objects vote for (semantic prior); `None` when neither
/// applies (no guess is better than a wrong label, the dwell rule waits).
#[derive(Debug, Clone, Default)]
pub struct OfflineSceneAnalyzer {
    prior: SemanticPrior,
}

impl OfflineSceneAnalyzer {
    /// The analyzer with the household prior.
    pub fn new() -> Self {
        Self::default()
    }

    /// The synchronous classification.
    pub fn classify(&self, input: &SceneInput<'_>) -> Option<SceneObservation> {
        // (label, range, bearing) of the objects in view
        let seen: Vec<(String, f64, f64)> = match (input.labels, input.depth, input.frame) {
            (Some(labels), Some(depth), Some(frame)) => labels
                .regions(depth, frame.hfov_rad, 2)
                .into_iter()
                .map(|r| (r.label, r.range_m, r.bearing_rad))
                .collect(),
            _ => Vec::new(),
        };
        if let Some(scan) = input.scan {
            // a corridor: narrow across, long along, whichever way the robot faces, and no
            // furniture right here (rooms seen through its doors do not count)
            if is_corridor(scan) && seen.iter().all(|(_, r, _)| *r > 2.0) {
                return Some(
                    SceneObservation::new("corridor").with_description("narrow passage with walls on both sides"),
                );
            }
        }
        // The objects in this room vote, nearer ones more (they fill more of the view); objects
        // seen through a doorway are in the next room. With none near, the ones farther in the
        // same view.
        let beyond = |r: f64, b: f64| input.scan.is_some_and(|scan| through_opening(scan, b, r));
        let weighted = |max: f64| -> Vec<(&str, f64)> {
            seen.iter()
                .filter(|(_, r, b)| *r < max && !beyond(*r, *b))
                .map(|(l, r, _)| (l.as_str(), 1.0 / (1.0 + r)))
                .collect()
        };
        let mut votes = weighted(4.0);
        if votes.is_empty() {
            votes = weighted(7.0);
        }
        let labels: Vec<&str> = votes.iter().map(|(l, _)| *l).collect();
        let ranked = self.prior.votes_where(votes.iter().copied(), |room| room != "corridor");
        let (room, top) = ranked.first().cloned()?;
        if ranked.get(1).is_some_and(|(_, second)| *second > (1.0 - CLEAR_WIN) * top) {
            return None;
        }
        let mut objects: Vec<String> = labels.iter().map(|s| s.to_string()).collect();
        objects.dedup();
        let description = format!("{} with {}", room, objects.join(", "));
        Some(SceneObservation::new(room).with_objects(objects).with_description(description))
    }
}

/// Whether the robot stands in a corridor by its scan: for some axis
/// (every 5°), walls run along both sides — at least [`WALL_COVER`] of the
/// stretch [`WALL_SPAN_M`] either side of the robot holds scan points on
/// each side's wall line (two walls with doors in them, not a door's two
/// jambs or a piece of furniture beside the robot) — at most
/// [`CORRIDOR_MAX_WIDTH_M`] apart, and the way along the axis is open for
/// more than [`CORRIDOR_MIN_LENGTH_M`] (the median ranges of 10° arcs both
/// ways, added).
fn is_corridor(scan: &nav_core::lidar::LaserScan) -> bool {
    let arc = |c: f64| f64::from(arc_distance(scan, c, 5f64.to_radians(), ArcStat::Percentile(0.5))).min(12.0);
    let points: Vec<(f64, f64)> =
        scan.obstacle_beams().map(|(a, r)| (f64::from(r) * a.cos(), f64::from(r) * a.sin())).collect();
    (0..36).any(|k| {
        let across = f64::from(k) * 5f64.to_radians();
        let sides = [1.0, -1.0].map(|side| wall_cover(&points, across, side));
        sides.iter().all(|(_, cover)| *cover >= WALL_COVER)
            && sides[0].0 + sides[1].0 <= CORRIDOR_MAX_WIDTH_M
            && arc(across + FRAC_PI_2) + arc(across - FRAC_PI_2) > CORRIDOR_MIN_LENGTH_M
    })
}

/// Whether an object `range` metres away at `bearing` is seen through an
/// opening (a doorway into the next room): beyond [`OPENING_MIN_RANGE_M`],
/// and turning from its line of sight either way, the scan meets something
/// well in front of it (the opening's jambs, within [`OPENING_ARC_DEG`])
/// on both sides, at most [`OPENING_MAX_WIDTH_M`] apart. An object in the
/// robot's own room has its room's far wall around it instead.
fn through_opening(scan: &nav_core::lidar::LaserScan, bearing: f64, range: f64) -> bool {
    if range < OPENING_MIN_RANGE_M || !scan.header_is_valid() {
        return false;
    }
    let beams: Vec<(f64, f64)> = scan.obstacle_beams().map(|(a, r)| (a, f64::from(r))).collect();
    // the first beam either side that ends well in front of the object, if a wall runs on
    // from it (a piece of furniture in front ends within a metre, the far wall shows again)
    let jamb = |side: f64| -> Option<(f64, f64)> {
        let mut along: Vec<(f64, f64, f64)> = beams
            .iter()
            .map(|&(a, r)| (side * nav_core::geometry::normalize_angle(a - bearing), a, r))
            .filter(|(off, _, _)| *off > 0.0 && *off <= FRAC_PI_2)
            .collect();
        along.sort_by(|x, y| x.0.total_cmp(&y.0));
        let first =
            along.iter().position(|(off, _, r)| *off <= OPENING_ARC_DEG.to_radians() && *r < JAMB_SHARE * range)?;
        let point = |(_, a, r): &(f64, f64, f64)| (r * a.cos(), r * a.sin());
        let start = point(&along[first]);
        let run = along[first..].iter().take_while(|(_, _, r)| *r < JAMB_SHARE * range).last()?;
        let end = point(run);
        ((start.0 - end.0).hypot(start.1 - end.1) >= WALL_RUN_M).then_some(start)
    };
    match (jamb(1.0), jamb(-1.0)) {
        (Some(l), Some(r)) => (l.0 - r.0).hypot(l.1 - r.1) <= OPENING_MAX_WIDTH_M,
        _ => false,
    }
}

/// A room type wins the vote only by at least this share of its votes
/// (a plant alone is as much an office's as a living room's).
const CLEAR_WIN: f64 = 0.1;

/// Objects nearer than this are in the robot's room, metres.
const OPENING_MIN_RANGE_M: f64 = 1.5;
/// How far either side of an object's line of sight an opening's jambs are
/// looked for, degrees.
const OPENING_ARC_DEG: f64 = 70.0;
/// A jamb is nearer than this share of the object's range.
const JAMB_SHARE: f64 = 0.75;
/// The widest opening (a double door), metres; wider gaps are the room.
const OPENING_MAX_WIDTH_M: f64 = 2.2;
/// A jamb's wall runs on for at least this, metres (longer than furniture).
const WALL_RUN_M: f64 = 1.2;

/// A corridor's walls are at most this far apart, metres (rooms are wider).
const CORRIDOR_MAX_WIDTH_M: f64 = 2.0;
/// A corridor is open along its axis for more than this, metres.
const CORRIDOR_MIN_LENGTH_M: f64 = 3.5;
/// How far along the corridor either side of the robot its walls are
/// looked for, metres.
const WALL_SPAN_M: f64 = 1.6;
/// The share of [`WALL_SPAN_M`] bins on each side that must hold a wall
/// point: a corridor's doors leave gaps of about a metre.
const WALL_COVER: f64 = 0.55;

/// For the points (robot frame) on the `side` (+1 or −1) of the axis at
/// right angles to `across` within [`WALL_SPAN_M`] along it: the wall
/// line's distance and its cover, the share of 0.2 m bins along the axis
/// holding a point within 0.1 m of the line. The wall line is the nearest
/// distance (in 0.1 m steps) that covers [`WALL_COVER`], else the one
/// covering most: furniture against the wall stops some points short and
/// doors let some through, the wall still runs along most of the way.
fn wall_cover(points: &[(f64, f64)], across: f64, side: f64) -> (f64, f64) {
    const BIN_M: f64 = 0.2;
    const STEP_M: f64 = 0.1;
    let (cn, sn) = (across.cos(), across.sin());
    let bins = (2.0 * WALL_SPAN_M / BIN_M).round() as usize;
    // for each 0.1 m step across: the bins along the axis holding a point there, and the
    // points' distances added up and counted
    let mut at: std::collections::BTreeMap<i64, (Vec<bool>, f64, usize)> = std::collections::BTreeMap::new();
    for (x, y) in points {
        let (v, u) = (side * (x * cn + y * sn), -x * sn + y * cn);
        if v > 0.05 && u.abs() < WALL_SPAN_M {
            let bin = (((u + WALL_SPAN_M) / BIN_M) as usize).min(bins - 1);
            let step = at.entry((v / STEP_M).round() as i64).or_insert_with(|| (vec![false; bins], 0.0, 0));
            step.0[bin] = true;
            step.1 += v;
            step.2 += 1;
        }
    }
    // a line at a step takes the points within a step of it
    let window = |step: i64| (step - 1..=step + 1).filter_map(|s| at.get(&s));
    let cover = |step: i64| (0..bins).filter(|&b| window(step).any(|(hit, _, _)| hit[b])).count();
    // the nearest line that covers enough (a farther one can show through the near wall's
    // doors), else the one that covers most
    let covers: Vec<(i64, usize)> = at.keys().map(|&s| (s, cover(s))).collect();
    let enough = covers.iter().find(|(_, c)| *c as f64 >= WALL_COVER * bins as f64).copied();
    let best = enough.or_else(|| covers.iter().copied().max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0))));
    let Some((step, covered)) = best else {
        return (f64::INFINITY, 0.0);
    };
    let (sum, n) = window(step).fold((0.0, 0), |(s, n), (_, v, k)| (s + v, n + k));
    (sum / n.max(1) as f64, covered as f64 / bins as f64)
}

#[async_trait]
impl SceneAnalyzer for OfflineSceneAnalyzer {
    fn name(&self) -> String {
        "offline".to_string()
    }

    fn needs(&self) -> PerceptionNeeds {
        PerceptionNeeds { rgb: true, depth: true, labels: true }
    }

    async fn analyze(&mut self, input: &SceneInput<'_>) -> (Option<SceneObservation>, CallRecord) {
        (self.classify(input), CallRecord::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nav_core::lidar::LaserScan;

    #[test]
    fn offline_votes_by_objects_and_sees_corridors() {
        use nav_core::raster::{Rgb, RgbFrame};
        use nav_hal::hal::{CameraFrame, DepthFrame, LabelFrame};
        let a = OfflineSceneAnalyzer::new();
        // a fridge 1 m and an oven 2 m away in a 20 x 10 view; a bed 6 m away does not count
        let mut labels = LabelFrame { width: 20, height: 10, ids: vec![0; 200], labels: Vec::new() };
        labels.paint_box("fridge", [0, 0, 5, 9]);
        labels.paint_box("oven", [7, 0, 12, 9]);
        labels.paint_box("bed", [14, 0, 19, 9]);
        let mut depth = DepthFrame { width: 20, height: 10, depth_m: vec![1.0; 200], stamp_s: 0.0 };
        for y in 0..10 {
            for x in 7..13 {
                depth.depth_m[y * 20 + x] = 2.0;
            }
            for x in 14..20 {
                depth.depth_m[y * 20 + x] = 6.0;
            }
        }
        let frame = CameraFrame { frame: RgbFrame::new(20, 10, Rgb::BLACK), hfov_rad: 1.0, stamp_s: 0.0 };
        let input = SceneInput { frame: Some(&frame), depth: Some(&depth), labels: Some(&labels), scan: None };
        let obs = a.classify(&input).unwrap();
        assert_eq!(obs.place_type, "kitchen");
        assert!(!obs.objects.contains(&"bed".to_string()));
        let mut corridor = LaserScan::full_circle(360, 0.05, 12.0, f32::INFINITY);
        for i in 0..360 {
            let ang = corridor.angle(i);
            let s = ang.sin().abs();
            if s > 0.2 {
                corridor.ranges[i] = (0.6 / s) as f32;
            }
        }
        let obs = a.classify(&SceneInput { frame: None, depth: None, labels: None, scan: Some(&corridor) }).unwrap();
        assert_eq!(obs.place_type, "corridor");
        assert!(a.classify(&SceneInput { frame: None, depth: None, labels: None, scan: None }).is_none());
    }

    /// A scan from (0, 0) of wall segments `[x0, y0, x1, y1]` (0.5° beams,
    /// 12 m range).
    fn scan_of(walls: &[[f64; 4]]) -> LaserScan {
        let mut s = LaserScan::full_circle(720, 0.05, 12.0, f32::INFINITY);
        for i in 0..s.len() {
            let (dx, dy) = (s.angle(i).cos(), s.angle(i).sin());
            for [x0, y0, x1, y1] in walls {
                // ray (t·dx, t·dy) against the segment p0 + u·(p1 − p0)
                let (ex, ey) = (x1 - x0, y1 - y0);
                let den = dx * ey - dy * ex;
                if den.abs() < 1e-12 {
                    continue;
                }
                let t = (x0 * ey - y0 * ex) / den;
                let u = (x0 * dy - y0 * dx) / den;
                if t > 0.0 && (0.0..=1.0).contains(&u) && (t as f32) < s.ranges[i] {
                    s.ranges[i] = t as f32;
                }
            }
        }
        s
    }

    fn label_of(scan: &LaserScan) -> Option<String> {
        OfflineSceneAnalyzer::new()
            .classify(&SceneInput { frame: None, depth: None, labels: None, scan: Some(scan) })
            .map(|o| o.place_type)
    }

    #[test]
    fn a_corridor_with_doors_in_both_walls_is_a_corridor() {
        // a 1.6 m corridor along x, 12 m long, a 1 m door on each side near the robot
        let mut walls =
            vec![[-6.0, 0.8, -0.3, 0.8], [0.7, 0.8, 6.0, 0.8], [-6.0, -0.8, -1.2, -0.8], [-0.2, -0.8, 6.0, -0.8]];
        walls.extend([[-6.0, -0.8, -6.0, 0.8], [6.0, -0.8, 6.0, 0.8]]);
        // the rooms behind the doors
        walls.extend([[-3.0, 0.8, -3.0, 4.0], [3.0, 0.8, 3.0, 4.0], [-3.0, 4.0, 3.0, 4.0]]);
        walls.extend([[-3.0, -0.8, -3.0, -4.0], [3.0, -0.8, 3.0, -4.0], [-3.0, -4.0, 3.0, -4.0]]);
        assert_eq!(label_of(&scan_of(&walls)).as_deref(), Some("corridor"));
    }

    #[test]
    fn a_door_between_two_rooms_or_a_gap_beside_furniture_is_no_corridor() {
        // standing in a 0.9 m door in a wall along y between two 4 x 6 m rooms
        let door = [[0.0, 0.45, 0.0, 3.0], [0.0, -0.45, 0.0, -3.0], [-4.0, -3.0, 4.0, -3.0], [-4.0, 3.0, 4.0, 3.0]];
        let mut rooms = door.to_vec();
        rooms.extend([[-4.0, -3.0, -4.0, 3.0], [4.0, -3.0, 4.0, 3.0]]);
        // the door's jambs are thin: its walls run across the way on, not along it
        let rooms: Vec<[f64; 4]> = rooms.iter().map(|[a, b, c, d]| [*b, *a, *d, *c]).collect();
        assert_ne!(label_of(&scan_of(&rooms)).as_deref(), Some("corridor"));
        // between a wall and a 1 m wide cabinet in a 4 x 6 m room: narrow, but only for a metre
        let mut room =
            vec![[-3.0, -0.8, 3.0, -0.8], [-3.0, 3.2, 3.0, 3.2], [-3.0, -0.8, -3.0, 3.2], [3.0, -0.8, 3.0, 3.2]];
        room.extend([[-0.5, 0.8, 0.5, 0.8], [-0.5, 0.8, -0.5, 1.4], [0.5, 0.8, 0.5, 1.4]]);
        assert_ne!(label_of(&scan_of(&room)).as_deref(), Some("corridor"));
    }

    #[test]
    fn an_object_through_a_doorway_is_in_the_next_room_one_behind_furniture_is_not() {
        // a 4 x 6 m room, the robot at (0, 0) facing +x; the wall ahead at x = 3 has a 1 m door
        let room = vec![
            [3.0, -3.0, 3.0, -0.5],
            [3.0, 0.5, 3.0, 3.0],
            [-1.0, -3.0, -1.0, 3.0],
            [-1.0, -3.0, 3.0, -3.0],
            [-1.0, 3.0, 3.0, 3.0],
        ];
        let scan = scan_of(&room);
        // a sofa 5 m away straight through the door
        assert!(through_opening(&scan, 0.0, 5.0));
        // a bed against the far wall, 2.5 m away at 30°: the wall runs on around it
        assert!(!through_opening(&scan, 30f64.to_radians(), 2.5));
        // the same bed with a chair and a table in front of it either side: they end within a
        // metre and the far wall shows again, no doorway
        let mut furnished = room.clone();
        furnished.extend([[1.2, 0.6, 1.6, 0.6], [1.2, 2.0, 1.6, 2.0]]);
        assert!(!through_opening(&scan_of(&furnished), 50f64.to_radians(), 3.0));
        // anything near is in the robot's room
        assert!(!through_opening(&scan, 0.0, 1.0));
    }

    #[test]
    fn a_narrow_room_with_furniture_along_one_wall_is_no_corridor() {
        // a 2.2 m wide, 6 m long room along x, empty, then with a 0.45 m deep sink against
        // its left wall beside the robot
        let mut room =
            vec![[-3.0, 1.1, 3.0, 1.1], [-3.0, -1.1, 3.0, -1.1], [-3.0, -1.1, -3.0, 1.1], [3.0, -1.1, 3.0, 1.1]];
        assert_ne!(label_of(&scan_of(&room)).as_deref(), Some("corridor"));
        room.extend([[-0.25, 0.65, 0.25, 0.65], [-0.25, 0.65, -0.25, 1.1], [0.25, 0.65, 0.25, 1.1]]);
        assert_ne!(label_of(&scan_of(&room)).as_deref(), Some("corridor"));
    }

    /// What the analyzer says of a view holding `objects` (label, range in
    /// metres), side by side across a 40-column image, with no scan.
    fn label_of_view(objects: &[(&str, f32)]) -> Option<String> {
        use nav_core::raster::{Rgb, RgbFrame};
        use nav_hal::hal::{CameraFrame, DepthFrame, LabelFrame};
        let (w, h) = (40usize, 10usize);
        let mut labels = LabelFrame { width: w, height: h, ids: vec![0; w * h], labels: Vec::new() };
        let mut depth = DepthFrame { width: w, height: h, depth_m: vec![8.0; w * h], stamp_s: 0.0 };
        for (i, (label, range)) in objects.iter().enumerate() {
            let x0 = i * 8;
            labels.paint_box(label, [x0 as u32, 0, x0 as u32 + 5, h as u32 - 1]);
            for y in 0..h {
                for x in x0..x0 + 6 {
                    depth.depth_m[y * w + x] = *range;
                }
            }
        }
        let frame = CameraFrame { frame: RgbFrame::new(w, h, Rgb::BLACK), hfov_rad: 1.2, stamp_s: 0.0 };
        let input = SceneInput { frame: Some(&frame), depth: Some(&depth), labels: Some(&labels), scan: None };
        OfflineSceneAnalyzer::new().classify(&input).map(|o| o.place_type)
    }

    #[test]
    fn objects_found_in_rooms_and_corridors_alike_do_not_make_a_corridor_and_a_tie_is_no_answer() {
        // a plant is as much a living room's as an office's: no guess
        assert_eq!(label_of_view(&[("plant", 1.0)]), None);
        // with a desk beside it, an office
        assert_eq!(label_of_view(&[("plant", 1.0), ("desk", 2.0)]).as_deref(), Some("office"));
        // a shoe rack belongs to corridors only
        assert_eq!(label_of_view(&[("shoe rack", 1.0)]).as_deref(), Some("corridor"));
    }
}
