//! The bridge's [`Judge`]: the simulator scores its own episodes.

use super::metered::MeteredBridge;
use crate::navigator::runner::{Judge, Verdict};
use async_trait::async_trait;
use nav_hal::HalError;
use nav_hal::bridge::{BridgeHal, SimMetrics};
use nav_hal::tap::Tapped;

/// The judge of a simulator behind the bridge: once the episode is over,
/// the simulator's own metrics (`success`, `spl`, `distance_to_goal`, and
/// `path_length_m` / `geodesic_m` when it reports them) are the verdict.
/// Before the simulator has ended the episode there is nothing to judge
/// (an empty verdict).
///
/// ```no_run
/// use nav_hal::bridge::{BridgeConfig, BridgeHal, EpisodeSpec};
/// use nav_planner::navigator::StepLog;
/// use nav_planner::navigator::bridge_run::BridgeJudge;
/// use nav_planner::navigator::runner::{Runner, Task};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let bridge = BridgeConfig { depth: true, ..BridgeConfig::default() };
/// let mut hal = BridgeHal::spawn(".venv/bin/python -m navkit_bridge --backend miniworld", bridge).await?;
/// let episode = hal.reset(&EpisodeSpec::index(0)).await?;
/// let runner = Runner::new(Task::find(episode.target_object.clone()));
/// let summary = runner.run(&mut hal, Some(&BridgeJudge), &mut StepLog::null()).await?;
/// println!("success {} SPL {:.2}", summary.success, summary.spl);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct BridgeJudge;

impl BridgeJudge {
    fn verdict_of(hal: &BridgeHal, collisions: Option<u32>) -> Verdict {
        let metrics = hal.episode_metrics().filter(|_| hal.episode_done());
        let extra = |key: &str| metrics.and_then(|m| m.extra.get(key)).and_then(serde_json::Value::as_f64);
        Verdict {
            at_goal: metrics.map(|m| m.success),
            distance_to_goal_m: metrics.and_then(|m: &SimMetrics| m.distance_to_goal),
            path_length_m: extra("path_length_m"),
            geodesic_m: extra("geodesic_m"),
            collisions,
            coverage: None,
            explored_m2: None,
            spl: metrics.map(|m| m.spl),
        }
    }
}

#[async_trait]
impl Judge<BridgeHal> for BridgeJudge {
    async fn verdict(&self, robot: &mut BridgeHal) -> Result<Verdict, HalError> {
        Ok(Self::verdict_of(robot, None))
    }
}

#[async_trait]
impl Judge<Tapped<BridgeHal>> for BridgeJudge {
    async fn verdict(&self, robot: &mut Tapped<BridgeHal>) -> Result<Verdict, HalError> {
        Ok(Self::verdict_of(robot, None))
    }
}

#[async_trait]
impl<'h> Judge<Tapped<MeteredBridge<'h>>> for BridgeJudge {
    async fn verdict(&self, robot: &mut Tapped<MeteredBridge<'h>>) -> Result<Verdict, HalError> {
        Ok(Self::verdict_of(robot.hal(), Some(robot.collisions())))
    }
}
