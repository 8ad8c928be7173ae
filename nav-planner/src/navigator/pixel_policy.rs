//! [`PixelGoalPolicy`], the default low-level policy (the role PixelNav plays
//! in the original design): the goal pixel the perception stage reports — or,
//! when there is none, the planner's bearing — is projected through depth
//! into a metric waypoint, which the robot reaches on a local LiDAR map with
//! A* and the discrete actions.
//!
//! - `goal_flag == false`: a waypoint along the planner's bearing (its
//!   distance hint, else [`PixelGoalConfig::default_distance_m`]); STOP
//!   (hand back to the planner) when it is reached or blocked.
//! - `goal_flag == true`: turn to the planner's bearing and ask the
//!   perception stage. Not seen → hand back ([`PolicyStop::NotSeen`]).
//!   Seen → waypoint [`PixelGoalConfig::standoff_m`] short of the target's
//!   surface along the goal pixel's ray; re-perceive every
//!   [`PixelGoalConfig::reperceive_every`] steps; the final STOP
//!   ([`PolicyStop::Reached`]) when the perceived range is within
//!   [`PixelGoalConfig::stop_distance_m`], or when the target point last
//!   perceived (carried by odometry) is within it while the camera no
//!   longer sees it (a low object below the image's bottom edge at close
//!   range) — and only if it was seen within
//!   [`PixelGoalConfig::near_memory_m`]. A sighting below the view that
//!   reads farther than the remembered point keeps that point (the visible
//!   part's range stops shrinking at the camera's blind distance), and a
//!   blocked approach stops when the remembered point is within
//!   [`PixelGoalConfig::blocked_stop_distance_m`].

use super::policy::{LowLevelPolicy, PolicyAction, PolicyGoal, PolicyObservation, PolicyStop};
use crate::protocol::perception::GoalSighting;
use async_trait::async_trait;
use nav_core::action::{Action, StepConfig};
use nav_core::geometry::{Point2, Pose2, angle_diff_abs, normalize_angle};
use nav_core::lidar::{corridor_clearance, corridor_clearance_dir};
use nav_core::local_map::{LocalMap, LocalMapConfig};
use serde::{Deserialize, Serialize};

/// Once earlier sightings placed the target (and always with a scan made
/// from the camera's own depth, see [`PixelGoalConfig::lower_part_within_m`]),
/// a range-sensor return along a target that continues below the view
/// counts as the target's lower part only this far short of its range,
/// metres.
pub const LOWER_PART_WITHIN_M: f64 = 0.3;

/// Settings of [`PixelGoalPolicy`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PixelGoalConfig {
    /// Step sizes of the action space.
    pub step: StepConfig,
    /// Turn until the heading error is at most this, degrees (15, half a turn step).
    pub heading_tolerance_deg: f64,
    /// Half width of the corridor that must be free to step forward
    /// (robot radius plus a margin), metres.
    pub corridor_half_width_m: f64,
    /// Extra free distance required beyond one step, metres.
    pub forward_margin_m: f64,
    /// Final STOP when the perceived range to the target is at most this,
    /// metres (the success distance 1.0 minus a margin).
    pub stop_distance_m: f64,
    /// When the way on is blocked while approaching, STOP anyway if the
    /// target was just perceived at most this far away, metres (the success
    /// distance minus a small margin: furniture or a counter in front of
    /// the target keeps the robot from getting within
    /// [`PixelGoalConfig::stop_distance_m`]).
    pub blocked_stop_distance_m: f64,
    /// The approach waypoint lies this far short of the target's surface, metres.
    pub standoff_m: f64,
    /// Waypoint distance for `goal_flag == false` without a distance hint, metres.
    pub default_distance_m: f64,
    /// Longest waypoint distance, metres.
    pub max_distance_m: f64,
    /// Re-perceive after this many steps while approaching.
    pub reperceive_every: u32,
    /// A waypoint this close counts as reached, metres.
    pub waypoint_tolerance_m: f64,
    /// Steps per planner decision before handing back.
    pub max_steps_per_goal: u32,
    /// Turns in a row without a forward step before handing back.
    pub max_turns_in_place: u32,
    /// Look-ahead along the A* path, metres.
    pub lookahead_m: f64,
    /// The remembered target point may end the episode only if the target
    /// was last perceived at most this far away, metres.
    pub near_memory_m: f64,
    /// The local map (rebuilt at each planner decision, centred on the robot).
    pub map: LocalMapConfig,
    /// Plan on the local map (true); false steers straight at the waypoint
    /// on the current scan only (the "no map" ablation).
    pub use_map: bool,
    /// At a first sighting of a target that continues below the view, a
    /// range-sensor return along it counts as its lower part only within
    /// this distance short of the camera's range, metres; `None`: at any
    /// distance (a LiDAR below the camera sees the part the camera
    /// misses). Set it when the scan is made from the same depth camera:
    /// then a much nearer return is a bump or another object.
    pub lower_part_within_m: Option<f64>,
}

