//! The live server (feature `live`): the recording's channels over the
//! Foxglove WebSocket protocol, from the `foxglove` crate's server.

use super::{LiveOptions, RecordError};
use foxglove::{Context, WebSocketServer, WebSocketServerHandle};
use std::net::SocketAddr;
use std::sync::Arc;

/// Serves `ctx`'s channels at `live.addr`; returns the bound address.
/// Anything but loopback needs [`LiveOptions::any_address`].
pub(super) fn serve(
    ctx: &Arc<Context>,
    live: &LiveOptions,
) -> Result<(SocketAddr, WebSocketServerHandle), RecordError> {
    let addr = live.addr;
    if !addr.ip().is_loopback() && !live.any_address {
        return Err(RecordError::Live {
            addr,
            message: "not a loopback address: anyone who can reach it would see the camera, the map and the \
                      model's requests; allow it explicitly"
                .into(),
        });
    }
    let server = WebSocketServer::new()
        .context(ctx)
        .name(concat!("navkit ", env!("CARGO_PKG_VERSION")))
        .bind(addr.ip().to_string(), addr.port())
        .message_backlog_size(live.backlog.max(1));
    // the server starts on the SDK's own runtime, from a plain thread (it
    // may not be started from inside an async runtime's thread)
    let started = std::thread::spawn(move || server.start_blocking())
        .join()
        .map_err(|_| RecordError::Live { addr, message: "the server did not start".into() })?;
    let handle = started.map_err(|e| RecordError::Live { addr, message: e.to_string() })?;
    Ok((SocketAddr::new(addr.ip(), handle.port()), handle))
}
