//! Bring your own robot: implement the HAL traits for a robot of your own
//! and drive it with one of navkit's loops.
//!
//! `PointRobot` is a small differential-drive robot (a 0.15 m disc) in two
//! rooms of 3 m × 4 m joined by a gap in the wall between them, computing what its own sensors would report:
//! a 360-beam LiDAR scan ray-cast against the room's walls, and odometry
//! integrated from the velocity commands it is given. It implements only
//! what it has — `capabilities`, `odometry`, `scan` ([`Sensors`]) and
//! `drive`, `stop` ([`Actuators`]) — and inherits the `Unsupported`
//! defaults for the camera, depth, panoramas, detections, discrete actions
//! and waypoints. Its clock is a [`ManualClock`] that advances by the
//! duration of each velocity command, so the run takes simulated time, not
//! wall time.
//!
//! navkit's explore loop (the 20 Hz control loop with the safety layer,
//! watchdog and a LiDAR map) drives it, with the offline frontier planner
//! deciding where to go through the same tool calls a VLM would make
//! (`navigate_to_goal`, `stop_robot`). The example prints the decisions as
//! they happen, then how the run ended, the distance driven, collisions,
//! and a map of the room with the robot's trail.
//!
//! Run: `cargo run -p navkit-examples --example custom_robot`

use std::sync::Arc;

use async_trait::async_trait;
use nav_core::geometry::{Point2, Pose2};
use nav_core::lidar::LaserScan;
use nav_core::local_map::LocalMapConfig;
use nav_core::time::{Clock, ManualClock};
use nav_hal::HalError;
use nav_hal::hal::{Actuators, Capabilities, MotionOutcome, Odometry, Sensors, StampedScan, VelocityCommand};
use nav_planner::navigator::explore_loop::{ExploreLoop, ExploreLoopConfig, ExploreSignals};
use nav_planner::navigator::{RunContext, StepLog};
use nav_planner::offline::OfflineExplorePlanner;

/// A wall from `a` to `b`, metres.
type Wall = (Point2, Point2);

/// The robot: see the module docs.
struct PointRobot {
    walls: Vec<Wall>,
    radius_m: f64,
    pose: Pose2,
    linear: f64,
    angular: f64,
    clock: Arc<ManualClock>,
    trail: Vec<Point2>,
    collisions: u32,
}

impl PointRobot {
    const BEAMS: usize = 360;
    const MAX_RANGE_M: f32 = 8.0;

    /// Two rooms of 3 × 4 m side by side, joined by a 1.2 m gap at the
    /// bottom of the wall between them, with a 0.5 m box in the right one;
    /// the robot starts in the top-left corner facing +x.
    fn in_two_rooms(clock: Arc<ManualClock>) -> Self {
        let p = Point2::new;
        let polygon = |corners: &[Point2]| -> Vec<Wall> {
            (0..corners.len()).map(|i| (corners[i], corners[(i + 1) % corners.len()])).collect()
        };
        let mut walls = polygon(&[p(0.0, 0.0), p(6.0, 0.0), p(6.0, 4.0), p(0.0, 4.0)]);
        walls.push((p(3.0, 1.2), p(3.0, 4.0)));
        walls.extend(polygon(&[p(4.5, 2.5), p(5.0, 2.5), p(5.0, 3.0), p(4.5, 3.0)]));
        let pose = Pose2::new(0.7, 3.2, 0.0);
        Self {
            walls,
            radius_m: 0.15,
            pose,
            linear: 0.0,
            angular: 0.0,
            clock,
            trail: vec![pose.position()],
            collisions: 0,
        }
    }

    /// Distance along a ray from `from` at `heading` to the nearest wall.
    fn ray(&self, from: Point2, heading: f64) -> f64 {
        let (dx, dy) = (heading.cos(), heading.sin());
        let mut best = f64::INFINITY;
        for (a, b) in &self.walls {
            let (ex, ey) = (b.x - a.x, b.y - a.y);
            let denom = dx * ey - dy * ex;
            if denom.abs() < 1e-12 {
                continue;
            }
            let (wx, wy) = (a.x - from.x, a.y - from.y);
            let t = (wx * ey - wy * ex) / denom; // along the ray
            let u = (wx * dy - wy * dx) / denom; // along the wall
            if t > 0.0 && (0.0..=1.0).contains(&u) {
                best = best.min(t);
            }
        }
        best
    }

    /// Distance from `p` to the nearest wall.
    fn clearance(&self, p: Point2) -> f64 {
        self.walls
            .iter()
            .map(|(a, b)| {
                let (ex, ey) = (b.x - a.x, b.y - a.y);
                let t = (((p.x - a.x) * ex + (p.y - a.y) * ey) / (ex * ex + ey * ey)).clamp(0.0, 1.0);
                p.distance(Point2::new(a.x + t * ex, a.y + t * ey))
            })
            .fold(f64::INFINITY, f64::min)
    }
}

#[async_trait]
impl Sensors for PointRobot {
    fn capabilities(&self) -> Capabilities {
        Capabilities { velocity: true, lidar: true, pose_is_ground_truth: true, ..Capabilities::default() }
    }

