//! [`LinkRuntime`]: the tokio runtime the connection task, its camera
//! sockets and roslibrust's client run on, apart from the caller's.
//!
//! Why a runtime of its own: roslibrust 0.26's rosbridge client keeps its
//! subscriptions in a `DashMap` and holds an entry's (blocking) shard lock
//! across `.await` while it sends a `subscribe` or `unsubscribe`; its
//! receive task takes the same shard lock, blocking its worker thread, for
//! every message that arrives. When the HAL's subscribers are dropped
//! together, several unsubscribe tasks and the receive task can block every
//! worker of the runtime on the shard whose holder is waiting to be polled,
//! and the whole runtime hangs (seen: a two-worker test runtime, stacks in
//! `DashMap::get_mut` and `DashMap::_get`). The number of tasks that can
//! block at once is bounded by the client's subscriptions plus its receive
//! task, so a runtime with more workers than that always has one left to
//! poll the holder: [`LinkRuntime::WORKERS`]. It also keeps the HAL's
//! timing independent of how busy (or single-threaded) the caller's
//! runtime is.

use crate::HalError;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

/// Owns the link's runtime; dropping the last handle lets the connection
/// task finish (it stops the robot once every HAL handle is gone) for at
/// most [`LinkRuntime::CLOSE_WAIT`], then shuts the runtime down, on a
/// thread of its own (a runtime cannot be dropped inside another one).
pub(crate) struct LinkRuntime {
    parts: Arc<Mutex<Option<Parts>>>,
}

/// The runtime and the connection task on it, until the close takes them.
type Parts = (Runtime, JoinHandle<()>);

impl std::fmt::Debug for LinkRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkRuntime").field("workers", &Self::WORKERS).finish()
    }
}

impl LinkRuntime {
    /// Worker threads: the client's subscriptions (scan, odometry, pause,
    /// voice commands, the Nav2 status) plus its receive task, plus spares.
    pub(crate) const WORKERS: usize = 8;

    /// Longest wait for the connection task after the last handle is gone
    /// (its final stop burst takes well under a second).
    pub(crate) const CLOSE_WAIT: Duration = Duration::from_secs(5);

    /// Starts a runtime and spawns `task` on it.
    pub(crate) fn spawn(task: impl Future<Output = ()> + Send + 'static) -> Result<Self, HalError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(Self::WORKERS)
            .thread_name("navkit-rosbridge")
            .enable_all()
            .build()
            .map_err(|source| HalError::Io { path: "(threads of the rosbridge link's runtime)".into(), source })?;
        let handle = rt.spawn(task);
        Ok(Self { parts: Arc::new(Mutex::new(Some((rt, handle)))) })
    }
}

impl Drop for LinkRuntime {
    fn drop(&mut self) {
        let parts = Arc::clone(&self.parts);
        let closer = std::thread::Builder::new().name("navkit-rosbridge-close".into()).spawn(move || {
            let taken = parts.lock().unwrap_or_else(PoisonError::into_inner).take();
            if let Some((rt, task)) = taken {
                // the timer is made inside the runtime (made here, outside it, it panics: no reactor)
                let _ = rt.block_on(async move { tokio::time::timeout(Self::CLOSE_WAIT, task).await });
                rt.shutdown_timeout(Duration::from_millis(200));
            }
        });
        if closer.is_err() {
            // no thread for an orderly close: stop at once, without blocking this one
            if let Some((rt, _)) = self.parts.lock().unwrap_or_else(PoisonError::into_inner).take() {
                rt.shutdown_background();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dropping the last handle lets the connection task finish (its final
    /// stop burst) before the runtime goes: the close wait runs inside the
    /// runtime (a timer made outside it panicked, and the task was cut off).
    #[test]
    fn dropping_the_link_lets_its_task_finish() {
        let (tx, rx) = std::sync::mpsc::channel();
        let link = LinkRuntime::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let _ = tx.send("stop burst sent");
        })
        .unwrap();
        drop(link);
        assert_eq!(rx.recv_timeout(Duration::from_secs(4)), Ok("stop burst sent"));
    }
}
