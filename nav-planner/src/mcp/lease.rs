//! The motion lease: one client drives at a time.
//!
//! The first client to call a motion tool (`move_toward`, `rotate`,
//! `navigate_to_goal`) takes the lease; it keeps it while it keeps calling
//! them. It is released when that client disconnects, or once it has made
//! no motion call for the lease's idle time; then the next client's motion
//! call takes it. Other clients keep the read-only tools, and `stop_robot`
//! is open to every client: a stop always wins.

use std::time::Instant;

/// Who holds the lease.
#[derive(Debug, Clone)]
struct Holder {
    client: u64,
    name: String,
    since: Instant,
    last_motion: Instant,
}

/// The lease. See the [module docs](self).
#[derive(Debug, Clone)]
pub(crate) struct MotionLease {
    holder: Option<Holder>,
    idle_release_s: f64,
}

impl MotionLease {
    /// A free lease that a silent holder loses after `idle_release_s`.
    pub(crate) fn new(idle_release_s: f64) -> Self {
        Self { holder: None, idle_release_s }
    }

    /// A motion call of `client` (named `name`) at `now`: takes or renews
    /// the lease, or says why not (the holder, how long it has held the
    /// lease, when it last moved the robot, when the lease frees).
    pub(crate) fn acquire(&mut self, client: u64, name: &str, now: Instant) -> Result<(), String> {
        match &mut self.holder {
            Some(h) if h.client == client => {
                h.last_motion = now;
                Ok(())
            }
            Some(h) if now.duration_since(h.last_motion).as_secs_f64() < self.idle_release_s => {
                let idle = now.duration_since(h.last_motion).as_secs_f64();
                let held = now.duration_since(h.since).as_secs_f64();
                Err(format!(
                    "Refused: another client holds the motion lease (client #{} \"{}\", driving for {held:.0} s, last \
                     motion call {idle:.1} s ago). One client drives at a time; the lease frees when that client \
                     disconnects or after {:.0} s without a motion call from it. Meanwhile you can use the read-only \
                     tools (get_state, get_map, observe_scene, check_path_clear, report_discovery) and stop_robot, \
                     which always works.",
                    h.client, h.name, self.idle_release_s
                ))
            }
            _ => {
                self.holder = Some(Holder { client, name: name.to_owned(), since: now, last_motion: now });
                Ok(())
            }
        }
    }

    /// `client` disconnected: true when it held the lease (now free).
    pub(crate) fn release(&mut self, client: u64) -> bool {
        if self.holder.as_ref().is_some_and(|h| h.client == client) {
            self.holder = None;
            return true;
        }
        false
    }

    /// Nobody holds the lease.
    pub(crate) fn is_free(&self) -> bool {
        self.holder.is_none()
    }

    /// The lease as a line for `get_state`, from `client`'s point of view.
    pub(crate) fn describe(&self, client: u64, now: Instant) -> String {
        match &self.holder {
            None => "motion lease: free (your first motion call takes it)".into(),
            Some(h) if h.client == client => "motion lease: yours".into(),
            Some(h) => {
                let idle = now.duration_since(h.last_motion).as_secs_f64();
                if idle >= self.idle_release_s {
                    "motion lease: free (its holder went quiet)".into()
                } else {
                    format!(
                        "motion lease: held by client #{} \"{}\" (last motion call {idle:.1} s ago)",
                        h.client, h.name
                    )
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn one_holder_at_a_time_until_it_leaves_or_goes_quiet() {
        let t = Instant::now();
        let mut lease = MotionLease::new(30.0);
        assert!(lease.acquire(1, "a", t).is_ok());
        let err = lease.acquire(2, "b", t + Duration::from_secs(5)).unwrap_err();
        assert!(err.contains("client #1 \"a\"") && err.contains("stop_robot"), "{err}");
        assert!(lease.acquire(1, "a", t + Duration::from_secs(6)).is_ok());
        // quiet for the idle time: the next client takes it
        assert!(lease.acquire(2, "b", t + Duration::from_secs(37)).is_ok());
        assert_eq!(lease.describe(2, t + Duration::from_secs(37)), "motion lease: yours");
        assert!(!lease.release(1));
        assert!(lease.release(2));
        assert!(lease.acquire(1, "a", t + Duration::from_secs(38)).is_ok());
    }
}
