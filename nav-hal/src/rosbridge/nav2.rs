//! Nav2 goals over rosbridge (`[rosbridge] nav2`): finding Nav2 in a
//! session, following its NavigateToPose status topic, and the state of
//! the goal handed over with [`start_goal`](crate::hal::Actuators::start_goal).
//!
//! Goals go to Nav2's goal topic (`/goal_pose`, `geometry_msgs/PoseStamped`):
//! bt_navigator turns each into a NavigateToPose goal of its own, as RViz's
//! "Nav2 Goal" button does. Its id is not known to the sender, so the
//! first id on the action's status topic (`/navigate_to_pose/_action/status`)
//! that was not there when the goal was sent is taken as this goal's
//! (preferring one that is running: Nav2 runs one goal at a time). Goals
//! are cancelled through the action's `_action/cancel_goal` service. This
//! needs no action client over rosbridge (whose action operations differ
//! between rosbridge_suite versions and which roslibrust does not offer).

use super::config::{Nav2Mode, RosbridgeConfig};
use super::link::{Connect, describe};
use super::msg::action_msgs::{GoalStatus, GoalStatusArray};
use super::msg::rosapi::{Topics, TopicsRequest};
use super::state::{Nav2Goal, Nav2State, Shared};
use crate::HalError;
use crate::hal::NavGoalState;
use roslibrust::{Subscribe, TopicProvider};
use std::sync::Arc;
use std::time::Duration;
use tracing::info;

const LOG: &str = "nav_hal::rosbridge";

/// `Ok` when goals may go to Nav2 now, else `Unsupported` saying why.
pub(crate) fn nav2_usable(config: &RosbridgeConfig, nav2: &Nav2State) -> Result<(), HalError> {
    let what = |why: &str| Err(HalError::unsupported(format!("Nav2 goals ({why})")));
    if config.dry_run {
        return what("a dry run sends no goals");
    }
    match (config.nav2, &nav2.available) {
        (Nav2Mode::Off, _) => what("nav2 = \"off\""),
        (Nav2Mode::On, _) | (Nav2Mode::Auto, Some(Ok(()))) => Ok(()),
        (Nav2Mode::Auto, Some(Err(reason))) => what(&format!("Nav2 not found: {reason}")),
        (Nav2Mode::Auto, None) => what("still looking for Nav2"),
    }
}

/// The state of a goal sent to Nav2, from its newest status.
pub(crate) fn nav2_goal_state(goal: &Nav2Goal, now_s: f64, config: &RosbridgeConfig) -> NavGoalState {
    let failed = |code: &str, reason: String| NavGoalState::Failed { code: code.into(), reason };
    let status_topic = &config.topics.nav2_status;
    if goal.id.is_none() {
        if goal.status >= GoalStatus::CANCELING {
            return failed("canceled", "cancelled by navkit before Nav2 accepted it".into());
        }
        let waited = now_s - goal.sent_s;
        if waited > config.nav2_accept_timeout_s {
            return failed(
                "not_accepted",
                format!(
                    "Nav2 did not accept the goal within {:.1} s (no new goal on {status_topic}; is bt_navigator \
                     listening on {}?)",
                    config.nav2_accept_timeout_s, config.topics.goal
                ),
            );
        }
        return NavGoalState::Pending;
    }
    match goal.status {
        GoalStatus::SUCCEEDED => NavGoalState::Succeeded,
        GoalStatus::ABORTED => {
            failed("aborted", "Nav2 aborted the goal (no path, no progress, or its recoveries failed)".into())
        }
        GoalStatus::CANCELED => failed("canceled", "the goal was cancelled".into()),
        GoalStatus::CANCELING => failed("canceled", "the goal is being cancelled".into()),
        GoalStatus::ACCEPTED | GoalStatus::EXECUTING => NavGoalState::Active,
        other => failed("rejected", format!("Nav2 reported status {other} for the goal")),
    }
}

/// What the Nav2 task of a session needs from the configuration.
pub(crate) struct Nav2Watch {
    mode: Nav2Mode,
    topics_service: String,
    status: String,
    timeout: Duration,
}

impl Nav2Watch {
    pub(crate) fn new(config: &RosbridgeConfig) -> Self {
        Self {
            mode: config.nav2,
            topics_service: config.topics.topics_service.clone(),
            status: config.topics.nav2_status.clone(),
            timeout: RosbridgeConfig::secs(config.connect_timeout_s),
        }
    }

    /// `auto`: Nav2 is there when rosapi's topic list holds its status
    /// topic; `on`: always. Then its status topic is subscribed.
    async fn detect<C: Connect>(
        &self,
        link: &C::Link,
    ) -> Result<<C::Link as TopicProvider>::Subscriber<GoalStatusArray>, String> {
        if self.mode == Nav2Mode::Auto {
            let call = C::call::<Topics>(link, &self.topics_service, TopicsRequest {});
            match tokio::time::timeout(self.timeout, call).await {
                Ok(Ok(r)) if r.topics.contains(&self.status) => {}
                Ok(Ok(_)) => return Err(format!("{} is not in {}", self.status, self.topics_service)),
                Ok(Err(e)) => return Err(format!("{}: {}", self.topics_service, describe(&e))),
                Err(_) => {
                    return Err(format!(
                        "{}: no reply within {:.1} s",
                        self.topics_service,
                        self.timeout.as_secs_f64()
                    ));
                }
            }
        }
        C::subscribe_hidden::<GoalStatusArray>(link, &self.status)
            .await
            .map_err(|e| format!("subscribe {}: {}", self.status, describe(&e)))
    }
}