impl Default for PixelGoalConfig {
    fn default() -> Self {
        Self {
            step: StepConfig::default(),
            heading_tolerance_deg: 15.0,
            corridor_half_width_m: 0.22,
            forward_margin_m: 0.05,
            stop_distance_m: 0.8,
            blocked_stop_distance_m: 0.95,
            standoff_m: 0.45,
            default_distance_m: 2.0,
            max_distance_m: 4.0,
            reperceive_every: 3,
            waypoint_tolerance_m: 0.2,
            max_steps_per_goal: 40,
            max_turns_in_place: 8,
            lookahead_m: 1.0,
            near_memory_m: 2.0,
            map: LocalMapConfig { size_m: 14.0, inflation_m: 0.22, ..LocalMapConfig::default() },
            use_map: true,
            lower_part_within_m: None,
        }
    }
}

impl PixelGoalConfig {
    /// Widens [`near_memory_m`](Self::near_memory_m) to the camera's blind
    /// zone: a level camera `camera_height_m` above the floor with a
    /// `hfov_deg` horizontal field of view on a `width` × `height` image
    /// sees the floor only from `camera_height_m / tan(vfov / 2)` on, so a
    /// low target leaves the view about that far away (2.6 m for
    /// MiniWorld's 1.5 m camera with a 60° vertical field of view). The
    /// remembered target point must be allowed to end the episode after a
    /// sighting that far away, or a low target could never be reached.
    pub fn with_camera_blind_zone(
        mut self,
        camera_height_m: Option<f64>,
        hfov_deg: f64,
        width: u32,
        height: u32,
    ) -> Self {
        let Some(h) = camera_height_m.filter(|h| h.is_finite() && *h > 0.0) else { return self };
        if width == 0 || height == 0 || !(hfov_deg > 0.0 && hfov_deg < 180.0) {
            return self;
        }
        let half_h = (hfov_deg.to_radians() / 2.0).tan();
        let half_v = half_h * f64::from(height) / f64::from(width);
        if half_v > 1e-3 {
            const MARGIN_M: f64 = 0.5;
            self.near_memory_m = self.near_memory_m.max((h / half_v + MARGIN_M).min(self.max_distance_m));
        }
        self
    }
}

/// What the policy is doing for the current planner decision.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// `goal_flag == false`: go to a waypoint along the bearing (computed
    /// at the first step, when the pose is known).
    Explore { heading: f64, distance: f64 },
    /// `goal_flag == true`: face the bearing, then follow the perception.
    Approach { heading: f64 },
    /// Nothing to do (before the first reset).
    Idle,
}

/// See the [module docs](self).
#[derive(Debug, Clone)]
pub struct PixelGoalPolicy {
    config: PixelGoalConfig,
    mode: Mode,
    map: Option<LocalMap>,
    waypoint: Option<Point2>,
    /// The target's surface point last perceived, and the range it was seen at.
    target: Option<(Point2, f64)>,
    /// Outcome of the latest perception: `Some(seen)`; `None` before any.
    last_seen: Option<bool>,
    last_range: Option<f64>,
    /// The latest sighting continued below the view, at this absolute bearing.
    below_view_bearing: Option<f64>,
    /// Sightings with a range for the current planner decision.
    sightings: u32,
    since_perception: u32,
    steps: u32,
    turns_in_place: u32,
}

impl Default for PixelGoalPolicy {
    fn default() -> Self {
        Self::new(PixelGoalConfig::default())
    }
}

