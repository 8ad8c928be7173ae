//! The built-in simulator: a continuous 2D world built from an
//! [`Arena`], a disc-shaped robot, a LiDAR, an RGB-D camera, ground-truth
//! detections, coverage and geodesic distances.
//!
//! [`SimWorld`] is the synchronous core (fast: use it directly in
//! evaluation loops); [`SimHal`] wraps it in the async [`Robot`] traits so
//! the same navigator code drives it, a ROS robot or Habitat.
//!
//! Time is simulated: a shared [`ManualClock`] (see [`SimWorld::clock`])
//! advances by [`SimConfig::action_time_s`] per discrete action and by the
//! duration of every velocity command.
//!
//! [`Robot`]: crate::hal::Robot

mod camera;
pub(crate) mod coverage;
mod hal_impl;
mod lidar;
mod motion;
pub use motion::MAX_SUBSTEPS;
mod sensors;

pub use camera::CameraConfig;
pub use hal_impl::SimHal;
pub use lidar::SimLidarConfig;

use crate::HalError;
use crate::arena::geodesic::ConfigGrid;
use crate::arena::scene::{Fan, Scene};
use crate::arena::semantics::{NEUTRAL_WALL, ObjectStyle, object_style, room_colour};
use crate::arena::{Arena, Feature, Goal};
use crate::hal::Capabilities;
use camera::CameraModel;
use coverage::Coverage;
use nav_core::action::StepConfig;
use nav_core::config::{ConfigError, below, count_in, finite, in_range, in_range_above};
use nav_core::drive::DriveKind;
use nav_core::geometry::{Point2, Pose2};
use nav_core::grid::{MAX_GRID_CELLS, cells_covering};
use nav_core::raster::Rgb;
use nav_core::time::ManualClock;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, OnceLock};

/// Frame of the simulated odometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OdometryFrame {
    /// The arena's own coordinates (a robot localized in a map; what point
    /// goals and the candidates planners expect). The default.
    #[default]
    Arena,
    /// Relative to the start pose, which reads `(0, 0, 0)` (ROS `odom`,
    /// Habitat's GPS+compass).
    Start,
}

/// Seeded sensor and motion noise; all zero (off) by default.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NoiseConfig {
    /// Seed of the noise generator (ChaCha8).
    pub seed: u64,
    /// Standard deviation of the odometry's relative distance error per
    /// command (0.05 = 5 %).
    /// Range: [0, 1].
    pub odom_linear_frac: f64,
    /// Standard deviation of the odometry's relative rotation error per
    /// command.
    /// Range: [0, 1].
    pub odom_angular_frac: f64,
    /// Standard deviation of LiDAR range noise, metres.
    /// Range: [0, 10].
    pub range_std_m: f64,
}

impl Default for NoiseConfig {
    fn default() -> Self {
        Self { seed: 0, odom_linear_frac: 0.0, odom_angular_frac: 0.0, range_std_m: 0.0 }
    }
}

impl NoiseConfig {
    /// True when any noise is enabled.
    pub fn is_on(&self) -> bool {
        self.odom_linear_frac != 0.0 || self.odom_angular_frac != 0.0 || self.range_std_m != 0.0
    }
}

