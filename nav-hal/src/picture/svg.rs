//! The SVG form of a [`MapPicture`]: hand-written XML with the same
//! layout as the raster, plus `<title>` tooltips.

use super::{DEFAULT_ROBOT_RADIUS_M, GOAL, MARGIN_PX, MapPicture, PATH, START, TARGET, WALL, place_colour};
use super::{hex, xml_escape};
use crate::arena::Goal;
use crate::arena::semantics::{object_style, room_colour};
use nav_core::geometry::Point2;
use nav_core::raster::Rgb;
use std::fmt::Write as _;

impl MapPicture {
    /// The picture as an SVG document.
    pub fn to_svg(&self) -> String {
        let (w, h) = self.size();
        let mut o = String::new();
        let _ = writeln!(
            o,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="monospace">"#
        );
        let _ = writeln!(o, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
        let [x0, y0, x1, y1] = self.arena.bounds;
        let (bx0, by0) = self.px(Point2::new(x0, y1));
        let (bx1, by1) = self.px(Point2::new(x1, y0));
        let _ = writeln!(
            o,
            r#"<rect x="{bx0:.1}" y="{by0:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
            bx1 - bx0,
            by1 - by0,
            hex(Rgb([244, 244, 240]))
        );
        self.svg_rooms(&mut o);
        self.svg_walls_and_objects(&mut o);
        self.svg_track(&mut o);
        self.svg_start_scale_title(&mut o);
        o.push_str("</svg>\n");
        o
    }

    /// Room polygons (tinted, with a tooltip) and their names.
    fn svg_rooms(&self, o: &mut String) {
        for room in &self.arena.rooms {
            let pts: Vec<String> = room
                .points()
                .into_iter()
                .map(|p| {
                    let (x, y) = self.px(p);
                    format!("{x:.1},{y:.1}")
                })
                .collect();
            let _ = writeln!(
                o,
                r#"<polygon points="{}" fill="{}"><title>{}</title></polygon>"#,
                pts.join(" "),
                hex(room_colour(&room.name).mix(Rgb::WHITE, 0.6)),
                xml_escape(&room.name)
            );
        }
        for room in &self.arena.rooms {
            let (cx, cy, _) = self.room_label(room);
            let _ = writeln!(
                o,
                r##"<text x="{cx:.1}" y="{cy:.1}" font-size="14" fill="#5a5a5a" text-anchor="middle" dominant-baseline="middle">{}</text>"##,
                xml_escape(&room.name)
            );
        }
    }

    /// Walls, obstacles, labelled objects (the goal ringed) and a point goal.
    fn svg_walls_and_objects(&self, o: &mut String) {
        let s = self.scale();
        for (seg, _) in self.arena.all_segments() {
            let (ax, ay) = self.px(seg.a);
            let (bx, by) = self.px(seg.b);
            let _ = writeln!(
                o,
                r#"<line x1="{ax:.1}" y1="{ay:.1}" x2="{bx:.1}" y2="{by:.1}" stroke="{}" stroke-width="3" stroke-linecap="round"/>"#,
                hex(WALL)
            );
        }
        for ob in &self.arena.obstacles {
            let (cx, cy) = self.px(Point2::new(ob.x, ob.y));
            let _ = writeln!(
                o,
                r##"<circle cx="{cx:.1}" cy="{cy:.1}" r="{:.1}" fill="#96928c" stroke="#505050"/>"##,
                ob.r * s
            );
        }
        let goal_label = match &self.arena.goal {
            Some(Goal::Object { label }) => Some(label.as_str()),
            _ => None,
        };
        let sd = self.arena.success_distance_m();
        for ob in &self.arena.objects {
            let (cx, cy) = self.px(ob.center());
            let is_goal = goal_label == Some(ob.label.as_str());
            if is_goal {
                let _ = writeln!(
                    o,
                    r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="{:.1}" fill="none" stroke="{}" stroke-dasharray="4 3"/>"#,
                    (ob.r + sd) * s,
                    hex(GOAL)
                );
            }
            let _ = writeln!(
                o,
                r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="{:.1}" fill="{}" stroke="{}" stroke-width="{}"><title>{}</title></circle>"#,
                ob.r * s,
                hex(object_style(&ob.label).colour),
                if is_goal { hex(GOAL) } else { hex(Rgb([40, 40, 40])) },
                if is_goal { 3 } else { 1 },
                xml_escape(&ob.label)
            );
            let _ = writeln!(
                o,
                r#"<text x="{cx:.1}" y="{cy:.1}" font-size="11" text-anchor="middle" dominant-baseline="middle" stroke="white" stroke-width="3" paint-order="stroke">{}</text>"#,
                xml_escape(&ob.label)
            );
        }
        if let Some(Goal::Point { x, y }) = &self.arena.goal {
            let (gx, gy) = self.px(Point2::new(*x, *y));
            let g = hex(GOAL);
            let _ = writeln!(
                o,
                r#"<circle cx="{gx:.1}" cy="{gy:.1}" r="{:.1}" fill="none" stroke="{g}" stroke-width="2"/>"#,
                sd * s
            );
            let _ = writeln!(
                o,
                r#"<path d="M{:.1},{:.1}L{:.1},{:.1}M{:.1},{:.1}L{:.1},{:.1}" stroke="{g}" stroke-width="3"/>"#,
                gx - 8.0,
                gy - 8.0,
                gx + 8.0,
                gy + 8.0,
                gx - 8.0,
                gy + 8.0,
                gx + 8.0,
                gy - 8.0
            );
        }
    }

    /// The trajectory, the robot at its end, anchors and the planner target.
    fn svg_track(&self, o: &mut String) {
        let s = self.scale();
        if self.trajectory.len() >= 2 {
            let pts: Vec<String> = self
                .trajectory
                .iter()
                .map(|&p| {
                    let (x, y) = self.px(p);
                    format!("{x:.1},{y:.1}")
                })
                .collect();
            let _ = writeln!(
                o,
                r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2" stroke-linejoin="round"/>"#,
                pts.join(" "),
                hex(PATH)
            );
        }
        if let Some(&last) = self.trajectory.last() {
            let (lx, ly) = self.px(last);
            let _ = writeln!(
                o,
                r#"<circle cx="{lx:.1}" cy="{ly:.1}" r="{:.1}" fill="{}"/>"#,
                DEFAULT_ROBOT_RADIUS_M * s,
                hex(PATH)
            );
        }
        for &(p, place) in &self.anchors {
            let (ax, ay) = self.px(p);
            let _ = writeln!(
                o,
                r#"<circle cx="{ax:.1}" cy="{ay:.1}" r="5" fill="{}" stroke="black"><title>place {place}</title></circle>"#,
                hex(place_colour(place))
            );
        }
        if let Some(g) = self.goal {
            let (gx, gy) = self.px(g);
            let t = hex(TARGET);
            let _ =
                writeln!(o, r#"<circle cx="{gx:.1}" cy="{gy:.1}" r="7" fill="none" stroke="{t}" stroke-width="2"/>"#);
            let _ = writeln!(o, r#"<circle cx="{gx:.1}" cy="{gy:.1}" r="2.5" fill="{t}"/>"#);
        }
    }

    /// The start pose, the 1 m scale bar and the title.
    fn svg_start_scale_title(&self, o: &mut String) {
        let s = self.scale();
        let (_, h) = self.size();
        let start = self.arena.start.pose();
        let (sx, sy) = self.px(start.position());
        let (tx, ty) = self.px(start.transform_point(Point2::new(DEFAULT_ROBOT_RADIUS_M * 2.2, 0.0)));
        let st = hex(START);
        let _ = writeln!(
            o,
            r#"<circle cx="{sx:.1}" cy="{sy:.1}" r="{:.1}" fill="{st}"><title>start</title></circle>"#,
            DEFAULT_ROBOT_RADIUS_M * s
        );
        let _ = writeln!(
            o,
            r#"<line x1="{sx:.1}" y1="{sy:.1}" x2="{tx:.1}" y2="{ty:.1}" stroke="{st}" stroke-width="2"/>"#
        );
        let (sbx, sby) = (MARGIN_PX, h as f64 - MARGIN_PX / 2.0);
        let _ = writeln!(
            o,
            r#"<line x1="{sbx:.1}" y1="{sby:.1}" x2="{:.1}" y2="{sby:.1}" stroke="black" stroke-width="2"/><text x="{:.1}" y="{sby:.1}" font-size="11" dominant-baseline="middle">1 m</text>"#,
            sbx + s,
            sbx + s + 4.0
        );
        if let Some(title) = &self.title {
            let _ = writeln!(
                o,
                r#"<text x="{MARGIN_PX:.1}" y="{:.1}" font-size="16" dominant-baseline="hanging">{}</text>"#,
                MARGIN_PX / 2.0,
                xml_escape(title)
            );
        }
    }
}