impl PixelGoalPolicy {
    /// A policy with the given settings.
    pub fn new(config: PixelGoalConfig) -> Self {
        Self {
            config,
            mode: Mode::Idle,
            map: None,
            waypoint: None,
            target: None,
            last_seen: None,
            last_range: None,
            below_view_bearing: None,
            sightings: 0,
            since_perception: 0,
            steps: 0,
            turns_in_place: 0,
        }
    }

    /// The settings.
    pub fn config(&self) -> &PixelGoalConfig {
        &self.config
    }

    fn forward_clear(&self, obs: &PolicyObservation<'_>) -> bool {
        let need = self.config.step.forward_m + self.config.forward_margin_m;
        let free = match obs.scan {
            Some(scan) => f64::from(corridor_clearance(scan, self.config.corridor_half_width_m)),
            None => obs.forward_clearance_m.unwrap_or(0.0),
        };
        free > need
    }

    /// A turn toward `heading`, or `None` when within the tolerance.
    fn turn_toward(&mut self, pose: Pose2, heading: f64) -> Option<Action> {
        if angle_diff_abs(heading, pose.yaw) <= self.config.heading_tolerance_deg.to_radians() + 1e-9 {
            return None;
        }
        self.turns_in_place += 1;
        Some(if normalize_angle(heading - pose.yaw) > 0.0 { Action::TurnLeft } else { Action::TurnRight })
    }

    /// One step toward `to` along an A* path on the local map (straight at
    /// it when the map has no path); `Done(Blocked)` when the way ahead is
    /// closed.
    fn drive_to(&mut self, obs: &PolicyObservation<'_>, to: Point2) -> PolicyAction {
        let here = obs.pose.position();
        let aim = match self.map.as_mut() {
            Some(map) => {
                let costs = map.costmap();
                let path = map.plan(&costs, here, to);
                if path.success { LocalMap::lookahead(&costs, here, &path, self.config.lookahead_m) } else { None }
            }
            None => None,
        }
        .unwrap_or(to);
        let heading = if aim.distance(here) < 1e-6 { here.bearing_to(to) } else { here.bearing_to(aim) };
        if self.turns_in_place > self.config.max_turns_in_place {
            return PolicyAction::Done(PolicyStop::NoProgress);
        }
        if let Some(turn) = self.turn_toward(obs.pose, heading) {
            return PolicyAction::Step(turn);
        }
        if self.forward_clear(obs) {
            self.turns_in_place = 0;
            PolicyAction::Step(Action::Forward)
        } else {
            PolicyAction::Done(PolicyStop::Blocked)
        }
    }

    /// The target remembered from earlier sightings (carried by odometry)
    /// is within `reach` metres, and it may end the episode: it was last
    /// perceived within [`PixelGoalConfig::near_memory_m`].
    fn remembered_within(&self, here: Point2, reach: f64) -> bool {
        self.target.is_some_and(|(p, seen_at)| p.distance(here) <= reach && seen_at <= self.config.near_memory_m)
    }

    /// The range to the target just perceived: the perception's depth
    /// range, or — when the target continued below the view, so its nearest
    /// surface is out of the camera's sight — the range sensor's distance
    /// along the target's bearing if that is shorter (the obstacle there,
    /// no farther than the target's visible part, is the target's lower
    /// part).
    fn perceived_range(&self, obs: &PolicyObservation<'_>) -> Option<f64> {
        let range = self.last_range?;
        let fused = match (self.below_view_bearing, obs.scan) {
            (Some(bearing), Some(scan)) => {
                const RAY_HALF_WIDTH_M: f64 = 0.05;
                let rel = normalize_angle(bearing - obs.pose.yaw);
                let along = f64::from(corridor_clearance_dir(scan, rel, RAY_HALF_WIDTH_M)) + RAY_HALF_WIDTH_M;
                // After earlier sightings placed the target (and `range` is no farther than that
                // point), only a return just short of it is its lower part; one much nearer is
                // something else in the way (a table's edge, a bump elsewhere). A first sighting
                // has nothing to check the range sensor against.
                let within =
                    if self.sightings > 1 { Some(LOWER_PART_WITHIN_M) } else { self.config.lower_part_within_m };
                if within.is_none_or(|m| along >= range - m) { range.min(along) } else { range }
            }
            _ => range,
        };
        Some(fused)
    }

