//! SIGINT and SIGTERM for the long-running commands (`nav rosmaster`, `nav
//! sim-robot`): each names the signal it got and decides what it means.

use crate::exit::{Exit, internal};

/// SIGINT and SIGTERM (Ctrl-C elsewhere).
pub struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    /// Takes over SIGINT and SIGTERM (inside the runtime).
    pub fn install() -> Result<Self, Exit> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let interrupt = signal(SignalKind::interrupt()).map_err(|e| internal(format!("SIGINT handler: {e}")))?;
            let terminate = signal(SignalKind::terminate()).map_err(|e| internal(format!("SIGTERM handler: {e}")))?;
            Ok(Self { interrupt, terminate })
        }
        #[cfg(not(unix))]
        {
            Ok(Self {})
        }
    }

    /// The next signal's name.
    pub async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            async fn recv(s: &mut tokio::signal::unix::Signal) {
                if s.recv().await.is_none() {
                    std::future::pending::<()>().await;
                }
            }
            tokio::select! {
                () = recv(&mut self.interrupt) => "SIGINT",
                () = recv(&mut self.terminate) => "SIGTERM",
            }
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
            "Ctrl-C"
        }
    }
}
