//! `nav mcp`: the robot as an MCP server behind the safety layer
//! (nav-planner's `mcp` module), over stdio or Streamable HTTP, on the
//! built-in simulator or a ROS robot through rosbridge.

use crate::exit::{CmdResult, Exit, diag, internal, usage};
use clap::{Args, ValueEnum};
use nav_core::time::Clock;
use nav_hal::hal::Robot;
use nav_hal::sim::{SimConfig, SimHal, SimWorld};
use nav_planner::mcp::http::{HttpOptions, MCP_PATH, TOKEN_ENV, serve_http};
use nav_planner::mcp::{McpConfig, McpError, McpRobot};
use nav_planner::navigator::episode::seeded_arena;
use nav_planner::protocol::ProtocolKind;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

/// The default HTTP port.
pub const DEFAULT_PORT: u16 = 8765;

/// The built-in arena served when none is given.
const DEFAULT_ARENA: &str = "house_a";

/// The transports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Transport {
    /// Standard input and output: one client, the agent host that started nav.
    Stdio,
    /// Streamable HTTP on --bind, path /mcp.
    Http,
}

/// Serve a robot as an MCP server: any agent host (desktop assistants,
/// coding agents, agent frameworks) drives it through navkit's seven strict
/// explore tools (move_toward, rotate, navigate_to_goal, stop_robot,
/// observe_scene, check_path_clear, report_discovery) plus get_state and
/// get_map, always through the safety layer: every call is validated
/// against the LiDAR (a refusal comes back as an error result saying why),
/// a continuous guard checks every velocity at 20 Hz, the robot stops 3 s
/// after the last motion call, stop_robot always wins, and one client drives
/// at a time. Resources: the exploration memory and the Navigation Context.
///
/// The robot: the built-in simulator (default: the house_a arena) or, with
/// --url, a ROS robot through rosbridge. Standard output is the protocol in
/// stdio mode; diagnostics go to standard error. See docs/MCP.md.
///
/// Built-in arenas: simple, exploration, dead_end, narrow_corridor, house_a
/// (the default), house_b, house_c and proc_<seed>.
#[derive(Args, Debug)]
pub struct McpArgs {
    /// The transport.
    #[arg(long, value_enum, default_value = "stdio")]
    pub transport: Transport,
    /// Where HTTP listens (ADDRESS:PORT; port 0 picks a free one, printed).
    /// Anything but loopback needs a bearer token.
    #[arg(long, value_name = "ADDRESS:PORT", default_value_t = format!("127.0.0.1:{DEFAULT_PORT}"))]
    pub bind: String,
    /// Bearer token HTTP requests must carry (Authorization: Bearer TOKEN);
    /// required off loopback. Prefer the environment variable: a flag is
    /// visible to other users of the machine.
    #[arg(long, env = TOKEN_ENV, hide_env_values = true, value_name = "TOKEN")]
    pub token: Option<String>,
    /// A browser origin allowed besides the loopback ones (repeatable),
    /// e.g. https://app.example.com.
    #[arg(long, value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,
    /// HTTP: requests a second allowed on average across the server (bursts
    /// of twice as many); more get 429.
    #[arg(long, value_name = "N", default_value_t = 50.0)]
    pub rate_limit: f64,
    /// Built-in arena for the simulator (default: house_a).
    #[arg(long)]
    pub arena: Option<String>,
    /// An arena JSON file (format: docs/SIMULATOR.md, "Arenas").
    #[arg(long, value_name = "PATH")]
    pub arena_file: Option<PathBuf>,
    /// Seed: 0 starts at the arena's start; others draw a start and seed the sensor noise.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Drive a ROS robot through rosbridge at this URL (ws://HOST:9090)
    /// instead of the simulator; topics as nav rosmaster's defaults.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Seconds without a motion call after which the robot stops (the
    /// watchdog's CONTINUE time), 0.5 to 60.
    #[arg(long, value_name = "SECONDS", default_value_t = 3.0)]
    pub watchdog: f64,
}

/// Runs the command.
pub fn run(args: McpArgs) -> CmdResult {
    let options = http_options(&args)?;
    let mut config = McpConfig::default();
    if !(0.5..=60.0).contains(&args.watchdog) {
        return Err(usage(format!("--watchdog {}: must be 0.5 to 60 seconds", args.watchdog)));
    }
    let w = &mut config.safety.watchdog;
    w.continue_s = args.watchdog;
    w.stop_wait_s = w.stop_wait_s.max(args.watchdog + 1.0);
    w.local_nav_s = w.local_nav_s.max(w.stop_wait_s + 1.0);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(internal)?;
    let result = rt.block_on(serve(&args, options, config));
    rt.shutdown_background();
    result
}