    /// `goal_flag == false`: face the bearing, project it through the range
    /// sensor into a waypoint (the free distance along it, at most the
    /// planner's distance), then drive there.
    fn explore(&mut self, obs: &PolicyObservation<'_>, heading: f64, distance: f64) -> PolicyAction {
        let here = obs.pose.position();
        let wp = match self.waypoint {
            Some(wp) => wp,
            None => {
                if let Some(turn) = self.turn_toward(obs.pose, heading) {
                    return PolicyAction::Step(turn);
                }
                if distance < self.config.waypoint_tolerance_m {
                    return PolicyAction::Done(PolicyStop::Arrived);
                }
                let rel = normalize_angle(heading - obs.pose.yaw);
                let free = match obs.scan {
                    Some(scan) => f64::from(corridor_clearance_dir(scan, rel, self.config.corridor_half_width_m)),
                    None => obs.forward_clearance_m.unwrap_or(0.0),
                };
                let d = distance.min(free - self.config.forward_margin_m);
                if d < self.config.step.forward_m {
                    return PolicyAction::Done(PolicyStop::Blocked);
                }
                let wp = here + Point2::new(heading.cos(), heading.sin()) * d;
                self.waypoint = Some(wp);
                wp
            }
        };
        if wp.distance(here) <= self.config.waypoint_tolerance_m {
            return PolicyAction::Done(PolicyStop::Arrived);
        }
        self.drive_to(obs, wp)
    }

    fn approach(&mut self, obs: &PolicyObservation<'_>, heading: f64) -> PolicyAction {
        let here = obs.pose.position();
        // 1. face the planner's bearing, then look
        let Some(seen) = self.last_seen else {
            if let Some(turn) = self.turn_toward(obs.pose, heading) {
                return PolicyAction::Step(turn);
            }
            return PolicyAction::Perceive;
        };
        // 2. the final STOP: perceived within the stopping distance now, or (out of the camera's view
        //    at close range) the remembered target point is, after a near sighting
        if seen
            && self.since_perception == 0
            && self.perceived_range(obs).is_some_and(|r| r <= self.config.stop_distance_m)
        {
            return PolicyAction::Done(PolicyStop::Reached);
        }
        if let Some((p, seen_at)) = self.target {
            // predicted within reach: look now (the STOP needs a perception at this pose)
            if p.distance(here) <= self.config.stop_distance_m {
                if self.since_perception > 0 {
                    return PolicyAction::Perceive;
                }
                if !seen && seen_at <= self.config.near_memory_m {
                    return PolicyAction::Done(PolicyStop::Reached);
                }
            }
        } else if !seen {
            // the planner said it is in view, the perception stage does not see it
            return PolicyAction::Done(PolicyStop::NotSeen);
        }
        // 3. re-perceive every few steps
        if self.since_perception >= self.config.reperceive_every.max(1) {
            return PolicyAction::Perceive;
        }
        // 4. drive to the waypoint; at the waypoint face the target and look again
        let Some(wp) = self.waypoint else { return PolicyAction::Done(PolicyStop::NotSeen) };
        if wp.distance(here) <= self.config.waypoint_tolerance_m {
            if let Some((p, _)) = self.target {
                if let Some(turn) = self.turn_toward(obs.pose, here.bearing_to(p)) {
                    return PolicyAction::Step(turn);
                }
            }
            if self.since_perception > 0 {
                return PolicyAction::Perceive;
            }
            return PolicyAction::Done(if seen { PolicyStop::Arrived } else { PolicyStop::NotSeen });
        }
        match self.drive_to(obs, wp) {
            // blocked short of the target: look once more, and stop if it is within reach anyway
            PolicyAction::Done(PolicyStop::Blocked) if seen && self.since_perception > 0 => PolicyAction::Perceive,
            PolicyAction::Done(PolicyStop::Blocked)
                if seen && self.perceived_range(obs).is_some_and(|r| r <= self.config.blocked_stop_distance_m) =>
            {
                PolicyAction::Done(PolicyStop::Reached)
            }
            // blocked with the target out of the camera's sight (below or beside the view): the
            // remembered point decides
            PolicyAction::Done(PolicyStop::Blocked)
                if (!seen || self.below_view_bearing.is_some())
                    && self.remembered_within(here, self.config.blocked_stop_distance_m) =>
            {
                PolicyAction::Done(PolicyStop::Reached)
            }
            other => other,
        }
    }
}

