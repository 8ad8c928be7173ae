//! `nav sim-robot`: the built-in simulator served as a robot over rosbridge
//! v2, so `nav rosmaster` (or any rosbridge client) can be tried without
//! hardware.
//!
//! It loads the arena as `nav run` does ([`super::load_arena`], then
//! `--seed`'s start as [`seeded_arena`] draws it), gives the simulated
//! robot the base `nav rosmaster` expects by default (the ROSMASTER A1's
//! car-like steering) and serves it with nav-hal's [`RosbridgePeer`] on
//! `--bind`:`--port`. The peer's test controls are never called here, and
//! its record of client messages (kept for tests) is off, so a server that
//! runs for hours does not grow. The simulated base zeroes a Twist older
//! than [`CMD_VEL_TIMEOUT_S`], as a robot's base driver does, so a client
//! that dies mid-run does not leave it driving.
//!
//! It prints one line on stdout (where it listens, what to run next),
//! connection changes on stderr, and runs until SIGINT (Ctrl-C) or
//! SIGTERM, then exits 0.

use crate::exit::{CmdResult, Exit, diag, internal, usage};
use clap::Args;
use nav_hal::HalError;
use nav_hal::rosbridge::RosbridgeConfig;
use nav_hal::rosbridge::sim_robot::{PeerConfig, RosbridgePeer};
use nav_hal::sim::{SimConfig, SimWorld};
use nav_planner::navigator::episode::seeded_arena;
use nav_planner::protocol::ProtocolKind;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

/// The simulated base zeroes a Twist older than this, s (`nav rosmaster`
/// publishes at 20 Hz).
pub const CMD_VEL_TIMEOUT_S: f64 = 0.5;

/// The default port: rosbridge_server's.
pub const DEFAULT_PORT: u16 = 9090;

/// Serve the built-in simulator as a robot over rosbridge v2, to try
/// `nav rosmaster` without a robot: run this, then in another terminal
/// nav rosmaster --url ws://127.0.0.1:9090. The simulated robot has a
/// 360° LiDAR on /scan, odometry on /odom, an RGB-D camera and a car-like
/// base (0.3 m turning radius, as nav rosmaster expects by default) driven
/// by /cmd_vel. Ctrl-C (or SIGTERM) stops it.
///
/// Built-in arenas: simple, exploration (the default), dead_end,
/// narrow_corridor, house_a, house_b, house_c and proc_<seed>.
#[derive(Args, Debug)]
pub struct SimRobotArgs {
    /// Built-in arena (default: exploration).
    #[arg(long)]
    pub arena: Option<String>,
    /// An arena JSON file (format: docs/SIMULATOR.md, "Arenas").
    #[arg(long, value_name = "PATH")]
    pub arena_file: Option<PathBuf>,
    /// Seed: 0 starts at the arena's start; others draw a start (as nav run
    /// --seed does) and seed the sensor noise.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Port to listen on (0: a free one, printed).
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Address to listen on: loopback (127.0.0.1, ::1, localhost) unless
    /// --allow-remote is given.
    #[arg(long, value_name = "ADDRESS", default_value = "127.0.0.1")]
    pub bind: String,
    /// Allow a --bind address other machines can reach. There is no
    /// authentication: anyone who reaches the port can drive the simulated
    /// robot.
    #[arg(long)]
    pub allow_remote: bool,
    /// Emulate Nav2 as well: goals on /goal_pose are driven to by the
    /// simulated robot itself, with status on
    /// /navigate_to_pose/_action/status (nav rosmaster then hands its
    /// navigation goals to it).
    #[arg(long)]
    pub nav2: bool,
}

/// The address `--bind` names: an IP address or `localhost` (127.0.0.1).
/// A non-loopback one needs `--allow-remote` (exit 2 without it).
fn bind_address(args: &SimRobotArgs) -> Result<SocketAddr, Exit> {
    let text = args.bind.trim();
    let ip: IpAddr = if text.eq_ignore_ascii_case("localhost") {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    } else {
        text.trim_start_matches('[').trim_end_matches(']').parse().map_err(|_| {
            usage(format!("--bind {text:?}: not an IP address (e.g. 127.0.0.1, ::1, or 0.0.0.0 with --allow-remote)"))
        })?
    };
    if !ip.is_loopback() && !args.allow_remote {
        return Err(usage(format!(
            "--bind {ip}: not a loopback address; other machines could drive the simulated robot (there is no \
             authentication). Add --allow-remote to serve it there anyway"
        )));
    }
    Ok(SocketAddr::new(ip, args.port))
}

/// The simulated world: the arena (`--arena`/`--arena-file`, `nav run`'s
/// choices), `--seed`'s start and noise, and the base `nav rosmaster`
/// expects by default.
fn world(args: &SimRobotArgs) -> Result<(SimWorld, String), Exit> {
    let (arena, source) = super::load_arena(args.arena.as_deref(), args.arena_file.as_deref(), ProtocolKind::Explore)?;
    let mut sim = SimConfig { drive: RosbridgeConfig::default().drive, ..SimConfig::default() };
    sim.noise.seed = args.seed;
    let arena = seeded_arena(&arena, args.seed, sim.robot_radius_m).map_err(|e| usage(format!("{source}: {e}")))?;
    let world = SimWorld::new(arena, sim).map_err(|e| usage(format!("{source}: {e}")))?;
    Ok((world, source))
}