/// Simulator parameters. Defaults: 0.25 m / 30° discrete steps, a 0.18 m
/// robot radius, `move_to` at 0.15 m/s and 45°/s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    /// Robot disc radius, metres.
    /// Range: (0, 5].
    pub robot_radius_m: f64,
    /// Discrete step sizes (0.25 m / 30°).
    /// Range: forward_m (0, 10], turn_deg (0, 180].
    pub step: StepConfig,
    /// Simulated time per discrete action, seconds.
    /// Range: [0, 3600].
    pub action_time_s: f64,
    /// Steering model for velocity and move-to commands.
    /// Range: Ackermann min_turn_radius_m (0, 10].
    pub drive: DriveKind,
    /// Speed limit of velocity commands, m/s.
    /// Range: (0, 100].
    pub max_linear_mps: f64,
    /// Yaw-rate limit of velocity commands, rad/s.
    /// Range: (0, 20].
    pub max_angular_rps: f64,
    /// Integration step of velocity commands, seconds.
    /// Range: [0.0001, 1] (smaller steps would not end in reasonable time);
    /// one motion takes at most [`MAX_SUBSTEPS`] steps.
    pub substep_s: f64,
    /// Cruise speed of `move_to` (0.15), m/s.
    /// Range: (0, 10].
    pub move_speed_mps: f64,
    /// Turn rate of `move_to` (45), degrees/s.
    /// Range: (0, 3600].
    pub rotate_speed_dps: f64,
    /// `move_to` arrival distance (0.05), metres.
    /// Range: (0, 10].
    pub waypoint_threshold_m: f64,
    /// The LiDAR.
    /// Range: range_min [0, range_max), range_max (0, 1000], beams 4..=10000 (more than any 2D LiDAR).
    pub lidar: SimLidarConfig,
    /// The camera.
    /// Range: width and height 2..=4096, hfov_deg (0, 179), height_m (0, 10], wall_height_m above height_m and at most 100, max_depth_m (0, 1000].
    pub camera: CameraConfig,
    /// Noise (off by default).
    /// Range: see `NoiseConfig`.
    pub noise: NoiseConfig,
    /// Frame of the odometry.
    pub odometry_frame: OdometryFrame,
    /// Objects farther than this are not detected, metres.
    /// Range: (0, 1000].
    pub detection_range_m: f64,
    /// Coverage cell size, metres.
    /// Range: [0.01, 10] (bounds the coverage grid).
    pub coverage_cell_m: f64,
    /// Sensors count cells as seen up to this distance, metres.
    /// Range: (0, 1000].
    pub coverage_range_m: f64,
    /// Geodesic grid cell size, metres.
    /// Range: [0.01, 10] (bounds the geodesic grid).
    pub geodesic_cell_m: f64,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            robot_radius_m: crate::arena::DEFAULT_ROBOT_RADIUS_M,
            step: StepConfig::default(),
            action_time_s: 1.0,
            drive: DriveKind::Differential,
            max_linear_mps: 0.5,
            max_angular_rps: 1.5,
            substep_s: 0.01,
            move_speed_mps: 0.15,
            rotate_speed_dps: 45.0,
            waypoint_threshold_m: 0.05,
            lidar: SimLidarConfig::default(),
            camera: CameraConfig::default(),
            noise: NoiseConfig::default(),
            odometry_frame: OdometryFrame::Arena,
            detection_range_m: 5.0,
            coverage_cell_m: 0.1,
            coverage_range_m: 3.0,
            geodesic_cell_m: 0.05,
        }
    }
}

impl SimConfig {
    /// The same configuration with car-like steering of the given minimum
    /// turning radius (the ROSMASTER A1: 0.3 m).
    pub fn ackermann(mut self, min_turn_radius_m: f64) -> Self {
        self.drive = DriveKind::Ackermann { min_turn_radius_m };
        self
    }

    /// Checks every value against the range in its field doc; keys are
    /// relative to this struct (`lidar.beams`).
    pub fn validate(&self) -> Result<(), ConfigError> {
        in_range_above("robot_radius_m", self.robot_radius_m, 0.0, 5.0)?;
        self.step.validate().map_err(|e| e.under("step"))?;
        in_range("action_time_s", self.action_time_s, 0.0, 3600.0)?;
        if let DriveKind::Ackermann { min_turn_radius_m } = self.drive {
            in_range_above("drive.min_turn_radius_m", min_turn_radius_m, 0.0, 10.0)?;
        }
        in_range_above("max_linear_mps", self.max_linear_mps, 0.0, 100.0)?;
        in_range_above("max_angular_rps", self.max_angular_rps, 0.0, 20.0)?;
        in_range("substep_s", self.substep_s, 1e-4, 1.0)?;
        in_range_above("move_speed_mps", self.move_speed_mps, 0.0, 10.0)?;
        in_range_above("rotate_speed_dps", self.rotate_speed_dps, 0.0, 3600.0)?;
        in_range_above("waypoint_threshold_m", self.waypoint_threshold_m, 0.0, 10.0)?;
        self.check_sensors()?;
        in_range("noise.odom_linear_frac", self.noise.odom_linear_frac, 0.0, 1.0)?;
        in_range("noise.odom_angular_frac", self.noise.odom_angular_frac, 0.0, 1.0)?;
        in_range("noise.range_std_m", self.noise.range_std_m, 0.0, 10.0)?;
        in_range_above("detection_range_m", self.detection_range_m, 0.0, 1000.0)?;
        in_range("coverage_cell_m", self.coverage_cell_m, 0.01, 10.0)?;
        in_range_above("coverage_range_m", self.coverage_range_m, 0.0, 1000.0)?;
        in_range("geodesic_cell_m", self.geodesic_cell_m, 0.01, 10.0)
    }