/// How often `nav2 = "auto"` looks for Nav2 again while it is not there.
const NAV2_REDETECT: Duration = Duration::from_secs(5);

/// Nav2 in one session: detects it (again every [`NAV2_REDETECT`] while it
/// is not there), then follows its status topic into the shared state.
/// Ends (returning why) only if that subscription fails.
pub(crate) async fn nav2_task<C: Connect>(link: C::Link, watch: Nav2Watch, shared: Arc<Shared>) -> String {
    let session = shared.data().session;
    let mut sub = loop {
        let found = watch.detect::<C>(&link).await;
        {
            let mut d = shared.data();
            if d.session != session {
                return "session ended".into();
            }
            match found {
                Ok(sub) => {
                    info!(target: LOG, "Nav2 found ({}): navigation goals go to Nav2", watch.status);
                    d.nav2.available = Some(Ok(()));
                    break sub;
                }
                Err(reason) => {
                    if d.nav2.available.is_none() {
                        info!(target: LOG, "Nav2 not found ({reason}): navkit follows its own paths");
                    }
                    d.nav2.available = Some(Err(reason));
                }
            }
        }
        tokio::time::sleep(NAV2_REDETECT).await;
    };
    loop {
        match sub.next().await {
            Ok(msg) => {
                let now = shared.now_s();
                let list: Vec<(Vec<u8>, i8)> =
                    msg.status_list.into_iter().map(|s| (s.goal_info.goal_id.uuid, s.status)).collect();
                let mut d = shared.data();
                if d.session != session {
                    return format!("session of {} ended", watch.status);
                }
                d.nav2.update(&list);
                Shared::accepted(&mut d, &watch.status, now, f64::NAN);
            }
            Err(e) => return format!("subscription {}: {}", watch.status, describe(&e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> Vec<u8> {
        vec![n; 16]
    }

    fn sent(state: &mut Nav2State, at_s: f64) {
        let known = state.seen.keys().cloned().collect();
        state.goal = Some(Nav2Goal { sent_s: at_s, known, id: None, status: 0 });
    }

    #[test]
    fn the_goal_is_the_first_new_running_id_and_follows_its_status() {
        let config = RosbridgeConfig::default();
        let mut nav2 = Nav2State::default();
        // goals from before (someone else's, finished) are not ours
        nav2.update(&[(id(1), GoalStatus::SUCCEEDED), (id(2), GoalStatus::EXECUTING)]);
        sent(&mut nav2, 10.0);
        let goal = |n: &Nav2State| nav2_goal_state(n.goal.as_ref().unwrap(), 10.5, &config);
        assert_eq!(goal(&nav2), NavGoalState::Pending);
        // the old running goal is preempted (aborted); the new id is ours, the aborted old one is not
        nav2.update(&[
            (id(1), GoalStatus::SUCCEEDED),
            (id(2), GoalStatus::ABORTED),
            (id(7), GoalStatus::CANCELED),
            (id(3), GoalStatus::ACCEPTED),
        ]);
        assert_eq!(nav2.goal.as_ref().unwrap().id, Some(id(3)), "a new running id is preferred");
        assert_eq!(goal(&nav2), NavGoalState::Active);
        nav2.update(&[(id(3), GoalStatus::EXECUTING)]);
        assert_eq!(goal(&nav2), NavGoalState::Active);
        nav2.update(&[(id(3), GoalStatus::SUCCEEDED)]);
        assert_eq!(goal(&nav2), NavGoalState::Succeeded);
        nav2.update(&[(id(3), GoalStatus::ABORTED)]);
        assert!(matches!(goal(&nav2), NavGoalState::Failed { code, .. } if code == "aborted"));
    }

    #[test]
    fn a_goal_nobody_accepts_fails_after_the_timeout_and_cancelled_ones_say_so() {
        let config = RosbridgeConfig { nav2_accept_timeout_s: 2.0, ..RosbridgeConfig::default() };
        let mut nav2 = Nav2State::default();
        sent(&mut nav2, 1.0);
        let g = nav2.goal.clone().unwrap();
        assert_eq!(nav2_goal_state(&g, 2.9, &config), NavGoalState::Pending);
        match nav2_goal_state(&g, 3.1, &config) {
            NavGoalState::Failed { code, reason } => {
                assert_eq!(code, "not_accepted");
                assert!(reason.contains("within 2.0 s") && reason.contains("/goal_pose"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        let cancelled = Nav2Goal { status: GoalStatus::CANCELING, ..g };
        assert!(
            matches!(nav2_goal_state(&cancelled, 1.5, &config), NavGoalState::Failed { code, .. } if code == "canceled")
        );
    }

    #[test]
    fn usable_only_when_allowed_and_found() {
        let mut nav2 = Nav2State::default();
        let auto = RosbridgeConfig::default();
        assert!(nav2_usable(&auto, &nav2).is_err(), "still looking");
        nav2.available = Some(Err("not in /rosapi/topics".into()));
        assert!(matches!(nav2_usable(&auto, &nav2), Err(HalError::Unsupported { what }) if what.contains("not found")));
        nav2.available = Some(Ok(()));
        assert!(nav2_usable(&auto, &nav2).is_ok());
        assert!(nav2_usable(&RosbridgeConfig { nav2: Nav2Mode::Off, ..auto.clone() }, &nav2).is_err());
        assert!(nav2_usable(&RosbridgeConfig { dry_run: true, ..auto.clone() }, &nav2).is_err());
        nav2.available = None;
        assert!(nav2_usable(&RosbridgeConfig { nav2: Nav2Mode::On, ..auto }, &nav2).is_ok(), "on: no detection");
    }
}