/// Why the server could not start, naming the address and the cause.
fn listen_error(addr: SocketAddr, e: HalError) -> Exit {
    let HalError::Io { source, .. } = &e else { return internal(e) };
    let hint = match source.kind() {
        std::io::ErrorKind::AddrInUse => {
            "; is another nav sim-robot or a rosbridge_server running? Stop it or pick another --port"
        }
        std::io::ErrorKind::AddrNotAvailable => "; --bind must be an address of this machine",
        std::io::ErrorKind::PermissionDenied => "; ports below 1024 need privileges: pick another --port",
        _ => "",
    };
    usage(format!("cannot listen on {addr}: {source}{hint}"))
}

/// Runs the command.
pub fn run(args: SimRobotArgs) -> CmdResult {
    let addr = bind_address(&args)?;
    let (world, source) = world(&args)?;
    // two workers: the simulation renders camera frames while connections are served
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(internal)?;
    let result = rt.block_on(serve(&args, addr, world, &source));
    rt.shutdown_background();
    result
}

/// Serves until SIGINT or SIGTERM.
async fn serve(args: &SimRobotArgs, addr: SocketAddr, world: SimWorld, source: &str) -> CmdResult {
    // signals are taken over before anyone is told where to connect
    let mut signals = super::signals::Signals::install()?;
    if !addr.ip().is_loopback() {
        diag!(
            "nav sim-robot: warning: listening on {addr}, reachable from other machines; anyone who reaches it can \
             drive the simulated robot (there is no authentication)"
        );
    }
    let config = PeerConfig {
        nav2: args.nav2,
        cmd_vel_timeout_s: Some(CMD_VEL_TIMEOUT_S),
        record_received: false,
        ..PeerConfig::default()
    };
    let peer = RosbridgePeer::start_on(addr, world, config).await.map_err(|e| listen_error(addr, e))?;
    let url = peer.url();
    // a client on this machine reaches a wildcard address through loopback
    let client_url = match peer.addr().ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => format!("ws://127.0.0.1:{}", peer.addr().port()),
        IpAddr::V6(ip) if ip.is_unspecified() => format!("ws://[::1]:{}", peer.addr().port()),
        _ => url.clone(),
    };
    let nav2 = if args.nav2 { ", with Nav2 emulation" } else { "" };
    crate::exit::print(&format!(
        "nav sim-robot: simulated robot ({source}, seed {}{nav2}) listening on {url} (rosbridge v2); in another \
         terminal run: nav rosmaster --url {client_url}   (Ctrl-C stops)",
        args.seed
    ))?;
    let mut open = 0;
    let name = loop {
        tokio::select! {
            name = signals.next() => break name,
            () = tokio::time::sleep(Duration::from_millis(250)) => {}
        }
        let now = peer.connections();
        if now != open {
            open = now;
            diag!("nav sim-robot: {}", state_line(&peer, open));
        }
    };
    let (travelled, collisions) = peer.with_world(|w| (w.path_length_m(), w.collisions()));
    drop(peer);
    diag!("nav sim-robot: {name}: stopped; the robot travelled {travelled:.2} m with {collisions} collision(s)");
    Ok(0)
}

/// `2 connection(s) open; robot at (x, y, yaw°), …`.
fn state_line(peer: &RosbridgePeer, open: usize) -> String {
    let pose = peer.pose();
    let (travelled, collisions) = peer.with_world(|w| (w.path_length_m(), w.collisions()));
    format!(
        "{open} connection(s) open; robot at ({:.2}, {:.2}, {:.0}°), travelled {travelled:.2} m, {collisions} \
         collision(s)",
        pose.x,
        pose.y,
        pose.yaw.to_degrees()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(bind: &str, allow_remote: bool) -> SimRobotArgs {
        SimRobotArgs {
            arena: None,
            arena_file: None,
            seed: 0,
            port: 9090,
            bind: bind.into(),
            allow_remote,
            nav2: false,
        }
    }

    #[test]
    fn loopback_binds_are_allowed_and_others_need_the_flag() {
        for ok in ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"] {
            assert!(bind_address(&args(ok, false)).is_ok(), "{ok}");
        }
        for remote in ["0.0.0.0", "192.168.1.5", "::"] {
            let (code, msg) = bind_address(&args(remote, false)).unwrap_err().code_and_message();
            assert_eq!(code, 2, "{remote}");
            assert!(msg.is_some_and(|m| m.contains("--allow-remote")), "{remote}");
            assert!(bind_address(&args(remote, true)).is_ok(), "{remote}");
        }
        for bad in ["", "robot.local", "127.0.0.1:9090", "300.1.1.1"] {
            assert_eq!(bind_address(&args(bad, true)).unwrap_err().code_and_message().0, 2, "{bad:?}");
        }
    }
}
