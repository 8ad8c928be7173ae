//! [`RobotLink`]: the rosbridge HAL as the explore loop's robot. Every
//! tick (on the odometry read that opens it) it hands a change of the
//! robot's pause topic to the loop's pause signal, passes the voice
//! commands received to the loop's inbox, reports pause and link changes,
//! speaks the discoveries on the speech topic and the announcements on the
//! announcement topic; in a dry run it prints the Twists (and sentences)
//! that would have been published.

use super::progress::Progress;
use async_trait::async_trait;
use nav_core::geometry::Pose2;
use nav_hal::HalError;
use nav_hal::hal::{
    Actuators, CameraFrame, Capabilities, DepthFrame, MotionOutcome, NavGoalState, Odometry, Sensors, StampedScan,
    VelocityCommand,
};
use nav_hal::rosbridge::RosbridgeHal;
use nav_planner::navigator::voice::VoiceInbox;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A dry run prints a command when motion starts or stops, else at most
/// once per this many seconds when it changed.
const ECHO_PERIOD_S: f64 = 1.0;

/// See the module docs.
pub struct RobotLink {
    hal: RosbridgeHal,
    pause: Arc<AtomicBool>,
    voice: VoiceInbox,
    progress: Progress,
    /// The pause topic as last seen (only its changes set the pause signal:
    /// a voice `resume` may have cleared it since).
    paused: bool,
    connected: bool,
    /// The last dry-run command printed: (time, linear, angular).
    echoed: Option<(f64, f64, f64)>,
}

impl RobotLink {
    /// Wraps a connected HAL; `pause` is the loop's pause signal, `voice`
    /// its voice command inbox.
    pub fn new(hal: RosbridgeHal, pause: Arc<AtomicBool>, voice: VoiceInbox, progress: Progress) -> Self {
        let connected = hal.is_connected();
        Self { hal, pause, voice, progress, paused: false, connected, echoed: None }
    }

    /// The HAL (status, configuration).
    pub fn hal(&self) -> &RosbridgeHal {
        &self.hal
    }

    /// Speaks the discoveries reported since the last tick on the speech
    /// topic (`speak_discoveries`; in a dry run they are printed instead),
    /// from a task of their own so the control tick does not wait.
    fn speak(&mut self) {
        super::speak_announcements(&self.hal, &self.progress);
        let texts = self.progress.take_discoveries();
        if texts.is_empty() || !self.hal.config().speak_discoveries {
            return;
        }
        let topic = self.hal.config().topics.speech.clone();
        if self.hal.config().dry_run {
            for text in texts {
                self.progress.say(&format!("dry run: would say {text:?} on {topic}"));
            }
            return;
        }
        let speech = self.hal.speech_handle();
        let progress = self.progress.clone();
        tokio::spawn(async move {
            for text in texts {
                if let Err(e) = speech.say(&text).await {
                    progress.say(&format!("could not speak on {topic}: {e}"));
                }
            }
        });
    }

    /// Passes on the voice commands and a change of the pause topic, and
    /// reports changes of pause and link.
    fn observe(&mut self) {
        self.speak();
        super::forward_voice(&self.hal, &self.voice, &self.progress);
        let paused = self.hal.paused();
        let topic = &self.hal.config().topics.pause;
        if paused != self.paused {
            self.paused = paused;
            self.pause.store(paused, Ordering::SeqCst);
            if paused {
                self.progress
                    .say(&format!("paused by {topic}: one stop burst, then nothing on cmd_vel and no decisions"));
            } else {
                self.progress.say(&format!("resumed by {topic}"));
            }
        }
        let connected = self.hal.is_connected();
        if connected != self.connected {
            self.connected = connected;
            let status = self.hal.link_status();
            if connected {
                self.progress.say(&format!("link: reconnected (session {})", status.sessions));
            } else {
                let why = status.last_error.unwrap_or_else(|| "unknown".into());
                self.progress.say(&format!("link lost ({why}): the robot is treated as stopped; reconnecting"));
            }
        }
    }

    /// In a dry run, prints the command that would have gone out.
    fn echo(&mut self) {
        let Some(cmd) = self.hal.last_command().filter(|c| !c.published) else { return };
        let moving = cmd.linear != 0.0 || cmd.angular != 0.0;
        let print = match self.echoed {
            None => true,
            Some((t, v, w)) => {
                let was_moving = v != 0.0 || w != 0.0;
                let changed = (v - cmd.linear).abs() >= 0.005 || (w - cmd.angular).abs() >= 0.005;
                moving != was_moving || (changed && cmd.at_s - t >= ECHO_PERIOD_S)
            }
        };
        if print {
            self.echoed = Some((cmd.at_s, cmd.linear, cmd.angular));
            let topic = &self.hal.config().topics.cmd_vel;
            self.progress.say(&format!(
                "dry run: would publish Twist linear.x={:.3} angular.z={:.3} on {topic}",
                cmd.linear, cmd.angular
            ));
        }
    }
}

#[async_trait]
impl Sensors for RobotLink {
    fn capabilities(&self) -> Capabilities {
        self.hal.capabilities()
    }

    async fn odometry(&mut self) -> Result<Odometry, HalError> {
        self.observe();
        self.hal.odometry().await
    }

    async fn scan(&mut self) -> Result<StampedScan, HalError> {
        self.hal.scan().await
    }

    async fn rgb(&mut self) -> Result<CameraFrame, HalError> {
        self.hal.rgb().await
    }

    async fn depth(&mut self) -> Result<DepthFrame, HalError> {
        self.hal.depth().await
    }
}

#[async_trait]
impl Actuators for RobotLink {
    async fn drive(&mut self, command: VelocityCommand) -> Result<MotionOutcome, HalError> {
        let out = self.hal.drive(command).await?;
        if self.hal.config().dry_run {
            self.echo();
        }
        Ok(out)
    }

    async fn stop(&mut self) -> Result<(), HalError> {
        self.hal.stop().await
    }

    async fn start_goal(&mut self, goal: Pose2) -> Result<(), HalError> {
        self.hal.start_goal(goal).await
    }

    async fn goal_state(&mut self) -> Result<NavGoalState, HalError> {
        self.hal.goal_state().await
    }

    async fn cancel_goal(&mut self) -> Result<(), HalError> {
        self.hal.cancel_goal().await
    }
}