#[async_trait]
impl LowLevelPolicy for PixelGoalPolicy {
    fn name(&self) -> &str {
        "pixel-goal"
    }

    fn reset(&mut self, goal: &PolicyGoal, pose: Pose2) {
        let heading = normalize_angle(pose.yaw + goal.angle_rad);
        self.mode = if goal.goal_flag {
            Mode::Approach { heading }
        } else {
            let d = match goal.distance_hint_m {
                Some(d) if d.is_finite() && d >= 0.0 => d,
                _ => self.config.default_distance_m,
            };
            Mode::Explore { heading, distance: d.min(self.config.max_distance_m) }
        };
        self.map =
            if self.config.use_map { LocalMap::new(self.config.map.clone(), pose.position()).ok() } else { None };
        self.waypoint = None;
        self.target = None;
        self.last_seen = None;
        self.last_range = None;
        self.below_view_bearing = None;
        self.sightings = 0;
        self.since_perception = 0;
        self.steps = 0;
        self.turns_in_place = 0;
    }

    fn perceived(&mut self, sighting: Option<&GoalSighting>, pose: Pose2) {
        self.since_perception = 0;
        self.last_seen = Some(sighting.is_some());
        self.last_range = sighting.and_then(|s| s.range_m);
        self.below_view_bearing = sighting.filter(|s| s.below_view).map(|s| pose.yaw + s.bearing_rad);
        let Some(s) = sighting else { return };
        let a = pose.yaw + s.bearing_rad;
        let dir = Point2::new(a.cos(), a.sin());
        let here = pose.position();
        match s.range_m.filter(|r| r.is_finite() && *r >= 0.0) {
            Some(r) => {
                // Once the target's base is below the image, its visible part's range stops
                // shrinking (a low object's top stays at the camera's blind distance): keep the
                // point an earlier sighting placed, carried by odometry, when it is nearer.
                let (point, r) = match self.target {
                    Some((earlier, _)) if s.below_view && earlier.distance(here) < r => {
                        (earlier, earlier.distance(here))
                    }
                    _ => (here + dir * r, r),
                };
                self.last_range = Some(r);
                self.target = Some((point, r));
                self.sightings += 1;
                let dir = if r > 1e-6 { (point - here) * (1.0 / r) } else { dir };
                self.waypoint = Some(here + dir * (r - self.config.standoff_m).max(0.0));
            }
            // a bearing without depth: a short step toward it
            None => self.waypoint = Some(here + dir * self.config.step.forward_m * 2.0),
        }
    }

