//! The decision side: the planner, inline when it is instant and on its own
//! task otherwise, and the bookkeeping of the one call in flight.
//!
//! At most one request is outstanding at a time. Each request carries an
//! id and its reply comes back with the same id, so a reply is applied
//! with the snapshot it answers (its frontier list) and never with a later
//! one; a reply nobody waits for any more (a run that ended while its call
//! was in flight) is dropped.

use crate::navigator::NavError;
use crate::protocol::PlannerReply;
use crate::protocol::explore::{ExploreDecision, ExploreFrontier, ExplorePlanner, ExploreSnapshot};
use nav_safety::FrontierGoal;
use tokio::sync::mpsc;

/// A reply from the planner task, with the id of the request it answers.
type TaskReply = (u64, PlannerReply<ExploreDecision>);

/// The planner behind the loop.
pub(super) enum Decider {
    /// An instant planner (the offline explorer), called on the tick.
    Inline(Box<dyn ExplorePlanner>),
    /// A planner with latency (a VLM), running on its own task.
    Task(PlannerTask),
}

/// The channels to a planner running on its own task.
pub(super) struct PlannerTask {
    requests: mpsc::Sender<(u64, ExploreSnapshot)>,
    replies: mpsc::Receiver<TaskReply>,
    /// The id the next request gets.
    next_id: u64,
}

/// A planner call in progress: its id, when it started and the frontiers
/// its snapshot listed (the ids a `navigate_to_goal` reply refers to).
pub(super) struct PendingCall {
    id: u64,
    pub(super) started_s: f64,
    pub(super) frontiers: Vec<FrontierGoal>,
}

impl PendingCall {
    fn new(id: u64, started_s: f64, snap: &ExploreSnapshot) -> Self {
        Self { id, started_s, frontiers: snap.frontiers.iter().map(ExploreFrontier::goal).collect() }
    }
}

/// What became of a snapshot handed to the planner.
pub(super) enum Dispatch {
    /// An instant planner answered at once.
    Answered(Box<PlannerReply<ExploreDecision>>, PendingCall),
    /// The request went to the planner task; the reply comes later.
    Sent(PendingCall),
    /// The planner task took no request (it has ended, or still holds an
    /// earlier run's request): nothing was asked.
    Refused,
}

impl Decider {
    /// Runs `planner` inline when it is instant, otherwise on a new tokio
    /// task.
    pub(super) fn new(planner: Box<dyn ExplorePlanner>) -> Result<Self, NavError> {
        if planner.is_instant() {
            return Ok(Decider::Inline(planner));
        }
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|e| NavError::Config(format!("a model planner runs on a tokio task: {e}")))?;
        let (req_tx, mut req_rx) = mpsc::channel::<(u64, ExploreSnapshot)>(1);
        let (rep_tx, rep_rx) = mpsc::channel::<TaskReply>(2);
        let mut planner = planner;
        runtime.spawn(async move {
            while let Some((id, snap)) = req_rx.recv().await {
                let reply = planner.decide(&snap).await;
                if rep_tx.send((id, reply)).await.is_err() {
                    break;
                }
            }
        });
        Ok(Decider::Task(PlannerTask { requests: req_tx, replies: rep_rx, next_id: 0 }))
    }

    /// The reply to `pending`, if it has arrived; `pending` is then cleared.
    /// Replies to earlier requests are dropped.
    pub(super) fn poll(
        &mut self,
        pending: &mut Option<PendingCall>,
    ) -> Option<(PlannerReply<ExploreDecision>, PendingCall)> {
        let Decider::Task(task) = self else { return None };
        let want = pending.as_ref()?.id;
        while let Ok((id, reply)) = task.replies.try_recv() {
            if id == want {
                return pending.take().map(|call| (reply, call));
            }
        }
        None
    }

    /// Hands `snap` (taken at loop time `now`) to the planner. Call only
    /// while no call is in flight.
    pub(super) async fn dispatch(&mut self, snap: ExploreSnapshot, now: f64) -> Dispatch {
        match self {
            Decider::Inline(planner) => {
                let reply = planner.decide(&snap).await;
                Dispatch::Answered(Box::new(reply), PendingCall::new(0, now, &snap))
            }
            Decider::Task(task) => {
                let call = PendingCall::new(task.next_id, now, &snap);
                match task.requests.try_send((call.id, snap)) {
                    Ok(()) => {
                        task.next_id += 1;
                        Dispatch::Sent(call)
                    }
                    Err(_) => Dispatch::Refused,
                }
            }
        }
    }
}
