//! The start state of an episode in the built-in simulator, owned, so the
//! VLM planners can be driven with exactly what `nav run` would show them.
//! Mirrors `nav_planner::navigator::episode::initial_request` step by step; the test
//! `states_match_initial_request` in `protocols_http.rs` checks that the
//! requests built from these states are the ones `initial_request` builds.
#![allow(dead_code)]

use nav_core::candidates::Candidate;
use nav_core::geometry::{Point2, Pose2};
use nav_core::grid::OccupancyGrid;
use nav_core::lidar::LaserScan;
use nav_core::raster::RgbFrame;
use nav_hal::arena::{Arena, Goal};
use nav_hal::hal::{Panorama, Sensors as _};
use nav_hal::sim::{SimHal, SimWorld};
use nav_memory::{NavigationContext, SpatialMemory};
use nav_planner::navigator::candidates_loop::{CandidatesLoop, CandidatesLoopConfig, CandidatesTask};
use nav_planner::navigator::episode::{EpisodeSpec, seeded_arena};
use nav_planner::offline::OfflineCandidatePlanner;
use nav_planner::protocol::ProtocolKind;
use nav_planner::protocol::candidates::{CandidateFrame, NavMode, TopologySummary};
use nav_planner::protocol::explore::ExploreSnapshot;
use nav_planner::protocol::objectnav::ObjectNavObservation;

/// The episode spec of a built-in arena for a protocol (seed 0, memory on,
/// images on).
pub fn spec(arena: &str, protocol: ProtocolKind) -> EpisodeSpec {
    let mut spec = EpisodeSpec::new(Arena::builtin(arena).expect("built-in arena"), format!("builtin:{arena}"));
    spec.protocol = protocol;
    spec
}

async fn hal(spec: &EpisodeSpec) -> (Arena, SimHal) {
    let arena = seeded_arena(&spec.arena, spec.seed, spec.sim.robot_radius_m).expect("seeded arena");
    let world = SimWorld::new(arena.clone(), spec.sim.clone()).expect("simulator world");
    (arena, SimHal::new(world))
}

/// What the objectnav planner sees at the start of an episode.
pub struct ObjectNavStart {
    pub target: String,
    pub pose: Pose2,
    pub panorama: Panorama,
    pub scan: LaserScan,
    pub context: NavigationContext,
    pub memory: bool,
}

impl ObjectNavStart {
    pub async fn new(spec: &EpisodeSpec) -> Self {
        let (arena, mut hal) = hal(spec).await;
        let pose = hal.odometry().await.unwrap().pose;
        let scan = hal.scan().await.unwrap().scan;
        let target = match &arena.goal {
            Some(Goal::Object { label }) => label.clone(),
            other => panic!("arena {} has no object goal: {other:?}", arena.name),
        };
        let panorama = hal.panorama(spec.objectnav.panorama_views).await.unwrap();
        let context = SpatialMemory::new(spec.objectnav.memory_config.clone()).unwrap().context(None);
        Self { target, pose, panorama, scan, context, memory: spec.memory }
    }

    pub fn observation(&self) -> ObjectNavObservation<'_> {
        ObjectNavObservation {
            target: &self.target,
            pose: self.pose,
            panorama: Some(&self.panorama),
            scan: Some(&self.scan),
            context: self.memory.then_some(&self.context),
            instruction: None,
        }
    }
}

/// What the candidates planner sees in its first cycle.
pub struct CandidatesStart {
    pub goal_text: String,
    pub goal: Option<Point2>,
    pub tolerance_m: f64,
    pub pose: Pose2,
    pub grid: OccupancyGrid,
    pub candidates: Vec<Candidate>,
    pub objects: Vec<String>,
    pub topology: Option<TopologySummary>,
    pub camera: Option<RgbFrame>,
    pub map_image: bool,
}

impl CandidatesStart {
    pub async fn new(spec: &EpisodeSpec) -> Self {
        // the loop's own view of cycle 1: the 6 × 60° camera scan, the first frame, reachable candidates
        let (arena, mut hal) = hal(spec).await;
        let [x0, y0, x1, y1] = arena.bounds;
        let grid = OccupancyGrid::covering(x0, y0, x1, y1, spec.candidates.resolution_m).unwrap();
        let goal = match &arena.goal {
            Some(Goal::Point { x, y }) => Some(Point2::new(*x, *y)),
            _ => None,
        };
        let goal_text = match goal {
            Some(g) => format!("Reach the goal at ({:.1}, {:.1})", g.x, g.y),
            None => "Explore the whole arena".to_string(),
        };
        let config = CandidatesLoopConfig {
            max_cycles: arena.criteria.max_steps,
            goal_tolerance_m: arena.success_distance_m(),
            ..spec.candidates.clone()
        };
        let task = CandidatesTask { goal, goal_text: goal_text.clone(), grid };
        let lp = CandidatesLoop::new(config, Box::new(OfflineCandidatePlanner::new()), task).unwrap();
        let preview = lp.preview(&mut hal).await.unwrap();
        let (pose, grid, candidates) = (preview.pose, preview.grid, preview.candidates);
        let (objects, topology) = (preview.objects, preview.topology);
        let camera = if spec.text_only { None } else { Some(hal.rgb().await.unwrap().frame) };
        Self {
            goal_text,
            goal,
            tolerance_m: arena.success_distance_m(),
            pose,
            grid,
            candidates,
            objects,
            topology,
            camera,
            map_image: spec.candidates.map_image,
        }
    }

    pub fn frame(&self) -> CandidateFrame<'_> {
        CandidateFrame {
            cycle: 1,
            goal_text: &self.goal_text,
            goal: self.goal,
            goal_tolerance_m: self.tolerance_m,
            pose: self.pose,
            mode: if self.goal.is_some() { NavMode::Navigating } else { NavMode::Exploring },
            stuck_cycles: None,
            last_action: None,
            grid: &self.grid,
            candidates: &self.candidates,
            objects: &self.objects,
            topology: self.topology,
            history: &[],
            camera: self.camera.as_ref(),
            map_image: self.map_image,
        }
    }
}

/// The explore planner's first snapshot (the one `initial_request` sends).
pub async fn explore_snapshot(spec: &EpisodeSpec) -> ExploreSnapshot {
    nav_planner::navigator::episode::initial_explore_snapshot(spec).await.unwrap()
}