    async fn act(&mut self, obs: &PolicyObservation<'_>) -> PolicyAction {
        if let (Some(map), Some(scan)) = (self.map.as_mut(), obs.scan) {
            map.integrate(obs.pose, scan);
        }
        if self.steps >= self.config.max_steps_per_goal {
            return PolicyAction::Done(PolicyStop::NoProgress);
        }
        let action = match self.mode {
            Mode::Idle => PolicyAction::Done(PolicyStop::Arrived),
            Mode::Approach { heading } => self.approach(obs, heading),
            Mode::Explore { heading, distance } => self.explore(obs, heading, distance),
        };
        if let PolicyAction::Step(_) = action {
            self.steps += 1;
            self.since_perception += 1;
        }
        action
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nav_core::lidar::LaserScan;

    fn goal(flag: bool, angle_deg: f64, hint: Option<f64>) -> PolicyGoal {
        PolicyGoal { goal_flag: flag, angle_rad: angle_deg.to_radians(), target: "bed".into(), distance_hint_m: hint }
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().build().expect("runtime").block_on(f)
    }

    fn open() -> LaserScan {
        LaserScan::full_circle(360, 0.05, 12.0, f32::INFINITY)
    }

    /// Runs the policy in open space; `see` answers perceptions from the pose.
    fn drive(
        p: &mut PixelGoalPolicy,
        mut pose: Pose2,
        see: impl Fn(Pose2) -> Option<GoalSighting>,
        max: usize,
    ) -> (Vec<Action>, PolicyStop, Pose2) {
        let scan = open();
        let cfg = StepConfig::default();
        let mut actions = Vec::new();
        for _ in 0..max {
            let obs =
                PolicyObservation { pose, scan: Some(&scan), forward_clearance_m: None, frame: None, depth: None };
            match block_on(p.act(&obs)) {
                PolicyAction::Step(a) => {
                    actions.push(a);
                    pose = nav_core::action::step_pose(pose, a, &cfg);
                }
                PolicyAction::Perceive => p.perceived(see(pose).as_ref(), pose),
                PolicyAction::Done(s) => return (actions, s, pose),
            }
        }
        panic!("no hand-back after {max} decisions: {actions:?}");
    }

    #[test]
    fn explores_along_the_bearing_and_hands_back_at_the_waypoint() {
        let mut p = PixelGoalPolicy::default();
        p.reset(&goal(false, 90.0, Some(2.0)), Pose2::origin());
        let (actions, stop, pose) = drive(&mut p, Pose2::origin(), |_| None, 40);
        assert_eq!(stop, PolicyStop::Arrived);
        assert_eq!(&actions[..3], &[Action::TurnLeft; 3]);
        assert!((pose.y - 2.0).abs() < 0.25 && pose.x.abs() < 0.2, "{pose:?}");
    }

    #[test]
    fn without_the_map_it_steers_on_the_scan_alone() {
        // the "no map" ablation: no local map, the same waypoint reached straight on the scan
        let mut p = PixelGoalPolicy::new(PixelGoalConfig { use_map: false, ..PixelGoalConfig::default() });
        p.reset(&goal(false, 90.0, Some(2.0)), Pose2::origin());
        assert!(p.map.is_none());
        let (_, stop, pose) = drive(&mut p, Pose2::origin(), |_| None, 40);
        assert_eq!(stop, PolicyStop::Arrived);
        assert!((pose.y - 2.0).abs() < 0.25 && pose.x.abs() < 0.2, "{pose:?}");
    }

    #[test]
    fn goal_flag_without_a_sighting_hands_back() {
        let mut p = PixelGoalPolicy::default();
        p.reset(&goal(true, 0.0, None), Pose2::origin());
        let (actions, stop, _) = drive(&mut p, Pose2::origin(), |_| None, 10);
        assert!(actions.is_empty());
        assert_eq!(stop, PolicyStop::NotSeen);
    }

    #[test]
    fn approaches_a_perceived_target_and_stops_within_the_distance() {
        // a target surface at (3, 0); the perception reports its bearing and range from the pose
        let t = Point2::new(3.0, 0.0);
        let see = move |pose: Pose2| {
            let r = pose.position().distance(t);
            Some(GoalSighting {
                pixel: [160, 200],
                bbox: None,
                bearing_rad: pose.relative_bearing(t),
                range_m: Some(r),
                below_view: false,
            })
        };
        let mut p = PixelGoalPolicy::default();
        p.reset(&goal(true, 0.0, None), Pose2::origin());
        let (_, stop, pose) = drive(&mut p, Pose2::origin(), see, 60);
        assert_eq!(stop, PolicyStop::Reached);
        assert!(pose.position().distance(t) <= 0.8 + 1e-9, "{pose:?}");
    }

    #[test]
    fn a_target_out_of_view_far_away_never_ends_the_episode() {
        // seen once 3 m away, then never again: the robot goes to the waypoint and hands back
        let t = Point2::new(3.0, 0.0);
        let first = std::cell::Cell::new(true);
        let see = move |pose: Pose2| {
            first.replace(false).then(|| GoalSighting {
                pixel: [160, 200],
                bbox: None,
                bearing_rad: pose.relative_bearing(t),
                range_m: Some(pose.position().distance(t)),
                below_view: false,
            })
        };
        let mut p = PixelGoalPolicy::default();
        p.reset(&goal(true, 0.0, None), Pose2::origin());
        let (_, stop, _) = drive(&mut p, Pose2::origin(), see, 80);
        assert_ne!(stop, PolicyStop::Reached);
    }

    /// A high camera next to a box: the box's visible top is 1.2 m away,
    /// its near face (below the view) 0.5 m, where the range sensor sees it.
    /// One sighting per entry of `below_view`, then the policy's next action.
    fn next_to_a_box(below_view: &[bool]) -> PolicyAction {
        let mut scan = open();
        scan.ranges[180] = 0.5;
        let mut p = PixelGoalPolicy::default();
        p.reset(&goal(true, 0.0, None), Pose2::origin());
        let obs = PolicyObservation {
            pose: Pose2::origin(),
            scan: Some(&scan),
            forward_clearance_m: None,
            frame: None,
            depth: None,
        };
        assert_eq!(block_on(p.act(&obs)), PolicyAction::Perceive);
        for &below_view in below_view {
            let s = GoalSighting {
                pixel: [160, 239],
                bbox: Some([100, 200, 220, 239]),
                bearing_rad: 0.0,
                range_m: Some(1.2),
                below_view,
            };
            p.perceived(Some(&s), Pose2::origin());
        }
        block_on(p.act(&obs))
    }

    #[test]
    fn a_target_below_the_view_takes_the_range_sensor_distance() {
        assert_eq!(next_to_a_box(&[true]), PolicyAction::Done(PolicyStop::Reached));
        // the same view of a target that ends inside the image: 1.2 m is its nearest surface
        assert_ne!(next_to_a_box(&[false]), PolicyAction::Done(PolicyStop::Reached));
    }

    /// A low target 3 m ahead: its visible top reads its true range until
    /// the robot is within 1.4 m, then stays at 1.4 m (the camera's blind
    /// distance), flagged below the view. The earlier sighting's point,
    /// carried by odometry, ends the approach within the stopping distance.
    #[test]
    fn a_low_target_is_reached_on_the_point_seen_before_it_left_the_view() {
        let t = Point2::new(3.0, 0.0);
        let see = |pose: Pose2| {
            let d = pose.position().distance(t);
            Some(GoalSighting {
                pixel: [160, 239],
                bbox: None,
                bearing_rad: pose.relative_bearing(t),
                range_m: Some(d.max(1.4)),
                below_view: d < 1.4,
            })
        };
        let mut p = PixelGoalPolicy::default();
        p.reset(&goal(true, 0.0, None), Pose2::origin());
        let (_, stop, pose) = drive(&mut p, Pose2::origin(), see, 80);
        assert_eq!(stop, PolicyStop::Reached);
        let d = pose.position().distance(t);
        assert!(d <= p.config().stop_distance_m + 0.05, "stopped {d:.2} m from the target");
    }

    /// After sightings placed the target 1.2 m away, a range-sensor return
    /// at 0.5 m along its bearing is something else in the way: no STOP.
    #[test]
    fn a_near_return_contradicting_earlier_sightings_is_not_the_target() {
        assert_ne!(next_to_a_box(&[false, true]), PolicyAction::Done(PolicyStop::Reached));
    }

    #[test]
    fn the_near_memory_covers_the_cameras_blind_zone() {
        // MiniWorld: 1.5 m camera, 60° vertical field of view on 320 × 240 → floor visible from 2.6 m
        let hfov = 2.0 * ((30f64).to_radians().tan() * 320.0 / 240.0).atan().to_degrees();
        let c = PixelGoalConfig::default().with_camera_blind_zone(Some(1.5), hfov, 320, 240);
        assert!((c.near_memory_m - (1.5 / 30f64.to_radians().tan() + 0.5)).abs() < 1e-9, "{}", c.near_memory_m);
        // a low camera keeps the default; no height, no change
        assert_eq!(PixelGoalConfig::default().with_camera_blind_zone(Some(0.3), 90.0, 320, 240).near_memory_m, 2.0);
        assert_eq!(PixelGoalConfig::default().with_camera_blind_zone(None, 90.0, 320, 240).near_memory_m, 2.0);
    }

    #[test]
    fn blocked_ahead_hands_back() {
        // no scan, 0.1 m free ahead (a depth-only robot facing a wall)
        let mut p = PixelGoalPolicy::default();
        p.reset(&goal(false, 0.0, Some(2.0)), Pose2::origin());
        let obs = PolicyObservation {
            pose: Pose2::origin(),
            scan: None,
            forward_clearance_m: Some(0.1),
            frame: None,
            depth: None,
        };
        assert_eq!(block_on(p.act(&obs)), PolicyAction::Done(PolicyStop::Blocked));
    }
}
