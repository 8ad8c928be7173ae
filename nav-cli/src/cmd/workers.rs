//! The worker flags of `nav habitat`: an external detector (`--perception
//! external --detector CMD`) and an external low-level policy (`--policy
//! external --policy-cmd CMD`), each a Python process speaking the bridge
//! protocol's worker ops (docs/BRIDGE.md, "Workers").

use crate::exit::{Exit, usage};
use clap::{Args, ValueEnum};
use nav_hal::bridge::{BridgeCommand, BridgeEndpoint, WorkerConfig};
use nav_planner::navigator::bridge_run::{BridgeRunConfig, BridgeRunner, PolicySetup};
use nav_planner::navigator::episode::PerceptionChoice;
use nav_planner::navigator::external::{ExternalPolicy, ExternalPolicyConfig, SharedWorker, connect_worker};
use nav_planner::navigator::policy::LowLevelPolicy;

/// Which low-level policy drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PolicyChoice {
    /// navkit's pixel-goal policy (A* on the local map), the default.
    PixelGoal,
    /// A policy worker (`--policy-cmd`), e.g. PixelNav: pixel goal and view in, action out.
    External,
}

/// Worker flags (flattened into `nav habitat`).
#[derive(Args, Debug, Default)]
pub struct WorkerArgs {
    /// The perception stage that confirms the target: sim (the bridge's detector boxes, a
    /// perfect detector), vlm (the model asked for a box) or external (a detector worker, --detector).
    #[arg(long, value_name = "sim|vlm|external")]
    pub perception: Option<PerceptionChoice>,
    /// The detector worker for --perception external: a command line, e.g.
    /// "python3 -m navkit_bridge.colour_detector" (op `detect`, docs/BRIDGE.md "Workers").
    #[arg(long, value_name = "CMD|ADDR")]
    pub detector: Option<String>,
    /// The low-level policy: pixel-goal (default) or external (a policy worker, --policy-cmd).
    #[arg(long, value_enum)]
    pub policy: Option<PolicyChoice>,
    /// The policy worker for --policy external: a command line, e.g.
    /// "python3 -m navkit_bridge.rule_policy" (op `act`, docs/BRIDGE.md "Workers").
    #[arg(long, value_name = "CMD|ADDR")]
    pub policy_cmd: Option<String>,
    /// Seconds a worker may take for one detect/act request (default 10).
    #[arg(long, value_name = "S")]
    pub worker_timeout: Option<f64>,
}

/// The started workers.
#[derive(Debug, Default)]
pub struct Workers {
    /// The detector, when --perception external.
    pub detector: Option<SharedWorker>,
    /// The policy, when --policy external.
    pub policy: Option<SharedWorker>,
}

impl WorkerArgs {
    /// Checks the flag combinations and puts the perception choice into
    /// the run's settings.
    pub fn apply(&self, run: &mut BridgeRunConfig) -> Result<(), Exit> {
        if let Some(p) = self.perception {
            run.perception = Some(p);
        }
        let external_perception = run.perception == Some(PerceptionChoice::External);
        match (external_perception, &self.detector) {
            (true, None) => return Err(usage("--perception external needs --detector CMD")),
            (false, Some(_)) => return Err(usage("--detector needs --perception external")),
            _ => {}
        }
        let external_policy = self.policy == Some(PolicyChoice::External);
        match (external_policy, &self.policy_cmd) {
            (true, None) => return Err(usage("--policy external needs --policy-cmd CMD")),
            (false, Some(_)) => return Err(usage("--policy-cmd needs --policy external")),
            _ => {}
        }
        if let Some(t) = self.worker_timeout {
            if !(t.is_finite() && t > 0.0 && t <= 3600.0) {
                return Err(usage(format!("--worker-timeout must be within (0, 3600] s, got {t}")));
            }
        }
        Ok(())
    }

    /// Starts the workers the flags name (exit 2 when one cannot start or
    /// does not serve its op).
    pub async fn start(&self, package_path: impl Fn(BridgeCommand) -> BridgeCommand) -> Result<Workers, Exit> {
        let config = WorkerConfig {
            request_timeout_s: self.worker_timeout.unwrap_or(WorkerConfig::default().request_timeout_s),
            ..WorkerConfig::default()
        };
        let endpoint = |flag: &str, text: &str| -> Result<BridgeEndpoint, Exit> {
            Ok(match BridgeEndpoint::parse(text).map_err(|e| usage(format!("{flag}: {e}")))? {
                BridgeEndpoint::Command(c) => BridgeEndpoint::Command(package_path(c)),
                tcp => tcp,
            })
        };
        let mut workers = Workers::default();
        if let Some(cmd) = &self.detector {
            let ep = endpoint("--detector", cmd)?;
            let w = connect_worker(&ep, "detector", "detect", config.clone())
                .await
                .map_err(|e| usage(format!("the detector could not start ({cmd}): {e}")))?;
            workers.detector = Some(w);
        }
        if let Some(cmd) = &self.policy_cmd {
            let ep = endpoint("--policy-cmd", cmd)?;
            let w = connect_worker(&ep, "policy", "act", config)
                .await
                .map_err(|e| usage(format!("the policy worker could not start ({cmd}): {e}")))?;
            workers.policy = Some(w);
        }
        Ok(workers)
    }
}

impl Workers {
    /// Plugs the workers into the runner.
    pub fn install(&self, mut runner: BridgeRunner) -> BridgeRunner {
        if let Some(d) = &self.detector {
            runner = runner.with_detector(d.clone());
        }
        if let Some(p) = &self.policy {
            let worker = p.clone();
            runner = runner.with_policy(
                "external",
                std::sync::Arc::new(move |setup: &PolicySetup| -> Box<dyn LowLevelPolicy> {
                    let cfg = ExternalPolicyConfig::for_task(
                        setup.step,
                        setup.corridor_half_width_m,
                        setup.success_distance_m,
                    );
                    Box::new(ExternalPolicy::new(worker.clone(), cfg))
                }),
            );
        }
        runner
    }

    /// Closes the workers (each gets `close`, then is killed if it lingers).
    pub async fn close(&self) {
        for w in [&self.detector, &self.policy].into_iter().flatten() {
            let _ = w.lock().await.close().await;
        }
    }
}