    /// Checks that the coverage and geodesic grids over an arena of
    /// `bounds` stay within [`MAX_GRID_CELLS`] (errors name the cell key).
    pub fn check_grids(&self, bounds: [f64; 4]) -> Result<(), ConfigError> {
        let (w, h) = (bounds[2] - bounds[0], bounds[3] - bounds[1]);
        for (key, cell) in [("coverage_cell_m", self.coverage_cell_m), ("geodesic_cell_m", self.geodesic_cell_m)] {
            let cells = cells_covering(w, h, cell);
            if cells > MAX_GRID_CELLS {
                return Err(ConfigError::new(
                    key,
                    format!(
                        "{cell} m cells over this {w:.1} m × {h:.1} m arena make {cells} cells, more than {MAX_GRID_CELLS}; use larger cells"
                    ),
                ));
            }
        }
        Ok(())
    }

    fn check_sensors(&self) -> Result<(), ConfigError> {
        let l = &self.lidar;
        in_range_above("lidar.range_max", f64::from(l.range_max), 0.0, 1000.0)?;
        in_range("lidar.range_min", f64::from(l.range_min), 0.0, 1000.0)?;
        below("lidar.range_min", f64::from(l.range_min), "lidar.range_max", f64::from(l.range_max))?;
        count_in("lidar.beams", l.beams, 4, 10_000)?;
        let c = &self.camera;
        count_in("camera.width", c.width, 2, 4096)?;
        count_in("camera.height", c.height, 2, 4096)?;
        finite("camera.hfov_deg", c.hfov_deg)?;
        if !(c.hfov_deg > 0.0 && c.hfov_deg < 179.0) {
            return Err(ConfigError::new("camera.hfov_deg", format!("must be in (0, 179) (got {})", c.hfov_deg)));
        }
        in_range_above("camera.height_m", c.height_m, 0.0, 10.0)?;
        in_range("camera.wall_height_m", c.wall_height_m, 0.0, 100.0)?;
        below("camera.height_m", c.height_m, "camera.wall_height_m", c.wall_height_m)?;
        in_range_above("camera.max_depth_m", c.max_depth_m, 0.0, 1000.0)
    }
}

impl From<ConfigError> for HalError {
    fn from(e: ConfigError) -> Self {
        HalError::InvalidConfig { field: e.key, message: e.message }
    }
}

/// Geodesic distance field to the goal's success region.
#[derive(Debug)]
struct GoalField {
    grid: ConfigGrid,
    dist: Vec<f64>,
}

/// The synchronous simulator. See the [module docs](self).
#[derive(Debug)]
pub struct SimWorld {
    arena: Arena,
    config: SimConfig,
    scene: Scene,
    rooms: Vec<(Vec<Point2>, Rgb, String)>,
    styles: Vec<ObjectStyle>,
    labels: Vec<Option<String>>,
    labelled: Vec<bool>,
    pose: Pose2,
    odom: Pose2,
    velocity: (f64, f64),
    clock: Arc<ManualClock>,
    rng: ChaCha8Rng,
    collisions: u32,
    actions: u32,
    path_length_m: f64,
    trajectory: Vec<Pose2>,
    lidar_fan: Fan,
    camera: CameraModel,
    coverage: Coverage,
    goal_field: OnceLock<Option<GoalField>>,
    ray_dist: Vec<f64>,
    ray_hit: Vec<u32>,
}

/// Distance the robot keeps from a surface it was stopped at, metres.
pub(crate) const CONTACT_SKIN_M: f64 = 1e-4;

