//! The Navigation Context of a robot driven over MCP: nav-memory's
//! [`SpatialMemory`] fed with the robot's continuous motion as the discrete
//! steps it counts in (a forward step per 0.25 m travelled along the
//! remembered heading, a turn per 30° turned), and the rooms the client
//! reports as the places' types.

use nav_core::action::Action;
use nav_core::geometry::{Pose2, normalize_angle};
use nav_memory::{MemoryConfig, SceneObservation, SpatialMemory, StepFlags};

/// At most this many steps are booked per control tick (a pose that
/// jumps is caught up over a few ticks).
const MAX_STEPS_PER_TICK: usize = 8;

/// The spatial memory and what it is waiting to hear.
pub(crate) struct ContextMemory {
    memory: SpatialMemory,
    /// The robot's start pose: the memory's origin.
    start: Pose2,
    /// A room reported since the last step, for the next one.
    room: Option<String>,
}

impl ContextMemory {
    /// A memory whose origin is `start`.
    pub(crate) fn new(start: Pose2) -> Option<Self> {
        let memory = SpatialMemory::new(MemoryConfig::default()).ok()?;
        Some(Self { memory, start, room: None })
    }

    /// Books the motion from the memory's pose to `pose` as steps.
    pub(crate) fn follow(&mut self, pose: Pose2) {
        let local = self.start.inverse_transform_point(pose.position());
        let target = Pose2::new(local.x, local.y, normalize_angle(pose.yaw - self.start.yaw));
        let step = self.memory.config().step;
        let turn = step.turn_deg.to_radians();
        for _ in 0..MAX_STEPS_PER_TICK {
            let at = self.memory.pose();
            let d_yaw = normalize_angle(target.yaw - at.yaw);
            let (dx, dy) = (target.x - at.x, target.y - at.y);
            let ahead = dx * at.yaw.cos() + dy * at.yaw.sin();
            let action = if d_yaw > turn * 0.75 {
                Action::TurnLeft
            } else if d_yaw < -turn * 0.75 {
                Action::TurnRight
            } else if ahead >= step.forward_m {
                Action::Forward
            } else {
                return;
            };
            let scene = self.room.take().map(|r| SceneObservation { place_type: r, ..SceneObservation::default() });
            self.memory.observe_step(action, scene, StepFlags::default());
        }
    }

    /// A room the client reported: the current place's type from the next
    /// step on.
    pub(crate) fn report_room(&mut self, label: &str) {
        self.room = Some(label.to_owned());
    }

    /// The Navigation Context as text.
    pub(crate) fn text(&self) -> String {
        self.memory.context(None).to_text()
    }
}
