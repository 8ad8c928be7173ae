//! Captures every tracing event of the current thread into a buffer.

use std::io::Write;
use std::sync::{Arc, Mutex};

use tracing::subscriber::DefaultGuard;

#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).to_string()
    }
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs a TRACE-level subscriber for this thread (tests run on a
/// current-thread runtime, so the backend's events land here).
pub fn capture() -> (Captured, DefaultGuard) {
    let captured = Captured::default();
    let buffer = Arc::clone(&captured.0);
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || Sink(Arc::clone(&buffer)))
        .finish();
    (captured, tracing::subscriber::set_default(subscriber))
}