impl SimWorld {
    /// A world for `arena` with `config`; fails when the config is invalid
    /// or the arena does not validate for the configured robot radius.
    pub fn new(arena: Arena, config: SimConfig) -> Result<Self, HalError> {
        config.validate()?;
        arena.validate_for_radius(config.robot_radius_m)?;
        config.check_grids(arena.bounds)?;
        let scene = Scene::from_arena(&arena);
        let rooms = arena.rooms.iter().map(|r| (r.points(), room_colour(&r.name), r.name.clone())).collect();
        let mut styles = Vec::with_capacity(scene.circles.len());
        let mut labels = Vec::with_capacity(scene.circles.len());
        for c in &scene.circles {
            match c.feature {
                Feature::Object(i) => {
                    styles.push(object_style(&arena.objects[i].label));
                    labels.push(Some(arena.objects[i].label.clone()));
                }
                _ => {
                    styles.push(ObjectStyle { colour: Rgb([128, 124, 120]), top_m: 0.7, base_m: 0.0 });
                    labels.push(None);
                }
            }
        }
        let labelled = labels.iter().map(Option::is_some).collect();
        let start = arena.start.pose();
        let n = config.lidar.beams;
        let lidar_fan = Fan::uniform(-std::f64::consts::PI, std::f64::consts::TAU / n as f64, n);
        let camera = CameraModel::new(config.camera);
        let coverage = Coverage::new(&scene, arena.bounds, config.coverage_cell_m, start.position());
        let rays = n.max(config.camera.width);
        Ok(Self {
            rng: ChaCha8Rng::seed_from_u64(config.noise.seed),
            arena,
            scene,
            rooms,
            styles,
            labels,
            labelled,
            pose: start,
            odom: start,
            velocity: (0.0, 0.0),
            clock: Arc::new(ManualClock::new(0.0)),
            collisions: 0,
            actions: 0,
            path_length_m: 0.0,
            trajectory: vec![start],
            lidar_fan,
            camera,
            coverage,
            goal_field: OnceLock::new(),
            ray_dist: vec![f64::INFINITY; rays],
            ray_hit: vec![0; rays],
            config,
        })
    }

    /// A world for a built-in arena (see [`Arena::builtin`]).
    pub fn builtin(name: &str, config: SimConfig) -> Result<Self, HalError> {
        Self::new(Arena::builtin(name)?, config)
    }

    /// The arena.
    pub fn arena(&self) -> &Arena {
        &self.arena
    }

    /// The configuration.
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// The simulated clock (shared; it only moves when the robot does).
    pub fn clock(&self) -> Arc<ManualClock> {
        Arc::clone(&self.clock)
    }

    /// What the simulated robot offers: everything.
    pub fn capabilities(&self) -> Capabilities {
        Capabilities {
            discrete_actions: true,
            step: Some(self.config.step),
            velocity: true,
            move_to: true,
            lidar: true,
            rgb: true,
            depth: true,
            panorama: true,
            detections: true,
            pose_is_ground_truth: self.config.noise.odom_linear_frac == 0.0
                && self.config.noise.odom_angular_frac == 0.0,
            drive: self.config.drive,
        }
    }

    /// Puts the robot back at the start and forgets collisions, path,
    /// trajectory, coverage and action count. The clock keeps running.
    pub fn reset(&mut self) {
        let start = self.arena.start.pose();
        self.pose = start;
        self.odom = start;
        self.velocity = (0.0, 0.0);
        self.collisions = 0;
        self.actions = 0;
        self.path_length_m = 0.0;
        self.trajectory = vec![start];
        self.coverage.clear();
    }

    /// Moves the robot to `pose` without passing through the space between
    /// (tests, benches, scripted setups). Odometry jumps with it; the path
    /// length does not grow. Fails when the disc would overlap geometry.
    pub fn teleport(&mut self, pose: Pose2) -> Result<(), HalError> {
        if !(pose.x.is_finite() && pose.y.is_finite() && pose.yaw.is_finite()) {
            return Err(HalError::invalid_command("pose", "must be finite"));
        }
        let (clear, feature) = self.scene.clearance(pose.position());
        if clear < self.config.robot_radius_m || !self.arena.in_bounds(pose.position()) {
            let what = feature.map_or("the bounds".to_string(), |f| f.to_string());
            return Err(HalError::invalid_command("pose", format!("the robot would overlap {what}")));
        }
        self.pose = Pose2::new(pose.x, pose.y, pose.yaw);
        self.odom = self.pose;
        self.trajectory.push(self.pose);
        Ok(())
    }

    // ----- ground truth for evaluation (not part of the sensor traits) -----

    /// The true pose in the arena frame.
    pub fn ground_truth_pose(&self) -> Pose2 {
        self.pose
    }

    /// The start pose in the arena frame.
    pub fn start_pose(&self) -> Pose2 {
        self.arena.start.pose()
    }

    /// Collisions so far (one per blocked command).
    pub fn collisions(&self) -> u32 {
        self.collisions
    }

    /// Discrete actions executed so far (including `stop`).
    pub fn actions(&self) -> u32 {
        self.actions
    }

    /// Fraction of free floor seen by the LiDAR or camera so far.
    pub fn coverage(&self) -> f64 {
        self.coverage.fraction()
    }

