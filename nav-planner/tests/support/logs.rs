//! Captures every tracing event of the current thread into a buffer.
//!
//! One TRACE subscriber is installed for the whole test process and writes
//! each event to the buffer of the thread that emitted it, if that thread is
//! capturing. A per-thread `set_default` subscriber raced with tests on
//! other threads: tracing caches each callsite's interest process-wide and,
//! while only one dispatcher is registered, computes it from the default of
//! the thread that hits the callsite first, so a warning first logged by a
//! test without capture stayed disabled for every thread (a flaky "logged
//! once" failure in CI).

use std::cell::RefCell;
use std::io::Write;
use std::sync::{Arc, Mutex, Once};

type Buffer = Arc<Mutex<Vec<u8>>>;

thread_local! {
    static SINK: RefCell<Option<Buffer>> = const { RefCell::new(None) };
}

#[derive(Clone, Default)]
pub struct Captured(Buffer);

impl Captured {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).to_string()
    }
}

/// Stops the capture on this thread when dropped.
pub struct CaptureGuard;

impl Drop for CaptureGuard {
    fn drop(&mut self) {
        SINK.with(|sink| sink.borrow_mut().take());
    }
}

/// Writes to the emitting thread's buffer, or nowhere.
struct ThreadSink;

impl Write for ThreadSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        SINK.with(|sink| {
            if let Some(buffer) = sink.borrow().as_ref() {
                buffer.lock().unwrap().extend_from_slice(buf);
            }
        });
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Captures this thread's events until the guard drops (tests run on a
/// current-thread runtime, so the backend's events land here).
pub fn capture() -> (Captured, CaptureGuard) {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(|| ThreadSink)
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
    });
    // a callsite first hit on another thread while the subscriber was being
    // installed may have cached "never"; recompute every cached interest
    tracing::callsite::rebuild_interest_cache();
    let captured = Captured::default();
    SINK.with(|sink| *sink.borrow_mut() = Some(Arc::clone(&captured.0)));
    (captured, CaptureGuard)
}
