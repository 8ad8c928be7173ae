//! Judging an episode with ground truth the robot never sees: the
//! [`Judge`] trait, its [`Verdict`], and the built-in simulator's
//! [`SimJudge`].

use async_trait::async_trait;
use nav_core::geometry::Pose2;
use nav_hal::HalError;
use nav_hal::arena::Arena;
use nav_hal::sim::SimHal;
use nav_hal::tap::Tapped;

/// What a judge knows at the end of an episode. Every field is optional:
/// a judge fills what its world can tell (a real robot has no judge at
/// all, and its run summary says which criteria could not be judged).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    /// Whether the robot's true pose is within the goal's success region.
    pub at_goal: Option<bool>,
    /// The true distance from the robot to the goal region, metres.
    pub distance_to_goal_m: Option<f64>,
    /// The path the robot really travelled, metres.
    pub path_length_m: Option<f64>,
    /// The shortest path from the start to the goal region, metres (SPL's
    /// denominator).
    pub geodesic_m: Option<f64>,
    /// Contacts with walls, obstacles or objects.
    pub collisions: Option<u32>,
    /// Fraction of the free space the robot's sensors saw, in `[0, 1]`.
    pub coverage: Option<f64>,
    /// Area of the free space the robot's sensors saw, m².
    pub explored_m2: Option<f64>,
    /// The judge's own SPL, for a simulator that computes it (Habitat);
    /// otherwise the runner computes it from the path and the geodesic.
    pub spl: Option<f64>,
}

/// Ground truth for a run: a judge reads the robot's world (a simulator's
/// state), never the loop. The runner asks it for the true pose after
/// every step (for the step log only) and for a [`Verdict`] once the loop
/// has ended; nothing it returns reaches a planner.
///
/// Implement it for your own simulator to get SR, SPL, collisions and
/// coverage in the [`RunSummary`](crate::navigator::episode::RunSummary):
///
/// ```
/// use async_trait::async_trait;
/// use nav_core::geometry::Pose2;
/// use nav_hal::HalError;
/// use nav_planner::navigator::runner::{Judge, Verdict};
///
/// struct MySim { true_pose: Pose2, goal: (f64, f64), travelled_m: f64 }
///
/// struct MyJudge;
///
/// #[async_trait]
/// impl Judge<MySim> for MyJudge {
///     fn ground_truth_pose(&self, sim: &MySim) -> Option<Pose2> {
///         Some(sim.true_pose)
///     }
///     async fn verdict(&self, sim: &mut MySim) -> Result<Verdict, HalError> {
///         let d = (sim.true_pose.x - sim.goal.0).hypot(sim.true_pose.y - sim.goal.1);
///         Ok(Verdict {
///             at_goal: Some(d <= 1.0),
///             distance_to_goal_m: Some(d),
///             path_length_m: Some(sim.travelled_m),
///             ..Verdict::default()
///         })
///     }
/// }
/// ```
#[async_trait]
pub trait Judge<R: ?Sized>: Send + Sync {
    /// The robot's true pose now, for the step log (`None`: not known).
    fn ground_truth_pose(&self, robot: &R) -> Option<Pose2> {
        let _ = robot;
        None
    }

    /// The world as the judge knows it, for the step log (`nav replay`
    /// draws it) and for scoring the memory's places against its rooms.
    fn world(&self, robot: &R) -> Option<Arena> {
        let _ = robot;
        None
    }

    /// The verdict at the end of the episode.
    ///
    /// # Errors
    /// The world could not be asked (a bridge process that is gone).
    async fn verdict(&self, robot: &mut R) -> Result<Verdict, HalError>;
}

/// The built-in simulator's judge: everything from [`nav_hal::sim::SimWorld`]'s
/// ground truth (success region, geodesic distance, collisions, coverage,
/// rooms).
#[derive(Debug, Clone, Copy, Default)]
pub struct SimJudge;

impl SimJudge {
    fn verdict_of(hal: &SimHal) -> Verdict {
        let w = hal.world();
        let pose = w.ground_truth_pose();
        let has_goal = w.arena().goal.is_some();
        Verdict {
            at_goal: has_goal.then(|| w.is_success(pose)),
            distance_to_goal_m: w.distance_to_goal(pose.position()),
            path_length_m: Some(w.path_length_m()),
            geodesic_m: if has_goal { w.geodesic_start_to_goal() } else { None },
            collisions: Some(w.collisions()),
            coverage: Some(w.coverage()),
            explored_m2: Some(w.explored_m2()),
            spl: None,
        }
    }
}

#[async_trait]
impl Judge<SimHal> for SimJudge {
    fn ground_truth_pose(&self, robot: &SimHal) -> Option<Pose2> {
        Some(robot.world().ground_truth_pose())
    }

    fn world(&self, robot: &SimHal) -> Option<Arena> {
        Some(robot.world().arena().clone())
    }

    async fn verdict(&self, robot: &mut SimHal) -> Result<Verdict, HalError> {
        Ok(Self::verdict_of(robot))
    }
}

#[async_trait]
impl Judge<Tapped<SimHal>> for SimJudge {
    fn ground_truth_pose(&self, robot: &Tapped<SimHal>) -> Option<Pose2> {
        Some(robot.world().ground_truth_pose())
    }

    fn world(&self, robot: &Tapped<SimHal>) -> Option<Arena> {
        Some(robot.world().arena().clone())
    }

    async fn verdict(&self, robot: &mut Tapped<SimHal>) -> Result<Verdict, HalError> {
        Ok(Self::verdict_of(robot))
    }
}