/// The HTTP options from the flags, checked (exit 2 before anything
/// starts: a non-loopback address without a token).
fn http_options(args: &McpArgs) -> Result<Option<HttpOptions>, Exit> {
    if args.transport == Transport::Stdio {
        return Ok(None);
    }
    let mut o = HttpOptions::loopback(DEFAULT_PORT);
    o.bind = parse_bind(&args.bind)?;
    o.token = args.token.clone();
    o.allowed_origins = args.allow_origin.clone();
    o.rate_per_s = args.rate_limit;
    o.check().map_err(|e| usage(format!("--bind {}: {e}", o.bind)))?;
    Ok(Some(o))
}

/// `ADDRESS:PORT`, `localhost:PORT` or `[::1]:PORT`.
fn parse_bind(text: &str) -> Result<SocketAddr, Exit> {
    let text = text.trim();
    if let Some(port) = text.strip_prefix("localhost:") {
        let port: u16 = port.parse().map_err(|_| usage(format!("--bind {text:?}: bad port")))?;
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    text.parse().map_err(|_| usage(format!("--bind {text:?}: not ADDRESS:PORT (e.g. 127.0.0.1:{DEFAULT_PORT})")))
}

/// Sets the robot up and serves it until the client leaves (stdio) or a
/// signal (HTTP).
async fn serve(args: &McpArgs, http: Option<HttpOptions>, config: McpConfig) -> CmdResult {
    let (robot, clock, what) = robot(args).await?;
    let served = McpRobot::start(robot, clock, config).await.map_err(|e| usage(e.to_string()))?;
    let result = match http {
        None => {
            diag!("nav mcp: {what}, serving MCP over stdio");
            served.serve_stdio().await
        }
        Some(options) => {
            let on_listening = |addr: SocketAddr| {
                let auth = if options.token.is_some() { ", access token required" } else { "" };
                diag!("nav mcp: {what}, serving MCP at http://{addr}{MCP_PATH}{auth} (Ctrl-C stops)");
                let _ = crate::exit::print(&format!("http://{addr}{MCP_PATH}"));
            };
            serve_http(served.clone(), options.clone(), on_listening, shutdown_signal()).await
        }
    };
    served.shutdown().await;
    let state = served.state().await;
    diag!(
        "nav mcp: stopped; the robot travelled {} m with {} collision(s) and {} safety override(s)",
        state["distance_travelled_m"],
        state["collisions"],
        state["overrides"]
    );
    match result {
        Ok(()) => Ok(0),
        Err(McpError::Config(m)) => Err(usage(m)),
        Err(e) => Err(usage(e.to_string())),
    }
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// The robot, its clock and a description: rosbridge with --url, else the
/// simulator.
async fn robot(args: &McpArgs) -> Result<(Box<dyn Robot>, Arc<dyn Clock>, String), Exit> {
    if let Some(url) = &args.url {
        return rosbridge(url).await;
    }
    let name = args.arena.as_deref().or(if args.arena_file.is_none() { Some(DEFAULT_ARENA) } else { None });
    let (arena, source) = super::load_arena(name, args.arena_file.as_deref(), ProtocolKind::Explore)?;
    let mut sim = SimConfig::default();
    sim.noise.seed = args.seed;
    let arena = seeded_arena(&arena, args.seed, sim.robot_radius_m).map_err(|e| usage(format!("{source}: {e}")))?;
    let world = SimWorld::new(arena, sim).map_err(|e| usage(format!("{source}: {e}")))?;
    let hal = SimHal::new(world);
    let clock: Arc<dyn Clock> = hal.clock();
    Ok((Box::new(hal), clock, format!("simulated robot ({source}, seed {})", args.seed)))
}

#[cfg(feature = "rosmaster")]
async fn rosbridge(url: &str) -> Result<(Box<dyn Robot>, Arc<dyn Clock>, String), Exit> {
    use nav_hal::rosbridge::{RosbridgeConfig, RosbridgeHal};
    use std::time::Duration;
    let config = RosbridgeConfig { url: url.to_owned(), ..RosbridgeConfig::default() };
    config.validate().map_err(|e| usage(e.to_string()))?;
    diag!("nav mcp: connecting to {url} ...");
    let mut hal = RosbridgeHal::start(config.clone()).map_err(|e| usage(e.to_string()))?;
    let timeout = Duration::from_secs_f64(config.connect_timeout_s.max(0.1));
    hal.wait_connected(timeout).await.map_err(|e| usage(format!("cannot reach rosbridge at {url}: {e}")))?;
    hal.wait_for_sensors(Duration::from_secs(10))
        .await
        .map_err(|e| usage(format!("connected to {url}, but no usable scan and odometry: {e}")))?;
    let clock: Arc<dyn Clock> = Arc::new(nav_hal::clock::MonotonicClock::new());
    Ok((Box::new(hal), clock, format!("ROS robot at {url}")))
}

#[cfg(not(feature = "rosmaster"))]
async fn rosbridge(_url: &str) -> Result<(Box<dyn Robot>, Arc<dyn Clock>, String), Exit> {
    Err(usage("--url needs nav built with the rosmaster feature"))
}