    async fn odometry(&mut self) -> Result<Odometry, HalError> {
        Ok(Odometry {
            pose: self.pose,
            linear: self.linear,
            angular: self.angular,
            stamp_s: self.clock.now_s(),
            ground_truth: true, // integrated without noise: exact in this toy world
        })
    }

    async fn scan(&mut self) -> Result<StampedScan, HalError> {
        let mut scan = LaserScan::full_circle(Self::BEAMS, 0.05, Self::MAX_RANGE_M, f32::INFINITY);
        for i in 0..scan.len() {
            let range = self.ray(self.pose.position(), self.pose.yaw + scan.angle(i)) as f32;
            scan.ranges[i] = if range <= Self::MAX_RANGE_M { range } else { f32::INFINITY };
        }
        Ok(StampedScan { scan, stamp_s: self.clock.now_s() })
    }
}

#[async_trait]
impl Actuators for PointRobot {
    async fn drive(&mut self, command: VelocityCommand) -> Result<MotionOutcome, HalError> {
        command.validate()?;
        let (start, dt) = (self.pose.position(), 0.01);
        let steps = (command.duration_s / dt).ceil() as u32;
        let mut outcome = MotionOutcome { distance_m: 0.0, duration_s: 0.0, collided: false, stopped_early: false };
        (self.linear, self.angular) = (command.linear, command.angular);
        for _ in 0..steps {
            let step = dt.min(command.duration_s - outcome.duration_s);
            let yaw = self.pose.yaw + command.angular * step;
            let next = Pose2::new(
                self.pose.x + command.linear * step * yaw.cos(),
                self.pose.y + command.linear * step * yaw.sin(),
                yaw,
            );
            if self.clearance(next.position()) < self.radius_m {
                // the bumper: stop where we are
                outcome.collided = true;
                outcome.stopped_early = true;
                self.collisions += 1;
                (self.linear, self.angular) = (0.0, 0.0);
                break;
            }
            self.pose = next;
            outcome.duration_s += step;
        }
        self.clock.advance(command.duration_s);
        outcome.distance_m = start.distance(self.pose.position());
        if self.trail.last().is_none_or(|p| p.distance(self.pose.position()) > 0.05) {
            self.trail.push(self.pose.position());
        }
        Ok(outcome)
    }

    async fn stop(&mut self) -> Result<(), HalError> {
        (self.linear, self.angular) = (0.0, 0.0);
        Ok(())
    }
}

/// The room at 0.25 m per character: walls `#`, trail `.`, start `S`, end `R`.
fn draw(robot: &PointRobot) -> String {
    let cell = 0.25;
    let (w, h) = ((6.0 / cell) as usize + 1, (4.0 / cell) as usize + 1);
    let centre = |col: usize, row: usize| Point2::new(col as f64 * cell, row as f64 * cell);
    let mut grid: Vec<Vec<char>> = (0..h)
        .map(|row| (0..w).map(|col| if robot.clearance(centre(col, row)) < cell / 2.0 { '#' } else { ' ' }).collect())
        .collect();
    let mut mark = |p: Point2, c: char| {
        let (col, row) = ((p.x / cell).round(), (p.y / cell).round());
        if (0.0..w as f64).contains(&col) && (0.0..h as f64).contains(&row) {
            grid[row as usize][col as usize] = c;
        }
    };
    for p in &robot.trail {
        mark(*p, '.');
    }
    if let Some(start) = robot.trail.first() {
        mark(*start, 'S');
    }
    mark(robot.pose.position(), 'R');
    grid.iter().rev().map(|row| row.iter().collect::<String>() + "\n").collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let clock = Arc::new(ManualClock::new(0.0));
    let mut robot = PointRobot::in_two_rooms(clock.clone());
    println!("robot: {:?}", robot.capabilities());

    let config = ExploreLoopConfig {
        max_time_s: 180.0,
        use_camera: false, // this robot has none
        map: LocalMapConfig { size_m: 12.0, ..LocalMapConfig::default() },
        ..ExploreLoopConfig::default()
    };
    // print each decision as the loop logs it
    let mut log = StepLog::null().with_tap(|record| {
        if let Some(planner) = &record.planner {
            println!("t={:6.2}s at ({:.2}, {:.2}): {}", record.t_s, record.pose.x, record.pose.y, planner.parsed);
        }
    });
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let outcome = runtime.block_on(async {
        let mut explore = ExploreLoop::new(config, Box::new(OfflineExplorePlanner::new()), ExploreSignals::default())?;
        explore.run(&mut robot, &mut RunContext::new(clock.as_ref(), &mut log)).await
    })?;

    println!();
    println!(
        "ended: {:?} after {:.1} s of robot time ({} control ticks, {} decisions)",
        outcome.end,
        clock.now_s(),
        outcome.stats.steps,
        outcome.stats.planner_calls
    );
    let path_m: f64 = robot.trail.windows(2).map(|w| w[0].distance(w[1])).sum();
    println!(
        "driven: {path_m:.2} m | collisions: {} (robot) / {} (loop) | safety overrides: {} | worst watchdog tier: {:?}",
        robot.collisions, outcome.collisions, outcome.stats.safety_overrides, outcome.worst_tier
    );
    println!("the rooms from above (0.25 m per character; # wall, S start, . trail, R the robot now):");
    print!("{}", draw(&robot));
    Ok(())
}