    /// Area of the reachable free floor the sensors have seen, m² (the
    /// numerator of [`Self::coverage`]).
    pub fn explored_m2(&self) -> f64 {
        self.coverage.seen_area_m2()
    }

    /// Distance actually travelled, metres.
    pub fn path_length_m(&self) -> f64 {
        self.path_length_m
    }

    /// True poses after every command (starting with the start pose);
    /// velocity commands add a pose every 5 cm.
    pub fn trajectory(&self) -> &[Pose2] {
        &self.trajectory
    }

    /// Name of the room containing `p`, if any.
    pub fn room_at(&self, p: Point2) -> Option<&str> {
        self.rooms.iter().find(|(poly, _, _)| nav_core::geometry::point_in_polygon(p, poly)).map(|(_, _, n)| n.as_str())
    }

    /// Distance from `p` to the nearest solid surface (negative inside a
    /// circle).
    pub fn clearance(&self, p: Point2) -> f64 {
        self.scene.clearance(p).0
    }

    /// The success test for a robot at `pose`: within the success
    /// distance of any goal object's surface (centre-to-surface), or of a
    /// point goal. Always false without a goal.
    pub fn is_success(&self, pose: Pose2) -> bool {
        self.distance_to_goal(pose.position()).is_some_and(|d| d <= self.arena.success_distance_m())
    }

    /// Straight-line distance from `p` to the goal (nearest goal object's
    /// surface, or the goal point); `None` without a goal.
    pub fn distance_to_goal(&self, p: Point2) -> Option<f64> {
        match &self.arena.goal {
            Some(Goal::Point { x, y }) => Some(p.distance(Point2::new(*x, *y))),
            Some(Goal::Object { .. }) => {
                self.arena.goal_objects().iter().map(|o| (p.distance(o.center()) - o.r).max(0.0)).min_by(f64::total_cmp)
            }
            None => None,
        }
    }

    /// Geodesic distance (robot-radius aware shortest path, metres) from
    /// `from` to the success region; `None` without a goal or when the
    /// region cannot be reached from there. The distance field is computed
    /// on first use and then answers in constant time.
    pub fn geodesic_to_goal(&self, from: Point2) -> Option<f64> {
        let field = self.goal_field.get_or_init(|| self.compute_goal_field()).as_ref()?;
        field.grid.lookup(&field.dist, from)
    }

    /// The shortest possible path length from the start to the success
    /// region (SPL's `l`).
    pub fn geodesic_start_to_goal(&self) -> Option<f64> {
        self.geodesic_to_goal(self.arena.start.pose().position())
    }

    fn compute_goal_field(&self) -> Option<GoalField> {
        let sd = self.arena.success_distance_m();
        let grid =
            ConfigGrid::new(&self.scene, self.arena.bounds, self.config.robot_radius_m, self.config.geodesic_cell_m);
        let dist = match &self.arena.goal {
            Some(Goal::Point { x, y }) => {
                let g = Point2::new(*x, *y);
                grid.distance_field(|p| p.distance(g) <= sd)
            }
            Some(Goal::Object { .. }) => {
                let targets = self.arena.goal_objects();
                grid.distance_field(|p| targets.iter().any(|o| p.distance(o.center()) - o.r <= sd))
            }
            None => return None,
        };
        Some(GoalField { grid, dist })
    }

    /// Base wall colour of the room containing `p`.
    fn wall_colour_at(&self, p: Point2) -> Rgb {
        self.rooms
            .iter()
            .find(|(poly, _, _)| nav_core::geometry::point_in_polygon(p, poly))
            .map_or(NEUTRAL_WALL, |(_, c, _)| *c)
    }

    /// Odometry pose in the configured frame.
    fn odom_in_frame(&self) -> Pose2 {
        match self.config.odometry_frame {
            OdometryFrame::Arena => self.odom,
            OdometryFrame::Start => {
                let start = self.arena.start.pose();
                let p = start.inverse_transform_point(self.odom.position());
                Pose2::new(p.x, p.y, self.odom.yaw - start.yaw)
            }
        }
    }

    /// A point of the odometry frame in the arena frame.
    fn odom_point_to_arena(&self, p: Point2) -> Point2 {
        match self.config.odometry_frame {
            OdometryFrame::Arena => p,
            OdometryFrame::Start => self.arena.start.pose().transform_point(p),
        }
    }
}
