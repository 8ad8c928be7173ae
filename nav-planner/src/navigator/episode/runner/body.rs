//! The robot's body as the objectnav parts see it ([`Body`]), and the
//! low-level policy a caller brings ([`PolicySetup`], [`PolicyMaker`]).

use crate::navigator::pixel_policy::{LOWER_PART_WITHIN_M, PixelGoalConfig, PixelGoalPolicy};
use crate::navigator::policy::LowLevelPolicy;
use nav_core::action::StepConfig;
use nav_core::local_map::LocalMapConfig;
use std::sync::Arc;

/// The robot's size, camera and action space, for the objectnav parts the
/// runner builds: the map's obstacle inflation and the default policy's
/// forward corridor follow the radius, the offline stand-in's and the
/// policy's view of the floor follow the camera.
///
/// Without a body ([`Runner::body`](super::Runner::body)) the runner
/// builds the parts for the built-in simulator's robot and camera.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Body {
    /// The robot's radius, metres.
    pub radius_m: f64,
    /// Added to the radius for the map's inflation and the policy's
    /// corridor, metres.
    pub clearance_m: f64,
    /// Height of the (level) camera above the floor, metres, when known.
    pub camera_height_m: Option<f64>,
    /// The camera's horizontal field of view, degrees.
    pub hfov_deg: f64,
    /// The camera image's `[width, height]`, pixels.
    pub image_size: [u32; 2],
    /// Step sizes of the discrete action space.
    pub step: StepConfig,
    /// The range sensor's scan is made from this camera's depth images (a
    /// simulator bridge) rather than by a LiDAR of its own: it misses what
    /// the camera misses, so a return along a target much nearer than the
    /// camera's range is something else (a bump, another object), never
    /// the target's hidden lower part.
    pub scan_from_camera: bool,
}

impl Body {
    /// Half the width of the free corridor the robot needs: radius plus
    /// clearance, metres.
    pub fn corridor_half_width_m(&self) -> f64 {
        self.radius_m + self.clearance_m
    }

    /// The local map's settings with this body's inflation.
    pub(crate) fn map(&self) -> LocalMapConfig {
        LocalMapConfig { inflation_m: self.corridor_half_width_m(), ..LocalMapConfig::default() }
    }

    /// What a policy factory is told for a task with this success distance.
    pub(crate) fn policy_setup(&self, task: &str, success_distance_m: f64) -> PolicySetup {
        PolicySetup {
            task: task.to_string(),
            step: self.step,
            robot_radius_m: self.radius_m,
            corridor_half_width_m: self.corridor_half_width_m(),
            success_distance_m,
            camera_height_m: self.camera_height_m,
            hfov_deg: self.hfov_deg,
            image_size: self.image_size,
            scan_from_camera: self.scan_from_camera,
        }
    }
}

/// What a policy factory knows about the episode it builds a policy for.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicySetup {
    /// The task's name (a bridge episode's id).
    pub task: String,
    /// Step sizes of the action space.
    pub step: StepConfig,
    /// The robot's radius, metres.
    pub robot_radius_m: f64,
    /// The forward corridor's half width (radius plus clearance), metres.
    pub corridor_half_width_m: f64,
    /// The task's success distance, metres.
    pub success_distance_m: f64,
    /// Height of the (level) camera above the floor, when known, metres.
    pub camera_height_m: Option<f64>,
    /// The camera's horizontal field of view, degrees.
    pub hfov_deg: f64,
    /// The camera image's `[width, height]`, pixels.
    pub image_size: [u32; 2],
    /// The range sensor's scan comes from the camera's depth ([`Body::scan_from_camera`]).
    pub scan_from_camera: bool,
}

/// Builds the objectnav loop's low-level policy for an episode (PixelNav
/// behind a worker process, your own controller, …).
pub type PolicyMaker = Arc<dyn Fn(&PolicySetup) -> Box<dyn LowLevelPolicy> + Send + Sync>;

/// The default low-level policy for a body: the pixel-goal policy with the
/// body's step, corridor and camera, stopping short of the success distance.
pub(crate) fn pixel_goal_for(setup: &PolicySetup, use_map: bool) -> Box<dyn LowLevelPolicy> {
    let defaults = PixelGoalConfig::default();
    Box::new(PixelGoalPolicy::new(
        PixelGoalConfig {
            step: setup.step,
            corridor_half_width_m: setup.corridor_half_width_m,
            stop_distance_m: (setup.success_distance_m - 0.2).max(0.3),
            blocked_stop_distance_m: (setup.success_distance_m - 0.05).max(0.3),
            map: LocalMapConfig { inflation_m: setup.corridor_half_width_m, ..defaults.map.clone() },
            use_map,
            lower_part_within_m: if setup.scan_from_camera { Some(LOWER_PART_WITHIN_M) } else { None },
            ..defaults
        }
        .with_camera_blind_zone(
            setup.camera_height_m,
            setup.hfov_deg,
            setup.image_size[0],
            setup.image_size[1],
        ),
    ))
}
